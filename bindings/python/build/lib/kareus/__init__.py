"""Kareus from Python: apply a Kareus plan inside a PyTorch (or any) training loop, and read
Kareus plans and frontiers.

A ctypes binding of libkareus — no compiled extension. The library is found through
$KAREUS_LIB, next to this package, in the build directory of the source tree, or on the
system's library path (see _native.py).

    import kareus
    with kareus.Runtime("plan.json", stage=0, device=0, backend="nvml") as rt:
        ...

See docs/runtime.md for the hooks, the energy figures and the Megatron integration.
"""

from ._native import KareusError, library_path, lib
from .files import Plan, check_plan, read_frontier
from .runtime import (BACKWARD, FORWARD, NO_ATEXIT, NO_LOCK, NO_SIGNALS, READ_ONLY, SHARE_READONLY, Runtime,
                      default_warning)

__all__ = ["Runtime", "Plan", "check_plan", "read_frontier", "KareusError", "library_path", "version", "FORWARD",
           "BACKWARD", "default_warning"]


def version():
    """Version of the loaded libkareus."""
    return lib.kr_version().decode()
