#!/usr/bin/env bash
# Several GPUs on one machine (vidgraph-run --nproc): parity with one GPU and the scaling of the
# sampler at the Wan2.2-TI2V-5B shape, on latents (no media layer needed). Prints data, never
# pass/fail; exits non-zero when a run fails.
#   tests/bench/parallel_run.sh BUILD_DIR            (NS="2", "4" or "8": as many GPUs as the largest)
# Needs in BUILD_DIR: vidgraph-run vidgraph-make-random-model vidgraph_demo_model vidgraph_attention.
#   (a) the sampler-only workflow on the tiny demo model (2 heads: N = 2 only) in fp32, --nproc 1
#       and 2: the latents' rel-L2 -> $OUT/demo_parity.json (fp32: expect < 1e-5);
#   (b) random weights at the 5B sizes in $RANDOM_DIR (~21 GB; removed unless KEEP_RANDOM=1), then
#       the sampler-only workflow at 704x1280, 121 frames (27,280 tokens), STEPS steps, CFG batched,
#       bf16, for each attention of METHODS with --nproc 1 and each N of NS: per-step times
#       ($OUT/scaling.json, .txt: graph_bench.py's table) and each N's latent against one GPU's
#       ($OUT/latent_parity.jsonl; bf16, so not bit-equal).
# Env: NS (default "2"), METHODS (default "vsa full"), STEPS (default 3), OUT (/tmp/parallel-bench-out),
# RANDOM_DIR (/tmp/vg-random-5b; reused when it exists and KEEP_RANDOM=1), TEXT_LAYERS (default 24).
# A check of this script on a CPU machine: DEVICE=cpu TINY=1 (demo-sized random model, 160x96x9).
set -euo pipefail

BUILD=$(cd "${1:?usage: parallel_run.sh BUILD_DIR}" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
NS=${NS:-2}
METHODS=${METHODS:-vsa full}
STEPS=${STEPS:-3}
OUT=${OUT:-/tmp/parallel-bench-out}
RANDOM_DIR=${RANDOM_DIR:-/tmp/vg-random-5b}
TEXT_LAYERS=${TEXT_LAYERS:-24}
DEVICE=${DEVICE:-cuda}
WORK=$(mktemp -d /tmp/parallel-bench.XXXXXX)
mkdir -p "$OUT"
LOG="$OUT/parallel.log"
: > "$LOG"
RUN="$BUILD/bin/vidgraph-run"
GEN="$BUILD/bin/vidgraph-make-random-model"
DEMO="$BUILD/share/vidgraph/models/wan22-tiny"
FLOW="$ROOT/tests/bench/graph/sampler-t2v.vgflow"
BENCH="python3 $ROOT/tests/bench/graph/graph_bench.py"
DIFF="python3 $ROOT/tests/bench/parallel/latent_diff.py"

fail() { echo "parallel_run.sh: FAILED: $*" >&2; tail -n 30 "$LOG" >&2 || true; exit 1; }
for f in "$RUN" "$GEN" "$DEMO/spiece.model" "$FLOW"; do
  [ -e "$f" ] || fail "missing $f (build vidgraph-run vidgraph-make-random-model vidgraph_demo_model vidgraph_attention)"
done
cleanup() { [ "${KEEP_RANDOM:-0}" = 1 ] || rm -rf "$RANDOM_DIR"; rm -rf "$WORK"; }
trap cleanup EXIT
if command -v nvidia-smi > /dev/null; then nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader; fi

echo "== (a) demo-model parity on $DEVICE fp32: --nproc 1 vs 2"
for n in 1 2; do
  timeout 300 "$RUN" run "$FLOW" --output-dir "$WORK/demo-$n" --nproc "$n" --set "model.device=$DEVICE" \
    --set model.dtype=float32 --set "model.model_path=$DEMO" > /dev/null 2>> "$LOG" || fail "demo model, --nproc $n"
done
$DIFF "$WORK/demo-1/latent.safetensors" "$WORK/demo-2/latent.safetensors" | tee "$OUT/demo_parity.json"

DTYPE=bfloat16; SIZE=(--set sampler.width=1280 --set sampler.height=704 --set sampler.frames=121)
GEN_ARGS=(--text-layers "$TEXT_LAYERS"); SIZES="5B"
if [ "${TINY:-0}" = 1 ]; then
  GEN_ARGS=(--tiny); SIZES="demo"; SIZE=(--set sampler.width=160 --set sampler.height=96 --set sampler.frames=9)
fi
if [ "$DEVICE" = cpu ]; then DTYPE=float32; fi
echo "== (b) random weights at the $SIZES sizes -> $RANDOM_DIR"
if [ "${KEEP_RANDOM:-0}" != 1 ] || [ ! -d "$RANDOM_DIR" ]; then
  timeout 400 "$GEN" "$RANDOM_DIR" --device "$DEVICE" "${GEN_ARGS[@]}" --tokenizer "$DEMO/spiece.model" \
    2>> "$LOG" || fail "vidgraph-make-random-model"
fi
BIG_SETS=(--set "model.device=$DEVICE" --set "model.dtype=$DTYPE" --set "model.model_path=$RANDOM_DIR"
          "${SIZE[@]}" --set "sampler.steps=$STEPS" --set sampler.guidance=5 --set sampler.batch_cfg=true
          --set sampler.sparsity=0.875)
SPECS=()
: > "$OUT/latent_parity.jsonl"
for m in $METHODS; do
  for n in 1 $NS; do
    echo "== $SIZES sampler, attention $m, --nproc $n"
    $BENCH run "$WORK/$m-$n.jsonl" "$LOG" -- timeout 500 "$RUN" run "$FLOW" --json-events --nproc "$n" \
      --output-dir "$WORK/$m-$n" "${BIG_SETS[@]}" --set "sampler.attention=$m" || fail "$SIZES sampler, $m, --nproc $n"
    SPECS+=("n$n=$WORK/$m-$n.jsonl:$m")
    if [ "$n" != 1 ]; then
      echo "{\"attention\": \"$m\", \"nproc\": $n, \"vs_nproc_1\": $($DIFF "$WORK/$m-1/latent.safetensors" \
        "$WORK/$m-$n/latent.safetensors")}" | tee -a "$OUT/latent_parity.jsonl"
    fi
  done
done
$BENCH report "$OUT/scaling.json" "${SPECS[@]}" | tee "$OUT/scaling.txt" || fail "a run did not succeed"
python3 - "$OUT/scaling.json" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
one = {r["attention"]: r["sampler_step_median_s"] for r in runs if r["label"] == "n1"}
for r in runs:
    base, med = one.get(r["attention"]), r["sampler_step_median_s"]
    if base and med:
        print(f"{r['attention']:<9} {r['label']:<4} step {med:.3f} s  speed-up {base / med:.2f}x")
PY
echo "parallel_run.sh: done; results in $OUT"
