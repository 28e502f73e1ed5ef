#!/usr/bin/env bash
# The attention benchmark on the lent H200: `vidgraph-attention bench` beside dense
# SDPA in the same process. The Wan2.2-5B grid gets every method at sparsity 0.8/0.875/0.9; the long
# grid (4x the tokens) gets full, vsa and sla_star at 0.875 (a full sweep there costs ~4 device
# minutes). Warm-up 2 (1 on the long grid), median of 20.
# Usage: tests/bench/attention_run.sh BUILD_DIR   → $OUT/bench-wan.json, $OUT/bench-long.json
set -uo pipefail
BUILD=${1:?usage: tests/bench/attention_run.sh BUILD_DIR}
OUT=${OUT:-$PWD/device-out}
TOOL="$BUILD/bin/vidgraph-attention"
[ -x "$TOOL" ] || { echo "attention_run: $TOOL is missing; build vidgraph-attention." >&2; exit 2; }
here=$(dirname "$0")
rc=0
"$TOOL" bench --device cuda --grid 31,22,40 --warmup 2 --repeats 20 --out "$OUT/bench-wan.json" \
  > "$OUT/bench-wan.log" 2>&1 || rc=1
"$TOOL" bench --device cuda --grid 31,44,80 --method full --method vsa --method sla_star \
  --sparsity 0.875 --warmup 1 --repeats 20 --out "$OUT/bench-long.json" > "$OUT/bench-long.log" 2>&1 || rc=1
for f in "$OUT/bench-wan.json" "$OUT/bench-long.json"; do
  [ -s "$f" ] && python3 "$here/summarize.py" "$f"
done
[ $rc = 0 ] || { echo "attention_run: a benchmark failed; see bench-*.log" >&2; tail -5 "$OUT"/bench-*.log >&2; }
exit $rc
