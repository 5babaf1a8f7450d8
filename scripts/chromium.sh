#!/usr/bin/env bash
# Debian's chromium for the browser tests (test/browser, the console's e2e):
# installed with apt-get when missing. CHROMIUM_PATH overrides the path.
set -euo pipefail
path="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ -x "$path" ]; then exit 0; fi
echo "chromium: not found at $path; installing Debian's chromium with apt-get" >&2
if [ "$(id -u)" = 0 ]; then sudo=""; elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo="sudo"; else
  echo "chromium: cannot install without root: run 'sudo apt-get install chromium' (or set CHROMIUM_PATH)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
[ -x "$path" ] || { echo "chromium: still missing at $path after apt-get" >&2; exit 1; }
echo "chromium: installed ($("$path" --version 2>/dev/null || echo '?'))" >&2
