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

# check_doc_table DOC SECTION: the block of DOC between <!-- BEGIN kareus SECTION --> and
# <!-- END kareus SECTION --> is what `kareus SECTION` prints (scripts/regen-doc-tables.sh).
check_doc_table() {
  local doc=$1 section=$2
  sed -n "/<!-- BEGIN kareus $section -->/,/<!-- END kareus $section -->/p" "$doc" | sed '1d;$d' > "$TMP/doc.md"
  # shellcheck disable=SC2086
  "$KAREUS" $section > "$TMP/now.md"
  if ! diff -u "$TMP/doc.md" "$TMP/now.md" > "$TMP/diff.txt"; then
    echo "FAIL: $doc is out of date for 'kareus $section'; run scripts/regen-doc-tables.sh:" >&2
    head -20 "$TMP/diff.txt" >&2
    fails=$((fails + 1))
  else
    echo "ok: $doc matches 'kareus $section'"
  fi
}
