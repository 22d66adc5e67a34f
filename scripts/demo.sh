#!/usr/bin/env bash
# The main job: installs what building and running need (not the tests'
# packages), builds the broker, the worker and ojsctl (for the README's tour),
# starts the broker on its embedded Redis, pushes the example jobs and shows them
# placed on simulated workers (examples/workers/*.json) that run them as real
# subprocesses, asks the broker why the one job nobody can run is still waiting,
# and runs a GPU workflow to its end. Each phase prints a line as it starts;
# the last line sums it up.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS=0
phases=7
phase() { printf '\n[%d/%d %3ds] %s\n' "$1" "$phases" "$SECONDS" "$2"; }
elapsed() { printf '%dm%02ds' $((SECONDS / 60)) $((SECONDS % 60)); }

phase 1 "packages: installing what building and running need, if missing (scripts/install-deps.sh)"
./scripts/install-deps.sh

phase 2 "build: broker, worker and ojsctl into build/ (Release, unity batches: 32 steps, ~10 CPU-minutes, so about 5.5 min on 2 idle cores from cold; seconds when built before)"
# ninja's own progress line, with the elapsed seconds: [done/total, Ns].
NINJA_STATUS="   [%f/%t, %es] " OJS_TESTS=OFF ./scripts/build.sh --target broker worker ojsctl

work=$(mktemp -d /tmp/ojs-demo-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

phase 3 "broker: starting on its own embedded redis-server"
build/broker/broker --port 0 --data-dir "$work/data" --locality-delay-ms 2000 --log-level warn >"$work/broker.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -qs OJS_BROKER_READY "$work/broker.out" && break; sleep 0.1; done
port=$(sed -n 's/.*OJS_BROKER_READY port=\([0-9]*\).*/\1/p' "$work/broker.out")
[ -n "$port" ] || { cat "$work/broker.out"; exit 1; }
url="http://127.0.0.1:$port"
echo "   broker on $url (redis-server data in $work/data)"

json_field() { /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

phase 4 "jobs: pushing examples/jobs/*.json and the workflow examples/workflows/gpu-pipeline.json"
declare -A ids
for f in examples/jobs/*.json; do
  name=$(basename "$f" .json)
  ids[$name]=$(curl -sf "$url/ojs/v1/jobs" -H 'Content-Type: application/openjobspec+json' --data @"$f" | json_field "d['job']['id']")
  printf '   %-20s %s\n' "$name" "${ids[$name]}"
done
workflow=$(curl -sf "$url/ojs/v1/workflows" -H 'Content-Type: application/openjobspec+json' \
  --data @examples/workflows/gpu-pipeline.json | json_field "d['workflow']['id']")
echo "   workflow             $workflow (preprocess on CPU -> train on 8 GPUs -> evaluate on 1 GPU)"

phase 5 "workers: starting dgx-h100 (8x H100 NVLink), 4xa100-pcie, l4-inference, cpu-node; placing for 6 s"
for w in dgx-h100 4xa100-pcie l4-inference cpu-node; do
  build/worker/worker --broker "$url" --worker-id "$w" --queues training,inference \
    --capabilities-file "examples/workers/$w.json" \
    --command 'ml.*=echo "{\"node\": \"'"$w"'\", \"devices\": \"$CUDA_VISIBLE_DEVICES\"}"; sleep 1' \
    --work-dir "$work/jobs-$w" --poll-interval-ms 200 --heartbeat-interval-s 1 --log-level warn \
    >"$work/worker-$w.log" 2>&1 &
  pids+=($!)
done
sleep 6
printf '   %-20s %-10s %-14s %s\n' JOB STATE WORKER DEVICES
placed=0
for name in $(printf '%s\n' "${!ids[@]}" | sort); do
  job=$(curl -sf "$url/ojs/v1/jobs/${ids[$name]}")
  json_field "'   %-20s %-10s %-14s %s' % ('$name', d['job']['state'], d['job'].get('worker_id', '-'), d['job'].get('ext_ml_assigned_devices', '-'))" <<<"$job"
  if [ "$(json_field "'worker_id' in d['job']" <<<"$job")" = True ]; then placed=$((placed + 1)); fi
done

phase 6 "why is the TPU job still waiting? (GET /ojs/v1/jobs/{id}/diagnosis)"
curl -sf "$url/ojs/v1/jobs/${ids[tpu-training]}/diagnosis" | json_field "'   ' + d['diagnosis']['message'] + '\n' + '\n'.join('   - %s: %d worker(s), e.g. %s' % (k, v['count'], v['sample_reason']) for k, v in d['diagnosis']['by_predicate'].items())"
echo "   queue stats:"
for q in training inference; do
  curl -sf "$url/ojs/v1/queues/$q/stats" | json_field "'   %s (%s): %s' % (d['queue']['name'], d['status'], d['stats'])"
done

phase 7 "workflow: waiting for each step, placed by its own requirements (GET /ojs/v1/workflows/{id})"
for _ in $(seq 60); do
  state=$(curl -sf "$url/ojs/v1/workflows/$workflow" | json_field "d['workflow']['state']")
  [ "$state" = running ] || break
  sleep 0.5
done
curl -sf "$url/ojs/v1/workflows/$workflow" | json_field "'   %s: %s (%d/%d steps)\n' % (d['workflow']['name'], d['workflow']['state'], d['workflow']['steps_completed'], d['workflow']['steps_total']) + '\n'.join('   - %-10s %-10s %s' % (s.get('name'), s['state'], s.get('result', '')) for s in d['workflow']['steps'])"

echo
echo "demo: $placed of ${#ids[@]} jobs placed (tpu-training waits: no TPU worker), workflow $state, $(elapsed) in all"
[ "$state" = completed ] || { echo "workflow did not complete: $state"; exit 1; }
