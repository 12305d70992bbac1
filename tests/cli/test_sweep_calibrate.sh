#!/usr/bin/env bash
# test_sweep_calibrate.sh — `kareus partition sweep` (the best CTAs and slot per clock and plane,
# the overlap's cost to each stream) and `kareus calibrate --fix / --profile` (a fit with a
# constant held, the profile of the fit over one constant): normal use, JSON, and bad values
# (exit 2, precise errors).
source "$(dirname "$0")/lib.sh"

CP=llama3.2-3b-cp2tp4-mbs8-s4096
CALIB="${KR_SOURCE_DIR:?}/tests/data/calibration/a100-attn-tp2/calib.json"

# The sweep: every clock of the planning range, the NCCL default beside the grid of both kernels, the
# overlap's cost at the top clock and at 1020 MHz by default.
expect_exit 0 "fwd_attn: allreduce of 100.66 MB over tp/8; grid 2 kernel(s) x 10 CTA counts x 4 slots" -- partition sweep
expect_exit 0 "overlap at 1020 MHz: NCCL 24 CTAs: compute +" -- partition sweep --partition bwd_mlp
expect_exit 0 "overlap at 1200 MHz" -- partition sweep --partition fwd_mlp --effects-at 1200
expect_exit 0 "bwd_qkv_rs: reducescatter" -- partition sweep --job $CP
"$KAREUS" partition sweep --partition fwd_attn --json > "$TMP/sweep.json" || { echo "FAIL: sweep --json" >&2; fails=$((fails + 1)); }
python3 - "$TMP/sweep.json" <<'PY' || fails=$((fails + 1))
import json, sys
o = json.load(open(sys.argv[1]))
p = o["partitions"]
assert len(p) == 1 and p[0]["partition"] == "fwd_attn", p
rows = p[0]["clocks"]
assert [r["freq_mhz"] for r in rows] == list(range(1410, 899, -30)), rows
for r in rows:
    f, e, t, b = r["fastest"], r["least_effective_energy"], r["least_energy"], r["nccl_default"]
    # The fastest is the fastest and the least-energy points are least on their planes.
    assert f["time_s"] <= e["time_s"] and f["time_s"] <= t["time_s"], r
    assert e["effective_energy_j"] <= f["effective_energy_j"] and t["energy_j"] <= f["energy_j"], r
    assert b["sms"] == 24 and b["slot"] == "norm_0" and b["kernel"] == "nccl", b
    # The space holds the baseline's execution: its best is never slower, nor dearer on either plane.
    assert f["time_s"] <= b["time_s"] * (1 + 1e-12) and t["energy_j"] <= b["energy_j"] * (1 + 1e-12), r
    assert e["effective_energy_j"] <= b["effective_energy_j"] + 1e-12, r
    assert f["kernel"] in ("tuned", "nccl"), f
eff = [r for r in rows if "effects_nccl_default" in r]
assert [r["freq_mhz"] for r in eff] == [1410, 1020], eff
for r in eff:
    for k in ("effects_nccl_default", "effects_fastest"):
        x = r[k]
        assert x["compute_s"] >= x["compute_alone_s"] and x["comm_s"] >= x["comm_alone_s"], x
        assert 0 < x["compute_slowdown"] < 1 and 0 <= x["hidden"] <= 1, x
print("ok: sweep --json holds what it says")
PY
expect_exit 2 "--partition: expected a layer partition of job 'default' with a collective, found 'embed_fwd'" -- \
  partition sweep --partition embed_fwd
expect_exit 2 "--effects-at: expected planning clocks (900..1410 MHz), found 1400" -- partition sweep --effects-at 1410,1400
expect_exit 2 "--effects-at: expected an integer, found 'x'" -- partition sweep --effects-at x
expect_exit 2 "unknown subcommand 'swep'" -- partition swep

# calibrate: a constant held keeps its value; the profile reports the stage's rows and ranges.
expect_exit 0 "comm_clock_exp   0.5          (held; the entry has" -- calibrate --data "$CALIB" --fix comm_clock_exp=0.5
expect_exit 0 "within 10 % of the least stage RMS:" -- \
  calibrate --data "$CALIB" --fold all --profile comm_clock_exp=0.6:1.0:0.2
expect_exit 0 "on the 398 overlapped rows" -- calibrate --data "$CALIB" --profile comm_lat_slow=1:3:1
"$KAREUS" calibrate --data "$CALIB" --fold all --profile comm_clock_exp=0:1.5:0.25 --json > "$TMP/prof.json" ||
  { echo "FAIL: --profile --json" >&2; fails=$((fails + 1)); }
python3 - "$TMP/prof.json" <<'PY' || fails=$((fails + 1))
import json, sys
o = json.load(open(sys.argv[1]))
assert o["constant"] == "comm_clock_exp" and o["stage_rows"] == "sequential" and o["stage_row_count"] == 80, o
v = [p["value"] for p in o["profile"]]
assert v == [0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5], v
lo, hi = o["range_within_10pct"]
best = min(o["profile"], key=lambda p: p["rms_stage"])["value"]
assert lo <= best <= hi and o["range_lr95_independent"][0] >= lo and o["range_lr95_independent"][1] <= hi, o
print("ok: --profile --json: least at", best, "range", lo, hi)
PY
expect_exit 2 "--fix: expected NAME one of v_max, attn_eff" -- calibrate --data "$CALIB" --fix sm_count=3
expect_exit 2 "--fix: expected NAME=VALUE" -- calibrate --data "$CALIB" --fix comm_clock_exp
expect_exit 2 "--fix: expected NAME=VALUE" -- calibrate --data "$CALIB" --fix comm_clock_exp=fast
expect_exit 2 "--profile: expected NAME=LO:HI:STEP" -- calibrate --data "$CALIB" --profile comm_clock_exp=1:0:0.1
expect_exit 2 "--profile: expected NAME=LO:HI:STEP" -- calibrate --data "$CALIB" --profile comm_clock_exp=0:1:0
expect_exit 2 "--profile: expected NAME=LO:HI:STEP" -- calibrate --data "$CALIB" --profile gemm_eff=0.5:0.9:0.1
finish
