#!/usr/bin/env bash
# The shipped few-step workflow through vidgraph-run at the real 5B sizes on a CUDA GPU: what a user
# runs, not a bench of pieces. Prints data, never pass/fail; exits non-zero when a step fails.
#   tests/bench/fast_graph_run.sh BUILD_DIR
# Needs in BUILD_DIR: vidgraph-run vidgraph-make-random-model vidgraph_demo_model vidgraph_attention.
# resources/workflows/wan22-ti2v-5b-fast.vgflow (3 DMD steps, no guidance, vsa@0.8, 121x704x1280)
# runs on random weights written to $RANDOM_DIR (DiT 5B, VAE 2.2, umT5-XXL at its 24 layers, the demo
# tokenizer). A build without media (the device lacks FFmpeg and OpenCV) has no Preview/Export
# nodes, so the graph runs to its VAE Decode (--target decode) and the MP4 encode of the frames is
# timed on a CPU separately. One process sweeps two prompts: the second run is what a user with the
# model loaded waits (text encode, 3 steps, decode). Then the same with offload_blocks=30.
# Writes under $OUT: fast.json and fast.txt (graph_bench.py report), fast.log (stderr).
set -euo pipefail

BUILD=$(cd "${1:?usage: fast_graph_run.sh BUILD_DIR}" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/fast-graph-out}
RANDOM_DIR=${RANDOM_DIR:-/tmp/vg-random-5b}
WORK=$(mktemp -d /tmp/fast-graph.XXXXXX)
mkdir -p "$OUT"
LOG="$OUT/fast.log"
: > "$LOG"
RUN="$BUILD/bin/vidgraph-run"
GEN="$BUILD/bin/vidgraph-make-random-model"
DEMO="$BUILD/share/vidgraph/models/wan22-tiny"
FLOW="$ROOT/resources/workflows/wan22-ti2v-5b-fast.vgflow"
BENCH="python3 $ROOT/tests/bench/graph/graph_bench.py"
fail() { echo "fast_graph_run.sh: FAILED: $*" >&2; tail -n 30 "$LOG" >&2 || true; exit 1; }
for f in "$RUN" "$GEN" "$DEMO/spiece.model" "$FLOW"; do [ -e "$f" ] || fail "missing $f"; done
cleanup() { [ "${KEEP_RANDOM:-0}" = 1 ] || rm -rf "$RANDOM_DIR"; rm -rf "$WORK"; }
trap cleanup EXIT

# Without media the Preview and Export node types do not exist: keep the graph up to its decode.
python3 - "$FLOW" "$WORK/fast.vgflow" <<'PY'
import json, sys
flow = json.load(open(sys.argv[1]))
flow["nodes"] = [n for n in flow["nodes"] if n["type"] not in ("PreviewVideo", "ExportVideo")]
json.dump(flow, open(sys.argv[2], "w"), indent=1)
PY

if [ ! -f "$RANDOM_DIR/.complete" ]; then
  t0=$(date +%s.%N)
  timeout 400 "$GEN" "$RANDOM_DIR" --device cuda --text-layers 24 --tokenizer "$DEMO/spiece.model" \
    2>> "$LOG" || fail "vidgraph-make-random-model"
  touch "$RANDOM_DIR/.complete"
  echo "random 5B written in $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s: $(du -sh "$RANDOM_DIR" | cut -f1)"
fi

SETS=(--set model.device=cuda --set model.dtype=bfloat16 --set "model.model_path=$RANDOM_DIR"
      --target decode --cache-budget 64
      --sweep "prompt.positive=a red fox runs through fresh snow,a sailing boat on a calm blue lake")
SPECS=()
for variant in resident offload30; do
  extra=()
  [ "$variant" = offload30 ] && extra=(--set model.offload_blocks=30)
  echo "== fast workflow, $variant"
  t0=$(date +%s.%N)
  $BENCH run "$WORK/$variant.jsonl" "$LOG" -- timeout 240 "$RUN" run "$WORK/fast.vgflow" --json-events \
    --output-dir "$WORK/out-$variant" "${SETS[@]}" "${extra[@]}" || fail "fast workflow ($variant)"
  echo "whole command: $(python3 -c "print(round($(date +%s.%N) - $t0, 2))") s"
  SPECS+=("$variant=$WORK/$variant.jsonl:first,second")
done
cat "$WORK"/*.jsonl > "$OUT/events.jsonl"
$BENCH report "$OUT/fast.json" "${SPECS[@]}" | tee "$OUT/fast.txt" || fail "a run did not succeed"
