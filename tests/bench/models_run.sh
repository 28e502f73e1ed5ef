#!/usr/bin/env bash
# Times the Wan2.2-TI2V-5B DiT forward (full, vsa, sla_star at 0.875, and LibTorch's dense SDPA as a
# peer; then each again with the blocks' elementwise steps on ATen ops, the fused kernels' peer)
# with its breakdown, then each method with the linears kept as fp8 codes (keep_fp8), and the
# VAE 2.2 decode (bf16, untiled and tiled; fp32 figures are in tests/bench/results/NOTES.md), at
# 704x1280x121 on the GPU, with vidgraph-model-bench already built in
# BUILD_DIR (ninja target vidgraph-model-bench, which builds the vidgraph_attention plugin too).
# Usage: tests/bench/models_run.sh BUILD_DIR        (from the repository root on the device)
# Writes $OUT/models.json and $OUT/models.log (default OUT: ./device-out) and prints a summary
# table; exits non-zero when the program fails or any measurement failed.
# Device time: ~1.5 min for the DiT part (4 methods x 6 forwards of ~1-2 s, the breakdown, 3 methods
# with fp8 weights), then VAE decodes of ~5-10 s each (3 untiled, 3 tiled); --time-limit-s skips VAE variants that would
# start after 120 s, so the whole run stays under ~2.5 min.
set -uo pipefail
BUILD=${1:?usage: tests/bench/models_run.sh BUILD_DIR}
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
BIN="$BUILD/bin/vidgraph-model-bench"
if [ ! -x "$BIN" ]; then
  echo "models_run.sh: $BIN is missing: build it first (ninja -C $BUILD vidgraph-model-bench)" >&2
  exit 2
fi
# The Debian libraries that h200_all.sh unpacks (spdlog, fmt, ...), when present.
if [ -d /tmp/vg-deps/usr/lib/x86_64-linux-gnu ]; then
  export LD_LIBRARY_PATH="/tmp/vg-deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export VIDGRAPH_PLUGIN_PATH="$BUILD/lib/vidgraph/plugins"
export VIDGRAPH_COMMIT=${VIDGRAPH_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}

start=$(date +%s)
"$BIN" --device cuda --config 5b --dtype bf16 --grid 31,22,40 --methods full,vsa,sla_star --sparsity 0.875 \
  --warmup 1 --repeats 5 --fp8-weights --vae-warmup 1 --vae-repeats 2 --vae-dtypes bf16 --vae-tiled --time-limit-s 120 \
  --out "$OUT/models.json" > /dev/null 2> "$OUT/models.log"
rc=$?
echo "vidgraph-model-bench rc=$rc in $(( $(date +%s) - start )) s"
if [ ! -s "$OUT/models.json" ]; then
  echo "models_run.sh: no JSON was written; the last log lines:" >&2
  tail -20 "$OUT/models.log" >&2
  exit 1
fi
python3 - "$OUT/models.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
env = r["environment"]
print(f"{env['device_name']} torch {env['torch']} commit {env['commit']} dtype {env['dtype']}")
dit = r["dit"]
print(f"DiT {dit['model']['num_layers']} layers, grid {dit['inputs']['grid']} = {dit['inputs']['tokens']} tokens, "
      f"weights {dit['model']['weights_gib']:.2f} GiB")
per = dit["breakdown"]["per_method"]
print(f"{'method':16} {'median ms':>10} {'min':>8} {'max':>8} {'peak GiB':>9} | {'attn ms':>8} {'GEMM ms':>8} {'other ms':>8}")
for name, m in dit["methods"].items():
    if "error" in m:
        print(f"{name:16} ERROR {m['error'][:100]}")
        continue
    b = per.get(name, {})
    print(f"{name:16} {m['median_ms']:10.1f} {m['min_ms']:8.1f} {m['max_ms']:8.1f} {m.get('peak_gib', 0):9.2f} | "
          f"{b.get('attention_ms', float('nan')):8.1f} {b.get('linear_ms', float('nan')):8.1f} "
          f"{b.get('other_ms', float('nan')):8.1f}")
aten = dit.get("aten_elementwise")
if aten:
    print("the same forwards with the blocks' elementwise steps on ATen ops (the fused kernels' peer):")
    for name, m in aten.items():
        fused = dit["methods"].get(name, {})
        if "median_ms" in m and "median_ms" in fused:
            print(f"  {name:14} {m['median_ms']:10.1f} ms, peak {m.get('peak_gib', 0):.2f} GiB; fused "
                  f"{fused['median_ms']:.1f} ms = {m['median_ms'] / fused['median_ms']:.3f}x faster")
        else:
            print(f"  {name:14} ERROR {m.get('error', fused.get('error', ''))[:100]}")
fp8 = dit.get("fp8_weights")
if fp8:
    print(f"linears kept as fp8 (keep_fp8): weights {fp8['weights_gib']:.2f} GiB")
    for name in [k for k in fp8 if isinstance(fp8[k], dict)]:
        m = fp8[name]
        print(f"  {name:14} " + (f"{m['median_ms']:10.1f} ms, peak {m.get('peak_gib', 0):.2f} GiB" if "median_ms" in m
                                  else f"ERROR {m.get('error', '')[:100]}"))
lin = dit["breakdown"]["linear"]
if "tflops" in lin:
    print(f"GEMMs of all blocks: {lin['median_ms']:.1f} ms, {lin['tflops']:.0f} TFLOP/s")
for dtype, d in r.get("vae", {}).get("decode", {}).items():
    for variant in ("untiled", "tiled"):
        v = d.get(variant)
        if v is None:
            continue
        if "median_ms" in v:
            print(f"VAE decode {dtype} {variant}: median {v['median_ms'] / 1000:.2f} s "
                  f"(min {v['min_ms'] / 1000:.2f}, max {v['max_ms'] / 1000:.2f}), peak {v.get('peak_gib', 0):.2f} GiB, "
                  f"video {v['video']}")
        else:
            print(f"VAE decode {dtype} {variant}: {v.get('error') or v.get('skipped')}")
print(f"elapsed {r.get('elapsed_s', 0):.0f} s")
PY
prc=$?
if [ "$rc" != 0 ] || [ "$prc" != 0 ]; then
  echo "models_run.sh: FAILED (program rc=$rc, summary rc=$prc); see $OUT/models.log" >&2
  tail -20 "$OUT/models.log" >&2
  exit 1
fi
