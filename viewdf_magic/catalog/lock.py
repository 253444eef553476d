"""The writer lock: one process at a time changes a warehouse.

The lock is a small file, ``_viewdf/lock``, created exclusively and naming its holder
(host, process id, when). Statements that write hold it for their duration, so two
kernels on the same warehouse take turns. A lock left by a process that died on this
host is taken over; a lock held elsewhere for longer than the timeout is reported as
"in use by ...", with how to clear it if that process is gone.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from contextlib import contextmanager
from typing import Iterator

from ..errors import ViewDFError
from .filesystem import HadoopFileSystem

LOCK = "_viewdf/lock"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class WriterLock:
    """A re-entrant, cross-process lock on one warehouse."""

    def __init__(self, fs: HadoopFileSystem, timeout: float = 30.0) -> None:
        self.fs = fs
        self.timeout = timeout
        self._depth = 0
        self._token = ""
        self._guard = threading.RLock()

    @contextmanager
    def held(self) -> Iterator[None]:
        with self._guard:
            if self._depth == 0:
                self._acquire()
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._release()

    def holder(self) -> dict | None:
        """Who holds the lock now (None if nobody)."""
        try:
            return json.loads(self.fs.read_text(LOCK))
        except Exception:   # gone between the check and the read, or being written
            return None

    def _acquire(self) -> None:
        token = uuid.uuid4().hex
        me = {"host": socket.gethostname(), "pid": os.getpid(), "since": time.time(), "token": token}
        deadline = time.monotonic() + self.timeout
        pause = 0.01
        while not self.fs.create_exclusive(LOCK, json.dumps(me)):
            holder = self.holder()
            if holder is not None and holder.get("host") == me["host"] and not _alive(int(holder["pid"])):
                self.fs.delete(LOCK)        # its process died holding it
                continue
            if time.monotonic() >= deadline:
                raise ViewDFError(self._in_use(holder))
            time.sleep(pause)
            pause = min(pause * 2, 0.25)
        self._token = token

    def _release(self) -> None:
        holder = self.holder()
        if holder is not None and holder.get("token") == self._token:
            self.fs.delete(LOCK)
        self._token = ""

    def _in_use(self, holder: dict | None) -> str:
        if holder is None:
            return f"the warehouse at {self.fs.root} is busy; try again"
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(holder["since"]))
        return (f"the warehouse at {self.fs.root} is in use by process {holder['pid']} on {holder['host']} "
                f"(writing since {since} UTC); waited {self.timeout:g}s. If that process is gone, "
                f"delete {self.fs.uri(LOCK)}")
