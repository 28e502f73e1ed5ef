#!/usr/bin/env bash
# Trains the demo model on the GPU with vidgraph-train-demo (its default schedule unless TRAIN_ARGS
# says otherwise) from the shipped model's tokenizer (resources/demo/model) and IMAGE, the sample image as `vidgraph-train-demo
# --fit-image` writes it (the GPU build reads no pictures). The model folder goes to MODEL_DIR
# (default /tmp/demo-model); its training.json and the log go to $OUT.
# Usage: IMAGE=landscape.safetensors tests/bench/train_demo_run.sh BUILD_DIR   (needs target vidgraph-train-demo)
set -uo pipefail
BUILD=${1:?usage: IMAGE=FILE tests/bench/train_demo_run.sh BUILD_DIR}
OUT=${OUT:-$PWD/device-out}
MODEL_DIR=${MODEL_DIR:-/tmp/demo-model}
mkdir -p "$OUT"
BIN="$BUILD/bin/vidgraph-train-demo"
# The shipped tokenizer, not the build's: sentencepiece versions train different ones from the corpus.
TOKENIZER="$(cd "$(dirname "$0")/../.." && pwd)/resources/demo/model/spiece.model"
[ -x "$BIN" ] || { echo "train_demo_run.sh: $BIN is missing: build it first" >&2; exit 2; }
[ -f "${IMAGE:-}" ] || { echo "train_demo_run.sh: IMAGE (the --fit-image file) is missing" >&2; exit 2; }
if [ -d /tmp/vg-deps/usr/lib/x86_64-linux-gnu ]; then
  export LD_LIBRARY_PATH="/tmp/vg-deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export VIDGRAPH_PLUGIN_PATH="${VIDGRAPH_PLUGIN_PATH:-$BUILD/lib/vidgraph/plugins}"
rm -rf "$MODEL_DIR"
start=$(date +%s)
# shellcheck disable=SC2086
timeout "${LIMIT_S:-480}" "$BIN" "$MODEL_DIR" --tokenizer "$TOKENIZER" --image "$IMAGE" --device cuda \
  ${TRAIN_ARGS:-} > "$OUT/train_demo.log" 2>&1
rc=$?
echo "vidgraph-train-demo rc=$rc in $(( $(date +%s) - start )) s"
grep -E "trained in|Using the VAE|Wrote" "$OUT/train_demo.log" | tail -4
[ -f "$MODEL_DIR/training.json" ] && cp "$MODEL_DIR/training.json" "$OUT/" && cat "$OUT/training.json"
[ "$rc" = 0 ] || tail -20 "$OUT/train_demo.log" >&2
exit $rc
