#!/usr/bin/env bash
# Runs every benchmark binary given on the command line, one after another, so their figures
# print in one report. Benchmarks print numbers; they never fail on time.
set -u
status=0
for b in "$@"; do
  echo "=== $b"
  "./$b" || { echo "($b exited with status $?)"; status=1; }
  echo
done
exit $status
