#!/usr/bin/env bash
# FETCH+ACK throughput on 1 shard vs 3 shards of the same machine: the broker on a
# single redis-server (redis://), then on the 6-node cluster of scripts/redis-cluster.sh
# (3 masters, 3 replicas; redis-cluster://), the same loadgen run on both, jobs spread
# over QUEUES queues. Both Redis setups use AOF (appendfsync everysec). Bounded; see
# docs/benchmarks.md ("1 shard vs 3 shards"). Knobs (environment):
#   BUILD_DIR (build)  QUEUES (30)  JOBS (6000)  PRODUCERS (4)  WORKERS (8)  DURATION_S (60)
#   PORT (31001, the single Redis; the cluster uses PORT+10 .. PORT+15)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
QUEUES=${QUEUES:-30} JOBS=${JOBS:-6000} PRODUCERS=${PRODUCERS:-4} WORKERS=${WORKERS:-8} DURATION_S=${DURATION_S:-60}
PORT=${PORT:-31001}
DATA=$(mktemp -d /tmp/ojs-cluster-bench.XXXXXX)
BROKER_PID= REDIS_PID=
cleanup() {
  [[ -n "$BROKER_PID" ]] && { kill "$BROKER_PID" 2>/dev/null || true; wait "$BROKER_PID" 2>/dev/null || true; }
  [[ -n "$REDIS_PID" ]] && { kill "$REDIS_PID" 2>/dev/null || true; wait "$REDIS_PID" 2>/dev/null || true; }
  "$ROOT/scripts/redis-cluster.sh" stop "$DATA/cluster" >/dev/null 2>&1 || true
  rm -rf "$DATA"
}
trap cleanup EXIT

# Starts a broker on $1 (a Redis URL), runs loadgen against it, prints the FETCH+ACK line.
measure() {
  local url=$1 label=$2
  "$BUILD_DIR/broker/broker" --port 0 --redis "$url" --log-level warn >"$DATA/broker.out" 2>"$DATA/broker.err" &
  BROKER_PID=$!
  for _ in $(seq 200); do grep -q OJS_BROKER_READY "$DATA/broker.out" && break; sleep 0.1; done
  local port; port=$(sed -n 's/.*OJS_BROKER_READY port=\([0-9]*\).*/\1/p' "$DATA/broker.out")
  "$BUILD_DIR/bench/loadgen" --url "http://127.0.0.1:$port" --queue "shards" --queues "$QUEUES" --jobs "$JOBS" \
    --producers "$PRODUCERS" --workers "$WORKERS" --duration-s "$DURATION_S" --skip-plain --json >"$DATA/$label.json"
  "$ROOT/bench/common/loadgen-summary.py" "$DATA/$label.json" "$label"
  kill "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null || true; BROKER_PID=
}

mkdir -p "$DATA/single"
redis-server --port "$PORT" --bind 127.0.0.1 --dir "$DATA/single" --appendonly yes --save '' --logfile "$DATA/single/redis.log" &
REDIS_PID=$!
for _ in $(seq 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
measure "redis://127.0.0.1:$PORT" "1 shard"
kill "$REDIS_PID"; wait "$REDIS_PID" 2>/dev/null || true; REDIS_PID=

seeds=$("$ROOT/scripts/redis-cluster.sh" start "$DATA/cluster" $((PORT + 10)) | tail -n 1)
measure "redis-cluster://$seeds" "3 shards"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
