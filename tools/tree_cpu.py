"""Run a command and print the CPU-seconds its whole process tree used, JVMs included.

    python tools/tree_cpu.py ./run test

This process becomes a child subreaper (Linux), so descendants whose parents exit before them (a
PySpark JVM outlives its Python process by a moment) are adopted and waited for, and their time counts in
``RUSAGE_CHILDREN``. docs/benchmarks.md quotes it for the test suite's CPU time.
"""

from __future__ import annotations

import ctypes
import os
import resource
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def main(command: list[str]) -> int:
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
    started = time.monotonic()
    code = subprocess.call(command)
    while True:                       # the orphans this process adopted
        try:
            os.wait()
        except ChildProcessError:
            break
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"exit code {code}, {time.monotonic() - started:.0f} s wall, "
          f"{used.ru_utime + used.ru_stime:.0f} CPU-seconds (user {used.ru_utime:.0f}, system {used.ru_stime:.0f})",
          file=sys.stderr)
    return code


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python tools/tree_cpu.py command [args...]")
    sys.exit(main(sys.argv[1:]))
