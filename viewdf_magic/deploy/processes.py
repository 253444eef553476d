"""What the localhost deployments share: the pyspark distribution's home, free ports, log tails,
and stopping the process groups they started."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pyspark

HOST = "127.0.0.1"
SPARK_HOME = Path(pyspark.__file__).resolve().parent
LOG_TAIL_LINES = 30


def free_port() -> int:
    """A TCP port that was free on localhost a moment ago."""
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log file ("" if it does not exist)."""
    if not path.exists():
        return ""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def stop_groups(processes: list[subprocess.Popen], grace: float = 10.0) -> None:
    """End the process groups led by ``processes``: SIGTERM, then SIGKILL after ``grace`` seconds.

    A group's leader is reaped only after its group got SIGKILL (children left behind, if any),
    so the group id cannot have been reused by then."""
    for process in processes:
        if process.returncode is None:
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for process in processes:
        while process.returncode is None and time.monotonic() < deadline and not os.waitid(
                os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT):
            time.sleep(0.1)
        if process.returncode is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        process.wait()
