"""One Nexmark query run by one system over the same per-part files, timed per part, its rows kept for
the equality check (benchmarks/nexmark.py runs them and reports).

* ``viewdf``: a warehouse holding the query's views (viewdf_magic/nexmark/views.py); each part is
  ingested into the streams the query reads, then maintenance computes every view part it makes ready.
  A part's seconds are the ingest plus the maintenance.
* ``streaming``: Structured Streaming, one micro-batch per part (viewdf_magic/nexmark/streaming.py).
* ``naive``: the batch query (viewdf_magic/nexmark/queries.py) run per part from scratch over the
  events the part's new result depends on: the part itself (q1, q2), the window it closes (q5, q7,
  q8; nothing to do at a part that closes none) or every event so far (q3, q4), its rows written out.
* ``flink``: tools/flink_nexmark.py in .venv-flink, one job per query over all the parts.

The ``*_backlog`` runners are the same systems at saturation (benchmarks/nexmark_saturation.py): every
part is on disk when the clock starts, and each system takes the whole backlog, batching as it chooses.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from viewdf_magic import Warehouse
from viewdf_magic.nexmark import stream_statements
from viewdf_magic.nexmark.compare import Windows, csv_frame
from viewdf_magic.nexmark.parts import PartFiles
from viewdf_magic.nexmark.queries import QUERY_STREAMS, nexmark_queries
from viewdf_magic.nexmark.streaming import run_streaming
from viewdf_magic.nexmark.views import view_statements

from .common import linked_copy

REPO = Path(__file__).resolve().parent.parent
FLINK_PYTHON = REPO / ".venv-flink" / "bin" / "python"


@dataclass
class Run:
    """A system's run of a query: seconds per stream part (in the parts' order; Flink has none, only
    one job), where its rows are, and notes."""

    system: str
    query: str
    cores: int
    part_seconds: list[float] = field(default_factory=list)
    ingest_seconds: list[float] = field(default_factory=list)
    job_seconds: float | None = None          # Flink: the job over every part
    empty_job_seconds: float | None = None    # Flink: the same job over no events
    rows: str | None = None
    wall_seconds: float | None = None         # Spark systems: the whole run, from its start to its last row
    cpu_seconds: float | None = None          # the CPU the driver process and its JVM used then (Flink: the job's)
    empty_cpu_seconds: float | None = None    # Flink: the job over no events
    input_seconds: float | None = None        # Flink: reading and parsing its CSV input (a scan, less a scan of none)
    input_cpu_seconds: float | None = None


def load(warehouse: Warehouse, paths: list[tuple[str, str]], move: bool = False) -> float:
    """LOAD each ``(stream, path)``'s part file (or folder of part files), as a ViewDF user takes files that
    land (a stream takes Parquet files as they are), in one run: the views are maintained once, after the
    last LOAD (``move``: LOAD .. MOVE, the files taken over, not copied). The seconds of that maintenance."""
    loaded = warehouse.run("; ".join(f"LOAD '{path}' INTO {stream}" + (" MOVE" if move else "")
                                     for stream, path in paths))
    return sum(result.maintenance_seconds or 0.0 for result in loaded)


def run_viewdf(spark: SparkSession, files: PartFiles, query: str, windows: Windows, folder: str) -> Run:
    """Maintain the query's views part by part: AUTO maintenance, so the LOADs of a part's files compute every
    view part they make ready. A part's ingest seconds are its seconds less the maintenance after the LOADs."""
    warehouse = Warehouse(folder, spark=spark, progress=False)
    warehouse.run(stream_statements(partition_length_seconds=files.part_seconds))
    warehouse.run(view_statements(windows.window_seconds, windows.slide_seconds, files.part_seconds)[query])
    run = Run("viewdf", query, _cores(spark), rows=folder)
    for subscript in files.subscripts:
        started = time.perf_counter()
        maintenance = load(warehouse, [(stream, files.path(stream, subscript)) for stream in QUERY_STREAMS[query]])
        seconds = time.perf_counter() - started
        run.part_seconds.append(seconds)
        run.ingest_seconds.append(seconds - maintenance)
    return run


def viewdf_rows(spark: SparkSession, run: Run) -> DataFrame:
    """The rows of every part of the run's final view."""
    assert run.rows is not None
    frame = Warehouse(run.rows, spark=spark, progress=False).run(f"SELECT * FROM {run.query}")[-1].frame
    assert frame is not None
    return frame


def run_viewdf_backlog(spark: SparkSession, files: PartFiles, query: str, windows: Windows, folder: str) -> Run:
    """LOAD .. MOVE the folder of every part of each stream the query reads, one statement each in one run,
    under AUTO maintenance: after the last LOAD, every view part they make ready is computed (range steps where
    the view's translation has them). MOVE takes the files over, as a warehouse fed by a landing folder would:
    each stream's folder is first given as a folder of hard links to its files, before the clock starts."""
    warehouse = Warehouse(folder, spark=spark, progress=False)
    warehouse.run(stream_statements(partition_length_seconds=files.part_seconds))
    warehouse.run(view_statements(windows.window_seconds, windows.slide_seconds, files.part_seconds)[query])
    landing = [(stream, linked_copy(files.stream_folder(stream), os.path.join(folder + "-landing", stream)))
               for stream in QUERY_STREAMS[query]]
    started = time.perf_counter()
    maintenance = load(warehouse, landing, move=True)
    seconds = time.perf_counter() - started
    return Run("viewdf", query, _cores(spark), part_seconds=[seconds], ingest_seconds=[seconds - maintenance],
               rows=folder)


def run_streaming_backlog(spark: SparkSession, files: PartFiles, query: str, windows: Windows, folder: str) -> Run:
    """The availableNow trigger with no limit on files per trigger: the backlog in one micro-batch (and the
    batch without input that closes the last windows)."""
    streamed = run_streaming(spark, query, files, folder, windows.window_seconds, windows.slide_seconds,
                             parts_per_batch=None)
    return Run("streaming", query, _cores(spark), part_seconds=streamed.batch_seconds, rows=streamed.output)


def run_naive_backlog(spark: SparkSession, files: PartFiles, query: str, windows: Windows, folder: str) -> Run:
    """The batch query once over every event, its rows written as Parquet."""
    for stream in QUERY_STREAMS[query]:
        files.read(spark, stream).createOrReplaceTempView(stream)
    run = Run("naive", query, _cores(spark), rows=os.path.join(folder, "rows"))
    started = time.perf_counter()
    spark.sql(nexmark_queries(windows.window_seconds, windows.slide_seconds)[query]).write.parquet(run.rows)
    run.part_seconds.append(time.perf_counter() - started)
    return run


def run_structured_streaming(spark: SparkSession, files: PartFiles, query: str, windows: Windows, folder: str) -> Run:
    """One micro-batch per part; the first len(parts) batches are the parts' (a last one may follow,
    with no input, to close windows)."""
    streamed = run_streaming(spark, query, files, folder, windows.window_seconds, windows.slide_seconds)
    return Run("streaming", query, _cores(spark), part_seconds=streamed.batch_seconds[:len(files.subscripts)],
               rows=streamed.output)


def _naive_inputs(query: str, subscript: int, windows: Windows, files: PartFiles) -> tuple[list[int], object]:
    """The parts the naive recomputation at ``subscript`` reads, and the window (start) whose rows it
    keeps (None: all); no parts when the part closes no window."""
    length = files.part_seconds
    first = files.subscripts[0]
    start, end = subscript * length, (subscript + 1) * length
    window = windows.window_seconds // length
    if query in ("q1", "q2"):
        return [subscript], None
    if query in ("q3", "q4"):
        return list(range(first, subscript + 1)), None
    if query == "q7":          # the window ending at this part's start, and this part's first instant
        closes = start % windows.window_seconds == 0
        return (list(range(max(first, subscript - window), subscript + 1)) if closes else []), start
    step = windows.slide_seconds if query == "q5" else windows.window_seconds
    closes = end % step == 0
    return (list(range(max(first, subscript - window + 1), subscript + 1)) if closes else []), \
        end - windows.window_seconds


def naive_part(spark: SparkSession, files: PartFiles, query: str, windows: Windows, subscript: int, rows: str) -> None:
    """The batch query from scratch at part ``subscript``, over what the part's new rows depend on, its rows
    written under ``rows``."""
    parts, window = _naive_inputs(query, subscript, windows, files)
    if not parts:
        return
    for stream in QUERY_STREAMS[query]:
        files.read(spark, stream, [files.path(stream, s) for s in parts]).createOrReplaceTempView(stream)
    result = spark.sql(nexmark_queries(windows.window_seconds, windows.slide_seconds)[query])
    column = windows.window_column(query)
    if column is not None:
        result = result.where(F.unix_seconds(column) == window)
    # q3 and q4 recompute their whole result: the newest one replaces the one before
    target = rows if query in ("q3", "q4") else os.path.join(rows, f"part={subscript}")
    result.write.mode("overwrite").parquet(target)


def run_naive(spark: SparkSession, files: PartFiles, query: str, windows: Windows, folder: str) -> Run:
    """The batch query from scratch at every part, over what the part's new rows depend on."""
    run = Run("naive", query, _cores(spark), rows=os.path.join(folder, "rows"))
    for subscript in files.subscripts:
        started = time.perf_counter()
        naive_part(spark, files, query, windows, subscript, run.rows)
        run.part_seconds.append(time.perf_counter() - started)
    return run


def naive_rows(spark: SparkSession, run: Run, like: DataFrame) -> DataFrame:
    assert run.rows is not None
    return spark.read.parquet(run.rows).select(*like.columns)


def run_flink(files: PartFiles, queries: list[str], windows: Windows, folder: str, parallelism: int,
              rows: bool = True) -> list[Run]:
    """Time each query in Flink (blackhole sink; the job over the parts and over no events, and a scan of its
    input), in wall and CPU-seconds, then (with ``rows``) run them again writing their rows as CSV under
    ``folder``."""
    common = [str(FLINK_PYTHON), str(REPO / "tools" / "flink_nexmark.py"), "--data", files.folder,
              "--window", str(windows.window_seconds), "--slide", str(windows.slide_seconds),
              "--parallelism", str(parallelism), "--queries", *queries]
    timed = subprocess.run([*common, "--timing"], check=True, capture_output=True, text=True)
    runs = []
    for line in timed.stdout.splitlines():
        measured = json.loads(line)
        runs.append(Run("flink", measured["query"], parallelism, job_seconds=measured["seconds"],
                        empty_job_seconds=measured["empty_seconds"], rows=os.path.join(folder, measured["query"]),
                        cpu_seconds=measured["cpu_seconds"], empty_cpu_seconds=measured["empty_cpu_seconds"],
                        input_seconds=measured["input_seconds"], input_cpu_seconds=measured["input_cpu_seconds"]))
    if rows:
        subprocess.run([*common, "--rows", folder], check=True, capture_output=True, text=True)
    return runs


def flink_rows(spark: SparkSession, run: Run, like: DataFrame) -> DataFrame:
    assert run.rows is not None
    return csv_frame(spark, run.rows, like)


def flink_available() -> bool:
    """Whether .venv-flink exists (``./run flink-env`` makes it)."""
    return FLINK_PYTHON.exists()


def _cores(spark: SparkSession) -> int:
    return spark.sparkContext.defaultParallelism
