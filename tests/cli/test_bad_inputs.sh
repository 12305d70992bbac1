#!/usr/bin/env bash
# test_bad_inputs.sh — the bad-input test set of issue 14 (tests/bad/run_bad.py): every case
# must exit 2, name the file and the place in it, and leave every file exactly as it was.
set -u
: "${KAREUS:?KAREUS must point to the kareus binary}"
: "${KR_SOURCE_DIR:?}"
command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
exec python3 "$KR_SOURCE_DIR/tests/bad/run_bad.py"
