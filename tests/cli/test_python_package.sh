#!/usr/bin/env bash
# test_python_package.sh — the Python package as packaged: bindings/python/pyproject.toml names
# the library's version (include/kareus/version.h), `python3 -m kareus ARGS` runs the kareus CLI
# with ARGS (exit status and output passed through), the binding loads the library through
# $KAREUS_LIB (only that one when set) and says what it tried when it finds none. (`pip install` into a fresh venv is
# .ci/run's scripts/check-python-package.sh: it needs the network or Debian's python3-wheel.)
set -u
source "$KR_SOURCE_DIR/tests/cli/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || { echo "SKIPPED: no python3"; exit 77; }
export PYTHONPATH="$KR_SOURCE_DIR/bindings/python"
if [ "${KAREUS_SANITIZED:-0}" = 1 ]; then
  LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
  export LD_PRELOAD ASAN_OPTIONS=detect_leaks=0
fi

v=$("$KAREUS" --version | awk '{print $2}')
pv=$(sed -n 's/^version = "\(.*\)"/\1/p' "$KR_SOURCE_DIR/bindings/python/pyproject.toml")
if [ "$v" = "$pv" ]; then echo "ok: pyproject version $pv"; else
  echo "FAIL: pyproject.toml version '$pv', library $v" >&2; fails=$((fails + 1)); fi

export KAREUS_LIB="${KR_LIBKAREUS:?}" KAREUS_CLI="$KAREUS"
out=$("$PY" -c 'import kareus; print(kareus.version())' 2>&1)
[ "$out" = "$v" ] && echo "ok: import kareus ($out)" || { echo "FAIL: import kareus: $out" >&2; fails=$((fails + 1)); }
a=$("$PY" -m kareus help job 2>&1) b=$("$KAREUS" job --help 2>&1)
[ "$a" = "$b" ] && echo "ok: python3 -m kareus help job" || { echo "FAIL: python3 -m kareus help job: $a" >&2; fails=$((fails + 1)); }
"$PY" -m kareus job show --job /nonexistent.json >"$TMP/o" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "nonexistent.json" "$TMP/o"; then echo "ok: exit status 2 passed through"; else
  echo "FAIL: python3 -m kareus job show --job /nonexistent.json -> $rc: $(cat "$TMP/o")" >&2; fails=$((fails + 1)); fi
out=$(KAREUS_LIB=/nonexistent/libkareus.so "$PY" -c 'import kareus' 2>&1)
if grep -q "cannot find libkareus.so" <<<"$out" && grep -q "/nonexistent/libkareus.so (missing)" <<<"$out"; then
  echo "ok: missing library named"; else echo "FAIL: missing library: $out" >&2; fails=$((fails + 1)); fi
finish
