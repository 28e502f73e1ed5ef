#!/usr/bin/env bash
# One device call: builds a snapshot of the caller's committed tree for the H200 with LibTorch 2.11,
# runs the GPU-capable test suites, then each benchmark script named on the command line with the build dir as its argument.
# Before the call: git archive HEAD -o .device/src.tar; echo VIDGRAPH_COMMIT=$(git rev-parse HEAD).
# Usage (repository root on the device): tests/bench/h200_all.sh [--targets "t1 t2"] [--tests "a b"]
#        [script.sh ...]   — scripts are paths relative to the repository root.
# Needs, in .device/debs, the Debian packages the device lacks (`apt-get download` them here): Qt 6
# Core/Test (libqt6core6, libqt6test6, qt6-base-dev, qt6-base-dev-tools, qmake6, qmake6-bin and their
# libicu72, libdouble-conversion3, libpcre2-16-0, libglib2.0-0, libb2-1), libspdlog-dev,
# libspdlog1.10, libfmt-dev, libfmt9, nlohmann-json3-dev, libcli11-dev, libxxhash-dev, libxxhash0,
# libsentencepiece-dev, libsentencepiece0. Results: $OUT/results.tar.gz.
set -uo pipefail
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
TARGETS=""
TESTS="attention_gpu dit samplers"
SCRIPTS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --targets) TARGETS="$2"; shift ;;
    --tests) TESTS="$2"; shift ;;
    *) SCRIPTS+=("$1") ;;
  esac
  shift
done
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
SRC=/tmp/vg-src BUILD=/tmp/vg-build DEPS=/tmp/vg-deps LOGS=/tmp/vg-logs
mkdir -p "$SRC" "$DEPS" "$LOGS" /tmp/vg-fmt/include
export VIDGRAPH_COMMIT=${VIDGRAPH_COMMIT:-unknown}
# The caller snapshots its HEAD into .device/src.tar (git archive) and carries .device: the device's
# copy of the working tree may hold other engineers' half-edited files, and its .git may be stale.
# A warm machine keeps /tmp: only files that changed since the last snapshot are replaced, so ninja
# rebuilds only what depends on them.
if [ -f .device/src.tar ]; then
  rm -rf /tmp/vg-new && mkdir -p /tmp/vg-new && tar -xf .device/src.tar -C /tmp/vg-new
  (cd /tmp/vg-new && find . -type f | while read -r f; do
     cmp -s "$f" "$SRC/$f" || { mkdir -p "$SRC/$(dirname "$f")" && cp "$f" "$SRC/$f"; }
   done)
else
  echo "no .device/src.tar: building the working tree as copied"
  cp -a . "$SRC/"
fi
mkdir -p "$SRC/.device" && cp -r .device/debs "$SRC/.device/"
for f in .device/debs/*.deb; do dpkg -x "$f" "$DEPS"; done
# pip torch ships fmt 12 headers; Debian's spdlog 1.10 needs its own fmt 9 first on the path.
cp -r "$DEPS/usr/include/fmt" /tmp/vg-fmt/include/
export LD_LIBRARY_PATH="$DEPS/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$DEPS/usr/bin:$PATH"
TORCH_PREFIX=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch;print("torch", torch.__version__, "cuda", torch.version.cuda)'
  echo "commit $VIDGRAPH_COMMIT"
} 2>&1 | tee "$OUT/env.txt"
cd "$SRC"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVIDGRAPH_GPU=cuda \
  -DCMAKE_CUDA_ARCHITECTURES=90a -DVIDGRAPH_GUI=OFF -DVIDGRAPH_MEDIA=OFF \
  -DCMAKE_PREFIX_PATH="$TORCH_PREFIX;$DEPS/usr" -DCMAKE_CXX_FLAGS="-I/tmp/vg-fmt/include" \
  -DQt6_DIR="$DEPS/usr/lib/x86_64-linux-gnu/cmake/Qt6" > "$LOGS/configure.log" 2>&1
stamp "configure rc=$?"; grep -iE "error|GPU path" "$LOGS/configure.log" | head -5
ninja -C "$BUILD" -j16 -k 0 $TARGETS > "$LOGS/build.log" 2>&1
stamp "build rc=$?"; grep -E "error|FAILED" "$LOGS/build.log" | head -30
for t in $TESTS; do
  exe="$BUILD/tests/tst_$t"
  [ -x "$exe" ] || { stamp "tst_$t: not built"; continue; }
  (cd "$BUILD" && VIDGRAPH_PLUGIN_PATH="$BUILD/lib/vidgraph/plugins" "$exe" -o "$OUT/test-$t.txt,txt" > /dev/null 2>&1)
  stamp "tst_$t rc=$?: $(grep -E '^Totals' "$OUT/test-$t.txt")"
  grep -E "^(FAIL|SKIP)" -A2 "$OUT/test-$t.txt" | head -20
done
export VIDGRAPH_PLUGIN_PATH="$BUILD/lib/vidgraph/plugins"
for s in "${SCRIPTS[@]}"; do
  stamp "running $s"
  bash "$SRC/$s" "$BUILD" 2>&1 | tail -40
  stamp "$s rc=${PIPESTATUS[0]}"
done
stamp done
# The device returns only a few files: everything goes into one archive beside env.txt.
cp "$LOGS"/*.log "$OUT/" 2>/dev/null
tar -czf /tmp/results.tar.gz -C "$OUT" . && find "$OUT" -mindepth 1 ! -name env.txt -delete &&
  mv /tmp/results.tar.gz "$OUT/results.tar.gz"
