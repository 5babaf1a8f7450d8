#!/usr/bin/env bash
# The whole test suite from a fresh clone: services, dependencies, build, jest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/services.sh
bash scripts/chromium.sh
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then npm ci --no-audit --no-fund; fi
npm test -- "$@"
