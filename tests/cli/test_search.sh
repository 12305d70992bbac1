#!/usr/bin/env bash
# test_search.sh — `kareus search`: frontier files, JSON summary, resume from the log (also
# after a torn last line), replay of a log, the artifact's log format, and bad input (exit 2
# with a precise error).
source "$(dirname "$0")/lib.sh"

CP=llama3.2-3b-cp2tp4-mbs8-s4096

# Exhaustive search of one partition: 18 clocks x 2 kernels x 4 slots x 10 SM counts.
expect_exit 0 "\"measurements\": 1440" -- search --partition fwd_attn --strategy exhaustive --out "$TMP/ex" --json --quiet
for f in fwd_attn.kareus.json fwd_attn.kareus.csv measurements.jsonl; do
  [ -s "$TMP/ex/$f" ] || { echo "FAIL: $TMP/ex/$f missing" >&2; fails=$((fails + 1)); }
done
grep -q '"schema": "kareus.frontier"' "$TMP/ex/fwd_attn.kareus.json" || { echo "FAIL: schema" >&2; fails=$((fails + 1)); }
head -1 "$TMP/ex/fwd_attn.kareus.csv" | grep -q '^# kareus.frontier 1' || { echo "FAIL: csv header" >&2; fails=$((fails + 1)); }
# The log has the artifact's fields and ours.
head -1 "$TMP/ex/measurements.jsonl" | grep -q '^{"schema":"kareus.mlog","version":1,"job":"' \
  || { echo "FAIL: log header line" >&2; head -1 "$TMP/ex/measurements.jsonl" >&2; fails=$((fails + 1)); }
sed -n 2p "$TMP/ex/measurements.jsonl" | grep -q '"freq":1410,"overlap_start":"norm_0","overlap_end":"none","sm":3,"block":1024,"time_s":' \
  || { echo "FAIL: log line fields" >&2; sed -n 2p "$TMP/ex/measurements.jsonl" >&2; fails=$((fails + 1)); }

# A rerun with the same log measures nothing.
expect_exit 0 "\"measured_now\": 0" -- search --partition fwd_attn --strategy exhaustive --out "$TMP/ex" --json --quiet

# bo on every partition (layers + non-partition work), then resume: nothing measured twice.
expect_exit 0 "\"key\": \"loss_bwd\"" -- search --out "$TMP/bo" --json --quiet --seed 3
n1=$(wc -l < "$TMP/bo/measurements.jsonl")
expect_exit 0 "\"measured_now\": 0, \"space_size\"" -- search --out "$TMP/bo" --json --quiet --seed 3
n2=$(wc -l < "$TMP/bo/measurements.jsonl")
[ "$n1" = "$n2" ] || { echo "FAIL: the rerun appended $((n2 - n1)) lines" >&2; fails=$((fails + 1)); }

# A torn last line (a crash while writing) is dropped with a warning on stderr, not stdout.
printf '{"freq":1410,"overlap_start":"norm_0","ov' >> "$TMP/bo/measurements.jsonl"
expect_exit 0 "dropped a torn last line" -- search --out "$TMP/bo" --quiet --seed 3
out=$("$KAREUS" search --out "$TMP/bo" --quiet --seed 3 --json 2>/dev/null)
grep -q "torn" <<<"$out" && { echo "FAIL: torn-line warning on stdout after it was dropped" >&2; fails=$((fails + 1)); }
[ "$(wc -l < "$TMP/bo/measurements.jsonl")" = "$n1" ] || { echo "FAIL: torn line kept" >&2; fails=$((fails + 1)); }

# Replaying the log reproduces the live search's frontier exactly (points and flags).
expect_exit 0 "replay backend" -- search --backend replay --replay "$TMP/bo/measurements.jsonl" --log none --out "$TMP/rep" --seed 3 --strategy bo
for k in fwd_attn fwd_mlp bwd_mlp bwd_attn; do
  if ! diff <(grep -v '^#' "$TMP/bo/$k.kareus.csv") <(grep -v '^#' "$TMP/rep/$k.kareus.csv") >/dev/null; then
    echo "FAIL: replayed frontier of $k differs" >&2
    fails=$((fails + 1))
  fi
done
# An exhaustive search of a partial recording is restricted to the recorded points (a BO log
# holds a fraction of the space); bo asking the replay for what was never recorded is a clear
# error that names the way out.
expect_exit 0 "recorded points only" -- search --backend replay --replay "$TMP/bo/measurements.jsonl" --log none --out "$TMP/rep2" --partition fwd_attn --strategy exhaustive --quiet
expect_exit 2 "--strategy exhaustive searches only what was recorded" -- search --backend replay --replay "$TMP/bo/measurements.jsonl" --log none --out "$TMP/rep3" --partition fwd_attn --strategy bo --seed 4 --quiet

# The artifact's eval_results.jsonl (no key: taken from the directory name).
mkdir -p "$TMP/art/fwd_mlp"
"$KAREUS" search --partition fwd_mlp --strategy exhaustive --out "$TMP/ex2" --quiet >/dev/null
sed -e 's/,"eff_energy_j".*$/}/' "$TMP/ex2/measurements.jsonl" > "$TMP/art/fwd_mlp/eval_results.jsonl"
# (Our NCCL lines keep their "kernel" field through the sed: both kernels, 2 x 540.)
expect_exit 0 "\"measurements\": 1080" -- search --backend replay --replay "$TMP/art/fwd_mlp/eval_results.jsonl" --partition fwd_mlp --strategy exhaustive --log none --out "$TMP/art/out" --json --quiet
cp "$TMP/art/fwd_mlp/eval_results.jsonl" "$TMP/art/eval.jsonl"
expect_exit 2 "pass KEY=" -- search --backend replay --replay "$TMP/art/eval.jsonl" --partition fwd_mlp --log none --out "$TMP/art/out3" --quiet
expect_exit 0 "\"measurements\": 1080" -- search --backend replay --replay "fwd_mlp=$TMP/art/eval.jsonl" --partition fwd_mlp --strategy exhaustive --log none --out "$TMP/art/out4" --json --quiet

# The artifact strategy uses the published budget (96 + 4 x 32 for fwd_attn), on the published
# space (the tuned kernel; --restrict also drops the baseline's execution, which is otherwise
# added at every clock the rule leaves it out).
expect_exit 0 "\"measurements\": 224" -- search --partition fwd_attn --strategy artifact --restrict only-tuned --out "$TMP/art5" --json --quiet
# --budget N: artifact runs its schedule scaled to N, bo runs to N without its stopping rule (an
# equal-count comparison from the CLI).
expect_exit 0 "\"measurements\": 62" -- search --partition fwd_attn --strategy artifact --budget 62 --restrict only-tuned --log none --out "$TMP/bud/a" --json --quiet
expect_exit 0 "\"stop\": \"fixed budget\"" -- search --partition fwd_attn --strategy artifact --budget 62 --log none --out "$TMP/bud/a" --json --quiet
expect_exit 0 "\"measurements\": 100" -- search --partition fwd_attn --strategy bo --budget 100 --restrict only-tuned --log none --out "$TMP/bud/b" --json --quiet
expect_exit 0 "\"measurements\": 40" -- search --partition fwd_attn --strategy bo --prior sim --budget 40 --restrict only-tuned --log none --out "$TMP/bud/c" --json --quiet
expect_exit 2 "--budget: expected --strategy bo or artifact" -- search --partition fwd_attn --strategy exhaustive --budget 10 --out "$TMP/e"
expect_exit 2 "expected no --max-evals or --stop with it" -- search --partition fwd_attn --strategy artifact --budget 10 --max-evals 5 --out "$TMP/e"
expect_exit 2 "--budget: expected an integer" -- search --partition fwd_attn --budget 0 --out "$TMP/e"
expect_exit 2 "--restrict: restriction: expected only-tuned, only-nccl, fix-sms, fix-slot" -- search --partition fwd_attn --restrict fix-all --out "$TMP/e"
expect_exit 2 "expected at most one of only-tuned and only-nccl" -- search --partition fwd_attn --restrict only-tuned,only-nccl --out "$TMP/e"
# Summary hypervolumes share one reference per partition (whatever the strategy, seed or count),
# so they compare: the exhaustive search's is the largest, and more of the same run's points
# never lower it.
mkdir -p "$TMP/hv"
for r in "ex --strategy exhaustive" "bo --strategy bo --seed 2" "art --strategy artifact --budget 62" \
         "bo100 --strategy bo --budget 100" "bo50 --strategy bo --budget 50"; do
  set -- $r
  n=$1; shift
  "$KAREUS" search --partition fwd_attn "$@" --log none --out "$TMP/hv/$n" --json --quiet > "$TMP/hv/$n.json" 2>/dev/null \
    || { echo "FAIL: search $r" >&2; fails=$((fails + 1)); }
done
python3 - "$TMP/hv" <<'PY' || { echo "FAIL: summary hypervolumes are not comparable" >&2; fails=$((fails + 1)); }
import json, sys
d = sys.argv[1]
p = {n: json.load(open(f"{d}/{n}.json"))["partitions"][0] for n in ("ex", "bo", "art", "bo100", "bo50")}
refs = {json.dumps(q["reference"], sort_keys=True) for q in p.values()}
assert len(refs) == 1, refs
ref = p["ex"]["reference"]
assert ref["source"] == "simulator" and ref["time_s"] > 0 and ref["energy_j"] > ref["eff_energy_j"] > 0, ref
for plane in ("hypervolume_eff", "hypervolume_total"):
    for n in ("bo", "art", "bo100", "bo50"):
        assert 0 < p[n][plane] <= p["ex"][plane] * (1 + 1e-12), (plane, n, p[n][plane], p["ex"][plane])
    assert p["bo50"][plane] <= p["bo100"][plane] * (1 + 1e-12), plane
PY
# Baseline variants search the clock only.
expect_exit 0 "\"measurements\": 18" -- search --partition bwd_mlp --variant sequential --out "$TMP/seq" --json --quiet
# Down to the GPU's native clock step: 35 clocks x 80.
expect_exit 0 "\"space_size\": 2800" -- search --partition fwd_attn --clock-step 15 --max-evals 60 --out "$TMP/fine" --json --quiet
# CP job: twelve keys, the gather partitions search 1..20 SMs (2 kernels x 1080, and NCCL's 24
# CTAs, off that list, one more configuration per clock).
expect_exit 0 "\"space_size\": 2178" -- search --job $CP --partition fwd_qkv_ag --strategy exhaustive --out "$TMP/cp" --json --quiet

# Bad input: exit 2 and a precise message.
expect_exit 2 "--partition: expected all or a partition of job 'default' (kareus variant): fwd_attn, fwd_mlp" -- search --partition fwd_xyz --out "$TMP/e"
expect_exit 2 "--strategy: expected exhaustive, bo or artifact, found 'random'" -- search --strategy random
expect_exit 2 "--variant: expected kareus, sequential or default-overlap" -- search --variant fast
expect_exit 2 "--seed: expected an integer" -- search --seed x
echo '{"planning": {"clock_min_mhz": 1410, "clock_max_mhz": 900}}' > "$TMP/noclock.json"
expect_exit 2 "expected clock_min_mhz <= clock_max_mhz" -- search --job "$TMP/noclock.json" --out "$TMP/e"
echo '{"planning": {"sms_allreduce": []}}' > "$TMP/nosms.json"
expect_exit 2 "planning.sms_allreduce: expected at least one SM count, found an empty list" -- search --job "$TMP/nosms.json" --out "$TMP/e"
expect_exit 2 "planning.clock_step_mhz: expected a multiple of the GPU's 15 MHz step" -- search --clock-step 7 --out "$TMP/e"
# Bad log lines: wrong type, outside the space, another job's log, bad JSON in the middle.
mkdir -p "$TMP/logs"
head -4 "$TMP/ex/measurements.jsonl" > "$TMP/logs/type.jsonl"
sed -i '3s/"sm":6/"sm":"six"/' "$TMP/logs/type.jsonl"
expect_exit 2 "type.jsonl:3: \$.sm: expected an integer, found string \"six\"" -- search --log "$TMP/logs/type.jsonl" --out "$TMP/e"
head -4 "$TMP/ex/measurements.jsonl" > "$TMP/logs/space.jsonl"
sed -i '4s/"sm":9/"sm":10/' "$TMP/logs/space.jsonl"
expect_exit 2 "space.jsonl:4: configuration outside the search space: partition fwd_attn (kareus): sm: expected one of {3, 6, 9" -- search --log "$TMP/logs/space.jsonl" --out "$TMP/e"
expect_exit 2 "this log was measured for a different job" -- search --job $CP --log "$TMP/ex/measurements.jsonl" --out "$TMP/e"
{ head -2 "$TMP/ex/measurements.jsonl"; echo '{"freq": 1410,'; head -3 "$TMP/ex/measurements.jsonl" | tail -1; } > "$TMP/logs/json.jsonl"
expect_exit 2 "json.jsonl:3:" -- search --log "$TMP/logs/json.jsonl" --out "$TMP/e"
# Unwritable or impossible --out.
touch "$TMP/afile"
expect_exit 2 "--out $TMP/afile: expected a directory, found a file" -- search --out "$TMP/afile"
expect_exit 2 "--out $TMP/afile/sub: cannot create the directory" -- search --out "$TMP/afile/sub"
if [ "$(id -u)" != 0 ]; then
  mkdir -p "$TMP/ro" && chmod 555 "$TMP/ro"
  expect_exit 2 "expected a writable directory" -- search --out "$TMP/ro"
fi
expect_exit 2 "--replay needs --backend replay" -- search --backend sim --replay x.jsonl
expect_exit 2 "unknown or incomplete option" -- search --bogus
expect_exit 0 "usage: kareus search" -- search --help
# --prior: sim reports it in the JSON summary with the stop reason; a bad FILE is exit 2.
expect_exit 0 "\"prior\": true" -- search --partition fwd_mlp --prior sim --log none --out "$TMP/pr" --json --quiet
expect_exit 0 "\"stop\": \"converged (eff " -- search --partition fwd_mlp --prior sim --log none --out "$TMP/pr" --json --quiet
expect_exit 0 "\"prior\": false" -- search --partition fwd_mlp --log none --out "$TMP/pr" --json --quiet
# The prior's sensitivity features: reported as prior_fit (each constant's fitted change; 0 here,
# where the "GPU" is the prior itself), none with --prior-features off, a bad value is exit 2.
expect_exit 0 "\"prior_fit\": {" -- search --partition fwd_mlp --prior sim --log none --out "$TMP/pr" --json --quiet
expect_exit 0 "\"gemm_eff\": {\"time\": 0, \"energy\": 0}" -- search --partition fwd_mlp --prior sim --log none --out "$TMP/pr" --json --quiet
out=$("$KAREUS" search --partition fwd_mlp --prior sim --prior-features off --log none --out "$TMP/pr" --json --quiet 2>&1)
if grep -q prior_fit <<<"$out"; then echo "FAIL: --prior-features off still reports prior_fit" >&2; fails=$((fails + 1)); else echo "ok: --prior-features off"; fi
expect_exit 2 "--prior-features: expected auto, on or off, found 'x'" -- search --partition fwd_mlp --prior sim --prior-features x --log none --out "$TMP/pr"
# The calibration: reported as prior_calibrated (each constant's calibrated change; 0 here too),
# none with --prior-calibrate off (the features stay), a bad value is exit 2.
expect_exit 0 "\"prior_calibrated\": {\"dyn_coeff_w\": 0" -- search --partition fwd_mlp --prior sim --log none --out "$TMP/pr" --json --quiet
out=$("$KAREUS" search --partition fwd_mlp --prior sim --prior-calibrate off --log none --out "$TMP/pr" --json --quiet 2>&1)
if grep -q prior_calibrated <<<"$out" || ! grep -q prior_fit <<<"$out"; then echo "FAIL: --prior-calibrate off" >&2; fails=$((fails + 1)); else echo "ok: --prior-calibrate off"; fi
expect_exit 2 "--prior-calibrate: expected auto, on or off, found 'x'" -- search --partition fwd_mlp --prior sim --prior-calibrate x --log none --out "$TMP/pr"
echo '{"name": "x"' > "$TMP/badgpu.json"
expect_exit 2 "--prior $TMP/badgpu.json: expected none, sim or a GPU entry file" -- search --partition fwd_mlp --prior "$TMP/badgpu.json" --log none --out "$TMP/pr"
# compose: a frontier lacking clocks is an error naming the key and the clocks, or a warning with
# --allow-missing-clocks.
expect_exit 0 "" -- search --strategy exhaustive --partition all --log none --out "$TMP/cm" --quiet
python3 - "$TMP/cm/fwd_attn.kareus.json" <<'PY'
import json, sys
p = sys.argv[1]
j = json.load(open(p))
j["points"] = [q for q in j["points"] if q["freq_mhz"] not in (1410, 1380)]
json.dump(j, open(p, "w"))
PY
rm -f "$TMP/cm/fwd_attn.kareus.csv"
expect_exit 2 "frontier of fwd_attn (kareus) has no point at 2 of the job's 18 planning clocks (1410, 1380 MHz)" -- compose --frontiers "$TMP/cm" --out "$TMP/cm/o.csv"
expect_exit 0 "warning: frontier of fwd_attn (kareus) has no point at 2" -- compose --frontiers "$TMP/cm" --out "$TMP/cm/o.csv" --allow-missing-clocks
finish
