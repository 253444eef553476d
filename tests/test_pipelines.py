"""A Spark Declarative Pipeline (``spark-pipelines run``, examples/pipelines) whose streaming table is a ViewDF
stream: run twice, with more CSV landing between the runs; the view and the downstream materialized view
against pandas.

Both runs go to one Spark Connect server of the test's on a free port (``--remote``), rather than to the
server ``spark-pipelines`` starts by default on port 15002, which another process may hold; the commits of the
stream's table connect back to the server the run uses either way."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from viewdf_magic.deploy.connect_server import ConnectServer
from viewdf_magic.deploy.pipeline_runs import land_csv, lasting_catalog, run_pipeline
from viewdf_magic.storage.data_source import published_rows

EXAMPLE = Path(__file__).parents[1] / "examples" / "pipelines"
START = pd.Timestamp("2015-01-01 10:00:00")
WINDOW = 3          # Recent's window, in minutes


def batch(first_minute: int, minutes: int) -> pd.DataFrame:
    """A row a minute from sources a, b and c (c only every third minute) and a second one from a, with varied
    values."""
    rows = []
    for minute in range(first_minute, first_minute + minutes):
        for k, src in enumerate("abc"):
            if src == "c" and minute % 3:
                continue
            seconds = (minute * 7 + k * 13) % 60
            rows.append((START + pd.Timedelta(minutes=minute, seconds=seconds), src, (minute * 5 + k * 3) % 11))
        rows.append((START + pd.Timedelta(minutes=minute, seconds=59), "a", minute % 4))
    return pd.DataFrame(rows, columns=["ts", "src", "x"])


@pytest.fixture
def server(tmp_path):
    """A Spark Connect server whose catalog outlives a run, as the pipeline's datasets do."""
    with ConnectServer(conf=lasting_catalog(tmp_path), log_dir=str(tmp_path / "connect-logs")) as running:
        yield running


def expected_recent(rows: pd.DataFrame) -> pd.DataFrame:
    """Recent by hand: for each minute from the first to the last, the rows of that minute and the two
    before it, summed per source, where a source has two rows or more."""
    minutes = (rows["ts"] - START) // pd.Timedelta(minutes=1)
    out = []
    for j in range(minutes.min(), minutes.max() + 1):
        window = rows[(minutes > j - WINDOW) & (minutes <= j)]
        grouped = window.groupby("src")["x"].agg(["sum", "count"]).reset_index()
        for src, total, n in grouped[grouped["count"] >= 2].itertuples(index=False):
            out.append((src, total, n, START + pd.Timedelta(minutes=j)))
    return pd.DataFrame(out, columns=["src", "total", "n", "PART_TIMESTAMP"])


def ordered(frame: pd.DataFrame) -> list[tuple]:
    return sorted(tuple(row) for row in frame.itertuples(index=False))


def test_pipeline_maintains_the_view_and_its_downstream_dataset(server, tmp_path):
    folder = tmp_path / "pipeline"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("README.md", "__pycache__"))
    spec = folder / "spark-pipeline.yml"
    spec.write_text(re.sub(r"(?m)^storage: .*$", f"storage: {(tmp_path / 'storage').as_uri()}", spec.read_text()))
    (folder / "landing").mkdir()
    landed = []
    for run, (first, minutes) in enumerate([(0, 8), (8, 6)]):
        rows = batch(first, minutes)
        land_csv(folder, f"batch-{run}.csv", rows)
        landed.append(rows)
        run_pipeline(folder, server.url)
        everything = pd.concat(landed, ignore_index=True)

        stream = published_rows(str(folder / "warehouse" / "M"))           # each row taken once
        assert ordered(stream[["ts", "src", "x"]]) == ordered(everything)
        assert not [path for path in (tmp_path / "storage").rglob("viewdf_batches/**/*") if path.is_file()]  # staged files gone

        recent = published_rows(str(folder / "warehouse" / "Recent"))
        expected = expected_recent(everything)
        assert ordered(recent[["src", "total", "n", "PART_TIMESTAMP"]]) == ordered(expected)

        busy = pq.read_table(tmp_path / "spark-warehouse" / "busy").to_pandas()
        peaks = expected.groupby("src").agg(peak=("total", "max"), windows=("total", "size")).reset_index()
        assert ordered(busy[["src", "peak", "windows"]]) == ordered(peaks), f"run {run}"
