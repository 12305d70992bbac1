#!/usr/bin/env bash
# test_torch_doc_commands.sh — the documented torch.distributed.run commands run as written.
#  1. The usage lines of examples/train_llama_tp_pp.py's docstring (the first block indented by
#     four spaces) and the sh block of docs/runtime.md that launches it are extracted from those
#     files, not copied, and each is run by bash in a scratch folder whose examples/ is the
#     repository's (the commands use paths relative to the repository root): `kareus optimize`,
#     then four gloo ranks on CPU training with the plan on the fake GPU. Each must exit 0 and
#     leave one non-empty fake-backend log per rank.
#  2. No documented command uses a launcher option torch 1.13 refuses or that collides between
#     runs (--nproc-per-node, --standalone) in docs/, examples/, bindings/ or README.md.
# The rendezvous port is the documented default unless PET_MASTER_PORT is set, which torchrun
# reads for --master_port: each run here sets it to a port the kernel reports free, so runs in two
# build trees do not collide. Uses Debian's /usr/bin/python3 with python3-torch (torch 1.13), as
# the documented lines do; skipped (77) without it.
set -u
source "$KR_SOURCE_DIR/tests/cli/lib.sh"
PY=/usr/bin/python3
if [ ! -x "$PY" ] || ! "$PY" -c 'import torch, torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then
  echo "SKIPPED: $PY with PyTorch and gloo not found (Debian: apt install python3-torch)"
  exit 77
fi
if [ "${KAREUS_SANITIZED:-0}" = 1 ]; then
  echo "SKIPPED: under the sanitizers (four torch processes; cli.test_torch_tp_pp covers the rest)"
  exit 77
fi
EX="$KR_SOURCE_DIR/examples/train_llama_tp_pp.py"
DOC="$KR_SOURCE_DIR/docs/runtime.md"
export KAREUS_LIB="${KR_LIBKAREUS:?KR_LIBKAREUS must point to libkareus.so}"
export PYTHONPATH="$KR_SOURCE_DIR/bindings/python"
PATH="$(dirname "$KAREUS"):$PATH"

# The example's usage block: the first run of lines indented by four spaces in its docstring.
"$PY" - "$EX" >"$TMP/example.sh" <<'PYEOF'
import ast, sys
doc = ast.get_docstring(ast.parse(open(sys.argv[1]).read()), clean=False)
block, started = [], False
for line in doc.splitlines():
    if line.startswith("    ") and line.strip():
        block.append(line[4:])
        started = True
    elif started:
        break
print("\n".join(block))
PYEOF
# docs/runtime.md: the sh block that runs the example.
awk '/^```sh$/ { inb = 1; buf = ""; next }
     /^```$/ && inb { if (buf ~ /torch\.distributed\.run/ && buf ~ /train_llama_tp_pp\.py/) printf "%s", buf; inb = 0; next }
     inb { buf = buf $0 "\n" }' "$DOC" >"$TMP/runtime.sh"

run_doc() { # run_doc NAME FILE: FILE's commands, as written, in a scratch folder
  local name=$1 file=$2 dir port i logs=0
  if ! grep -q 'torch\.distributed\.run' "$file" || ! grep -q '^kareus optimize' "$file"; then
    echo "FAIL: $name: no kareus optimize + torch.distributed.run lines found; extracted:" >&2
    cat "$file" >&2
    fails=$((fails + 1))
    return
  fi
  dir=$(mktemp -d "$TMP/run.XXXXXX")
  ln -s "$KR_SOURCE_DIR/examples" "$dir/examples"
  port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  if (cd "$dir" && PET_MASTER_PORT=$port timeout 300 bash -e "$file") >"$TMP/out" 2>&1; then
    for i in 0 1 2 3; do [ -s "$dir/calls-$i.log" ] && logs=$((logs + 1)); done
    if [ "$logs" = 4 ]; then
      echo "ok: $name ran as written (4 ranks, 4 fake-backend logs)"
      return
    fi
    echo "FAIL: $name: exit 0 but $logs of 4 fake-backend logs (calls-{rank}.log)" >&2
  else
    echo "FAIL: $name: the documented commands failed (exit $?):" >&2
  fi
  sed 's/^/  /' "$file" >&2
  tail -30 "$TMP/out" >&2
  fails=$((fails + 1))
}

run_doc "examples/train_llama_tp_pp.py usage" "$TMP/example.sh"
# The two blocks are meant to be the same commands: run runtime.md's only where it differs.
if cmp -s <(tr -s ' \\\n' ' ' <"$TMP/example.sh") <(tr -s ' \\\n' ' ' <"$TMP/runtime.sh"); then
  echo "ok: docs/runtime.md's block is the example's usage (same commands)"
else
  run_doc "docs/runtime.md torch.distributed.run block" "$TMP/runtime.sh"
fi

# 2. Launcher lines with options that torch 1.13 refuses (--nproc-per-node) or that always take
# port 29400 (--standalone).
bad=$(cd "$KR_SOURCE_DIR" && grep -rnE -- '(torchrun|torch\.distributed\.run)\b.*--(nproc-per-node|standalone)\b' \
  docs examples bindings README.md)
if [ -n "$bad" ]; then
  echo "FAIL: documented launcher options that fail on torch 1.13 or collide (--nproc-per-node, --standalone):" >&2
  echo "$bad" >&2
  fails=$((fails + 1))
else
  echo "ok: no --nproc-per-node or --standalone in docs/, examples/, bindings/, README.md"
fi
finish
