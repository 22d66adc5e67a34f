#!/usr/bin/env bash
# Configures and builds (Release) into build/, with ninja's progress on the terminal.
# OJS_TESTS=OFF leaves the tests and benchmarks out of the build tree (and so the
# packages only they need: scripts/install-deps.sh --tests); the default builds them.
set -euo pipefail
cd "$(dirname "$0")/.."
# The libraries precompile a header (target_precompile_headers): ccache caches such
# compiles only with this sloppiness; without it every compile is a miss.
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros}"
tests="${OJS_TESTS:-ON}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DOJS_BUILD_TESTS="$tests" -DOJS_BUILD_BENCH="$tests" >/dev/null
cmake --build build -j"$(nproc)" "$@"
