#!/usr/bin/env bash
# test_conventions.sh — the CLI's shared conventions: `kareus help CMD [SUB]` prints what
# `kareus CMD [SUB] --help` prints; every command that prints results has --json, and what it
# prints parses as one JSON object with the documented keys (compose, solve, plan, run, report;
# the others have their own tests); bash completion; --exchange has one default (off) in every help text.
source "$(dirname "$0")/lib.sh"
G="${KR_TESTDATA_DIR:?}/golden/lowtime"
PY=$(command -v python3) || { echo "SKIPPED: python3 parses the JSON here"; exit 77; }

same_help() {
  local a b
  a=$("$KAREUS" help "$@" 2>&1)
  b=$("$KAREUS" "$@" --help 2>&1)
  if [ "$a" = "$b" ] && [ -n "$a" ]; then echo "ok: kareus help $*"; else
    echo "FAIL: kareus help $* differs from kareus $* --help" >&2; fails=$((fails + 1)); fi
}
for cmd in optimize search compose solve simulate compare report plan partition catalog job gpu run profile; do
  same_help "$cmd"
done
same_help plan show
expect_exit 2 "unknown command 'nosuch'" -- help nosuch

# json_keys NAME KEY... < output: one JSON object holding every KEY.
json_keys() {
  local name=$1
  shift
  if "$PY" -c 'import json, sys; d = json.load(sys.stdin); missing = [k for k in sys.argv[1:] if k not in d]
sys.exit("missing keys: %s" % missing if missing else 0)' "$@" <"$TMP/out.json" 2>"$TMP/err"; then
    echo "ok: $name --json"
  else
    echo "FAIL: $name --json: $(cat "$TMP/err"); output: $(head -c 400 "$TMP/out.json")" >&2
    fails=$((fails + 1))
  fi
}

"$KAREUS" solve --options "$G/opts_S2.csv" --stages 2 --microbatches 8 --cost-model lowtime \
  --frontier-out "$TMP/f.csv" --plans "$TMP/plans" --json >"$TMP/out.json"
json_keys solve cost_model steps frontier slowest fastest plans
plan=$("$PY" -c 'import json, sys; print(json.load(sys.stdin)["plans"][0]["plan"])' <"$TMP/out.json")
[ -f "$plan" ] && echo "ok: solve --json names a written plan" || { echo "FAIL: no plan '$plan'" >&2; fails=$((fails + 1)); }
"$KAREUS" plan validate "$plan" --json >"$TMP/out.json"
json_keys "plan validate" plan ok stages microbatches fits_job
"$KAREUS" plan show "$plan" --json >"$TMP/out.json"
json_keys "plan show" schema version
"$KAREUS" plan export-zeus "$plan" --out "$TMP/z.py" --json >"$TMP/out.json"
json_keys "plan export-zeus" plan out
"$KAREUS" run --plan "$plan" --backend sim --json -- sh -c 'exit 3' >"$TMP/out.json"
json_keys run command exit_status signal devices clocks_restored
grep -q '"exit_status": 3' "$TMP/out.json" && echo "ok: run --json exit status" || { echo "FAIL: run exit status" >&2; fails=$((fails + 1)); }

"$KAREUS" optimize --out "$TMP/opt" --quiet --no-pictures >/dev/null 2>&1 || { echo "FAIL: optimize" >&2; fails=$((fails + 1)); }
"$KAREUS" report "$TMP/opt" --json >"$TMP/out.json"
json_keys report report
mkdir -p "$TMP/fr"
"$KAREUS" search --partition all --out "$TMP/fr" >/dev/null 2>&1 || { echo "FAIL: search" >&2; fails=$((fails + 1)); }
"$KAREUS" compose --frontiers "$TMP/fr" --out "$TMP/o.csv" --json >"$TMP/out.json"
json_keys compose out options stages clocks sums variant

# Bash completion (cli/kareus.bash-completion) reads commands and options from the help texts.
comp=$(bash -c 'source "$1/cli/kareus.bash-completion"; COMP_WORDS=("$2" so); COMP_CWORD=1; _kareus
  echo "${COMPREPLY[*]}"; COMP_WORDS=("$2" solve --exch); COMP_CWORD=2; _kareus; echo "${COMPREPLY[*]}"' \
  _ "$KR_SOURCE_DIR" "$KAREUS" 2>&1)
if [ "$comp" = $'solve\n--exchange' ]; then echo "ok: bash completion"; else
  echo "FAIL: bash completion: $comp" >&2; fails=$((fails + 1)); fi

# One default for --exchange: every help text that has the option says off is the default.
for cmd in optimize compare solve; do
  h=$("$KAREUS" "$cmd" --help | grep -A2 -- '--exchange' || true)
  if [ -z "$h" ] || grep -q "off (default" <<<"$h"; then echo "ok: $cmd --exchange default off"; else
    echo "FAIL: $cmd --exchange: $h" >&2; fails=$((fails + 1)); fi
done
finish
