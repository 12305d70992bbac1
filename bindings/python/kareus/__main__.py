"""`python3 -m kareus ARGS` (and the `kareus-py` console command): runs the kareus CLI with ARGS.

The Python package holds the binding only; the commands are the C program's. It is found, in
order: $KAREUS_CLI, bin/kareus inside this package (a bundled copy), the bin/ folder beside the
lib/ folder libkareus was loaded from, PATH, then the build directory of the source tree this
package sits in. Only ELF executables are accepted, so a Python wrapper named kareus on PATH
is never run in a loop.
"""

import os
import shutil
import sys

__all__ = ["find_cli", "main"]


def _is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF" and os.access(path, os.X_OK)
    except OSError:
        return False


def _candidates():
    env = os.environ.get("KAREUS_CLI")
    if env:
        yield env
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "bin", "kareus")
    try:
        from ._native import library_path
        libdir = os.path.dirname(os.path.realpath(library_path)) if os.path.sep in library_path else None
        if libdir:
            yield os.path.join(libdir, "..", "bin", "kareus")
            yield os.path.join(libdir, "kareus")  # a build tree holds both side by side
    except ImportError:
        pass
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if d:
            yield os.path.join(d, "kareus")
    root = os.path.abspath(os.path.join(here, "..", "..", ".."))
    for build in ("build", "build-release"):
        yield os.path.join(root, build, "kareus")


def find_cli():
    """Path of the kareus executable, or None."""
    seen = set()
    for path in _candidates():
        path = os.path.abspath(path)
        if path in seen:
            continue
        seen.add(path)
        if _is_elf(path):
            return path
    return None


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    cli = find_cli()
    if cli is None:
        sys.stderr.write("kareus: the kareus command was not found (set KAREUS_CLI, install it with "
                         "`cmake --install build`, or put it on PATH)\n")
        return 2
    sys.stdout.flush()
    if argv is None:
        os.execv(cli, [cli] + args)  # does not return
    import subprocess
    return subprocess.call([cli] + args)


if __name__ == "__main__":
    sys.exit(main())
