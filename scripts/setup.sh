#!/usr/bin/env bash
# setup.sh — installs what Kareus needs on Debian 12, then configures and builds into build/.
#
#   scripts/setup.sh            build dependencies only (enough for the CLI)
#   scripts/setup.sh --tests    also what the test suite needs (Debian's python3-torch for the
#                               Python example, CBC for exact-MILP reference tests)
#
# Runs apt-get through sudo when not root. Safe to run again: it only installs what is missing
# and rebuilds incrementally. Set KAREUS_SKIP_APT=1 to skip the package step, KAREUS_WERROR=ON
# to make warnings errors (as CI and developer builds do; off by default so that a newer
# compiler's new warning never stops a user's build).
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(build-essential cmake ninja-build pkg-config libjansson-dev libcmocka-dev liblapacke-dev libcminpack-dev
      coinor-libcbc-dev python3 help2man)
if [ "${1:-}" = "--tests" ]; then
  pkgs+=(python3-torch python3-numpy valgrind)
  pkgs+=(slurm-wlm) # the local Slurm controller and node of tests/cli/test_campaign_slurm.sh (issue 32)
  pkgs+=(clang) # libFuzzer harnesses in fuzz/ (issue 14; ci-steps-i14a.sh)
fi

if [ "${KAREUS_SKIP_APT:-0}" != "1" ]; then
  missing=()
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    echo "setup: installing ${missing[*]}" >&2
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  fi
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKAREUS_WERROR="${KAREUS_WERROR:-OFF}" >/dev/null
cmake --build build
