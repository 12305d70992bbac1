#!/usr/bin/env bash
# test_python_example.sh — the Python binding and examples/train_pipeline.py: a two-stage PyTorch
# pipeline on the simulator backend with the plan applied; checks the instruction order and the
# clocks the simulator recorded, plus the binding's errors and Runtime.from_env under `kareus run`.
# Uses Debian's /usr/bin/python3 with python3-torch; skipped (exit 77, with the reason) without it.
# Under the sanitizer build (KAREUS_SANITIZED=1) the ASan/UBSan runtimes are preloaded, since
# an ASan-built libkareus cannot be dlopen'ed into an uninstrumented python otherwise.
set -u
source "$KR_SOURCE_DIR/tests/cli/lib.sh"
PY=/usr/bin/python3
if [ ! -x "$PY" ]; then
  echo "SKIPPED: $PY not found (Debian's python3 with python3-torch runs this test)"
  exit 77
fi
if ! "$PY" -c 'import torch' 2>/dev/null; then
  echo "SKIPPED: PyTorch is not installed for $PY (Debian: apt install python3-torch)"
  exit 77
fi
export KAREUS_LIB="${KR_LIBKAREUS:?KR_LIBKAREUS must point to libkareus.so}"
export PYTHONPATH="$KR_SOURCE_DIR/bindings/python"
if [ "${KAREUS_SANITIZED:-0}" = 1 ]; then
  LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
  export LD_PRELOAD
  export ASAN_OPTIONS=detect_leaks=0  # python's own allocations are not ours to report
fi

check() { # check NAME CMD… : runs CMD, reports ok/FAIL
  local name=$1
  shift
  if "$@" >"$TMP/out" 2>&1; then
    echo "ok: $name"
  else
    echo "FAIL: $name (exit $?):" >&2
    tail -30 "$TMP/out" >&2
    fails=$((fails + 1))
  fi
}

# 1. The example on the simulator, waiting for each clock change: exact clock log.
check "example --verify on sim" "$PY" "$KR_SOURCE_DIR/examples/train_pipeline.py" --verify --steps 3 \
  --json "$TMP/verify.json" --lock-dir "$TMP"
# The test's own reading of what the simulator recorded (independent of the example's checks).
check "simulator clock log = plan clocks" "$PY" - "$TMP/verify.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
for st in r["stages"]:
    clocks = [(f, f) for f in st["plan_clocks"]] * r["steps"]
    want = [c for i, c in enumerate(clocks) if i == 0 or clocks[i - 1] != c] + [(0, 0)]
    got = [tuple(x) for x in st["clock_log"]]
    assert got == want, (st["stage"], got[:8], want[:8])
    assert [tuple(x) for x in st["ran"]] == [tuple(x) for x in st["plan_order"]], st["stage"]
    assert st["status"]["mismatched_steps"] == 0 and st["status"]["mode"] == "control", st["status"]
    assert st["energy"]["available"] and st["energy"]["steps"] == r["steps"], st["energy"]
    assert st["energy"]["per_instruction_quantized"], st["energy"]
    print("stage", st["stage"], "clock log of", len(got), "entries matches the plan")
EOF

# 2. Without waiting: the latest request wins, so the log is a subsequence of the plan's clocks.
check "example on sim (no waiting)" "$PY" "$KR_SOURCE_DIR/examples/train_pipeline.py" --steps 4 --lock-dir "$TMP"
check "example on the fake GPU" "$PY" "$KR_SOURCE_DIR/examples/train_pipeline.py" --steps 2 --verify \
  --backend "fake:period_s=0.1,log=$TMP/fake.log" --lock-dir "$TMP"
if grep -q "set_clock 1 1410 1410 0" "$TMP/fake.log"; then echo "ok: fake log has stage 1's clocks"; else
  echo "FAIL: fake log lacks stage 1's clocks" >&2
  fails=$((fails + 1))
fi

# 3. Binding errors: precise messages from the C library, as KareusError.
check "binding errors" "$PY" - "$TMP" <<'EOF'
import json, os, sys
import kareus
tmp = sys.argv[1]
bad = os.path.join(tmp, "bad.json")
open(bad, "w").write('{"schema": "kareus.plan", "version": 1, "method": "x",\n "job": {"stages": 2, "microbatches": 1},\n "stages": [{"instructions": [{"kind": "forwad", "microbatch": 0, "freq_mhz": 1410}]}]}')
def expect(fn, name, needle):
    try:
        fn()
    except kareus.KareusError as e:
        assert e.name == name and needle in str(e), (e.name, str(e))
        print("raised", e.name, ":", e)
        return
    raise AssertionError("no error for " + needle)
expect(lambda: kareus.Plan(bad), "KR_EMISMATCH", "expected 2 stages")
open(bad, "w").write('{"schema": "kareus.plan", "version": 1, "method": "x",\n "job": {"stages": 1, "microbatches": 1},\n "stages": [{"instructions": [{"kind": "forwad", "microbatch": 0, "freq_mhz": 1410}]}]}')
expect(lambda: kareus.Plan(bad), "KR_EPARSE", "bad.json: $.stages[0].instructions[0].kind")
good = os.path.join(tmp, "good.json")
open(good, "w").write(json.dumps({"schema": "kareus.plan", "version": 1, "method": "x",
    "job": {"name": "t", "stages": 1, "microbatches": 1},
    "stages": [{"stage": 0, "instructions": [{"kind": "forward", "microbatch": 0, "freq_mhz": 1395},
                                             {"kind": "backward", "microbatch": 0, "freq_mhz": 1410}]}]}))
expect(lambda: kareus.Runtime(good, 1, backend="fake"), "KR_ERANGE", "stage: expected 0..0")
expect(lambda: kareus.Runtime(good, 0, backend="fake:step_mhz=30"), "KR_ERANGE", "1395 MHz is not a supported SM clock")
expect(lambda: kareus.Runtime(good, 0, backend="nvml:lib=libkareus-none.so"), "KR_ENOLIB", "libkareus-none.so")
expect(lambda: kareus.Runtime(good, 0, backend="warp"), "KR_EINVAL", "expected nvml, sim or fake")
warnings = []
with kareus.Runtime(good, 0, backend="fake", lock_dir=tmp, on_warning=lambda *w: warnings.append(w)) as rt:
    assert rt.begin("backward", 0) == -7       # out of order: reported, not raised
    rt.end()
    rt.step_end()
    assert warnings and warnings[0][0] == "mismatch", warnings
    assert rt.status()["mismatched_steps"] == 1
    rt.strict = True
    expect(lambda: rt.begin("backward", 0), "KR_EMISMATCH", "expected forward of microbatch 0")
# Frontiers: checked by kr_frontier_read, then read as plain values (JSON and CSV).
fr = {"schema": "kareus.frontier", "version": 1, "job": {"name": "default", "fingerprint": "0123456789abcdef"},
      "key": "fwd_attn", "variant": "kareus", "static_power_w": 85.0, "slots": ["norm_0", "linear_0", "rope_0", "attn_0"],
      "search": {"strategy": "exhaustive", "backend": "sim", "seed": 1, "space_size": 10},
      "points": [{"freq_mhz": 1410, "slot": "rope_0", "sms": 12, "time_s": 0.01, "energy_j": 3.0},
                 {"freq_mhz": 1200, "slot": "norm_0", "sms": 9, "time_s": 0.012, "energy_j": 2.8}]}
path = os.path.join(tmp, "fwd_attn.kareus.json")
json.dump(fr, open(path, "w"))
d = kareus.read_frontier(path)
assert d["key"] == "fwd_attn" and len(d["points"]) == 2, d
csvp = os.path.join(tmp, "fwd_attn.kareus.csv")
open(csvp, "w").write("# kareus.frontier 1\n# job: default\n# fingerprint: 1234567890123456\n# key: fwd_attn\n"
                      "# variant: kareus\n# static_power_w: 85\n# slots: norm_0,linear_0,rope_0,attn_0\n"
                      "# strategy: exhaustive\n# backend: sim\n# seed: 1\n# space_size: 10\n"
                      "freq_mhz,slot,sms,time_s,energy_j,eff_energy_j,time_sd_s,energy_sd_j,pareto_eff,pareto_total,pareto_clock\n"
                      "1410,rope_0,12,0.01,3.0,2.15,0,0,1,1,1\n")
d = kareus.read_frontier(csvp)
assert d["fingerprint"] == "1234567890123456" and d["slots"][2] == "rope_0" and d["points"][0]["sms"] == 12, d
fr["points"][0]["slot"] = "nap_0"
json.dump(fr, open(path, "w"))
expect(lambda: kareus.read_frontier(path), "KR_EPARSE", "$.points[0].slot")
print("ok")
EOF

# 4. Runtime.from_env inside `kareus run`, which restores the clocks afterwards.
"$PY" - "$TMP/plan2.json" <<'EOF'
import json, sys
json.dump({"schema": "kareus.plan", "version": 1, "method": "x", "job": {"name": "t", "stages": 1, "microbatches": 1},
           "stages": [{"stage": 0, "instructions": [{"kind": "forward", "microbatch": 0, "freq_mhz": 1200},
                                                    {"kind": "backward", "microbatch": 0, "freq_mhz": 1005}]}]},
          open(sys.argv[1], "w"))
EOF
check "from_env under kareus run" "$KAREUS" run --plan "$TMP/plan2.json" --stage 0 --lock-dir "$TMP" \
  --backend "fake:log=$TMP/run.log,locked=900-900" -- "$PY" -c '
import kareus
with kareus.Runtime.from_env() as rt:
    for k in ("forward", "backward"):
        with rt.instruction(k, 0):
            rt.sync()
    rt.step_end()
    print(rt.status()["backend"], rt.clock_log())
    assert rt.clock_log() == [(1200, 1200), (1005, 1005)], rt.clock_log()
'
if grep -q "set_clock 0 900 900 0" "$TMP/run.log"; then echo "ok: kareus run restored the lock it found"; else
  echo "FAIL: kareus run did not restore the lock" >&2
  fails=$((fails + 1))
fi

# 5. A plan made by the solver (from a synthetic instruction-options table) drives the example.
"$PY" - "$TMP/options.csv" <<'EOF'
import sys
rows = ["stage,instruction,frequency,time,energy"]
for s in range(2):
    for inst, base in (("forward", 0.010), ("backward", 0.020)):
        for f in range(1410, 1004, -45):
            t = base * (0.4 + 0.6 * 1410 / f)
            rows.append("%d,%s,%d,%.6f,%.6f" % (s, inst, f, t, t * (80 + 250 * (f / 1410) ** 2.5)))
open(sys.argv[1], "w").write("\n".join(rows) + "\n")
EOF
check "kareus solve writes plans" "$KAREUS" solve --options "$TMP/options.csv" --job default \
  --frontier-out "$TMP/frontier.csv" --plans "$TMP/plans" --select 3 --quiet
mid=$(find "$TMP/plans" -name 'plan_*.json' 2>/dev/null | sort | sed -n 2p)
if [ -n "$mid" ]; then
  check "example --verify with the solver's plan $(basename "$mid")" "$PY" "$KR_SOURCE_DIR/examples/train_pipeline.py" \
    --plan "$mid" --verify --steps 2 --json "$TMP/solver.json" --lock-dir "$TMP"
  check "solver plan has several clocks per stage" "$PY" -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert all(len(set(s["plan_clocks"])) > 1 for s in r["stages"]), [set(s["plan_clocks"]) for s in r["stages"]]
' "$TMP/solver.json"
else
  echo "FAIL: kareus solve wrote no plans" >&2
  fails=$((fails + 1))
fi
finish
