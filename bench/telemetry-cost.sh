#!/usr/bin/env bash
# What sampling GPU telemetry costs the worker agent: the real worker on the NVML
# stand-in the tests use (two GPUs; its calls return constants, far cheaper than a
# real driver's, so the figure is the agent's own overhead, not NVML's) against a
# broker, for DURATION_S at each interval of INTERVALS (0: telemetry off, the
# baseline). Prints the cpu_ms_per_minute the worker advertises (its thread's CPU
# time inside sampling) and, from /proc/<pid>/task/*/schedstat (ns, not 10 ms ticks),
# the CPU time of the agent's thread (sampling, its JSON, heartbeats, FETCH polls)
# and of the whole process (also the XID watcher and the HTTP client's threads), over
# DURATION_S after a 10 s start (discovery and hwloc are not the steady cost).
# Usage: [DURATION_S=120] [INTERVALS="5 1 0"] bench/telemetry-cost.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
fake="$build/tests/libnvidia-ml-fake.so.1"
[[ -f $fake ]] || { echo "no $fake: build with -DOJS_BUILD_TESTS=ON" >&2; exit 1; }
source "$(dirname "$0")/start-broker.sh"
start_broker "$build"
duration=${DURATION_S:-120}
printf '%-9s %-8s %-22s %-23s %s\n' interval samples "advertised cpu ms/min" "agent thread cpu ms/min" "process cpu ms/min"
for interval in ${INTERVALS:-5 1 0}; do
  printf '{"nvml_library": "%s", "telemetry_interval_s": %s, "isolation": {"mode": "off"}, "commands": {"*": "true"}}' \
    "$fake" "$interval" >"$DATA/worker-$interval.json"
  FAKE_NVML_ECC=0 "$build/worker/worker" --broker "http://127.0.0.1:$PORT" --worker-id "telemetry-$interval" \
    --queues telemetry-cost --config "$DATA/worker-$interval.json" --work-dir "$DATA/work-$interval" \
    --heartbeat-interval-s 5 --log-level warn 2>"$DATA/worker-$interval.err" &
  pid=$!
  cpu_ns() { echo "$(cut -d' ' -f1 "/proc/$pid/task/$pid/schedstat") $(cat /proc/"$pid"/task/*/schedstat | awk '{n += $1} END {print n}')"; }
  sleep 10
  read -r thread_ns0 process_ns0 < <(cpu_ns)
  began=$(date +%s.%N)
  sleep "$duration"
  read -r thread_ns1 process_ns1 < <(cpu_ns)
  ended=$(date +%s.%N)
  workers=$(curl -sf "http://127.0.0.1:$PORT/ojs/v1/admin/workers")
  kill "$pid"
  wait "$pid" || true
  python3 - "$workers" "telemetry-$interval" "$interval" "$((thread_ns1 - thread_ns0))" "$((process_ns1 - process_ns0))" "$began" "$ended" <<'PY'
import json, sys
workers, worker_id, interval, thread_ns, process_ns, began, ended = sys.argv[1:]
entry = next(w for w in json.loads(workers)["items"] if w["id"] == worker_id)
cost = entry.get("capabilities", {}).get("telemetry", {})
minutes = (float(ended) - float(began)) / 60
per_minute = lambda ns: int(ns) / 1e6 / minutes
print(f"{interval + ' s':<9} {cost.get('samples', 0):<8} {cost.get('cpu_ms_per_minute', 0):<22} "
      f"{per_minute(thread_ns):<23.1f} {per_minute(process_ns):.1f}")
PY
done
