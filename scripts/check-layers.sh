#!/usr/bin/env bash
# The layering rules of docs/architecture.md, checked on the sources:
#  1. no two folders of broker/ include each other (every dependency one-way);
#  2. only broker/store speaks to Redis: no other folder names the Redis client
#     (hiredis, redis_client.hpp, RedisPool, RedisValue). The files at broker/'s
#     root (app.cpp, main.cpp, access_and_governance.*) are the wiring: they may
#     include any folder and hand the connection pool to the stores.
#  3. the direction is api -> services -> store: broker/api (and broker/http)
#     include no broker/store/ header; broker/api names no store type (JobStore,
#     EventStore, ...) and does not reach one through a service (`.store()`);
#     broker/store includes no other folder of broker/; no folder includes
#     broker/api/ (only the wiring).
#  4. no store is handed around: outside broker/store nothing calls a `store()`
#     or `redis()` accessor (`jobs.store().forget(id)`); each service receives
#     the stores it uses in its constructor, wired at broker/'s root (app.cpp).
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
# 3. api -> services -> store.
while read -r from to file; do
  if [[ ($from == api || $from == http) && $to == store ]]; then
    echo "$from includes the store (handlers call services; the HTTP edge catches ojs::BackendUnavailable): broker/$file"
    status=1
  elif [[ $from == store ]]; then
    echo "store depends on broker/$to/ (the store is the bottom layer): broker/$file"
    status=1
  elif [[ $to == api ]]; then
    echo "broker/$from depends on the api (only the wiring at broker/'s root may): broker/$file"
    status=1
  fi
done < <(sort -u "$edges")
if [[ -d api ]] && named=$(grep -rnE '\b[A-Z][A-Za-z]*Store\b|\.store\(\)' --include='*.hpp' --include='*.cpp' api); then
  while IFS= read -r line; do echo "api names the store (handlers call services): broker/$line"; done <<<"$named"
  status=1
fi
# 4. stores are wired, not fetched from another service or store.
others=()
for dir in */ *.cpp *.hpp; do [[ -e $dir && $dir != store/ ]] && others+=("$dir"); done
if ((${#others[@]})) && handed=$(grep -rnE '(\.|->)(store|redis)\(\)' --include='*.hpp' --include='*.cpp' "${others[@]}"); then
  while IFS= read -r line; do echo "store accessor used outside broker/store (wire the store in app.cpp): broker/$line"; done <<<"$handed"
  status=1
fi
[[ $status == 0 ]] && echo "layers ok: folder dependencies one-way, api -> services -> store, Redis only in broker/store, no store accessors"
exit $status
