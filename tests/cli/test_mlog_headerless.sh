#!/usr/bin/env bash
# test_mlog_headerless.sh — measurement logs written before the header line existed
# (tests/data/mlog/headerless.jsonl): read with one warning, new lines appended without a header,
# the old lines left as they were; torn last line and duplicates recovered as in any log; foreign
# files (the artifact's lines, a file of other JSON, another job's old log) still refused with
# exit 2 and left byte-identical.
set -u
source "$KR_SOURCE_DIR/tests/cli/lib.sh"
OLD="$KR_SOURCE_DIR/tests/data/mlog/headerless.jsonl"
CP="$KR_SOURCE_DIR/examples/data/tiny_llama_tp2_pp2.json"
SEARCH=(search --partition fwd_attn --strategy exhaustive --json --quiet)
WARN="without the header line (written before Kareus logs had one)"

# The fixture names the default job by its fingerprint as it was when the lines were written; the
# fingerprint covers the GPU's simulator constants, which later calibrations change. The test
# stands in today's fingerprint (read from a fresh log's header) so that it tests the format, and
# takes the grid's size from the same fresh search.
"$KAREUS" "${SEARCH[@]}" --log "$TMP/fresh.jsonl" --out "$TMP/out-fresh" >/dev/null 2>&1
FP=$(head -1 "$TMP/fresh.jsonl" | sed -n 's/.*"job":"\([0-9a-f]*\)".*/\1/p')
TOTAL=$(($(wc -l <"$TMP/fresh.jsonl") - 1))
NEW=$((TOTAL - 12))
[ -n "$FP" ] && [ "$TOTAL" -gt 12 ] || { echo "FAIL: no fresh log to read the fingerprint from" >&2; exit 1; }
sed "s/\"job\":\"[0-9a-f]*\"/\"job\":\"$FP\"/" "$OLD" >"$TMP/headerless.jsonl"
OLD="$TMP/headerless.jsonl"

# search_ok NAME LOG NEEDLE... : kareus search on LOG exits 0 with the old-log warning once on
# stderr, and each NEEDLE in stdout+stderr; the log still starts with the old lines, unchanged,
# and has no header line.
search_ok() {
  local name=$1 log=$2
  shift 2
  local rc n
  "$KAREUS" "${SEARCH[@]}" --log "$log" --out "$TMP/out-$name" >"$TMP/stdout" 2>"$TMP/stderr"
  rc=$?
  n=$(grep -c -- "$WARN" "$TMP/stderr")
  local bad=""
  [ "$rc" = 0 ] || bad="exit $rc"
  [ "$n" = 1 ] || bad="$bad; the old-log warning $n times on stderr (expected once)"
  grep -q '"schema"' "$log" && bad="$bad; a header line was written"
  cmp -s <(head -c "$(stat -c %s "$OLD")" "$log") "$OLD" || bad="$bad; the old lines changed"
  for needle in "$@"; do
    grep -qF -- "$needle" "$TMP/stdout" "$TMP/stderr" || bad="$bad; no '$needle'"
  done
  if [ -n "$bad" ]; then
    echo "FAIL: $name: ${bad#; }" >&2
    cat "$TMP/stderr" >&2
    fails=$((fails + 1))
  else
    echo "ok: $name"
  fi
}

# 1. An old log is read (its 12 measurements not measured again) and appended to.
cp "$OLD" "$TMP/old.jsonl"
search_ok "old log read with one warning, appended without a header" "$TMP/old.jsonl" "\"measured_now\": $NEW"
lines=$(wc -l <"$TMP/old.jsonl")
[ "$lines" = "$TOTAL" ] && echo "ok: 12 old + $NEW new lines" || { echo "FAIL: $lines lines, expected $TOTAL" >&2; fails=$((fails + 1)); }
# ... and stays recognised after the append: nothing measured again.
search_ok "appended old log read again" "$TMP/old.jsonl" '"measured_now": 0'

# 2. A torn last line in an old log is dropped (and only it).
{ cat "$OLD"; printf '{"freq":1410,"overlap_start":"lin'; } >"$TMP/torn.jsonl"
search_ok "torn last line of an old log dropped" "$TMP/torn.jsonl" "torn.jsonl:13: dropped a torn last line" \
  "\"measured_now\": $NEW"
if grep -q '"overlap_start":"lin$' "$TMP/torn.jsonl"; then echo "FAIL: the torn line is still there" >&2; fails=$((fails + 1)); fi

# 3. Duplicates in an old log: the first kept, one warning line naming them.
{ cat "$OLD"; head -2 "$OLD"; } >"$TMP/dup.jsonl"
search_ok "duplicates in an old log" "$TMP/dup.jsonl" "dup.jsonl: 2 duplicate measurements (first kept), e.g. line 13" \
  "\"measured_now\": $NEW"

# 4. Foreign files are refused untouched: the artifact's lines (no key, no job), other JSON, and
#    an old log of another job.
sed 's/,"key":.*$/}/' "$OLD" >"$TMP/artifact.jsonl"
printf '{"key":"fwd_attn","job":"x","note":"not a measurement"}\nmore notes\n' >"$TMP/notes.jsonl"
for f in artifact notes; do cp "$TMP/$f.jsonl" "$TMP/$f.orig"; done
expect_exit 2 "artifact.jsonl:1: expected a Kareus measurement log" -- "${SEARCH[@]}" --log "$TMP/artifact.jsonl" --out "$TMP/e1"
expect_exit 2 "notes.jsonl:1: \$.note: unknown field" -- "${SEARCH[@]}" --log "$TMP/notes.jsonl" --out "$TMP/e2"
cp "$OLD" "$TMP/other.orig"
cp "$OLD" "$TMP/other.jsonl"
expect_exit 2 "other.jsonl:1: \$.job: expected the fingerprint of job" -- search --job "$CP" --partition fwd_attn \
  --strategy exhaustive --log "$TMP/other.jsonl" --out "$TMP/e3" --quiet
for f in artifact notes other; do
  if cmp -s "$TMP/$f.jsonl" "$TMP/$f.orig"; then echo "ok: $f.jsonl left byte-identical"; else
    echo "FAIL: $f.jsonl changed" >&2
    fails=$((fails + 1))
  fi
done
for d in e1 e2 e3; do [ -e "$TMP/$d" ] && { echo "FAIL: --out $d created for a refused log" >&2; fails=$((fails + 1)); }; done
finish
