#!/usr/bin/env bash
# A real Redis Cluster on loopback for tests and for trying the broker on a cluster:
# 6 redis-server processes (3 masters, 3 replicas), cluster-enabled, AOF on,
# created with `redis-cli --cluster create --cluster-replicas 1`, waited to
# cluster_state:ok.
#
#   scripts/redis-cluster.sh start DIR [BASE_PORT]   # ports BASE_PORT..BASE_PORT+5 (default 30001)
#   scripts/redis-cluster.sh stop DIR
#
# `start` prints the seed list (host:port,...) on its last line.
set -euo pipefail

usage() { echo "usage: $0 start DIR [BASE_PORT] | stop DIR" >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd=$1 dir=$2 base=${3:-30001}
nodes=6

stop_cluster() {
  local pids=()
  for f in "$dir"/node-*/redis.pid; do
    [ -f "$f" ] || continue
    local pid; pid=$(cat "$f")
    kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
}

wait_ok() {
  for _ in $(seq 300); do
    local ok=1
    for i in $(seq 0 $((nodes - 1))); do
      redis-cli -p $((base + i)) cluster info 2>/dev/null | grep -q '^cluster_state:ok' || { ok=0; break; }
      # A replica that never finished its first sync cannot be promoted
      # (cluster-replica-validity-factor): a master killed then would stay down.
      local repl; repl=$(redis-cli -p $((base + i)) info replication 2>/dev/null)
      if grep -q '^role:slave' <<<"$repl"; then grep -q '^master_link_status:up' <<<"$repl" || { ok=0; break; }; fi
    done
    [ $ok = 1 ] && return 0
    sleep 0.1
  done
  echo "error: cluster did not reach cluster_state:ok with every replica in sync within 30 s" >&2
  return 1
}

case $cmd in
  start)
    command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
      { echo "error: redis-server and redis-cli are required (apt-get install redis-server redis-tools)" >&2; exit 1; }
    mkdir -p "$dir"
    seeds=()
    for i in $(seq 0 $((nodes - 1))); do
      port=$((base + i)) nd="$dir/node-$i"
      mkdir -p "$nd"
      redis-server --port "$port" --bind 127.0.0.1 --dir "$nd" --daemonize yes \
        --pidfile "$nd/redis.pid" --logfile "$nd/redis.log" \
        --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 2000 \
        --appendonly yes --save '' </dev/null >/dev/null 2>&1  # no inherited pipe: callers read to EOF
      seeds+=("127.0.0.1:$port")
    done
    for i in $(seq 0 $((nodes - 1))); do
      for _ in $(seq 100); do redis-cli -p $((base + i)) ping >/dev/null 2>&1 && break; sleep 0.1; done
    done
    # A restarted cluster keeps its nodes.conf: create it only once.
    if ! redis-cli -p "$base" cluster info | grep -q '^cluster_known_nodes:6'; then
      redis-cli --cluster create "${seeds[@]}" --cluster-replicas 1 --cluster-yes >"$dir/create.log" 2>&1 ||
        { cat "$dir/create.log" >&2; stop_cluster; exit 1; }
    fi
    wait_ok || { stop_cluster; exit 1; }
    (IFS=,; echo "${seeds[*]}")
    ;;
  stop) stop_cluster ;;
  *) usage ;;
esac
