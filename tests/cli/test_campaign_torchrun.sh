#!/usr/bin/env bash
# test_campaign_torchrun.sh — a profiling campaign under torchrun with 4 processes: the torchrun
# command `kareus profile --emit-sbatch` prints, run as printed (a free loopback port instead of
# 29500), each rank taking its shard from RANK/WORLD_SIZE; the shards merge to the
# single-machine frontiers byte for byte. Uses Debian's /usr/bin/python3 with python3-torch
# (torch 1.13); skipped (77) without it.
source "$(dirname "$0")/lib.sh"
cd "$TMP" || exit 1
PY=/usr/bin/python3
if [ ! -x "$PY" ] || ! "$PY" -c 'import torch.distributed.run' 2>/dev/null; then
  echo "SKIPPED: $PY with PyTorch (torch.distributed.run) not found (Debian: apt install python3-torch)"
  exit 77
fi
KAREUS=$(realpath "$KAREUS")
check() { # check WHAT COMMAND...
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what" >&2; fails=$((fails + 1)); fi
}
"$KAREUS" profile --backend sim --quiet --log single.jsonl --out single >/dev/null || fails=$((fails + 1))
mkdir c
"$KAREUS" profile --emit-sbatch c/campaign.sbatch --backend sim --shards 4 --out c > c/emit.txt || fails=$((fails + 1))
port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cmd=$(grep '^python3 -m torch.distributed.run' c/emit.txt | sed "s|^python3 |$PY |; s|127.0.0.1:29500|127.0.0.1:$port|")
check "the printed torchrun command" test -n "$cmd"
eval "timeout 180 $cmd" > torchrun.out 2>&1 || { echo "FAIL: torchrun exited $?:" >&2; tail -20 torchrun.out >&2; fails=$((fails + 1)); }
for i in 0 1 2 3; do check "rank $i took shard $i of 4 from RANK" grep -q "shard $i of 4 (from RANK)" torchrun.out; done
expect_exit 0 "$(($(wc -l < single.jsonl) - 1)) measurements, 0 duplicates dropped, 0 conflicts" -- log merge c/merged.jsonl c/shard-0.jsonl c/shard-1.jsonl c/shard-2.jsonl c/shard-3.jsonl
"$KAREUS" profile --backend sim --quiet --log c/merged.jsonl --out merged > resumed.txt || fails=$((fails + 1))
check "resumed from the merged log: nothing measured again" test "$(grep -c ' 0 measured now' resumed.txt)" = 10
check "merged frontiers equal the single machine's byte for byte" diff -r single merged
# A rerun of the same command resumes every rank from its log: nothing measured again.
eval "timeout 180 $cmd" > rerun.out 2>&1 || fails=$((fails + 1))
check "a rerun under torchrun measures nothing" test "$(grep -c ' 0 measured now' rerun.out)" = 10
finish
