"""A Spark Declarative Pipeline (``spark-pipelines run``, examples/pipelines) whose streaming table is a ViewDF
stream: run twice, with more CSV landing between the runs; the view and the downstream materialized view
against pandas.

Both runs go to one Spark Connect server of the test's on a free port (``--remote``), rather than to the
server ``spark-pipelines`` starts by default on port 15002, which another process may hold; the commits of the
stream's table connect back to the server the run uses either way."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from viewdf_magic.deploy.connect_server import ConnectServer
from viewdf_magic.storage.data_source import ViewDFDataSource

EXAMPLE = Path(__file__).parents[1] / "examples" / "pipelines"
START = pd.Timestamp("2015-01-01 10:00:00")
WINDOW = 3          # Recent's window, in minutes
# PySpark 4.3.0's pipeline client stops on the observed metrics a Python data source's workers send after
# the run (fixed upstream by SPARK-59135): the run is complete, the command exits 1.
KNOWN_CLIENT_BUG = re.compile(r"UNKNOWN_RESPONSE\] Unknown response: Plan observed\(__python_accumulator__")


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


def land(folder: Path, name: str, rows: pd.DataFrame) -> None:
    """A CSV file written aside, then moved into the landing folder whole."""
    aside = folder / f".{name}"
    rows.to_csv(aside, index=False, date_format="%Y-%m-%d %H:%M:%S")
    os.replace(aside, folder / "landing" / name)


@pytest.fixture
def server(tmp_path):
    """A Spark Connect server whose catalog outlives a run, as the pipeline's datasets do (the default in-memory
    catalog forgets them, and the next run finds their folders taken): Hive's metastore from the pyspark wheel,
    in Derby, and the datasets' folders, all under ``tmp_path``."""
    conf = {"spark.sql.catalogImplementation": "hive",
            "spark.sql.warehouse.dir": str(tmp_path / "spark-warehouse"),
            "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={tmp_path / 'metastore'};create=true",
            "spark.driver.extraJavaOptions": f"-Dderby.stream.error.file={tmp_path / 'derby.log'}"}
    (tmp_path / "connect-logs").mkdir()
    with ConnectServer(conf=conf, log_dir=str(tmp_path / "connect-logs")) as running:
        yield running


def run_pipeline(folder: Path, remote: str) -> str:
    """``spark-pipelines --remote <remote> run`` in ``folder``; its output. Fails unless the run completed."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SPARK_")}
    env.update(PYSPARK_PYTHON=sys.executable, PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}")
    command = [str(Path(sys.executable).parent / "spark-pipelines"), "--remote", remote, "run"]
    child = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, start_new_session=True)
    try:
        output, _ = child.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)       # the CLI and the JVM it runs in
        output, _ = child.communicate()
    assert "Run is COMPLETED" in output, output[-6000:]
    assert child.returncode == 0 or KNOWN_CLIENT_BUG.search(output), output[-6000:]
    return output


def stored_rows(warehouse: Path, name: str) -> pd.DataFrame:
    """Every stored row of a stream or view, read with the ``viewdf`` data source's reader (pyarrow, no Spark)."""
    source = ViewDFDataSource({"path": str(warehouse / name)})
    reader = source.reader(source.schema())
    tables = [pa.Table.from_batches(list(reader.read(partition))) for partition in reader.partitions()]
    frame = pa.concat_tables([t for t in tables if t.num_rows] or tables[:1]).to_pandas()
    for column in frame.select_dtypes("datetimetz"):     # UTC, as ViewDF's timestamps are
        frame[column] = frame[column].dt.tz_localize(None)
    return frame


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
        land(folder, f"batch-{run}.csv", rows)
        landed.append(rows)
        run_pipeline(folder, server.url)
        everything = pd.concat(landed, ignore_index=True)

        stream = stored_rows(folder / "warehouse", "M")           # each row taken once
        assert ordered(stream[["ts", "src", "x"]]) == ordered(everything)
        assert not [path for path in (tmp_path / "storage").rglob("viewdf_batches/**/*") if path.is_file()]  # staged files gone

        recent = stored_rows(folder / "warehouse", "Recent")
        expected = expected_recent(everything)
        assert ordered(recent[["src", "total", "n", "PART_TIMESTAMP"]]) == ordered(expected)

        busy = pq.read_table(tmp_path / "spark-warehouse" / "busy").to_pandas()
        peaks = expected.groupby("src").agg(peak=("total", "max"), windows=("total", "size")).reset_index()
        assert ordered(busy[["src", "peak", "windows"]]) == ordered(peaks), f"run {run}"
