#!/usr/bin/env bash
# regen-calibration-doc.sh — replaces the generated tables in docs/calibration.md (between the
# BEGIN/END markers) with the current output of `kareus catalog --markdown` and `--check`.
# Usage: scripts/regen-calibration-doc.sh [path/to/kareus]
set -euo pipefail
cd "$(dirname "$0")/.."
kareus=${1:-build/kareus}
doc=docs/calibration.md
for section in "catalog --check" "catalog --markdown"; do
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
