#!/usr/bin/env bash
# A/B of a kernel variant in one device call: rebuilds BUILD_DIR's configuration in BUILD_DIR-b with
# VARIANT_FLAGS added to the CUDA flags (e.g. -DVG_FWD_LISTED_STAGES=2), then runs the hopper check
# (bit-equality and kernel timings) and `vidgraph-attention bench` at equal work with the peers
# (32,24,40) on both builds, A then B then A again (the spread of A against itself is the noise).
# Usage: VARIANT_FLAGS="-D..." tests/bench/ab_run.sh BUILD_DIR  → $OUT/ab-{a,b,a2}-*.json
set -uo pipefail
A=${1:?usage: VARIANT_FLAGS=... tests/bench/ab_run.sh BUILD_DIR}
B="$A-b"
OUT=${OUT:-$PWD/device-out}
here=$(cd "$(dirname "$0")" && pwd)
: "${VARIANT_FLAGS:?set VARIANT_FLAGS to the extra CUDA flags of the variant}"
val() { sed -n "s/^$1:[A-Z]*=//p" "$A/CMakeCache.txt"; }
cmake -S "$(val CMAKE_HOME_DIRECTORY)" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVIDGRAPH_GPU=cuda \
  -DCMAKE_CUDA_ARCHITECTURES=90a -DVIDGRAPH_GUI=OFF -DVIDGRAPH_MEDIA=OFF -DVIDGRAPH_TESTS=OFF \
  -DCMAKE_PREFIX_PATH="$(val CMAKE_PREFIX_PATH)" -DCMAKE_CXX_FLAGS="$(val CMAKE_CXX_FLAGS)" \
  -DQt6_DIR="$(val Qt6_DIR)" -DCMAKE_CUDA_FLAGS="$VARIANT_FLAGS" > "$OUT/ab-configure.log" 2>&1 \
  || { echo "ab_run: the variant did not configure"; tail -5 "$OUT/ab-configure.log"; exit 1; }
ninja -C "$B" -j16 vidgraph-attention vidgraph_attention vidgraph-hopper-check > "$OUT/ab-build.log" 2>&1 \
  || { echo "ab_run: the variant did not build"; grep -E "error" "$OUT/ab-build.log" | head; exit 1; }
run() {  # tag build
  timeout 300 "$2/bin/vidgraph-hopper-check" > "$OUT/ab-$1-hopper.json" 2> "$OUT/ab-$1-hopper.txt"
  echo "$1 hopper-check rc=$?: $(grep -c '^PASS' "$OUT/ab-$1-hopper.txt") passed, $(grep -c '^FAIL' "$OUT/ab-$1-hopper.txt") failed"
  grep -E "^(timing|occupancy)" "$OUT/ab-$1-hopper.txt" | grep -v "mma.sync\]"
  VIDGRAPH_PLUGIN_PATH="$2/lib/vidgraph/plugins" timeout 300 "$2/bin/vidgraph-attention" bench --device cuda \
    --grid 32,24,40 --method vsa --method full --sparsity 0.875 --warmup 2 --repeats 20 \
    --out "$OUT/ab-$1-bench.json" > "$OUT/ab-$1-bench.log" 2>&1
  python3 "$here/summarize.py" "$OUT/ab-$1-bench.json" | grep -E "^  (full|vsa)"
}
run a "$A"; run b "$B"; run a2 "$A"
