#!/usr/bin/env bash
# test_runtime_cli.sh — `kareus gpu info|reset` and `kareus run`: messages and exit statuses
# without a GPU, the fake GPU's view, the per-GPU lock, and clock restoration after the command
# exits normally, is SIGKILLed, or the wrapper itself is sent SIGTERM.
set -u
source "$KR_SOURCE_DIR/tests/cli/lib.sh"

# expect_line DESC PATTERN FILE: FILE has a line matching the fixed string PATTERN.
expect_line() {
  if grep -qF -- "$2" "$3"; then
    echo "ok: $1"
  else
    echo "FAIL: $1 (no '$2' in $3):" >&2
    cat "$3" >&2
    fails=$((fails + 1))
  fi
}

# Holds the fake GPU's lock in a background process ($holder) until killed.
hold_lock() {
  (exec 9>"$TMP/kareus-gpu-GPU-fake-0.lock" && flock 9 && exec sleep 30) &
  holder=$!
  sleep 0.3
}

# ---- gpu info / reset ----------------------------------------------------------------------
if "$KAREUS" gpu info >"$TMP/info.txt" 2>&1; then
  echo "ok: kareus gpu info found a GPU here:" && head -3 "$TMP/info.txt"
else
  expect_exit 2 "cannot load the NVIDIA management library" -- gpu info
fi
expect_exit 0 "SM clocks       1410..210 MHz step 15 (81 clocks)" -- gpu info --backend fake:devices=2
expect_exit 0 "device 1: Kareus fake GPU" -- gpu info --backend fake:devices=2
expect_exit 2 "--device: expected 0..1 (2 devices), found 5" -- gpu info --backend fake:devices=2 --device 5
expect_exit 2 "unknown key 'bogus' for fake" -- gpu info --backend fake:bogus=1
expect_exit 2 "unknown subcommand 'frob'" -- gpu frob
expect_exit 2 "unknown or incomplete option" -- gpu info --nope
"$KAREUS" gpu info --backend fake:devices=2 --json >"$TMP/info.json"
if python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["backend"] == "fake" and len(d["devices"]) == 2, d
g = d["devices"][1]
assert g["uuid"] == "GPU-fake-1" and g["sm_clocks_mhz"][0] == 1410 and len(g["sm_clocks_mhz"]) == 81, g
assert g["power_w"] == 250 and g["energy_j"] is not None, g
' "$TMP/info.json"; then echo "ok: gpu info --json"; else echo "FAIL: gpu info --json" >&2; fails=$((fails + 1)); fi

expect_exit 0 "device 0 (Kareus fake GPU): SM clock lock removed" -- gpu reset --backend "fake:log=$TMP/reset.log" --lock-dir "$TMP"
expect_line "reset logged" "reset_clock 0 0 0 0" "$TMP/reset.log"
expect_exit 1 "no permission" -- gpu reset --backend fake:perm_ops=writes --lock-dir "$TMP"
# A GPU that a running Kareus process controls is left alone unless --force.
hold_lock  # stands for a running Kareus process
expect_exit 1 "is controlled by another Kareus process" -- gpu reset --backend fake --lock-dir "$TMP"
expect_exit 0 "SM clock lock removed" -- gpu reset --backend fake --lock-dir "$TMP" --force
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null

# ---- kareus run ----------------------------------------------------------------------------
cat >"$TMP/plan.json" <<'EOF'
{"schema": "kareus.plan", "version": 1, "method": "demo",
 "job": {"name": "cli-test", "stages": 2, "microbatches": 2, "schedule": "1f1b"},
 "stages": [
  {"stage": 0, "instructions": [
    {"kind": "forward", "microbatch": 0, "freq_mhz": 1410},
    {"kind": "forward", "microbatch": 1, "freq_mhz": 1395},
    {"kind": "backward", "microbatch": 0, "freq_mhz": 1200},
    {"kind": "backward", "microbatch": 1, "freq_mhz": 1170}]},
  {"stage": 1, "instructions": [
    {"kind": "forward", "microbatch": 0, "freq_mhz": 1305},
    {"kind": "backward", "microbatch": 0, "freq_mhz": 1200},
    {"kind": "forward", "microbatch": 1, "freq_mhz": 1305},
    {"kind": "backward", "microbatch": 1, "freq_mhz": 1200}]}]}
EOF
F="fake:log=$TMP/run.log,locked=1005-1200"
expect_exit 2 "--plan FILE is required" -- run -- true
expect_exit 2 "expected '-- CMD [ARGS…]'" -- run --plan "$TMP/plan.json"
expect_exit 2 "plan.json: stage: expected 0..1 (the plan has 2 stages), found 3" -- run --plan "$TMP/plan.json" --stage 3 -- true
expect_exit 2 "--restore-lock: expected MIN,MAX" -- run --plan "$TMP/plan.json" --restore-lock 9 -- true
if ! "$KAREUS" gpu info >/dev/null 2>&1; then
  expect_exit 2 "cannot guarantee that clocks are restored" -- run --plan "$TMP/plan.json" -- true
fi
# The command sees the plan; its exit status comes back; the lock found before is restored.
expect_exit 3 "clocks restored to the lock [1005, 1200] MHz" -- run --plan "$TMP/plan.json" --stage 1 --backend "$F" \
  --lock-dir "$TMP" -- sh -c "env | grep '^KAREUS_' | sort > '$TMP/env.txt'; exit 3"
for v in "KAREUS_PLAN=$TMP/plan.json" KAREUS_STAGE=1 KAREUS_DEVICE=0 "KAREUS_BACKEND=$F" "KAREUS_LOCK_DIR=$TMP"; do
  expect_line "child sees $v" "$v" "$TMP/env.txt"
done
# SIGKILL cannot be caught inside the job: the wrapper restores anyway.
: >"$TMP/run.log"
expect_exit 137 "ended by signal 9" -- run --plan "$TMP/plan.json" --backend "$F" --lock-dir "$TMP" -- sh -c 'kill -9 $$'
tail -1 "$TMP/run.log" >"$TMP/last.txt"
expect_line "restored after SIGKILL" "set_clock 0 1005 1200 0" "$TMP/last.txt"
# SIGTERM to the wrapper: forwarded to the command, then the clocks are restored.
: >"$TMP/run.log"
"$KAREUS" run --plan "$TMP/plan.json" --backend "$F" --lock-dir "$TMP" -- sh -c "echo started > '$TMP/started'; exec sleep 30" \
  >"$TMP/term.out" 2>&1 &
wrapper=$!
for _ in $(seq 50); do [ -e "$TMP/started" ] && break; sleep 0.1; done
sleep 0.2
kill -TERM "$wrapper"
wait "$wrapper"
rc=$?
if [ "$rc" -eq 143 ] && grep -q "ended by signal 15" "$TMP/term.out" && tail -1 "$TMP/run.log" | grep -q "set_clock 0 1005 1200 0"; then
  echo "ok: SIGTERM to the wrapper reaches the command and the clocks are restored"
else
  echo "FAIL: wrapper SIGTERM (exit $rc)" >&2
  cat "$TMP/term.out" "$TMP/run.log" >&2
  fails=$((fails + 1))
fi
# A GPU held by another Kareus process: refused, and after --force the wrapper does not restore
# clocks it does not own.
hold_lock  # stands for a running Kareus process
expect_exit 1 "is controlled by another Kareus process" -- run --plan "$TMP/plan.json" --backend fake --lock-dir "$TMP" -- true
expect_exit 1 "not restoring its clocks" -- run --plan "$TMP/plan.json" --backend fake --lock-dir "$TMP" --force -- true
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
# The simulator needs nothing restored.
expect_exit 0 "" -- run --plan "$TMP/plan.json" --backend sim -- true
expect_exit 127 "cannot run /no/such/cmd" -- run --plan "$TMP/plan.json" --backend sim -- /no/such/cmd
finish
