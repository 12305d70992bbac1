#!/usr/bin/env bash
# regen-doc-tables.sh — replaces the generated tables in docs/ (between the BEGIN/END markers)
# with the current output of the kareus commands that make them: in docs/calibration.md
# `kareus catalog --markdown` and `--check`, in docs/formats.md `kareus job format --markdown` and
# `kareus plan format --markdown`, `kareus report format --markdown`, `kareus compose format --markdown` (the field tables the readers and writers use). The tests
# (cli.test_partition_eval, cli.test_formats) fail when a table is out of date.
# Usage: scripts/regen-doc-tables.sh [path/to/kareus]
set -euo pipefail
cd "$(dirname "$0")/.."
kareus=${1:-build/kareus}
for entry in "docs/calibration.md:catalog --check" "docs/calibration.md:catalog --markdown" \
  "docs/formats.md:job format --markdown" "docs/formats.md:plan format --markdown" \
  "docs/formats.md:report format --markdown" "docs/formats.md:compose format --markdown"; do
  doc=${entry%%:*} section=${entry#*:}
  out=$(mktemp)
  # shellcheck disable=SC2086
  "$kareus" $section > "$out"
  python3 - "$doc" "$section" "$out" <<'PY'
import sys
doc, section, out = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(doc).read()
begin, end = f"<!-- BEGIN kareus {section} -->", f"<!-- END kareus {section} -->"
a, b = text.index(begin) + len(begin), text.index(end)
new = open(out).read()
text = text[:a] + "\n" + new + text[b:]
open(doc + ".tmp", "w").write(text)
PY
  mv "$doc.tmp" "$doc"
  rm -f "$out"
done
