#!/usr/bin/env bash
# Times one Wan2.2-TI2V-5B training step (forward + backward + AdamW) per attention method (full,
# vsa, sla_star at 0.875) on the GPU at 704x1280x121 (grid 31,22,40), bf16 weights, LoRA rank 32
# with gradient checkpointing, with vidgraph-train-bench already built in BUILD_DIR (ninja target
# vidgraph-train-bench, which builds the vidgraph_attention plugin too).
# Usage: tests/bench/train_run.sh BUILD_DIR        (from the repository root on the device)
# Env: MODE (lora, full or dmd), CRITIC_UPDATES (dmd: 5), TEACHER_METHOD (dmd: full), GRID (31,22,40), REPEATS (3), METHODS (full,vsa,sla_star), NPROC (unset: one
# process; N: N ranks started by torchrun, one GPU each, the step sequence-parallel over them over
# NCCL; NPROC=1 is one GPU through the same collectives).
# Writes $OUT/train.json and $OUT/train.log (default OUT: ./device-out); prints the JSON's methods.
set -uo pipefail
BUILD=${1:?usage: tests/bench/train_run.sh BUILD_DIR}
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
BIN="$BUILD/bin/vidgraph-train-bench"
[ -x "$BIN" ] || { echo "train_run.sh: $BIN is missing: build it first" >&2; exit 2; }
if [ -d /tmp/vg-deps/usr/lib/x86_64-linux-gnu ]; then
  export LD_LIBRARY_PATH="/tmp/vg-deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export VIDGRAPH_PLUGIN_PATH="$BUILD/lib/vidgraph/plugins"
start=$(date +%s)
LAUNCH=()
if [ -n "${NPROC:-}" ]; then
  LAUNCH=(python3 -m torch.distributed.run --standalone --nproc-per-node "$NPROC" --no-python)
fi
"${LAUNCH[@]}" "$BIN" --config 5b --device cuda --methods "${METHODS:-full,vsa,sla_star}" --dtype bf16 --grid "${GRID:-31,22,40}" --mode "${MODE:-lora}" --critic-updates "${CRITIC_UPDATES:-5}" --teacher-method "${TEACHER_METHOD:-full}" --rank 32 \
  --checkpointing --sparsity 0.875 --warmup 1 --repeats "${REPEATS:-3}" --out "$OUT/train.json" \
  > /dev/null 2> "$OUT/train.log"
rc=$?
echo "vidgraph-train-bench rc=$rc in $(( $(date +%s) - start )) s"
[ -s "$OUT/train.json" ] && python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(json.dumps(r["methods"], indent=1))' "$OUT/train.json"
[ "$rc" = 0 ] || tail -20 "$OUT/train.log" >&2
exit $rc
