#!/usr/bin/env bash
# Install what the browser tests (tests/ui, marker `browser`) need: Debian's chromium and the
# Python `playwright` package that drives it (its own browser download is never used: the tests
# point it at /usr/bin/chromium). Idempotent; run by scripts/setup.sh when MEMORY_BROWSER_TESTS != 0.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq >/dev/null
    $SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi
if [ -x .venv/bin/python ]; then
    .venv/bin/python -m pip install --quiet "playwright==1.65.2"
fi
command -v chromium
