#!/usr/bin/env bash
# The whole test suite from a fresh clone: services, dependencies, build, jest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/services.sh
bash scripts/chromium.sh
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then npm ci --no-audit --no-fund; fi
# Lint first: eslint, then the layer rules (.dependency-cruiser.cjs: imports point down, no cycles).
npm run lint
npm test -- "$@"
