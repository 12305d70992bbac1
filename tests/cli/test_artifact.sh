#!/usr/bin/env bash
# test_artifact.sh — the published system's plan files in and out: every real artifact file in
# tests/data/artifact (Kareus freqs+scheds, Perseus freqs, Nanobatching+Perseus freqs) imports
# into a plan for its job and exports back to the same lists and the same trailer numbers; our
# own CP plan survives export → import unchanged; exported files load the way Zeus's
# PointSolution3D and Kareus's parse_schedule_file load them (tests/cli/artifact_check.py with
# /usr/bin/python3); a job name cannot inject code into an exported file; bad files of each kind
# get file:line:column errors and exit status 2.
. "$(dirname "$0")/lib.sh"
A="$KR_TESTDATA_DIR/data/artifact"
CHECK="$KR_SOURCE_DIR/tests/cli/artifact_check.py"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

check() { # label command...
  local label=$1
  shift
  if "$@" >"$TMP/check.out" 2>&1; then
    echo "ok: $label"
  else
    echo "FAIL: $label" >&2
    cat "$TMP/check.out" >&2
    fails=$((fails + 1))
  fi
}

# The lists (everything before the first comment line) and the two energy lines must match.
same_numbers() { # original exported
  cmp -s <(grep -v '^#' "$1") <(grep -v '^#' "$2") &&
    cmp -s <(grep -E '^# Iteration [0-9]+ total cost( with P2P)?: ' "$1") \
      <(grep -E '^# Iteration [0-9]+ total cost( with P2P)?: ' "$2")
}

# ---- real artifact files: import → export → the same numbers ---------------------------------
J1=llama3.2-3b-tp8-mbs8-s4096
J2=llama3.2-3b-cp2tp4-mbs8-s4096
expect_exit 0 "kareus plan for job '$J1' (2 stages, 8 microbatches, step 2495)" -- plan import \
  "$A/kareus/freqs_pipeline_02495.py" "$A/kareus/scheds_pipeline_02495.py" --job $J1 --out "$TMP/k.json"
expect_exit 0 "fits the job" -- plan validate "$TMP/k.json" --job $J1
expect_exit 0 "scheds_pipeline_02495.py" -- plan export-artifact "$TMP/k.json" --job $J1 --out "$TMP/k"
check "kareus freqs round-trips" same_numbers "$A/kareus/freqs_pipeline_02495.py" "$TMP/k/freqs_pipeline_02495.py"
check "kareus scheds round-trips" same_numbers "$A/kareus/scheds_pipeline_02495.py" "$TMP/k/scheds_pipeline_02495.py"
check "kareus exported freqs load as Zeus loads them" "$PY" "$CHECK" freqs "$TMP/k/freqs_pipeline_02495.py" 2 1 16
check "kareus exported scheds load as Kareus loads them" "$PY" "$CHECK" scheds "$TMP/k/scheds_pipeline_02495.py" 2 1 16
# The imported plan predicts the iteration time the trailer implies: (with − total) / (2 · 85 W).
expect_exit 0 "predicted: iteration 4.353000 s" -- plan show "$TMP/k.json"

expect_exit 0 "perseus plan for job 'default'" -- plan import "$A/perseus/freqs_pipeline_01392.py" --out "$TMP/p.json"
expect_exit 0 "freqs_pipeline_01392.py" -- plan export-artifact "$TMP/p.json" --out "$TMP/p"
check "perseus freqs round-trips" same_numbers "$A/perseus/freqs_pipeline_01392.py" "$TMP/p/freqs_pipeline_01392.py"
[ ! -e "$TMP/p/scheds_pipeline_01392.py" ] && echo "ok: no scheds file for a Perseus plan" ||
  { echo "FAIL: scheds file written for a Perseus plan" >&2; fails=$((fails + 1)); }
expect_exit 0 "" -- plan export-zeus "$TMP/p.json" --out "$TMP/pz.py"
check "export-zeus writes the artifact's freqs file" same_numbers "$A/perseus/freqs_pipeline_01392.py" "$TMP/pz.py"

expect_exit 0 "nanobatch+perseus plan for job '$J2'" -- plan import "$A/nanobatch_perseus/freqs_pipeline_00084.py" \
  --method nanobatch+perseus --job $J2 --out "$TMP/n.json"
expect_exit 0 "" -- plan export-artifact "$TMP/n.json" --job $J2 --out "$TMP/n"
check "nanobatch+perseus freqs round-trips" same_numbers "$A/nanobatch_perseus/freqs_pipeline_00084.py" \
  "$TMP/n/freqs_pipeline_00084.py"
check "real artifact files themselves pass the loader check" "$PY" "$CHECK" scheds \
  "$A/kareus/scheds_pipeline_02495.py" 2 1 16

# ---- our own CP plan: export → import gives the same schedule ---------------------------------
# The artifact's scheds files know the tuned kernel only (issue 31): optimize restricted to it, so
# its Kareus plans can be written in them. The default run's plans with NCCL partitions are
# refused below.
expect_exit 0 "Kareus" -- optimize --job $J2 --methods kareus --restrict only-tuned --out "$TMP/cp" --no-pictures --quiet
# optimize writes every chosen plan as the artifact's pair too (plans/<method>/…_pipeline_<step>.py).
nf=$(ls "$TMP/cp/plans/kareus"/freqs_pipeline_*.py | wc -l)
ns=$(ls "$TMP/cp/plans/kareus"/scheds_pipeline_*.py | wc -l)
[ "$nf" -ge 1 ] && [ "$nf" = "$ns" ] && echo "ok: optimize wrote $nf freqs/scheds pairs" ||
  { echo "FAIL: optimize wrote $nf freqs and $ns scheds files" >&2; fails=$((fails + 1)); }
check "optimize's scheds files load as Kareus loads them" "$PY" "$CHECK" scheds \
  "$(ls "$TMP/cp/plans/kareus"/scheds_pipeline_*.py | head -1)" 2 2 16
expect_exit 0 "scheds_pipeline_" -- plan export-artifact "$TMP/cp/plans/kareus/fastest.json" --job $J2 --out "$TMP/cpa" \
  --index 7
check "CP freqs load as Zeus loads them" "$PY" "$CHECK" freqs "$TMP/cpa/freqs_pipeline_00007.py" 2 2 16
check "CP scheds (6/13-element tuples) load as Kareus loads them" "$PY" "$CHECK" scheds \
  "$TMP/cpa/scheds_pipeline_00007.py" 2 2 16
expect_exit 0 "step 7" -- plan import "$TMP/cpa/freqs_pipeline_00007.py" "$TMP/cpa/scheds_pipeline_00007.py" --job $J2 \
  --out "$TMP/cpb.json"
same_schedule() { # a.json b.json: same clocks and comm settings per instruction
  "$PY" - "$1" "$2" <<'EOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
def sched(p):
    return [[(i["kind"], i["microbatch"], i["freq_mhz"],
              sorted((c["key"], c["slot"], c["sms"]) for c in i.get("comm", [])),
              sorted((c["key"], c["slot"], c["sms"]) for c in i.get("recompute", [])))
             for i in st["instructions"]] for st in p["stages"]]
assert sched(a) == sched(b), "schedules differ"
rel = lambda x, y: abs(x - y) <= 1e-12 * max(1.0, abs(x))
assert rel(a["predicted"]["energy_j"], b["predicted"]["energy_j"]), "energy differs"
assert rel(a["predicted"]["effective_energy_j"], b["predicted"]["effective_energy_j"]), "effective energy differs"
print("same schedule and energies")
EOF
}
check "CP plan survives export → import" same_schedule "$TMP/cp/plans/kareus/fastest.json" "$TMP/cpb.json"
# The whole space: Kareus's plans run NCCL where it is better; such a plan has no artifact form, so
# optimize writes its JSON plan alone and export-artifact refuses it (exit 2, nothing written).
expect_exit 0 "Kareus" -- optimize --job $J2 --methods kareus --out "$TMP/cpn" --no-pictures --quiet
if grep -q '"kernel": "nccl"' "$TMP/cpn/plans/kareus/fastest.json"; then
  expect_exit 2 "runs NCCL with" -- plan export-artifact "$TMP/cpn/plans/kareus/fastest.json" --job $J2 --out "$TMP/cpn-a"
  [ ! -e "$TMP/cpn-a" ] || [ -z "$(ls -A "$TMP/cpn-a")" ] && echo "ok: nothing written for a plan with NCCL" ||
    { echo "FAIL: files written for a plan with NCCL" >&2; fails=$((fails + 1)); }
else
  echo "FAIL: the CP job's fastest Kareus plan runs no partition on NCCL (expected some, sim v3)" >&2
  fails=$((fails + 1))
fi

# ---- jobs without recomputation: the artifact's per-microbatch pair layout -------------------
# Built from the real schedule as the artifact's optimizer writes it (Python repr of a list of
# (forward, backward) pairs per stage), with one backward config per stage (uniform), and once
# with one microbatch's backward different.
K="$A/kareus/freqs_pipeline_02495.py"
printf '{"schema": "kareus.job", "version": 1, "name": "norc", "recompute": "none"}\n' >"$TMP/norc.json"
"$PY" - "$A/kareus/scheds_pipeline_02495.py" "$TMP/pairs_u.py" "$TMP/pairs_d.py" <<'EOF'
import ast, sys
src = open(sys.argv[1]).read()
stages = ast.literal_eval(src)
trailer = src[src.index("\n#") + 1:]
for path, differ in ((sys.argv[2], False), (sys.argv[3], True)):
    out = "[\n"
    for st in stages:
        fwd = [t for t in st if t[0] == "forward"]
        bwd = [t for t in st if t[0] == "backward"]
        pairs = []
        for m, f in enumerate(fwd):
            b = bwd[6 if differ and m == 5 else 0]
            pairs.append((f, ("backward",) + tuple(b[3:])))
        out += f"{pairs},\n"
    open(path, "w").write(out + "]\n" + trailer)
EOF
expect_exit 0 "kareus plan for job 'norc'" -- plan import "$K" "$TMP/pairs_u.py" --job "$TMP/norc.json" --out "$TMP/pu.json"
expect_exit 0 "fits the job" -- plan validate "$TMP/pu.json" --job "$TMP/norc.json"
expect_exit 0 "scheds_pipeline_02495.py" -- plan export-artifact "$TMP/pu.json" --job "$TMP/norc.json" --out "$TMP/pu"
check "pair layout round-trips" same_numbers "$TMP/pairs_u.py" "$TMP/pu/scheds_pipeline_02495.py"
check "exported pairs load as Kareus loads them without recomputation" "$PY" "$CHECK" pairs \
  "$TMP/pu/scheds_pipeline_02495.py" 2 1 8
expect_exit 0 "kareus plan for job 'norc'" -- plan import "$K" "$TMP/pairs_d.py" --job "$TMP/norc.json" --out "$TMP/pd.json"
expect_exit 2 "export: stage 0: the backward of microbatch 5 runs bwd_attn at slot attn_0 with 9 SMs, that of microbatch 0 at slot attn_0 with 3" -- \
  plan export-artifact "$TMP/pd.json" --job "$TMP/norc.json" --out "$TMP/pd"
expect_exit 2 "pairs_u.py:2:2: stage 0 item 0: expected one tuple per instruction" -- plan import "$K" "$TMP/pairs_u.py" \
  --job $J1 --out "$TMP/x.json"

# ---- a job name cannot break out of the trailer comment ---------------------------------------
"$PY" - "$TMP/evil.json" <<'EOF'
import json, subprocess, sys, os
kareus = os.environ["KAREUS"]
subprocess.run([kareus, "job", "write", "--out", sys.argv[1]], check=True, stdout=subprocess.DEVNULL)
j = json.load(open(sys.argv[1]))
j["name"] = "evil\n__import__('os').system('touch pwned')\r\"'#\\"
json.dump(j, open(sys.argv[1], "w"))
EOF
expect_exit 0 "" -- plan import "$A/perseus/freqs_pipeline_01392.py" --job "$TMP/evil.json" --out "$TMP/evil-plan.json"
expect_exit 0 "" -- plan export-zeus "$TMP/evil-plan.json" --job "$TMP/evil.json" --out "$TMP/evil.py"
check "an escaped job name leaves one expression in the file" "$PY" "$CHECK" freqs "$TMP/evil.py" 2 1 16
grep -q '^# kareus: method perseus, job evil\\x0a__import__' "$TMP/evil.py" && echo "ok: newline escaped as \\x0a" ||
  { echo "FAIL: job name not escaped" >&2; cat "$TMP/evil.py" >&2; fails=$((fails + 1)); }

# ---- bad files: file:line:column, expected vs found, exit 2 -----------------------------------
F="$A/perseus/freqs_pipeline_01392.py"
K="$A/kareus/freqs_pipeline_02495.py"
S="$A/kareus/scheds_pipeline_02495.py"
sed '2s/), (/) (/' "$F" >"$TMP/nocomma.py"
expect_exit 2 "nocomma.py:2:20: expected ',' or ']' (in the list opened at 2:1), found '('" -- plan import "$TMP/nocomma.py" \
  --out "$TMP/x.json"
printf '__import__("os").system("true")\n' >"$TMP/code.py"
expect_exit 2 "code.py:1:1: expected a list '[', a tuple '(', a quoted string or a number, found '__import__(\"'" -- \
  plan import "$TMP/code.py" --out "$TMP/x.json"
sed '2s/1320/1325/' "$F" >"$TMP/clock.py"
expect_exit 2 "clock.py:2:14: stage 0 instruction 0: expected a clock the a100-sxm4-40gb supports (210..1410 MHz" -- \
  plan import "$TMP/clock.py" --out "$TMP/x.json"
sed "2s/('forward', 930)/('backward', 930)/" "$F" >"$TMP/order.py"
expect_exit 2 "order.py:2:22: stage 0 instruction 1: expected 'forward' (the job's order runs the forward of microbatch 1" -- \
  plan import "$TMP/order.py" --out "$TMP/x.json"
sed '3d' "$F" >"$TMP/stages.py"
expect_exit 2 "stages.py:1:1: expected one list per pipeline stage (job 'default' has 2 stages" -- plan import \
  "$TMP/stages.py" --out "$TMP/x.json"
sed "2s/, ('backward', 1260)\]/]/" "$F" >"$TMP/short.py"
expect_exit 2 "short.py:2:1: stage 0: expected 16 instructions (1f1b, 8 microbatches), found 15" -- plan import \
  "$TMP/short.py" --out "$TMP/x.json"
sed '2s/1320/1320.0/' "$F" >"$TMP/float.py"
expect_exit 2 "float.py:2:14: stage 0 instruction 0: expected ('forward', MHz) with an integer clock, found a float" -- \
  plan import "$TMP/float.py" --out "$TMP/x.json"
printf "[\n[('forward, 1320)],\n]\n" >"$TMP/quote.py"
expect_exit 2 "quote.py:2:20: expected the closing ' of the string, found a newline" -- plan import "$TMP/quote.py" \
  --out "$TMP/x.json"
sed 's/total cost: 1453.7322380641658/total cost: lots/' "$F" >"$TMP/trailer.py"
expect_exit 2 "trailer.py:6:1: expected a trailer line '# Iteration N cost change|total cost|total cost with P2P: <number>'" -- \
  plan import "$TMP/trailer.py" --out "$TMP/x.json"
printf '[\n[],\n[],\n] junk\n' >"$TMP/junk.py"
expect_exit 2 "junk.py:4:3: expected nothing but comments after the top-level list, found 'junk'" -- plan import \
  "$TMP/junk.py" --out "$TMP/x.json"
sed "2s/'rope_0-none-12-1024', 'norm_0-none-6-1024'), ('forward'/'rope_0-none-12-1024'), ('forward'/" "$S" >"$TMP/len.py"
expect_exit 2 "len.py:2:2: stage 0 instruction 0: expected ('forward', 2 config strings)" -- plan import "$K" \
  "$TMP/len.py" --job $J1 --out "$TMP/x.json"
sed "2s/'rope_0-none-12-1024'/'qkv_0-none-12-1024'/" "$S" >"$TMP/slot.py"
expect_exit 2 "slot.py:2:14: stage 0 instruction 0, fwd_attn: config 'qkv_0-none-12-1024': expected a launch slot of fwd_attn (norm_0, linear_0, rope_0, attn_0), found 'qkv_0'" -- \
  plan import "$K" "$TMP/slot.py" --job $J1 --out "$TMP/x.json"
sed "2s/'rope_0-none-12-1024'/'2-8-12-1024'/" "$S" >"$TMP/legacy.py"
expect_exit 2 "legacy.py:2:14: stage 0 instruction 0, fwd_attn: config '2-8-12-1024'" -- plan import "$K" "$TMP/legacy.py" \
  --job $J1 --out "$TMP/x.json"
sed "2s/'rope_0-none-12-1024'/'rope_0-none-12-512'/" "$S" >"$TMP/block.py"
expect_exit 2 "block.py:2:14: stage 0 instruction 0, fwd_attn: config 'rope_0-none-12-512': expected block 1024" -- \
  plan import "$K" "$TMP/block.py" --job $J1 --out "$TMP/x.json"
sed "2s/'rope_0-none-12-1024'/'rope_0-none-200-1024'/" "$S" >"$TMP/sms.py"
expect_exit 2 "sms.py:2:14: stage 0 instruction 0, fwd_attn: config 'rope_0-none-200-1024': expected an SM count in [1, 107]" -- \
  plan import "$K" "$TMP/sms.py" --job $J1 --out "$TMP/x.json"
sed "2s/'rope_0-none-12-1024'/'rope_0-linear_0-12-1024'/" "$S" >"$TMP/end.py"
expect_exit 2 "end.py:2:14: stage 0 instruction 0, fwd_attn: config string 'rope_0-linear_0-12-1024': expected overlap_end 'none'" -- \
  plan import "$K" "$TMP/end.py" --job $J1 --out "$TMP/x.json"
sed 's/total cost: 2020.8429700808636/total cost: 2020.8/' "$S" >"$TMP/trail2.py"
expect_exit 2 "trail2.py: expected the same '# Iteration N …' trailer as" -- plan import "$K" "$TMP/trail2.py" --job $J1 \
  --out "$TMP/x.json"
# The artifact's per-microbatch pair layout (tests/kareus/conf/solution.py's shape) for a job that
# recomputes is named as such.
printf "[\n[(('forward', 'rope_0-none-3-1024', 'norm_0-none-3-1024'), ('backward', 'attn_0-none-3-1024', 'norm_0-none-3-1024'))],\n[],\n]\n" >"$TMP/pairs.py"
expect_exit 2 "pairs.py:2:2: stage 0 item 0: expected one tuple per instruction ('forward'|'backward', …) (the activation-checkpointing layout of job '$J1', which recomputes), found a (forward, backward) pair" -- \
  plan import "$K" "$TMP/pairs.py" --job $J1 --out "$TMP/x.json"
printf '{"schema": "kareus.job", "version": 1, "name": "norc", "recompute": "none"}\n' >"$TMP/norc.json"
expect_exit 2 "stage 0: expected 8 (forward, backward) pairs, one per microbatch (job 'norc' runs without recomputation), found 16" -- \
  plan import "$K" "$S" --job "$TMP/norc.json" --out "$TMP/x.json"
expect_exit 2 "method kareus: expected a scheds_pipeline_N.py file" -- plan import "$K" --method kareus --out "$TMP/x.json"
expect_exit 2 "expected FREQS.py and optionally SCHEDS.py, found 3" -- plan import "$K" "$S" "$S" --out "$TMP/x.json"
expect_exit 2 "job.fingerprint: expected" -- plan export-artifact "$TMP/k.json" --job $J2 --out "$TMP/wrong"
[ ! -e "$TMP/x.json" ] && echo "ok: no plan written on a failed import" ||
  { echo "FAIL: a plan was written by a failed import" >&2; fails=$((fails + 1)); }

finish
