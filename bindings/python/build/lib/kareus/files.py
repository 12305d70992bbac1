"""Kareus files from Python: plans and partition frontiers.

Validation is the C library's (the same checks, the same messages with file, JSON path or line,
what was expected and what was found); the data is then read with the json/csv modules into
plain Python values.
"""

import csv
import ctypes
import json

from . import _native
from ._native import lib

__all__ = ["Plan", "check_plan", "read_frontier"]


def check_plan(path, stage=None, job=None):
    """Checks a plan file: syntax and fields, each stage's schedule order (or only `stage`), and
    with job (spec path or built-in name) everything kr_plan_validate checks. Raises KareusError."""
    err = _native.Error()
    _native.check(lib.kr_runtime_plan_check(path.encode(), -1 if stage is None else int(stage),
                                            job.encode() if job else None, ctypes.byref(err)), err)


class Plan:
    """A plan file, checked by the C library, with its content as Python values.

    Attributes: path, data (the whole JSON), method, variant, job_name, num_stages,
    num_microbatches, schedule, predicted (dict). instructions(stage) lists a stage's
    instructions in execution order; clocks(stage) their SM clocks.
    """

    def __init__(self, path, job=None):
        check_plan(path, None, job)
        self.path = path
        with open(path) as f:
            self.data = json.load(f)
        job_d = self.data.get("job", {})
        self.method = self.data.get("method")
        self.variant = self.data.get("variant", "kareus")
        self.job_name = job_d.get("name", "")
        self.num_stages = job_d.get("stages")
        self.num_microbatches = job_d.get("microbatches")
        self.schedule = job_d.get("schedule", "1f1b")
        self.predicted = self.data.get("predicted", {})

    def instructions(self, stage):
        """[{kind, microbatch, chunk, freq_mhz, comm, recompute, …}] of `stage`, in order."""
        ins = self.data["stages"][stage]["instructions"]
        return [dict(i, chunk=i.get("chunk", 0)) for i in ins]

    def clocks(self, stage):
        """The SM clock of each instruction of `stage`, in order."""
        return [i["freq_mhz"] for i in self.instructions(stage)]

    def order(self, stage):
        """[(kind, microbatch, chunk)] of `stage`, in order."""
        return [(i["kind"], i["microbatch"], i["chunk"]) for i in self.instructions(stage)]


def _number(v):
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return v


def read_frontier(path):
    """A partition frontier file (JSON or CSV, schema kareus.frontier), checked by
    kr_frontier_read, as a dict: the JSON as written, or for CSV the header comments
    (name: value; slots as a list) plus 'points' (one dict per row, numbers converted)."""
    err = _native.Error()
    buf = ctypes.create_string_buffer(_native.FRONTIER_SIZE)
    _native.check(lib.kr_frontier_read(path.encode(), buf, ctypes.byref(err)), err)
    lib.kr_frontier_free(buf)
    with open(path) as f:
        text = f.read()
    if text.lstrip().startswith("{"):
        return json.loads(text)
    meta, rows = {}, []
    for line in text.splitlines():
        if line.startswith("# ") and ":" in line:
            k, v = (x.strip() for x in line[2:].split(":", 1))
            if k == "slots":
                meta[k] = [x for x in v.split(",") if x]
            else:  # only the numeric header fields: a fingerprint may look like a number
                meta[k] = _number(v) if k in ("static_power_w", "seed", "space_size") else v
        elif line.startswith("#"):
            meta.setdefault("schema", line[1:].split()[0] if line[1:].split() else "")
        else:
            rows.append(line)
    meta["points"] = [{k: _number(v) for k, v in r.items()} for r in csv.DictReader(rows)]
    return meta
