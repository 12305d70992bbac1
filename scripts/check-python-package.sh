#!/usr/bin/env bash
# check-python-package.sh PREFIX — pip-installs bindings/python into fresh virtual environments of
# Debian's /usr/bin/python3 and uses it against the libkareus and kareus installed in PREFIX
# (scripts/check-consumers.sh installs one): import, the library-equivalent of
# `kareus plan validate` (kareus.check_plan, kareus.Plan), and `python -m kareus plan validate`.
#   1. a plain venv, `pip install ./bindings/python` (build isolation: setuptools from the
#      package index; skipped with a note when the index cannot be reached);
#   2. a venv with Debian's site packages (python3-torch, python3-wheel, setuptools 66),
#      `pip install --no-build-isolation` — works offline.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
prefix=$(cd "$1" && pwd)
PY=/usr/bin/python3
work=$(mktemp -d "${TMPDIR:-/tmp}/kareus-py.XXXXXX")
trap 'rm -rf "$work"' EXIT
libdir=$(dirname "$(find "$prefix" -name 'libkareus.so.*' -type f | head -1)")
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PATH="$prefix/bin:$PATH"
unset KAREUS_LIB KAREUS_CLI PYTHONPATH

"$prefix/bin/kareus" solve --options "$src/tests/golden/lowtime/opts_S2.csv" --stages 2 --microbatches 8 \
  --cost-model lowtime --frontier-out "$work/f.csv" --plans "$work/plans" --select fastest --quiet
plan=$(ls "$work"/plans/plan_*.json | head -1)

use() { # use VENV: the installed package, from outside the source tree
  local py=$1/bin/python
  (cd "$work" && "$py" - "$plan" <<'PY'
import sys, kareus
path = sys.argv[1]
assert kareus.__file__.startswith(sys.prefix), kareus.__file__
kareus.check_plan(path)
p = kareus.Plan(path)
print("python: kareus %s from %s (lib %s); plan %s: %d stages, %d microbatches"
      % (kareus.version(), kareus.__file__, kareus.library_path, path, p.num_stages, p.num_microbatches))
try:
    kareus.check_plan(path, job="no-such-job")
    sys.exit("check_plan accepted an unknown job")
except kareus.KareusError as e:
    print("python: bad job rejected:", str(e).splitlines()[0])
PY
  )
  (cd "$work" && "$py" -m kareus plan validate "$plan" --json)
  (cd "$work" && "$1/bin/kareus-py" --version)
}

"$PY" -m venv "$work/venv"
if timeout 120 "$work/venv/bin/pip" install -q "$src/bindings/python" 2>"$work/pip.err"; then
  echo "python: pip install (isolated build) into a fresh venv of $("$PY" --version)"
  use "$work/venv"
else
  echo "python: isolated build not possible here (no package index?): $(tail -1 "$work/pip.err")"
fi
"$PY" -m venv --system-site-packages "$work/venv-deb"
"$work/venv-deb/bin/pip" install -q --no-build-isolation "$src/bindings/python"
echo "python: pip install --no-build-isolation into a venv of Debian's $("$PY" --version) with its site packages"
use "$work/venv-deb"
echo "python: package checks passed"
