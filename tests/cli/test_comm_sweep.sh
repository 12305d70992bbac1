#!/usr/bin/env bash
# test_comm_sweep.sh — `kareus profile --comm-sweep` and `kareus calibrate` on its log (issue 31
# item 4): simulator sweeps made with GPU entries whose comm_clock_exp is 0.5 and 1.25 refit to
# those values within ±0.05; the written entry carries the exponent and a job reads it; resume
# (stopped midway, truncated, torn last line) ends with the same log as an uninterrupted sweep and
# measures nothing twice; a file that is not ours, a log of another job and bad options are
# refused with exit 2 and leave every file unchanged; the GPU path on the mock CUDA library.
source "$(dirname "$0")/lib.sh"

sweep() { "$KAREUS" profile --backend sim --quiet "$@"; }
entry() { # entry FILE EXP: the built-in A100 with comm_clock_exp = EXP
  printf '{"schema":"kareus.gpu","version":1,"name":"a100-sxm4-40gb","base":"a100","params":{"comm_clock_exp":{"value":%s,"source":"test: issue 31 item 4"}}}\n' "$2" > "$1"
}
same() { # same A B WHAT: byte-identical files
  if cmp -s "$1" "$2"; then echo "ok: $3"; else echo "FAIL: $3 ($1 and $2 differ)" >&2; diff "$1" "$2" | head -5 >&2; fails=$((fails + 1)); fi
}

# ---- the fit recovers the exponent the sweep was simulated with --------------------------------
for e in 0.5 1.25; do
  entry "$TMP/g$e.json" $e
  sweep --comm-sweep "$TMP/s$e.jsonl" --sim-gpu "$TMP/g$e.json" > /dev/null || { echo "FAIL: sweep $e" >&2; fails=$((fails + 1)); }
  "$KAREUS" calibrate --data "$TMP/s$e.jsonl" --out "$TMP/fit$e.json" --json > "$TMP/fit$e.out" ||
    { echo "FAIL: calibrate $e" >&2; cat "$TMP/fit$e.out" >&2; fails=$((fails + 1)); }
  python3 - "$TMP/fit$e.out" "$TMP/fit$e.json" "$e" <<'PY' || fails=$((fails + 1))
import json, sys
o, g, want = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), float(sys.argv[3])
got = o["fitted"]["comm_clock_exp"]
assert abs(got - want) <= 0.05, (got, want)
lo, hi = o["comm_clock_exp_range"]
assert lo <= got <= hi and hi - lo < 0.2, (lo, got, hi)
assert o["kind"] == "comm_sweep" and o["points"] == 60 and len(o["groups"]) == 2, o
assert {x["kernel"] for x in o["groups"]} == {"tuned", "nccl"}, o["groups"]
assert abs(g["params"]["comm_clock_exp"]["value"] - got) < 1e-12, g["params"]["comm_clock_exp"]
assert "comm sweep" in g["params"]["comm_clock_exp"]["source"], g["params"]["comm_clock_exp"]
print("ok: the %s sweep refits to comm_clock_exp %.4f (range %.2f..%.2f)" % (want, got, lo, hi))
PY
done
# The entry is a GPU file a job uses; the simulator's comm kernels then match the sweep exactly.
"$KAREUS" job write --out "$TMP/job.json" > /dev/null
python3 - "$TMP/job.json" "$TMP/fit0.5.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); j["gpu"] = {"file": sys.argv[2]}; json.dump(j, open(sys.argv[1], "w"))
PY
expect_exit 0 "time error median 0.00%" -- sim check --data "$TMP/s0.5.jsonl" --gpu "$TMP/fit0.5.json"
expect_exit 0 "10 points: 10 measured now" -- profile --backend sim --job "$TMP/job.json" --comm-sweep "$TMP/j.jsonl" \
  --clocks 1410,900 --ctas 1,2,4,8,16 --kernels tuned --quiet
expect_exit 0 "comm_clock_exp   0.5" -- calibrate --data "$TMP/j.jsonl"
# A CP job: all-reduce, all-gather and reduce-scatter, six kernel x collective groups.
sweep --job llama3.2-3b-cp2tp4-mbs8-s4096 --comm-sweep "$TMP/cp.jsonl" --clocks 1410,1200,1020,900 --ctas 1,2,4,8,16 >/dev/null
expect_exit 0 "120 points in 6 groups" -- calibrate --data "$TMP/cp.jsonl"

# ---- resume --------------------------------------------------------------------------------------
sweep --comm-sweep "$TMP/full.jsonl" > /dev/null
expect_exit 0 "17 measured now, 0 from the log; stopped at --max-points" -- profile --backend sim --quiet \
  --comm-sweep "$TMP/part.jsonl" --max-points 17
expect_exit 0 "60 points: 43 measured now, 17 from the log" -- profile --backend sim --quiet --comm-sweep "$TMP/part.jsonl"
same "$TMP/full.jsonl" "$TMP/part.jsonl" "a sweep stopped after 17 points and rerun ends with the same log"
cp "$TMP/full.jsonl" "$TMP/before.jsonl"
expect_exit 0 "0 measured now, 60 from the log" -- profile --backend sim --quiet --comm-sweep "$TMP/full.jsonl"
same "$TMP/before.jsonl" "$TMP/full.jsonl" "a complete sweep rerun measures nothing and leaves the log unchanged"
head -n 51 "$TMP/full.jsonl" > "$TMP/cut.jsonl"
expect_exit 0 "10 measured now, 50 from the log" -- profile --backend sim --quiet --comm-sweep "$TMP/cut.jsonl"
same "$TMP/full.jsonl" "$TMP/cut.jsonl" "a truncated log rerun ends with the same log"
{ head -n 58 "$TMP/full.jsonl"; sed -n 59p "$TMP/full.jsonl" | head -c 70; } > "$TMP/torn.jsonl"
cp "$TMP/torn.jsonl" "$TMP/torn-copy.jsonl"
out=$("$KAREUS" calibrate --data "$TMP/torn.jsonl" 2>&1)
grep -qF "torn.jsonl:59: skipped a torn last line" <<<"$out" && grep -qF "57 points" <<<"$out" &&
  echo "ok: calibrate skips a torn last line with a warning" ||
  { echo "FAIL: calibrate on a torn log: $out" >&2; fails=$((fails + 1)); }
same "$TMP/torn-copy.jsonl" "$TMP/torn.jsonl" "calibrate leaves a torn log as it is"
expect_exit 0 "torn.jsonl:59: dropped a torn last line" -- profile --backend sim --comm-sweep "$TMP/torn.jsonl" --quiet
same "$TMP/full.jsonl" "$TMP/torn.jsonl" "a log with a torn last line rerun ends with the same log"

# ---- refused, untouched ------------------------------------------------------------------------
printf 'my notes about the sweep\n' > "$TMP/notes.txt"
"$KAREUS" search --partition fwd_mlp --variant sequential --strategy exhaustive --max-evals 2 --out "$TMP/fr" \
  --quiet --log "$TMP/search.jsonl" > /dev/null
for f in notes.txt search.jsonl cp.jsonl; do
  cp "$TMP/$f" "$TMP/$f.orig"
done
expect_exit 2 "notes.txt:1: expected a Kareus comm-sweep log" -- profile --backend sim --comm-sweep "$TMP/notes.txt"
expect_exit 2 "search.jsonl:1: \$.schema: expected \"kareus.commsweep\"" -- profile --backend sim --comm-sweep "$TMP/search.jsonl"
expect_exit 2 "cp.jsonl:1: job: expected the fingerprint of job 'default'" -- profile --backend sim --comm-sweep "$TMP/cp.jsonl"
for f in notes.txt search.jsonl cp.jsonl; do
  same "$TMP/$f.orig" "$TMP/$f" "refused $f left unchanged"
done
expect_exit 2 "--clocks: expected an integer, found 'abc'" -- profile --backend sim --comm-sweep "$TMP/x.jsonl" --clocks 1410,abc
expect_exit 2 "clock: expected 210..1410 MHz" -- profile --backend sim --comm-sweep "$TMP/x.jsonl" --clocks 2000
expect_exit 2 "CTAs: expected 1..107, found 200" -- profile --backend sim --comm-sweep "$TMP/x.jsonl" --ctas 200
expect_exit 2 "--kernels: proxy: the simulator has no single-GPU proxy" -- profile --backend sim --comm-sweep "$TMP/x.jsonl" --kernels proxy
expect_exit 2 "--partition: not with --comm-sweep" -- profile --backend sim --comm-sweep "$TMP/x.jsonl" --partition fwd_attn
expect_exit 2 "--ctas: expected --comm-sweep" -- profile --backend sim --log "$TMP/x.jsonl" --ctas 4
expect_exit 2 "--fix: not with a comm-sweep log" -- calibrate --data "$TMP/full.jsonl" --fix comm_clock_exp=0.5
expect_exit 2 "--base: expected a comm-sweep log" -- calibrate --data "${KR_SOURCE_DIR:?}/tests/data/calibration/a100-attn-tp2/calib.json" --base a100
expect_exit 2 "--base: " -- calibrate --data "$TMP/full.jsonl" --base no-such-gpu
# Four points of one kernel pin nothing (four parameters): exit 1, no entry written.
sweep --comm-sweep "$TMP/four.jsonl" --kernels tuned --clocks 1410,900 --ctas 1,2 > /dev/null
expect_exit 1 "do not pin comm_clock_exp" -- calibrate --data "$TMP/four.jsonl" --out "$TMP/nofit.json"
[ ! -e "$TMP/nofit.json" ] && echo "ok: an unpinned fit writes nothing" || { echo "FAIL: nofit.json written" >&2; fails=$((fails + 1)); }
[ ! -e "$TMP/x.jsonl" ] && echo "ok: refused sweeps created no log" || { echo "FAIL: x.jsonl created" >&2; fails=$((fails + 1)); }

# ---- the GPU path on the mock CUDA library (real time: one point) ------------------------------
mock="${KR_BINARY_DIR:-.}/libkareus_mock_cuda.so"
if [ -f "$mock" ]; then
  KAREUS_CUDA_LIB="$mock" expect_exit 2 "--kernels: tuned: the CUDA runner has no tuned all-reduce kernel" -- \
    profile --control fake --comm-sweep "$TMP/gpu.jsonl" --kernels tuned
  KAREUS_CUDA_LIB="$mock" expect_exit 0 "1 points: 1 measured now" -- profile --control fake:period_s=0.1,power_w=300 \
    --comm-sweep "$TMP/gpu.jsonl" --clocks 1410 --ctas 2 --cooldown-ratio 0 --quiet
  grep -q '"kernel":"proxy".*"ranks":1' "$TMP/gpu.jsonl" && head -1 "$TMP/gpu.jsonl" | grep -q '"backend":"gpu"' &&
    echo "ok: one GPU sweeps the proxy" || { echo "FAIL: gpu sweep log" >&2; cat "$TMP/gpu.jsonl" >&2; fails=$((fails + 1)); }
  cp "$TMP/gpu.jsonl" "$TMP/gpu.orig"
  expect_exit 2 "backend: expected \"sim\", found \"gpu\"" -- profile --backend sim --comm-sweep "$TMP/gpu.jsonl"
  same "$TMP/gpu.orig" "$TMP/gpu.jsonl" "a GPU sweep log reopened for the simulator is left unchanged"
  expect_exit 2 "comm fit: expected at least 4 points at 2 or more clocks, found 1 points at 1 clocks" -- \
    calibrate --data "$TMP/gpu.jsonl"
else
  echo "skip: the GPU path (no $mock)"
fi
finish
