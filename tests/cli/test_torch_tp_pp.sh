#!/usr/bin/env bash
# test_torch_tp_pp.sh — kareus.torch under torchrun: PP 2 × TP 2 on CPU with gloo (4 processes).
#  1. For every launch slot and two CTA counts of every partition key, a nanobatched step gives the
#     loss and gradients of the sequential TP step, and both those of the single-process reference.
#  2. Training with a plan made by `kareus optimize` for the same job, on the fake GPU: per rank,
#     the clocks the backend recorded are the plan's for the rank's stage, then the restore; every
#     partition of every instruction ran with the plan's slot and CTA count.
#  3. A rank that runs its schedule out of order gets the runtime's precise KR_EMISMATCH.
#  4. Rank/device mapping from the environment: `kareus run` and kareus.torch, with precise errors.
# Uses Debian's /usr/bin/python3 with python3-torch (torch 1.13); skipped (77) without it.
set -u
source "$KR_SOURCE_DIR/tests/cli/lib.sh"
PY=/usr/bin/python3
if [ ! -x "$PY" ] || ! "$PY" -c 'import torch, torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then
  echo "SKIPPED: $PY with PyTorch and gloo not found (Debian: apt install python3-torch)"
  exit 77
fi
export KAREUS_LIB="${KR_LIBKAREUS:?KR_LIBKAREUS must point to libkareus.so}"
export PYTHONPATH="$KR_SOURCE_DIR/bindings/python"
SAN=${KAREUS_SANITIZED:-0}
if [ "$SAN" = 1 ]; then
  # An ASan-built libkareus needs the sanitizer runtimes preloaded into python (as in
  # test_python_example.sh). Four torch processes under them take too long: parts 1-3 are skipped
  # there, part 4 (the C mapping through `kareus run` and ctypes) runs.
  LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
  export LD_PRELOAD
  export ASAN_OPTIONS=detect_leaks=0
fi
JOB="$KR_SOURCE_DIR/examples/data/tiny_llama_tp2_pp2.json"
EX="$KR_SOURCE_DIR/examples/train_llama_tp_pp.py"
# torch 1.13 on Python 3.11 cannot parse its own default --redirects/--tee ("0"): pass 1 (stdout).
# Not --standalone: it always rendezvouses on port 29400, so two test runs on one machine (two
# build trees, or a CI runner shared by jobs) collide ("The connection to the C10d store has
# failed"). The same single-node c10d rendezvous, on a port the kernel reports free, each run.
torchrun4() {
  local port
  port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$PY" -m torch.distributed.run --nnodes 1 --rdzv_backend c10d --rdzv_endpoint "localhost:$port" \
    --rdzv_id "kareus-test-$$-$port" --nproc_per_node 4 -r 1 -t 1 --log_dir "$TMP/torchrun" "$@"
}

check() { # check NAME CMD… : runs CMD, reports ok/FAIL
  local name=$1
  shift
  if "$@" >"$TMP/out" 2>&1; then
    echo "ok: $name"
    grep -E '^(rank|raised) ' "$TMP/out"  # the figures the checks measured
  else
    echo "FAIL: $name (exit $?):" >&2
    tail -30 "$TMP/out" >&2
    fails=$((fails + 1))
  fi
}

# The plan (parts 2-4): `kareus optimize` for the same job.
check "kareus optimize for the job" "$KAREUS" optimize --job "$JOB" --methods kareus --out "$TMP/opt" --no-pictures --quiet
PLAN="$TMP/opt/plans/kareus/fastest.json"
# The same plan with the MLP partitions on NCCL (issue 31: a plan names each partition's kernel),
# so part 2 checks that the executor applies both kernels as planned.
PLAN_NCCL="$TMP/plan-nccl.json"
"$PY" - "$PLAN" "$PLAN_NCCL" <<'PYEOF'
import json, sys
p = json.load(open(sys.argv[1]))
for st in p["stages"]:
    for ins in st["instructions"]:
        for c in ins.get("comm", []) + ins.get("recompute", []):
            if c["key"].endswith("_mlp"):
                c["kernel"] = "nccl"
json.dump(p, open(sys.argv[2], "w"), indent=1)
PYEOF
check "the plan with NCCL partitions validates" "$KAREUS" plan validate "$PLAN_NCCL" --job "$JOB"

if [ "$SAN" = 1 ]; then
  echo "skipped under the sanitizers: parts 1-3 (torchrun, four torch processes)"
else
# 1. Nanobatched = sequential = reference, for every slot and two CTA counts of every key.
check "torchrun --check (PP2 x TP2, gloo)" torchrun4 "$EX" --check --json "$TMP/check-{rank}.json"
check "nanobatched vs sequential vs reference" "$PY" - "$TMP" "$JOB" <<'PYEOF'
import json, sys
import kareus.torch as kt
tmp, job = sys.argv[1], sys.argv[2]
# float64 throughout: one rounding is 1.1e-16; the parallel paths add the two TP partial sums and
# the nanobatch halves in a different order than the reference's single GEMMs, through ~40 ops
# per layer, so differences of a few 1e-15 are expected; 1e-12 leaves three orders of margin
# and is still ten orders below the effect of any wrong tensor or missing all-reduce.
TOL = 1e-12
cat = {p["key"]: p for p in kt.partition_catalog(job)}
want = {(k, s) for k in ("fwd_attn", "fwd_mlp", "bwd_mlp", "bwd_attn") for s in cat[k]["slots"]}
for r in range(4):
    c = json.load(open("%s/check-%d.json" % (tmp, r)))["check"]
    assert c["seq_vs_ref_grad"] < TOL, (r, c["seq_vs_ref_grad"])
    last = c["sequential_loss"] is not None
    if last:
        assert c["seq_vs_ref_loss"] < TOL, (r, c["seq_vs_ref_loss"])
    for run in c["runs"]:
        assert run["applied_as_configured"], (r, run["configs"])
        assert run["vs_seq_grad"] < TOL and run["vs_ref_grad"] < TOL, (r, run)
        if last:
            assert run["vs_seq_loss"] < TOL, (r, run)
    covered = {(k, s, sms) for k, s, sms in c["covered"]}
    smss = sorted({x[2] for x in covered})
    assert len(smss) == 2, smss
    assert {(k, s, m) for k, s in want for m in smss} <= covered, sorted(set((k, s, m) for k, s in want for m in smss) - covered)
    print("rank %d: %d runs, max grad diff vs sequential %.1e, vs reference %.1e, loss %s" % (
        r, len(c["runs"]), max(x["vs_seq_grad"] for x in c["runs"]), max(x["vs_ref_grad"] for x in c["runs"]),
        c["sequential_loss"]))
PYEOF

# 2. The plan applied on the fake GPU.
check "torchrun training with the plan" torchrun4 "$EX" --plan "$PLAN_NCCL" --steps 2 --verify \
  --backend "fake:devices=4,log=$TMP/fake-{rank}.log" --lock-dir "$TMP" --json "$TMP/train-{rank}.json"
check "clocks, comm configs and restore per rank" "$PY" - "$TMP" "$PLAN_NCCL" <<'PYEOF'
import json, sys
tmp, plan_path = sys.argv[1], sys.argv[2]
plan = json.load(open(plan_path))
for r in range(4):
    d = json.load(open("%s/train-%d.json" % (tmp, r)))
    st = plan["stages"][d["stage"]]["instructions"]
    # Clocks: what the fake backend logged (its own file), not what the example says.
    log = [l.split() for l in open("%s/fake-%d.log" % (tmp, r))]
    got = [(int(x[3]), int(x[4])) if x[1] == "set_clock" else (0, 0) for x in log
           if x[1] in ("set_clock", "reset_clock") and x[5] == "0" and int(x[2]) == d["device"]]
    clocks = [i["freq_mhz"] for i in st] * 2
    want = [(f, f) for i, f in enumerate(clocks) if i == 0 or clocks[i - 1] != f] + [(0, 0)]
    assert got == want, (r, got[:6], want[:6])
    assert d["device"] == r, (r, d["device"])       # torchrun local rank r -> fake GPU r
    # Comm configs: every instruction, every partition key, every layer and nanobatch.
    order = [(i["kind"], i["microbatch"]) for i in st] * 2
    assert [(a["kind"], a["microbatch"]) for a in d["applied"]] == order, r
    n = 0
    kernels = set()
    for step in range(2):
        for i, ins in enumerate(st):
            plan_cfg = {c["key"]: (c["slot"], c["sms"], c.get("kernel", "tuned")) for c in ins["comm"]}
            parts = [p for p in d["partitions"] if p["tag"] == [ins["kind"], ins["microbatch"]]]
            parts = parts[len(parts) // 2:] if step else parts[:len(parts) // 2]
            keyed = [p for p in parts if p["key"] != "trail"]
            assert len(keyed) == 2 * 2 * len(d["layers"]), (r, len(keyed))  # 2 keys x 2 NBs per layer
            for p in keyed:
                assert (p["slot"], p["sms"], p["kernel"]) == plan_cfg[p["key"]], (r, ins["kind"], ins["microbatch"], p, plan_cfg)
                n += 1
                kernels.add(p["kernel"])
    assert "nccl" in kernels, (r, kernels)  # the MLP partitions ran on NCCL as planned
    assert d["status"]["mismatched_steps"] == 0 and d["status"]["mode"] == "control", d["status"]
    print("rank %d (stage %d, GPU %s): %d clock changes then restore, %d partitions with the plan's comm config"
          % (r, d["stage"], d["uuid"], len(got) - 1, n))
PYEOF

# 3. A rank that deviates from the plan's order gets the runtime's precise error (and the job ends).
torchrun4 "$EX" --plan "$PLAN" --steps 1 --deviate 3 --backend "fake:devices=4" --lock-dir "$TMP" \
  --json "$TMP/dev-{rank}.json" >"$TMP/dev.out" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && grep -q '"name": "KR_EMISMATCH"' "$TMP/dev-3.json" &&
  grep -q 'stage 1, step 1: instruction 0: expected forward of microbatch 0 (chunk 0), found backward of microbatch 0' "$TMP/dev-3.json"; then
  echo "ok: deviating rank 3 got KR_EMISMATCH, the job failed (exit $rc)"
else
  echo "FAIL: deviating rank (exit $rc):" >&2
  cat "$TMP/dev-3.json" >&2 2>/dev/null
  tail -5 "$TMP/dev.out" >&2
  fails=$((fails + 1))
fi

fi

# 4. Rank and device mapping from the launcher's variables.
T4=(env RANK=3 WORLD_SIZE=4 LOCAL_RANK=3 LOCAL_WORLD_SIZE=4)
out=$("${T4[@]}" "$KAREUS" run --plan "$PLAN" --tp 2 --backend "fake:devices=4" --lock-dir "$TMP" -- \
  sh -c 'echo "device=$KAREUS_DEVICE stage=$KAREUS_STAGE"' 2>&1)
if grep -q "device=3 stage=1" <<<"$out"; then echo "ok: kareus run under torchrun: rank 3 -> device 3, stage 1"; else
  echo "FAIL: kareus run rank mapping: $out" >&2
  fails=$((fails + 1))
fi
out=$(env RANK=0 WORLD_SIZE=4 LOCAL_RANK=0 LOCAL_WORLD_SIZE=4 CUDA_VISIBLE_DEVICES=GPU-fake-3,GPU-fake-2,GPU-fake-1,GPU-fake-0 \
  "$KAREUS" run --plan "$PLAN" --job "$JOB" --backend "fake:devices=4" --lock-dir "$TMP" -- sh -c 'echo "device=$KAREUS_DEVICE"' 2>&1)
if grep -q "device=3" <<<"$out"; then echo "ok: kareus run maps CUDA_VISIBLE_DEVICES UUIDs"; else
  echo "FAIL: kareus run UUID mapping: $out" >&2
  fails=$((fails + 1))
fi
export RANK=1 WORLD_SIZE=4 LOCAL_RANK=1 LOCAL_WORLD_SIZE=4 CUDA_VISIBLE_DEVICES=0,2,2,3
expect_exit 2 "two ranks on one GPU: local ranks 1 and 2 both map to device 2" -- run --plan "$PLAN" --tp 2 \
  --backend "fake:devices=4" --lock-dir "$TMP" -- true
export CUDA_VISIBLE_DEVICES=0,1
expect_exit 2 "more local ranks than GPUs: 4 ranks on this node (LOCAL_WORLD_SIZE=4)" -- run --plan "$PLAN" --tp 2 \
  --backend "fake:devices=4" --lock-dir "$TMP" -- true
unset CUDA_VISIBLE_DEVICES
export RANK=5 WORLD_SIZE=8 LOCAL_RANK=5 LOCAL_WORLD_SIZE=8
expect_exit 2 "more local ranks than GPUs: 8 ranks on this node but the fake backend sees 4 GPUs" -- run \
  --plan "$PLAN" --tp 2 --backend "fake:devices=4" --lock-dir "$TMP" -- true
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE
export SLURM_PROCID=6 SLURM_NTASKS=8 SLURM_LOCALID=2 SLURM_TASKS_PER_NODE="4(x2)" SLURM_NODEID=1
out=$("$KAREUS" run --plan "$PLAN" --tp 2 --backend "fake:devices=4" --lock-dir "$TMP" -- sh -c 'echo "device=$KAREUS_DEVICE stage=$KAREUS_STAGE"' 2>&1)
if grep -q "device=2 stage=1" <<<"$out"; then echo "ok: kareus run under srun: task 6 -> device 2, stage 1"; else
  echo "FAIL: kareus run under srun: $out" >&2
  fails=$((fails + 1))
fi
unset SLURM_PROCID SLURM_NTASKS SLURM_LOCALID SLURM_TASKS_PER_NODE SLURM_NODEID
check "kareus.torch rank_info / gpu_device errors" "$PY" - <<'PYEOF'
import kareus, kareus.torch as kt
def expect(fn, name, needle):
    try:
        fn()
    except kareus.KareusError as e:
        assert e.name == name and needle in str(e), (e.name, str(e))
        print("raised", e.name, ":", e)
        return
    raise AssertionError("no error for " + needle)
env = {"RANK": 2, "WORLD_SIZE": 4, "LOCAL_RANK": 2, "LOCAL_WORLD_SIZE": 4}
i = kt.rank_info(tp=2, plan_stages=2, env=env)
assert (i["stage"], i["tp_rank"], i["launcher"]) == (1, 0, "torchrun"), i
i = kt.rank_info(tp=2, plan_stages=2, env=dict(env, CUDA_VISIBLE_DEVICES="GPU-fake-1,GPU-fake-0,GPU-fake-3,GPU-fake-2"))
assert kt.gpu_device(i, "fake:devices=4") == (3, "GPU-fake-3")
expect(lambda: kt.rank_info(tp=2, pp=4, plan_stages=2, env=dict(env, RANK=7, WORLD_SIZE=8)), "KR_ERANGE",
       "rank 7 is pipeline stage 3 (pp 4, order tp-cp-dp-pp), but the plan has 2 stages (0..1)")
expect(lambda: kt.gpu_device(kt.rank_info(tp=2, env=dict(env, CUDA_VISIBLE_DEVICES="0,1,1,3")), "fake:devices=4"),
       "KR_EMISMATCH", "two ranks on one GPU: local ranks 1 and 2 both map to device 1")
expect(lambda: kt.rank_info(env={"SLURM_PROCID": 1, "SLURM_NTASKS": 4, "SLURM_LOCALID": "x", "SLURM_NTASKS_PER_NODE": 4}),
       "KR_EPARSE", "SLURM_LOCALID: expected a non-negative integer, found 'x'")
print("ok")
PYEOF
finish
