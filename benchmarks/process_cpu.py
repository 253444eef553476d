"""CPU-seconds of a process tree, from /proc (Linux). No Spark here, so the Flink tools in .venv-flink use it too."""

from __future__ import annotations

import os


def _processes() -> tuple[dict[int, int], dict[int, float]]:
    """Each process's parent, and the CPU-seconds it and the children it reaped have used."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:          # the process ended meanwhile
            continue
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = sum(int(value) for value in fields[11:15]) / tick    # utime, stime, cutime, cstime
    return parents, times


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` now (zombies included)."""
    return [child for child, parent in _processes()[0].items() if parent == pid]


def tree_cpu_seconds(root: int) -> float:
    """CPU-seconds used so far by process ``root`` and its descendants: every thread of each (tasks, planners,
    GC, the JIT), and the children each has reaped."""
    parents, times = _processes()
    tree, grown = {root}, True
    while grown:
        found = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= found
        grown = bool(found)
    return sum(times.get(pid, 0.0) for pid in tree)
