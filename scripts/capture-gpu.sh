#!/usr/bin/env bash
# Records what a real NVIDIA GPU node reports, so the worker's discovery can be
# tested on recorded values where there is no GPU (tests/fixtures/nvml):
#   NAME.nvidia-smi.csv         nvidia-smi's view, the ground truth to compare with
#   NAME.nvidia-smi-q.txt       nvidia-smi -q (MIG, compute mode, ECC, clocks) in full
#   NAME.nvml.json              worker --print-nvml-inventory: raw NVML values (the fixture)
#   NAME.capabilities.json      worker --print-capabilities, GPU sharing "auto", no MPS daemon
#   NAME.mps.capabilities.json  the same while an MPS control daemon runs (when one is installed)
#   NAME.log                    what was run and the worker's logs
# It changes no GPU setting: MIG and compute modes are read, never set; the MPS
# daemon runs in a private pipe directory and is stopped again.
#
# usage: scripts/capture-gpu.sh WORKER_BINARY OUT_DIR NAME
set -uo pipefail
worker=${1:?worker binary} out=${2:?output folder} name=${3:?capture name}
mkdir -p "$out"
log="$out/$name.log"
say() { echo "+ $*" | tee -a "$log"; }

say "date: $(date -u +%FT%TZ)  host: $(uname -srm)"
fields=name,memory.total,compute_cap,driver_version,pci.bus_id,uuid,mig.mode.current,mig.mode.pending,compute_mode
say "nvidia-smi --query-gpu=$fields --format=csv"
nvidia-smi --query-gpu="$fields" --format=csv >"$out/$name.nvidia-smi.csv" 2>>"$log"
nvidia-smi -q >"$out/$name.nvidia-smi-q.txt" 2>>"$log"

say "$worker --print-nvml-inventory"
"$worker" --print-nvml-inventory >"$out/$name.nvml.json" 2>>"$log" || say "exit $?"
say "$worker --print-capabilities"
"$worker" --print-capabilities >"$out/$name.capabilities.json" 2>>"$log" || say "exit $?"

mps=$(command -v nvidia-cuda-mps-control || true)
if [ -z "$mps" ]; then
  say "no nvidia-cuda-mps-control on PATH: MPS capture skipped"
  exit 0
fi
pipe=$(mktemp -d)
export CUDA_MPS_PIPE_DIRECTORY=$pipe/pipe CUDA_MPS_LOG_DIRECTORY=$pipe/log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
say "$mps -d (pipe $CUDA_MPS_PIPE_DIRECTORY)"
"$mps" -d >>"$log" 2>&1 || say "exit $?"
say "$worker --print-capabilities (MPS daemon running)"
"$worker" --print-capabilities >"$out/$name.mps.capabilities.json" 2>>"$log" || say "exit $?"
echo quit | "$mps" >>"$log" 2>&1
cat "$CUDA_MPS_LOG_DIRECTORY"/control.log >>"$log" 2>/dev/null
rm -rf "$pipe"
