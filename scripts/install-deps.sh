#!/usr/bin/env bash
# Installs the Debian packages the project needs, only those missing.
# Run as root on Debian 12 (bookworm) or newer.
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libboost-dev libboost-system-dev   # Beast/Asio HTTP server
  libboost-context-dev               # fibers: request handlers on the I/O threads (src/core/fibers.cpp)
  libhiredis-dev redis-server redis-tools  # Redis client + the server tests and the embedded mode run
  nlohmann-json3-dev libspdlog-dev libcli11-dev
  libvalijson-dev                    # header-only JSON Schema validator: requests checked against schema/*.schema.json
  libhwloc-dev                       # worker hardware discovery
  libcurl4-openssl-dev libssl-dev    # worker/CLI client, TLS, SHA-256, token hashing
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-jsonschema         # schema checks of our published JSON Schemas and examples
  curl
  tzdata                             # IANA time zones for cron schedules (broker/cron/time_zone.cpp reads /usr/share/zoneinfo)
  libabsl-dev                        # Abseil time zones (cctz) read those files for cron, footer rule included: a
                                     # hand-written TZif reader got DST wrong after 2037 and on slim files
  chromium                           # headless screenshot test of the status page (fails when absent)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "error: missing packages and not root; run: sudo $0" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
