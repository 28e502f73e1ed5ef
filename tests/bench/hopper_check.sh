#!/usr/bin/env bash
# Device check of the Hopper (sm_90a, wgmma) attention kernels, for the lent H200.
# Usage: tests/bench/hopper_check.sh BUILD_DIR
#   BUILD_DIR: a build configured with -DVIDGRAPH_GPU=cuda and 90a in CMAKE_CUDA_ARCHITECTURES,
#   with the targets vidgraph-hopper-check (and, for the second step, tst_attention_gpu) built.
# Steps (~1 minute of device time):
#  1. BUILD_DIR/bin/vidgraph-hopper-check: the wgmma tile layer alone, the wgmma forward and the
#     wgmma backward against the mma.sync kernels bit for bit (19 cases each), and both timed at
#     the Wan2.2-5B shape (dense, sparsity 0.875) → $OUT/hopper.json (stderr → hopper-log.txt).
#  2. If BUILD_DIR/tests/tst_attention_gpu exists: the GPU suite against the CPU reference with the
#     mma.sync kernels only (VIDGRAPH_ATTENTION_TUNING=1,1,0,1,1,1,0,0; the suite's plain run uses
#     the H200 row, wgmma both ways) → $OUT/test-mma-sync.txt.
# Exits non-zero when either step fails.
set -uo pipefail
BUILD=${1:?usage: tests/bench/hopper_check.sh BUILD_DIR}
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
CHECK="$BUILD/bin/vidgraph-hopper-check"
if [ ! -x "$CHECK" ]; then
  echo "hopper_check: $CHECK is missing; build the target vidgraph-hopper-check in $BUILD." >&2
  exit 2
fi

rc=0
timeout 300 "$CHECK" > "$OUT/hopper.json" 2> "$OUT/hopper-log.txt"
check_rc=$?
grep -E "^(tile layer|FAIL|timing|occupancy)" "$OUT/hopper-log.txt"
echo "vidgraph-hopper-check rc=$check_rc: $(grep -c '^PASS' "$OUT/hopper-log.txt") cases" \
  "passed, $(grep -c '^FAIL' "$OUT/hopper-log.txt") failed ($OUT/hopper.json)"
if [ $check_rc -ne 0 ]; then
  echo "hopper_check: FAILED (rc=$check_rc); last lines of the log:" >&2
  tail -n 20 "$OUT/hopper-log.txt" >&2
  rc=1
fi

SUITE="$BUILD/tests/tst_attention_gpu"
if [ -x "$SUITE" ]; then
  VIDGRAPH_ATTENTION_TUNING=1,1,0,1,1,1,0,0 timeout 600 "$SUITE" > "$OUT/test-mma-sync.txt" 2>&1
  suite_rc=$?
  echo "tst_attention_gpu (mma.sync kernels) rc=$suite_rc: $(grep -E '^Totals' "$OUT/test-mma-sync.txt")"
  [ $suite_rc -ne 0 ] && { grep -E "^FAIL|Loc:" "$OUT/test-mma-sync.txt" | head -20 >&2; rc=1; }
else
  echo "hopper_check: $SUITE not built; skipped the GPU suite with the mma.sync kernels."
fi
exit $rc
