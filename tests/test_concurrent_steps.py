"""Independent views' one-part steps run their Spark jobs together (maintainer/together.py): the parts are
exactly those of one step after the other, the jobs carry the statement's tag (so an interrupt cancels
them), and a failing step fails alone."""

from __future__ import annotations

import random

import pandas as pd
import pytest

from oracles import data_folders, rows, rows_by_part, window_sums
from viewdf_magic import ViewDFError
from viewdf_magic.errors import Interrupted
from viewdf_magic.maintainer import together
from viewdf_magic.maintainer.cancellation import cancel_on_interrupt
from viewdf_magic.maintainer.writer import PartWriter
from viewdf_magic.network_example import NETWORK_DDL

VIEWS = NETWORK_DDL + """;
CREATE VIEW Sums AS SELECT src, sum(loss) AS total FROM M [WINDOW 3 MINUTES] GROUP BY src;
CREATE VIEW Copy AS INITIALIZE Copy[i] AS SELECT src, loss FROM M[i] UPDATE Copy[j] AS SELECT src, loss FROM M[j]
PARTITION LENGTH 60"""
START = pd.Timestamp("2015-01-01 10:00")
MINUTES = 8


def stream(seed: int) -> pd.DataFrame:
    """Two measurements per source and minute, losses above and below the Helper's threshold."""
    rng = random.Random(seed)
    return pd.DataFrame([(START + pd.Timedelta(minutes=m, seconds=s), src, "d", rng.randint(0, 30))
                         for m in range(MINUTES) for src in ("a", "b", "c") for s in (5, 35)],
                        columns=["ts", "src", "dest", "loss"]).astype({"loss": "int32"})


@pytest.fixture
def started(monkeypatch) -> list[int]:
    """How many Spark jobs the maintainer handed to the shared pool (the real pool still runs them)."""
    calls: list[int] = []
    start = together.start

    def counting(spark, action):
        calls.append(1)
        return start(spark, action)
    monkeypatch.setattr(together, "start", counting)
    return calls


def load(warehouse, data: pd.DataFrame, concurrent: bool) -> None:
    """A minute at a time, each followed by STEP ALL (under AUTO maintenance, Copy and the window's
    pre-aggregate, projections of M's part, would be written in the ingest's own job)."""
    warehouse.maintainer.concurrent_steps = concurrent
    warehouse.execute(VIEWS + "; SET MAINTENANCE MANUAL")
    minutes = pd.to_datetime(data["ts"]).dt.floor("min")
    for minute in sorted(set(minutes)):
        warehouse.ingest("M", data[minutes == minute])
        warehouse.step(n=None)


def recorded(warehouse) -> dict[str, dict[int, tuple]]:
    """Every view's parts as the catalog records them, without the times that differ run to run."""
    return {d.name: {s: (m.rows, m.how, m.checksum, m.lineage) for s, m in warehouse.catalog.state(d.name).parts.items()}
            for d in warehouse.catalog.views()}


def test_parts_equal_those_of_one_step_after_the_other_and_the_oracles(make_warehouse, started):
    data = stream(7)
    apart = make_warehouse("apart")
    load(apart, data, concurrent=False)
    assert not started
    concurrent = make_warehouse("together")
    load(concurrent, data, concurrent=True)
    # after the first minute, each minute makes Helper, Copy and the window's pre-aggregate ready together
    assert len(started) >= 2 * (MINUTES - 1)
    assert recorded(concurrent) == recorded(apart)
    minutes = [START + pd.Timedelta(minutes=m) for m in range(MINUTES)]
    sums = rows_by_part(concurrent.execute("SELECT src, total, PART_TIMESTAMP FROM Sums"), ["src", "total"])
    assert sums == {m: r for m, r in window_sums(data, 3, minutes).items() if r}
    copied = rows(concurrent.execute("SELECT src, loss FROM Copy"), ["src", "loss"])
    assert copied == sorted(zip(data["src"], data["loss"].astype(int)))
    for name in ("Helper", "View2"):
        assert rows(concurrent.execute(f"SELECT * FROM {name}"), ["src", "ct", "sum_loss"]) == \
            rows(apart.execute(f"SELECT * FROM {name}"), ["src", "ct", "sum_loss"])


def test_jobs_run_together_carry_the_statements_tag(warehouse, spark, started):
    data = stream(3)
    minutes = pd.to_datetime(data["ts"]).dt.floor("min")
    warehouse.execute(VIEWS)
    warehouse.ingest("M", data[minutes < START + pd.Timedelta(minutes=2)])
    tracker, context = spark.sparkContext._jsc.sc().statusTracker(), spark.sparkContext

    def marker(tag: str) -> int:
        context.addJobTag(tag)
        spark.range(1).collect()
        context.removeJobTag(tag)
        return max(tracker.getJobIdsForTag(tag))
    before = marker("before-ingest")
    with cancel_on_interrupt(spark) as tag:
        warehouse.ingest("M", data[minutes == START + pd.Timedelta(minutes=2)])
    after = marker("after-ingest")
    assert started, "the views' jobs did not run together"
    assert set(tracker.getJobIdsForTag(tag)) == set(range(before + 1, after))


FAILING = """CREATE STREAM M (ts TIMESTAMP, src STRING, dest STRING, loss INT) TIMESTAMP ts PARTITION LENGTH 60;
CREATE VIEW Ratio AS INITIALIZE Ratio[i] AS SELECT src, 10 / loss AS r FROM M[i]
UPDATE Ratio[j] AS SELECT src, 10 / loss AS r FROM M[j];
CREATE VIEW RatioCopy AS INITIALIZE RatioCopy[i] AS SELECT src, r FROM Ratio[i]
UPDATE RatioCopy[j] AS SELECT c.src, c.r FROM Ratio[j] AS c LEFT JOIN RatioCopy[j-1] AS p ON c.src = p.src;
CREATE VIEW Copy AS INITIALIZE Copy[i] AS SELECT src, loss FROM M[i]
UPDATE Copy[j] AS SELECT src, loss FROM M[j]"""


def minute(k: int, loss: int) -> pd.DataFrame:
    return pd.DataFrame({"ts": [START + pd.Timedelta(minutes=k)], "src": ["a"], "dest": ["b"],
                         "loss": [loss]}).astype({"loss": "int32"})


def view_folders(warehouse, name: str) -> set[str]:
    key = warehouse.catalog.get(name).id
    return {f for f in data_folders(warehouse) if f.startswith(f"data/{key}/")}


def test_a_failing_step_fails_alone_and_its_readers_wait(warehouse, started):
    warehouse.execute(FAILING)
    warehouse.ingest("M", minute(0, 5))
    ratio_folders = view_folders(warehouse, "Ratio")
    with pytest.warns(Warning, match=r"maintaining Ratio failed: computing Ratio\[23668441\].*Division by zero"):
        report = warehouse.ingest("M", minute(1, 0))
    assert started
    assert view_folders(warehouse, "Ratio") == ratio_folders      # the failed write's folder is deleted
    assert report.failures and "Ratio[23668441]" in report.failures[0]
    assert sorted(warehouse.parts("Copy")["part"]) == [23668440, 23668441]
    assert sorted(warehouse.parts("Ratio")["part"]) == [23668440]
    assert sorted(warehouse.parts("RatioCopy")["part"]) == [23668440]


def test_step_all_stops_at_the_first_error_and_keeps_no_later_part(warehouse, started):
    """STEP ALL raises the first error, as one step after the other would: a later view's part computed
    together with the failing one is not published and its folder is removed."""
    warehouse.execute(FAILING)
    warehouse.ingest("M", minute(0, 5))
    warehouse.execute("SET MAINTENANCE MANUAL")
    warehouse.ingest("M", minute(1, 0))
    copy_folders = view_folders(warehouse, "Copy")
    with pytest.raises(ViewDFError, match=r"Ratio\[23668441\].*Division by zero"):
        warehouse.execute("STEP ALL")
    assert started
    assert sorted(warehouse.parts("Copy")["part"]) == [23668440]
    assert view_folders(warehouse, "Copy") == copy_folders


def test_an_interrupt_between_two_analyses_leaves_no_folder(warehouse, started, monkeypatch):
    """An interrupt that arrives while a wave's second step is analysed, its first step's job already started:
    nothing is published, and that job's folder is deleted when it ends (or when its cancelled write fails)."""
    data = stream(5)
    minutes = pd.to_datetime(data["ts"]).dt.floor("min")
    load(warehouse, data[minutes < START + pd.Timedelta(minutes=2)], concurrent=True)
    warehouse.ingest("M", data[minutes == START + pd.Timedelta(minutes=2)])
    version, folders, jobs_before = warehouse.catalog.version, data_folders(warehouse), len(started)
    analysed: list[str] = []
    prepare = PartWriter.prepare

    def interrupted(self, step, plan, fusions):
        analysed.append(step.view.name)
        if len(analysed) == 2:
            raise KeyboardInterrupt
        return prepare(self, step, plan, fusions)
    monkeypatch.setattr(PartWriter, "prepare", interrupted)
    with pytest.raises(Interrupted, match="no part was published"):
        warehouse.execute("STEP ALL")
    assert len(started) == jobs_before + 1          # the first step's job was running
    together._pool.shutdown(wait=True)              # it and its clean-up have ended
    together._pool = None
    assert warehouse.catalog.version == version
    assert data_folders(warehouse) == folders
    monkeypatch.setattr(PartWriter, "prepare", prepare)
    warehouse.execute("STEP ALL")
    window = [START + pd.Timedelta(minutes=m) for m in range(3)]
    sums = rows_by_part(warehouse.execute("SELECT src, total, PART_TIMESTAMP FROM Sums"), ["src", "total"])
    assert sums == {m: r for m, r in window_sums(data[minutes <= window[-1]], 3, window).items() if r}
