"""The runtime from Python: apply a plan inside a training loop (see docs/runtime.md).

    with kareus.Runtime("plan.json", stage=0, device=0) as rt:
        for step in range(steps):
            for kind, mb in my_schedule(stage):
                with rt.instruction(kind, mb):
                    cfg = rt.comm_config("fwd_attn")      # slot and SMs, or None
                    ...                                   # forward or backward of microbatch mb
            rt.step_end()
        print(rt.energy())

Each hook is one ctypes call into libkareus (microseconds); clocks are set on the runtime's
worker thread, never on the caller's. Warnings (clock control switched off, schedule mismatch)
arrive through on_warning, by default printed to stderr once each.
"""

import ctypes
import math
import os
import sys

from . import _native
from ._native import KareusError, lib

__all__ = ["Runtime", "FORWARD", "BACKWARD", "READ_ONLY", "SHARE_READONLY", "NO_SIGNALS", "NO_ATEXIT", "NO_LOCK"]

FORWARD = 0
BACKWARD = 1
READ_ONLY = 0x01
SHARE_READONLY = 0x02
NO_SIGNALS = 0x04
NO_ATEXIT = 0x08
NO_LOCK = 0x10
_KR_EMISMATCH = -7
_KR_ENOTFOUND = -6
_MODES = {0: "control", 1: "measure-only", 2: "stopped"}
_WARN_KINDS = {1: "degraded", 2: "energy", 3: "mismatch", 4: "signal"}


def _kind(kind):
    if kind in (FORWARD, "forward", "F", "f"):
        return FORWARD
    if kind in (BACKWARD, "backward", "B", "b"):
        return BACKWARD
    raise ValueError("kind: expected 'forward' or 'backward', found %r" % (kind,))


def default_warning(kind, code, message):
    """The default warning handler: one line on stderr."""
    sys.stderr.write("kareus: warning (%s): %s\n" % (kind, message))
    sys.stderr.flush()


class _Instruction:
    """Context manager of one instruction (begin on enter, end on exit, even on exceptions)."""

    __slots__ = ("rt", "kind", "microbatch", "chunk")

    def __init__(self, rt, kind, microbatch, chunk):
        self.rt, self.kind, self.microbatch, self.chunk = rt, kind, microbatch, chunk

    def __enter__(self):
        self.rt.begin(self.kind, self.microbatch, self.chunk)
        return self.rt

    def __exit__(self, *exc):
        self.rt.end()
        return False


class Runtime:
    """One pipeline stage of a plan, applied on one GPU.

    plan      plan file path (checked by the C library: order, clocks of the GPU, stage)
    stage     pipeline stage of this rank
    device    device index of the backend
    backend   "auto" (kareusd when not root and it runs, else NVML), "nvml" (real GPU),
              "kareusd[:SOCKET]", "sim" (the simulator; job from the plan), or a spec such as
              "fake:log=calls.log" or "sim:job=default,activity=0.8" (docs/runtime.md)
    job       job spec path or built-in name: the plan is also validated against it
    read_only measure only (never change clocks); share_read_only: measure only if another
              process controls the GPU instead of failing
    strict    raise KareusError when the job leaves the plan's order (default: warn once and run
              the rest of that step at the clocks found at open)
    """

    def __init__(self, plan, stage, device=0, backend="auto", job=None, read_only=False, share_read_only=False,
                 lock_dir=None, handle_signals=True, restore_lock=None, energy_poll_s=0.0,
                 on_warning=default_warning, strict=False):
        self._rt = None
        self._backend = None
        self.plan_path = getattr(plan, "path", plan)
        self.stage, self.device, self.strict = int(stage), int(device), strict
        self._on_warning = on_warning
        self._warn_cb = _native.WARN_FN(self._warn)  # kept alive as long as the runtime
        self._err = _native.Error()
        err = self._err
        default_job = job
        if default_job is None:
            from .files import Plan
            default_job = Plan(self.plan_path).job_name or None
        b = ctypes.c_void_p()
        bo = _native.BackendOpenOptions(default_job=default_job.encode() if default_job else None)
        _native.check(lib.kr_backend_open(backend.encode(), ctypes.byref(bo), ctypes.byref(b), ctypes.byref(err)), err)
        self._backend = b
        o = _native.RuntimeOptions()
        o.backend_ptr = b
        o.job = job.encode() if job else None
        o.flags = ((READ_ONLY if read_only else 0) | (SHARE_READONLY if share_read_only else 0)
                   | (0 if handle_signals else NO_SIGNALS))
        o.lock_dir = lock_dir.encode() if lock_dir else None
        if restore_lock:
            o.restore_lock_min_mhz, o.restore_lock_max_mhz = restore_lock
        o.energy_poll_s = energy_poll_s
        o.warn = self._warn_cb
        rt = ctypes.c_void_p()
        rc = lib.kr_runtime_open(self.plan_path.encode(), self.stage, self.device, ctypes.byref(o), ctypes.byref(rt),
                                 ctypes.byref(err))
        if rc != 0:
            lib.kr_backend_destroy(b)
            self._backend = None
            _native.check(rc, err)
        self._rt = rt
        self._begin = lib.kr_runtime_instruction_begin
        self._end = lib.kr_runtime_instruction_end

    @classmethod
    def from_env(cls, stage=None, device=None, **kw):
        """A runtime from the environment `kareus run` sets (KAREUS_PLAN, KAREUS_STAGE,
        KAREUS_DEVICE, KAREUS_BACKEND, KAREUS_JOB, KAREUS_LOCK_DIR). With several devices in
        KAREUS_DEVICE, the device is LOCAL_RANK's (torchrun) unless given."""
        env = os.environ
        if "KAREUS_PLAN" not in env:
            raise KareusError(-1, "Runtime.from_env: KAREUS_PLAN is not set (run under 'kareus run --plan FILE -- …')")
        if stage is None:
            if "KAREUS_STAGE" not in env:
                raise KareusError(-1, "Runtime.from_env: no stage given and KAREUS_STAGE is not set")
            stage = int(env["KAREUS_STAGE"])
        if device is None:
            devs = env.get("KAREUS_DEVICE", "0")
            device = int(devs) if devs.isdigit() else int(env.get("LOCAL_RANK", "0"))
        kw.setdefault("backend", env.get("KAREUS_BACKEND", "auto"))
        kw.setdefault("job", env.get("KAREUS_JOB") or None)
        kw.setdefault("lock_dir", env.get("KAREUS_LOCK_DIR") or None)
        return cls(env["KAREUS_PLAN"], stage, device, **kw)

    def _warn(self, ud, kind, code, msg):
        if self._on_warning is not None:
            self._on_warning(_WARN_KINDS.get(kind, str(kind)), code, msg.decode(errors="replace"))

    # ---- hooks -------------------------------------------------------------------------------

    def begin(self, kind, microbatch, chunk=0):
        """Start of an instruction. Returns 0, or a negative status when the job left the plan's
        order (already reported through on_warning; raises instead when strict)."""
        rc = self._begin(self._rt, _kind(kind), microbatch, chunk, ctypes.byref(self._err))
        if rc != 0 and (self.strict or rc != _KR_EMISMATCH):
            _native.check(rc, self._err)
        return rc

    def end(self):
        """End of the current instruction."""
        rc = self._end(self._rt, ctypes.byref(self._err))
        if rc != 0:
            _native.check(rc, self._err)

    def instruction(self, kind, microbatch, chunk=0):
        """Context manager around one forward or backward: `with rt.instruction("forward", mb):`."""
        return _Instruction(self, kind, microbatch, chunk)

    def comm_config(self, key, recompute=False):
        """Comm config of partition `key` in the current instruction, as a dict {slot,
        slot_index, sms, kernel} (slot_index is None unless the runtime was given the job; kernel
        "tuned" or "nccl": NCCL's collective with sms CTAs), or None when the plan has none (use
        the framework's default)."""
        out = _native.RuntimeComm()
        rc = lib.kr_runtime_comm_config(self._rt, key.encode(), 1 if recompute else 0, ctypes.byref(out),
                                        ctypes.byref(self._err))
        if rc == _KR_ENOTFOUND:
            return None
        _native.check(rc, self._err)
        return {"slot": out.slot.decode(), "slot_index": None if out.slot_index == -2 else out.slot_index,
                "sms": out.sms, "kernel": "nccl" if out.kernel == 1 else "tuned"}

    def step_end(self):
        """End of a training step: checks the plan was consumed. Returns 0 or a negative status
        (mismatch; raises when strict)."""
        rc = lib.kr_runtime_step_end(self._rt, ctypes.byref(self._err))
        if rc != 0 and (self.strict or rc != _KR_EMISMATCH):
            _native.check(rc, self._err)
        return rc

    # ---- queries -------------------------------------------------------------------------------

    def sync(self, timeout_s=0.0):
        """Waits for the worker to act on every request so far (tests, the end of a run); with
        timeout_s, also up to that long for the energy of finished steps."""
        _native.check(lib.kr_runtime_sync(self._rt, timeout_s, ctypes.byref(self._err)), self._err)

    def status(self):
        """Mode, counters and the reason the runtime does not control clocks, as a dict."""
        st = _native.RuntimeStatus()
        lib.kr_runtime_status_get(self._rt, ctypes.byref(st))
        d = {name: getattr(st, name) for name, _ in st._fields_}
        for k in ("reason", "backend", "device_name", "device_uuid", "lock_path"):
            d[k] = d[k].decode(errors="replace")
        d["mode"] = _MODES.get(st.mode, str(st.mode))
        return d

    def energy(self):
        """Energy of the last finished step and totals, as a dict; 'instructions' lists the
        per-instruction windows, which are window-quantized (interpolated between counter
        updates: see 'counter_period_s' and each entry's 'counter_updates')."""
        en = _native.RuntimeEnergy()
        n = lib.kr_runtime_ninstr(self._rt)
        arr = (_native.RuntimeInstrEnergy * max(n, 1))()
        lib.kr_runtime_energy_get(self._rt, ctypes.byref(en), arr, n)
        d = {name: getattr(en, name) for name, _ in en._fields_}
        d["available"] = bool(en.available)
        d["per_instruction_quantized"] = bool(en.per_instruction_quantized)
        d["instructions"] = [
            {"kind": "forward" if a.kind == FORWARD else "backward", "microbatch": a.microbatch, "chunk": a.chunk,
             "freq_mhz": a.freq_mhz, "begin_s": a.begin_s, "time_s": a.time_s,
             "energy_j": None if math.isnan(a.energy_j) else a.energy_j, "counter_updates": a.counter_updates}
            for a in arr[:en.ninstr]]
        return d

    def ninstr(self):
        """Instructions per step of this stage."""
        return lib.kr_runtime_ninstr(self._rt)

    def clock_log(self):
        """Clock changes the backend applied, oldest first, as (min_mhz, max_mhz) pairs — (0, 0) is
        a reset. Available for the sim and fake backends (also after close)."""
        b = self._backend
        if b is None:
            return []
        n = ctypes.c_int()
        if lib.kr_sim_backend_is(b):
            lib.kr_sim_backend_clock_log(b, None, 0, ctypes.byref(n))
            arr = (_native.SimClockEvent * max(n.value, 1))()
            lib.kr_sim_backend_clock_log(b, arr, n.value, ctypes.byref(n))
            return [(e.min_mhz, e.max_mhz) for e in arr[:n.value] if e.dev == self.device]
        if lib.kr_gpuctl_fake_calls(b, None, 0, ctypes.byref(n)) == 0:  # KR_EINVAL: not a fake
            arr = (_native.FakeCall * max(n.value, 1))()
            lib.kr_gpuctl_fake_calls(b, arr, n.value, ctypes.byref(n))
            out = []
            for c in arr[:n.value]:
                op = lib.kr_gpuctl_fake_op_name(c.op).decode()
                if c.rc == 0 and c.dev == self.device and op in ("set_clock", "reset_clock"):
                    out.append((c.a, c.b) if op == "set_clock" else (0, 0))
            return out
        raise KareusError(-10, "clock_log: the %s backend keeps no clock log" % lib.kr_backend_name(b).decode())

    # ---- lifetime ------------------------------------------------------------------------------

    def close(self):
        """Restores the clocks found at open and frees the runtime (the backend stays readable
        for clock_log until the object is collected). Raises if the restore failed."""
        if self._rt:
            rt, self._rt = self._rt, None
            _native.check(lib.kr_runtime_close(rt, ctypes.byref(self._err)), self._err)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            if self._rt:
                lib.kr_runtime_close(self._rt, None)
                self._rt = None
            if self._backend:
                lib.kr_backend_destroy(self._backend)
                self._backend = None
        except Exception:
            pass
