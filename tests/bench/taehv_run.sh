#!/usr/bin/env bash
# Times the Wan VAE 2.2 decode (bf16, untiled) against the TAEHV light decoder (fp16, 4 latent
# frames per chunk and all at once) on the same 704x1280x121 latent on the GPU, random weights, with
# vidgraph-model-bench built in BUILD_DIR. Usage: tests/bench/taehv_run.sh BUILD_DIR (repository
# root on the device). Writes $OUT/taehv.json and $OUT/taehv.log (default OUT: ./device-out) and
# prints the timings. Device time: ~1.5 min (a few DiT forwards first: the program always runs them).
set -uo pipefail
BUILD=${1:?usage: tests/bench/taehv_run.sh BUILD_DIR}
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
if [ -d /tmp/vg-deps/usr/lib/x86_64-linux-gnu ]; then
  export LD_LIBRARY_PATH="/tmp/vg-deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export VIDGRAPH_PLUGIN_PATH="$BUILD/lib/vidgraph/plugins"
"$BUILD/bin/vidgraph-model-bench" --device cuda --config 5b --dtype bf16 --methods full --warmup 1 --repeats 2 \
  --vae-warmup 1 --vae-repeats 2 --vae-dtypes bf16 --taehv --out "$OUT/taehv.json" > /dev/null 2> "$OUT/taehv.log"
rc=$?
python3 - "$OUT/taehv.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
v = j["vae"]["decode"]["bf16"]["untiled"]
print(f"Wan VAE bf16 untiled: median {v.get('median_ms')} ms, peak {v.get('peak_gib')} GiB, video {v.get('video')}")
for chunk, t in j["taehv"]["chunks"].items():
    print(f"TAEHV fp16, {chunk} latent frames/chunk: median {t.get('median_ms')} ms, peak {t.get('peak_gib')} GiB, video {t.get('video')}, {t.get('error', '')}")
PY
exit $rc
