#!/usr/bin/env bash
# The main job from a fresh clone: services, dependencies, build, then Sluice
# (all roles in one process) under a realistic mixed workload submitted
# through the HTTP API, with live progress (monitor.js).
#   npm run demo            the full demo (~2,000 jobs, ~40 s)
#   npm run demo -- --ci    shorter, non-interactive, ends with `SUMMARY {json}`
#   npm run demo -- --keep  leave the server running at the end
#   npm run demo -- --clean remove what --keep runs left (Redis keys, databases)
# SLUICE_SKIP_BUILD=1 skips the build (the e2e test sets it: npm test has built).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--clean" ]; then exec node scripts/demo.js --clean; fi
bash scripts/services.sh
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then npm ci --no-audit --no-fund; fi
if [ "${SLUICE_SKIP_BUILD:-0}" != "1" ] || [ ! -f dist/main.js ]; then npm run build --silent; fi
exec node scripts/demo.js "$@"
