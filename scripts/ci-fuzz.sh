#!/usr/bin/env bash
# ci-fuzz.sh — the fuzzers of .ci/run: a clang build of the libFuzzer harnesses and a short run of each.
#
# 1. The bad-input test set and the hardening CLI tests are ordinary CTest tests
#    (cli.test_bad_inputs, cli.test_hardening): nothing to add; they need python3.
# 2. The sanitizer build now also gets -fsanitize=float-cast-overflow (GCC >= 4.9 and clang know
#    it; CMake checks): nothing to add beyond the existing -DKAREUS_SANITIZE=ON build.
# 3. Fuzzers: a clang build of the libFuzzer harnesses and a short run of each. The issue suggests
#    60 s per parser; CI time limits make it ~20 s per parser here (7 harnesses: ~2.5 min in all).
#    Longer runs: `cmake --build build-fuzz --target fuzz` (KAREUS_FUZZ_SECONDS, default 600).
#    Needs clang and its libFuzzer runtime (Debian: clang, which ships libclang_rt.fuzzer).
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
if command -v clang >/dev/null; then
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DKAREUS_FUZZ=ON -DKAREUS_WERROR=OFF \
        -DKAREUS_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
  cmake --build build-fuzz --target fuzz_job fuzz_gpu fuzz_plan fuzz_options fuzz_frontier fuzz_summary fuzz_mlog fuzz_sweep fuzz_artifact
  bash fuzz/run.sh build-fuzz "$FUZZ_SECONDS"
else
  echo "ci-steps-i14a: clang not found: fuzzers not run (apt-get install -y clang)" >&2
  exit 1
fi
