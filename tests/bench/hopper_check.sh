#!/usr/bin/env bash
# Device check of the Hopper (sm_90a, wgmma) attention forward, for the lent H200.
# Usage: tests/bench/hopper_check.sh BUILD_DIR
#   BUILD_DIR: a build configured with -DVIDGRAPH_GPU=cuda and 90a in CMAKE_CUDA_ARCHITECTURES,
#   with the targets vidgraph-hopper-check (and, for the second step, tst_attention_gpu) built.
# Steps (~1-2 minutes of device time):
#  1. BUILD_DIR/bin/vidgraph-hopper-check: the wgmma tile layer alone, every wgmma forward variant
#     (serial, overlap2, overlap3, dense2wg) against the mma.sync forward (18 cases), timings of
#     mma.sync and every variant at the Wan2.2-5B shape (dense, sparsity 0.875) → $OUT/hopper.json
#     (stderr → $OUT/hopper-log.txt).
#  2. The same with the TMA variants (overlap3_tma, dense2wg_tma; --tma) and then the
#     producer-warp variants (overlap3_ws, dense2wg_ws; --ws) and the ping-pong one (dense2wg_pp;
#     --pp, dense cases), each in its own process so that a fault or hang cannot take other
#     results with it → $OUT/hopper-{tma,ws,pp}.json (stderr of all three appended to
#     $OUT/hopper-sets-log.txt).
#  3. If BUILD_DIR/tests/tst_attention_gpu exists: the GPU suite against the CPU reference with the
#     wgmma forward on (VIDGRAPH_ATTENTION_TUNING=1,1,0,1,1,1,1; flash_forward runs the auto
#     variant: dense2wg without a list, overlap3 with one) → $OUT/test-wgmma.txt.
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
grep -E "^(tile layer|FAIL|timing)" "$OUT/hopper-log.txt"
echo "vidgraph-hopper-check rc=$check_rc ($OUT/hopper.json)"
if [ $check_rc -ne 0 ]; then
  echo "hopper_check: FAILED (rc=$check_rc); last lines of the log:" >&2
  tail -n 20 "$OUT/hopper-log.txt" >&2
  rc=1
fi

for set in tma ws pp; do
  limit=120
  [ $set = pp ] && limit=60  # named barriers cannot time out: a deadlock ends here
  echo "== vidgraph-hopper-check --$set" >> "$OUT/hopper-sets-log.txt"
  timeout $limit "$CHECK" --$set > "$OUT/hopper-$set.json" 2> "$OUT/hopper-$set.tmp"
  set_rc=$?
  cat "$OUT/hopper-$set.tmp" >> "$OUT/hopper-sets-log.txt"
  grep -E "^(FAIL|timing)" "$OUT/hopper-$set.tmp"
  echo "vidgraph-hopper-check --$set rc=$set_rc ($OUT/hopper-$set.json)"
  if [ $set_rc -ne 0 ]; then
    echo "hopper_check: the --$set variants FAILED (rc=$set_rc); last lines of the log:" >&2
    tail -n 20 "$OUT/hopper-$set.tmp" >&2
    rc=1
  fi
  rm -f "$OUT/hopper-$set.tmp"
done

SUITE="$BUILD/tests/tst_attention_gpu"
if [ -x "$SUITE" ]; then
  VIDGRAPH_ATTENTION_TUNING=1,1,0,1,1,1,1 timeout 600 "$SUITE" > "$OUT/test-wgmma.txt" 2>&1
  suite_rc=$?
  echo "tst_attention_gpu (wgmma forward) rc=$suite_rc: $(grep -E '^Totals' "$OUT/test-wgmma.txt")"
  [ $suite_rc -ne 0 ] && { grep -E "^FAIL|Loc:" "$OUT/test-wgmma.txt" | head -20 >&2; rc=1; }
else
  echo "hopper_check: $SUITE not built; skipped the GPU suite with the wgmma forward."
fi
exit $rc
