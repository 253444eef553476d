"""The writer lock: one process at a time changes a warehouse.

The lock is a small file, ``_viewdf/lock``, created exclusively and naming its holder
(host, process id, when). Statements that write hold it for their duration, so two
kernels on the same warehouse take turns: a writer waits for the lock, with a status line
after a second that names the holder, and an interrupt stops the wait with nothing written.
A lock left by a process that died on this host is taken over. With a timeout (seconds; None
waits as long as it takes), a lock held longer is reported as "in use by ...", with how to
clear it if that process is gone.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from typing import Iterator

from ..errors import Interrupted, ViewDFError
from .filesystem import FileSystem

LOCK = "_viewdf/lock"
BREAKER = "_viewdf/lock.break"
UNREADABLE_GRACE = 10.0     # seconds
STATUS_AFTER = 1.0          # seconds of waiting before the status line


def _parse(text: str | None) -> dict | None:
    try:
        holder = json.loads(text) if text else None
    except ValueError:
        return None
    return holder if isinstance(holder, dict) and "pid" in holder else None


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

    def __init__(self, fs: FileSystem, timeout: float | None = None, status: bool = True) -> None:
        self.fs = fs
        self.timeout = timeout
        self.status = status            # show a status line while waiting
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
        return _parse(self._text(LOCK))

    def _text(self, relative: str) -> str | None:
        try:
            return self.fs.read_text(relative)
        except Exception:   # gone between the check and the read
            return None

    def _stale(self, holder: dict | None, text: str | None) -> bool:
        """Left by a process that died on this host, or unreadable and older than a writer takes to
        fill it (a process killed between creating and writing it, on filesystems without links)."""
        if holder is not None:
            return holder.get("host") == socket.gethostname() and not _alive(int(holder["pid"]))
        if text is None:
            return False
        try:
            return self.fs.age(LOCK) > UNREADABLE_GRACE
        except Exception:   # gone meanwhile
            return False

    def _break(self, stale: str | None) -> None:
        """Remove a stale lock, but only the one that was seen: breakers take turns through a second
        lock file, and each re-reads the lock before deleting it, so a lock another process took over
        in the meantime is never deleted."""
        me = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "since": time.time(), "token": ""})
        if not self.fs.create_exclusive(BREAKER, me):
            breaker = _parse(self._text(BREAKER))
            if breaker is not None and breaker.get("host") == socket.gethostname() and not _alive(int(breaker["pid"])):
                self.fs.delete(BREAKER)
            time.sleep(0.05)
            return
        try:
            if self._text(LOCK) == stale:
                self.fs.delete(LOCK)
        finally:
            self.fs.delete(BREAKER)

    def _acquire(self) -> None:
        token = uuid.uuid4().hex
        me = {"host": socket.gethostname(), "pid": os.getpid(), "since": time.time(), "token": token}
        started = time.monotonic()
        pause = 0.01
        shown = ""
        try:
            while not self.fs.create_exclusive(LOCK, json.dumps(me)):
                seen = self._text(LOCK)
                holder = _parse(seen)
                if self._stale(holder, seen):
                    self._break(seen)
                    continue
                waited = time.monotonic() - started
                if self.timeout is not None and waited >= self.timeout:
                    raise ViewDFError(self._in_use(holder))
                if self.status and waited >= STATUS_AFTER:
                    shown = self._show(f"waiting {waited:.0f}s for the writer lock: {self._who(holder)} "
                                       f"(interrupt to stop waiting)", shown)
                time.sleep(pause)
                pause = min(pause * 2, 0.25)
        except KeyboardInterrupt:
            raise Interrupted("Interrupted while waiting for the writer lock: nothing was written.") from None
        finally:
            if shown:
                self._show("", shown)
        self._token = token

    @staticmethod
    def _show(line: str, shown: str) -> str:
        """Replace the status line ``shown`` on stderr with ``line``; returns what is shown now."""
        sys.stderr.write("\r" + line.ljust(len(shown)) + ("" if line else "\r"))
        sys.stderr.flush()
        return line

    def _who(self, holder: dict | None) -> str:
        if holder is None:
            return f"the warehouse at {self.fs.root} is busy"
        return f"process {holder['pid']} on {holder['host']} (writing since {_since(holder)} UTC)"

    def _release(self) -> None:
        holder = self.holder()
        if holder is not None and holder.get("token") == self._token:
            self.fs.delete(LOCK)
        self._token = ""

    def _in_use(self, holder: dict | None) -> str:
        if holder is None:
            return f"the warehouse at {self.fs.root} is busy; try again"
        return (f"the warehouse at {self.fs.root} is in use by {self._who(holder)}; waited {self.timeout:g}s. "
                f"If that process is gone, delete {self.fs.uri(LOCK)}")


def _since(holder: dict) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(holder["since"]))
