#!/usr/bin/env bash
# What --redis-replica-acks costs: PUSH and FETCH+ACK on a redis-server with one
# replica (both AOF everysec, loopback), the broker without WAIT and with
# --redis-replica-acks 1, the same loadgen run on both (docs/benchmarks.md).
# Knobs (environment): BUILD_DIR (build)  JOBS (4000)  PRODUCERS (4)  WORKERS (8)
#   DURATION_S (20)  PORT (31201: the master; the replica PORT+1)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
JOBS=${JOBS:-4000} PRODUCERS=${PRODUCERS:-4} WORKERS=${WORKERS:-8} DURATION_S=${DURATION_S:-20}
PORT=${PORT:-31201}
DATA=$(mktemp -d /tmp/ojs-replica-bench.XXXXXX)
BROKER_PID=
cleanup() {
  [[ -n "$BROKER_PID" ]] && { kill "$BROKER_PID" 2>/dev/null || true; wait "$BROKER_PID" 2>/dev/null || true; }
  redis-cli -p "$((PORT + 1))" shutdown nosave >/dev/null 2>&1 || true
  redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$DATA"
}
trap cleanup EXIT

for p in "$PORT" "$((PORT + 1))"; do
  mkdir -p "$DATA/$p"
  redis-server --port "$p" --bind 127.0.0.1 --dir "$DATA/$p" --appendonly yes --appendfsync everysec --save '' --daemonize yes \
    --logfile "$DATA/$p/redis.log" >/dev/null
done
for _ in $(seq 100); do redis-cli -p "$((PORT + 1))" ping >/dev/null 2>&1 && break; sleep 0.1; done
redis-cli -p "$((PORT + 1))" replicaof 127.0.0.1 "$PORT" >/dev/null
for _ in $(seq 300); do redis-cli -p "$PORT" info replication | grep -q 'state=online' && break; sleep 0.1; done

measure() {
  local label=$1; shift
  redis-cli -p "$PORT" flushall >/dev/null
  "$BUILD_DIR/broker/broker" --port 0 --redis "redis://127.0.0.1:$PORT" --log-level warn "$@" >"$DATA/broker.out" 2>"$DATA/broker.err" &
  BROKER_PID=$!
  for _ in $(seq 200); do grep -q OJS_BROKER_READY "$DATA/broker.out" && break; sleep 0.1; done
  local port; port=$(sed -n 's/.*OJS_BROKER_READY port=\([0-9]*\).*/\1/p' "$DATA/broker.out")
  "$BUILD_DIR/bench/loadgen" --url "http://127.0.0.1:$port" --queue replicas --jobs "$JOBS" \
    --producers "$PRODUCERS" --workers "$WORKERS" --duration-s "$DURATION_S" --skip-plain --json >"$DATA/$label.json"
  "$ROOT/bench/common/loadgen-summary.py" "$DATA/$label.json" "$label"
  kill "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null || true; BROKER_PID=
}

echo "commit $(git -C "$ROOT" rev-parse --short HEAD), $(nproc) cores, one master + one replica on loopback"
measure "no-wait"
measure "wait-1" --redis-replica-acks 1
