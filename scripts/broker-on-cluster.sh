#!/usr/bin/env bash
# The broker on a local 6-node Redis Cluster, in one line:
#
#   scripts/broker-on-cluster.sh [DIR] [-- broker args...]     # DIR default: ojs-cluster
#
# Starts (or reuses) the cluster of scripts/redis-cluster.sh in DIR (ports from
# $OJS_CLUSTER_PORT, default 30001) and runs build/broker/broker against it with
# --redis redis-cluster://<the six nodes>. Stop the cluster afterwards with
# `scripts/redis-cluster.sh stop DIR`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir=ojs-cluster
if [ $# -gt 0 ] && [ "$1" != "--" ]; then dir=$1; shift; fi
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
seeds=$("$root/scripts/redis-cluster.sh" start "$dir" "${OJS_CLUSTER_PORT:-30001}" | tail -n 1)
exec "${OJS_BROKER:-$root/build/broker/broker}" --redis "redis-cluster://$seeds" "$@"
