#!/usr/bin/env bash
# The kernels against their peers, one device call (issue: kernels ahead of every peer).
# Vidgraph: `vidgraph-attention bench` (the whole call: tiling, selection, fine kernel, gate, untile)
# at equal work with the peers (32,24,40 = 480 full tiles), the Wan2.2-5B shape (31,22,40), the A14B
# shape (21,45,80) and the long grid (31,44,80). Peers: tests/bench/peers.py at 480 full tiles
# (cuDNN SDPA, FlexAttention, FastVideo's Triton VSA when carried in .peers/). Then one ncu pass
# over the vsa call at equal work (its kernels' speed of light, occupancy and stall reasons).
# Usage: tests/bench/kernels_run.sh BUILD_DIR   → $OUT/bench-*.json, $OUT/peers.json, $OUT/ncu-vsa.txt
set -uo pipefail
BUILD=${1:?usage: tests/bench/kernels_run.sh BUILD_DIR}
OUT=${OUT:-$PWD/device-out}
TOOL="$BUILD/bin/vidgraph-attention"
here=$(cd "$(dirname "$0")" && pwd)
PEERS_DIR=${PEERS_DIR:-$here/../../.peers}
rc=0
bench() {  # name, then bench arguments
  local name=$1; shift
  timeout 400 "$TOOL" bench --device cuda --warmup 2 --repeats 20 --out "$OUT/bench-$name.json" "$@" \
    > "$OUT/bench-$name.log" 2>&1 || { echo "bench $name failed"; tail -3 "$OUT/bench-$name.log"; rc=1; }
  [ -s "$OUT/bench-$name.json" ] && python3 "$here/summarize.py" "$OUT/bench-$name.json"
}
bench equal --grid 32,24,40 --sparsity 0.8 --sparsity 0.875 --sparsity 0.9
bench wan --grid 31,22,40 --sparsity 0.875
bench a14b --grid 21,45,80 --heads 40 --sparsity 0.875
bench long --grid 31,44,80 --method full --method vsa --method sla_star --sparsity 0.875
PYTHONUNBUFFERED=1 timeout 400 python3 "$here/peers.py" --tiles 480 --peers-dir "$PEERS_DIR" \
  --out "$OUT/peers.json" > "$OUT/peers.log" 2>&1 || { echo "peers failed"; tail -5 "$OUT/peers.log"; rc=1; }
grep -E '^\{"sparsity' "$OUT/peers.log"
python3 -c "import json;d=json.load(open('$OUT/peers.json'));print('sdpa_cudnn', d['sdpa_cudnn'])" 2>/dev/null
if command -v ncu > /dev/null; then
  timeout 300 ncu --kernel-name regex:'flash|vsa|bwd|fwd' --launch-count 12 --section SpeedOfLight \
    --section Occupancy --section LaunchStats --section WarpStateStats \
    "$TOOL" bench --device cuda --grid 32,24,40 --method vsa --sparsity 0.875 --warmup 0 --repeats 1 \
    --out "$OUT/ncu-bench.json" > "$OUT/ncu-vsa.txt" 2>&1 || echo "ncu rc=$?"
  grep -E '^  [a-z_].*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy' \
    "$OUT/ncu-vsa.txt" | head -60
fi
exit $rc
