#!/usr/bin/env bash
# Device check of the attention plugin's GPU staging (dense `full`, row-gather tiling, tile means,
# gated untile, SLA* linear branch), for the lent H200.
# Usage: tests/bench/staging.sh BUILD_DIR
#   BUILD_DIR: a build configured with -DVIDGRAPH_GPU=cuda (GPU path of the plugin on) with the
#   targets tst_attention_gpu and vidgraph-vsa-pieces built.
# Steps (~1-2 minutes of device time):
#  1. tst_attention_gpu, the staging functions only (methods_match_cpu, staging_matches_aten,
#     linear_branch_matches_aten) → $OUT/staging-test.txt
#  2. vidgraph-vsa-pieces at the Wan2.2-5B grid (20 repeats) and the long grid (5 repeats)
#     → $OUT/staging-pieces.json (two JSON objects), stderr → $OUT/staging-pieces-log.txt
# Prints a short summary; exits non-zero when a step fails or a binary is missing.
set -uo pipefail
BUILD=${1:?usage: tests/bench/staging.sh BUILD_DIR}
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
TEST="$BUILD/tests/tst_attention_gpu"
PIECES="$BUILD/bin/vidgraph-vsa-pieces"
rc=0
for exe in "$TEST" "$PIECES"; do
  if [ ! -x "$exe" ]; then
    echo "staging: $exe is missing; build tst_attention_gpu and vidgraph-vsa-pieces in $BUILD." >&2
    exit 2
  fi
done

(cd "$BUILD" && timeout 300 "$TEST" methods_match_cpu staging_matches_aten linear_branch_matches_aten \
  -o "$OUT/staging-test.txt,txt" > /dev/null 2>&1)
test_rc=$?
echo "tst_attention_gpu (staging functions) rc=$test_rc: $(grep -E '^Totals' "$OUT/staging-test.txt")"
grep -E "^(FAIL|SKIP)" -A3 "$OUT/staging-test.txt" | head -30
grep -oE "rel-L2 .*" "$OUT/staging-test.txt" | awk '{print $NF "\t" $0}' | sort -g | tail -3 | cut -f2
if [ $test_rc -ne 0 ] || grep -qE "^SKIP.*initTestCase" "$OUT/staging-test.txt"; then
  echo "staging: the GPU staging tests FAILED or were skipped (rc=$test_rc)" >&2
  rc=1
fi

: > "$OUT/staging-pieces.json"
for args in "31 22 40 0.875 20" "31 44 80 0.875 5"; do
  timeout 240 "$PIECES" $args >> "$OUT/staging-pieces.json" 2>> "$OUT/staging-pieces-log.txt"
  p_rc=$?
  echo "vidgraph-vsa-pieces $args rc=$p_rc"
  [ $p_rc -eq 0 ] || { echo "staging: vidgraph-vsa-pieces $args FAILED; log tail:" >&2; tail -n 15 "$OUT/staging-pieces-log.txt" >&2; rc=1; }
done
python3 - "$OUT/staging-pieces.json" <<'PY' || rc=1
import json, sys
text = open(sys.argv[1]).read()
dec, pos, docs = json.JSONDecoder(), 0, []
while pos < len(text):
    while pos < len(text) and text[pos].isspace():
        pos += 1
    if pos >= len(text):
        break
    doc, pos = dec.raw_decode(text, pos)
    docs.append(doc)
for d in docs:
    m = d["ms"]
    print("grid %s: staging_fwd %.2f ms (tile %.2f [aten %.2f], means %.2f [aten sum %.2f], coarse %.2f, select %.2f, untile+gate %.2f [bwd %.2f])"
          % (d["grid"], m["staging_fwd"], m["tile_qkv"], m["tile_qkv_aten"], m["tile_means"], m["tile_means_aten_sum"],
             m["coarse"], m["select_topk_lists"], m["untile_gate"], m["untile_gate_bwd"]))
    print("  fine fwd %.2f bwd %.2f | linear fwd %.2f [aten %.2f] f+b %.2f | dense fwd %.2f bwd %.2f | vsa fwd %.2f f+b %.2f | sla_star fwd %.2f"
          % (m["fine_fwd"], m["fine_bwd"], m["linear_fwd"], m["linear_fwd_aten"], m["linear_fwd_bwd"],
             m["dense_fwd"], m["dense_bwd"], m["vsa_fwd"], m["vsa_fwd_bwd"], m["sla_star_fwd"]))
if len(docs) != 2:
    sys.exit("staging: expected 2 pieces results, got %d" % len(docs))
PY
[ $rc -eq 0 ] && echo "staging: OK" || echo "staging: FAILED" >&2
exit $rc
