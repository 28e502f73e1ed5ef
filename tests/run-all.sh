#!/usr/bin/env bash
# The README's test command: configure, build and run every CTest suite (GPU suites skip without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${VIDGRAPH_CMAKE_ARGS:-}
cmake --build "$BUILD" --parallel "$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure --parallel "$(nproc)"
