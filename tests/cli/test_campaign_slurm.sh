#!/usr/bin/env bash
# test_campaign_slurm.sh — a profiling campaign on a real Slurm: a controller and a node daemon on
# this machine, started and stopped by this test (tests/cli/slurm_local.sh: a temporary
# slurm.conf, loopback, SlurmUser root). The script of `kareus profile --emit-sbatch` passes
# `sbatch --test-only`, runs as a 4-task array on the simulator, and its shards merge to the
# single-machine frontiers byte for byte; a task whose log lost its end (a node lost midway) is
# resubmitted alone (sbatch --array=2) and resumes. Skipped (77), with the reason, where Slurm is
# not installed, the test is not root or the daemons do not start.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/slurm_local.sh"
cd "$TMP" || exit 1
trap 'slurm_local_stop; rm -rf "$TMP"' EXIT INT TERM
mkdir slurm c
if ! slurm_local_start "$TMP/slurm" 2; then
  echo "SKIPPED: $SLURM_LOCAL_WHY"
  exit 77
fi
echo "ok: slurmctld and slurmd up on 127.0.0.1 ($(grep -E '^AuthType' "$SLURM_CONF"))"
KAREUS=$(realpath "$KAREUS")

check() { # check WHAT COMMAND...
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what" >&2; fails=$((fails + 1)); fi
}
wait_job() { # wait_job ID: until the job (all its array tasks) has left the queue, at most 90 s
  local i
  for i in $(seq 1 180); do
    [ -z "$(squeue -h -j "$1" 2>/dev/null)" ] && return 0
    sleep 0.5
  done
  echo "FAIL: job $1 still queued after 90 s: $(squeue -j "$1" 2>&1 | tail -3)" >&2
  return 1
}

"$KAREUS" profile --backend sim --quiet --log single.jsonl --out single >/dev/null || fails=$((fails + 1))
"$KAREUS" profile --emit-sbatch c/campaign.sbatch --backend sim --shards 4 --out c > c/emit.txt || fails=$((fails + 1))
check "the emitted script passes sbatch --test-only" sbatch --test-only c/campaign.sbatch
jid=$(sbatch --parsable c/campaign.sbatch) || fails=$((fails + 1))
wait_job "$jid" || fails=$((fails + 1))
for i in 0 1 2 3; do
  check "array task $i took shard $i from SLURM_ARRAY_TASK_ID" grep -q "shard $i of 4" "c/slurm-${jid}_$i.out"
done
expect_exit 0 "$(($(wc -l < single.jsonl) - 1)) measurements, 0 duplicates dropped, 0 conflicts" -- log merge c/merged.jsonl c/shard-0.jsonl c/shard-1.jsonl c/shard-2.jsonl c/shard-3.jsonl
"$KAREUS" profile --backend sim --quiet --log c/merged.jsonl --out merged > resumed.txt || fails=$((fails + 1))
check "resumed from the merged log: nothing measured again" test "$(grep -c ' 0 measured now' resumed.txt)" = 10
check "merged frontiers equal the single machine's byte for byte" diff -r single merged

# Task 2's node lost midway: its log keeps only a part, the last line torn; resubmitted alone.
n=$(wc -l < c/shard-2.jsonl)
head -c $(( $(wc -c < c/shard-2.jsonl) * 2 / 5 )) c/shard-2.jsonl > c/cut && mv c/cut c/shard-2.jsonl
rm -rf c/frontiers-2
jid2=$(sbatch --parsable --array=2 c/campaign.sbatch) || fails=$((fails + 1))
wait_job "$jid2" || fails=$((fails + 1))
check "the rerun task resumed from its log (and dropped the torn line)" grep -qE "dropped a torn last line|from the log" "c/slurm-${jid2}_2.out"
check "the rerun task's log is whole again ($n lines)" test "$(wc -l < c/shard-2.jsonl)" = "$n"
"$KAREUS" log merge c/merged2.jsonl c/shard-*.jsonl >/dev/null || fails=$((fails + 1))
"$KAREUS" profile --backend sim --quiet --log c/merged2.jsonl --out merged2 >/dev/null || fails=$((fails + 1))
check "after the rerun: the single machine's frontiers byte for byte" diff -r single merged2
finish
