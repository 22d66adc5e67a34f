#!/usr/bin/env python3
"""The job scripts/gpu-e2e.sh runs on a real GPU: it takes the GPU memory the job
declared (ext_ml_gpu_memory_gb, less 2 GB for the CUDA context), runs bf16 matrix
products on the device the broker assigned for args[0] seconds (default: 20
products), and prints what it saw as one JSON line: the job's CUDA_VISIBLE_DEVICES,
the MPS thread share it was given, when it ran and at what rate."""
import json, os, time
start = time.time()  # before the import: when the worker started the job
import torch

job = json.load(open(os.environ["OJS_JOB_FILE"]))
seconds = float((job.get("args") or [0])[0] or 0)
declared_gb = job.get("ext_ml_gpu_memory_gb") or 0
hold = None
if declared_gb > 2:
    hold = torch.empty(int((declared_gb - 2) * 1e9), dtype=torch.uint8, device="cuda")
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
products, t0 = 0, time.time()
while True:
    for _ in range(20):
        a @ a
    torch.cuda.synchronize()
    products += 20
    if time.time() - t0 >= seconds:
        break
dt = time.time() - t0
print(json.dumps({
    "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
    "device": torch.cuda.get_device_name(0),
    "mps_active_thread_percentage": os.environ.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"),
    "held_gb": round(hold.numel() / 1e9, 1) if hold is not None else 0,
    "start": round(start, 3), "end": round(time.time(), 3),
    "tflops": round(products * 2 * 8192**3 / dt / 1e12),
}))
