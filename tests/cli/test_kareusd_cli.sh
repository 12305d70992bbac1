#!/usr/bin/env bash
# test_kareusd_cli.sh — crash recovery and kareusd end to end, on the fake GPU whose clocks live
# in a state file (so that every process sees the same "GPU"):
#   1. without the helper (root): a runtime SIGKILLed on device 1 leaves a lock record;
#      `kareus gpu restore` puts back the clocks it found, and `kareus run --device 0` restores
#      device 1 too when its command's runtime is SIGKILLed there;
#   2. through the helper as a non-root user (nobody): `kareus gpu info`, the example
#      (examples/train_pipeline.py, backend auto → kareusd), Runtime.from_env under `kareus run`,
#      and a SIGKILLed command or killed wrapper — the daemon restores the found clocks each time;
#      a user the daemon does not admit is refused with a logged reason; the runtime's helper_*
#      tests (test_runtime.c) through the daemon.
# Needs root (to start the daemon and change users) and runuser; skipped (77) otherwise.
set -u
source "$KR_SOURCE_DIR/tests/cli/lib.sh"
if [ "$(id -u)" != 0 ] || ! command -v runuser >/dev/null || ! command -v setpriv >/dev/null ||
  ! getent passwd nobody >/dev/null || ! getent group nogroup >/dev/null; then
  echo "SKIPPED: needs root, runuser, setpriv, the user nobody and group nogroup (CI runs as root)"
  exit 77
fi
# The user nobody runs binaries and the example from this tree: a checkout under a private
# directory (mktemp -d is 0700) is out of its reach, which says nothing about kareusd.
if ! setpriv --reuid=nobody --regid=nogroup --clear-groups -- test -x "$KAREUS" -a -r "$KR_SOURCE_DIR/examples/train_pipeline.py"; then
  echo "SKIPPED: the user nobody cannot reach $KAREUS or $KR_SOURCE_DIR (a parent directory is private)"
  exit 77
fi
KAREUSD="$(dirname "$KAREUS")/kareusd"
PY=/usr/bin/python3
have_py=1
"$PY" -c 'import torch' 2>/dev/null || have_py=0
export KAREUS_LIB="${KR_LIBKAREUS:?}" PYTHONPATH="$KR_SOURCE_DIR/bindings/python"
if [ "${KAREUS_SANITIZED:-0}" = 1 ]; then
  LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
  export LD_PRELOAD ASAN_OPTIONS=detect_leaks=0
fi
chmod 755 "$TMP"
ST="$TMP/gpu.state"
# A UUID of this run's own: concurrent runs never share a lock file (nobody's default lock dir).
FAKE="fake:devices=2,locked=1005-1200,state=$ST,uuid=GPU-t$$"

check() { # check NAME CMD…
  local name=$1
  shift
  if "$@" >"$TMP/out" 2>&1; then echo "ok: $name"; else
    echo "FAIL: $name (exit $?):" >&2
    tail -30 "$TMP/out" >&2
    fails=$((fails + 1))
  fi
}
# lock_of DEV: "MIN MAX" of the fake device's lock now.
lock_of() { awk -v d="$1" '$1 == d {print $2, $3}' "$ST"; }
expect_lock() { # expect_lock DESC DEV "MIN MAX"
  local got
  got=$(lock_of "$2")
  if [ "$got" = "$3" ]; then echo "ok: $1 ($got)"; else
    echo "FAIL: $1: device $2 locked at '$got', expected '$3'" >&2
    fails=$((fails + 1))
  fi
}
# wait_lock DEV "MIN MAX" ["MIN MAX"…]: until the device has one of these locks, up to 60 s (a
# loaded CI machine, a sanitizer build); the daemon itself restores within milliseconds.
wait_lock() {
  local dev=$1 cur
  shift
  for _ in $(seq 6000); do
    cur=$(lock_of "$dev")
    for want in "$@"; do [ "$cur" = "$want" ] && return 0; done
    sleep 0.01
  done
  return 1
}

cat >"$TMP/plan.json" <<'EOF'
{"schema": "kareus.plan", "version": 1, "method": "x", "job": {"name": "t", "stages": 1, "microbatches": 1},
 "stages": [{"stage": 0, "instructions": [{"kind": "forward", "microbatch": 0, "freq_mhz": 900},
                                          {"kind": "backward", "microbatch": 0, "freq_mhz": 1305}]}]}
EOF
chmod 644 "$TMP/plan.json"
# A job that runs the plan forever on KAREUS_DEVICE (or $1) until killed.
cat >"$TMP/job.py" <<'EOF'
import os, sys, kareus
dev = int(sys.argv[1]) if len(sys.argv) > 1 else 0
with kareus.Runtime.from_env(device=dev) as rt:
    while True:
        for k in ("forward", "backward"):
            with rt.instruction(k, 0):
                rt.sync()
        rt.step_end()
EOF
chmod 644 "$TMP/job.py"

# ---- 1. without the helper ----------------------------------------------------------------------
if [ "$have_py" = 1 ]; then
  "$KAREUS" gpu info --backend "$FAKE" >/dev/null  # creates the state file
  mkdir -p "$TMP/locks"
  KAREUS_PLAN="$TMP/plan.json" KAREUS_STAGE=0 KAREUS_BACKEND="$FAKE" KAREUS_LOCK_DIR="$TMP/locks" \
    "$PY" "$TMP/job.py" 1 >/dev/null 2>&1 &
  job=$!
  jobs_started="$job"
  wait_lock 1 "900 900" "1305 1305"
  kill -9 "$job"; wait "$job" 2>/dev/null
  if [ "$(lock_of 1)" != "1005 1200" ]; then echo "ok: SIGKILL left device 1 at a plan clock ($(lock_of 1))"; else
    echo "FAIL: device 1 not at a plan clock after SIGKILL" >&2; fails=$((fails + 1)); fi
  grep -q "state held" "$TMP/locks/kareus-gpu-GPU-t$$-1.lock" && echo "ok: lock record says held" ||
    { echo "FAIL: lock record" >&2; fails=$((fails + 1)); }
  expect_exit 0 "device 1 (Kareus fake GPU): restored the lock [1005, 1200] MHz found by pid $job" -- \
    gpu restore --backend "$FAKE" --lock-dir "$TMP/locks"
  expect_lock "gpu restore put back the found lock" 1 "1005 1200"
  expect_exit 0 "device 0: nothing to restore" -- gpu restore --backend "$FAKE" --lock-dir "$TMP/locks"
  # kareus run restores a device its command's runtime left changed, though --device names another.
  expect_exit 137 "kareus run: device 1 (Kareus fake GPU): restored the lock [1005, 1200] MHz" -- \
    run --plan "$TMP/plan.json" --stage 0 --device 0 --backend "$FAKE" --lock-dir "$TMP/locks" -- \
    "$PY" -c "
import os, signal, sys, kareus
rt = kareus.Runtime.from_env(device=1)
rt.begin('forward', 0); rt.sync()
os.kill(os.getpid(), signal.SIGKILL)"
  expect_lock "kareus run restored device 1" 1 "1005 1200"
fi

# ---- 2. through the helper, as nobody ----------------------------------------------------------------
SOCK="$TMP/kareusd.sock"
"$KAREUSD" --socket "$SOCK" --backend "$FAKE,log=$TMP/calls.log" --lock-dir "$TMP" --users nobody \
  --clock-min 600 --clock-max 1410 2>"$TMP/kareusd.log" &
daemon=$!
jobs_started=""
trap 'kill $daemon $jobs_started 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 200); do [ -S "$SOCK" ] && break; sleep 0.02; done
# setpriv and env exec (runuser forks), so $! of a background "${NOBODY[@]}" CMD is CMD's pid.
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups -- env KAREUSD_SOCKET="$SOCK" KAREUS_LIB="$KAREUS_LIB"
  PYTHONPATH="$PYTHONPATH" ${LD_PRELOAD:+LD_PRELOAD="$LD_PRELOAD"} ${ASAN_OPTIONS:+ASAN_OPTIONS="$ASAN_OPTIONS"})
as_nobody() { "${NOBODY[@]}" "$@"; }
check "gpu info as nobody goes through kareusd" as_nobody "$KAREUS" gpu info
grep -q "backend kareusd: 2 devices" "$TMP/out" && echo "ok: auto chose kareusd" ||
  { echo "FAIL: auto did not choose kareusd:" >&2; cat "$TMP/out" >&2; fails=$((fails + 1)); }
if runuser -u daemon -- env KAREUSD_SOCKET="$SOCK" "$KAREUS" gpu info --backend "kareusd:$SOCK" >"$TMP/out" 2>&1; then
  echo "FAIL: user daemon was admitted" >&2; fails=$((fails + 1))
else
  grep -q "refused by kareusd: uid 1 is not root and not on the users list" "$TMP/out" &&
    grep -q "refused client pid .* uid 1 " "$TMP/kareusd.log" && echo "ok: user daemon refused, reason logged" ||
    { echo "FAIL: refusal message/log" >&2; cat "$TMP/out" "$TMP/kareusd.log" >&2; fails=$((fails + 1)); }
fi
if [ "$have_py" = 1 ]; then
  check "the example as nobody through kareusd" as_nobody "$PY" "$KR_SOURCE_DIR/examples/train_pipeline.py" \
    --backend auto --steps 2 --verify
  for d in 0 1; do
    if grep -qE "^[0-9]+ set_clock $d (1410|1350|1305|1200) " "$TMP/calls.log"; then
      echo "ok: the daemon applied plan clocks on device $d"
    else echo "FAIL: no plan clock on device $d in the daemon's fake log" >&2; fails=$((fails + 1)); fi
    wait_lock $d "1005 1200"; expect_lock "device $d restored after the example" $d "1005 1200"
  done
  check "from_env under kareus run as nobody" as_nobody "$KAREUS" run --plan "$TMP/plan.json" --stage 0 \
    --device all -- "$PY" -c "
import kareus
with kareus.Runtime.from_env() as rt:
    assert rt.status()['backend'] == 'kareusd', rt.status()
    for k in ('forward', 'backward'):
        with rt.instruction(k, 0):
            rt.sync()
    rt.step_end()"
  expect_lock "restored after the run" 0 "1005 1200"
  # A SIGKILLed command, then a killed wrapper with its command: the daemon restores both times.
  for victim in command wrapper; do
    "${NOBODY[@]}" "$KAREUS" run --plan "$TMP/plan.json" --stage 0 -- "$PY" "$TMP/job.py" >"$TMP/run.out" 2>&1 &
    wrapper=$!
    jobs_started="$jobs_started $wrapper"
    wait_lock 0 "900 900" "1305 1305"
    # the command, the wrapper's only child (read from /proc by a builtin: no tool under LD_PRELOAD)
    read -r job _ <"/proc/$wrapper/task/$wrapper/children"
    jobs_started="$jobs_started $job"
    # the wrapper first (its command then runs on, at plan clocks), then the command itself
    [ "$victim" = wrapper ] && kill -9 "$wrapper"
    kill -9 "$job"
    t0=$(date +%s%N)
    if wait_lock 0 "1005 1200"; then
      echo "ok: killed $victim: found lock restored by kareusd after $(( ($(date +%s%N) - t0) / 1000 )) us"
    else echo "FAIL: killed $victim: device 0 left at $(lock_of 0)" >&2; fails=$((fails + 1)); fi
    wait "$wrapper" 2>/dev/null
  done
  grep -q "client disconnected (pid .* uid 65534): restored the lock \[1005, 1200\]" "$TMP/kareusd.log" &&
    echo "ok: the daemon logged the restores" || { echo "FAIL: daemon log" >&2; fails=$((fails + 1)); }
fi
# The runtime's own tests through the helper, as nobody (test_runtime.c, helper_*): the plan
# applied and the found lock back at close, a job dead by SIGTERM, SIGHUP, SIGKILL or _exit
# restored (by its handler or by the daemon), a clock outside the daemon's range refused.
TEST_RUNTIME="$(dirname "$KAREUS")/test_runtime"
mkdir -p "$TMP/rt" && chown nobody "$TMP/rt"
for t in helper_applies_plan_and_restores helper_restores_after_any_death helper_refuses_clocks_outside_its_range; do
  check "runtime.$t as nobody through kareusd" as_nobody KR_TEST_HELPER="kareusd:$SOCK" KR_TEST_HELPER_STATE="$ST" \
    KR_TEST_TMPDIR="$TMP/rt" "$TEST_RUNTIME" "$t"
  grep '^helper: ' "$TMP/out" | sed 's/^/    /'
done
expect_lock "nothing left locked after the runtime tests" 0 "1005 1200"
kill "$daemon"; wait "$daemon"
expect_lock "nothing left locked after the daemon stopped" 0 "1005 1200"
finish
