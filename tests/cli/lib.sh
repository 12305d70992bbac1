# lib.sh — helpers for the end-to-end CLI tests (sourced by tests/cli/test_*.sh).
#   expect_exit CODE NEEDLE -- ARGS...   runs $KAREUS ARGS, checks the exit status and that
#                                        stderr+stdout contain NEEDLE
set -u
: "${KAREUS:?KAREUS must point to the kareus binary}"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kareus-cli.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fails=0

expect_exit() {
  local code=$1 needle=$2
  shift 2
  [ "$1" = "--" ] && shift
  local out rc
  out=$("$KAREUS" "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$code" ] || ! grep -qF -- "$needle" <<<"$out"; then
    echo "FAIL: kareus $* -> exit $rc (expected $code); output:" >&2
    echo "$out" | head -20 >&2
    echo "  (expected to contain: $needle)" >&2
    fails=$((fails + 1))
  else
    echo "ok: kareus $* -> $rc"
  fi
}

finish() {
  if [ "$fails" -gt 0 ]; then
    echo "$fails case(s) failed" >&2
    exit 1
  fi
  exit 0
}
