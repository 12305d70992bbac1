#!/usr/bin/env bash
# run.sh BUILD_DIR SECONDS [NAME...] — runs each libFuzzer harness (all by default) for SECONDS
# (0: no time limit) on a working corpus BUILD_DIR/fuzz-corpus/NAME seeded from fuzz/corpus/NAME,
# and prints one line per harness: executions, corpus size, and whether it found a crash
# (crash-* files are kept in BUILD_DIR/fuzz-artifacts/NAME). With FUZZ_RUNS=N in the
# environment each harness stops after N executions (or SECONDS, whichever comes first), and a
# harness that stopped short of N is reported. Exit status 1 if any harness found something.
set -u
build=$1 seconds=$2
shift 2
src=$(cd "$(dirname "$0")" && pwd)
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(job gpu plan options frontier summary mlog sweep artifact)
status=0
for n in "${names[@]}"; do
  bin="$build/fuzz_$n"
  [ -x "$bin" ] || { echo "fuzz_$n: not built" >&2; status=1; continue; }
  corpus="$build/fuzz-corpus/$n" art="$build/fuzz-artifacts/$n"
  mkdir -p "$corpus" "$art"
  cp -n "$src/corpus/$n"/* "$corpus/" 2>/dev/null
  log="$build/fuzz-$n.log"
  limits=(-max_total_time="$seconds")
  [ -n "${FUZZ_RUNS:-}" ] && limits+=(-runs="$FUZZ_RUNS")
  t_start=$SECONDS
  "$bin" "${limits[@]}" -timeout=10 -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$art/" "$corpus" >"$log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  crashes=$(ls "$art" | grep -c '^\(crash\|leak\|timeout\|oom\)-')
  short=""
  [ -n "${FUZZ_RUNS:-}" ] && [ "${execs:-0}" -lt "$FUZZ_RUNS" ] && short=" (short of FUZZ_RUNS=$FUZZ_RUNS)"
  echo "fuzz_$n: ${execs:-?} executions${short} in $((SECONDS - t_start)) s, corpus $(ls "$corpus" | wc -l) files, exit $rc, findings $crashes"
  [ "$rc" -eq 0 ] && [ "$crashes" -eq 0 ] || { status=1; tail -30 "$log" >&2; }
done
exit $status
