"""Loading libkareus with ctypes: where the library is found, the C structs the binding uses, and
the argument/return types of every function it calls.

No compiled extension: the binding works with any libkareus.so built from this tree. The struct
layouts below mirror include/kareus/{status,gpuctl,runtime,sim}.h; at load time each is checked
against kr_runtime_abi_size() so that a header change that the binding missed fails loudly
instead of corrupting memory.
"""

import ctypes
import ctypes.util
import os
import sys

__all__ = ["lib", "KareusError", "Error", "check", "library_path"]

KR_ERROR_MSG_MAX = 1024
KR_GPU_NAME_MAX = 96
KR_GPU_UUID_MAX = 96
KR_SLOT_NAME_MAX = 16


def _candidates():
    """Where libkareus may be, in order: $KAREUS_LIB (alone when set), next to this package (a bundled copy), the
    system's loader (libkareus.so.0 by its SONAME: ldconfig, LD_LIBRARY_PATH; then what
    ctypes.util.find_library names), lib/ of the Python prefix, then the build directories of
    the source tree this package sits in."""
    env = os.environ.get("KAREUS_LIB")
    if env:
        yield env  # when set, the only candidate: the user named the library to use
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "libkareus.so")
    yield "libkareus.so.0"
    found = ctypes.util.find_library("kareus")
    if found:
        yield found
    yield os.path.join(sys.prefix, "lib", "libkareus.so.0")
    root = os.path.abspath(os.path.join(here, "..", "..", ".."))
    for build in ("build", "build-release", "build-asan"):
        yield os.path.join(root, build, "libkareus.so")


def _loaded_path(name):
    """The file the loader picked for NAME (a bare name is resolved through /proc/self/maps)."""
    if os.path.sep in name:
        return name
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1]
                if os.path.basename(path).startswith("libkareus.so"):
                    return path
    except OSError:
        pass
    return name


def _load():
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path + " (missing)")
            continue
        try:
            return ctypes.CDLL(path), _loaded_path(path)
        except OSError as exc:
            tried.append("%s (%s)" % (path, exc))
    raise ImportError("kareus: cannot find libkareus.so; install it (cmake --install build), build it "
                      "(cmake --build build) or set KAREUS_LIB. Tried: "
                      + "; ".join(tried))


lib, library_path = _load()


class Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * KR_ERROR_MSG_MAX)]


class KareusError(Exception):
    """A libkareus call failed: code is the KR_E… status (negative), name its symbol
    (e.g. "KR_EMISMATCH"), and the message says what was expected and what was found."""

    def __init__(self, code, message):
        self.code = code
        self.name = lib.kr_status_name(code).decode()
        super().__init__("%s (%s)" % (message or lib.kr_strerror(code).decode(), self.name))


def check(rc, err):
    """Raises KareusError for a failed call."""
    if rc != 0:
        raise KareusError(rc, err.msg.decode(errors="replace"))
    return rc


WARN_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_char_p)
NOW_FN = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_void_p)


class RuntimeOptions(ctypes.Structure):
    _fields_ = [
        ("backend", ctypes.c_char_p),
        ("backend_ptr", ctypes.c_void_p),
        ("job", ctypes.c_char_p),
        ("allocator", ctypes.c_void_p),
        ("flags", ctypes.c_uint),
        ("lock_dir", ctypes.c_char_p),
        ("restore_lock_min_mhz", ctypes.c_int),
        ("restore_lock_max_mhz", ctypes.c_int),
        ("energy_poll_s", ctypes.c_double),
        ("warn", WARN_FN),
        ("warn_ud", ctypes.c_void_p),
        ("now_s", NOW_FN),
        ("now_ud", ctypes.c_void_p),
    ]


class RuntimeComm(ctypes.Structure):
    _fields_ = [("slot", ctypes.c_char * KR_SLOT_NAME_MAX), ("slot_index", ctypes.c_int), ("sms", ctypes.c_int),
                ("kernel", ctypes.c_int)]


class RuntimeStatus(ctypes.Structure):
    _fields_ = [
        ("mode", ctypes.c_int),
        ("read_only", ctypes.c_int),
        ("degraded", ctypes.c_int),
        ("degrade_code", ctypes.c_int),
        ("reason", ctypes.c_char * 512),
        ("signal", ctypes.c_int),
        ("steps", ctypes.c_long),
        ("mismatched_steps", ctypes.c_long),
        ("clock_requests", ctypes.c_long),
        ("clock_coalesced", ctypes.c_long),
        ("clock_sets", ctypes.c_long),
        ("applied_mhz", ctypes.c_int),
        ("found_cur_mhz", ctypes.c_int),
        ("restore_min_mhz", ctypes.c_int),
        ("restore_max_mhz", ctypes.c_int),
        ("restored", ctypes.c_int),
        ("restore_failed", ctypes.c_int),
        ("backend", ctypes.c_char * 16),
        ("device_name", ctypes.c_char * KR_GPU_NAME_MAX),
        ("device_uuid", ctypes.c_char * KR_GPU_UUID_MAX),
        ("lock_path", ctypes.c_char * 512),
    ]


class RuntimeEnergy(ctypes.Structure):
    _fields_ = [
        ("available", ctypes.c_int),
        ("per_instruction_quantized", ctypes.c_int),
        ("counter_period_s", ctypes.c_double),
        ("poll_s", ctypes.c_double),
        ("steps", ctypes.c_long),
        ("steps_dropped", ctypes.c_long),
        ("step_time_s", ctypes.c_double),
        ("step_energy_j", ctypes.c_double),
        ("total_time_s", ctypes.c_double),
        ("total_energy_j", ctypes.c_double),
        ("counter_j", ctypes.c_double),
        ("ninstr", ctypes.c_int),
    ]


class RuntimeInstrEnergy(ctypes.Structure):
    _fields_ = [
        ("kind", ctypes.c_int),
        ("microbatch", ctypes.c_int),
        ("chunk", ctypes.c_int),
        ("freq_mhz", ctypes.c_int),
        ("begin_s", ctypes.c_double),
        ("time_s", ctypes.c_double),
        ("energy_j", ctypes.c_double),
        ("counter_updates", ctypes.c_int),
    ]


class FakeCall(ctypes.Structure):
    _fields_ = [
        ("seq", ctypes.c_long),
        ("op", ctypes.c_int),
        ("dev", ctypes.c_int),
        ("a", ctypes.c_int),
        ("b", ctypes.c_int),
        ("rc", ctypes.c_int),
    ]


class SimClockEvent(ctypes.Structure):
    _fields_ = [("time_s", ctypes.c_double), ("dev", ctypes.c_int), ("min_mhz", ctypes.c_int), ("max_mhz", ctypes.c_int)]


class GpuDeviceInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char * KR_GPU_NAME_MAX),
        ("uuid", ctypes.c_char * KR_GPU_UUID_MAX),
        ("mem_clock_mhz", ctypes.c_int),
        ("cur_mem_clock_mhz", ctypes.c_int),
    ]


class BackendOpenOptions(ctypes.Structure):
    """kr_backend_open_config (backend.h)."""
    _fields_ = [
        ("job", ctypes.c_void_p),
        ("default_job", ctypes.c_char_p),
        ("replay", ctypes.POINTER(ctypes.c_char_p)),
        ("nreplay", ctypes.c_int),
    ]


def _sig(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)


_p = ctypes.c_void_p
_err = ctypes.POINTER(Error)
_sig("kr_strerror", ctypes.c_char_p, ctypes.c_int)
_sig("kr_status_name", ctypes.c_char_p, ctypes.c_int)
_sig("kr_version", ctypes.c_char_p)
_sig("kr_runtime_abi_size", ctypes.c_size_t, ctypes.c_char_p)
_sig("kr_runtime_plan_check", ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, _err)
_sig("kr_runtime_open", ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.POINTER(RuntimeOptions),
     ctypes.POINTER(_p), _err)
_sig("kr_runtime_instruction_begin", ctypes.c_int, _p, ctypes.c_int, ctypes.c_int, ctypes.c_int, _err)
_sig("kr_runtime_instruction_end", ctypes.c_int, _p, _err)
_sig("kr_runtime_comm_config", ctypes.c_int, _p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(RuntimeComm), _err)
_sig("kr_runtime_step_end", ctypes.c_int, _p, _err)
_sig("kr_runtime_sync", ctypes.c_int, _p, ctypes.c_double, _err)
_sig("kr_runtime_status_get", None, _p, ctypes.POINTER(RuntimeStatus))
_sig("kr_runtime_energy_get", None, _p, ctypes.POINTER(RuntimeEnergy), ctypes.POINTER(RuntimeInstrEnergy), ctypes.c_int)
_sig("kr_runtime_ninstr", ctypes.c_int, _p)
_sig("kr_runtime_close", ctypes.c_int, _p, _err)
_sig("kr_backend_open", ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(BackendOpenOptions), ctypes.POINTER(_p), _err)
_sig("kr_backend_device_info", ctypes.c_int, _p, ctypes.c_int, ctypes.POINTER(GpuDeviceInfo), _err)
_sig("kr_backend_destroy", None, _p)
_sig("kr_backend_name", ctypes.c_char_p, _p)
_sig("kr_backend_device_count", ctypes.c_int, _p, ctypes.POINTER(ctypes.c_int))
_sig("kr_gpuctl_fake_calls", ctypes.c_int, _p, ctypes.POINTER(FakeCall), ctypes.c_int, ctypes.POINTER(ctypes.c_int))
_sig("kr_gpuctl_fake_op_name", ctypes.c_char_p, ctypes.c_int)
_sig("kr_sim_backend_is", ctypes.c_int, _p)
_sig("kr_sim_backend_clock_log", ctypes.c_int, _p, ctypes.POINTER(SimClockEvent), ctypes.c_int,
     ctypes.POINTER(ctypes.c_int))
_sig("kr_frontier_read", ctypes.c_int, ctypes.c_char_p, _p, _err)
_sig("kr_frontier_free", None, _p)

for _name, _cls in (("kr_error", Error), ("kr_runtime_config", RuntimeOptions), ("kr_runtime_status", RuntimeStatus),
                    ("kr_runtime_energy", RuntimeEnergy), ("kr_runtime_instr_energy", RuntimeInstrEnergy),
                    ("kr_runtime_comm", RuntimeComm), ("kr_gpuctl_fake_call", FakeCall),
                    ("kr_sim_clock_event", SimClockEvent), ("kr_gpu_device_info", GpuDeviceInfo)):
    _c = lib.kr_runtime_abi_size(_name.encode())
    if _c != ctypes.sizeof(_cls):
        raise ImportError("kareus: %s is %d bytes in %s but %d in the binding: the binding is out of date"
                          % (_name, _c, library_path, ctypes.sizeof(_cls)))

FRONTIER_SIZE = lib.kr_runtime_abi_size(b"kr_partition_frontier")
