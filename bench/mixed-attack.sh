#!/usr/bin/env bash
# /health and an empty FETCH under a mixed attack of expensive reads (diagnoses,
# what-ifs, log tails and pages, listings, open log follows): one broker on its
# embedded Redis, then bench/mixed-attack.py against it. Prints p50/p99/max of each
# probe in ms and how the attackers were answered (503 busy beyond --expensive-reads).
#
#   bench/mixed-attack.sh [BUILD_DIR]     (DURATION_S, ATTACKERS, FOLLOWS, BROKER_ARGS)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
[[ -x "$BUILD/broker/broker" ]] || { echo "mixed-attack: $BUILD/broker/broker is missing" >&2; exit 2; }
source "$ROOT/bench/start-broker.sh"
start_broker "$BUILD"
echo "== $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$ROOT/bench/mixed-attack.py" "http://127.0.0.1:$PORT" --duration "${DURATION_S:-20}" \
  --attackers "${ATTACKERS:-24}" --follows "${FOLLOWS:-8}"
