#!/usr/bin/env bash
# Redis memory per pending job: one broker on its embedded Redis, loadgen pre-fills
# PENDING available GPU jobs (its usual job: a small document, ext_ml_* over CLASSES
# classes), then Redis's used_memory before and after is divided by the jobs that wait.
# The event stream's cap (10,000 entries) is in the figure, as it is in production.
#
#   bench/redis-memory.sh [BUILD_DIR]        (PENDING 100000, CLASSES 10)
#
# LISTPACK_VALUE=64, LISTPACK_ENTRIES=128: the embedded Redis's hash-max-listpack-value
# and -entries set to these first (Redis's defaults: what a broker on an untuned Redis
# of your own costs).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
PENDING=${PENDING:-100000}
for binary in "$BUILD/broker/broker" "$BUILD/bench/loadgen"; do
  [[ -x "$binary" ]] || { echo "redis-memory: $binary is missing (build the broker and loadgen targets)" >&2; exit 2; }
done
command -v redis-cli >/dev/null || { echo "redis-memory: redis-cli is missing (apt-get install redis-tools)" >&2; exit 2; }
source "$ROOT/bench/start-broker.sh"
start_broker "$BUILD"
cli() { redis-cli -s "$DATA/redis.sock" "$@"; }
used() { cli INFO memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p'; }
[[ -n "${LISTPACK_VALUE:-}" ]] && cli CONFIG SET hash-max-listpack-value "$LISTPACK_VALUE" >/dev/null
[[ -n "${LISTPACK_ENTRIES:-}" ]] && cli CONFIG SET hash-max-listpack-entries "$LISTPACK_ENTRIES" >/dev/null
before=$(used)
"$BUILD/bench/loadgen" --url "http://127.0.0.1:$PORT" --queue mem --classes "${CLASSES:-10}" --pending "$PENDING" \
  --jobs 1000 --duration-s 1 --skip-plain --skip-ack-fetch --prefill-max-s 600 >"$DATA/loadgen.out" 2>&1 ||
  { cat "$DATA/loadgen.out" >&2; exit 1; }
after=$(used)
waiting=0
for key in $(cli --scan --pattern 'ojs:{mem}:ready:*'); do
  waiting=$((waiting + $(cli ZCARD "$key")))
done
[[ $waiting -gt 0 ]] || { echo "redis-memory: no job waits" >&2; exit 1; }
echo "pending jobs: $waiting; used_memory $before -> $after; $(((after - before) / waiting)) B per pending job"
echo "a pending job's hash: $(cli --scan --pattern 'ojs:{mem}:job:*' | head -n1 | xargs -I{} redis-cli -s "$DATA/redis.sock" MEMORY USAGE {}) B"
