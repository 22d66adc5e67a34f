#!/usr/bin/env python3
"""/health and an empty FETCH under a mixed attack of expensive reads.

The attack (threads, each looping for DURATION_S): job and queue diagnoses, what-ifs,
log reads (tail=1 of a log of one-byte chunks, and full pages) and open log follows.
Meanwhile one prober times GET /ojs/v1/health and an empty FETCH (a queue with no job)
back to back and prints their p50/p99/max in ms, and how the attackers were answered
(200, 503 busy, ...). Standard library only.

    bench/mixed-attack.py URL [--duration 20] [--attackers 24] [--follows 8]

The broker is expected with its defaults (bench/mixed-attack.sh starts one).
"""
import argparse
import http.client
import json
import socket
import threading
import time
import urllib.parse
from collections import Counter


def connect(url):
    u = urllib.parse.urlparse(url)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=60)


def call(conn, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if data else {}
    conn.request(method, path, body=data, headers=headers)
    r = conn.getresponse()
    payload = r.read()
    return r.status, payload


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    k = min(len(values) - 1, int(round(p / 100.0 * (len(values) - 1))))
    return values[k]


def setup(url):
    c = connect(url)
    job = {"type": "attack.t", "args": [], "options": {"queue": "attack"}}
    gpu_job = dict(job, ext_ml_gpu_count=1)
    ids = []
    for _ in range(300):
        status, payload = call(c, "POST", "/ojs/v1/jobs", gpu_job)
        assert status == 201, payload
        ids.append(json.loads(payload)["job"]["id"])
    # One job held by a worker, with a log of one-byte chunks (progress-bar output).
    status, payload = call(c, "POST", "/ojs/v1/jobs", {"type": "attack.log", "args": [], "options": {"queue": "attack-log"}})
    log_job = json.loads(payload)["job"]["id"]
    status, payload = call(c, "POST", "/ojs/v1/workers/fetch", {"queues": ["attack-log"], "worker_id": "attack-w", "count": 1})
    assert status == 200, payload
    for _ in range(200):
        chunks = [{"stream": "stdout", "data": "x"} for _ in range(256)]
        status, payload = call(c, "POST", "/ojs/v1/workers/logs", {"worker_id": "attack-w", "job_id": log_job, "chunks": chunks})
        assert status == 200, payload
    return ids, log_job


def attacker(url, stop, paths, tally, lock):
    c = connect(url)
    i = 0
    while not stop.is_set():
        method, path, body = paths[i % len(paths)]
        i += 1
        try:
            status, _ = call(c, method, path, body)
        except (OSError, http.client.HTTPException):
            status = "error"
            c = connect(url)
        with lock:
            tally[status] += 1


def follower(url, stop, path):
    u = urllib.parse.urlparse(url)
    while not stop.is_set():
        try:
            s = socket.create_connection((u.hostname, u.port), timeout=5)
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            s.recv(4096)  # the head and what fits; then it reads nothing more
            stop.wait(5)
            s.close()
        except OSError:
            stop.wait(0.5)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--duration", type=float, default=20)
    ap.add_argument("--attackers", type=int, default=24)
    ap.add_argument("--follows", type=int, default=8)
    a = ap.parse_args()
    ids, log_job = setup(a.url)
    waiting = ids[-1]
    worker = {"kind": "worker", "worker_id": "what-if-big",
              "capabilities": {"accelerator": "gpu", "gpu": {"type": "nvidia-a100", "count": 8, "memory_gb": 80}}}
    paths = [
        ("GET", f"/ojs/v1/jobs/{waiting}/diagnosis", None),
        ("GET", "/ojs/v1/queues/attack/diagnosis", None),
        ("POST", f"/ojs/v1/jobs/{waiting}/what-if", {"changes": [worker]}),
        ("GET", f"/ojs/v1/jobs/{log_job}/logs?tail=1", None),
        ("GET", f"/ojs/v1/jobs/{log_job}/logs", None),
        ("GET", "/ojs/v1/admin/jobs?queue=attack&per_page=100", None),
    ]
    stop = threading.Event()
    tally, lock = Counter(), threading.Lock()
    threads = [threading.Thread(target=attacker, args=(a.url, stop, paths[k % len(paths):] + paths[:k % len(paths)], tally, lock))
               for k in range(a.attackers)]
    threads += [threading.Thread(target=follower, args=(a.url, stop, f"/ojs/v1/jobs/{log_job}/logs?follow=true"))
                for _ in range(a.follows)]
    for t in threads:
        t.start()
    time.sleep(1)  # the attack under way
    probe = connect(a.url)
    health, fetch = [], []
    end = time.monotonic() + a.duration
    while time.monotonic() < end:
        t0 = time.monotonic()
        status, _ = call(probe, "GET", "/ojs/v1/health")
        health.append((time.monotonic() - t0) * 1000)
        assert status == 200, status
        t0 = time.monotonic()
        status, payload = call(probe, "POST", "/ojs/v1/workers/fetch", {"queues": ["attack-empty"], "worker_id": "probe", "count": 1})
        fetch.append((time.monotonic() - t0) * 1000)
        assert status == 200, payload
        time.sleep(0.01)
    stop.set()
    for t in threads:
        t.join()
    for name, values in (("health", health), ("empty FETCH", fetch)):
        print(f"{name:12s} n={len(values):5d} p50={percentile(values, 50):7.2f} ms  p99={percentile(values, 99):7.2f} ms"
              f"  max={max(values):7.2f} ms")
    print("attackers answered:", dict(sorted(tally.items(), key=str)))


if __name__ == "__main__":
    main()
