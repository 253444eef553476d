"""Crash safety: a worker process to SIGKILL at random points, and the loop that kills it.

Run as a script, ``python tests/crash_worker.py <warehouse> <first_batch> <seed>`` opens the
warehouse on a small local SparkSession, prints ``READY``, creates the stream M and its views if
they are missing (one object at a time, so a kill during creation is finished by the next worker),
then ingests batches ``first_batch``, ``first_batch + 1``, ... forever, printing ``BEGIN <n>``
before each ``Warehouse.ingest``, ``COMMITTED <n>`` once the batch's log entry is published (before
maintenance), and ``ACK <n>`` once ``ingest`` has returned (the acknowledgement).
With ``-`` for ``first_batch`` it starts Spark, prints ``BOOTED`` and reads ``GO <first_batch>``
from stdin before it opens the warehouse: the loop boots the next worker while the current one
works and the parent checks what it left. ``--class-archive <file> <scratch>`` writes the
class-data-sharing archive the workers start from.

Imported, it gives the parent side: ``batches`` regenerates batch n exactly from (seed, n), and
``crash_loop`` starts a worker, kills its whole process group (its JVM too) at a random moment,
reopens the warehouse in the parent (which recovers) and checks it, over and over; at the end every
view is compared with a warehouse rebuilt from scratch. ``tests/test_crash_safety.py`` runs it in CI,
``benchmarks/crash_stress.py`` for longer.
"""

from __future__ import annotations

import json
import os
import queue
import random
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:          # run as a script, or imported by the benchmark
    sys.path.insert(0, str(TESTS))

from test_late_data import PATTERN_VIEW, WINDOW_VIEW, assert_equals_rebuild  # noqa: E402

from viewdf_magic.network_example import NETWORK_DDL  # noqa: E402
from viewdf_magic.catalog.model import folder_of  # noqa: E402

BASE = pd.Timestamp("2015-01-01 10:00")
# Objects in creation order; each is created only when the catalog does not have it yet.
OBJECTS = list(zip(["M", "Helper", "View2"], [s.strip() for s in NETWORK_DDL.split(";") if s.strip()])) + [
    ("Recent", WINDOW_VIEW), ("Rising", PATTERN_VIEW)]
DDL = [NETWORK_DDL, WINDOW_VIEW, PATTERN_VIEW]       # the same objects, for the rebuild
MAX_MINUTES = 12          # M's newest part stops here: later batches are all late (a few dozen parts at most)
LATE_SHARE = 0.3          # of batches before MAX_MINUTES
LATE_WITHIN = 4           # a late batch goes to one of the newest LATE_WITHIN + 1 minutes
WH = "wh"                 # the warehouse folder below the loop's root
CLASS_ARCHIVE = "VIEWDF_CRASH_CLASS_ARCHIVE"     # environment: the workers' class-data-sharing archive
MAX_DELAY = 20.0          # seconds: a longer repair is killed part way and finished by the parent's reopen


# -- the data ------------------------------------------------------------------------------
def batches(seed: int, count: int) -> list[pd.DataFrame]:
    """Batches 0 .. count-1: 1-3 rows each, in the minute after the newest one so far or, sometimes,
    late, in one of the newest few minutes. Every row's timestamp carries its batch number and
    position (milliseconds ``3 n + i`` into its minute), so no two rows are equal and rows are never
    tied in time order; the views group on neither."""
    out, newest = [], -1
    for n in range(count):
        rng = random.Random(seed * 1_000_003 + n)
        if newest >= 0 and (newest >= MAX_MINUTES or rng.random() < LATE_SHARE):
            minute = max(0, newest - rng.randint(0, LATE_WITHIN))
        else:
            minute = newest + 1
        newest = max(newest, minute)
        rows = rng.randint(1, 3)
        out.append(pd.DataFrame({
            "ts": [BASE + pd.Timedelta(minutes=minute, milliseconds=3 * n + i) for i in range(rows)],
            "src": [rng.choice(["a", "b"]) for _ in range(rows)],
            "dest": [rng.choice(["x", "y"]) for _ in range(rows)],
            "loss": [rng.randint(0, 40) for _ in range(rows)]}).astype({"loss": "int32"}))
    return out


def small_session(master: str = "local[1]", dump_classes_to: str | None = None):
    """An embedded-style SparkSession kept small and quick to start (other Spark users share the
    machine's two cores): C1-only JIT and the serial collector suit a short-lived driver, adaptive
    execution only adds planning work on a few rows, and with CLASS_ARCHIVE set the JVM maps the
    classes a worker needs from that class-data-sharing archive instead of loading and verifying
    them again (``dump_classes_to`` writes such an archive when the JVM exits)."""
    from pyspark.sql import SparkSession

    java = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:ReservedCodeCacheSize=240m"     # as conftest.py's
    if dump_classes_to:
        java += f" -XX:ArchiveClassesAtExit={dump_classes_to}"
    elif os.environ.get(CLASS_ARCHIVE):
        java += f" -XX:SharedArchiveFile={os.environ[CLASS_ARCHIVE]}"
    java += " -Xlog:disable -Xlog:all=error:stderr"        # JVM warnings would go to stdout, the protocol
    spark = (SparkSession.builder.master(master).appName("viewdf-crash")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.default.parallelism", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true")
             .config("spark.sql.adaptive.enabled", "false")
             .config("spark.driver.memory", "1g")
             .config("spark.driver.extraJavaOptions", java)
             .getOrCreate())
    spark.sparkContext.setLogLevel("FATAL")
    return spark


def dump_classes(archive: str, scratch: str) -> None:
    """Run a small part of what a worker runs (M, Helper and View2, two batches) on a scratch
    warehouse, then exit, so the JVM writes the classes it loaded to ``archive``."""
    from viewdf_magic import Warehouse

    spark = small_session(dump_classes_to=archive)
    warehouse = Warehouse(scratch, spark=spark, progress=False)
    warehouse.execute(NETWORK_DDL)
    for frame in batches(0, 2):
        warehouse.ingest("M", frame)
    spark.stop()


def start_class_archive(folder: Path) -> Child:
    """Start writing a class-data-sharing archive for the workers (about a third less CPU to start
    one and to run its first batch); ``class_archive`` waits for it."""
    return Child([str(Path(__file__).resolve()), "--class-archive", str(folder / "worker-classes.jsa"),
                  str(folder / "archive-scratch")], folder / "worker-stderr.txt")


def class_archive(child: Child, folder: Path) -> Path | None:
    """The archive ``start_class_archive`` wrote, or None if this JVM could not write one."""
    code = child.finish(timeout=600)
    shutil.rmtree(folder / "archive-scratch", ignore_errors=True)
    archive = folder / "worker-classes.jsa"
    return archive if code == 0 and archive.exists() else None


# -- the worker ----------------------------------------------------------------------------
def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def work(path: str, first_batch: str, seed: int) -> None:
    """``first_batch`` "-": start Spark, print BOOTED, then wait for ``GO <first batch>`` on stdin
    (the parent boots the next worker's JVM while it checks the warehouse the last one left)."""
    from viewdf_magic import Warehouse
    from viewdf_magic.engine.ingest import Ingester

    spark = small_session()
    if first_batch == "-":
        say("BOOTED")
        words = sys.stdin.readline().split()
        if not words:
            return
        first_batch = words[1]
    first = int(first_batch)
    warehouse = Warehouse(path, spark=spark, progress=False, lock_timeout=30.0)
    say(f"READY {first}")
    for name, statement in OBJECTS:
        if warehouse.catalog.get(name) is None:
            say(f"CREATE {name}")
            warehouse.execute(statement)
    n = first
    append_stream = Ingester.append_stream

    def announced(*args, **kwargs):
        report = append_stream(*args, **kwargs)
        say(f"COMMITTED {n}")          # the batch's log entry is published; maintenance comes next
        return report
    Ingester.append_stream = announced
    while True:
        data = batches(seed, n + 1)[n]
        say(f"BEGIN {n}")
        report = warehouse.ingest("M", data)
        if report.failures:
            raise RuntimeError(f"maintenance failed after batch {n}: {report.failures}")
        say(f"ACK {n}")
        n += 1


# -- the parent ----------------------------------------------------------------------------
@dataclass
class Counts:
    kills: int = 0
    recoveries: int = 0                 # reopens that had work to do (a pending repair or ready view parts)
    recovered_steps: int = 0            # view parts those reopens computed or re-checked
    pending_repairs: int = 0            # kills that left a late-data repair pending
    in_flight: int = 0                  # kills during Warehouse.ingest (between BEGIN and ACK)
    in_flight_committed: int = 0        # ... whose batch had been committed (it is in M, unacknowledged)
    phases: dict = field(default_factory=dict)     # where the kills landed (see crash_loop)
    lock_left: int = 0                  # kills that left the writer lock file behind
    acked: int = 0                      # batches acknowledged over all workers
    batches: int = 0                    # batches in M at the end
    parts: dict = field(default_factory=dict)      # parts per object at the end
    unreferenced_folders: int = 0       # data folders no part names (garbage of killed writes), at the end
    rebuilds: int = 0
    seconds: float = 0.0
    seconds_archiving: float = 0.0      # until the workers' class-data-sharing archive was there
    seconds_to_ready: float = 0.0       # waiting for a booted worker to open the warehouse
    seconds_before_kill: float = 0.0    # workers working until killed
    seconds_checking: float = 0.0       # the parent's reopens (recoveries included) and checks
    seconds_rebuilding: float = 0.0
    worker_cpu_seconds: float = 0.0     # CPU the killed workers used (their JVM boots included)
    parent_cpu_seconds: float = 0.0     # CPU the parent's Python and JVM used during the loop

    def summary(self) -> str:
        return (f"{self.kills} kills, {self.recoveries} recoveries ({self.recovered_steps} view parts), "
                f"{self.pending_repairs} with a repair pending, {self.in_flight} with a batch in flight "
                f"({self.in_flight_committed} committed but unacknowledged), phases {self.phases}, "
                f"{self.lock_left} left the lock file; {self.acked} batches acknowledged, {self.batches} in M; "
                f"{self.unreferenced_folders} unreferenced data folders; {self.rebuilds} rebuild(s); "
                f"{self.seconds:.0f}s (the class archive after {self.seconds_archiving:.0f}s; "
                f"{self.seconds_to_ready:.0f}s waiting for workers, {self.seconds_before_kill:.0f}s "
                f"until kills, {self.seconds_checking:.0f}s reopening and checking, {self.seconds_rebuilding:.0f}s "
                f"rebuilding); CPU: workers {self.worker_cpu_seconds:.0f}s, parent {self.parent_cpu_seconds:.0f}s")


class Child:
    """A Python child process in its own process group (so a kill takes its JVM too), its stdout read
    line by line on a thread. Used by the crash loop and by tests/test_concurrent_kernels.py."""

    def __init__(self, args: list[str], stderr: Path, env: dict[str, str] | None = None) -> None:
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYTHONUNBUFFERED="1", **(env or {}))
        self.stderr_path = stderr
        with open(stderr, "ab") as err:
            self.proc = subprocess.Popen([sys.executable, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=err, env=env, start_new_session=True, text=True)
        self.cpu = 0.0                            # CPU seconds it used, when it was killed
        self.lines: list[str] = []
        self.seen: dict[str, float] = {}          # first line with each word (READY, ACK, ...) -> when
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.seen.setdefault(line.split(" ")[0].strip(), time.monotonic())
            self._queue.put(line.strip())
        self._queue.put(None)

    def send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def wait_for(self, prefix: str, timeout: float) -> str:
        """The next line starting with ``prefix`` (lines before it are kept in ``lines``)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.kill()
                raise AssertionError(f"child printed no {prefix} within {timeout:.0f}s; {self.stderr_tail()}")
            if line is None:
                raise AssertionError(f"child exited (code {self.proc.wait()}) before {prefix}; "
                                     f"{self.stderr_tail()}")
            self.lines.append(line)
            if line.startswith(prefix):
                return line

    def kill(self) -> None:
        """SIGKILL the whole process group (the Python worker and its JVM) and wait until it is gone."""
        self.cpu = cpu_seconds(self.proc.pid)
        if self.proc.poll() is None or _group_alive(self.proc.pid):    # never signal a group id that is free
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        deadline = time.monotonic() + 30
        while _group_alive(self.proc.pid):
            assert time.monotonic() < deadline, f"process group {self.proc.pid} survived SIGKILL"
            time.sleep(0.02)
        self._reader.join(10)
        self.proc.stdin.close()
        while not self._queue.empty():
            line = self._queue.get_nowait()
            if line is not None:
                self.lines.append(line)

    def finish(self, timeout: float) -> int:
        """Wait for the child to exit by itself; its exit code (every line it printed is in ``lines``)."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"child still running after {timeout:.0f}s; {self.stderr_tail()}") from None
        deadline = time.monotonic() + 30          # its JVM exits when its stdin (the child's pipe) closes
        while _group_alive(self.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.kill()              # whatever outlived that, and the rest of its output
        return code

    def stderr_tail(self) -> str:
        text = self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""
        return "stderr:\n" + text[-3000:]


class Worker(Child):
    """A crash worker, booted ahead: it starts Spark at once and opens the warehouse on ``go``."""

    def __init__(self, path: Path, seed: int, stderr: Path, archive: Path | None = None) -> None:
        super().__init__([str(Path(__file__).resolve()), str(path), "-", str(seed)], stderr,
                         {CLASS_ARCHIVE: str(archive)} if archive else None)

    def go(self, first: int) -> None:
        self.wait_for("BOOTED", timeout=300)
        self.send(f"GO {first}")


def _group(pgid: int) -> list[list[str]]:
    """/proc/<pid>/stat fields (from the state on) of the live (not zombie) processes in a group."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()      # state, ppid, pgrp, ..., utime, stime at 11, 12
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            found.append(fields)
    return found


def _group_alive(pgid: int) -> bool:
    return bool(_group(pgid))


def cpu_seconds(pgid: int) -> float:
    """CPU time used so far by the live processes of a process group (a worker and its JVM)."""
    return sum(int(f[11]) + int(f[12]) for f in _group(pgid)) / os.sysconf("SC_CLK_TCK")


def check_parts(spark, warehouse, checked: set[tuple[str, ...]]) -> None:
    """Every folder the catalog names exists, and every part not checked before reads back with exactly
    the rows the catalog records, all stamped with its own PART_TIMESTAMP (one Spark job per object)."""
    from pyspark.sql import functions as F

    root = Path(warehouse.path[len("file:"):])
    for definition in warehouse.catalog.objects.values():
        if not definition.partitioned:
            continue
        state = warehouse.catalog.state(definition.name)
        todo = {}
        for subscript, meta in state.parts.items():
            label = f"{definition.name}[{subscript}]"
            for folder in meta.folders:
                assert (root / folder_of(folder)).is_dir(), f"{label} names {folder}, which does not exist"
            if not meta.folders:
                assert meta.rows == 0, f"{label} has {meta.rows} rows but no folder"
            key = (definition.key, subscript, *meta.folders)
            if meta.folders and key not in checked:
                todo[subscript] = (key, label, meta)
        if not todo:
            continue
        frame = warehouse.store.read_parts(definition, state, sorted(todo))
        counted = frame.groupBy(F.unix_timestamp("PART_TIMESTAMP").alias("stamp")).count().collect()
        rows = Counter({row["stamp"]: row["count"] for row in counted})
        assert set(rows) <= {s * definition.length for s in todo}, f"{definition.name}: rows of parts not asked for"
        for subscript, (key, label, meta) in todo.items():
            stored = rows[subscript * definition.length]
            assert stored == meta.rows, f"{label} reads back {stored} rows, the catalog records {meta.rows}"
            checked.add(key)


def logged_state(path: Path) -> tuple[int, dict]:
    """The newest committed catalog version and the catalog settings at it, read from the log files
    directly (the newest checkpoint, then the entries after it), without opening the warehouse."""
    def versions(folder: str) -> list[int]:
        return sorted(int(f.stem) for f in (path / "_viewdf" / folder).glob("*.json")) \
            if (path / "_viewdf" / folder).is_dir() else []
    checkpoints, settings, version = versions("checkpoint"), {}, 0
    if checkpoints:
        version = checkpoints[-1]
        settings = json.loads((path / "_viewdf" / "checkpoint" / f"{version:020d}.json").read_text())["settings"]
    for entry in versions("log"):
        if entry > version:
            for action in json.loads((path / "_viewdf" / "log" / f"{entry:020d}.json").read_text())["actions"]:
                if action["op"] == "setting" and action["value"] is None:
                    settings.pop(action["key"], None)
                elif action["op"] == "setting":
                    settings[action["key"]] = action["value"]
            version = entry
    return version, settings


def m_batches(warehouse, generated: list[pd.DataFrame]) -> int:
    """How many batches M holds: M's rows must be exactly batches 0 .. k-1, each row once."""
    stored = warehouse.execute("SELECT ts, src, dest, loss FROM M")
    have = Counter(map(tuple, stored.astype({"loss": "int64"}).itertuples(index=False)))
    sizes = [0]
    for frame in generated:
        sizes.append(sizes[-1] + len(frame))
    total = sum(have.values())
    assert total in sizes, f"M has {total} rows: not a whole number of batches (partial batch?)"
    k = sizes.index(total)
    want = Counter(map(tuple, pd.concat(generated[:k]).astype({"loss": "int64"}).itertuples(index=False))) \
        if k else Counter()
    assert have == want, (f"M's {total} rows are not batches 0..{k - 1}: missing {list((want - have).items())[:5]}, "
                          f"extra {list((have - want).items())[:5]}")
    return k


def parent_cpu(spark) -> float:
    """CPU seconds this process and its Spark JVM have used."""
    times = os.times()
    jvm = getattr(getattr(spark.sparkContext, "_gateway", None), "proc", None)
    used = times.user + times.system
    if jvm is not None:
        try:
            fields = Path(f"/proc/{jvm.pid}/stat").read_text()
            fields = fields[fields.rindex(")") + 2:].split()
            used += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            pass
    return used


AIMS = ["ingest", "maintenance", "maintenance", "acknowledged", "anywhere"]


def crash_loop(spark, root: Path, kills: int, seed: int = 7, rebuild_every: int = 0,
               log: Callable[[str], None] = print) -> Counts:
    """Kill ``kills`` workers at random moments; after each, reopen and check the warehouse; at the end
    (and every ``rebuild_every`` kills) compare every view with a from-scratch rebuild.

    The first kill lands while the first worker creates the window view or the pattern view (each is
    published with its helper views in one log entry), the second while the next one creates the rest.
    After that each kill takes the next of four aims from shuffled rounds of five (maintenance twice):
    during the ingest (a uniform time after BEGIN, up to 1.2 times the usual time to the batch's
    commit: its Spark jobs, its data files, its log entry); during maintenance (a uniform time after
    COMMITTED, up to the usual time to ACK: the cascade, a late-data repair); after an acknowledgement
    (a uniform time after ACK, up to the usual time to a commit: between batches, the next ingest);
    or anywhere (``D * u**2`` after READY, D the usual time from BEGIN to ACK: DDL, ...). The usual
    times are medians of what earlier workers took, so the aims hold however fast the machine is; no
    wait is longer than MAX_DELAY."""
    from viewdf_magic import Warehouse

    started = time.monotonic()
    cpu_started = parent_cpu(spark)
    root.mkdir(parents=True, exist_ok=True)
    path = root / WH
    rng = random.Random(seed)
    counts = Counts()
    checked: set[tuple[str, ...]] = set()
    first = 0
    warehouse = None
    aims: list[str] = []
    to_commit, to_ack = [4.0], [8.0]     # seconds from BEGIN to COMMITTED and from COMMITTED to ACK

    def make(name: str):
        return Warehouse(str(root / name), spark=spark, progress=False)

    def usual(times: list[float]) -> float:
        return min(statistics.median(times[-7:]), MAX_DELAY)

    archiver: Child | None = start_class_archive(root)
    archive = None
    spare = Worker(path, seed, root / "worker-stderr.txt")     # the first workers boot while it is written
    try:
        while counts.kills < kills:
            worker, spare = spare, None
            mark = time.monotonic()
            worker.go(first)
            worker.wait_for("READY", timeout=180)
            ready = time.monotonic()
            counts.seconds_to_ready += ready - mark
            if archiver is not None and archiver.proc.poll() is not None and not _group_alive(archiver.proc.pid):
                archive, archiver = class_archive(archiver, root), None     # written: later workers use it
                counts.seconds_archiving = time.monotonic() - started
            if counts.kills + 1 < kills:
                spare = Worker(path, seed, root / "worker-stderr.txt", archive)    # boots while this one works
            missing = [name for name, _ in OBJECTS if warehouse is None or warehouse.catalog.get(name) is None]
            if counts.kills < 2 and missing:
                aim = "views"
            else:
                if not aims:                # a shuffled round of the aims: a short run still meets each
                    aims = rng.sample(AIMS, len(AIMS))
                aim = aims.pop()
            if aim == "views":              # kill a worker while it creates a view
                worker.wait_for("CREATE Recent" if warehouse is None else "CREATE", timeout=300)
                delay = rng.uniform(0.0, 1.5)
            elif aim == "ingest":
                worker.wait_for("BEGIN", timeout=300)
                delay = rng.uniform(0.0, min(1.2 * usual(to_commit), MAX_DELAY))
            elif aim == "maintenance":
                worker.wait_for("COMMITTED", timeout=300)
                delay = rng.uniform(0.0, usual(to_ack))
            elif aim == "acknowledged":
                worker.wait_for("ACK", timeout=300)
                delay = rng.uniform(0.0, usual(to_commit))
            else:
                delay = min(usual(to_commit) + usual(to_ack), MAX_DELAY) * rng.random() ** 2
            time.sleep(delay)
            exited = worker.proc.poll()
            worker.kill()
            mark = time.monotonic()
            counts.seconds_before_kill += mark - ready
            assert exited is None, f"worker exited by itself (code {exited}); {worker.stderr_tail()}"
            counts.kills += 1
            counts.worker_cpu_seconds += worker.cpu
            lines = worker.lines
            acks = [int(line.split()[1]) for line in lines if line.startswith("ACK ")]
            begun = [int(line.split()[1]) for line in lines if line.startswith("BEGIN ")]
            assert acks == list(range(first, first + len(acks))), f"acknowledged out of order: {acks}"
            counts.acked += len(acks)
            in_flight = bool(begun) and begun[-1] not in acks
            if {"BEGIN", "COMMITTED"} <= worker.seen.keys():
                to_commit.append(worker.seen["COMMITTED"] - worker.seen["BEGIN"])
            if {"COMMITTED", "ACK"} <= worker.seen.keys():
                to_ack.append(worker.seen["ACK"] - worker.seen["COMMITTED"])
            lock_left = (path / "_viewdf" / "lock").exists()
            counts.lock_left += lock_left

            left_version, left_settings = logged_state(path)          # what the kill left, before recovery
            repair_pending = "repair" in left_settings
            if warehouse is not None:
                warehouse.close()
            warehouse = Warehouse(str(path), spark=spark, progress=False, lock_timeout=10.0)
            recovered = warehouse.recovered
            counts.pending_repairs += repair_pending
            if recovered or repair_pending:
                counts.recoveries += 1
                counts.recovered_steps += len(recovered)
            assert not warehouse.maintainer.failures, f"recovery failed: {warehouse.maintainer.failures}"
            assert "repair" not in warehouse.catalog.settings, "a late-data repair is still pending after reopening"
            if warehouse.catalog.get("M") is not None and warehouse.maintenance == "auto":
                ready_parts = [d.name for d in warehouse.catalog.views() if warehouse.maintainer.next_step(d)]
                assert not ready_parts, f"view parts ready but not computed after reopening: {ready_parts}"
            assert not (path / "_viewdf" / "lock").exists() or not recovered, "recovery left the lock behind"

            check_parts(spark, warehouse, checked)
            done = first + len(acks)
            k = m_batches(warehouse, batches(seed, done + 1)) if warehouse.catalog.get("M") is not None else 0
            assert k in (done, done + 1), f"M holds batches 0..{k - 1} but {done} were acknowledged"
            assert k == done or in_flight, "M holds a batch that was never begun"
            if in_flight and f"COMMITTED {begun[-1]}" in lines:
                assert k == done + 1, f"batch {begun[-1]} was committed but M does not hold it"
            counts.in_flight += in_flight
            counts.in_flight_committed += k == done + 1
            if not begun:
                phase = "creating views" if any(line.startswith("CREATE ") for line in lines) else "opening"
            elif not in_flight:
                phase = "between batches"
            elif f"COMMITTED {begun[-1]}" in lines:
                phase = "maintenance" + (" (repair)" if repair_pending else "")
            else:
                phase = "ingest, log entry published" if k == done + 1 else "ingest"
            counts.phases[phase] = counts.phases.get(phase, 0) + 1
            log(f"kill {counts.kills} ({aim}, {delay:.1f}s) in {phase}: {len(acks)} acked, M has {k} batches, "
                f"{'lock left, ' if lock_left else ''}recovered {len(recovered)} part(s), "
                f"version {warehouse.catalog.version}, {time.monotonic() - started:.0f}s")
            first = k
            counts.seconds_checking += time.monotonic() - mark
            if rebuild_every and counts.kills % rebuild_every == 0 and counts.kills < kills and first:
                mark = time.monotonic()
                assert_equals_rebuild(warehouse, make, DDL, f"rebuilt-{counts.kills}")
                counts.rebuilds += 1
                counts.seconds_rebuilding += time.monotonic() - mark
    finally:
        for child in (spare, archiver):
            if child is not None:
                child.kill()
        (root / "worker-classes.jsa").unlink(missing_ok=True)      # some 200 MB

    assert warehouse is not None and first > 0, "no batch was ever committed"
    mark = time.monotonic()
    assert_equals_rebuild(warehouse, make, DDL, "rebuilt")
    counts.rebuilds += 1
    counts.seconds_rebuilding += time.monotonic() - mark
    counts.batches = first
    counts.parts = {d.name: len(warehouse.catalog.state(d.name).parts) for d in warehouse.catalog.objects.values()
                    if d.partitioned}
    referenced = {folder_of(folder).split("/__part=")[0] for d in warehouse.catalog.objects.values()
                  if d.partitioned for meta in warehouse.catalog.state(d.name).parts.values()
                  for folder in meta.folders}
    on_disk = {f"data/{d.name}/{f.name}" for d in (path / "data").iterdir() for f in d.iterdir()}
    counts.unreferenced_folders = len(on_disk - referenced)
    counts.seconds = time.monotonic() - started
    counts.parent_cpu_seconds = parent_cpu(spark) - cpu_started
    return counts


def write_counts(counts: Counts, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(asdict(counts), indent=2) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "--class-archive":
        dump_classes(sys.argv[2], sys.argv[3])
    else:
        work(sys.argv[1], sys.argv[2], int(sys.argv[3]))
