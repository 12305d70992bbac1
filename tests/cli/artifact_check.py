"""artifact_check.py — checks exported plan files the way the published system loads them.

The artifact's consumers `eval()` these files: Zeus's PointSolution (wrapped by
PointSolution3D) expects a list with one list of (instruction, MHz) per pipeline stage, and
Kareus's parse_schedule_file (kareus/scheduler/parser.py, activation-checkpointing mode) expects
one list per stage of ('forward', configs...) / ('backward', configs...) tuples with 2/4 configs
(CP = 1) or 5/12 (CP > 1), each config "<start>-<end>-<sm>-<block>" with integer sm and block.
We restate those checks (no code copied) and load with ast.literal_eval, which accepts exactly
the literals eval() would build from these files and nothing else. The module must also hold a
single expression statement: anything else in the file would run under eval-by-exec loaders.

usage: artifact_check.py freqs|scheds|pairs FILE STAGES CP [ITEMS_PER_STAGE]
(pairs: the parser's layout for jobs without recomputation, one (('forward', fwd configs...),
('backward', bwd configs...)) pair per microbatch)
prints "ok ..." and exits 0, or prints the problem and exits 1.
"""
import ast
import re
import sys


def fail(msg):
    print("artifact_check: " + msg)
    sys.exit(1)


def config_ok(cfg):
    if not isinstance(cfg, str):
        return False
    if re.match(r"^(-?\d+)-(-?\d+)-(-?\d+)-(-?\d+)$", cfg):
        return True
    parts = cfg.rsplit("-", 2)
    if len(parts) != 3 or "-" not in parts[0]:
        return False
    try:
        int(parts[1])
        int(parts[2])
    except ValueError:
        return False
    return True


def main():
    kind, path, stages, cp = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    per_stage = int(sys.argv[5]) if len(sys.argv) > 5 else None
    text = open(path, encoding="utf-8").read()
    tree = ast.parse(text)
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr):
        fail("%s: expected a single expression, found %d statements" % (path, len(tree.body)))
    value = ast.literal_eval(text)
    if not isinstance(value, list) or len(value) != stages:
        fail("%s: expected a list of %d per-stage lists" % (path, stages))
    nf, nb = (2, 2) if cp == 1 else (5, 7)
    for s, lst in enumerate(value):
        if not isinstance(lst, list):
            fail("%s: stage %d is not a list" % (path, s))
        if per_stage is not None and len(lst) != per_stage:
            fail("%s: stage %d has %d instructions, expected %d" % (path, s, len(lst), per_stage))
        for i, t in enumerate(lst):
            if kind == "pairs":
                if not isinstance(t, tuple) or len(t) != 2:
                    fail("%s: stage %d item %d: expected a (forward, backward) pair" % (path, s, i))
                for want_name, want_len, tup in (("forward", 1 + nf, t[0]), ("backward", 1 + nb, t[1])):
                    if not isinstance(tup, tuple) or len(tup) != want_len or tup[0] != want_name:
                        fail("%s: stage %d item %d: expected ('%s', %d configs), found %r" %
                             (path, s, i, want_name, want_len - 1, tup))
                    for cfg in tup[1:]:
                        if not config_ok(cfg):
                            fail("%s: stage %d item %d: bad config string %r" % (path, s, i, cfg))
                continue
            if not isinstance(t, tuple) or not t or t[0] not in ("forward", "backward"):
                fail("%s: stage %d item %d is not an instruction tuple" % (path, s, i))
            if kind == "freqs":
                if len(t) != 2 or not isinstance(t[1], int) or isinstance(t[1], bool):
                    fail("%s: stage %d item %d: expected (name, int MHz), found %r" % (path, s, i, t))
            else:
                want = 1 + nf + (nb if t[0] == "backward" else 0)
                if len(t) != want:
                    fail("%s: stage %d item %d: expected %d elements, found %d" % (path, s, i, want, len(t)))
                for cfg in t[1:]:
                    if not config_ok(cfg):
                        fail("%s: stage %d item %d: bad config string %r" % (path, s, i, cfg))
    print("ok: %s loads as the artifact loads it (%d stages, %s)" % (path, stages, kind))


main()
