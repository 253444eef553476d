"""Interrupting a statement (Ctrl-C, Jupyter's Interrupt kernel) cancels its Spark jobs, publishes
nothing half-done, keeps the parts published before, says which, and leaves the session usable."""

from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import pandas as pd
import pytest
from pyspark.sql import functions as F

from viewdf_magic import Warehouse
from viewdf_magic.catalog.catalog import Catalog
from viewdf_magic.catalog.backends import open_filesystem
from viewdf_magic.errors import Interrupted
from viewdf_magic.network_example import NETWORK_DDL, network_stream
from viewdf_magic.notebook.replay import Replay

START = pd.Timestamp("2015-01-01 10:00:00")
SLOW = "viewdf_test_slow"          # a SQL function that returns its argument after SLOW_SECONDS
SLOW_SECONDS = 0.5
MINUTES = 12
WAIT = 300.0                       # seconds any wait gives up after (a test that waits that long fails; a loaded
                                   # CI machine with a property test shrinking beside it is slow, not wrong)

STREAM_DDL = "CREATE STREAM S (ts TIMESTAMP, x INT) TIMESTAMP ts PARTITION LENGTH 60"
VIEW_DDL = (f"CREATE VIEW V AS INITIALIZE V[i] AS SELECT ts, {SLOW}(x) AS x FROM S[i] "
            f"UPDATE V[j] AS SELECT ts, {SLOW}(x) AS x FROM S[j] "
            f"RECOMPUTE V[j] AS SELECT ts, x FROM S[j] PARTITION LENGTH 60")


# A view range steps can lift (no user function) whose parts each cost about 0.1-0.2 s of CPU: a slow
# but deterministic identity of x
HEAVY_VIEW_DDL = ("CREATE VIEW R AS INITIALIZE R[i] AS SELECT ts, x FROM S[i] "
                  "UPDATE R[j] AS SELECT ts, aggregate(sequence(x, x + 100000), x, (a, v) -> a) AS x FROM S[j] "
                  "RECOMPUTE R[j] AS SELECT ts, x FROM S[j] PARTITION LENGTH 60")


def insert(minutes: int) -> str:
    """One row a minute into S from 10:00, x counting the minutes."""
    rows = ", ".join(f"(TIMESTAMP '{START + pd.Timedelta(minutes=m)}', {m})" for m in range(minutes))
    return f"INSERT INTO S VALUES {rows}"


def slow_identity(seconds: float, started: Path | None = None) -> Callable[[int], int]:
    """A function for a Python UDF that returns its argument after ``seconds`` (defined here, so it is
    shipped to Python workers by value); with ``started``, it first creates that file (local mode: the
    workers share this machine), which says the job runs without waiting for Spark's status store."""
    marker = None if started is None else str(started)

    def slow(value):  # type: ignore[no-untyped-def]   (hints would make PySpark guess a pandas UDF)
        import time
        if marker is not None:
            open(marker, "a").close()
        time.sleep(seconds)
        return value
    return slow


def wait_until(condition: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def published_parts(path: Path, spark, name: str) -> list[int]:
    """The subscripts of ``name``'s parts in the warehouse's newest catalog, read as another process would."""
    catalog = Catalog(open_filesystem(spark, str(path)))
    return sorted(catalog.state(name).parts) if catalog.get(name) is not None else []


def kept_message(parts: list[int]) -> str:
    """The message of an interrupted STEP that published ``parts`` (subscripts of minutes) of V."""
    first, last = (pd.Timestamp(p * 60, unit="s") for p in (parts[0], parts[-1]))
    span = f"{first:%Y-%m-%d %H:%M:%S}" if len(parts) == 1 else f"{first:%Y-%m-%d %H:%M:%S} .. {last:%H:%M:%S}"
    noun = "view part" if len(parts) == 1 else "view parts"
    return f"Interrupted: kept {len(parts)} {noun} (V[{span}]); the part being computed was not published."


@contextmanager
def interrupted_when(ready: Callable[[], bool]) -> Iterator[None]:
    """Within the block, send this process SIGINT once ``ready()``, with the default handler that
    raises KeyboardInterrupt in the main thread (as ipykernel installs while a cell runs)."""
    done = threading.Event()
    main = threading.main_thread().ident
    assert main is not None

    def send() -> None:
        while not done.is_set():
            if ready():
                # to the main thread itself: a signal the kernel routes to this (sending) thread would
                # reach the main thread only when its blocking call into Spark returns
                signal.pthread_kill(main, signal.SIGINT)
                return
            time.sleep(0.05)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    sender = threading.Thread(target=send, daemon=True)
    try:
        sender.start()
        yield
    finally:
        done.set()
        sender.join()
        signal.signal(signal.SIGINT, previous)


@pytest.fixture(scope="module")
def slow_function(spark):
    spark.udf.register(SLOW, slow_identity(SLOW_SECONDS), "int")
    return SLOW


def test_interrupted_ingest_cancels_its_job_and_publishes_nothing(spark, make_warehouse, tmp_path):
    warehouse = make_warehouse()
    warehouse.run(STREAM_DDL)
    version = warehouse.catalog.version
    # 4 s a row, 32 s a task: on a loaded machine the interrupt must still land before the job could end
    started = tmp_path / "slow-function-started"
    slow_x = F.udf(slow_identity(8 * SLOW_SECONDS, started), "int")
    batch = spark.createDataFrame(pd.DataFrame({"ts": [START + pd.Timedelta(seconds=s) for s in range(16)],
                                                "x": range(16)})).select("ts", slow_x("x").alias("x"))
    tracker = spark.sparkContext.statusTracker()
    group = f"interrupt-test-{tmp_path.name}"       # this thread's jobs, not a job another test left running
    spark.sparkContext.setJobGroup(group, "the interrupted ingest")
    try:   # the ingest's one Spark job writes the batch (and counts it), running the function
        with interrupted_when(started.exists), pytest.raises(Interrupted) as stopped:
            warehouse.ingest("S", batch)        # 16 rows, 8 per task: 32 s unless cancelled
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
        spark.sparkContext.setLocalProperty("spark.job.description", None)
    assert str(stopped.value) == "Interrupted: no part was published."

    def statuses() -> list[str]:    # learnt through Spark's (asynchronous) listener bus, so waited for
        return [tracker.getJobInfo(job).status for job in sorted(tracker.getJobIdsForGroup(group))]
    wait_until(lambda: "FAILED" in statuses() and "RUNNING" not in statuses(), "the write job to be cancelled")
    assert statuses() == ["FAILED"]                              # the write, cancelled
    assert spark.range(5).count() == 5                           # py4j hands out no stale answer
    assert warehouse.execute("SELECT count(*) AS n FROM S")["n"].tolist() == [0]
    assert warehouse.catalog.version == version and published_parts(tmp_path / "wh", spark, "S") == []
    other = Warehouse(str(tmp_path / "wh"), spark=spark, progress=False, lock_timeout=2)
    other.run(f"INSERT INTO S VALUES (TIMESTAMP '{START}', 1)")  # the writer lock was released
    assert published_parts(tmp_path / "wh", spark, "S") == [START.value // 60_000_000_000]


def test_interrupted_step_keeps_the_parts_it_published(spark, make_warehouse, tmp_path, slow_function):
    warehouse = make_warehouse()
    warehouse.run(f"{STREAM_DDL}; {insert(MINUTES)}; SET MAINTENANCE MANUAL; {VIEW_DDL}")
    stream = published_parts(tmp_path / "wh", spark, "S")
    assert len(stream) == MINUTES

    with interrupted_when(lambda: len(published_parts(tmp_path / "wh", spark, "V")) >= 2), \
            pytest.raises(Interrupted) as stopped:
        warehouse.run("STEP ALL")           # 12 parts, 0.5 s each unless interrupted
    kept = published_parts(tmp_path / "wh", spark, "V")
    assert 2 <= len(kept) < MINUTES and kept == stream[:len(kept)]
    assert str(stopped.value) == kept_message(kept)
    assert [s.subscript for s in warehouse.history()][-len(kept):] == kept
    verified = warehouse.run("VERIFY VIEW V")[0]
    assert verified.message == f"V: all {len(kept)} parts equal their recomputation."
    warehouse.run("STEP ALL")
    assert published_parts(tmp_path / "wh", spark, "V") == stream
    assert warehouse.execute("SELECT sum(x) AS total FROM V")["total"].tolist() == [sum(range(MINUTES))]


def test_interrupted_step_all_keeps_the_range_steps_it_published(spark, make_warehouse, tmp_path, monkeypatch):
    """STEP ALL over a view with range steps commits run by run: the first run of a view reads at most
    RANGE_FIRST_ROWS input rows (here 16, one per part), so an interrupt keeps every run published before it
    (issue 35)."""
    import viewdf_magic.maintainer.ranges as ranges_module
    monkeypatch.setattr(ranges_module, "RANGE_FIRST_ROWS", 16)
    minutes = 40
    warehouse = make_warehouse()
    warehouse.run(f"{STREAM_DDL}; {insert(minutes)}; SET MAINTENANCE MANUAL; {HEAVY_VIEW_DDL}")
    stream = published_parts(tmp_path / "wh", spark, "S")
    with interrupted_when(lambda: len(published_parts(tmp_path / "wh", spark, "R")) >= 2), \
            pytest.raises(Interrupted) as stopped:
        warehouse.run("STEP ALL")
    kept = published_parts(tmp_path / "wh", spark, "R")
    assert 2 <= len(kept) < minutes and kept == stream[:len(kept)]
    assert str(stopped.value) == kept_message(kept).replace("(V[", "(R[")
    spans = [report.span for report in warehouse.history() if report.view == "R" and report.span]
    assert spans[0] == (stream[1], stream[16])      # the first run, after the INITIALIZE part
    assert kept == stream[:stream.index(spans[-1][1]) + 1]          # the INITIALIZE part and every run reported
    rows = warehouse.execute("SELECT x FROM R ORDER BY ts")["x"].tolist()
    assert rows == list(range(len(kept)))                           # each kept part holds its minute's row
    warehouse.run("STEP ALL")
    assert published_parts(tmp_path / "wh", spark, "R") == stream
    assert warehouse.execute("SELECT sum(x) AS total FROM R")["total"].tolist() == [sum(range(minutes))]


def test_step_all_finishes_a_repair_that_an_interrupt_left_pending(spark, make_warehouse, monkeypatch):
    """A late row's ingest interrupted after its stream part is published, before the repair it started
    recomputed the view: STEP ALL recomputes the stale part (as a Structured Streaming query stopped mid-batch
    leaves it)."""
    warehouse = make_warehouse()
    warehouse.run(f"{STREAM_DDL}; {HEAVY_VIEW_DDL}; {insert(3)}")
    repairer = warehouse.engine.repairer

    def interrupted() -> None:
        raise KeyboardInterrupt
    monkeypatch.setattr(repairer, "run", interrupted)
    with pytest.raises(Interrupted, match="^Interrupted: kept 1 stream part"):
        warehouse.run(f"INSERT INTO S VALUES (TIMESTAMP '{START + pd.Timedelta(seconds=30)}', 100)")
    monkeypatch.undo()
    assert repairer.pending
    assert warehouse.execute("SELECT x FROM R ORDER BY x")["x"].tolist() == [0, 1, 2]     # the part is stale
    [repaired] = warehouse.run("STEP ALL")
    assert repaired.message == "Computed 1 view part."
    assert not repairer.pending
    assert warehouse.execute("SELECT x FROM R ORDER BY x")["x"].tolist() == [0, 1, 2, 100]


class Kernel:
    """An IPython kernel driven cell by cell, as a notebook front end drives it."""

    def __init__(self) -> None:
        from jupyter_client import KernelManager
        self.manager = KernelManager(kernel_name="python3")
        self.manager.start_kernel()
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=WAIT)

    def start(self, code: str) -> str:
        return self.client.execute(code)

    def finish(self, msg_id: str) -> tuple[dict, str]:
        """The cell's reply, and the text of everything it showed (streams, results, tracebacks)."""
        shown = []
        while True:
            message = self.client.get_iopub_msg(timeout=WAIT)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            content = message["content"]
            if message["msg_type"] == "status" and content["execution_state"] == "idle":
                break
            shown.append(content.get("text", "") + content.get("data", {}).get("text/plain", "")
                         + "\n".join(content.get("traceback", [])))
        while True:
            reply = self.client.get_shell_msg(timeout=WAIT)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply["content"], "\n".join(shown)

    def run(self, code: str) -> str:
        reply, shown = self.finish(self.start(code))
        assert reply["status"] == "ok", shown
        return shown

    def stop(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


@pytest.fixture
def kernel():
    started = Kernel()
    yield started
    started.stop()


def test_interrupting_the_kernel_stops_the_cell_and_keeps_what_was_published(kernel, spark, tmp_path):
    path = tmp_path / "wh"
    kernel.run("%load_ext viewdf_magic")
    kernel.run("from pyspark.sql import SparkSession\n"
               "spark = (SparkSession.builder.master('local[2]').config('spark.ui.enabled', 'false')"
               ".config('spark.sql.shuffle.partitions', '2').getOrCreate())\n"
               f"spark.udf.register({SLOW!r}, lambda x: __import__('time').sleep({SLOW_SECONDS}) or x, 'int')")
    kernel.run(f"%%viewdf --warehouse {path}\n{STREAM_DDL};\n{insert(40)}")

    # CREATE VIEW computes its parts in one transaction with its definition: interrupted, it publishes nothing
    data = path / "data"
    folders = set(data.iterdir())
    cell = kernel.start(f"%%viewdf\n{VIEW_DDL}")
    wait_until(lambda: set(data.iterdir()) - folders, "the backfill to write a part")
    kernel.manager.interrupt_kernel()
    reply, shown = kernel.finish(cell)
    assert (reply["status"], reply["ename"]) == ("error", "StatementFailed")
    assert reply["evalue"] == "Interrupted: no part was published."
    assert "Traceback" not in shown and "KeyboardInterrupt" not in shown
    assert published_parts(path, spark, "V") == []

    # STEP publishes part by part: interrupted, it keeps what it published
    kernel.run(f"%%viewdf\nSET MAINTENANCE MANUAL;\n{VIEW_DDL}")
    cell = kernel.start("%%viewdf\nSTEP ALL")
    wait_until(lambda: len(published_parts(path, spark, "V")) >= 2, "two parts of V")
    kernel.manager.interrupt_kernel()
    reply, shown = kernel.finish(cell)
    kept = published_parts(path, spark, "V")
    stream = published_parts(path, spark, "S")
    assert 2 <= len(kept) < len(stream) and kept == stream[:len(kept)]
    assert (reply["status"], reply["ename"], reply["evalue"]) == ("error", "StatementFailed", kept_message(kept))
    assert "Traceback" not in shown and "KeyboardInterrupt" not in shown

    # the kernel goes on: Spark answers the next cells, and what was kept equals its recomputation
    shown = kernel.run("%%viewdf\nVERIFY VIEW V")
    assert f"V: all {len(kept)} parts equal their recomputation." in shown
    shown = kernel.run("rows = %viewdf SELECT count(*) AS n, sum(x) AS total FROM V\nprint(rows.collect())")
    assert f"Row(n={len(kept)}, total={sum(range(len(kept)))})" in shown
    other = Warehouse(str(path), spark=spark, progress=False, lock_timeout=2)
    other.run(f"INSERT INTO S VALUES (TIMESTAMP '{START + pd.Timedelta(minutes=40)}', 40)")   # the lock is free
    assert published_parts(path, spark, "S") == stream + [stream[-1] + 1]



def test_an_interrupt_while_waiting_pauses_a_replay(make_warehouse, tmp_path, spark):
    warehouse = make_warehouse()
    warehouse.execute(NETWORK_DDL)
    replay = Replay(warehouse, "M", network_stream(parts=8, pairs=2))
    replay.play()
    with interrupted_when(lambda: replay.position >= 1), pytest.raises(KeyboardInterrupt):
        replay.wait()
    assert not replay.playing                          # the worker stopped with the interrupt
    stopped_at = replay.position
    assert 1 <= stopped_at < 8
    # every batch it ingested is whole: M has exactly those minutes, and Helper is maintained up to them
    assert len(published_parts(tmp_path / "wh", spark, "M")) == stopped_at
    assert len(published_parts(tmp_path / "wh", spark, "Helper")) == stopped_at
    replay.play()                                      # and play resumes with the next batch
    assert replay.wait(WAIT) and replay.position == 8


def test_log_records_pass_the_interrupt_filter_unless_it_handles_them(spark, caplog):
    """While a statement runs, py4j's tracebacks of the interrupt are filtered out; any other record
    passes, including one logged with exc_info=True outside an except block (exc_info (None, None, None))."""
    import logging

    from viewdf_magic.maintainer.cancellation import cancel_on_interrupt

    logger = logging.getLogger()           # the filter sits on the root logger and py4j's
    with caplog.at_level(logging.ERROR):
        with cancel_on_interrupt(spark):
            logger.error("no exception being handled", exc_info=True)
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt:
                logger.error("the interrupt itself", exc_info=True)
            try:
                raise ValueError("a real problem")
            except ValueError:
                logger.error("another error", exc_info=True)
    assert [record.getMessage() for record in caplog.records] == ["no exception being handled", "another error"]
