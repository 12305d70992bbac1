#!/usr/bin/env bash
# device-check-runtime.sh — checks the runtime on a real NVIDIA GPU (a couple of minutes).
#
#   scripts/device-check-runtime.sh [OUTDIR]   (default: $OUT, else build-device/check-out)
#
# 1. builds libkareus and the CLI (Release, no CUDA profiler) into build-device/;
# 2. `kareus gpu info` (text and JSON);
# 3. a one-stage plan (forward at a mid clock, backward at the highest) applied by the runtime on
#    NVML around a known workload — bf16 8192³ matrix products through PyTorch for ~3 s per
#    instruction — printing what NVML and nvidia-smi saw: the clock during each instruction, the
#    energy of each window, and how long the worker took to apply each clock;
# 4. SIGTERM during an instruction: the process dies, and the lock is gone afterwards;
# 5. `kareus gpu reset`;
# 6. kareus.torch on NCCL (examples/train_llama_tp_pp.py under torchrun, one rank per GPU, TP = the
#    number of GPUs (1 is enough), PP 1, bf16, a 4-layer hidden-2048 Llama): the step time without
#    nanobatching, with nanobatching at two CTA counts, and with a plan from `kareus optimize` for
#    that job applied (clocks through NVML), printing what the runtime and NVML recorded.
# Everything it prints is also written to OUTDIR/device-check.log.
#
# Dry run without a GPU (checks the script itself): KAREUS_CHECK_BACKEND=fake:period_s=0.1
# KAREUS_CHECK_BUILD=build scripts/device-check-runtime.sh — uses that backend and an existing
# build directory instead of building.
#
# Safe as root on a one-GPU machine: only device 0 is touched, every lock is removed on exit
# (trap: `kareus gpu reset --force`, then `nvidia-smi -rgc` as a fallback), and nothing runs
# longer than ~20 s. Needs jansson, LAPACKE, cmocka (the library's build dependencies), and
# python3 with torch for the workload (without torch, step 3 times an idle GPU instead).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUTDIR=${1:-${OUT:-$ROOT/build-device/check-out}}
mkdir -p "$OUTDIR"
LOG="$OUTDIR/device-check.log"
exec > >(tee "$LOG") 2>&1
BUILD=${KAREUS_CHECK_BUILD:+$ROOT/$KAREUS_CHECK_BUILD}
BUILD=${BUILD:-$ROOT/build-device}
BACKEND=${KAREUS_CHECK_BACKEND:-nvml}
K="$BUILD/kareus"
PY=${PYTHON:-python3}

restore() {
  if [ -x "$K" ]; then "$K" gpu reset --device 0 --force --backend "$BACKEND" >/dev/null 2>&1; fi
  command -v nvidia-smi >/dev/null && nvidia-smi -i 0 -rgc >/dev/null 2>&1
  true
}
trap restore EXIT
trap 'restore; exit 130' INT TERM

echo "== device-check-runtime: $(date -u +%FT%TZ) on $(hostname)"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv

echo "== build"
if [ -n "${KAREUS_CHECK_BUILD:-}" ]; then
  echo "using the existing build $BUILD"
elif ! { cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKAREUS_CUDA=OFF -DKAREUS_WERROR=OFF \
        >"$OUTDIR/cmake.log" 2>&1 && cmake --build "$BUILD" --target kareus_cli kareus >>"$OUTDIR/cmake.log" 2>&1; }; then
  echo "BUILD FAILED (nothing was changed on the GPU); last lines of $OUTDIR/cmake.log:"
  tail -15 "$OUTDIR/cmake.log"
  exit 1
fi
echo "built $K"

echo "== kareus gpu info"
"$K" gpu info --backend "$BACKEND"
echo "exit status $?"
"$K" gpu info --backend "$BACKEND" --json >"$OUTDIR/gpu-info.json" || true

echo "== the runtime on NVML around a known workload"
export KAREUS_LIB="$BUILD/libkareus.so" PYTHONPATH="$ROOT/bindings/python" OUTDIR BACKEND
timeout 120 "$PY" - <<'EOF'
import json, os, subprocess, sys, threading, time
import kareus

info = json.load(open(os.path.join(os.environ["OUTDIR"], "gpu-info.json")))
clocks = info["devices"][0]["sm_clocks_mhz"]
hi = clocks[0]
mid = min(clocks, key=lambda c: abs(c - 0.6 * hi))
print("device 0: %s, %d SM clocks %d..%d MHz; plan: forward at %d MHz, backward at %d MHz"
      % (info["devices"][0]["name"], len(clocks), clocks[-1], hi, mid, hi))
plan = os.path.join(os.environ["OUTDIR"], "plan-1stage.json")
json.dump({"schema": "kareus.plan", "version": 1, "method": "device-check",
           "job": {"name": "device-check", "stages": 1, "microbatches": 1, "schedule": "1f1b"},
           "stages": [{"stage": 0, "instructions": [{"kind": "forward", "microbatch": 0, "freq_mhz": mid},
                                                    {"kind": "backward", "microbatch": 0, "freq_mhz": hi}]}]},
          open(plan, "w"))
try:
    import torch
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    def work(seconds):
        n, t0 = 0, time.time()
        while time.time() - t0 < seconds:
            for _ in range(20):
                a @ b
            torch.cuda.synchronize()
            n += 20
        return n
    work(1.0)  # warm-up
    what = "bf16 8192^3 matmuls (torch)"
except Exception as exc:  # no torch or no CUDA in torch: idle windows still show the counter
    print("no torch workload (%s): timing an idle GPU instead" % exc)
    def work(seconds):
        time.sleep(seconds)
        return 0
    what = "idle"

def smi():
    try:
        q = subprocess.run(["nvidia-smi", "-i", "0", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader"],
                           capture_output=True, text=True)
        return q.stdout.strip()
    except OSError as exc:
        return "(nvidia-smi: %s)" % exc

with kareus.Runtime(plan, stage=0, device=0, backend=os.environ["BACKEND"], lock_dir=os.environ["OUTDIR"]) as rt:
    st = rt.status()
    print("runtime open: mode %s, device %s (%s), lock %s" % (st["mode"], st["device_name"], st["device_uuid"],
                                                             st["lock_path"]))
    for kind in ("forward", "backward"):
        t0 = time.perf_counter()
        with rt.instruction(kind, 0):
            hook = time.perf_counter() - t0
            rt.sync()
            applied = time.perf_counter() - t0
            seen = []
            probe = threading.Timer(1.5, lambda: seen.append(smi()))
            probe.start()
            n = work(3.0)
            probe.join()
        print("%-8s hook (Python + ctypes, first calls) %.1f us; clock applied by the worker %.1f ms after the hook; %d x %s in 3 s; "
              "nvidia-smi mid-window: %s; runtime status: %d sets, applied %d MHz"
              % (kind, 1e6 * hook, 1e3 * applied, n, what, seen[0] if seen else "?", rt.status()["clock_sets"],
                 rt.status()["applied_mhz"]))
    rt.step_end()
    rt.sync(timeout_s=1.0)
    e = rt.energy()
    print("energy: available %s, counter period observed %.1f ms, step %.2f J over %.3f s"
          % (e["available"], 1e3 * e["counter_period_s"], e["step_energy_j"], e["step_time_s"]))
    for i in e["instructions"]:
        print("  %-8s %4d MHz  %.3f s  %s J  (%d counter changes inside; mean %.1f W)"
              % (i["kind"], i["freq_mhz"], i["time_s"], "%.2f" % i["energy_j"] if i["energy_j"] is not None else "n/a",
                 i["counter_updates"], (i["energy_j"] or 0) / i["time_s"]))
    if rt.status()["mode"] != "control":
        print("NOTE: runtime not controlling clocks: " + rt.status()["reason"])
print("after close (lock removed): nvidia-smi %s" % smi())
time.sleep(1.0)
print("1 s later: nvidia-smi %s" % smi())
EOF
echo "exit status $?"

echo "== SIGTERM during an instruction"
timeout 60 "$PY" - <<'EOF' &
import os, time
import kareus
plan = os.path.join(os.environ["OUTDIR"], "plan-1stage.json")
rt = kareus.Runtime(plan, stage=0, device=0, backend=os.environ["BACKEND"], lock_dir=os.environ["OUTDIR"])
with rt.instruction("forward", 0):
    rt.sync()
    print("child: clock %d MHz applied; waiting for SIGTERM" % rt.status()["applied_mhz"], flush=True)
    time.sleep(30)
EOF
child=$!
sleep 6
smi_clock() { nvidia-smi -i 0 --query-gpu=clocks.sm --format=csv,noheader 2>&1 | sed "s/^/$1: SM clock /"; }
smi_clock "before SIGTERM"
kill -TERM "$child"
wait "$child"
echo "child exit status $? (143 = killed by SIGTERM after the handler restored the clocks)"
sleep 1
smi_clock "1 s after SIGTERM (idle, lock removed)"

echo "== kareus gpu reset"
"$K" gpu reset --device 0 --backend "$BACKEND"
echo "exit status $?"
echo "== kareus.torch on NCCL: step time with and without nanobatching, two CTA counts, a plan"
NG=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$NG" -ge 1 ] || NG=1
for TPN in 8 4 2 1; do [ "$TPN" -le "$NG" ] && break; done
JOBF="$OUTDIR/llama-tp$TPN.json"
cat >"$JOBF" <<EOF2
{"schema": "kareus.job", "version": 1, "name": "device-check-llama-tp$TPN", "gpu": "h100-sxm",
 "model": {"name": "check-llama", "hidden": 2048, "ffn": 5632, "heads": 16, "kv_groups": 8, "head_dim": 128,
           "layers": 4, "vocab": 32000, "tied_embeddings": false, "qk_norm": false, "source": "device check"},
 "cluster": {"gpus_per_node": $TPN, "nodes": 1, "inter_node_bw_GBps": 6.25, "inter_node_latency_us": 15.0},
 "parallelism": {"tp": $TPN, "cp": 1, "pp": 1, "dp": 1}, "microbatch_size": 8, "seq_len": 1024,
 "num_microbatches": 4, "layers_per_stage": [4], "virtual_stages": 1, "recompute": "none", "schedule": "1f1b"}
EOF2
"$K" optimize --job "$JOBF" --methods kareus --out "$OUTDIR/opt-torch" --no-pictures --quiet >/dev/null ||
  echo "kareus optimize failed for $JOBF"
TPLAN="$OUTDIR/opt-torch/plans/kareus/fastest.json"
[ "$TPN" -gt 1 ] || echo "(one GPU: TP 1 has no collective, so the CTA count cannot matter there; it is only recorded)"
TR=("$PY" -m torch.distributed.run --standalone --nproc_per_node "$TPN" "$ROOT/examples/train_llama_tp_pp.py"
    --job "$JOBF" --device cuda --dtype bfloat16 --steps 6)
for variant in "sequential:--sequential" "nanobatched, 8 CTAs:--sms 8" "nanobatched, 32 CTAs:--sms 32" \
               "nanobatched, plan + clocks:--plan $TPLAN --backend $BACKEND --lock-dir $OUTDIR"; do
  name=${variant%%:*}
  read -r -a extra <<<"${variant#*:}"
  timeout 300 "${TR[@]}" "${extra[@]}" --json "$OUTDIR/torch-{rank}.json" >"$OUTDIR/torch.out" 2>&1
  rc=$?
  "$PY" - "$OUTDIR/torch-0.json" "$name" "$rc" <<'EOF2'
import json, sys
path, name, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
try:
    d = json.load(open(path))
except (OSError, ValueError) as exc:
    print("%-28s FAILED (exit %d, %s)" % (name, rc, exc)); sys.exit(0)
t = sorted(d.get("step_times_s", [])[1:])  # the first step warms up
print("%-28s exit %d  TP %d: median step %.2f ms over %d steps, losses %s" % (
    name, rc, d["world_size"], 1e3 * t[len(t) // 2] if t else float("nan"), len(t),
    ["%.3f" % x for x in d.get("losses", [])]))
if "status" in d:
    s = d["status"]
    print("    NVML: mode %s, %d clock requests, %d set, last applied %d MHz, device %s; energy %s" % (
        s["mode"], s["clock_requests"], s["clock_sets"], s["applied_mhz"], s["device_uuid"], d.get("energy")))
if "error" in d:
    print("    error: " + d["error"]["message"])
EOF2
  [ "$rc" -eq 0 ] || tail -5 "$OUTDIR/torch.out"
  rm -f "$OUTDIR"/torch-*.json
done
grep -h "cannot set NCCL CTA counts" "$OUTDIR/torch.out" | head -1

echo "== done; log in $LOG"
