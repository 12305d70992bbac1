"""Where this rank sits and what the partitions are — thin wrappers of libkareus (launch.h,
partition.h, sched.h). Nothing here re-implements the library: every rule (Megatron's rank order,
CUDA_VISIBLE_DEVICES mapping, the catalog's ops and slots, the 1F1B order) is the C code's."""

import ctypes

from .. import _native
from .._native import KareusError, lib
from . import _capi

__all__ = ["rank_info", "gpu_device", "partition_catalog", "schedule_order"]


def rank_info(tp=1, cp=1, pp=0, dp=0, order=None, plan_stages=0, env=None):
    """This rank's launcher, global/local rank, (tp, cp, dp, pp) degrees and ranks, stage and CUDA
    device (kr_launch_resolve), as a dict. env: a dict to read instead of the process environment.
    Raises KareusError with the C library's message (variable, expected, found)."""
    o = _capi.LaunchOptions(tp=tp, cp=cp, pp=pp, dp=dp, order=order.encode() if order else None,
                            plan_stages=plan_stages)
    keep = None
    if env is not None:
        keep = [("%s=%s" % kv).encode() for kv in env.items()] + [None]
        o.env = (ctypes.c_char_p * len(keep))(*keep)
    out, err = _capi.Launch(), _native.Error()
    _native.check(lib.kr_launch_resolve(ctypes.byref(o), ctypes.byref(out), ctypes.byref(err)), err)
    d = {name: getattr(out, name) for name, _ in out._fields_}
    d["launcher"] = lib.kr_launcher_name(out.launcher).decode()
    d["visible_entry"] = out.visible_entry.decode()
    d["visible"] = out.visible.decode()
    d["_struct"] = out
    return d


def gpu_device(info, backend="nvml"):
    """The device index of `backend` (a spec: "nvml", "fake:devices=4,…") that the rank of `info`
    (from rank_info) computes on, matched by UUID through CUDA_VISIBLE_DEVICES
    (kr_launch_device); returns (index, uuid). Raises KareusError (two ranks on one GPU, more local
    ranks than GPUs, an unknown UUID) with the library's message."""
    b, err = ctypes.c_void_p(), _native.Error()
    _native.check(lib.kr_backend_open(backend.encode(), None, ctypes.byref(b), ctypes.byref(err)), err)
    try:
        dev, gi = ctypes.c_int(), _native.GpuDeviceInfo()
        _native.check(lib.kr_launch_device(ctypes.byref(info["_struct"]), b, ctypes.byref(dev), ctypes.byref(gi),
                                           ctypes.byref(err)), err)
        return dev.value, gi.uuid.decode()
    finally:
        lib.kr_backend_destroy(b)


def partition_catalog(job):
    """The transformer-layer partitions of a job (spec path or built-in name) for the Kareus
    variant, in execution order: [{key, backward, per_layer, ops: [names], slots: {name: op_index},
    collective: (kind, group, size)}] — what `kareus catalog --partitions --job JOB` prints."""
    err = _native.Error()
    jb = ctypes.create_string_buffer(_capi.JOB_SIZE)
    _native.check(lib.kr_job_load(job.encode(), jb, ctypes.byref(err)), err)
    ps = _capi.PartitionSet()
    _native.check(lib.kr_partition_catalog(jb, _capi.VARIANT_KAREUS, ctypes.byref(ps), ctypes.byref(err)), err)
    kinds = {0: "none", 1: "allreduce", 2: "allgather", 3: "reducescatter"}
    out = []
    for p in ps.p[:ps.n]:
        out.append({"key": p.key.decode(), "backward": bool(p.backward), "per_layer": p.per_layer,
                    "ops": [o.name.decode() for o in p.ops[:p.nops]],
                    "slots": {s.name.decode(): s.op_index for s in p.slots[:p.nslots]},
                    "collective": (kinds.get(p.coll.kind, "?"), p.coll.group.decode(), p.coll.group_size)})
    return out


def schedule_order(schedule, stages, microbatches, stage, virtual_stages=1):
    """[(kind, microbatch, chunk)] of one stage in the schedule's order (kr_sched_order); kind is
    "forward" or "backward"."""
    if schedule not in _capi.SCHEDULES:
        raise KareusError(-1, "schedule: expected one of %s, found %r" % (", ".join(_capi.SCHEDULES), schedule))
    err = _native.Error()
    cap = 2 * microbatches * virtual_stages
    items = (_capi.SchedItem * cap)()
    n = lib.kr_sched_order(_capi.SCHEDULES[schedule], stages, microbatches, virtual_stages, stage, items, cap,
                           ctypes.byref(err))
    if n < 0:
        _native.check(n, err)
    return [("forward" if it.kind == 0 else "backward", it.microbatch, it.chunk) for it in items[:n]]
