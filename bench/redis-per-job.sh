#!/usr/bin/env bash
# The fixed per-job measurement (docs/benchmarks.md "Redis work per job"): one
# broker on its embedded Redis, one loadgen run of PUSH (ml) then FETCH+ACK (caps) over
# 10 requirement classes, then the pipeline-1 ceiling on the same Redis. Prints
# loadgen's tables: throughput, latency percentiles, round trips, Redis commandstats
# and CPU per job, the broker's and loadgen's CPU per job, the ratio to the ceiling.
#
#   bench/redis-per-job.sh [BUILD_DIR] [LABEL]
#
# BUILD_DIR (default build) must hold broker/broker and bench/loadgen, built Release.
# Run it on a quiet machine and compare runs taken back to back: every µs figure is
# wall or CPU time and moves with the load. Knobs (environment): CLASSES (10),
# PENDING (1000), JOBS (3000), PRODUCERS (4), WORKERS (8), DURATION_S (20),
# CEILING_OPS (50000), HOLD (0: jobs each worker keeps running while it fetches the
# next, loadgen --hold), LOADGEN (the loadgen binary; default BUILD_DIR's), JSON=1.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
LABEL=${2:-$(basename "$BUILD")}
LOADGEN=${LOADGEN:-$BUILD/bench/loadgen}
for binary in "$BUILD/broker/broker" "$LOADGEN"; do
  [[ -x "$binary" ]] || { echo "redis-per-job: $binary is missing (build the broker and loadgen targets)" >&2; exit 2; }
done

source "$ROOT/bench/start-broker.sh"
start_broker "$BUILD"

echo "== $LABEL ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), load $(cut -d' ' -f1-3 /proc/loadavg))"
args=(--url "http://127.0.0.1:$PORT" --redis "$DATA/redis.sock" --queue k10
      --classes "${CLASSES:-10}" --pending "${PENDING:-1000}" --jobs "${JOBS:-3000}"
      --producers "${PRODUCERS:-4}" --workers "${WORKERS:-8}" --duration-s "${DURATION_S:-20}"
      --ceiling-ops "${CEILING_OPS:-50000}" --hold "${HOLD:-0}" --skip-plain --broker-pid "$BROKER_PID")
[[ "${JSON:-0}" == 1 ]] && args+=(--json)
"$LOADGEN" "${args[@]}"
# The broker's CPU over its whole life (pre-fill included), split user / kernel: the
# kernel share is its thread hand-offs and socket I/O.
read -r utime stime < <(awk '{print $14, $15}' "/proc/$BROKER_PID/stat")
echo "broker CPU since start: user $((utime * 1000 / $(getconf CLK_TCK))) ms, kernel $((stime * 1000 / $(getconf CLK_TCK))) ms"
