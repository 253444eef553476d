"""SIGKILL the process whose Structured Streaming query feeds a stream through ``Warehouse.sink``, at random
points, and restart it from its checkpoint: every row arrives exactly once, and every view equals a rebuild.
A short form (one kill) runs in CI; ``./run stress`` kills 12 times (VIEWDF_SINK_KILLS sets either)."""

from __future__ import annotations

import os
import random
import textwrap
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from crash_worker import Child
from test_late_data import assert_equals_rebuild

from viewdf_magic import Warehouse
from viewdf_magic.network_example import NETWORK_DDL

TESTS = Path(__file__).resolve().parent
BASE = pd.Timestamp("2015-01-01 10:00")
FILES = 8
SCHEMA = "ts TIMESTAMP, src STRING, dest STRING, loss INT"

FEEDER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from crash_worker import small_session
    from viewdf_magic import Warehouse
    path, landing, checkpoint = sys.argv[1:4]
    spark = small_session()
    sink = Warehouse(path, spark=spark, progress=False, lock_timeout=120).sink("M")

    def take(batch, batch_id):
        print(f"BEGIN {{batch_id}}", flush=True)
        sink(batch, batch_id)
        print(f"TOOK {{batch_id}}", flush=True)
    print("READY", flush=True)
    source = spark.readStream.schema({schema!r}).option("maxFilesPerTrigger", 1).parquet(landing)
    query = (source.writeStream.foreachBatch(take).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination()
    print("DONE", flush=True)
""").format(tests=str(TESTS), schema=SCHEMA)


def landing_files(folder: Path, seed: int) -> pd.DataFrame:
    """FILES files of a few rows each, one file a minute, a third of them with a row for an earlier minute
    (late data); every row is distinct. All rows, for the check."""
    rng = random.Random(seed)
    written = []
    for k in range(FILES):
        minutes = [k + rng.random() for _ in range(rng.randint(1, 4))]
        if k > 2 and rng.random() < 0.35:
            minutes.append(k - rng.randint(1, 3) + rng.random())
        frame = pd.DataFrame({"ts": [BASE + pd.Timedelta(minutes=m) for m in minutes],
                              "src": rng.choices(["10.0.0.1", "10.0.0.3"], k=len(minutes)), "dest": "10.0.0.2",
                              "loss": [rng.randint(5, 30) for _ in minutes]}).astype({"loss": "int32"})
        frame["ts"] = frame["ts"].dt.floor("ms")
        frame.to_parquet(folder / f"batch-{k:03d}.parquet", coerce_timestamps="ms", allow_truncated_timestamps=True)
        written.append(frame)
    return pd.concat(written, ignore_index=True)


def as_counter(frame: pd.DataFrame) -> Counter:
    return Counter(map(tuple, frame[["ts", "src", "dest", "loss"]].astype({"loss": "int64"}).itertuples(index=False)))


@pytest.mark.parametrize("kills", [1, pytest.param(12, marks=pytest.mark.stress)], ids=["ci", "stress"])
def test_a_killed_feeding_query_restarted_from_its_checkpoint_delivers_every_row_once(spark, tmp_path, kills):
    kills = int(os.environ.get("VIEWDF_SINK_KILLS", kills))
    rng = random.Random(int(os.environ.get("VIEWDF_CRASH_SEED", "7")))
    landing, checkpoint, path = tmp_path / "landing", tmp_path / "checkpoint", tmp_path / "wh"
    landing.mkdir()
    everything = landing_files(landing, rng.randrange(1 << 30))
    Warehouse(str(path), spark=spark, progress=False).execute(NETWORK_DDL)
    killed, runs = 0, 0
    while True:
        runs += 1
        feeder = Child(["-c", FEEDER, str(path), str(landing), str(checkpoint)], tmp_path / "feeder-stderr.txt")
        try:
            feeder.wait_for("READY", timeout=300)
            if killed < kills:
                # a random moment: while the query starts, in a batch's ingest or its views' maintenance, or between
                # batches (a batch takes about a second here)
                time.sleep(rng.uniform(0.0, 8.0))
                if feeder.proc.poll() is None:
                    feeder.kill()
                    killed += 1
                    continue
            assert feeder.finish(timeout=600) == 0, feeder.stderr_tail()
            assert feeder.lines[-1] == "DONE"
            break
        finally:
            feeder.kill()
    assert killed == kills and runs == kills + 1
    warehouse = Warehouse(str(path), spark=spark, progress=False)      # recovers what the last kill left
    # the newest batch the sink took is the newest Spark committed (after a restart Spark may put two files in one
    # batch, so it is not always FILES - 1)
    committed = max(int(entry.name) for entry in (checkpoint / "commits").iterdir() if entry.name.isdigit())
    assert warehouse.reads.state("M").sink_batches == {"m": committed}
    assert as_counter(warehouse.execute("SELECT ts, src, dest, loss FROM M")) == as_counter(everything)
    assert_equals_rebuild(warehouse, lambda name: Warehouse(str(tmp_path / name), spark=spark, progress=False),
                          [NETWORK_DDL], "rebuilt")
