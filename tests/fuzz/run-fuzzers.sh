#!/bin/sh
# Runs every built fuzz target for SECONDS each (one process per target, no -jobs, which would
# also write fuzz-N.log into the current folder; -max_total_time) on its seed corpus, as many
# targets at a time as there are cores (VIDGRAPH_FUZZ_PARALLEL overrides), and prints per target
# the executions and the findings (crash-*/leak-*/timeout-*/oom-* files written to OUT). Builds nothing: configure and build with -DVIDGRAPH_FUZZ=ON first (see
# tests/fuzz/CMakeLists.txt).
#   tests/fuzz/run-fuzzers.sh SECONDS [BUILD_DIR] [OUT]   (defaults: build-fuzz, /tmp/vidgraph-fuzz)
# VIDGRAPH_FUZZ_TARGETS="fuzz_pth ..." runs only those targets.
# Exit status: 0 no findings, 1 findings, 2 usage or missing targets.
set -u
seconds=${1:-}
build=${2:-build-fuzz}
out=${3:-/tmp/vidgraph-fuzz}
here=$(cd "$(dirname "$0")" && pwd)
case "$seconds" in
  ''|*[!0-9]*) echo "usage: $0 SECONDS [BUILD_DIR] [OUT]" >&2; exit 2 ;;
esac
parallel=${VIDGRAPH_FUZZ_PARALLEL:-$(nproc 2>/dev/null || echo 1)}
status=0

# One target on its own work folder; the seeds stay untouched (new inputs go to the work corpus).
fuzz_one() {
  work="$out/$1"
  mkdir -p "$work/corpus" "$work/artifacts"
  "$build/fuzz/$1" "$work/corpus" "$here/corpus/$1" -max_total_time="$seconds" \
    -rss_limit_mb=2048 -timeout=10 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/" >"$work/fuzz.log" 2>&1
}

# Prints a finished target's line; sets status 1 when it found something.
report() {
  work="$out/$1"
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/fuzz.log" | grep -o '[0-9]*$' | tail -1)
  findings=$(find "$work/artifacts" -type f | wc -l)
  echo "$1: ${execs:-?} executions, $findings finding(s) (log: $work/fuzz.log)"
  find "$work/artifacts" -type f -exec echo "  {}" \;
  [ "$findings" -gt 0 ] && [ "$status" -eq 0 ] && status=1
}

batch=""
for target in ${VIDGRAPH_FUZZ_TARGETS:-fuzz_workflow fuzz_safetensors fuzz_pth fuzz_gguf fuzz_gguf_tokenizer fuzz_comfy fuzz_model_paths fuzz_lora}; do
  if [ ! -x "$build/fuzz/$target" ]; then
    echo "$target: not built ($build/fuzz/$target missing); build it with -DVIDGRAPH_FUZZ=ON" >&2
    status=2
    continue
  fi
  fuzz_one "$target" &
  batch="$batch $target"
  if [ "$(echo $batch | wc -w)" -ge "$parallel" ]; then
    wait
    for t in $batch; do report "$t"; done
    batch=""
  fi
done
wait
for t in $batch; do report "$t"; done
exit $status
