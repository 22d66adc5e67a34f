# Sourced by the bench scripts: starts "$1/broker/broker" on its embedded Redis in a
# fresh data directory and waits until it listens. Sets DATA (its directory; the
# Redis socket is $DATA/redis.sock), BROKER_PID and PORT, and stops the broker and
# removes DATA when the calling script exits.
# BROKER_ARGS: extra broker flags (e.g. "--io-thread-handlers false" for the handler pool).
start_broker() {
  local build=$1
  DATA=$(mktemp -d /tmp/ojs-bench.XXXXXX)
  BROKER_PID=
  trap 'if [[ -n "$BROKER_PID" ]]; then kill "$BROKER_PID" 2>/dev/null || true; wait "$BROKER_PID" 2>/dev/null || true; fi; rm -rf "$DATA"' EXIT
  "$build/broker/broker" --port 0 --data-dir "$DATA" --log-level warn ${BROKER_ARGS:-} >"$DATA/broker.out" 2>"$DATA/broker.err" &
  BROKER_PID=$!
  PORT=
  for _ in $(seq 1 300); do
    PORT=$(sed -n 's/.*OJS_BROKER_READY port=\([0-9]*\).*/\1/p' "$DATA/broker.out" | head -n1)
    [[ -n "$PORT" ]] && return 0
    kill -0 "$BROKER_PID" 2>/dev/null || { cat "$DATA/broker.err" >&2; echo "the broker exited" >&2; exit 1; }
    sleep 0.1
  done
  echo "the broker did not become ready" >&2
  exit 1
}
