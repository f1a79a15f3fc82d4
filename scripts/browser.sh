#!/usr/bin/env bash
# Install the browser the inspector's tests drive (tests/ui, marker `browser`): Debian's chromium.
# Playwright (the Python package, in the `browser` extra) drives it at /usr/bin/chromium; its own
# browser download is never used. Idempotent; scripts/setup.sh runs it unless MEMORY_BROWSER=0.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
command -v chromium >/dev/null
