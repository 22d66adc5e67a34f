#!/usr/bin/env bash
# BullMQ's rate on this machine, our yardstick (docs/benchmarks.md
# "Against BullMQ"): installs `bullmq` from npm into a temporary folder, starts
# redis-server as the broker starts its embedded one (unix socket, AOF everysec),
# adds JOBS jobs one `add` at a time, then processes them with WORKERS Workers of
# CONCURRENCY each and an empty handler. Prints one JSON line. Run it back to back
# with bench/redis-per-job.sh on a quiet machine.
#
#   bench/bullmq.sh            knobs: JOBS (20000), WORKERS (4), CONCURRENCY (2),
#                              PRODUCERS (4), BULLMQ_VERSION (latest)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
command -v node >/dev/null && command -v npm >/dev/null || { echo "bullmq.sh: node and npm are needed (apt-get install nodejs npm)" >&2; exit 2; }
command -v redis-server >/dev/null || { echo "bullmq.sh: redis-server is needed" >&2; exit 2; }
WORK=$(mktemp -d /tmp/ojs-bullmq.XXXXXX)
REDIS_PID=
trap 'if [[ -n "$REDIS_PID" ]]; then kill "$REDIS_PID" 2>/dev/null || true; wait "$REDIS_PID" 2>/dev/null || true; fi; rm -rf "$WORK"' EXIT
cp "$ROOT/bench/bullmq/bullmq-bench.mjs" "$WORK/"
(cd "$WORK" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund "bullmq@${BULLMQ_VERSION:-latest}" ioredis >/dev/null)
redis-server --port 0 --unixsocket "$WORK/redis.sock" --unixsocketperm 700 --dir "$WORK" --appendonly yes \
  --appendfsync everysec --save '' --daemonize no --logfile "$WORK/redis.log" --protected-mode yes &
REDIS_PID=$!
for _ in $(seq 1 100); do [[ -S "$WORK/redis.sock" ]] && break; sleep 0.05; done
[[ -S "$WORK/redis.sock" ]] || { echo "bullmq.sh: redis-server did not start" >&2; cat "$WORK/redis.log" >&2; exit 1; }
echo "== bullmq $(cd "$WORK" && node -p 'require("bullmq/package.json").version') (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
(cd "$WORK" && node bullmq-bench.mjs "$WORK/redis.sock" "${JOBS:-20000}" "${WORKERS:-4}" "${CONCURRENCY:-2}" "${PRODUCERS:-4}")
