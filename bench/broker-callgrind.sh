#!/usr/bin/env bash
# Instructions the broker spends per request (FETCH with capabilities, ACK, PUSH): the
# broker under callgrind on its embedded Redis (which runs natively), fed by loadgen
# (one producer, one worker, CLASSES classes: 10). Exact and load-independent, unlike CPU µs
# (docs/benchmarks.md "Instructions in the broker").
#
#   bench/broker-callgrind.sh [BUILD_DIR] [JOBS]     (defaults: build, 300)
#
# Prints the inclusive instructions of the request handlers and of their main parts,
# divided by JOBS. KEEP=1 keeps the callgrind output (its path is printed).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
JOBS=${2:-300}
for tool in valgrind callgrind_annotate; do
  command -v "$tool" >/dev/null || { echo "broker-callgrind: $tool is missing (apt-get install valgrind)" >&2; exit 2; }
done
for binary in "$BUILD/broker/broker" "$BUILD/bench/loadgen"; do
  [[ -x "$binary" ]] || { echo "broker-callgrind: $binary is missing (build the broker and loadgen targets)" >&2; exit 2; }
done
OUT=$(mktemp -d /tmp/ojs-broker-callgrind.XXXXXX)
# One I/O thread, as the default on 2 cores; the background passes slowed so that the
# profile is the requests'.
BROKER_ARGS="--threads 1 ${BROKER_ARGS:-}"
WRAP=(valgrind --tool=callgrind --callgrind-out-file="$OUT/broker.cg" --trace-children=no)
source "$ROOT/bench/start-broker.sh"
# start_broker runs "$1/broker/broker": point it at a folder whose broker is the wrapper.
mkdir -p "$OUT/bin/broker"
cat >"$OUT/bin/broker/broker" <<WRAPPER
#!/usr/bin/env bash
exec ${WRAP[*]} "$BUILD/broker/broker" "\$@"
WRAPPER
chmod +x "$OUT/bin/broker/broker"
start_broker "$OUT/bin"
"$BUILD/bench/loadgen" --url "http://127.0.0.1:$PORT" --queue cg --classes "${CLASSES:-10}" --pending 0 --jobs "$JOBS" \
  --producers 1 --workers 1 --duration-s 600 --skip-plain --skip-ack-fetch --ceiling-ops 1000 >"$OUT/loadgen.txt"
kill "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null || true; BROKER_PID=
ANN=$(callgrind_annotate --inclusive=yes --threshold=100 "$OUT/broker.cg" 2>/dev/null)
total=$(sed -n 's/^\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' <<<"$ANN" | tr -d ,)
echo "== broker instructions per job ($JOBS jobs, ${CLASSES:-10} classes; whole process $((total / JOBS)) per job incl. start)"
# Inclusive cost of a function (first match), per job.
per_job() { awk -v pat="$1" -v jobs="$JOBS" 'index($0, pat) { gsub(",", "", $1); printf "%9d  %s\n", $1 / jobs, pat; exit }' <<<"$ANN"; }
for f in 'ojs::broker::Router::dispatch' 'ojs::broker::FetchService::fetch(' 'ojs::broker::FetchService::fetch_from_queue' \
         'ojs::broker::WorkerStore::contact' 'ojs::broker::run_fetch_filters' 'ojs::broker::ClaimStore::claim' \
         'ojs::broker::JobRecord::envelope' 'ojs::broker::DiagnosisLog::note(' 'ojs::broker::JobService::ack' \
         'ojs::broker::JobStore::ack' 'ojs::broker::PushService::push' 'nlohmann::json_abi' ; do
  per_job "$f"
done
echo "(per job: one PUSH, one FETCH, one ACK; a function's figure includes what it calls)"
if [[ "${KEEP:-0}" == 1 ]]; then cp "$OUT/broker.cg" /tmp/broker.cg; echo "kept: /tmp/broker.cg"; fi
rm -rf "$OUT"
