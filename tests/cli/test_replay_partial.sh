#!/usr/bin/env bash
# test_replay_partial.sh — replaying a partial recording, as a BO run leaves one (the artifact's
# fwd_attn budget is 224 of 720 configurations): the search covers exactly the recorded
# configurations, reports itself as restricted to them, and its frontier equals the Pareto
# frontier of the recorded points computed independently here; `optimize --replay` takes the
# artifact's per-key eval_results.jsonl next to our logs, marks the partition in summary.json,
# and when recordings are missing names every partition (per variant and method) still needed.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

# A complete recording on the simulator (every variant, the non-partition work).
expect_exit 0 "Kareus" -- optimize --out "$TMP/full" --no-pictures --quiet
# 224 of fwd_attn's 720 kareus configurations of the tuned kernel in the artifact's eval_results.jsonl layout (no key:
# the directory names it), the rest of the recording in ours.
ART="$TMP/logs/llama3.2_3b/cp1-tp8-bs8-seq4096/fwd_attn"
mkdir -p "$ART"
"$PY" - "$TMP/full/measurements.jsonl" "$ART/eval_results.jsonl" "$TMP/rest.jsonl" <<'EOF'
import json, random, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
lines = [r for r in lines if "key" in r]  # the log's first line is its header (schema kareus.mlog)
# The artifact's layout knows the tuned kernel only: its 720; our NCCL lines of fwd_attn are left
# out of both files, so fwd_attn is recorded by the artifact's file alone.
fa = [r for r in lines if r["key"] == "fwd_attn" and r["variant"] == "kareus" and r.get("kernel", "tuned") == "tuned"]
assert len(fa) == 720, len(fa)
keep = random.Random(13).sample(fa, 224)
with open(sys.argv[2], "w") as f:
    for r in keep:
        a = {k: r[k] for k in ("freq", "overlap_start", "overlap_end", "sm", "block", "time_s", "energy_j")}
        a.update(selected_dynamic=False, selected_real=True, selected_time=False, selected_uncertainty=False)
        f.write(json.dumps(a) + "\n")
with open(sys.argv[3], "w") as f:
    for r in lines:
        if not (r["key"] == "fwd_attn" and r["variant"] == "kareus"):
            f.write(json.dumps(r) + "\n")
EOF

# search on the partial log: exhaustive by default on a replay, restricted to the 224 points.
expect_exit 0 "\"recorded\": 224, \"measurements\": 224" -- search --backend replay --replay "$ART/eval_results.jsonl" \
  --partition fwd_attn --log none --out "$TMP/rep" --json --quiet
expect_exit 0 "recorded points only" -- search --backend replay --replay "$ART/eval_results.jsonl" --partition fwd_attn \
  --log none --out "$TMP/rep" --quiet
frontier_of_recorded() { # eval_results.jsonl frontier.json static_power
  "$PY" - "$@" <<'EOF'
import json, sys
rec = [json.loads(l) for l in open(sys.argv[1])]
front = json.load(open(sys.argv[2]))
P = float(sys.argv[3])
cfg = lambda f, s, m: (int(f), s, int(m))
recorded = {cfg(r["freq"], r["overlap_start"], r["sm"]): (r["time_s"], r["energy_j"]) for r in rec}
got = {cfg(p["freq_mhz"], p["slot"], p["sms"]): p for p in front["points"]}
assert set(got) == set(recorded), "evaluated %d configurations, recorded %d" % (len(got), len(recorded))
for plane, flag, y in (("effective", "pareto_eff", lambda t, e: e - P * t), ("total", "pareto_total", lambda t, e: e)):
    pts = {c: (t, y(t, e)) for c, (t, e) in recorded.items()}
    want = {c for c, (t, v) in pts.items()
            if not any(t2 <= t and v2 <= v and (t2 < t or v2 < v) for t2, v2 in pts.values())}
    have = {c for c, p in got.items() if p[flag]}
    assert want == have, "%s frontier: %d expected, %d flagged, %d in common" % (plane, len(want), len(have), len(want & have))
    print("%s frontier of the %d recorded points: %d points, as expected" % (plane, len(recorded), len(want)))
EOF
}
check_front() {
  if out=$(frontier_of_recorded "$@" 2>&1); then echo "ok: $out" | head -2; else
    echo "FAIL: $out" >&2
    fails=$((fails + 1))
  fi
}
check_front "$ART/eval_results.jsonl" "$TMP/rep/fwd_attn.kareus.json" 85

# optimize: our log for everything else plus the artifact's log for fwd_attn (KEY= form).
expect_exit 0 "Kareus" -- optimize --replay "$TMP/rest.jsonl" --replay "fwd_attn=$ART/eval_results.jsonl" \
  --out "$TMP/opt" --no-pictures --quiet
"$PY" - "$TMP/opt/summary.json" <<'EOF' && echo "ok: summary marks fwd_attn as restricted to 224 recorded points" ||
import json, sys
s = json.load(open(sys.argv[1]))
entries = [x for v in s["search"] for x in (v.get("partitions") or [v]) if isinstance(x, dict)]
hit = [x for x in entries if x.get("key") == "fwd_attn" and x.get("restricted_to_recorded") == 224]
assert hit, json.dumps(s["search"])[:400]
EOF
  { echo "FAIL: summary.json does not mark the restricted search" >&2; fails=$((fails + 1)); }
check_front "$ART/eval_results.jsonl" "$TMP/opt/partitions/fwd_attn.kareus.json" 85

# Only the artifact's logs: every other needed partition is named, per variant and method.
expect_exit 2 "optimize --replay: the recordings hold no measurement of" -- optimize \
  --replay "fwd_attn=$ART/eval_results.jsonl" --out "$TMP/opt2" --no-pictures --quiet
expect_exit 2 "kareus variant (for Kareus): fwd_mlp, bwd_mlp, bwd_attn;" -- optimize \
  --replay "fwd_attn=$ART/eval_results.jsonl" --out "$TMP/opt2" --no-pictures --quiet
expect_exit 2 "sequential variant (for Megatron, Perseus): fwd_attn, fwd_mlp, bwd_mlp, bwd_attn;" -- optimize \
  --replay "fwd_attn=$ART/eval_results.jsonl" --out "$TMP/opt2" --no-pictures --quiet
expect_exit 2 "non-partition work (every method): embed_fwd, embed_bwd, lmhead_fwd, loss_fwd, lmhead_bwd, loss_bwd." -- optimize \
  --replay "fwd_attn=$ART/eval_results.jsonl" --out "$TMP/opt2" --no-pictures --quiet
# A partition with no recording at all fails the search with its name.
expect_exit 2 "no recorded measurement of partition fwd_mlp (kareus variant)" -- search --backend replay \
  --replay "fwd_attn=$ART/eval_results.jsonl" --partition fwd_mlp --log none --out "$TMP/rep3" --quiet

finish
