#!/usr/bin/env bash
# test_campaign.sh — a sharded profiling campaign on the simulator (kareus profile --backend sim
# --shard, kareus log merge; docs/profiler.md "Cluster campaigns"): 4 shards merge to the
# single-machine frontiers byte for byte; a shard killed with SIGKILL and rerun resumes and loses
# nothing; a lost shard rerun elsewhere; duplicates and conflicts are counted; --shard auto reads
# the Slurm array and torchrun variables.
source "$(dirname "$0")/lib.sh"
cd "$TMP" || exit 1
unset SLURM_ARRAY_TASK_ID SLURM_ARRAY_TASK_COUNT SLURM_ARRAY_TASK_MIN SLURM_PROCID SLURM_NTASKS RANK WORLD_SIZE
P=(profile --backend sim --quiet)

check() { # check WHAT COMMAND...: counts a failure when the command fails
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what" >&2; fails=$((fails + 1)); fi
}

# The campaign: 10 units of the default job; round-robin over the shards.
out=$("$KAREUS" profile --plan-work --shard 1/4)
check "plan-work: shard 1 of 4 holds units 1, 5, 9" \
  test "$(awk '$1 ~ /^[0-9]+$/ {print $1 ":" $2 ":" $3}' <<<"$out" | tr '\n' ' ')" = "1:1:fwd_mlp 5:1:embed_bwd 9:1:loss_bwd "
check "plan-work: the TP group of a partition with its collective" grep -qE '^0 +0 +fwd_attn +kareus +a100-sxm4-40gb +8 +1440' <<<"$("$KAREUS" profile --plan-work)"

# One machine.
"$KAREUS" "${P[@]}" --log single.jsonl --out single >/dev/null || fails=$((fails + 1))
# Four shards, each its own log (%r: the shard index), then merged and resumed.
for i in 0 1 2 3; do "$KAREUS" "${P[@]}" --shard $i/4 --log shard-%r.jsonl --out fr-%r >/dev/null || fails=$((fails + 1)); done
check "every shard wrote its own log" test -s shard-0.jsonl -a -s shard-3.jsonl
expect_exit 0 "$(($(wc -l < single.jsonl) - 1)) measurements, 0 duplicates dropped, 0 conflicts" -- log merge merged.jsonl shard-0.jsonl shard-1.jsonl shard-2.jsonl shard-3.jsonl
check "the merged log holds the single machine's lines" cmp -s <(sort single.jsonl) <(sort merged.jsonl)
"$KAREUS" "${P[@]}" --log merged.jsonl --out merged > resumed.txt || fails=$((fails + 1))
check "resumed from the merged log: nothing measured again" test "$(grep -c ' 0 measured now' resumed.txt)" = 10
check "merged frontiers equal the single machine's byte for byte" diff -r single merged
mkdir union && cp fr-*/* union/
check "the shards' own frontiers are the single machine's" diff -r single union
# The same through the replay backend (exhaustive over what was recorded) on both logs.
"$KAREUS" search --backend replay --replay single.jsonl --log none --out rs --quiet >/dev/null
"$KAREUS" search --backend replay --replay merged.jsonl --log none --out rm --quiet >/dev/null
check "replays of the single and merged logs give the same frontiers" diff -r rs rm
same_points() { diff <(grep -hvE '"?(strategy|backend)"?[:,]' single/*) <(grep -hvE '"?(strategy|backend)"?[:,]' rm/*); }
check "... the single machine's points (only strategy and backend named differently)" same_points

# A shard killed with SIGKILL mid-run, then rerun: it resumes and loses nothing. Where the kill
# lands depends on timing; each try checks the same invariant, and at least one must land mid-run.
partial=0
for delay in 0.30 0.20 0.12 0.08 0.05 0.03; do
  rm -rf k.jsonl kfr
  "$KAREUS" "${P[@]}" --shard 0/1 --log k.jsonl --out kfr >/dev/null 2>&1 &
  pid=$!
  sleep "$delay"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  n=$(wc -l < k.jsonl 2>/dev/null || echo 0)
  [ "$n" -gt 1 ] && [ "$n" -lt 203 ] && partial=1
  "$KAREUS" "${P[@]}" --shard 0/1 --log k.jsonl --out kfr >/dev/null 2>&1 || fails=$((fails + 1))
  # A kill during a frontier's temp + rename can leave its temporary file (*.tmp.*) beside it;
  # the frontiers themselves must be whole and equal.
  if ! diff -r -x '*.tmp.*' single kfr >/dev/null || ! cmp -s <(sort single.jsonl) <(sort k.jsonl); then
    echo "FAIL: killed after ${delay}s ($n lines) and rerun: frontiers or log differ" >&2; fails=$((fails + 1))
  fi
  [ "$partial" = 1 ] && { echo "ok: killed after ${delay}s with $n of 203 lines, rerun: same frontiers and log"; break; }
done
[ "$partial" = 1 ] || echo "note: no kill landed mid-run (the run was faster than 0.03 s); the torn-line case below still ran"
# A torn last line (what a kill during a write leaves) is dropped on resume and re-measured.
head -c -40 single.jsonl > torn.jsonl
"$KAREUS" "${P[@]}" --log torn.jsonl --out tfr > torn.txt 2>&1 || fails=$((fails + 1))
check "a torn last line: dropped with a warning, re-measured" grep -q "dropped a torn last line" torn.txt
check "... and the frontiers are the single machine's" diff -r single tfr
head -c -40 shard-2.jsonl > torn2.jsonl
expect_exit 0 "torn last line" -- log merge mt.jsonl shard-0.jsonl shard-1.jsonl torn2.jsonl shard-3.jsonl

# A lost node: shard 2's log is gone; its units rerun anywhere (here in another directory).
mkdir other && (cd other && "$KAREUS" "${P[@]}" --shard 2/4 --log shard-%r.jsonl --out fr-%r >/dev/null) || fails=$((fails + 1))
"$KAREUS" log merge m2.jsonl shard-0.jsonl shard-1.jsonl other/shard-2.jsonl shard-3.jsonl >/dev/null || fails=$((fails + 1))
"$KAREUS" "${P[@]}" --log m2.jsonl --out m2 >/dev/null || fails=$((fails + 1))
check "a lost shard rerun elsewhere: the same frontiers" diff -r single m2

# Duplicates: a shard given twice (or rerun on two nodes) is kept once.
expect_exit 0 "$(($(wc -l < single.jsonl) - 1)) measurements, $(($(wc -l < shard-0.jsonl) - 1)) duplicates dropped, 0 conflicts" -- log merge d.jsonl shard-0.jsonl shard-1.jsonl shard-2.jsonl shard-3.jsonl shard-0.jsonl
check "merge of duplicates: the same lines" cmp -s <(sort single.jsonl) <(sort d.jsonl)
# A conflict: the same configuration with another measurement; the first copy is kept and named.
line=$(sed -n 2p shard-0.jsonl)
{ head -1 shard-0.jsonl; sed 's/"time_s":[0-9.e-]*/"time_s":0.5/' <<<"$line"; } > c.jsonl
expect_exit 0 "1 conflicting duplicate (the first copy kept), first: fwd_attn" -- log merge c1.jsonl shard-0.jsonl c.jsonl
expect_exit 0 "shard-0.jsonl:2 kept over c.jsonl:2" -- log merge c1.jsonl shard-0.jsonl c.jsonl
expect_exit 1 "conflicting duplicate" -- log merge --strict c2.jsonl shard-0.jsonl c.jsonl
check "the first copy is the one kept" grep -qF "$line" c1.jsonl
# A merge over an existing merged log of the same job replaces it; the same job is checked.
expect_exit 0 "merged 1 shard log" -- log merge merged.jsonl shard-0.jsonl
expect_exit 2 "expected the fingerprint of job 'qwen3-1.7b-tp8-mbs8-s4096'" -- log merge --job qwen3-1.7b-tp8-mbs8-s4096 q.jsonl shard-0.jsonl
check "a refused merge writes nothing" test ! -e q.jsonl

# --shard auto: the Slurm array task, an srun task, a torchrun rank.
sh_of() { env "$@" "$KAREUS" profile --plan-work --shard auto | head -1 | grep -oE '[0-9]+ shards?'; }
check "SLURM_ARRAY_TASK_ID/COUNT" test "$(env SLURM_ARRAY_TASK_ID=7 SLURM_ARRAY_TASK_MIN=5 SLURM_ARRAY_TASK_COUNT=3 "$KAREUS" profile --plan-work --shard auto | awk '$1 ~ /^[0-9]+$/ {print $2}' | sort -u)" = 2
check "torchrun RANK/WORLD_SIZE" test "$(sh_of RANK=1 WORLD_SIZE=4 LOCAL_RANK=1 LOCAL_WORLD_SIZE=4)" = "4 shards"
check "srun SLURM_PROCID/SLURM_NTASKS" test "$(sh_of SLURM_PROCID=2 SLURM_NTASKS=3 SLURM_LOCALID=2 SLURM_NTASKS_PER_NODE=3 SLURM_NODEID=0)" = "3 shards"
SLURM_ARRAY_TASK_ID=4 SLURM_ARRAY_TASK_COUNT=4 expect_exit 2 "expected SLURM_ARRAY_TASK_ID in [SLURM_ARRAY_TASK_MIN" -- profile --plan-work --shard auto
RANK=4 WORLD_SIZE=4 expect_exit 2 "RANK" -- profile --plan-work --shard auto
RANK=x WORLD_SIZE=4 expect_exit 2 "RANK" -- profile --plan-work --shard auto
RANK=1 WORLD_SIZE=4 "$KAREUS" "${P[@]}" --shard auto --log t-%r.jsonl --out tr-%r >/dev/null || fails=$((fails + 1))
check "a torchrun rank writes its shard's log" cmp -s shard-1.jsonl t-1.jsonl
# --emit-sbatch: an array of N tasks, each pinned to its shard; never over a file it did not write.
"$KAREUS" profile --emit-sbatch camp.sbatch --backend sim --shards 4 --out camp > emit.txt || fails=$((fails + 1))
check "emit-sbatch: a 4-task array" grep -q '^#SBATCH --array=0-3$' camp.sbatch
check "emit-sbatch: each task pinned to its shard" grep -qF -- '--shard "$SLURM_ARRAY_TASK_ID/4"' camp.sbatch
check "emit-sbatch: the torchrun command printed" grep -q '^python3 -m torch.distributed.run .*--nproc_per_node 4 .*--shard auto' emit.txt
check "emit-sbatch: bash accepts the script" bash -n camp.sbatch
expect_exit 0 "wrote camp.sbatch" -- profile --emit-sbatch camp.sbatch --backend sim --out camp
echo "my notes" > notes.txt
expect_exit 2 "notes.txt: expected a new file or a script this command wrote" -- profile --emit-sbatch notes.txt --out camp
check "... and the file is left as it was" test "$(cat notes.txt)" = "my notes"
finish
