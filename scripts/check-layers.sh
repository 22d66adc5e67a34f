#!/usr/bin/env bash
# The layering rules of docs/architecture.md, checked on the sources:
#  1. no two folders of broker/ include each other (every dependency one-way);
#  2. only broker/store speaks to Redis: no other folder names the Redis client
#     (hiredis, redis_client.hpp, RedisPool, RedisValue). The files at broker/'s
#     root (app.cpp, main.cpp, access_and_governance.*) are the wiring: they may
#     include any folder and hand the connection pool to the stores.
# Usage: check-layers.sh [repository root]; exits 1 naming each violation.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root/broker"

edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
for dir in */; do
  dir=${dir%/}
  grep -rHoE '#include "broker/[a-z_]+/' "$dir" --include='*.hpp' --include='*.cpp' |
    sed -E 's|^([^:]+):#include "broker/([a-z_]+)/$|'"$dir"' \2 \1|' |
    awk '$1 != $2' || true
done >"$edges"

status=0
while read -r from to; do
  if awk -v a="$to" -v b="$from" '$1 == a && $2 == b { found = 1 } END { exit !found }' "$edges"; then
    if [[ "$from" < "$to" ]]; then
      echo "two-way folder dependency: $from <-> $to"
      awk -v a="$from" -v b="$to" '($1 == a && $2 == b) || ($1 == b && $2 == a) { print "  broker/" $3 " includes broker/" $2 "/" }' "$edges" | sort -u
    fi
    status=1
  fi
done < <(awk '{ print $1, $2 }' "$edges" | sort -u)

others=()
for dir in */; do [[ $dir == store/ ]] || others+=("$dir"); done
if ((${#others[@]})) && redis=$(grep -rlE 'hiredis|redis_client\.hpp|\bRedisPool\b|\bRedisValue\b' \
                                    --include='*.hpp' --include='*.cpp' "${others[@]}"); then
  for f in $redis; do echo "Redis client used outside broker/store: broker/$f"; done
  status=1
fi
[[ $status == 0 ]] && echo "layers ok: folder dependencies one-way, Redis only in broker/store"
exit $status
