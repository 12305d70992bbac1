"""ctypes declarations kareus.torch uses: rank/device mapping (launch.h), the partition catalog
(partition.h) and the schedule order (sched.h). The logic lives in libkareus; this file only
mirrors struct layouts, each checked against the library's own sizeof at import."""

import ctypes

from .. import _native
from .._native import lib

KR_KEY_MAX = 24
KR_SLOT_NAME_MAX = 16
KR_MAX_OPS = 24
KR_MAX_SLOTS = 12
KR_MAX_PARTITIONS = 24
KR_LAUNCH_ENTRY_MAX = 96
VARIANT_KAREUS = 0
SCHEDULES = {"1f1b": 0, "gpipe": 1, "interleaved-1f1b": 2}


class LaunchOptions(ctypes.Structure):
    _fields_ = [("tp", ctypes.c_int), ("cp", ctypes.c_int), ("pp", ctypes.c_int), ("dp", ctypes.c_int),
                ("order", ctypes.c_char_p), ("plan_stages", ctypes.c_int), ("env", ctypes.POINTER(ctypes.c_char_p))]


class Launch(ctypes.Structure):
    _fields_ = [("launcher", ctypes.c_int), ("rank", ctypes.c_int), ("world_size", ctypes.c_int),
                ("local_rank", ctypes.c_int), ("local_world_size", ctypes.c_int), ("tp", ctypes.c_int),
                ("cp", ctypes.c_int), ("dp", ctypes.c_int), ("pp", ctypes.c_int), ("tp_rank", ctypes.c_int),
                ("cp_rank", ctypes.c_int), ("dp_rank", ctypes.c_int), ("pp_rank", ctypes.c_int),
                ("stage", ctypes.c_int), ("visible_count", ctypes.c_int), ("per_task_binding", ctypes.c_int),
                ("local_device", ctypes.c_int), ("visible_entry", ctypes.c_char * KR_LAUNCH_ENTRY_MAX),
                ("visible", ctypes.c_char * 512)]


class Op(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 32), ("kind", ctypes.c_int), ("backward", ctypes.c_int),
                ("m", ctypes.c_long), ("n", ctypes.c_long), ("k", ctypes.c_long), ("gemms", ctypes.c_int),
                ("heads", ctypes.c_int), ("kv_heads", ctypes.c_int), ("head_dim", ctypes.c_int),
                ("seq_q", ctypes.c_long), ("seq_kv", ctypes.c_long), ("causal", ctypes.c_int),
                ("flops", ctypes.c_double), ("bytes", ctypes.c_double), ("slot", ctypes.c_int)]


class Collective(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("group", ctypes.c_char * 4), ("group_size", ctypes.c_int),
                ("inter_node", ctypes.c_int), ("bytes", ctypes.c_double), ("tensor", ctypes.c_char * 48)]


class Slot(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * KR_SLOT_NAME_MAX), ("op_index", ctypes.c_int)]


class Partition(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char * KR_KEY_MAX), ("variant", ctypes.c_int), ("backward", ctypes.c_int),
                ("per_layer", ctypes.c_int), ("per_stage", ctypes.c_int), ("nops", ctypes.c_int),
                ("ops", Op * KR_MAX_OPS), ("coll", Collective), ("nslots", ctypes.c_int),
                ("slots", Slot * KR_MAX_SLOTS), ("fixed_slot", ctypes.c_int), ("fixed_sms", ctypes.c_int)]


class PartitionSet(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int), ("p", Partition * KR_MAX_PARTITIONS)]


class SchedItem(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("microbatch", ctypes.c_int), ("chunk", ctypes.c_int)]


_err = ctypes.POINTER(_native.Error)
for _name, _res, _args in (
        ("kr_launch_resolve", ctypes.c_int, [ctypes.POINTER(LaunchOptions), ctypes.POINTER(Launch), _err]),
        ("kr_launch_device", ctypes.c_int, [ctypes.POINTER(Launch), ctypes.c_void_p, ctypes.POINTER(ctypes.c_int),
                                            ctypes.POINTER(_native.GpuDeviceInfo), _err]),
        ("kr_launch_abi_size", ctypes.c_size_t, [ctypes.c_char_p]),
        ("kr_launcher_name", ctypes.c_char_p, [ctypes.c_int]),
        ("kr_job_load", ctypes.c_int, [ctypes.c_char_p, ctypes.c_void_p, _err]),
        ("kr_partition_catalog", ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(PartitionSet), _err]),
        ("kr_sched_order", ctypes.c_int, [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                          ctypes.POINTER(SchedItem), ctypes.c_int, _err])):
    _fn = getattr(lib, _name)
    _fn.restype = _res
    _fn.argtypes = _args

for _name, _cls in (("kr_launch", Launch), ("kr_launch_config", LaunchOptions), ("kr_partition", Partition),
                    ("kr_partition_set", PartitionSet)):
    _c = lib.kr_launch_abi_size(_name.encode())
    if _c != ctypes.sizeof(_cls):
        raise ImportError("kareus.torch: %s is %d bytes in %s but %d in the binding: the binding is out of date"
                          % (_name, _c, _native.library_path, ctypes.sizeof(_cls)))
JOB_SIZE = lib.kr_launch_abi_size(b"kr_job")
