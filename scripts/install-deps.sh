#!/usr/bin/env bash
# Installs the Debian packages the project needs, only those missing.
# Run as root on Debian 12 (bookworm) or newer.
#
#   scripts/install-deps.sh           what building and running need (scripts/demo.sh)
#   scripts/install-deps.sh --tests   that, and what the tests and benchmarks add (scripts/test.sh)
set -euo pipefail

# Building and running the broker, the worker and ojsctl.
runtime=(
  build-essential cmake ninja-build ccache pkg-config
  libboost-dev libboost-system-dev   # Beast/Asio HTTP server
  libboost-context-dev               # fibers: request handlers on the I/O threads (src/core/fibers.cpp)
  libhiredis-dev redis-server        # Redis client + the server the embedded mode runs
  nlohmann-json3-dev libspdlog-dev libcli11-dev
  libvalijson-dev                    # header-only JSON Schema validator: requests checked against schema/*.schema.json
  libhwloc-dev                       # worker hardware discovery
  libcurl4-openssl-dev libssl-dev    # worker/CLI client, TLS, SHA-256, token hashing
  tzdata                             # IANA time zones for cron schedules (broker/cron/time_zone.cpp reads /usr/share/zoneinfo)
  libabsl-dev                        # Abseil time zones (cctz) read those files for cron, footer rule included: a
                                     # hand-written TZif reader got DST wrong after 2037 and on slim files
  python3 curl                       # scripts/demo.sh talks to the broker with curl and reads its JSON with python3
)
# What the tests and benchmarks add (OJS_BUILD_TESTS, OJS_BUILD_BENCH).
tests=(
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-jsonschema                 # schema checks of our published JSON Schemas and examples
  redis-tools                        # redis-cli: tests inspect their Redis, scripts/redis-cluster.sh builds a cluster
  chromium                           # headless screenshot test of the status page (fails when absent)
)

packages=("${runtime[@]}")
case "${1:-}" in
  "" | --runtime) ;;
  --tests) packages+=("${tests[@]}") ;;
  *) echo "usage: $0 [--runtime | --tests]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "error: missing packages and not root; run: sudo $0 $*" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
