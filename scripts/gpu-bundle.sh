#!/usr/bin/env bash
# Packs what scripts/gpu-e2e.sh runs on a bare GPU machine: the broker, worker, ojsctl
# and redis-server of this build with the shared libraries they load (not glibc's),
# beside scripts/capture-gpu.sh, scripts/gpu-e2e.sh and the job it runs, scripts/gpu-job.py.
#   scripts/gpu-bundle.sh BUILD_DIR OUT_DIR      then on the GPU machine: OUT=... OUT_DIR/gpu-e2e.sh
set -euo pipefail
build=${1:?build dir} out=${2:?bundle dir}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out/lib"
cp "$build/broker/broker" "$build/worker/worker" "$build/ojsctl/ojsctl" "$(command -v redis-server)" "$out/"
strip "$out/broker" "$out/worker" "$out/ojsctl"
for b in broker worker ojsctl redis-server; do ldd "$out/$b" | awk '/=> \//{print $3}'; done | sort -u |
  grep -vE '/(libc|libm|libpthread|libdl|librt)\.so|ld-linux' | xargs -I{} cp -L {} "$out/lib/"
cp "$root/scripts/capture-gpu.sh" "$root/scripts/gpu-e2e.sh" "$root/scripts/gpu-job.py" "$out/"
echo "bundle in $out ($(du -sh "$out" | cut -f1))"
