#!/usr/bin/env bash
# ci-kareusd.sh — the clock helper and non-root runs of .ci/run (locks, crash recovery, kareusd);
# after the README test command (needs the `build` tree; runs as root, as CI does).
#   1. kareusd on the fake GPU, with the figures printed: a client SIGKILLed mid-plan and the time
#      until the found lock is back; other users/groups refused with a logged reason; out-of-range
#      clocks refused; the daemon's own restart leaves no device locked.
#   2. The runtime tests once as a non-root user (nobody): default lock directory, lock records,
#      signals, hostile lock files — everything the runtime does without privilege.
#   3. The example (examples/train_pipeline.py), the runtime's end-to-end flows (Runtime.from_env
#      under `kareus run`, a SIGKILLed command, a killed wrapper) and the runtime's helper_* tests
#      once as nobody through kareusd, chosen automatically (backend auto) or named.
# Uses only util-linux's setpriv/runuser (Debian: essential) and the user nobody.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${KR_BUILD_DIR:-build}
if ! setpriv --reuid=nobody --regid=nogroup --clear-groups -- test -x "$B/test_runtime" -a -r tests/test_runtime.c; then
  echo "ci: SKIPPED the runs as nobody: $PWD/$B is out of nobody's reach (a parent directory is private)" >&2
  "$B/test_kareusd"
  exit 0
fi
echo "ci: kareusd on the fake GPU"
"$B/test_kareusd"
echo "ci: runtime tests as nobody"
tmp=$(mktemp -d /tmp/kr-nobody.XXXXXX)
chown nobody "$tmp"
trap 'rm -rf "$tmp"' EXIT
for t in $(grep -o 'cmocka_unit_test([a-z_0-9]*' tests/test_runtime.c | sed 's/.*(//'); do
  rc=0
  setpriv --reuid=nobody --regid=nogroup --clear-groups -- env KR_TEST_TMPDIR="$tmp" "$B/test_runtime" "$t" \
    >"$tmp/out" 2>&1 || rc=$?
  case $rc in
    0) echo "ok: runtime.$t as nobody" ;;
    77) echo "skipped: runtime.$t ($(grep -m1 SKIPPED "$tmp/out")) — step 3 runs it through kareusd" ;;
    *) cat "$tmp/out"; echo "ci: runtime.$t failed as nobody" >&2; exit 1 ;;
  esac
done
echo "ci: the example and the runtime flows as nobody through kareusd"
KAREUS="$PWD/$B/kareus" KR_SOURCE_DIR="$PWD" KR_LIBKAREUS="$PWD/$B/libkareus.so" bash tests/cli/test_kareusd_cli.sh
echo "ci: issue 14 steps passed"
