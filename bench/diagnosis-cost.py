#!/usr/bin/env python3
"""What one diagnosis and one what-if cost on a big worker.

One live worker with DEVICES GPUs, every one busy, and WAITING jobs queued behind
them: times GET /jobs/{id}/diagnosis (with its start estimate) and a what-if adding a
second worker of the same size, for the last job in line, REPEAT times each, and
prints p50/max in ms and whether the estimate said `truncated`. Standard library only.

    bench/diagnosis-cost.py URL [--devices 256] [--waiting 600] [--repeat 5]

Start a broker on an empty Redis first (bench/start-broker.sh).
"""
import argparse
import http.client
import json
import statistics
import time
import urllib.parse


def call(url, method, path, body=None):
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    c.request(method, path, json.dumps(body) if body is not None else None, {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, json.loads(data) if data else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--devices", type=int, default=256)
    ap.add_argument("--waiting", type=int, default=600)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--show", action="store_true", help="print the last job's estimate")
    a = ap.parse_args()
    caps = {"accelerator": "gpu", "gpu": {"type": "nvidia-h100", "count": a.devices, "memory_gb": 80}}
    q = "diag-cost"
    job = {"type": "train", "args": [], "options": {"queue": q}, "ext_ml_gpu_count": 1, "ext_ml_estimated_duration_seconds": 3600}
    ids = []
    for _ in range(a.devices + a.waiting):
        s, body = call(a.url, "POST", "/ojs/v1/jobs", job)
        assert s == 201, body
        ids.append(body["job"]["id"])
    running = 0
    while running < a.devices:
        s, body = call(a.url, "POST", "/ojs/v1/workers/fetch",
                       {"queues": [q], "worker_id": "big-0", "count": min(100, a.devices - running), "capabilities": caps})
        assert s == 200 and body["jobs"], body
        running += len(body["jobs"])
    last = ids[-1]

    def timed(method, path, body=None):
        out, truncated = [], None
        for _ in range(a.repeat):
            t = time.perf_counter()
            s, reply = call(a.url, method, path, body)
            out.append((time.perf_counter() - t) * 1000)
            assert s == 200, reply
            truncated = json.dumps(reply).find('"truncated": true') >= 0
        return statistics.median(out), max(out), truncated

    d = timed("GET", f"/ojs/v1/jobs/{last}/diagnosis")
    w = timed("POST", f"/ojs/v1/jobs/{last}/what-if", {"changes": [{"kind": "worker", "worker_id": "big-1", "capabilities": caps}]})
    s, sample = call(a.url, "GET", f"/ojs/v1/jobs/{last}/diagnosis")
    if a.show:
        print(json.dumps(sample["diagnosis"].get("estimate"))[:2000])
    print(f"{a.devices} devices busy, {a.waiting} waiting, {a.repeat} runs each")
    print(f"diagnosis  p50 {d[0]:8.1f} ms  max {d[1]:8.1f} ms  truncated {d[2]}")
    print(f"what-if    p50 {w[0]:8.1f} ms  max {w[1]:8.1f} ms  truncated {w[2]}")


if __name__ == "__main__":
    main()
