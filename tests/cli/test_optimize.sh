#!/usr/bin/env bash
# test_optimize.sh — `kareus optimize`, `simulate`, `report` and `compare` end to end, and their
# bad input (plans that do not match the job, missing or reordered instructions, unwritable
# output): exit 2 with a precise message.
source "$(dirname "$0")/lib.sh"

cd "$TMP"
expect_exit 0 "Kareus" -- optimize --out out --quiet
for f in out/report.html out/summary.json out/frontiers.svg out/plans/kareus/fastest.json out/plans/perseus/frugal.json; do
  [ -s "$f" ] || { echo "FAIL: $f missing"; fails=$((fails + 1)); }
done
grep -q '"schema": "kareus.summary"' out/summary.json || { echo "FAIL: summary schema"; fails=$((fails + 1)); }
grep -q "<svg" out/report.html || { echo "FAIL: report has no inlined picture"; fails=$((fails + 1)); }
expect_exit 0 "\"schema\": \"kareus.summary\"" -- optimize --out out2 --methods kareus --no-pictures --json --quiet
expect_exit 0 "iteration time" -- simulate --plan out/plans/kareus/fastest.json --svg "$TMP/t.svg"
[ -s "$TMP/t.svg" ] || { echo "FAIL: simulate drew nothing"; fails=$((fails + 1)); }
expect_exit 0 "\"iteration_time_s\"" -- simulate --plan out/plans/megatron/max-clock.json --svg none --json
expect_exit 0 "out/report.html" -- report out
expect_exit 0 "Max-throughput plans" -- compare --out cmp --no-pictures --quiet
# The ablation: both tables, every mechanism's column, and the JSON's figures; each ablated
# Kareus is no better than the whole one (its space is a subset of Kareus's).
expect_exit 0 "Ablation, iso-energy time reduction" -- compare --out cmp --ablation --no-pictures --quiet
"$KAREUS" compare --out cmp --ablation --no-pictures --quiet --json > abl.json
python3 - abl.json <<'PY' || fails=$((fails + 1))
import json, sys
d = json.load(open(sys.argv[1]))[0]
full = d["methods"]["Kareus"]["iso_time_energy_reduction_full"]
names = ["fix-sms", "fix-slot", "uncoupled", "only-nccl", "only-tuned"]
assert sorted(d["ablation"]) == sorted(names), d["ablation"]
for n in names:
    x = d["ablation"][n]["iso_time_energy_reduction_full"]
    assert x is not None and x <= full + 1e-9, (n, x, full)
print("ok: compare --ablation: five mechanisms, none better than the whole")
PY

# A plan made for another job.
expect_exit 2 "plan: job.fingerprint: expected" -- simulate --plan out/plans/kareus/fastest.json --job qwen3-1.7b-tp8-mbs8-s4096
# An instruction missing.
python3 - out/plans/kareus/fastest.json "$TMP/missing.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); p["stages"][1]["instructions"].pop(); json.dump(p, open(sys.argv[2], "w"))
PY
expect_exit 2 "stages[1]: expected 16 instructions (1f1b, 8 microbatches), found 15 (instructions missing)" -- simulate --plan "$TMP/missing.json"
# Two instructions out of order.
python3 - out/plans/kareus/fastest.json "$TMP/order.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); ins = p["stages"][0]["instructions"]; ins[1], ins[2] = ins[2], ins[1]
json.dump(p, open(sys.argv[2], "w"))
PY
expect_exit 2 "stages[0].instructions[1]: expected forward of microbatch 1 (chunk 0) in 1f1b order, found backward of microbatch 0" -- simulate --plan "$TMP/order.json"
# A clock the GPU does not have.
sed 's/"freq_mhz": \([0-9]*\)/"freq_mhz": 1417/' out/plans/megatron/max-clock.json > "$TMP/clock.json"
expect_exit 2 "freq_mhz: expected a clock the a100-sxm4-40gb supports" -- simulate --plan "$TMP/clock.json" --svg none
expect_exit 2 "cannot open" -- simulate --plan "$TMP/none.json"
expect_exit 2 "--plan FILE is required" -- simulate
# Unwritable output directory.
expect_exit 2 "cannot create directory" -- optimize --out /proc/kareus-out --quiet
touch "$TMP/afile"
expect_exit 2 "exists and is not a directory" -- optimize --out "$TMP/afile" --quiet
expect_exit 2 "--methods: expected megatron, perseus, nanobatch, nanobatch+perseus or kareus, found 'zeus'" -- optimize --methods zeus
expect_exit 2 "--unit-time: expected a number in" -- optimize --unit-time 0
expect_exit 2 "--strategy: expected exhaustive, bo or artifact, found 'random'" -- optimize --strategy random
expect_exit 2 "--suite: expected paper, found 'mlperf'" -- compare --suite mlperf
expect_exit 2 "summary.json: cannot open" -- report "$TMP/nothing-here"
finish
