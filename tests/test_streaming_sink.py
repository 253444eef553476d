"""Structured Streaming feeds a stream through ``Warehouse.sink`` (foreachBatch), exactly once: every
micro-batch's rows land once, a batch Spark replays after a restart is skipped, late rows are repaired,
and the views equal counts computed from the input with pandas."""

from __future__ import annotations

import socket
import textwrap
import threading
import time

import pandas as pd
import pytest
from pyspark.errors import StreamingQueryException

from crash_worker import Child
from test_late_data import expected_lateness
from viewdf_magic import ViewDFError, Warehouse

START = pd.Timestamp("2015-01-01 10:00:00")
SCHEMA = "ts TIMESTAMP, src STRING, loss BIGINT"      # as pandas writes it; the stream casts to INT
DDL = ("CREATE STREAM M (ts TIMESTAMP, src STRING, loss INT) PARTITION LENGTH 60;"
       "CREATE VIEW PerMinute AS INITIALIZE PerMinute[i] AS SELECT src, count(*) AS n, sum(loss) AS total FROM M[i] "
       "GROUP BY src UPDATE PerMinute[j] AS SELECT src, count(*) AS n, sum(loss) AS total FROM M[j] GROUP BY src")


def rows(minutes: list[float], losses: list[int]) -> pd.DataFrame:
    return pd.DataFrame({"ts": [START + pd.Timedelta(minutes=m) for m in minutes],
                         "src": ["a" if k % 2 else "b" for k in range(len(minutes))], "loss": losses})


def per_minute(frame: pd.DataFrame) -> list[tuple]:
    """The view's rows from the input alone: per minute and src, the count and the sum."""
    grouped = frame.groupby([frame["ts"].dt.floor("min"), "src"])["loss"].agg(["count", "sum"]).reset_index()
    return sorted((r.ts, r.src, int(r["count"]), int(r["sum"])) for _, r in grouped.iterrows())


def stored(warehouse) -> list[tuple]:
    found = warehouse.execute("SELECT PART_TIMESTAMP, src, n, total FROM PerMinute")
    return sorted((r.PART_TIMESTAMP, r.src, int(r.n), int(r.total)) for r in found.itertuples())


def test_a_file_stream_lands_once_and_a_replayed_batch_is_skipped(spark, make_warehouse, tmp_path):
    landing, checkpoint = tmp_path / "landing", tmp_path / "checkpoint"
    landing.mkdir()
    batches = [rows([0, 0.5, 1], [3, 4, 5]), rows([1.5, 2, 2.5, 3], [6, 7, 8, 9]),
               rows([0.7, 3.2], [10, 11])]          # the last brings a late row for 10:00
    for k, frame in enumerate(batches):
        frame.to_parquet(landing / f"batch-{k}.parquet", coerce_timestamps="us", allow_truncated_timestamps=True)
    warehouse = make_warehouse()
    warehouse.run(DDL)
    taken: list[int] = []
    sink = warehouse.sink("M")

    def counted(batch, batch_id: int) -> None:
        taken.append(batch_id)
        sink(batch, batch_id)

    def run() -> None:
        source = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(landing))
        query = (source.writeStream.foreachBatch(counted).option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
        query.awaitTermination()

    run()
    everything = pd.concat(batches, ignore_index=True)
    assert taken == [0, 1, 2]
    assert stored(warehouse) == per_minute(everything)
    assert len(warehouse.execute("SELECT * FROM M")) == len(everything)
    lateness = warehouse.execute("SHOW LATENESS FOR M").iloc[0]
    on_time, behind = expected_lateness([[m for m in (frame["ts"] - START) / pd.Timedelta(minutes=1)]
                                         for frame in batches])
    assert behind == {0: 2, 3: 1}          # 10:01:30 into the newest part, 10:00:42 three parts behind 10:03
    assert (lateness["on_time_rows"], lateness["late_rows_by_parts_behind"]) == (on_time, behind)
    # Spark replays a batch whose commit it did not record (as after a crash between the sink and the commit)
    for name in ("2", ".2.crc"):
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    run()
    assert taken == [0, 1, 2, 2]
    assert stored(warehouse) == per_minute(everything)       # the replayed batch was not taken twice
    assert len(make_warehouse().execute("SELECT * FROM M")) == len(everything)     # and a reopen agrees


def test_a_rate_stream_feeds_the_stream_and_a_bad_batch_fails_the_query(spark, make_warehouse, tmp_path):
    warehouse = make_warehouse()
    warehouse.run(DDL)
    sink = warehouse.sink("M", name="rate")
    # the rate source's microsecond timestamps, spread over minutes by value
    source = (spark.readStream.format("rate").option("rowsPerSecond", 20).load()
              .selectExpr("timestamp_seconds(1420106400 + value * 7) AS ts", "CAST(value % 3 AS STRING) AS src",
                          "CAST(value AS INT) AS loss"))
    query = source.writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "rate")).start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and warehouse.reads.state("M").sink_batches.get("rate", -1) < 2:
        time.sleep(0.5)
    query.stop()      # may interrupt a batch's maintenance midway: its rows stay, the views catch up below
    warehouse.run("STEP ALL")
    newest = warehouse.reads.state("M").sink_batches["rate"]
    assert newest >= 2
    arrived = warehouse.execute("SELECT ts, src, loss FROM M")
    assert sorted(arrived["loss"]) == list(range(len(arrived)))      # values 0, 1, 2, ... each once
    assert stored(warehouse) == per_minute(arrived)
    # a bad batch (a NULL timestamp) fails with LOAD's message, and writes nothing
    bad = spark.createDataFrame(pd.DataFrame({"ts": [pd.NaT], "src": ["x"], "loss": [1]}), SCHEMA)
    with pytest.raises(ViewDFError, match="NULL timestamp"):
        sink(bad, newest + 1)
    assert warehouse.reads.state("M").sink_batches["rate"] == newest
    # a query with a new checkpoint under the same name starts again at batch 0: refused, not skipped
    good = spark.createDataFrame(pd.DataFrame({"ts": [START], "src": ["x"], "loss": [1]}), SCHEMA)
    with pytest.raises(ViewDFError, match=r"batch 0 of the sink 'rate' into M is older than the newest it took"):
        sink(good, 0)
    assert len(warehouse.execute("SELECT * FROM M")) == len(arrived)


# another process (a notebook's kernel, say) holding the warehouse's writer lock: no Spark needed to hold it
LOCK_HOLDER = textwrap.dedent("""
    import sys
    from viewdf_magic.catalog.local_fs import LocalFileSystem
    from viewdf_magic.catalog.lock import WriterLock
    with WriterLock(LocalFileSystem("file:" + sys.argv[1]), status=False).held():
        print("HELD", flush=True)
        sys.stdin.readline()
    print("RELEASED", flush=True)
""")


def test_a_sink_waits_for_a_writer_lock_and_with_a_timeout_fails_the_batch_which_a_restart_takes_once(
        spark, tmp_path):
    landing, checkpoint, path = tmp_path / "landing", tmp_path / "checkpoint", tmp_path / "wh"
    landing.mkdir()
    batches = [rows([0, 0.5, 1], [3, 4, 5]), rows([1.5, 2], [6, 7])]
    for k, frame in enumerate(batches):
        frame.to_parquet(landing / f"batch-{k}.parquet", coerce_timestamps="us", allow_truncated_timestamps=True)
    everything = pd.concat(batches, ignore_index=True)

    def run(warehouse: Warehouse) -> None:
        source = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(landing))
        query = (source.writeStream.foreachBatch(warehouse.sink("M")).option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
        query.awaitTermination()

    patient = Warehouse(str(path), spark=spark, progress=False)            # no timeout: waits for the lock
    patient.run(DDL)
    holder = Child(["-c", LOCK_HOLDER, str(path)], tmp_path / "holder-stderr.txt")
    try:
        holder.wait_for("HELD", timeout=120)
        # with a timeout, the micro-batch fails with the lock's message, and the query with it; nothing is written
        hasty = Warehouse(str(path), spark=spark, progress=False, lock_timeout=1.0)
        with pytest.raises(StreamingQueryException) as failed:
            run(hasty)
        error = str(failed.value)
        assert f"is in use by process {holder.proc.pid} on {socket.gethostname()} (writing since " in error
        assert "; waited 1s. If that process is gone, delete " in error
        assert patient.reads.state("M").sink_batches == {} and not patient.reads.state("M").parts
        # without one, the batch waits for the holder (the query makes no progress meanwhile, and does not fail)
        finished = threading.Event()
        waiting = threading.Thread(target=lambda: (run(patient), finished.set()), daemon=True)
        waiting.start()
        time.sleep(3)
        assert not finished.is_set() and not patient.reads.state("M").parts
        holder.send("release")
        holder.wait_for("RELEASED", timeout=60)
        waiting.join(timeout=300)
        assert finished.is_set()
    finally:
        holder.kill()
    # the restart replayed the failed batch 0 from the checkpoint, and took it once
    assert patient.reads.state("M").sink_batches == {"m": 1}
    assert stored(patient) == per_minute(everything)
    assert len(patient.execute("SELECT * FROM M")) == len(everything)
