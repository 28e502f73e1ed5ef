#!/usr/bin/env bash
# Builds and runs the GPU suite (and, with --bench, the attention benchmark) on the lent H200.
# Run from the repository root on the device machine, with the Debian packages of
# DESIGN.md "Where things run" (plus spdlog, fmt, nlohmann-json, CLI11, xxhash, sentencepiece)
# carried in .device/debs. Logs and results go to $OUT (or ./device-out).
# Usage: tests/bench/h200_run.sh [--bench] [--bench-args "..."] [--sweep [--sweep-rows "r1 r2"]]
#   --pieces: builds tests/bench/pieces (vsa_pieces) and times the VSA stages apart.
#   --sweep: times full and vsa@0.875 on the Wan2.2-5B grid under each tuning row candidate
#            (VIDGRAPH_ATTENTION_TUNING) before the main benchmark.
# Returned under $OUT: test.txt, bench.json, pieces.json, summary.txt, logs.tar.gz (<= 8 files).
set -uo pipefail
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
BENCH=0
SWEEP=0
PIECES=0
BENCH_ARGS=""
SWEEP_ROWS="1,1,0,1,0,0 1,1,0,1,1,1 1,1,0,1,1,0 1,1,0,1,0,1 2,2,0,1,0,0 2,2,1,1,0,0 2,1,0,1,0,1"
while [ $# -gt 0 ]; do
  case "$1" in
    --bench) BENCH=1 ;;
    --sweep) SWEEP=1 ;;
    --sweep-rows) SWEEP_ROWS="$2"; shift ;;
    --pieces) PIECES=1 ;;
    --bench-args) BENCH_ARGS="$2"; shift ;;
  esac
  shift
done
LOGS=/tmp/vg-logs
mkdir -p "$LOGS"
DEPS=/tmp/vg-deps
BUILD=/tmp/vg-build
mkdir -p "$DEPS"
for f in .device/debs/*.deb; do dpkg -x "$f" "$DEPS"; done
# pip torch ships fmt 12 headers in its include dir; Debian's spdlog 1.10 needs its own fmt 9
# first on the path (-I dirs precede -isystem ones).
mkdir -p /tmp/vg-fmt/include && cp -r "$DEPS/usr/include/fmt" /tmp/vg-fmt/include/
export LD_LIBRARY_PATH="$DEPS/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
TORCH_PREFIX=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c 'import torch;print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
  nvcc --version | tail -1; cmake --version | head -1; g++ --version | head -1
  git log -1 --format='commit %H %s' 2>/dev/null || true
} 2>&1 | tee "$LOGS/env.txt"

cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVIDGRAPH_GPU=cuda \
  -DCMAKE_CUDA_ARCHITECTURES=90a -DVIDGRAPH_GUI=OFF -DVIDGRAPH_MEDIA=OFF \
  -DCMAKE_PREFIX_PATH="$TORCH_PREFIX;$DEPS/usr" \
  -DCMAKE_CXX_FLAGS="-I/tmp/vg-fmt/include" \
  -DQt6_DIR="$DEPS/usr/lib/x86_64-linux-gnu/cmake/Qt6" > "$LOGS/configure.log" 2>&1
echo "configure rc=$?"; tail -5 "$LOGS/configure.log"
TARGETS="tst_attention_gpu vidgraph_attention"
[ "$BENCH" = 1 ] || [ "$SWEEP" = 1 ] && TARGETS="$TARGETS vidgraph-attention"
ninja -C "$BUILD" -j16 $TARGETS > "$LOGS/build.log" 2>&1
echo "build rc=$?"; grep -E "error|spill" "$LOGS/build.log" | head -20
ninja -C "$BUILD" -t commands vidgraph_kernels | grep -oE "arch=compute_[0-9a]+,code=[^ ]+" | sort -u

if [ -x "$BUILD/tests/tst_attention_gpu" ]; then
  start=$(date +%s)
  "$BUILD/tests/tst_attention_gpu" -o "$OUT/test.txt,txt" -o -,txt > "$LOGS/test-stdout.txt" 2>&1
  echo "tst_attention_gpu rc=$? in $(( $(date +%s) - start )) s"
  grep -E "^(FAIL|Totals|SKIP)|rel-L2|Loc:" "$OUT/test.txt" | head -60
fi
if [ "$PIECES" = 1 ]; then
  cmake -S tests/bench/pieces -B /tmp/vg-pieces -G Ninja -DCMAKE_BUILD_TYPE=Release -DVIDGRAPH_GPU=cuda \
    -DCMAKE_CUDA_ARCHITECTURES=90a -DVIDGRAPH_GUI=OFF -DVIDGRAPH_MEDIA=OFF -DVIDGRAPH_TESTS=OFF \
    -DCMAKE_PREFIX_PATH="$TORCH_PREFIX;$DEPS/usr" -DCMAKE_CXX_FLAGS="-I/tmp/vg-fmt/include" \
    > "$LOGS/pieces-configure.log" 2>&1 && ninja -C /tmp/vg-pieces -j16 vsa_pieces > "$LOGS/pieces-build.log" 2>&1
  echo "pieces build rc=$?"
  { /tmp/vg-pieces/vsa_pieces 31 22 40 0.875 20; /tmp/vg-pieces/vsa_pieces 31 44 80 0.875 5; } > "$OUT/pieces.json" 2>&1
  cat "$OUT/pieces.json"
fi
TOOL="$BUILD/bin/vidgraph-attention"
export VIDGRAPH_PLUGIN_PATH="$BUILD/lib/vidgraph/plugins"
if [ "$SWEEP" = 1 ] && [ -x "$TOOL" ]; then
  mkdir -p "$LOGS/sweep"
  for cfg in $SWEEP_ROWS; do
    VIDGRAPH_ATTENTION_TUNING=$cfg "$TOOL" bench --device cuda --grid 31,22,40 --method full \
      --method vsa --sparsity 0.875 --warmup 2 --repeats 10 --out "$LOGS/sweep/$cfg.json" \
      > "$LOGS/sweep/$cfg.log" 2>&1
    echo "tuning $cfg rc=$?"
    echo "tuning $cfg" >> "$OUT/summary.txt"
    python3 tests/bench/summarize.py "$LOGS/sweep/$cfg.json" --short | tee -a "$OUT/summary.txt"
  done
  # The main benchmark runs with the sweep's winner (least full + vsa forward+backward time).
  BEST=$(python3 - "$LOGS/sweep" <<'PY'
import glob, json, os, sys
best = None
for f in glob.glob(os.path.join(sys.argv[1], "*.json")):
    ms = [m["fwd_bwd_ms"] for s in json.load(open(f))["shapes"] for m in s["methods"] if "fwd_bwd_ms" in m]
    if len(ms) == 2 and (best is None or sum(ms) < best[0]):
        best = (sum(ms), os.path.basename(f)[:-5])
print(best[1] if best else "")
PY
)
  echo "sweep winner: $BEST" | tee -a "$OUT/summary.txt"
  [ -n "$BEST" ] && export VIDGRAPH_ATTENTION_TUNING=$BEST
fi
if [ "$BENCH" = 1 ] && [ -x "$TOOL" ]; then
  "$TOOL" bench --device cuda $BENCH_ARGS --out "$OUT/bench.json" > "$LOGS/bench-stdout.txt" 2>&1
  echo "bench rc=$?"
  python3 tests/bench/summarize.py "$OUT/bench.json" | tee -a "$OUT/summary.txt"
fi
tar -czf "$OUT/logs.tar.gz" -C "$LOGS" .
