#!/usr/bin/env bash
# The test command: installs what is missing (building, running and the tests'
# own packages), builds everything, and runs every test (unit, integration
# against real redis-server and broker processes, and the OJS conformance cases
# through our own runner).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh --tests
OJS_TESTS=ON ./scripts/build.sh
cd build
ctest --output-on-failure --timeout 1800
