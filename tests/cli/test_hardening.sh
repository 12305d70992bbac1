#!/usr/bin/env bash
# test_hardening.sh — issue 14: names from input are escaped in the outputs that embed them
# (Python from export-zeus, HTML from report), and a file that is not a measurement log is
# never used as one: left byte-identical by search and optimize.
source "$(dirname "$0")/lib.sh"
BASE="$KR_SOURCE_DIR/tests/bad/base"
command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }

# export-zeus: a job name with a newline and code must stay inside the comment.
fp=$("$KAREUS" job show | awk '$1 == "fingerprint" {print $2}')
python3 - "$BASE/plan.json" "$TMP/evil.json" "$fp" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["job"]["fingerprint"] = sys.argv[3]  # the base plan was written for the default job of its day
p["job"]["name"] = "x\nimport os; open('PWNED', 'w').write('1')  # '\"\\"
p["method"] = "m'\n__import__('os')"
json.dump(p, open(sys.argv[2], "w"), indent=1)
PY
expect_exit 0 "" -- plan export-zeus "$TMP/evil.json" --out "$TMP/evil.py"
(cd "$TMP" && python3 -c "
import ast, sys
src = open('evil.py').read()
tree = ast.parse(src)
assert len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr), 'extra statements in evil.py'
exec(compile(tree, 'evil.py', 'exec'))
") || { echo "FAIL: export-zeus output is not a single expression" >&2; fails=$((fails + 1)); }
[ ! -e "$TMP/PWNED" ] || { echo "FAIL: code injected through the job name ran" >&2; fails=$((fails + 1)); }
grep -q 'job x\\x0aimport os' "$TMP/evil.py" || { echo "FAIL: job name not escaped" >&2; cat "$TMP/evil.py" >&2; fails=$((fails + 1)); }

# report: settings strings and names are HTML-escaped.
mkdir -p "$TMP/rep"
python3 - "$BASE/summary.json" "$TMP/rep/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["settings"]["strategy"] = "<script>alert(1)</script>"
s["settings"]["backend"] = "\"><img src=x onerror=alert(2)>"
s["job"]["name"] = "<b>job</b>"
s["pictures"] = {"timelines": [], "partitions": []}
json.dump(s, open(sys.argv[2], "w"), indent=1)
PY
expect_exit 0 "" -- report "$TMP/rep"
if grep -q "<script>\|<img\|<b>job" "$TMP/rep/report.html"; then
  echo "FAIL: unescaped input in report.html" >&2; fails=$((fails + 1))
fi
grep -q "&lt;script&gt;alert(1)&lt;/script&gt;" "$TMP/rep/report.html" \
  || { echo "FAIL: escaped strategy missing from report.html" >&2; fails=$((fails + 1)); }

# A non-log --log file (no final newline: once "a torn line", truncated to 0 bytes) is refused
# and left byte-identical, by search and by optimize.
printf 'my notes, no final newline' > "$TMP/notes.txt"
cp "$TMP/notes.txt" "$TMP/notes.orig"
expect_exit 2 "notes.txt:1: expected a Kareus measurement log" -- search --partition fwd_mlp --max-evals 1 --log "$TMP/notes.txt" --out "$TMP/s1" --quiet
expect_exit 2 "notes.txt:1: expected a Kareus measurement log" -- optimize --log "$TMP/notes.txt" --out "$TMP/o1" --methods megatron,perseus --quiet
cmp -s "$TMP/notes.txt" "$TMP/notes.orig" || { echo "FAIL: notes.txt changed" >&2; fails=$((fails + 1)); }
[ ! -e "$TMP/s1" ] || { echo "FAIL: search created --out for a refused --log" >&2; fails=$((fails + 1)); }

# A recognised log with a torn last line: only that line is dropped, and the warning says so.
expect_exit 0 "" -- search --partition fwd_mlp --max-evals 3 --restrict only-tuned --strategy exhaustive --out "$TMP/s2" --quiet
printf '{"freq":1410,"overlap_start":"no' >> "$TMP/s2/measurements.jsonl"
before=$(($(wc -c < "$TMP/s2/measurements.jsonl") - 32))
expect_exit 0 "measurements.jsonl:5: dropped a torn last line (32 bytes" -- search --partition fwd_mlp --max-evals 3 --restrict only-tuned --strategy exhaustive --out "$TMP/s2"
[ "$(head -c "$before" "$TMP/s2/measurements.jsonl" | wc -l)" = 4 ] || { echo "FAIL: torn-line recovery dropped more than the torn line" >&2; fails=$((fails + 1)); }
finish
