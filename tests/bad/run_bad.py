#!/usr/bin/env python3
"""Bad-input test set (issue 14): every case must make `kareus` exit 2 with a message naming the
file (or option) and the place in it, and leave every file in its working directory exactly as
it was — nothing written, nothing changed, nothing created.

Each case builds its inputs in a fresh directory from the valid files in tests/bad/base (made by
`kareus job write`, `kareus optimize --methods megatron,perseus,kareus` and a custom GPU entry;
the job fingerprint in them is replaced by the current one at run time, so simulator or catalog
changes do not turn a case into a different failure), runs the command there, then compares a
snapshot of the directory (paths, types, modes, sizes, contents, symlink targets).

Usage: KAREUS=path/to/kareus python3 run_bad.py [-v] [-k SUBSTRING]
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BASE = os.path.join(HERE, "base")
KAREUS = os.environ.get("KAREUS")
BASE_FP = "b2a97492534010db"  # the fingerprint the base files were written with


def read(name):
    with open(os.path.join(BASE, name), "rb") as f:
        return f.read()


def current_fp():
    out = subprocess.run([KAREUS, "job", "show"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.strip().startswith("fingerprint "):
            return line.split()[1]
    return BASE_FP


FP = None


def base(name):
    return read(name).replace(BASE_FP.encode(), FP.encode())


def jbase(name):
    return json.loads(base(name))


def dumps(obj):
    return (json.dumps(obj, indent=2) + "\n").encode()


def snapshot(root):
    snap = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                snap[rel] = ("link", os.readlink(p))
            elif os.path.isdir(p):
                snap[rel] = ("dir", st.st_mode & 0o7777)
            else:
                with open(p, "rb") as f:
                    snap[rel] = ("file", st.st_mode & 0o7777, st.st_size, hashlib.sha256(f.read()).hexdigest())
    return snap


CASES = []


def case(name, files, args, *needles, dirs=(), links=None):
    """files: {relative path: bytes}; args: kareus arguments (relative paths are inside the case
    directory); needles: substrings the output must contain (file name and location)."""
    CASES.append((name, files, args, needles, dirs, links or {}))


# ---- job files (kareus job validate FILE) ----------------------------------------------------

def job_case(name, mutate, *needles, raw=None):
    if raw is None:
        j = jbase("job.json")
        mutate(j)
        data = dumps(j)
    else:
        data = raw
    case("job-" + name, {"bad.json": data}, ["job", "validate", "bad.json"], "bad.json", *needles)


def setp(path, value):
    def f(j):
        o = j
        for k in path[:-1]:
            o = o[k]
        o[path[-1]] = value
    return f


def build_job_cases():
    job = base("job.json")
    job_case("nul-then-bytes", None, ":26:1: expected text, found a NUL byte", raw=job.replace(b"\n  \"virtual_stages\"", b"\n\x00  \"virtual_stages\"", 1) + b"\x00garbage")
    job_case("nul-at-end", None, "expected text, found a NUL byte", raw=job + b"\x00{\"x\":1}")
    job_case("utf8-bom", None, ":1:1: expected text, found a UTF-8 byte-order mark", raw=b"\xef\xbb\xbf" + job)
    job_case("empty-file", None, "bad.json:1:", raw=b"")
    job_case("truncated", None, "bad.json:", "invalid JSON", raw=job[: len(job) // 2])
    job_case("duplicate-key", None, "bad.json:", "duplicate", raw=job.replace(b'"name": "default"', b'"name": "a", "name": "b"'))
    job_case("trailing-garbage", None, "bad.json:", "invalid JSON", raw=job + b"}}")
    job_case("long-line", None, ":1: expected lines of at most", raw=b"{" + b" " * (5 << 20) + b"}")
    job_case("parallelism-product-overflow", lambda j: (j["parallelism"].update(tp=8, cp=1000000, pp=2, dp=1000000),
                                                        j.update(seq_len=2000000), j["cluster"].pop("nodes")),
             "parallelism: expected tp*cp*pp*dp <=")
    job_case("parallelism-product-too-big", lambda j: (j["parallelism"].update(dp=1000000), j["cluster"].update(nodes=1)),
             "cluster: expected at least tp*cp*pp*dp")
    job_case("microbatches-times-chunks-overflow", lambda j: j.update(schedule="interleaved-1f1b", num_microbatches=1000000,
                                                                      virtual_stages=1000),
             "num_microbatches: expected 2 x num_microbatches x virtual_stages <=")
    job_case("sms-allreduce-wraps-to-3", setp(["planning", "sms_allreduce"], [4294967299]),
             "$.planning.sms_allreduce[0]: expected an integer SM count in [1, 100000], found integer 4294967299")
    job_case("sms-allreduce-negative", setp(["planning", "sms_allreduce"], [-1]), "$.planning.sms_allreduce[0]")
    job_case("sms-allreduce-fraction", setp(["planning", "sms_allreduce"], [3.5]), "$.planning.sms_allreduce[0]")
    job_case("sms-allreduce-too-many", setp(["planning", "sms_allreduce"], list(range(1, 80))), "$.planning.sms_allreduce")
    job_case("sms-allreduce-beyond-gpu", setp(["planning", "sms_allreduce"], [3, 500]), "planning.sms_allreduce[1]")
    job_case("sms-gather-descending", setp(["planning", "sms_gather"], [5, 4]), "planning.sms_gather[1]")
    job_case("sms-range-huge", setp(["planning", "sms_gather"], {"min": 1, "max": 1e18}), "$.planning.sms_gather.max")
    job_case("clock-max-1e18", setp(["planning", "clock_max_mhz"], 1e18), "$.planning.clock_max_mhz")
    job_case("clock-min-negative", setp(["planning", "clock_min_mhz"], -30), "planning.clock_min_mhz")
    job_case("clock-step-zero", setp(["planning", "clock_step_mhz"], 0), "planning.clock_step_mhz")
    job_case("clock-unsupported", setp(["planning", "clock_max_mhz"], 1411), "planning.clock_max_mhz")
    job_case("comm-kernels-unknown", setp(["planning", "comm_kernels"], ["tuned", "cuda"]),
             "$.planning.comm_kernels[1]: expected \"tuned\" or \"nccl\", each at most once, found string \"cuda\"")
    job_case("comm-kernels-twice", setp(["planning", "comm_kernels"], ["nccl", "nccl"]), "$.planning.comm_kernels[1]")
    job_case("comm-kernels-empty", setp(["planning", "comm_kernels"], []), "$.planning.comm_kernels")
    job_case("comm-kernels-string", setp(["planning", "comm_kernels"], "nccl"), "$.planning.comm_kernels")
    job_case("static-power-huge", setp(["planning", "static_power_w"], 1e9), "$.planning.static_power_w")
    job_case("unknown-field", setp(["colour"], "red"), "$.colour")
    job_case("wrong-schema", setp(["schema"], "kareus.plan"), "$.schema")
    job_case("wrong-version", setp(["version"], 2), "$.version")
    job_case("name-not-string", setp(["name"], 5), "$.name")
    job_case("tp-zero", setp(["parallelism", "tp"], 0), "parallelism.tp")
    job_case("tp-not-divisor", setp(["parallelism", "tp"], 7), "parallelism.tp")
    job_case("tp-1e300", setp(["parallelism", "tp"], 1e300), "$.parallelism.tp")
    job_case("pp-too-many", setp(["parallelism", "pp"], 100), "layers_per_stage")
    job_case("layers-per-stage-length", setp(["layers_per_stage"], [28]), "$.layers_per_stage")
    job_case("layers-per-stage-sum", setp(["layers_per_stage"], [15, 14]), "layers_per_stage")
    job_case("layers-per-stage-string", setp(["layers_per_stage"], [15, "13"]), "$.layers_per_stage[1]")
    job_case("seq-len-odd-cp", lambda j: (j["parallelism"].update(cp=2), j.update(seq_len=4098)), "seq_len")
    job_case("microbatches-fraction", setp(["num_microbatches"], 1.5), "$.num_microbatches")
    job_case("microbatches-zero", setp(["num_microbatches"], 0), "num_microbatches")
    job_case("model-unknown", setp(["model"], "gpt-9"), "$.model", "unknown model")
    job_case("model-hidden-negative", setp(["model"], {"base": "llama3.2-3b", "name": "m", "hidden": -1}), "$.model.hidden")
    job_case("gpu-unknown", setp(["gpu"], "z100"), "$.gpu")
    job_case("recompute-maybe", setp(["recompute"], "maybe"), "$.recompute")
    job_case("schedule-unknown", setp(["schedule"], "zigzag"), "$.schedule")
    job_case("virtual-stages-not-interleaved", setp(["virtual_stages"], 2), "virtual_stages")
    job_case("cluster-nodes-zero", setp(["cluster", "nodes"], 0), "$.cluster.nodes")
    job_case("cluster-bw-negative", setp(["cluster", "inter_node_bw_GBps"], -1), "$.cluster.inter_node_bw_GBps")
    job_case("not-an-object", None, "bad.json", raw=b"[1, 2, 3]\n")
    case("job-directory-as-file", {"d/x": b""}, ["job", "validate", "d"], "d: is a directory, expected a file", dirs=("d",))


# ---- GPU entries (through a job that names {"file": "gpu.json"}) ------------------------------

def gpu_case(name, mutate, *needles, raw=None):
    if raw is None:
        g = jbase("gpu.json")
        mutate(g)
        data = dumps(g)
    else:
        data = raw
    case("gpu-" + name, {"job.json": base("job_gpu.json"), "gpu.json": data}, ["job", "validate", "job.json"],
         "job.json", "gpu.json", *needles)


def gpu_param(field, value):
    return lambda g: g["params"].__setitem__(field, {"value": value, "source": "test"})


def build_gpu_cases():
    gpu_case("sm-count-1e15", gpu_param("sm_count", 1e15), "$.params.sm_count.value: expected a whole number in [1, 65536]")
    gpu_case("sm-count-fraction", gpu_param("sm_count", 107.5), "$.params.sm_count.value")
    gpu_case("sm-count-zero", gpu_param("sm_count", 0), "$.params.sm_count.value")
    gpu_case("clock-max-1e18", gpu_param("clock_max_mhz", 1e18), "$.params.clock_max_mhz.value")
    gpu_case("clock-step-fraction", gpu_param("clock_step_mhz", 15.5), "$.params.clock_step_mhz.value")
    gpu_case("plan-min-negative", gpu_param("plan_min_mhz", -5), "$.params.plan_min_mhz.value")
    gpu_case("nccl-ctas-1e10", gpu_param("nccl_ctas", 1e10), "$.params.nccl_ctas.value")
    gpu_case("v-floor-1e12", gpu_param("v_floor_mhz", 1e12), "$.params.v_floor_mhz.value")
    gpu_case("value-string", gpu_param("tdp_w", "400"), "$.params.tdp_w.value")
    gpu_case("unknown-param", gpu_param("warp_drive", 1), "$.params.warp_drive")
    gpu_case("missing-source", lambda g: g["params"].__setitem__("tdp_w", {"value": 400}), "$.params.tdp_w.source")
    gpu_case("unknown-base", lambda g: g.update(base="z100"), "$.base")
    gpu_case("no-base-missing-params", lambda g: g.pop("base"), "missing GPU parameter")
    gpu_case("inconsistent-clocks", lambda g: (g["params"].update(clock_min_mhz={"value": 1500, "source": "t"})),
             "$.params")
    gpu_case("utf8-bom", None, "gpu.json:1:1:", "byte-order mark", raw=b"\xef\xbb\xbf" + base("gpu.json"))
    gpu_case("nul", None, "NUL byte", raw=base("gpu.json") + b"\x00")
    j = jbase("job_gpu.json")
    j["gpu"] = {"file": "gdir"}
    case("gpu-directory-as-file", {"job.json": dumps(j), "gdir/x": b""}, ["job", "validate", "job.json"],
         "job.json", "$.gpu.file", "gdir: is a directory, expected a file", dirs=("gdir",))


# ---- plans (kareus plan validate FILE: the runtime's schedule checks) --------------------------

def plan_case(name, mutate, *needles, raw=None, args=None):
    if raw is None:
        p = jbase("plan.json")
        mutate(p)
        data = dumps(p)
    else:
        data = raw
    case("plan-" + name, {"plan.json": data}, args or ["plan", "validate", "plan.json"], "plan.json", *needles)


def tiny_plan(stages, microbatches, virtual, schedule):
    return (json.dumps({"schema": "kareus.plan", "version": 1, "method": "x",
                        "job": {"stages": stages, "microbatches": microbatches, "virtual_stages": virtual,
                                "schedule": schedule},
                        "stages": [{"stage": s, "instructions": []} for s in range(stages)]}) + "\n").encode()


def build_plan_cases():
    plan_case("overflow-200-bytes", None, "2 x microbatches x virtual stages", raw=tiny_plan(1, 1 << 20, 1024, "interleaved-1f1b"))
    plan_case("overflow-12-gb", None, "2 x microbatches x virtual stages", raw=tiny_plan(2, 1 << 20, 1000, "interleaved-1f1b"))
    plan_case("counts-before-allocation", None, "stages[0]: expected 2097152 instructions", raw=tiny_plan(1, 1 << 20, 1, "1f1b"))
    plan_case("overflow-run", None, "2 x microbatches x virtual stages", raw=tiny_plan(1, 1 << 20, 1024, "interleaved-1f1b"),
              args=["run", "--plan", "plan.json", "--backend", "fake:devices=1", "--", "true"])
    plan_case("overflow-simulate", None, "job.stages: expected 2", raw=tiny_plan(1, 1 << 20, 1024, "interleaved-1f1b"),
              args=["simulate", "--plan", "plan.json", "--svg", "none"])

    def swap(p):
        ins = p["stages"][0]["instructions"]
        ins[0], ins[1] = ins[1], ins[0]
    plan_case("order-swapped", swap, "stages[0].instructions[0]: expected forward of microbatch 0")

    def drop(p):
        p["stages"][1]["instructions"].pop()
    plan_case("instruction-missing", drop, "stages[1]: expected 16 instructions")
    plan_case("freq-1e18", lambda p: p["stages"][0]["instructions"][0].update(freq_mhz=1e18),
              "$.stages[0].instructions[0].freq_mhz")
    plan_case("kind-sideways", lambda p: p["stages"][0]["instructions"][2].update(kind="sideways"),
              "$.stages[0].instructions[2].kind")
    plan_case("microbatch-negative", lambda p: p["stages"][0]["instructions"][1].update(microbatch=-1),
              "$.stages[0].instructions[1].microbatch")
    plan_case("comm-sms-1e9", lambda p: p["stages"][0]["instructions"][0]["comm"][0].update(sms=1e9),
              "$.stages[0].instructions[0].comm[0].sms")
    plan_case("stage-count-mismatch", lambda p: p["job"].update(stages=3), "$.stages")
    plan_case("microbatches-huge", lambda p: p["job"].update(microbatches=1e12), "$.job.microbatches")
    plan_case("virtual-stages-huge", lambda p: p["job"].update(virtual_stages=4294967297), "$.job.virtual_stages")
    plan_case("wrong-schema", lambda p: p.update(schema="kareus.job"), "$.schema")
    plan_case("wrong-version", lambda p: p.update(version=99), "$.version")
    plan_case("unknown-field", lambda p: p.update(extra=1), "$.extra")
    plan_case("missing-stages", lambda p: p.pop("stages"), "$.stages")
    plan_case("utf8-bom", None, ":1:1:", "byte-order mark", raw=b"\xef\xbb\xbf" + base("plan.json"))
    plan_case("nul", None, "NUL byte", raw=base("plan.json")[:100] + b"\x00" + base("plan.json")[100:])
    plan_case("truncated", None, "invalid JSON", raw=base("plan.json")[:5000])
    case("plan-directory-as-file", {"p/x": b""}, ["plan", "validate", "p"], "p: is a directory, expected a file", dirs=("p",))
    plan_case("clock-not-of-device", lambda p: p["stages"][0]["instructions"][0].update(freq_mhz=1411),
              "stages[0].instructions[0].freq_mhz", args=["run", "--plan", "plan.json", "--backend", "fake:devices=1", "--", "true"])


# ---- options CSV (kareus solve --options FILE) ---------------------------------------------

CELL = "linear_0-none-18-1024"


def options_case(name, text, *needles):
    case("options-" + name, {"o.csv": text if isinstance(text, bytes) else text.encode()},
         ["solve", "--options", "o.csv", "--stages", "2", "--microbatches", "8", "--frontier-out", "out.csv"],
         "o.csv", *needles)


def wide(nkeys, filled):
    head = "stage,instruction,frequency,time,energy," + ",".join("k%d" % i for i in range(nkeys))
    row = "0,forward,1410,0.1,30," + ",".join(CELL if i < filled else "" for i in range(nkeys))
    return head + "\n" + row + "\n"


def build_options_cases():
    opts = base("options.csv").decode()
    head, rows = opts.split("\n", 1)
    options_case("17-key-columns", wide(17, 17), "o.csv:2: column 'k16': expected at most 16 partition settings")
    options_case("32-key-columns", wide(32, 32), "o.csv:2: column 'k16': expected at most 16 partition settings")
    options_case("33-key-columns", wide(33, 1), "o.csv:1: column 'k32'")
    options_case("frequency-1e18", "stage,instruction,frequency,time,energy\n0,forward,1e18,0.1,30\n", "o.csv:2:", "frequency")
    options_case("frequency-zero", "stage,instruction,frequency,time,energy\n0,forward,0,0.1,30\n", "o.csv:2: column 'frequency'")
    options_case("time-negative", "stage,instruction,frequency,time,energy\n0,forward,1410,-0.1,30\n", "o.csv:2: column 'time'")
    options_case("energy-nan", "stage,instruction,frequency,time,energy\n0,forward,1410,0.1,nan\n", "o.csv:2:", "energy")
    options_case("stage-99", "stage,instruction,frequency,time,energy\n99,forward,1410,0.1,30\n", "o.csv:2: column 'stage'")
    options_case("stage-huge", "stage,instruction,frequency,time,energy\n99999999999999999999,forward,1410,0.1,30\n", "o.csv:2:", "stage")
    options_case("instruction-sideways", "stage,instruction,frequency,time,energy\n0,sideways,1410,0.1,30\n", "o.csv:2: column 'instruction'")
    options_case("missing-energy-column", "stage,instruction,frequency,time\n0,forward,1410,0.1\n", "o.csv", "energy")
    options_case("field-count", head + "\n0,forward,1410\n", "o.csv:2: expected")
    options_case("header-only", head + "\n", "o.csv: expected option rows")
    options_case("comm-cell-garbage", "stage,instruction,frequency,time,energy,fwd_mlp\n0,forward,1410,0.1,30,garbage\n",
                 "o.csv:2: column 'fwd_mlp'")
    options_case("chunk-5000", "stage,instruction,frequency,time,energy,chunk\n0,forward,1410,0.1,30,5000\n", "o.csv:2: column 'chunk'")
    options_case("utf8-bom", b"\xef\xbb\xbf" + opts.encode(), "o.csv:1:1:", "byte-order mark")
    options_case("nul", opts.encode()[:50] + b"\x00" + opts.encode()[50:], "NUL byte")
    case("options-directory-as-file", {"od/x": b""},
         ["solve", "--options", "od", "--stages", "2", "--microbatches", "8", "--frontier-out", "out.csv"],
         "od: is a directory, expected a file", dirs=("od",))


# ---- partition frontiers (kareus compose --frontiers DIR: fwd_attn is read first) -------------

def frontier_case(name, text, *needles, ext="csv"):
    fname = "fwd_attn.kareus." + ext
    case("frontier-" + name, {"fr/" + fname: text if isinstance(text, bytes) else text.encode()},
         ["compose", "--frontiers", "fr", "--out", "out.csv"], fname, *needles)


def build_frontier_cases():
    fr = base("frontier.csv").decode()
    lines = fr.split("\n")

    def with_line(i, new):
        l2 = list(lines)
        l2[i] = new
        return "\n".join(l2)

    frontier_case("crlf", fr.replace("\n", "\r\n"), ":1:20: expected LF line endings")
    frontier_case("crlf-one-row", with_line(14, lines[14] + "\r"), ":15:", "expected LF line endings")
    frontier_case("negative-seed", with_line(9, "# seed: -5"), ":10: seed: unexpected value '-5'")
    frontier_case("seed-overflow", with_line(9, "# seed: 99999999999999999999"), ":10: seed: unexpected value")
    frontier_case("seed-plus", with_line(9, "# seed: +5"), ":10: seed: unexpected value")
    frontier_case("utf8-bom", b"\xef\xbb\xbf" + fr.encode(), ":1:1:", "byte-order mark")
    frontier_case("nul", fr.encode()[:300] + b"\x00" + fr.encode()[300:], "NUL byte")
    frontier_case("version-2", with_line(0, "# kareus.frontier 2"), ":1: expected '# kareus.frontier 1'")
    frontier_case("unknown-header", with_line(3, "# colour: red"), ":4: unknown header 'colour'")
    frontier_case("static-power-negative", with_line(5, "# static_power_w: -1"), ":6: static_power_w: unexpected value")
    frontier_case("space-size-negative", with_line(10, "# space_size: -1"), ":11: space_size: unexpected value")
    frontier_case("freq-zero", with_line(12, "0,linear_0,18,0.0013,0.41,0.30,0,0,1,1,1"), ":13: expected freq_mhz in [1, 100000]")
    frontier_case("slot-unknown", with_line(12, "1410,warp_0,18,0.0013,0.41,0.30,0,0,1,1,1"), ":13: column 'slot'")
    frontier_case("flag-2", with_line(12, "1410,linear_0,18,0.0013,0.41,0.30,0,0,2,1,1"), ":13: column 'pareto_eff'")
    frontier_case("time-nan", with_line(12, "1410,linear_0,18,nan,0.41,0.30,0,0,1,1,1"), ":13:", "time_s")
    frontier_case("sms-huge", with_line(12, "1410,linear_0,1000000000000,0.0013,0.41,0.30,0,0,1,1,1"), ":13:")
    frontier_case("missing-column", "\n".join(lines[:11] + ["freq_mhz,slot,sms,time_s,energy_j"] + [",".join(l.split(",")[:5]) for l in lines[12:] if l]) + "\n", "expected a column named 'eff_energy_j'")
    fj = {"schema": "kareus.frontier", "version": 1}
    frontier_case("json-bad", json.dumps(fj) + "\n", "fwd_attn.kareus.json", "$.", ext="json")
    case("frontier-directory-as-file", {"fr/fwd_attn.kareus.csv/x": b""}, ["compose", "--frontiers", "fr", "--out", "out.csv"],
         "fwd_attn.kareus.csv: is a directory, expected a file", dirs=("fr", "fr/fwd_attn.kareus.csv"))


# ---- measurement logs (kareus search --log FILE) ----------------------------------------------

SEARCH = ["search", "--partition", "fwd_mlp", "--variant", "sequential", "--strategy", "exhaustive", "--max-evals", "2",
          "--out", "out", "--quiet", "--log"]


def log_case(name, data, *needles, fname="m.jsonl"):
    case("log-" + name, {fname: data if isinstance(data, bytes) else data.encode()}, SEARCH + [fname], fname, *needles)


def build_log_cases():
    log = base("log.jsonl").decode()
    lines = log.split("\n")
    log_case("notes-without-newline", "my notes about the run", ":1: expected a Kareus measurement log", fname="notes.txt")
    log_case("notes-with-newline", "line one\nline two\n", ":1: expected a Kareus measurement log", fname="notes.txt")
    log_case("csv-file", "a,b,c\n1,2,3", ":1: expected a Kareus measurement log", fname="data.csv")
    log_case("empty-object-header", "{}\n", ":1: expected a Kareus measurement log")
    # The artifact's eval_results.jsonl: its fields only (no key, variant, job). Our lines without
    # the header are a log from before the header existed, which is read (tests/cli/test_mlog_headerless.sh).
    artifact = [re.sub(r',"key":.*\}$', "}", l) for l in lines[1:] if l]
    log_case("artifact-eval-results", "\n".join(artifact) + "\n", ":1: expected a Kareus measurement log")
    log_case("other-job", log.replace('"job":"%s","job_name"' % FP, '"job":"0000000000000000","job_name"', 1),
             ":1: $.job: expected the fingerprint of job")
    log_case("header-version-2", log.replace('"version":1', '"version":2', 1), ":1: $.version")
    log_case("header-unknown-field", log.replace('"version":1', '"version":1,"x":2', 1), ":1: $.x")
    log_case("utf8-bom", b"\xef\xbb\xbf" + log.encode(), ":1: expected a Kareus measurement log")
    log_case("zero-joules", log.replace('"energy_j":0.93535432435103183', '"energy_j":0', 1), ":3: $.energy_j: expected an energy > 0 J")
    log_case("negative-time", log.replace('"time_s":0.0039357812095251517', '"time_s":-1', 1), ":2: $.time_s")
    log_case("sm-string", log.replace('"sm":24', '"sm":"six"', 1), ":2: $.sm: expected an integer")
    log_case("nul-mid-file", log.replace("\n", "\n\x00", 2).replace("\n\x00", "\n", 1), ":3: expected a JSON line, found a NUL byte")
    log_case("torn-middle-line", lines[0] + "\n" + lines[1][:40] + "\n" + lines[2] + "\n", ":2:40: invalid JSON")
    log_case("wrong-variant", log.replace('"variant":"sequential"', '"variant":"teleport"', 1), ":2: $.variant")
    case("log-directory-as-file", {"ld/x": b""}, SEARCH + ["ld"], "ld: is a directory, expected a file", dirs=("ld",))
    case("log-symlink", {"real.jsonl": base("log.jsonl")}, SEARCH + ["link.jsonl"], "link.jsonl: is a symbolic link",
         links={"link.jsonl": "real.jsonl"})


# ---- comm-sweep logs (kareus profile --comm-sweep FILE, kareus calibrate --data FILE) -------------

SWEEP = ["profile", "--backend", "sim", "--quiet", "--clocks", "1410,1020", "--ctas", "1,4", "--kernels", "tuned",
         "--comm-sweep"]


def sweep_case(name, data, *needles, fname="s.jsonl"):
    data = data if isinstance(data, bytes) else data.encode()
    case("sweep-" + name, {fname: data}, SWEEP + [fname], fname, *needles)
    case("sweep-calibrate-" + name, {fname: data}, ["calibrate", "--data", fname, "--base", "a100"], fname, *needles)


def build_sweep_cases():
    log = base("sweep.jsonl").decode()
    lines = log.split("\n")
    # Not ours: refused by the sweep, and calibrate reads it as a calibration manifest (and fails).
    case("sweep-notes", {"notes.txt": b"my notes about the sweep\n"}, SWEEP + ["notes.txt"],
         "notes.txt:1: expected a Kareus comm-sweep log")
    case("sweep-search-log", {"m.jsonl": base("log.jsonl")}, SWEEP + ["m.jsonl"],
         'm.jsonl:1: $.schema: expected "kareus.commsweep"')
    case("sweep-other-job", {"s.jsonl": log.replace('"job":"%s","job_name"' % FP, '"job":"0000000000000000","job_name"', 1).encode()},
         SWEEP + ["s.jsonl"], "s.jsonl:1: job: expected the fingerprint of job 'default'")
    sweep_case("header-version-2", log.replace('"version":1', '"version":2', 1), ":1: $.version")
    sweep_case("header-unknown-field", log.replace('"version":1', '"version":1,"x":2', 1), ":1: $.x")
    sweep_case("header-backend", log.replace('"backend":"sim"', '"backend":"cuda"', 1), ":1: $.backend")
    sweep_case("unknown-kernel", log.replace('"kernel":"tuned"', '"kernel":"mscclpp"', 1), ":2: $.kernel: expected tuned, nccl or proxy")
    sweep_case("unknown-coll", log.replace('"coll":"allreduce"', '"coll":"broadcast"', 2), ":2: $.coll")
    sweep_case("negative-time", re.sub(r'"time_s":[0-9.e-]+', '"time_s":-1', log, count=1), ":2: $.time_s")
    sweep_case("ctas-string", log.replace('"ctas":4', '"ctas":"four"', 1), ":4: $.ctas: expected an integer")
    sweep_case("line-unknown-field", log.replace('"repeats":1', '"repeats":1,"note":"x"', 1), ":2: $.note")
    sweep_case("line-other-job", "\n".join([lines[0], lines[1].replace(FP, "0000000000000000")] + lines[2:]),
               ":2: $.job: expected the header's job fingerprint")
    sweep_case("torn-middle-line", "\n".join([lines[0], lines[1][:40]] + lines[2:]), ":2:40: invalid JSON")
    sweep_case("second-header", "\n".join([lines[0], lines[0]] + lines[1:]), ":2: $.schema")
    for opt, val, needle in (("--clocks", "1410,,1020", "--clocks: expected a comma-separated list of integers, found '1410,,1020'"),
                             ("--ctas", "0", "--ctas: expected an integer in [1, 65536], found 0"),
                             ("--kernels", "fast", "--kernels: expected up to 3 of tuned, nccl, proxy"),
                             ("--max-points", "0", "--max-points: expected an integer in [1, 1000000]")):
        case("sweep-option" + opt, {}, ["profile", "--backend", "sim", "--comm-sweep", "s.jsonl", opt, val], needle)


# ---- shard logs and shard specs (kareus log merge OUT SHARD..., kareus profile --shard) -------

MERGE = ["log", "merge", "merged.jsonl", "good.jsonl"]


def merge_case(name, data, *needles, fname="m.jsonl", extra=None):
    files = {"good.jsonl": base("log.jsonl"), fname: data if isinstance(data, bytes) else data.encode()}
    files.update(extra or {})
    case("merge-" + name, files, MERGE + [fname], fname, *needles)


def build_merge_cases():
    log = base("log.jsonl").decode()
    lines = log.split("\n")
    merge_case("notes", "my notes\n", ":1: expected a Kareus measurement log", fname="notes.txt")
    merge_case("empty-file", "", ":1: expected a Kareus measurement log", fname="empty.jsonl")
    # The artifact's fields only; our lines without the header are an old log, which merge reads.
    artifact = [re.sub(r',"key":.*\}$', "}", l) for l in lines[1:] if l]
    merge_case("artifact-eval-results", "\n".join(artifact) + "\n", ":1: expected a Kareus measurement log")
    merge_case("other-job", log.replace('"job":"%s","job_name"' % FP, '"job":"0000000000000000","job_name"', 1),
               ":1: $.job: expected the fingerprint of job")
    merge_case("bad-line", log.replace('"time_s":0.0039357812095251517', '"time_s":-1', 1), ":2: $.time_s")
    case("merge-missing-shard", {"good.jsonl": base("log.jsonl")}, MERGE + ["missing.jsonl"],
         "missing.jsonl: cannot read")
    case("merge-out-not-a-log", {"good.jsonl": base("log.jsonl"), "notes.txt": b"my notes\n"},
         ["log", "merge", "notes.txt", "good.jsonl"], "notes.txt:1: expected a Kareus measurement log")
    case("merge-out-symlink", {"good.jsonl": base("log.jsonl"), "real.jsonl": base("log.jsonl")},
         ["log", "merge", "link.jsonl", "good.jsonl"], "link.jsonl: is a symbolic link",
         links={"link.jsonl": "real.jsonl"})
    case("merge-shard-symlink", {"good.jsonl": base("log.jsonl")}, MERGE + ["link.jsonl"],
         "link.jsonl: is a symbolic link", links={"link.jsonl": "good.jsonl"})
    case("merge-out-is-shard", {"good.jsonl": base("log.jsonl")}, ["log", "merge", "good.jsonl", "good.jsonl"],
         "OUT good.jsonl is also a shard")
    for spec in ("4/4", "-1/2", "1/0", "garbage", "1/", "/2", "0/4x", "1.0/2", " 1/2", "99999999999/2"):
        case("shard-spec-" + spec.replace("/", "of").strip(), {}, ["profile", "--plan-work", "--shard", spec],
             "--shard: expected I/N", "found '%s'" % spec)
        case("shard-spec-search-" + spec.replace("/", "of").strip(), {},
             ["profile", "--backend", "sim", "--log", "s.jsonl", "--shard", spec], "--shard: expected I/N")
    case("profile-backend-unknown", {}, ["profile", "--backend", "cuda", "--log", "s.jsonl"],
         "--backend: expected gpu or sim", "found 'cuda'")
    case("shard-auto-no-launcher", {}, ["profile", "--plan-work", "--shard", "auto"],
         "--shard auto: expected a Slurm array task")


# ---- summaries and the HTML report (kareus report DIR) ----------------------------------------

SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>\n'


def report_case(name, mutate, *needles, extra=None, raw=None, links=None):
    if raw is None:
        s = jbase("summary.json")
        s["pictures"] = {"frontiers": "f.svg", "timelines": [{"title": "t", "file": "t.svg"}], "partitions": []}
        mutate(s)
        data = dumps(s)
    else:
        data = raw
    files = {"out/summary.json": data, "out/f.svg": SVG, "out/t.svg": SVG, "secret.svg": SVG.replace(b"</svg>", b"<!--secret--></svg>")}
    files.update(extra or {})
    case("report-" + name, files, ["report", "out"], *needles, links=links)


def build_report_cases():
    report_case("picture-parent", lambda s: s["pictures"].update(frontiers="../secret.svg"),
                "summary.json: $.pictures.frontiers: expected a relative .svg file name inside the output directory")
    report_case("picture-absolute", lambda s: s["pictures"].update(frontiers="/etc/passwd"), "$.pictures.frontiers")
    report_case("picture-not-svg-name", lambda s: s["pictures"].update(frontiers="summary.json"), "$.pictures.frontiers")
    report_case("picture-deep-parent", lambda s: s["pictures"].update(frontiers="a/../../secret.svg"), "$.pictures.frontiers")
    report_case("timeline-parent", lambda s: s["pictures"]["timelines"][0].update(file="../secret.svg"),
                "$.pictures.timelines[0].file")
    report_case("picture-symlink-outside", lambda s: s["pictures"].update(frontiers="link.svg"),
                "$.pictures.frontiers: expected a picture inside the output directory", links={"out/link.svg": "../secret.svg"})
    report_case("picture-not-svg-content", lambda s: s["pictures"].update(frontiers="x.svg"),
                "$.pictures.frontiers", "expected an SVG document", extra={"out/x.svg": b"<script>alert(1)</script>\n"})
    report_case("wrong-schema", lambda s: s.update(schema="kareus.plan"), "summary.json: $.schema")
    report_case("wrong-version", lambda s: s.update(version=7), "summary.json: $.version")
    report_case("utf8-bom", None, "summary.json:1:1:", "byte-order mark", raw=b"\xef\xbb\xbf" + base("summary.json"))
    report_case("nul", None, "summary.json", "NUL byte", raw=base("summary.json")[:40] + b"\x00" + base("summary.json")[40:])
    report_case("truncated", None, "summary.json", "invalid JSON", raw=base("summary.json")[:400])
    case("report-summary-directory", {"out/summary.json/x": b""}, ["report", "out"], "summary.json: is a directory",
         dirs=("out", "out/summary.json"))


# ---- paths from input and empty arguments ----------------------------------------------------

def build_path_cases():
    j = jbase("job_gpu.json")
    g = jbase("gpu.json")
    g["name"] = "../../escaped"
    case("path-gpu-name-escape", {"job.json": dumps(j), "gpu.json": dumps(g), "out/keep": b""},
         ["job", "write", "--job", "job.json", "--out", "out/job.json"], "out/job.json: gpu.name", "'../../escaped'")
    g["name"] = "/tmp/abs"
    case("path-gpu-name-absolute", {"job.json": dumps(j), "gpu.json": dumps(g), "out/keep": b""},
         ["job", "write", "--job", "job.json", "--out", "out/job.json"], "gpu.name", "'/tmp/abs'")
    case("empty-out-optimize", {}, ["optimize", "--out", ""], "--out: expected a value, found an empty string")
    case("empty-methods", {}, ["optimize", "--methods", "", "--out", "o"], "--methods: expected a value, found an empty string")
    case("empty-out-search", {}, ["search", "--out", ""], "--out: expected a value")
    case("empty-out-job-write", {}, ["job", "write", "--out", ""], "--out: expected a value")
    case("empty-out-equals", {}, ["optimize", "--out="], "--out=: expected a value")
    case("empty-frontier-out", {"o.csv": base("options.csv")},
         ["solve", "--options", "o.csv", "--stages", "2", "--microbatches", "8", "--frontier-out", ""], "--frontier-out: expected a value")
    case("empty-log", {}, ["search", "--log", "", "--out", "o"], "--log: expected a value")
    case("empty-export-out", {"plan.json": base("plan.json")}, ["plan", "export-zeus", "plan.json", "--out", ""], "--out: expected a value")
    case("empty-file-argument", {}, ["job", "validate", ""], "argument: expected a value")
    case("out-is-a-file", {"afile": b"keep me\n"}, ["job", "write", "--out", "afile/x.json"], "afile/x.json")
    case("out-is-a-directory", {"od/keep": b""}, ["job", "write", "--out", "od"], "od: is a directory", dirs=("od",))


def run_case(tmp, c, verbose):
    name, files, args, needles, dirs, links = c
    d = os.path.join(tmp, name)
    os.makedirs(d)
    for rel in dirs:
        os.makedirs(os.path.join(d, rel), exist_ok=True)
    for rel, data in files.items():
        p = os.path.join(d, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
    for rel, target in links.items():
        os.symlink(target, os.path.join(d, rel))
    before = snapshot(d)
    r = subprocess.run([KAREUS] + args, cwd=d, capture_output=True, timeout=120)
    out = (r.stdout + r.stderr).decode("utf-8", "replace")
    after = snapshot(d)
    problems = []
    if r.returncode != 2:
        problems.append("exit %d (expected 2)" % r.returncode)
    for n in needles:
        if n not in out:
            problems.append("output lacks %r" % n)
    if before != after:
        changed = sorted(set(before.items()) ^ set(after.items()))
        problems.append("files written or changed: %s" % ", ".join(sorted({k for k, _ in changed})))
    if problems or verbose:
        print("%s: %s\n  kareus %s\n  output: %s" % (name, "; ".join(problems) or "ok", " ".join(args),
                                                   out.strip().replace("\n", "\n          ")[:600]))
    return not problems


def main():
    global FP
    if not KAREUS:
        print("KAREUS must point to the kareus binary", file=sys.stderr)
        return 2
    verbose = "-v" in sys.argv
    only = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None
    FP = current_fp()
    for b in (build_job_cases, build_gpu_cases, build_plan_cases, build_options_cases, build_frontier_cases,
              build_log_cases, build_sweep_cases, build_merge_cases, build_report_cases, build_path_cases):
        b()
    names = [c[0] for c in CASES]
    assert len(names) == len(set(names)), "duplicate case names"
    tmp = tempfile.mkdtemp(prefix="kareus-bad.")
    try:
        selected = [c for c in CASES if only is None or only in c[0]]
        failed = [c[0] for c in selected if not run_case(tmp, c, verbose)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d bad-input cases, %d failed" % (len(selected), len(failed)))
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
