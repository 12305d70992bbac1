#!/usr/bin/env bash
# test_solve.sh — `kareus solve` and `kareus plan` end to end: the golden options, both cost
# models, plan selection and files, Zeus export, and exit status 2 with precise errors on bad
# input (missing column, stage out of range, NaN/negative energy, non-positive time or unit,
# an instruction with no options, unknown rules).
. "$(dirname "$0")/lib.sh"
G="$KR_TESTDATA_DIR/golden/lowtime"

# Lowtime mode reproduces the golden frontier's quantized times (512 steps at 1 ms).
expect_exit 0 "lowtime frontier: 512 steps" -- solve --options "$G/opts_S2.csv" --stages 2 --microbatches 8 \
  --unit-time 0.001 --cost-model lowtime --static-power 85 --frontier-out "$TMP/lt.csv"
paste -d, <(cut -d, -f2 "$TMP/lt.csv" | tail -n +2) <(cut -d, -f2 "$G/frontier_S2_M8_u1ms.csv" | tail -n +2) |
  awk -F, '$1 != $2 { bad++ } END { exit bad > 0 }' && echo "ok: quant_time column equals the golden one" ||
  { echo "FAIL: quant_time differs from the golden frontier" >&2; fails=$((fails + 1)); }

# Exact mode with plans: fastest, frugal, artifact10 and a deadline.
expect_exit 0 "plans: " -- solve --options "$G/opts_S2.csv" --job default --frontier-out "$TMP/ex.csv" \
  --plans "$TMP/plans" --select fastest,frugal,artifact10,deadline=1.5
# artifact10 keeps 10 plans (the fastest among them); frugal and the deadline add at most 2.
n=$(ls "$TMP/plans"/plan_*.json | wc -l)
z=$(ls "$TMP/plans"/freqs_pipeline_*.py | wc -l)
[ "$n" -ge 10 ] && [ "$n" -le 12 ] && [ "$z" -eq "$n" ] && echo "ok: $n plan files" ||
  { echo "FAIL: $n plan files, $z Zeus files" >&2; fails=$((fails + 1)); }
p=$(ls "$TMP/plans"/plan_*.json | head -1)
expect_exit 0 "fits the job" -- plan validate "$p" --job default
expect_exit 0 "stage 1:" -- plan show "$p"
expect_exit 0 "" -- plan export-zeus "$p" --out "$TMP/z.py"
grep -q "^\[('forward', " "$TMP/z.py" && grep -q "^# Iteration [0-9]* total cost with P2P: " "$TMP/z.py" &&
  echo "ok: zeus export" || { echo "FAIL: zeus export" >&2; fails=$((fails + 1)); }

# Bad input: exit 2 with what was expected and where.
printf 'stage,instruction,frequency,time\n0,forward,1410,0.1\n' >"$TMP/nocol.csv"
expect_exit 2 "nocol.csv:1: expected a column named 'energy'" -- solve --options "$TMP/nocol.csv" --stages 1 \
  --microbatches 2 --frontier-out "$TMP/x.csv"
printf 'stage,instruction,frequency,time,energy\n0,forward,1410,0.1,5\n0,backward,1410,0.2,9\n3,forward,1410,0.1,5\n' >"$TMP/range.csv"
# More stages than the pipeline: solved on the first S stages, but every stage read must be complete.
expect_exit 2 "range.csv: options: stage 1 forward (chunk 0): expected at least one option, found none" -- solve \
  --options "$TMP/range.csv" --stages 1 --microbatches 2 --frontier-out "$TMP/x.csv"
printf 'stage,instruction,frequency,time,energy\n0,forward,1410,0.1,5\n-1,backward,1410,0.2,9\n' >"$TMP/neg_stage.csv"
expect_exit 2 "neg_stage.csv:3: column 'stage': expected a stage in [0," -- solve --options "$TMP/neg_stage.csv" \
  --stages 1 --microbatches 2
expect_exit 0 "exact frontier: " -- solve --options "$G/opts_S4.csv" --stages 2 --microbatches 8
expect_exit 2 "opts_S2.csv: expected options for 4 stages, found 2" -- solve --options "$G/opts_S2.csv" --stages 4 \
  --microbatches 8
# The frontier CSV carries the bound, the gap and the dominated flag; the bound is never above the energy.
head -1 "$TMP/ex.csv" | grep -q ',bound_j,gap,dominated$' && awk -F, 'NR > 1 && $10 > $8 * (1 + 1e-9) { bad++ }
  END { exit bad > 0 }' "$TMP/ex.csv" && echo "ok: frontier CSV has bound_j <= energy_j" ||
  { echo "FAIL: frontier CSV bound columns" >&2; fails=$((fails + 1)); }
grep -q '"bound_j"' "$TMP/plans/"plan_*.json && echo "ok: plans carry bound_j" ||
  { echo "FAIL: plans without bound_j" >&2; fails=$((fails + 1)); }
printf 'stage,instruction,frequency,time,energy\n0,forward,1410,0.1,nan\n' >"$TMP/nan.csv"
expect_exit 2 "nan.csv:2: column 'energy': expected a finite number, found 'nan'" -- solve --options "$TMP/nan.csv" \
  --stages 1 --microbatches 2 --frontier-out "$TMP/x.csv"
printf 'stage,instruction,frequency,time,energy\n0,forward,1410,0.1,-1\n' >"$TMP/neg.csv"
expect_exit 2 "neg.csv:2: column 'energy': expected an energy >= 0 J, found -1" -- solve --options "$TMP/neg.csv" \
  --stages 1 --microbatches 2 --frontier-out "$TMP/x.csv"
printf 'stage,instruction,frequency,time,energy\n0,forward,1410,-0.1,1\n' >"$TMP/time.csv"
expect_exit 2 "time.csv:2: column 'time': expected a time > 0 s, found -0.1" -- solve --options "$TMP/time.csv" \
  --stages 1 --microbatches 2 --frontier-out "$TMP/x.csv"
printf 'stage,instruction,frequency,time,energy\n0,forward,1410,0.1,1\n' >"$TMP/noopt.csv"
expect_exit 2 "stage 0 backward (chunk 0): expected at least one option, found none" -- solve \
  --options "$TMP/noopt.csv" --stages 1 --microbatches 2 --frontier-out "$TMP/x.csv"
expect_exit 2 "--unit-time: expected a number" -- solve --options "$G/opts_S2.csv" --stages 2 --microbatches 8 \
  --unit-time 0 --frontier-out "$TMP/x.csv"
expect_exit 2 "--cost-model: expected exact or lowtime, found 'fast'" -- solve --options "$G/opts_S2.csv" \
  --stages 2 --microbatches 8 --cost-model fast --frontier-out "$TMP/x.csv"
expect_exit 2 "found 'soonest'" -- solve --options "$G/opts_S2.csv" --stages 2 --microbatches 8 \
  --frontier-out "$TMP/x.csv" --plans "$TMP/p" --select soonest
expect_exit 2 "no plan meets the deadline 0.1 s" -- solve --options "$G/opts_S2.csv" --stages 2 --microbatches 8 \
  --frontier-out "$TMP/x.csv" --plans "$TMP/p" --select deadline=0.1
expect_exit 2 "lowtime cost model has no edge lags" -- solve --options "$G/opts_S2.csv" --stages 2 \
  --microbatches 8 --cost-model lowtime --p2p-lag 0.001 --frontier-out "$TMP/x.csv"
# --frontier-out is optional; the summary prints time and energy of the same plan.
expect_exit 0 "times are the real critical path" -- solve --options "$G/opts_S2.csv" --stages 2 --microbatches 8 \
  --cost-model lowtime
# A deadline's plan is refined by default (exact model, up to 4,096 instructions): the plan
# improved by kr_solve_refine joins the frontier as a new step, no slower than the deadline and
# no dearer than the best step meeting it (both from the files); --refine says the same, and
# --no-refine writes the cheapest frontier step meeting the deadline.
expect_exit 0 "refined deadline 1.43 s: step" -- solve --options "$G/opts_S4.csv" --stages 4 --microbatches 8 \
  --frontier-out "$TMP/rf.csv" --plans "$TMP/rf" --select deadline=1.43
expect_exit 0 "refined deadline 1.43 s: step" -- solve --options "$G/opts_S4.csv" --stages 4 --microbatches 8 \
  --frontier-out "$TMP/rf2.csv" --plans "$TMP/rf2" --select deadline=1.43 --refine
expect_exit 0 "plans: 1 written" -- solve --options "$G/opts_S4.csv" --stages 4 --microbatches 8 \
  --frontier-out "$TMP/nr.csv" --plans "$TMP/nr" --select deadline=1.43 --no-refine
refined_ok() { # DIR REFINED(1/0)
  local plan step
  plan=$(ls "$TMP/$1"/plan_*.json) && step=${plan##*plan_} && step=$((10#${step%.json}))
  python3 - "$TMP/$1.csv" "$step" "$plan" "$2" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
step, refined = int(sys.argv[2]), sys.argv[4] == "1"
new = [r for r in rows if int(r["step"]) == step]
old = [float(r["energy_j"]) for r in rows if int(r["step"]) != step and float(r["time_s"]) <= 1.43]
assert new, step
t, e = float(new[0]["time_s"]), float(new[0]["energy_j"])
if refined:
    assert step == max(int(r["step"]) for r in rows), (step, len(rows))
    assert t <= 1.43 and e < min(old), (t, e, min(old))  # on these options the refine finds a cheaper plan
else:
    assert t <= 1.43 and e == min(old + [e]), (t, e, min(old))
assert float(new[0]["bound_j"]) <= e
p = json.load(open(sys.argv[3]))
assert abs(p["predicted"]["energy_j"] - e) <= 1e-6 * e, (p["predicted"], e)
print(e)
PY
}
if e1=$(refined_ok rf 1) && e2=$(refined_ok rf2 1) && e0=$(refined_ok nr 0) && [ "$e1" = "$e2" ] &&
  python3 -c "import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))" "$e1" "$e0"; then
  echo "ok: the refined plan (default and --refine: $e1 J) is the new step, meets the deadline, costs less" \
    "than the unrefined one ($e0 J)"
else
  echo "FAIL: the refined plan (see above)" >&2; fails=$((fails + 1)); fi
# Above 4,096 instructions the deadline's plan is the frontier step, with a note saying so.
expect_exit 0 "deadline plans not refined (4112 instructions, above 4096)" -- solve --options "$G/opts_S8.csv" \
  --stages 8 --microbatches 257 --max-steps 1 --plans "$TMP/big" --select deadline=1000
expect_exit 2 "--refine and --no-refine exclude each other" -- solve --options "$G/opts_S2.csv" --stages 2 \
  --microbatches 8 --plans "$TMP/p" --select deadline=1.5 --refine --no-refine
expect_exit 2 "--refine needs --select with a deadline=S" -- solve --options "$G/opts_S2.csv" --stages 2 \
  --microbatches 8 --plans "$TMP/p" --select fastest --refine
echo '{"schema": "kareus.plan"' >"$TMP/bad.json"
expect_exit 2 "bad.json" -- plan show "$TMP/bad.json"
expect_exit 2 "unknown subcommand 'print'" -- plan print "$p"
finish
