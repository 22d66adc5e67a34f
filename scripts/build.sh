#!/usr/bin/env bash
# Configures and builds everything (Release) into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
# The libraries precompile a header (target_precompile_headers): ccache caches such
# compiles only with this sloppiness; without it every compile is a miss.
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" "$@"
