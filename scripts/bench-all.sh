#!/usr/bin/env bash
# Re-measure the README's benchmark figures in one go, one benchmark after the other.
#
#   scripts/bench-all.sh [STAGE ...]     default: every stage below, in this order
#   BENCH_OUT=DIR scripts/bench-all.sh   where the reports go (default: bench-runs/<date>-<commit>)
#
# Stages: extract locomo longmemeval context tiers speed disk serve sync mem0 sqlite1m postgres1m
# Run only when named (they repeat a run above with other settings, or take long):
#   lme-ingest presets serve300k chroma1m
# Each stage writes <stage>.json (the benchmark's own --out report) and appends one line to
# runs.tsv: stage, commit, start and end time, wall seconds, and the 1-minute load average
# before and after, so every figure carries the commit and the load it was taken under.
# A stage that fails is recorded with its exit code and the run goes on.
# Needs the .venv that `make demo` / `make test` build; the postgres stage needs a server
# (it starts scripts/pg.sh itself and stops it afterwards; LoCoMo on PostgreSQL, then 10k-1M).
set -uo pipefail
cd "$(dirname "$0")/.."
MEMORY=".venv/bin/memory"
DATA="../shared/bench"
COMMIT="$(git rev-parse --short HEAD)"
OUT="${BENCH_OUT:-bench-runs/$(date -u +%Y-%m-%d)-$COMMIT}"
mkdir -p "$OUT"
ALL=(extract locomo longmemeval context tiers speed disk serve sync mem0 sqlite1m postgres1m)
EXTRA=(lme-ingest presets serve300k chroma1m)
STAGES=("$@")
[ ${#STAGES[@]} -eq 0 ] && STAGES=("${ALL[@]}")

load() { cut -d' ' -f1 /proc/loadavg; }

stage() {  # stage NAME COMMAND...
    local name="$1"; shift
    local start end t0 l0 rc
    start="$(date -u +%H:%M:%S)"; t0="$(date +%s)"; l0="$(load)"
    echo "== $name ($start UTC, load $l0): $*" >&2
    "$@" >"$OUT/$name.log" 2>&1
    rc=$?
    end="$(date -u +%H:%M:%S)"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$COMMIT" "$start" "$end" \
        "$(( $(date +%s) - t0 ))" "$l0" "$(load)" "$rc" >>"$OUT/runs.tsv"
    [ $rc -eq 0 ] || echo "   $name failed (exit $rc): see $OUT/$name.log" >&2
}

postgres1m() {
    local env rc
    env="$(./scripts/pg.sh start)" || return 1
    eval "$env"
    $MEMORY bench locomo --data "$DATA/locomo_dev.json" --backend postgres --dsn "$MEMORY_TEST_DSN" \
        --out "$OUT/postgres-locomo.json"
    rc=$?
    $MEMORY bench speed --backend postgres --dsn "$MEMORY_TEST_DSN" --sizes 10000,100000,1000000 \
        --peer none --embedder hashing --index-after-load --out "$OUT/postgres1m.json" || rc=$?
    ./scripts/pg.sh stop
    return $rc
}

[ -f "$OUT/runs.tsv" ] || printf 'stage\tcommit\tstart_utc\tend_utc\twall_s\tload_before\tload_after\texit\n' >"$OUT/runs.tsv"
for s in "${STAGES[@]}"; do
    case "$s" in
    extract) stage extract $MEMORY bench extract --data "$DATA/locomo_dev.json" --out "$OUT/extract.json" ;;
    locomo) stage locomo $MEMORY bench locomo --data "$DATA/locomo_dev.json" --baseline --out "$OUT/locomo.json" ;;
    longmemeval) stage longmemeval $MEMORY bench longmemeval --data "$DATA/longmemeval_dev.json" \
        --embedder minilm --interface memories --baseline --preset balanced,plain --out "$OUT/longmemeval.json" ;;
    context) stage context $MEMORY bench context --data "$DATA/locomo_dev.json" --budget 4000 --out "$OUT/context.json" ;;
    tiers) stage tiers $MEMORY bench tiers --data "$DATA/locomo_dev.json" --out "$OUT/tiers.json" ;;
    speed) stage speed $MEMORY bench speed --sizes 10000,100000 --peer chroma --queries 200 --out "$OUT/speed.json" ;;
    disk) stage disk $MEMORY bench disk --size 100000 --out "$OUT/disk.json" ;;
    serve) stage serve $MEMORY bench serve --clients 50 --duration 20 --embedder minilm --embedder hashing \
        --out "$OUT/serve.json" ;;
    sync) stage sync $MEMORY bench sync --messages 1000 --embedder minilm --rounds 8 --out "$OUT/sync.json" ;;
    mem0) stage mem0-locomo $MEMORY bench locomo --data "$DATA/locomo_dev.json" --peer mem0 --out "$OUT/mem0-locomo.json"
          stage mem0-speed $MEMORY bench speed --sizes 2000,10000 --sample 500 --queries 100 --peer mem0 \
              --embedder minilm --out "$OUT/mem0-speed.json" ;;
    sqlite1m) stage sqlite1m $MEMORY bench speed --sizes 10000,100000,1000000 --peer none --embedder hashing \
        --out "$OUT/sqlite1m.json" ;;
    postgres1m) stage postgres postgres1m ;;
    lme-ingest) stage lme-ingest $MEMORY bench longmemeval --data "$DATA/longmemeval_dev.json" --ingest \
        --out "$OUT/lme-ingest.json" ;;
    presets) stage lme-presets $MEMORY bench longmemeval --data "$DATA/longmemeval_dev.json" --embedder minilm \
            --interface both --preset balanced,fast,best,plain,lexical,vector,rrf60 --out "$OUT/lme-presets.json"
        for p in balanced fast best plain lexical vector rrf60; do
            stage "locomo-$p" $MEMORY bench locomo --data "$DATA/locomo_dev.json" --preset "$p" \
                --out "$OUT/locomo-$p.json"
        done ;;
    serve300k) stage serve300k $MEMORY bench serve --preload 300000 --clients 20 --duration 20 \
        --embedder hashing --out "$OUT/serve300k.json" ;;
    chroma1m) stage chroma1m $MEMORY bench speed --sizes 1000000 --peer chroma --embedder hashing --queries 200 \
        --out "$OUT/chroma1m.json" ;;
    *) echo "unknown stage '$s' (stages: ${ALL[*]} ${EXTRA[*]})" >&2; exit 2 ;;
    esac
done
echo "reports and runs.tsv in $OUT" >&2
