#!/usr/bin/env bash
# The 5B on a small GPU and the few-step path, in one vidgraph-model-bench run on the GPU (random
# weights, bf16, 704x1280x121 = grid 31,22,40): the DiT forward with vsa at FastWan's sparsity 0.8
# resident and with 15 and 30 of its 30 blocks streamed from pinned host memory (block swap: peak
# GPU memory and time), and the TAEHV light decode beside the Wan VAE decode. The few-step figure is
# the sum of its measured parts, 3 DiT forwards + one TAEHV decode (text encoding not included).
# Usage: tests/bench/offload_fast_run.sh BUILD_DIR (repository root on the device; vidgraph-model-bench
# built). Writes $OUT/offload_fast.json and .log (default OUT: ./device-out). Device time: ~2 min.
set -uo pipefail
BUILD=${1:?usage: tests/bench/offload_fast_run.sh BUILD_DIR}
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
if [ -d /tmp/vg-deps/usr/lib/x86_64-linux-gnu ]; then
  export LD_LIBRARY_PATH="/tmp/vg-deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export VIDGRAPH_PLUGIN_PATH="$BUILD/lib/vidgraph/plugins"
"$BUILD/bin/vidgraph-model-bench" --device cuda --config 5b --dtype bf16 --grid 31,22,40 --methods vsa \
  --sparsity 0.8 --warmup 1 --repeats 3 --offload-blocks 0,15,30 --vae-warmup 0 --vae-repeats 1 \
  --vae-dtypes bf16 --taehv --out "$OUT/offload_fast.json" > /dev/null 2> "$OUT/offload_fast.log"
rc=$?
python3 - "$OUT/offload_fast.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
dit = j["dit"]
vsa = dit["methods"]["vsa"]
print(f"DiT vsa@0.8 resident: median {vsa.get('median_ms')} ms, peak {vsa.get('peak_gib')} GiB, "
      f"weights {dit['model']['weights_gib']:.2f} GiB")
for n, r in dit.get("block_swap", {}).items():
    print(f"block swap {n}/30 offloaded: median {r.get('median_ms')} ms, peak {r.get('peak_gib')} GiB {r.get('error', '')}")
vae = j.get("vae", {}).get("decode", {}).get("bf16", {}).get("untiled", {})
print(f"Wan VAE bf16 untiled: median {vae.get('median_ms')} ms, peak {vae.get('peak_gib')} GiB")
best = None
for chunk, t in j.get("taehv", {}).get("chunks", {}).items():
    print(f"TAEHV {chunk} latent frames/chunk: median {t.get('median_ms')} ms, peak {t.get('peak_gib')} GiB")
    if t.get("median_ms") is not None and (best is None or t["median_ms"] < best):
        best = t["median_ms"]
if vsa.get("median_ms") is not None and best is not None:
    print(f"few-step sum of parts: 3 x {vsa['median_ms']:.1f} + {best:.1f} = {3 * vsa['median_ms'] + best:.1f} ms")
PY
exit $rc
