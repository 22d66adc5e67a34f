#!/bin/bash
# On a GPU machine, from a bundle made by scripts/gpu-bundle.sh: capture what the
# worker of this build discovers (NVML, hwloc; scripts/capture-gpu.sh), then a broker
# on its embedded redis-server and that worker place and run a real CUDA job (a bf16
# matmul through PyTorch, on the device the broker assigned) and explain three jobs
# that cannot run. Everything lands in $OUT (e2e.log, the capture files, worker.log).
set -u
here=$(dirname "$(readlink -f "$0")")
export LD_LIBRARY_PATH=$here/lib
log=$OUT/e2e.log
say() { echo "+ $*" | tee -a "$log"; }
"$here/capture-gpu.sh" "$here/worker" "$OUT" h200-1gpu-head >/dev/null 2>&1
cp "$OUT/h200-1gpu-head.log" "$OUT/capture.log" 2>/dev/null
work=$(mktemp -d)
"$here/broker" --port 0 --data-dir "$work/data" --redis-server "$here/redis-server" --locality-delay-ms 0 --log-level warn >"$work/broker.out" 2>&1 &
bpid=$!
for _ in $(seq 100); do grep -q OJS_BROKER_READY "$work/broker.out" && break; sleep 0.1; done
port=$(sed -n 's/.*OJS_BROKER_READY port=\([0-9]*\).*/\1/p' "$work/broker.out")
say "broker on port $port"; cat "$work/broker.out" >>"$log"
url=http://127.0.0.1:$port
ctl() { "$here/ojsctl" --url "$url" "$@"; }
state() { python3 -c "import json,sys,urllib.request; print(json.load(urllib.request.urlopen(sys.argv[1]))['job']['state'])" "$url/ojs/v1/jobs/$1" 2>/dev/null; }
fits=$(ctl push --type ml.matmul -q gpu --gpus 1 --gpu-type nvidia-h200 --set ext_ml_gpu_memory_gb=120 --set ext_ml_compute_capability=\"9.0\" 2>>"$log" | tee -a "$log" | grep -o '[0-9a-f-]\{36\}' | head -1)
two=$(ctl push --type ml.matmul -q gpu --gpus 2 --gpu-type nvidia-h200 2>>"$log" | grep -o '[0-9a-f-]\{36\}' | head -1)
a100=$(ctl push --type ml.matmul -q gpu --gpus 1 --gpu-type nvidia-a100 2>>"$log" | grep -o '[0-9a-f-]\{36\}' | head -1)
big=$(ctl push --type ml.matmul -q gpu --gpus 1 --set ext_ml_gpu_memory_gb=200 2>>"$log" | grep -o '[0-9a-f-]\{36\}' | head -1)
say "pushed: fits=$fits two=$two a100=$a100 big=$big"
cmd='python3 -c "import os,torch,time; a=torch.randn(8192,8192,device=\"cuda\",dtype=torch.bfloat16); torch.cuda.synchronize(); t=time.time(); [a@a for _ in range(20)]; torch.cuda.synchronize(); dt=time.time()-t; print({\"visible\": os.environ.get(\"CUDA_VISIBLE_DEVICES\"), \"device\": torch.cuda.get_device_name(0), \"tflops\": round(20*2*8192**3/dt/1e12)})"'
"$here/worker" --broker "$url" --worker-id gpu-node-1 --queues gpu --command "ml.*=$cmd" --work-dir "$work/jobs" \
  --poll-interval-ms 200 --heartbeat-interval-s 1 --log-level info >"$work/worker.log" 2>&1 &
wpid=$!
for _ in $(seq 180); do case $(state "$fits") in completed|discarded|retryable) break;; esac; sleep 0.5; done
say "the job that fits: $(state "$fits")"; python3 -c "import json,sys,urllib.request; print(json.dumps(json.load(urllib.request.urlopen(sys.argv[1]))['job'], indent=1))" "$url/ojs/v1/jobs/$fits" >>"$log" 2>&1
say "its logs:"; ctl logs "$fits" >>"$log" 2>&1
for j in "$two" "$a100" "$big"; do say "why $j"; ctl why "$j" >>"$log" 2>&1; done
say "workers:"; ctl workers list >>"$log" 2>&1
kill $wpid; wait $wpid 2>/dev/null
cp "$work/worker.log" "$OUT/worker.log"; kill $bpid; wait $bpid 2>/dev/null
