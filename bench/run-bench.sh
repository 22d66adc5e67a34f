#!/usr/bin/env bash
# Builds (Release), starts a broker on its embedded Redis, runs the load generator
# for each requirement-class count at a small and a large queue depth, prints a
# summary table, then the class-judgement micro-benchmarks and the cluster simulator.
# Everything is bounded; see docs/benchmarks.md. Knobs (environment):
#   BUILD_DIR (build-bench)  BUILD_JOBS (2)  SKIP_BUILD (0)
#   CLASSES ("1 10 100")  SMALL_PENDING (1000)  BIG_PENDING (100000)
#   JOBS (5000) per measured phase  PRODUCERS (4)  WORKERS (4)  DURATION_S (30)
#   PREFILL_CONNECTIONS (16)  PREFILL_MAX_S (240)  SIM_JOBS (5000)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build-bench}
BUILD_JOBS=${BUILD_JOBS:-2}
CLASSES=${CLASSES:-"1 10 100"}
SMALL_PENDING=${SMALL_PENDING:-1000}
BIG_PENDING=${BIG_PENDING:-100000}
JOBS=${JOBS:-5000}
PRODUCERS=${PRODUCERS:-4}
WORKERS=${WORKERS:-4}
DURATION_S=${DURATION_S:-30}
PREFILL_CONNECTIONS=${PREFILL_CONNECTIONS:-16}
PREFILL_MAX_S=${PREFILL_MAX_S:-240}
SIM_JOBS=${SIM_JOBS:-5000}

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD_DIR" --target broker loadgen micro_bench cluster_sim -j "$BUILD_JOBS"
fi

RESULTS=$BUILD_DIR/bench-results
mkdir -p "$RESULTS"
source "$ROOT/bench/start-broker.sh"
start_broker "$BUILD_DIR"
echo "broker on port $PORT, embedded Redis at $DATA/redis.sock"

run_loadgen() {  # classes pending extra-args...
  local k=$1 pending=$2
  shift 2
  echo "== loadgen: $k classes, $pending pending"
  "$BUILD_DIR/bench/loadgen" --url "http://127.0.0.1:$PORT" --redis "$DATA/redis.sock" --queue "bench-k$k" \
    --classes "$k" --pending "$pending" --jobs "$JOBS" --producers "$PRODUCERS" --workers "$WORKERS" \
    --duration-s "$DURATION_S" --prefill-connections "$PREFILL_CONNECTIONS" --prefill-max-s "$PREFILL_MAX_S" \
    --json "$@" >"$RESULTS/k$k-p$pending.json"
}

first=1
for k in $CLASSES; do
  # The plain-worker phase and the ceiling do not depend on classes: measured once.
  if [[ $first == 1 ]]; then run_loadgen "$k" "$SMALL_PENDING"; first=0; else run_loadgen "$k" "$SMALL_PENDING" --skip-plain; fi
  # Same queue topped up to the large depth: only the depth changes.
  run_loadgen "$k" "$BIG_PENDING" --skip-plain
done

python3 - "$RESULTS" $CLASSES <<'EOF'
import json, os, sys
results, classes = sys.argv[1], sys.argv[2:]
def op(r, name):
    return next((o for o in r["ops"] if o["op"] == name), None)
rows, ceiling = [], None
for f in sorted(os.listdir(results)):
    if not f.endswith(".json"): continue
    r = json.load(open(os.path.join(results, f)))
    if "redis_ceiling" in r and r["redis_ceiling"] and ceiling is None: ceiling = r
    rows.append(r)
rows.sort(key=lambda r: (r["config"]["classes"], r["pending_before_measure"]))
print("\n%7s %9s %9s %9s %9s %9s %9s %9s %9s" % ("classes", "pending", "push/s", "push_p99", "cycle/s",
      "fetch_p50", "fetch_p99", "fetch_p999", "ack_p99"))
for r in rows:
    p, c, f, a = op(r, "PUSH (ml)"), op(r, "FETCH+ACK (caps)"), op(r, "FETCH (caps)"), op(r, "ACK (caps)")
    print("%7d %9d %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f" % (r["config"]["classes"], r["pending_before_measure"],
          p["per_s"], p["p99_us"], c["per_s"], f["p50_us"], f["p99_us"], f["p999_us"], a["p99_us"]))
print("(latencies in microseconds; cycle = one FETCH of one job + its ACK, workers advertising capabilities)")
if ceiling:
    for name in ("PUSH (plain)", "FETCH+ACK (plain)", "PUSH (pre-fill)"):
        o = op(ceiling, name)
        if o: print("%-18s %9.0f/s  p50 %6.0f us  p99 %6.0f us" % (name, o["per_s"], o["p50_us"], o["p99_us"]))
    for c in ceiling["redis_ceiling"]:
        print("Redis claim ceiling (%d conns, pipeline %d): %.0f claims/s; FETCH+ACK caps/plain = %.3f / %.3f of it" % (
              c["connections"], c["pipeline"], c["per_s"], c["fetch_ack_caps_ratio"], c.get("fetch_ack_plain_ratio", 0)))
for r in rows:
    if "prefill" in r:
        print("pre-fill %d classes -> %d pending: %.0f PUSH/s over %.0f s" % (r["config"]["classes"],
              r["pending_before_measure"], r["prefill"]["per_s"], r["prefill"]["seconds"]))
EOF

echo
echo "== micro_bench: class judgement (Scheduler::judge) and matcher"
"$BUILD_DIR/bench/micro_bench" --benchmark_min_time=0.2 | tee "$RESULTS/micro_bench.txt"
echo
echo "== cluster_sim"
"$BUILD_DIR/bench/cluster_sim" --jobs "$SIM_JOBS" --seed 1 | tee "$RESULTS/cluster_sim.txt"
