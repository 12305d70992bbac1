#!/usr/bin/env bash
# device-check.sh — the hardware profiler on a real GPU, in one go, within 8 minutes: builds
# kareus with the CUDA library, checks every kernel against its CPU reference, calibrates the
# GPU's constants (--quick), sweeps the comm kernel alone over clocks x CTAs and fits its clock
# law (kareus profile --comm-sweep, kareus calibrate: comm_clock_exp), measures one partition
# sweep at a few configurations, and compares measured against simulated time and energy (the
# catalog's GPU and the calibrated one).
#
#   sudo scripts/device-check.sh              results in ./device-check-out (or $OUT if set)
#
# Written for one H200 run as root (locking clocks needs root); works on any GPU of compute
# capability 8.0+ whose name is in the catalog (or set KR_DC_BASE=<catalog entry>). Safe: every
# step has a timeout, every error is logged with its line, and the SM clocks are reset on exit
# whatever happens. Everything printed also goes to $OUT/device-check.log.
#
# Environment: OUT (output dir), BUILD (build dir, default build-device-check), KR_DC_BUDGET_S
# (whole-run budget, default 470 s), KR_DC_BASE (catalog entry, default: from the GPU's name),
# CUDA_ARCH (default: the GPU's compute capability), KR_DC_JOB (job spec; default an H200 job of
# the default model written below).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/device-check-out}
BUILD=${BUILD:-$ROOT/build-device-check}
BUDGET=${KR_DC_BUDGET_S:-470}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/device-check.log") 2>&1
T0=$(date +%s)
KAREUS="$BUILD/kareus"
status=()

elapsed() { echo $(($(date +%s) - T0)); }
# nvidia-smi when there is one; never fails (its absence is reported by the steps that need a GPU).
smi() { if command -v nvidia-smi >/dev/null 2>&1; then nvidia-smi "$@" 2>/dev/null || true; fi; }
step() { printf '\n== [%4ss] %s\n' "$(elapsed)" "$*"; }
# run NAME LIMIT_S OUTFILE CMD... : runs CMD with a timeout clipped to the time left, its output
# shown and saved to OUTFILE (- for none); records the outcome in the status list. Never fails.
run() {
  local name=$1 limit=$2 out=$3
  shift 3
  local left=$((BUDGET - $(elapsed)))
  if [ "$left" -lt "$limit" ]; then limit=$left; fi
  if [ "$limit" -lt 5 ]; then
    echo "SKIPPED $name: the ${BUDGET}s budget is spent"
    status+=("$name: skipped (no time left)")
    return 0
  fi
  [ "$out" = - ] && out=/dev/null
  local rc=0 t
  t=$(date +%s)
  timeout --signal=TERM --kill-after=10 "$limit" "$@" 2>&1 | tee "$out" || rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    status+=("$name: TIMED OUT after ${limit}s")
  else
    status+=("$name: exit $rc ($(($(date +%s) - t)) s)")
  fi
  return 0
}

restore() {
  local rc=$?
  trap - EXIT ERR
  step "restoring the GPU clocks"
  smi -rgc >/dev/null
  if [ -x "$KAREUS" ]; then timeout 20 "$KAREUS" gpu reset >/dev/null 2>&1 || true; fi
  {
    echo "# device check — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(elapsed) s"
    echo
    for s in "${status[@]+"${status[@]}"}"; do echo "- $s"; done
  } >"$OUT/status.md"
  cat "$OUT/status.md"
  # Any step that did not finish with exit 0 makes the whole check fail.
  if [ "$rc" -eq 0 ] && grep -qvE '^(#|$|- .*: exit 0 )' "$OUT/status.md"; then rc=1; fi
  echo "exit $rc after $(elapsed) s; files in $OUT:"
  ls -l "$OUT"
  exit "$rc"
}
trap restore EXIT
trap 'echo "ERROR at line $LINENO: $BASH_COMMAND (exit $?)"' ERR
trap 'echo "interrupted"; exit 130' INT TERM

step "machine"
uname -a || true
echo "user: $(id -u) ($(id -un 2>/dev/null || true))"
if [ "$(id -u)" -ne 0 ]; then echo "WARNING: not root: locking clocks will fail (NVML_ERROR_NO_PERMISSION)"; fi
command -v nvidia-smi >/dev/null 2>&1 || echo "WARNING: nvidia-smi not found: no NVIDIA driver on this machine?"
smi
smi --query-gpu=name,compute_cap,clocks.max.sm,clocks.sm,power.limit,temperature.gpu --format=csv
command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -2 || echo "nvcc not on PATH (trying /usr/local/cuda/bin)"
export PATH="$PATH:/usr/local/cuda/bin"
nproc

step "build (kareus CLI, libkareus_cuda.so, test_profiler)"
arch=${CUDA_ARCH:-$(smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')}
arch=${arch:-90}
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
run configure 90 "$OUT/build.txt" cmake -S "$ROOT" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKAREUS_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$arch"
run build 260 "$OUT/build.txt" cmake --build "$BUILD" --target kareus_cli kareus_cuda test_profiler -j "$(nproc)"
if [ ! -x "$KAREUS" ] || [ ! -f "$BUILD/libkareus_cuda.so" ]; then
  echo "the build failed: nothing to run"
  exit 1
fi

step "what is present, and every kernel against its CPU reference"
run check 90 "$OUT/check.txt" "$KAREUS" profile --check
run gpu-test 60 "$OUT/gpu-test.txt" "$BUILD/test_profiler" gpu_kernels_match_cpu_references

step "GPU name and catalog entry"
gpu=$(smi --query-gpu=name --format=csv,noheader | head -1)
base=${KR_DC_BASE:-}
if [ -z "$base" ]; then
  case "$gpu" in
    *H200*) base=h200 ;;
    *H100*) base=h100-sxm ;;
    *A100*80GB*) base=a100-sxm4-80gb ;;
    *A100*) base=a100-sxm4-40gb ;;
    *) base=h200 ;;
  esac
fi
echo "GPU '$gpu' -> catalog entry $base"

step "job and clocks"
job=${KR_DC_JOB:-$OUT/job.json}
if [ -z "${KR_DC_JOB:-}" ]; then
  cat >"$job" <<EOF
{"schema": "kareus.job", "version": 1, "name": "llama3.2-3b-tp8-$base", "gpu": "$base", "model": "llama3.2-3b",
 "parallelism": {"tp": 8, "cp": 1, "pp": 2, "dp": 1}, "microbatch_size": 8, "seq_len": 4096}
EOF
fi
"$KAREUS" job show --job "$job" || true
fmax=$(smi --query-gpu=clocks.max.sm --format=csv,noheader,nounits | head -1 | tr -d ' ')
case "$fmax" in '' | *[!0-9]*) fmax=1980 ;; esac
fmid=$((fmax - 480))
flow=$((fmax - 960))
echo "sweep clocks: $fmax, $fmid, $flow MHz"

step "calibration (--quick)"
run calibrate 200 "$OUT/calibrate.txt" "$KAREUS" profile --calibrate --quick --base "$base" \
  --out "$OUT/gpu-calibrated.json" --raw "$OUT/gpu-calibrated.raw.json" --cooldown-ratio 0.3

step "comm sweep: the comm kernel alone over clocks x CTAs, and the clock law fitted (issue 31)"
# One GPU: the single-GPU proxy (the CTA structure of the comm kernel, copies through HBM); with
# more, NCCL. 3 clocks x 3 CTA counts, one settle per clock, no cooldown: about 45 s. The fit sets
# comm_clock_exp only (docs/calibration.md, "Pinning the comm clock law on hardware").
run comm-sweep 60 "$OUT/comm-sweep.txt" "$KAREUS" profile --job "$job" --comm-sweep "$OUT/comm-sweep.jsonl" \
  --clocks "$fmax,$fmid,$flow" --ctas 1,2,4 --window 1 --repeats 3 --cooldown-ratio 0
commbase=$base
[ -f "$OUT/gpu-calibrated.json" ] && commbase=$OUT/gpu-calibrated.json
run comm-fit 30 "$OUT/comm-fit.txt" "$KAREUS" calibrate --data "$OUT/comm-sweep.jsonl" --base "$commbase" \
  --out "$OUT/gpu-comm.json"
echo "fitted: $(grep -h 'comm_clock_exp' "$OUT/comm-fit.txt" 2>/dev/null | head -1 || echo 'no fit')"

step "partition sweep: measured vs simulated"
"$KAREUS" profile --job "$job" --partition fwd_attn --plan --config "$fmax,12,linear_0" >"$OUT/plan-fwd_attn.txt" 2>&1 || true
simgpu=()
[ -f "$OUT/gpu-calibrated.json" ] && simgpu=(--sim-gpu "$OUT/gpu-calibrated.json")
common=(--job "$job" --sim "${simgpu[@]}" --cooldown-ratio 0.3 --details "$OUT/sweep-details.jsonl")
run sweep-fwd_attn 150 "$OUT/sweep-fwd_attn.txt" "$KAREUS" profile "${common[@]}" --partition fwd_attn \
  --out "$OUT/sweep-fwd_attn.json" \
  --config "$fmax,12,norm_0" --config "$fmax,12,linear_0" --config "$fmax,12,attn_0" \
  --config "$fmax,3,linear_0" --config "$fmax,30,linear_0" --config "$fmid,12,linear_0" \
  --config "$flow,12,linear_0"
run sweep-fwd_mlp 90 "$OUT/sweep-fwd_mlp.txt" "$KAREUS" profile "${common[@]}" --partition fwd_mlp \
  --out "$OUT/sweep-fwd_mlp.json" \
  --config "$fmax,12,norm_0" --config "$fmax,12,activation_0" --config "$fmid,12,activation_0" \
  --config "$flow,12,activation_0"
run sweep-bwd_attn 45 "$OUT/sweep-bwd_attn.txt" "$KAREUS" profile "${common[@]}" --partition bwd_attn \
  --out "$OUT/sweep-bwd_attn.json" --config "$fmax,12,linear_0"

step "summary"
{
  echo "# Hardware profiler device check"
  echo
  echo "GPU: $gpu (catalog entry $base), $(date -u +%Y-%m-%d), $(elapsed) s"
  echo
  echo "## Kernel self-test"
  echo '```'
  cat "$OUT/check.txt" 2>/dev/null || echo "(none)"
  echo '```'
  echo "## Calibration"
  echo '```'
  cat "$OUT/calibrate.txt" 2>/dev/null || echo "(none)"
  echo '```'
  echo "## Comm sweep and the clock law (comm_clock_exp)"
  echo '```'
  cat "$OUT/comm-fit.txt" 2>/dev/null || echo "(none)"
  echo '```'
  for k in fwd_attn fwd_mlp bwd_attn; do
    echo "## Sweep $k (time in ms, energy in J per GPU and execution; ratios measured / simulated)"
    echo '```'
    cat "$OUT/sweep-$k.txt" 2>/dev/null || echo "(none)"
    echo '```'
  done
} >"$OUT/summary.md"
echo "summary written to $OUT/summary.md"
