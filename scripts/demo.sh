#!/usr/bin/env bash
# The main job from a fresh clone: services, dependencies, build, then Sluice
# (all roles in one process) under a realistic mixed workload with live
# progress. `npm run demo -- --ci` runs a shorter, non-interactive version.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/services.sh
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then npm ci --no-audit --no-fund; fi
npm run build --silent
exec node scripts/demo.js "$@"
