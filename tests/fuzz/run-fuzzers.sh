#!/bin/sh
# Runs every built fuzz target for SECONDS each (one process, one job: libFuzzer's default without
# -jobs, which would also write fuzz-N.log into the current folder; -max_total_time) on its
# seed corpus, and prints per target the executions and the findings (crash-*/leak-*/timeout-*/oom-*
# files written to OUT). Builds nothing: configure and build with -DVIDGRAPH_FUZZ=ON first (see
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
status=0
for target in ${VIDGRAPH_FUZZ_TARGETS:-fuzz_workflow fuzz_safetensors fuzz_pth fuzz_gguf}; do
  exe="$build/fuzz/$target"
  if [ ! -x "$exe" ]; then
    echo "$target: not built ($exe missing); build it with -DVIDGRAPH_FUZZ=ON" >&2
    status=2
    continue
  fi
  work="$out/$target"
  mkdir -p "$work/corpus" "$work/artifacts"
  log="$work/fuzz.log"
  # The seeds stay untouched: new inputs go to the work corpus.
  "$exe" "$work/corpus" "$here/corpus/$target" -max_total_time="$seconds" \
    -rss_limit_mb=2048 -timeout=10 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/" >"$log" 2>&1
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  findings=$(find "$work/artifacts" -type f | wc -l)
  echo "$target: ${execs:-?} executions, $findings finding(s) (log: $log)"
  find "$work/artifacts" -type f -exec echo "  {}" \;
  [ "$findings" -gt 0 ] && [ "$status" -eq 0 ] && status=1
done
exit $status
