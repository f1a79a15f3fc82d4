#!/usr/bin/env bash
# Create .venv-crewai: this package (no server/openai-agents extras) + CrewAI, for the CrewAI
# integration tests. CrewAI 1.15 needs mcp<2 and openai<3, which conflict with the `server` and
# `openai-agents` extras of .venv, so it gets its own environment. Idempotent: does nothing when
# pyproject.toml and this script are unchanged since the last successful install.
# Used by `make test`; prints nothing on success.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
VENV=.venv-crewai
STAMP="$VENV/.installed"
want="$(cat pyproject.toml scripts/crewai-env.sh | sha256sum | cut -c1-32)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && [ -x "$VENV/bin/python" ]; then
    exit 0
fi
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    rm -rf "$VENV"  # missing, or left half-made by an interrupted run
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
"$VENV/bin/python" -m pip install --quiet -e ".[crewai-test]"
"$VENV/bin/python" -c "import crewai.memory.storage.backend, memory.integrations.crewai" >/dev/null
echo "$want" >"$STAMP"
