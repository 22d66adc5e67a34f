#!/bin/bash
# On a GPU machine, from a bundle made by scripts/gpu-bundle.sh:
#  1. capture what the worker of this build discovers (NVML, hwloc;
#     scripts/capture-gpu.sh), named after what it found (h100-1gpu.*, ...);
#  2. a broker on its embedded redis-server and that worker place and run a real
#     CUDA job (scripts/gpu-job.py: bf16 matrix products on the device the broker
#     assigned, holding the memory it declared) and explain three jobs that cannot
#     run (one GPU too many, another GPU type, more memory than the GPU has);
#  3. where an MPS control daemon can be started (in a private pipe folder), the GPU
#     shared: a worker that finds the daemon advertises `sharing: mps`, two jobs of
#     30 % of the GPU's memory run on it at once, and a third of 75 % waits, also
#     once a slot is free again, until the first ended (0 % memory oversubscription),
#     each holding what it declared.
# It changes no GPU setting. Everything lands in $OUT: the capture files, e2e.log
# (what was asked, the broker's answers, a summary) and workers.log.
set -u
here=$(dirname "$(readlink -f "$0")")
export LD_LIBRARY_PATH=$here/lib
log=$OUT/e2e.log
say() { echo "+ $*" | tee -a "$log"; }
field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))$2)" "$1"; }

"$here/capture-gpu.sh" "$here/worker" "$OUT" gpu >/dev/null 2>&1
caps=$OUT/gpu.capabilities.json
type=$(field "$caps" "['gpu']['type']") count=$(field "$caps" "['gpu']['count']")
mem=$(field "$caps" "['gpu']['memory_gb']") cc=$(field "$caps" "['gpu']['compute_capability']")
name=${NAME:-${type#nvidia-}-${count}gpu}
for f in "$OUT"/gpu.*; do mv "$f" "$OUT/$name.${f#"$OUT"/gpu.}"; done
say "$(date -u +%FT%TZ) capture $name: $type x$count, $mem GB, CC $cc"
pct() { python3 -c "import sys; print(int(float(sys.argv[1]) * float(sys.argv[2])))" "$mem" "$1"; }
say "for hwloc to match: nproc $(nproc), MemTotal $(awk '/MemTotal/{printf "%.1f", $2*1024/1e9}' /proc/meminfo) GB"
lscpu >>"$log" 2>&1
other=nvidia-a100; [ "$type" = nvidia-a100 ] && other=nvidia-h100

work=$(mktemp -d)
"$here/broker" --port 0 --data-dir "$work/data" --redis-server "$here/redis-server" --locality-delay-ms 0 --log-level warn >"$work/broker.out" 2>&1 &
bpid=$!
for _ in $(seq 100); do grep -qs OJS_BROKER_READY "$work/broker.out" && break; sleep 0.1; done
port=$(sed -n 's/.*OJS_BROKER_READY port=\([0-9]*\).*/\1/p' "$work/broker.out")
say "broker on port $port"
url=http://127.0.0.1:$port
ctl() { "$here/ojsctl" --url "$url" "$@"; }
push() { ctl push --type ml.matmul "$@" 2>>"$log" | grep -o '[0-9a-f-]\{36\}' | head -1; }
job() { python3 -c "import json,sys,urllib.request; print(json.dumps(json.load(urllib.request.urlopen(sys.argv[1]))['job']))" "$url/ojs/v1/jobs/$1" 2>/dev/null; }
state() { job "$1" | python3 -c "import json,sys; print(json.load(sys.stdin)['state'])" 2>/dev/null; }
wait_done() { for _ in $(seq 240); do
    local left=0; for j in "$@"; do case $(state "$j") in completed|discarded|retryable) ;; *) left=1;; esac; done
    [ $left = 0 ] && return; sleep 0.5; done; }
run_worker() {  # id queue log [extra worker flags]
  local id=$1 queue=$2 wlog=$3; shift 3
  "$here/worker" --broker "$url" --worker-id "$id" --queues "$queue" --command "ml.*=python3 $here/gpu-job.py" \
    --work-dir "$work/jobs-$id" --poll-interval-ms 200 --heartbeat-interval-s 1 --log-level info "$@" >"$wlog" 2>&1 &
}

# 2. whole GPU
fits=$(push -q gpu --gpus 1 --gpu-type "$type" --set ext_ml_gpu_memory_gb="$(pct 0.9)" --set ext_ml_compute_capability=\""$cc"\")
two=$(push -q gpu --gpus $((count + 1)) --gpu-type "$type")
another=$(push -q gpu --gpus 1 --gpu-type "$other")
big=$(push -q gpu --gpus 1 --set ext_ml_gpu_memory_gb=$(( ${mem%.*} + 50 )))
say "pushed to gpu: fits=$fits ($(pct 0.9) GB, CC $cc) two=$two another=$another ($other) big=$big"
run_worker gpu-node-1 gpu "$work/worker.log"
wpid=$!
wait_done "$fits"
say "the job that fits: $(state "$fits")"; job "$fits" >>"$log"
for j in "$two" "$another" "$big"; do say "ojsctl why $j"; ctl why "$j" >>"$log" 2>&1; done
say "ojsctl workers list"; ctl workers list >>"$log" 2>&1
kill $wpid; wait $wpid 2>/dev/null
{ echo "=== worker gpu-node-1 (exclusive)"; cat "$work/worker.log"; } >"$OUT/workers.log"

# 3. one GPU shared through MPS
mps=$(command -v nvidia-cuda-mps-control || true)
if [ -z "$mps" ]; then
  say "no nvidia-cuda-mps-control on PATH: MPS part skipped"
else
  export CUDA_MPS_PIPE_DIRECTORY=$work/mps/pipe CUDA_MPS_LOG_DIRECTORY=$work/mps/log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  "$mps" -d >>"$log" 2>&1 || say "mps daemon: exit $?"
  a=$(push -q shared --gpus 1 --set ext_ml_gpu_memory_gb="$(pct 0.3)" --args '[12]')
  b=$(push -q shared --gpus 1 --set ext_ml_gpu_memory_gb="$(pct 0.3)" --args '[2]')
  c=$(push -q shared --gpus 1 --set ext_ml_gpu_memory_gb="$(pct 0.75)" --args '[4]')
  say "pushed to shared: a=$a ($(pct 0.3) GB, 12 s) b=$b ($(pct 0.3) GB, 2 s) c=$c ($(pct 0.75) GB, 4 s)"
  run_worker gpu-node-mps shared "$work/worker-mps.log" --concurrency 4
  wpid=$!
  for _ in $(seq 120); do [ "$(state "$b")" = active ] && break; sleep 0.25; done
  say "while a and b run: ojsctl why $c"; ctl why "$c" >>"$log" 2>&1
  say "nvidia-smi"; nvidia-smi >>"$log" 2>&1
  wait_done "$b"
  say "b $(state "$b"), a $(state "$a"): a slot is free, not the memory; ojsctl why $c"; ctl why "$c" >>"$log" 2>&1
  wait_done "$a" "$b" "$c"
  kill $wpid; wait $wpid 2>/dev/null
  echo quit | "$mps" >>"$log" 2>&1
  { echo "=== worker gpu-node-mps (MPS)"; cat "$work/worker-mps.log"; echo "=== MPS control.log"; cat "$CUDA_MPS_LOG_DIRECTORY"/control.log; } >>"$OUT/workers.log" 2>&1
  say "shared jobs"
  for j in "$a" "$b" "$c"; do job "$j"; done | python3 -c '
import json, sys
jobs = [json.loads(l) for l in sys.stdin if l.strip()]
for j in jobs:
    print(json.dumps({k: j.get(k) for k in ("id", "state", "ext_ml_gpu_memory_gb", "ext_ml_assigned_devices", "result")}))
if len(jobs) == 3 and all(j["state"] == "completed" for j in jobs):
    ran = [j["result"] if "start" in j["result"] else json.loads(j["result"]["stdout"]) for j in jobs]
    a, b, c = ran
    print("a and b ran at once:", max(a["start"], b["start"]) < min(a["end"], b["end"]))
    print("c started after a ended:", c["start"] >= a["end"])
    print("each held what it declared, less 2 GB:", all(r["held_gb"] > 0 for r in ran))
' >>"$log" 2>&1
fi
kill $bpid; wait $bpid 2>/dev/null
say "done"
