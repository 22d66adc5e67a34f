#!/usr/bin/env bash
# Instructions per script call (push, PUSH's whole round trip, claim, NACK, ack, the
# settling, the minimal claim): a redis-server under callgrind, fed the real scripts by bench/lua-profile.py.
# Exact and load-independent, unlike commandstats µs (docs/benchmarks.md).
#
#   bench/lua-callgrind.sh [LUA_DIR] [JOBS]     (defaults: broker/store/lua, 300)
#
# Env: PORT (6392), CLASSES (10), FORM (fcall | evalsha), ONLY0, HINT, FAIR, OPCOST; see lua-profile.py.
# LISTPACK_VALUE (2048), LISTPACK_ENTRIES (12): hash-max-listpack-value and -entries, as the
# broker's embedded Redis runs (Redis's defaults: 64 and 128); ZSET_LISTPACK_ENTRIES (16):
# zset-max-listpack-entries, the same (Redis's default: 128).
# SHORT= (empty) also prints each phase's Redis calls per script call, from commandstats.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LUA_DIR=${1:-$ROOT/broker/store/lua}
JOBS=${2:-300}
PORT=${PORT:-6392}
for tool in valgrind callgrind_control callgrind_annotate redis-server python3; do
  command -v "$tool" >/dev/null || { echo "lua-callgrind: $tool is missing (apt-get install valgrind redis-server python3)" >&2; exit 2; }
done
CGDIR=$(mktemp -d /tmp/ojs-callgrind.XXXXXX)
valgrind --tool=callgrind --callgrind-out-file="$CGDIR/out.%p" \
  redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
  --hash-max-listpack-value "${LISTPACK_VALUE:-2048}" --hash-max-listpack-entries "${LISTPACK_ENTRIES:-12}" \
  --zset-max-listpack-entries "${ZSET_LISTPACK_ENTRIES:-16}" >"$CGDIR/redis.log" 2>&1 &
CGPID=$!
trap 'kill $CGPID 2>/dev/null || true; wait $CGPID 2>/dev/null || true; rm -rf "$CGDIR"' EXIT
for _ in $(seq 1 300); do
  redis-cli -p "$PORT" ping >/dev/null 2>&1 && break
  kill -0 "$CGPID" 2>/dev/null || { cat "$CGDIR/redis.log" >&2; exit 1; }
  sleep 0.2
done
# The scripts of this tree: the library exactly as the broker loads it (per-script includes).
if [ -z "${1:-}" ] && [ -x "$ROOT/build/broker/broker" ] && [ -z "${LIBRARY:-}" ]; then
  LIBRARY="$CGDIR/library.lua"
  "$ROOT/build/broker/broker" --print-lua-library >"$LIBRARY"
  export LIBRARY
fi
CGPID=$CGPID CGDIR=$CGDIR SHORT=${SHORT-1} python3 "$ROOT/bench/lua-profile.py" "$LUA_DIR" "$PORT" "$JOBS"
