#!/usr/bin/env bash
# Benchmark of the headless sampler graph on a CUDA GPU, with the peak GPU memory of each stage.
# Prints data, never pass/fail; exits non-zero when a step fails.
#   tests/bench/graph_run.sh BUILD_DIR
# Needs in BUILD_DIR (ninja targets): vidgraph-run vidgraph-make-random-model vidgraph_demo_model
# vidgraph_attention. Writes under $OUT (default /tmp/graph-bench-out): graph.json (per run: node
# times, sampler per-step times, peak GPU memory per stage), graph.txt (the table), events.jsonl
# (every stamped event), graph.log (stderr of the tools).
#   (a) the sampler-only workflow on the tiny demo model, bf16, 4 steps;
#   (b) random weights at the full Wan2.2-TI2V-5B sizes written to $RANDOM_DIR (default
#       /tmp/vg-random-5b, ~21 GB, removed at the end unless KEEP_RANDOM=1), then the graph at
#       704x1280, 121 frames, 3 steps, CFG on (guidance 5, batched), attention full, vsa and
#       sla_star at sparsity 0.875 — in one process with --sweep when vidgraph-run has it (the
#       model loads once), else one invocation per method.
# Env: TEXT_LAYERS (umT5 layers of the random encoder, default 24), STEPS (default 3), TINY_ONLY=1
# (part (a) only: a minute of device time instead of several).
set -euo pipefail

BUILD=$(cd "${1:?usage: graph_run.sh BUILD_DIR}" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/graph-bench-out}
RANDOM_DIR=${RANDOM_DIR:-/tmp/vg-random-5b}
TEXT_LAYERS=${TEXT_LAYERS:-24}
STEPS=${STEPS:-3}
WORK=$(mktemp -d /tmp/graph-bench.XXXXXX)
mkdir -p "$OUT"
LOG="$OUT/graph.log"
: > "$LOG"
RUN="$BUILD/bin/vidgraph-run"
GEN="$BUILD/bin/vidgraph-make-random-model"
DEMO="$BUILD/share/vidgraph/models/wan22-tiny"
FLOW="$ROOT/tests/bench/graph/sampler-t2v.vgflow"
BENCH="python3 $ROOT/tests/bench/graph/graph_bench.py"

fail() { echo "graph_run.sh: FAILED: $*" >&2; tail -n 30 "$LOG" >&2 || true; exit 1; }
for f in "$RUN" "$GEN" "$DEMO/spiece.model" "$FLOW"; do
  [ -e "$f" ] || fail "missing $f (build the targets vidgraph-run vidgraph-make-random-model vidgraph_demo_model vidgraph_attention)"
done
cleanup() { [ "${KEEP_RANDOM:-0}" = 1 ] || rm -rf "$RANDOM_DIR"; rm -rf "$WORK"; }
trap cleanup EXIT

GPU_SETS=(--set model.device=cuda --set model.dtype=bfloat16)
SPECS=()

echo "== (a) tiny demo model on cuda, bf16, 4 steps"
$BENCH run "$WORK/tiny.jsonl" "$LOG" -- timeout 300 "$RUN" run "$FLOW" --json-events \
  --output-dir "$WORK/tiny" "${GPU_SETS[@]}" --set "model.model_path=$DEMO" \
  --set sampler.steps=4 --set sampler.attention=vsa || fail "tiny-model run"
SPECS+=("tiny=$WORK/tiny.jsonl:vsa")

WRITE_S=0
if [ "${TINY_ONLY:-0}" != 1 ]; then
echo "== (b) random full-5B weights -> $RANDOM_DIR (text layers: $TEXT_LAYERS)"
t0=$(date +%s.%N)
timeout 400 "$GEN" "$RANDOM_DIR" --device cuda --text-layers "$TEXT_LAYERS" \
  --tokenizer "$DEMO/spiece.model" 2>> "$LOG" || fail "vidgraph-make-random-model"
WRITE_S=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
du -sh "$RANDOM_DIR" | tee -a "$LOG"
echo "written in ${WRITE_S} s"

BIG_SETS=("${GPU_SETS[@]}" --set "model.model_path=$RANDOM_DIR" --set sampler.width=1280
          --set sampler.height=704 --set sampler.frames=121 --set "sampler.steps=$STEPS"
          --set sampler.guidance=5 --set sampler.batch_cfg=true --set sampler.sparsity=0.875)
METHODS=(full vsa sla_star)
# The cache must hold the ~22 GB of models between the sweep's runs (default budget: 8 GiB).
BUDGET=()
if "$RUN" run --help 2>&1 | grep -q -- '--cache-budget'; then BUDGET=(--cache-budget 64); fi
if "$RUN" run --help 2>&1 | grep -q -- '--sweep'; then
  echo "== 5B graph, one process: --sweep sampler.attention=full,vsa,sla_star"
  $BENCH run "$WORK/5b.jsonl" "$LOG" -- timeout 500 "$RUN" run "$FLOW" --json-events \
    --output-dir "$WORK/5b" "${BIG_SETS[@]}" --sweep sampler.attention=full,vsa,sla_star \
    "${BUDGET[@]}" || fail "5B sweep run"
  SPECS+=("5b=$WORK/5b.jsonl:full,vsa,sla_star")
else
  for m in "${METHODS[@]}"; do
    echo "== 5B graph, attention $m (no --sweep in vidgraph-run: the model loads each time)"
    $BENCH run "$WORK/5b-$m.jsonl" "$LOG" -- timeout 300 "$RUN" run "$FLOW" --json-events \
      --output-dir "$WORK/5b-$m" "${BIG_SETS[@]}" --set "sampler.attention=$m" \
      || fail "5B run, attention $m"
    SPECS+=("5b=$WORK/5b-$m.jsonl:$m")
  done
fi
fi  # TINY_ONLY

cat "$WORK"/*.jsonl > "$OUT/events.jsonl"
$BENCH report "$OUT/graph.json" "${SPECS[@]}" | tee "$OUT/graph.txt" || fail "a run did not succeed"
python3 - "$OUT/graph.json" "$WRITE_S" "$TEXT_LAYERS" "$STEPS" <<'PY'
import json, sys
path = sys.argv[1]
doc = json.load(open(path))
doc["random_model"] = {"write_seconds": float(sys.argv[2]), "text_layers": int(sys.argv[3]),
                       "dit": "WanConfig::ti2v_5b (bf16)", "vae": "WanVaeConfig::wan22 (bf16 file, fp32 run)"}
doc["settings"] = {"size": "704x1280", "frames": 121, "steps": int(sys.argv[4]), "guidance": 5,
                   "batch_cfg": True, "sparsity": 0.875, "tiny": "demo model, bf16, 4 steps, vsa"}
json.dump(doc, open(path, "w"), indent=2)
PY
echo "graph_run.sh: done; results in $OUT"
