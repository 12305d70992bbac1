#!/usr/bin/env bash
# golden-outputs.sh — what the flow writes, on fixed inputs, against the committed expectation
# (tests/golden-outputs/MANIFEST): a refactoring must leave every output byte-identical.
#
#   scripts/golden-outputs.sh [--update] [--keep DIR] [BUILD_DIR]   (BUILD_DIR default: build)
#
# Runs, into a fresh directory:
#   optimize   the built-in default job (every file: plans, frontiers, options, partition
#              frontiers, the measurement log, pictures, report.html, summary.json) and the
#              CP 2 × TP 4 job without pictures;
#   compare    --suite paper --json (the ten configurations; ~1 min of CPU);
#   search     every partition of the default job with bo (seed 3), artifact and exhaustive on
#              fwd_attn, and bo with the simulator as prior (--prior sim);
#   solve      the golden options of tests/golden/lowtime at (2,8) and (4,16), exact and lowtime
#              models, 1 ms, plus (2,8) with the exchange passes on;
#   plan       the real artifact files of tests/data/artifact imported, the Kareus one exported
#              back as the artifact's files and the Perseus one as Zeus's (optimize's plans/
#              directories hold the artifact files of its own plans);
# then normalises what is not an output of the method — wall-clock timings ("timing_s",
# "solve_s", "search_s", "cpu_s" values in JSON, "in N s" in printed summaries), the checkout's and the run's
# own directory in printed paths — and compares the SHA-256 and size of every file with the
# manifest. Exit 0 if all match, 1 with the list of files that differ, appeared or vanished.
# --update writes the manifest instead (commit it with the change that meant to change outputs,
# and say why). --keep DIR leaves the outputs there (to diff two builds' outputs file by file).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
update=0 keep=""
while [ $# -gt 0 ]; do
  case $1 in
    --update) update=1; shift ;;
    --keep) keep=$2; shift 2 ;;
    -h | --help) sed -n '2,24p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
B=${1:-build}
K="$root/$B/kareus"
[ -x "$K" ] || { echo "golden-outputs: $K not built (cmake --build $B)" >&2; exit 2; }
manifest="$root/tests/golden-outputs/MANIFEST"
if [ -n "$keep" ]; then
  rm -rf "$keep" && mkdir -p "$keep" && out=$(cd "$keep" && pwd)
else
  out=$(mktemp -d "${TMPDIR:-/tmp}/kareus-golden.XXXXXX")
  trap 'rm -rf "$out" "$out.manifest" "$out.manifest.diff"' EXIT
fi
G="$root/tests/golden/lowtime"
cd "$out"
run() { # run NAME CMD… : stdout to NAME.stdout (stderr is progress and goes to NAME.stderr, unchecked)
  local name=$1
  shift
  echo "golden-outputs: $name" >&2
  "$@" >"$name.stdout" 2>"$name.stderr" || { echo "golden-outputs: $name failed:" >&2; tail -20 "$name.stderr" >&2; exit 2; }
}
run optimize "$K" optimize --quiet --out opt
run optimize-cp "$K" optimize --quiet --no-pictures --job llama3.2-3b-cp2tp4-mbs8-s4096 --out opt-cp
run compare "$K" compare --suite paper --no-pictures --json --quiet --out cmp
run search-bo "$K" search --partition all --strategy bo --seed 3 --json --quiet --out search-bo
run search-artifact "$K" search --partition fwd_attn --strategy artifact --json --quiet --out search-artifact
run search-exhaustive "$K" search --partition fwd_attn --strategy exhaustive --json --quiet --out search-exh
run search-prior "$K" search --partition bwd_attn --strategy bo --prior sim --json --quiet --out search-prior
for sm in "2 8" "4 16"; do
  set -- $sm
  for model in exact lowtime; do
    run "solve-S$1-M$2-$model" "$K" solve --options "$G/opts_S$1.csv" --stages "$1" --microbatches "$2" \
      --cost-model "$model" --unit-time 0.001 --frontier-out "solve-S$1-M$2-$model.csv" --json
  done
done
run solve-S2-M8-exchange "$K" solve --options "$G/opts_S2.csv" --stages 2 --microbatches 8 --exchange on \
  --unit-time 0.001 --frontier-out solve-S2-M8-exchange.csv --json
A="$root/tests/data/artifact"
run import-kareus "$K" plan import "$A/kareus/freqs_pipeline_02495.py" "$A/kareus/scheds_pipeline_02495.py" \
  --job llama3.2-3b-tp8-mbs8-s4096 --out imported-kareus.json
run import-perseus "$K" plan import "$A/perseus/freqs_pipeline_01392.py" --out imported-perseus.json
run import-nbp "$K" plan import "$A/nanobatch_perseus/freqs_pipeline_00084.py" --method nanobatch+perseus \
  --job llama3.2-3b-cp2tp4-mbs8-s4096 --out imported-nbp.json
run export-artifact-imported "$K" plan export-artifact imported-kareus.json --job llama3.2-3b-tp8-mbs8-s4096 \
  --out artifact-imported
run export-zeus "$K" plan export-zeus imported-perseus.json --out zeus-perseus.py
rm -f ./*.stderr

# Normalise: timings and this run's directory.
find . -type f \( -name '*.json' -o -name '*.stdout' \) -print0 | xargs -0 -r perl -0pi -e '
  s/("(?:timing_s|solve_s|setup_s|search_s|compose_s|simulate_s|cpu_s|wall_s|elapsed_s|[a-z_]*_cpu_s|[a-z_]*_wall_s)"\s*:\s*)\{[^{}]*\}/${1}{}/g;
  s/("(?:timing_s|solve_s|setup_s|search_s|compose_s|simulate_s|cpu_s|wall_s|elapsed_s|[a-z_]*_cpu_s|[a-z_]*_wall_s)"\s*:\s*)-?[0-9.eE+-]+/${1}0/g;
  s/\b[0-9.]+ s in all/T s in all/g; s/\bin [0-9.]+ s\b/in T s/g;'
find . -type f -print0 | xargs -0 -r perl -pi -e "s#\Q$out\E#OUT#g; s#\Q$root\E#ROOT#g"

find . -type f | LC_ALL=C sort | while read -r f; do
  printf '%s %s %s\n' "$(sha256sum "$f" | cut -c1-64)" "$(stat -c %s "$f")" "${f#./}"
done >"$out.manifest"
new="$out.manifest"
if [ "$update" = 1 ]; then
  mkdir -p "$(dirname "$manifest")"
  cp "$new" "$manifest"
  rm -f "$new"
  echo "golden-outputs: wrote $(wc -l <"$manifest") entries to tests/golden-outputs/MANIFEST" >&2
  exit 0
fi
[ -f "$manifest" ] || { echo "golden-outputs: no $manifest (run with --update)" >&2; rm -f "$new"; exit 2; }
if diff <(awk '{print $3, $1, $2}' "$manifest") <(awk '{print $3, $1, $2}' "$new") >"$new.diff"; then
  echo "golden-outputs: all $(wc -l <"$manifest") outputs byte-identical" >&2
  rm -f "$new" "$new.diff"
  exit 0
fi
echo "golden-outputs: outputs differ from tests/golden-outputs/MANIFEST:" >&2
awk '/^[<>]/{print $2}' "$new.diff" | sort -u | while read -r f; do
  if ! grep -q " $f\$" "$manifest"; then echo "  new:      $f"
  elif ! grep -q " $f\$" "$new"; then echo "  missing:  $f"
  else echo "  changed:  $f"; fi
done >&2
rm -f "$new" "$new.diff"
exit 1
