#!/usr/bin/env bash
# Times the VAE 2.2 decode of 31 latent frames to 121x704x1280 (bf16, untiled) with cuDNN's
# algorithm search on, beside models_run.sh's plain run, with vidgraph-model-bench already built in
# BUILD_DIR. The DiT part is cut to one dense forward (the bench always times it first).
# Usage: tests/bench/vae_run.sh BUILD_DIR        (from the repository root on the device)
# Writes $OUT/vae-cudnn-benchmark.json and its log; ~1 min of device time.
set -uo pipefail
BUILD=${1:?usage: tests/bench/vae_run.sh BUILD_DIR}
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
BIN="$BUILD/bin/vidgraph-model-bench"
[ -x "$BIN" ] || { echo "vae_run.sh: $BIN is missing: build it first" >&2; exit 2; }
if [ -d /tmp/vg-deps/usr/lib/x86_64-linux-gnu ]; then
  export LD_LIBRARY_PATH="/tmp/vg-deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export VIDGRAPH_PLUGIN_PATH="$BUILD/lib/vidgraph/plugins"
"$BIN" --device cuda --config 5b --dtype bf16 --grid 31,22,40 --methods full --warmup 0 --repeats 1 \
  --vae-warmup 1 --vae-repeats 3 --vae-dtypes bf16 --cudnn-benchmark \
  --out "$OUT/vae-cudnn-benchmark.json" > /dev/null 2> "$OUT/vae-cudnn-benchmark.log"
rc=$?
python3 - "$OUT/vae-cudnn-benchmark.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["vae"]["decode"]["bf16"]["untiled"]
print(f"VAE decode bf16, cuDNN benchmark: median {d['median_ms'] / 1000:.2f} s "
      f"(min {d['min_ms'] / 1000:.2f}, max {d['max_ms'] / 1000:.2f}), peak {d.get('peak_gib', 0):.2f} GiB")
PY
exit $rc
