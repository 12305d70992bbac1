#!/usr/bin/env bash
# test_profile.sh — `kareus profile` on a machine without a GPU (CI, this build machine): every
# measuring mode exits 2 naming what is missing; the kernel plan works anywhere; bad input is
# exit 2 with the reason. On a machine with a GPU the no-GPU cases are skipped (exit 77).
source "$(dirname "$0")/lib.sh"

lib="${KR_BINARY_DIR:-.}/libkareus_cuda.so"

# Does this machine have what a measurement needs? Then the no-GPU expectations do not hold.
if "$KAREUS" profile --check >/dev/null 2>&1; then
  echo "SKIPPED: a GPU with the CUDA driver and NVML is present; the no-GPU cases cannot run here"
  exit 77
fi

# Whatever is missing is named, with exit 2, for every measuring mode.
missing_re='no libkareus_cuda|no CUDA driver|no GPU|no NVML|no permission'
for args in "--check" "--calibrate" "--partition fwd_attn --config 1410,9,linear_0" \
            "--job default --partition fwd_mlp --config 1200,6,norm_0 --config 1410,6,norm_0"; do
  out=$("$KAREUS" profile $args 2>&1); rc=$?
  if [ "$rc" -ne 2 ] || ! grep -qE "$missing_re" <<<"$out" || ! grep -qF "cannot measure on this machine" <<<"$out"; then
    echo "FAIL: kareus profile $args -> exit $rc; output:" >&2; echo "$out" | head -10 >&2; fails=$((fails + 1))
  else
    echo "ok: kareus profile $args -> 2 ($(grep -oE "$missing_re" <<<"$out" | sort -u | tr '\n' ' '))"
  fi
done

# Without the library: named, with where it was looked for.
KAREUS_CUDA_LIB=/nonexistent/libkareus_cuda.so expect_exit 2 "no libkareus_cuda: \$KAREUS_CUDA_LIB does not load" -- \
  profile --partition fwd_attn --config 1410,9,linear_0
export KAREUS_CUDA_LIB=/nonexistent/libkareus_cuda.so
expect_exit 2 "/nonexistent/libkareus_cuda.so" -- profile --check
unset KAREUS_CUDA_LIB

# With the library built but no driver (this machine): the driver is what is missing.
if [ -f "$lib" ] && [ ! -e /dev/nvidiactl ]; then
  expect_exit 2 "no CUDA driver" -- profile --check
  # Only the entry point is exported from the CUDA library.
  syms=$(nm -D --defined-only "$lib" | awk '$2 == "T" {print $3}' | grep -v '^_' | tr '\n' ' ')
  if [ "$syms" != "kr_cuda_profiler_api " ]; then
    echo "FAIL: libkareus_cuda.so exports more than its entry point: $syms" >&2; fails=$((fails + 1))
  else
    echo "ok: libkareus_cuda.so exports only kr_cuda_profiler_api"
  fi
  # libkareus itself has no CUDA link dependency.
  if [ -n "${KR_LIBKAREUS:-}" ] && ldd "$KR_LIBKAREUS" | grep -qE 'libcuda|libcudart|libcublas|libnccl'; then
    echo "FAIL: libkareus links CUDA libraries" >&2; fails=$((fails + 1))
  else
    echo "ok: libkareus has no CUDA link dependency"
  fi
fi

# The measuring path end to end on the mock CUDA library (real time, no GPU) and the fake
# clock/energy backend (300 W, counter updated every 100 ms): measured energy = 300 W x time.
mock="${KR_BINARY_DIR:-.}/libkareus_mock_cuda.so"
if [ -f "$mock" ]; then
  # Calibration: every step runs and the entry it writes is one the simulator loads (--sim-gpu below).
  fake_h200=fake:period_s=0.1,power_w=250,max_mhz=1980,min_mhz=345
  KAREUS_CUDA_LIB="$mock" expect_exit 2 "--base: the GPU 'Kareus mock GPU' is not in the catalog by name" -- \
    profile --control "$fake_h200" --calibrate --quick
  KAREUS_CUDA_LIB="$mock" expect_exit 0 "calibrated h200-calibrated (base h200) on Kareus mock GPU" -- \
    profile --control "$fake_h200" --calibrate --quick --base h200 --out "$TMP/gpu.json" --cooldown-ratio 0 --quiet
  if ! grep -qF '"measured by kareus profile --calibrate on Kareus mock GPU' "$TMP/gpu.json" || \
     ! grep -qF '"schema": "kareus.calibration"' "$TMP/gpu.raw.json"; then
    echo "FAIL: calibration files lack the measured sources or the raw points" >&2; fails=$((fails + 1))
  fi
  out=$(KAREUS_CUDA_LIB="$mock" "$KAREUS" profile --control fake:period_s=0.1,power_w=300 --partition fwd_mlp \
        --config 1410,9,norm_0 --config 1200,3,activation_0 --sim --sim-gpu "$TMP/gpu.json" --json --quiet \
        --cooldown-ratio 0 --details "$TMP/details.jsonl" 2>"$TMP/err.txt"); rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "FAIL: mock measurement -> exit $rc" >&2; cat "$TMP/err.txt" >&2; fails=$((fails + 1))
  else
    # Within 5 %: the window's power is the counter's energy between two edges over the time
    # between them, each edge placed between two polls, over a window of about 1 s; a poll
    # delayed by the scheduler moves an edge (2.1 % was seen with two test suites sharing 2
    # cores). A unit or accounting fault is off by far more.
    check=$(awk -v out="$out" 'BEGIN {
      n = split(out, lines, "\n"); t = 0; e = 0; k = 0; bad = ""
      for (i = 1; i <= n; i++) {
        if (lines[i] ~ /^    "time_s":/) { split(lines[i], a, ": "); sub(",", "", a[2]); t = a[2] + 0 }
        if (lines[i] ~ /^    "energy_j":/ && t > 0) { split(lines[i], a, ": "); sub(",", "", a[2]); e = a[2] + 0
          r = e / (300 * t); if (r < 0.95 || r > 1.05) bad = bad " " r; k++; t = 0 }
      }
      print k, (bad == "" ? "ok" : "bad" bad) }')
    lines=$(wc -l <"$TMP/details.jsonl")
    if [ "$check" != "2 ok" ] || ! grep -qF '"gpu": "h200-calibrated"' <<<"$out" || ! grep -qF '"gpu": "a100-sxm4-40gb"' <<<"$out" || ! grep -qF '"comm": "PROXY allreduce' <<<"$out" \
       || [ "$lines" -ne 2 ] || ! grep -qF '"overlap_start":"activation_0"' "$TMP/details.jsonl"; then
      echo "FAIL: mock measurement output (energy check: $check, detail lines: $lines):" >&2; echo "$out" | head -30 >&2
      fails=$((fails + 1))
    else
      echo "ok: mock measurement: 2 configs, energy = 300 W x time within 5 %, sim columns, 2 detail lines"
    fi
  fi
  # Search mode: the search's strategy with the GPU backend; every measurement lands in the
  # search's log as it is taken (backend "gpu", spreads, repeats), and a rerun resumes from it.
  # One clock, one CTA count, 3 slots, 2 kernels, and the baseline's NCCL at 24 CTAs: 7.
  cat >"$TMP/tiny.json" <<'JSON'
{"schema": "kareus.job", "version": 1, "name": "tiny", "gpu": "a100", "model": "llama3.2-3b",
 "parallelism": {"tp": 8, "cp": 1, "pp": 2, "dp": 1},
 "planning": {"clock_min_mhz": 1410, "clock_max_mhz": 1410, "clock_step_mhz": 30, "sms_allreduce": [3]}}
JSON
  KAREUS_CUDA_LIB="$mock" expect_exit 0 "7 of      7 configurations (100.0%), 7 measured now, 0 from the log" -- \
    profile --job "$TMP/tiny.json" --control fake:period_s=0.1,power_w=300 --partition fwd_mlp \
    --log "$TMP/search.jsonl" --strategy exhaustive --out "$TMP/fronts" --cooldown-ratio 0 --quiet
  if [ "$(grep -c '"backend":"gpu"' "$TMP/search.jsonl")" -ne 7 ] || ! grep -qF '"repeats":3' "$TMP/search.jsonl" || \
     [ ! -f "$TMP/fronts/fwd_mlp.kareus.json" ]; then
    echo "FAIL: search log / frontier files of the GPU search" >&2; fails=$((fails + 1))
  fi
  KAREUS_CUDA_LIB="$mock" expect_exit 0 "0 measured now, 7 from the log" -- \
    profile --job "$TMP/tiny.json" --control fake:period_s=0.1,power_w=300 --partition fwd_mlp \
    --log "$TMP/search.jsonl" --strategy exhaustive --out "$TMP/fronts" --quiet
  # The library's verdict, a failing preparation, and a missing permission are all named.
  KAREUS_CUDA_LIB="$mock" KAREUS_MOCK_CUDA_FAIL=nodev expect_exit 2 "no GPU: mock" -- \
    profile --control fake --partition fwd_mlp --config 1410,9,norm_0
  KAREUS_CUDA_LIB="$mock" KAREUS_MOCK_CUDA_FAIL=prepare expect_exit 1 "out of memory" -- \
    profile --control fake --partition fwd_mlp --config 1410,9,norm_0 --quiet
  KAREUS_CUDA_LIB="$mock" expect_exit 2 "no permission to lock the SM clock on GPU 0" -- \
    profile --control fake:perm_ops=writes --partition fwd_mlp --config 1410,9,norm_0 --quiet
  KAREUS_CUDA_LIB="$mock" expect_exit 2 "cannot read the energy counter" -- \
    profile --control fake:no_energy=1 --partition fwd_mlp --config 1410,9,norm_0 --quiet
  KAREUS_CUDA_LIB="$mock" expect_exit 0 "mock: no kernels to check" -- profile --control fake --check
fi
expect_exit 2 "cannot measure on this machine" -- profile --partition fwd_mlp --log "$TMP/none.jsonl"
expect_exit 2 "--strategy: expected bo, exhaustive or artifact, found 'grid'" -- profile --log "$TMP/x.jsonl" --strategy grid
expect_exit 2 "--prior-features: expected auto, on or off, found 'x'" -- profile --log "$TMP/x.jsonl" --prior-features x
expect_exit 2 "--prior-calibrate: expected auto, on or off, found 'x'" -- profile --log "$TMP/x.jsonl" --prior-calibrate x
expect_exit 1 "cannot measure on this machine" -- search --backend gpu --partition fwd_mlp --out "$TMP/sg" --quiet
expect_exit 2 "/nonexistent/gpu.json" -- profile --partition fwd_attn --config 1410,9,linear_0 --sim-gpu /nonexistent/gpu.json

# The kernel plan needs no GPU.
expect_exit 0 "plan fwd_attn: 7 steps" -- profile --partition fwd_attn --plan
expect_exit 0 "attn_fwd" -- profile --partition fwd_attn --plan --config 1200,12,attn_0
expect_exit 0 "-- launch allreduce" -- profile --partition fwd_attn --plan --config 1200,12,attn_0
expect_exit 0 "PROXY allreduce (1 GPU, link-capped" -- profile --partition fwd_mlp --plan
expect_exit 0 "nccl allreduce x4 ranks (group 8)" -- profile --partition fwd_mlp --plan --comm nccl --devices 4
expect_exit 0 "qknorm_bwd" -- profile --job qwen3-1.7b-cp2tp4-mbs8-s4096 --partition bwd_qkv_rs --plan --config 1200,4,rope_0
expect_exit 0 "plan embed_fwd" -- profile --partition embed_fwd --plan
expect_exit 0 "xent_bwd" -- profile --partition loss_bwd --plan
expect_exit 0 "plan bwd_attn" -- profile --partition all --plan
expect_exit 0 "usage: kareus profile" -- profile --help

# Bad input: exit 2 with what was expected and what was found.
expect_exit 2 "expected a mode" -- profile
expect_exit 2 "give one mode" -- profile --plan --check --partition fwd_attn
expect_exit 2 "--partition: missing" -- profile --plan
expect_exit 2 "expected all or a partition of job 'default'" -- profile --partition fwd_nope --plan
expect_exit 2 "give MHZ,SMS,SLOT" -- profile --partition fwd_attn --plan --config 1410
expect_exit 2 "carries no collective" -- profile --partition loss_fwd --plan --config 1410,4,norm_0
expect_exit 2 "expected a slot among {norm_0, linear_0, rope_0, attn_0}, found 'attn_9'" -- \
  profile --partition fwd_attn --plan --config 1410,9,attn_9
expect_exit 2 "comm SMs: expected 1..107" -- profile --partition fwd_attn --plan --config 1410,200,attn_0
expect_exit 2 "clock: expected a clock the a100-sxm4-40gb supports" -- profile --partition fwd_attn --plan --config 1411,9,attn_0
expect_exit 2 "--config (clock): expected an integer, found 'fast'" -- profile --partition fwd_attn --plan --config fast,9,attn_0
expect_exit 2 "--comm: expected auto, nccl, proxy or proxy-unpaced, found 'mpi'" -- profile --partition fwd_attn --plan --comm mpi
expect_exit 2 "needs two or more GPUs" -- profile --partition fwd_attn --plan --comm nccl
expect_exit 2 "--window: expected a number in [1, 600], found 0.5" -- profile --check --window 0.5
expect_exit 2 "--repeats: expected an integer in [3, 16], found 2" -- profile --check --repeats 2
expect_exit 2 "--variant: expected kareus" -- profile --partition fwd_attn --plan --variant fast
expect_exit 2 "unknown or incomplete option '--frobnicate'" -- profile --frobnicate
# A model whose heads the attention kernel does not handle (d = 96): refused when planning.
cat >"$TMP/hd96.json" <<'JSON'
{"schema": "kareus.job", "version": 1, "name": "hd96", "gpu": "h200",
 "model": {"base": "llama3.2-3b", "name": "llama-hd96", "heads": 32, "head_dim": 96},
 "parallelism": {"tp": 8, "cp": 1, "pp": 2, "dp": 1}}
JSON
expect_exit 2 "head dimension: the attention kernel handles 64 or 128, found 96" -- \
  profile --job "$TMP/hd96.json" --partition fwd_attn --plan
expect_exit 0 "plan fwd_mlp" -- profile --job "$TMP/hd96.json" --partition fwd_mlp --plan

finish
