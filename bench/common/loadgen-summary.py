#!/usr/bin/env python3
"""One line per measured phase of a `loadgen --json` report: the PUSH and FETCH+ACK
throughput and latency the shell benches compare.

    bench/common/loadgen-summary.py REPORT.json LABEL
"""
import json
import sys

report = json.load(open(sys.argv[1]))
for op in report["ops"]:
    if op["op"] in ("PUSH (ml)", "FETCH+ACK (caps)"):
        print(f'{sys.argv[2]:<10} {op["op"]:<18} {op["per_s"]:>8.0f}/s  p50 {op["p50_us"]/1000:6.2f} ms  '
              f'p99 {op["p99_us"]/1000:6.2f} ms  errors {op["errors"]}')
