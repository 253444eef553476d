"""The fixed-rate latency run's pieces (benchmarks/nexmark_latency.py): a feeder that makes one part of every
stream arrive each period, and each system following the arrivals, with the time each part's output was
committed.

A part *arrives* when its file of every stream is in the system's input folder (a hard link: it appears
whole, at once). A part's output is *committed* when every row due by it is stored where a reader sees it:

* ``viewdf``: the LOAD of the part's last file returned, under AUTO maintenance (every view part it made ready
  is committed in the catalog). The stream takes each Parquet file as it is. When parts have piled up
  meanwhile, ViewDF loads their files one after another.
* ``streaming``: Structured Streaming, a micro-batch as soon as new files are there (no trigger interval, no
  limit on files). A part is committed at the end of the micro-batch that read its last file and, for the
  window queries, of the one whose file sink wrote the last row due by it (the window it closes; that needs
  the watermark, i.e. the next part's events).
* ``naive``: the batch query over what the part's new rows depend on, its rows written.
* ``flink``: tools/flink_nexmark.py ``--follow`` in .venv-flink, CSV parts (converted before the clock
  starts), each row stamped as it leaves the query and printed (not committed: Flink gets that for free). A
  backlog arrives as one file of consecutive parts per source reader; the clock starts once Flink is idle.

Which rows a part is due by: a row of q1-q3 by its event (q3's by the later of its auction and its person); a
window's rows by the part whose end closes it (q5, q8), q7's by the part holding the window's end (its rows
include bids at that instant).
"""

from __future__ import annotations

import glob
from collections import Counter
from collections.abc import Callable
import json
import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TextIO

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from viewdf_magic import Warehouse
from viewdf_magic.nexmark import stream_statements
from viewdf_magic.nexmark.compare import Windows
from viewdf_magic.nexmark.parts import STREAMS, PartFiles
from viewdf_magic.nexmark.queries import QUERY_STREAMS
from viewdf_magic.nexmark.streaming import start_streaming
from viewdf_magic.nexmark.views import view_statements

from .flink_csv import write_csv
from .nexmark_runs import FLINK_PYTHON, REPO, load, naive_part
from .process_cpu import tree_cpu_seconds

WINDOW_DUE = {"q5": "starttime", "q7": "window_end", "q8": "starttime"}


def due_part(query: str, micros: int, windows: Windows) -> int:
    """The part a row is due by, from its due column (``WINDOW_DUE``; q1-q3: the event's time) in epoch
    microseconds."""
    length = windows.part_seconds * 1_000_000
    if query in ("q5", "q8"):       # a window's start: the part ending where the window ends
        return (micros + windows.window_seconds * 1_000_000) // length - 1
    return micros // length         # an event's time, or q7's window end: the part holding it


class Feeder(threading.Thread):
    """Makes the parts ``subscripts`` arrive: the first ``backlog`` of them at once, when ``deliver_backlog`` is
    called (a history every system takes in before the clock starts), then part ``subscripts[backlog + k]`` at
    ``start + k * period`` (seconds). A part arrives when each stream's file is linked from ``source(stream,
    subscript)`` to ``target(stream, subscript)``. ``arrived`` holds each part's arrival (epoch seconds)."""

    def __init__(self, subscripts: tuple[int, ...], period: float, source: Callable[[str, int], str],
                 target: Callable[[str, int], str], backlog: int = 0) -> None:
        super().__init__(daemon=True)
        if not 0 <= backlog < len(subscripts):
            raise ValueError(f"a backlog of {backlog} parts leaves none of the {len(subscripts)} parts to follow")
        self.subscripts, self.period, self.source, self.target = subscripts, period, source, target
        self.backlog = backlog
        self.arrived: dict[int, float] = {}

    def deliver_backlog(self, history: Callable[[str], list[tuple[str, str]]] | None = None) -> None:
        """Make the backlog's parts arrive now: each part's files, or the links ``history(stream)`` gives (from,
        to) when the backlog comes in a few larger files (Flink's: ``write_csv_parts``)."""
        if history is None:
            for subscript in self.subscripts[:self.backlog]:
                self._link(subscript)
            return
        for stream in STREAMS:
            for source, target in history(stream):
                os.link(source, target)
        self.arrived.update(dict.fromkeys(self.subscripts[:self.backlog], time.time()))

    def run(self) -> None:
        start = time.time()
        for index, subscript in enumerate(self.subscripts[self.backlog:]):
            time.sleep(max(0.0, start + index * self.period - time.time()))
            self._link(subscript)

    def _link(self, subscript: int) -> None:
        for stream in STREAMS:
            os.link(self.source(stream, subscript), self.target(stream, subscript))
        self.arrived[subscript] = time.time()

    def wait_for(self, subscript: int) -> None:
        """Return once part ``subscript`` has arrived; raise if the feeder stopped before it."""
        while subscript not in self.arrived:
            if not self.is_alive() and subscript not in self.arrived:
                raise RuntimeError(f"the feeder stopped before part {subscript} arrived")
            time.sleep(0.005)


@dataclass
class Followed:
    """One system's run: when each part's output was committed (epoch seconds), the CPU-seconds it used from
    the first arrival to its last commit, and where its rows are."""

    commits: dict[int, float] = field(default_factory=dict)
    cpu_seconds: float | None = None
    rows: str | None = None
    feeder: Feeder | None = None


def _arrival_folders(folder: str) -> None:
    for stream in STREAMS:
        os.makedirs(os.path.join(folder, stream), exist_ok=True)


def _parquet_feeder(files: PartFiles, folder: str, period: float, backlog: int) -> tuple[PartFiles, Feeder]:
    """Parts of ``files`` arriving in ``folder`` (same names): a ``backlog`` of them at once, then one per
    ``period``."""
    _arrival_folders(folder)
    arrived = PartFiles(folder, files.part_seconds, files.subscripts)
    return arrived, Feeder(files.subscripts, period, files.path, arrived.path, backlog)


def follow_viewdf(spark: SparkSession, files: PartFiles, query: str, windows: Windows, folder: str, period: float,
                  cpu: Callable[[], float], backlog: int = 0) -> Followed:
    """LOAD what has arrived (AUTO maintenance: each LOAD computes the view parts it makes ready), and again
    until every part is in; the ``backlog``'s parts are loaded in one call before the clock starts."""
    warehouse = Warehouse(os.path.join(folder, "warehouse"), spark=spark, progress=False)
    warehouse.run(stream_statements(partition_length_seconds=files.part_seconds))
    warehouse.run(view_statements(windows.window_seconds, windows.slide_seconds, files.part_seconds)[query])
    arrived, feeder = _parquet_feeder(files, os.path.join(folder, "in"), period, backlog)
    followed = Followed(rows=os.path.join(folder, "warehouse"), feeder=feeder)
    pending = list(files.subscripts)

    def load_arrived() -> None:
        nonlocal pending
        batch = [s for s in pending if s in feeder.arrived]      # the feeder's parts arrive in order
        load(warehouse, [(stream, arrived.path(stream, subscript)) for stream in QUERY_STREAMS[query] for subscript in batch])
        followed.commits.update(dict.fromkeys(batch, time.time()))
        pending = pending[len(batch):]

    if backlog:
        feeder.deliver_backlog()
        load_arrived()
    feeder.start()
    used = cpu()
    while pending:
        feeder.wait_for(pending[0])
        load_arrived()
    followed.cpu_seconds = cpu() - used
    return followed


def follow_naive(spark: SparkSession, files: PartFiles, query: str, windows: Windows, folder: str, period: float,
                 cpu: Callable[[], float], backlog: int = 0) -> Followed:
    """The batch query per part, as each arrives. The ``backlog`` is computed before the clock starts: part by
    part, but for q3 and q4, whose newest result replaces the one before, once, at its last part."""
    arrived, feeder = _parquet_feeder(files, os.path.join(folder, "in"), period, backlog)
    rows = os.path.join(folder, "rows")
    followed = Followed(rows=rows, feeder=feeder)
    if backlog:
        feeder.deliver_backlog()
        history = files.subscripts[:backlog]
        for subscript in history[-1:] if query in ("q3", "q4") else history:
            naive_part(spark, arrived, query, windows, subscript, rows)
        followed.commits.update(dict.fromkeys(history, time.time()))
    feeder.start()
    used = cpu()
    for subscript in files.subscripts[backlog:]:
        feeder.wait_for(subscript)
        naive_part(spark, arrived, query, windows, subscript, rows)
        followed.commits[subscript] = time.time()
    followed.cpu_seconds = cpu() - used
    return followed


def follow_streaming(spark: SparkSession, files: PartFiles, query: str, windows: Windows, folder: str,
                     period: float, cpu: Callable[[], float], backlog: int = 0) -> Followed:
    """A streaming query over the arrival folders; commits read back from its progress, its source log and
    its sink's files (see the module's text). The ``backlog``'s parts are there when it starts, and it has
    processed them before the clock starts."""
    arrived, feeder = _parquet_feeder(files, os.path.join(folder, "in"), period, backlog)
    feeder.deliver_backlog()
    running = start_streaming(spark, query, files, folder, windows.window_seconds, windows.slide_seconds,
                              parts_per_batch=None, watched=arrived.folder)
    if backlog:
        running.processAllAvailable()
    feeder.start()
    used = cpu()
    feeder.join()
    running.processAllAvailable()
    cpu_seconds = cpu() - used
    running.stop()
    ends = {p["batchId"]: _epoch(p["timestamp"]) + p["durationMs"]["triggerExecution"] / 1000
            for p in running.recentProgress}
    read = _read_batches(os.path.join(folder, "checkpoint", "sources"), running.recentProgress)
    commits = {s: ends[max(read[_named(arrived.path(stream, s))] for stream in QUERY_STREAMS[query])]
               for s in files.subscripts}
    if query in WINDOW_DUE:
        for written, due in _sink_files(os.path.join(folder, "rows"), query, windows):
            end = min(end for end in ends.values() if end >= written)     # the batch that wrote it
            for subscript in due:
                commits[subscript] = max(commits.get(subscript, end), end)
    return Followed(commits, cpu_seconds, os.path.join(folder, "rows"), feeder)


def _epoch(stamp: str) -> float:
    """A progress report's ``timestamp`` (ISO 8601, UTC) in epoch seconds."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _read_batches(sources: str, progress: list) -> dict[str, int]:
    """Each input file (``_named``) and the micro-batch that read it. A file source's log numbers its entries
    by its own offset, which no-data batches do not advance; each batch's progress gives the offset it read
    up to, per source (its description names the source's folder). Compacted logs keep every entry."""
    first: dict[tuple[str, int], int] = {}
    for report in sorted(progress, key=lambda p: p["batchId"]):
        for source in report["sources"]:
            offset = source["endOffset"]
            offset = json.loads(offset) if isinstance(offset, str) else offset
            if offset is not None:
                stream = source["description"].rstrip("]/").rsplit("/", 1)[-1]
                first.setdefault((stream, offset["logOffset"]), report["batchId"])
    read: dict[str, int] = {}
    for log in glob.glob(os.path.join(sources, "*", "*")):
        with open(log) as lines:
            for line in lines:
                if line.startswith("{"):
                    entry = json.loads(line)
                    read[_named(entry["path"])] = first[(_named(entry["path"]).split("/")[0], entry["batchId"])]
    return read


def _named(path: str) -> str:
    """A part file's stream and name (``bid/part-000000000001.parquet``), from a path or a URI."""
    return "/".join(path.rstrip("/").split("/")[-2:])


def _sink_files(rows: str, query: str, windows: Windows) -> list[tuple[float, set[int]]]:
    """Each file the sink wrote: when (its modification time, epoch seconds) and the parts its rows are due by."""
    found = []
    for path in glob.glob(os.path.join(rows, "part-*.parquet")):
        # Spark writes timestamps as INT96, which pyarrow reads in nanoseconds
        stamps = pq.read_table(path, columns=[WINDOW_DUE[query]]).column(0).cast(pa.timestamp("us")).cast(pa.int64())
        found.append((os.path.getmtime(path), {due_part(query, micros, windows) for micros in stamps.to_pylist()}))
    return found


def follow_flink(files: PartFiles, query: str, windows: Windows, folder: str, period: float, csv: str,
                 parallelism: int, last: int, backlog: int = 0) -> Followed:
    """tools/flink_nexmark.py ``--follow`` over CSV parts (``csv/<stream>/part-<subscript>.csv``); stopped once
    its rows due by part ``last`` are out (or 30 s and 5 periods after the last arrival). The ``backlog`` arrives
    in the files ``write_csv_parts`` made of it, and the clock starts once Flink has taken it in (``taken_in``)."""
    _arrival_folders(os.path.join(folder, "in"))
    feeder = Feeder(files.subscripts, period, lambda stream, s: _csv_path(csv, stream, s),
                    lambda stream, s: _csv_path(os.path.join(folder, "in"), stream, s), backlog)
    ready, stop, printed = (os.path.join(folder, name) for name in ("ready", "stop", "printed.txt"))
    command = [str(FLINK_PYTHON), str(REPO / "tools" / "flink_nexmark.py"), "--data", files.folder, "--follow",
               os.path.join(folder, "in"), "--queries", query, "--ready", ready, "--stop", stop, "--parallelism",
               str(parallelism), "--window", str(windows.window_seconds), "--slide", str(windows.slide_seconds)]
    with open(printed, "w") as out, open(os.path.join(folder, "flink.log"), "w") as log:
        process = subprocess.Popen(command, stdout=out, stderr=log)
        while not os.path.exists(ready):
            if process.poll() is not None:
                raise RuntimeError(f"flink --follow ended before its job ran: see {folder}/flink.log")
            time.sleep(0.05)
        if backlog:
            feeder.deliver_backlog(lambda stream: [(path, os.path.join(folder, "in", stream, os.path.basename(path)))
                                                   for path in backlog_csv(csv, stream)])
            taken_in(lambda: tree_cpu_seconds(process.pid), process.poll)
        used = tree_cpu_seconds(process.pid)
        feeder.start()
        feeder.join()
        deadline = time.time() + max(30.0, 5 * period)
        with open(printed) as reading:
            due = DueParts(reading, query, windows)
            while time.time() < deadline and last not in due.seen():
                time.sleep(0.1)
        time.sleep(0.5)
        cpu_seconds = tree_cpu_seconds(process.pid) - used
        open(stop, "w").close()
        process.wait(timeout=120)
    return Followed(_printed(printed, query, windows), cpu_seconds, printed, feeder)


QUIET_SECONDS = 3.0        # how long Flink must be all but idle to have taken its backlog in
QUIET_CORES = 0.15         # "all but idle": the source's 10 ms directory scans, timers and GC
BACKLOG_TIMEOUT = 3600.0


def taken_in(cpu: Callable[[], float], ended: Callable[[], int | None], quiet: float = QUIET_SECONDS,
             cores: float = QUIET_CORES, timeout: float = BACKLOG_TIMEOUT, look: float = 0.25) -> float:
    """Wait until a job has read and processed everything there is: its process tree (``cpu``: CPU-seconds so
    far) used less than ``cores`` of a core over the last ``quiet`` seconds. Nothing else tells when Flink's
    unbounded file source has read its files: its rows do not (q3's are rare; a window's wait for the next
    part's watermark). Returns the seconds waited; raises if the job ``ended`` or ``timeout`` passed."""
    started = time.time()
    samples = [(started, cpu())]
    while True:
        time.sleep(look)
        if ended() is not None:
            raise RuntimeError("the job ended while taking its backlog in")
        now = time.time()
        samples.append((now, cpu()))
        while len(samples) > 2 and samples[1][0] <= now - quiet:
            samples.pop(0)
        if samples[0][0] <= now - quiet and samples[-1][1] - samples[0][1] < cores * (now - samples[0][0]):
            return now - started
        if now - started > timeout:
            raise RuntimeError(f"the job was still busy with its backlog after {timeout:.0f} s")


def _csv_path(folder: str, stream: str, subscript: int) -> str:
    return os.path.join(folder, stream, f"part-{subscript:012d}.csv")


def _printed_rows(path: str, query: str, windows: Windows) -> list[tuple[int, float]]:
    """Flink's printed rows (``+I[emitted_at, due_by, ...]``): each row's due part and emission (epoch seconds).
    Its queries only insert, so any other change kind is an error."""
    with open(path) as lines:
        return [_printed_row(line, query, windows) for line in lines if line.strip()]


def _printed_row(line: str, query: str, windows: Windows) -> tuple[int, float]:
    """One printed row's due part and emission (``_printed_rows``)."""
    if "+I[" not in line:
        raise ValueError(f"Flink printed a row other than an insert: {line[:80]}")
    emitted, due = line.split("+I[", 1)[1].split(", ", 2)[:2]
    micros = int(datetime.fromisoformat(due).replace(tzinfo=timezone.utc).timestamp() * 1_000_000)
    return due_part(query, micros, windows), _epoch(emitted)


class DueParts:
    """The parts whose rows Flink has printed so far, read from where the last look stopped: waiting for the
    last part must not re-read the whole file (a million lines for q1) on the cores Flink is measured on."""

    def __init__(self, lines: TextIO, query: str, windows: Windows) -> None:
        self.lines = lines
        self.query, self.windows = query, windows
        self.parts: set[int] = set()
        self.partial = ""

    def seen(self) -> set[int]:
        for line in self.lines:
            line = self.partial + line
            if not line.endswith("\n"):          # Flink is still printing it
                self.partial = line
                continue
            self.partial = ""
            if line.strip():
                self.parts.add(_printed_row(line, self.query, self.windows)[0])
        return self.parts


def _printed(path: str, query: str, windows: Windows) -> dict[int, float]:
    """The last emission of each part's rows."""
    commits: dict[int, float] = {}
    for subscript, emitted in _printed_rows(path, query, windows):
        commits[subscript] = max(commits.get(subscript, 0.0), emitted)
    return commits


def printed_counts(path: str, query: str, windows: Windows) -> dict[int, int]:
    """How many rows Flink printed per part they are due by."""
    return dict(Counter(subscript for subscript, _ in _printed_rows(path, query, windows)))


def write_csv_parts(files: PartFiles, folder: str, backlog: int = 0, chunks: int = 1) -> str:
    """The parts as CSV for Flink, under ``folder/<stream>/``: the first ``backlog`` in ``chunks`` files of
    consecutive parts (``backlog_csv``: one per source reader, so that each reads its events in time order and
    none waits without a watermark), every other part in a file of its own."""
    for stream in STREAMS:
        os.makedirs(os.path.join(folder, stream), exist_ok=True)
        history = files.subscripts[:backlog]
        schema = pq.read_schema(files.path(stream, files.subscripts[0]))
        for index in range(min(chunks, len(history))):
            chunk = history[len(history) * index // chunks:len(history) * (index + 1) // chunks]
            write_csv([files.path(stream, s) for s in chunk], schema,
                      os.path.join(folder, stream, f"backlog-{index:04d}.csv"))
        for subscript in files.subscripts[backlog:]:
            write_csv([files.path(stream, subscript)], schema, _csv_path(folder, stream, subscript))
    return folder


def backlog_csv(folder: str, stream: str) -> list[str]:
    """The backlog's CSV files of ``stream`` (``write_csv_parts``), in order."""
    return sorted(glob.glob(os.path.join(folder, stream, "backlog-*.csv")))
