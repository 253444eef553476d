"""A Spark Declarative Pipeline run after run: ViewDF against a plain materialized view.

Both pipelines take CSV files from a landing folder into the streaming table `events`, compute the same
three-minute sliding window per source (`Recent`: the sum and count of x per source over each minute's window,
where a source has two rows or more), and the same downstream materialized view `busy` from it:

* viewdf — examples/pipelines: `events` feeds the streaming table `M`, a ViewDF stream, whose view `Recent`
  ViewDF maintains incrementally (each run computes only the parts the new rows touch);
* plain  — `recent` is a `@dp.materialized_view` over `events`, which Declarative Pipelines recompute in
  full on every run.

Each run lands one more batch (`--minutes` minutes of `--sources` sources), then runs `spark-pipelines run`
for both systems (alternating which goes first, so that both see the same machine load), and records each
run's wall time and the CPU-seconds of its whole process tree (the CLI, its JVM, Spark's Python workers and
the definitions' child process), measured as tools/tree_cpu.py does. At the end both systems' `Recent` and
`busy` rows must be equal, and a PNG plots run time and CPU against the run number.

`--server` says where the runs execute:
* per-run (the command's default): each `spark-pipelines run` starts a Spark Connect server of its own, on a
  cold JVM, and stops it at the end;
* lasting: each system has one long-lived Spark Connect server (`spark-pipelines --remote`), as a deployment
  has, and a run's CPU-seconds include what that server used during the run.

    python -m benchmarks.pipelines                 # 50 runs of each, per-run servers (about two hours on 2 cores)
    python -m benchmarks.pipelines --server lasting --runs 50
    python -m benchmarks.pipelines --runs 3 --plot /tmp/pipelines.png     # a smoke run
"""

from __future__ import annotations

import argparse
import csv
import ctypes
import os
import re
import resource
import shutil
import socket
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from viewdf_magic.deploy.connect_server import ConnectServer
from viewdf_magic.deploy.pipeline_runs import land_csv, lasting_catalog, run_pipeline
from viewdf_magic.storage.data_source import published_rows

from .process_cpu import children, tree_cpu_seconds

ROOT = Path(__file__).parents[1]
EXAMPLE = ROOT / "examples" / "pipelines"
START = pd.Timestamp("2015-01-01 10:00:00")
PR_SET_CHILD_SUBREAPER = 36
# The datasets outlive a run, so their catalog must too (examples/pipelines/README.md): Hive's metastore, in Derby
# in the pipeline's folder. With ``--server per-run`` each run starts its own Spark Connect server, on the default
# port, with these options; with ``--server lasting`` the system's server keeps such a catalog (lasting_catalog).
SUBMIT_OPTIONS = ("--conf", "spark.sql.catalogImplementation=hive")
CONNECT_PORT = 15002
# The same pipeline with `Recent` a plain materialized view: every minute's window, recomputed from `events`.
PLAIN = '''
import os

from pyspark import pipelines as dp
from pyspark.sql import SparkSession, functions as F

spark = SparkSession.active()
LANDING = os.path.abspath("landing")


@dp.table
def events():
    return (spark.readStream.format("csv").option("header", "true")
            .schema("ts TIMESTAMP, src STRING, x INT").load(LANDING))


@dp.materialized_view
def recent():
    # each row counts in the windows of its minute and the two after it (one hash aggregation, no join),
    # up to the stream's last minute
    return spark.sql("""
        WITH e AS (SELECT src, x, CAST(floor(unix_timestamp(ts) / 60) AS BIGINT) AS minute FROM events)
        SELECT src, sum(x) AS total, count(*) AS n, timestamp_seconds(j * 60) AS PART_TIMESTAMP
        FROM (SELECT src, x, minute + k AS j FROM e LATERAL VIEW explode(array(0, 1, 2)) ks AS k)
        WHERE j <= (SELECT max(minute) FROM e)
        GROUP BY j, src HAVING count(*) >= 2""")


@dp.materialized_view
def busy():
    return spark.read.table("recent").groupBy("src").agg(F.max("total").alias("peak"), F.count("*").alias("windows"))
'''


@dataclass
class Run:
    system: str
    run: int
    rows: int           # rows landed so far
    wall: float         # seconds
    cpu: float          # CPU-seconds of the process tree


def batch(number: int, minutes: int, sources: int) -> pd.DataFrame:
    """Batch ``number``: minutes ``number * minutes`` on, one row a minute for each source, where
    (source + minute) % 3 is not 0, with varied values."""
    rows = [(START + pd.Timedelta(minutes=minute, seconds=(minute * 7 + s * 13) % 60), f"s{s}", (minute * 5 + s * 3) % 11)
            for minute in range(number * minutes, (number + 1) * minutes) for s in range(sources) if (s + minute) % 3]
    return pd.DataFrame(rows, columns=["ts", "src", "x"])


def prepare(folder: Path, storage: Path, transformation: str | None) -> None:
    """A copy of the example pipeline in ``folder`` with its storage at ``storage``; with ``transformation``,
    that text replaces its definitions file."""
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("README.md", "__pycache__"))
    spec = folder / "spark-pipeline.yml"
    spec.write_text(re.sub(r"(?m)^storage: .*$", f"storage: {storage.as_uri()}", spec.read_text()))
    if transformation is not None:
        (folder / "transformations" / "pipeline.py").write_text(transformation)
    (folder / "landing").mkdir()


def timed_run(folder: Path, server: ConnectServer | None, servers: set[int]) -> tuple[float, float]:
    """``spark-pipelines run`` in ``folder``, against ``server`` or (None) a server of its own: the run's wall
    seconds, and the CPU-seconds of the command's process tree plus, with ``server``, the server's. ``servers``:
    the process ids of the lasting servers (this process's children, not the run's)."""
    def server_cpu() -> float:
        return tree_cpu_seconds(server.process.pid) if server is not None and server.process is not None else 0.0

    before, started, served = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic(), server_cpu()
    run_pipeline(folder, server.url if server else None, () if server else SUBMIT_OPTIONS)
    wall = time.monotonic() - started
    while orphans := [pid for pid in children(os.getpid()) if pid not in servers]:   # adopted (tools/tree_cpu.py)
        for pid in orphans:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime) + server_cpu() - served
    return wall, cpu


def table_rows(folder: Path, name: str) -> pd.DataFrame:
    """The rows of a materialized view of the pipeline (Parquet in its spark-warehouse folder), timestamps
    without a zone."""
    frame = pq.read_table(folder / "spark-warehouse" / name).to_pandas()
    for column in frame.select_dtypes("datetimetz"):
        frame[column] = frame[column].dt.tz_localize(None)
    return frame


def same_rows(left: pd.DataFrame, right: pd.DataFrame, columns: list[str]) -> bool:
    def rows(frame: pd.DataFrame) -> list[tuple]:
        return sorted(tuple(row) for row in frame[columns].itertuples(index=False))
    return rows(left) == rows(right)


def plot(runs: list[Run], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    figure, (wall, cpu) = plt.subplots(1, 2, figsize=(11, 4))
    for system, style in (("viewdf", "o-"), ("plain", "s-")):
        mine = [r for r in runs if r.system == system]
        label = "ViewDF view (incremental)" if system == "viewdf" else "plain materialized view (full recompute)"
        wall.plot([r.run for r in mine], [r.wall for r in mine], style, markersize=3, label=label)
        cpu.plot([r.run for r in mine], [r.cpu for r in mine], style, markersize=3, label=label)
    wall.set(xlabel="run (one more batch landed each run)", ylabel="wall time of spark-pipelines run (s)")
    cpu.set(xlabel="run (one more batch landed each run)", ylabel="CPU-seconds of its process tree")
    for axes in (wall, cpu):
        axes.set_ylim(bottom=0)
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.grid(alpha=0.3)
    wall.legend()
    figure.suptitle(f"Declarative Pipeline runs: {runs[-1].rows:,} rows landed after {runs[-1].run} runs")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50, help="runs of each system (default: %(default)s; 3 is a smoke run)")
    parser.add_argument("--minutes", type=int, default=10, help="minutes of data per batch (default: %(default)s)")
    parser.add_argument("--sources", type=int, default=100, help="sources per minute (default: %(default)s)")
    parser.add_argument("--plot", type=Path, default=ROOT / "docs" / "figures" / "pipelines-runs.png",
                        help="the PNG to write (default: docs/figures/pipelines-runs.png)")
    parser.add_argument("--csv", type=Path, help="also write each run's times to this CSV file")
    parser.add_argument("--workdir", type=Path, help="keep the pipelines' folders here (default: a temporary folder)")
    parser.add_argument("--server", choices=["per-run", "lasting"], default="per-run",
                        help="per-run: each `spark-pipelines run` starts its own Spark Connect server, as the command "
                             "does by default; lasting: each system's runs go to one long-lived server of its own "
                             "(--remote), as in a deployment (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.server == "per-run":
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", CONNECT_PORT)) == 0:
                parser.error(f"port {CONNECT_PORT} is in use: each run's Spark Connect server needs it")
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
    os.environ["PYSPARK_PYTHON"] = sys.executable        # the lasting servers' Python workers need viewdf_magic

    work = args.workdir or Path(tempfile.mkdtemp(prefix="viewdf-pipelines-"))
    folders = {"viewdf": work / "viewdf", "plain": work / "plain"}
    for system, folder in folders.items():
        prepare(folder, work / f"{system}-storage", PLAIN if system == "plain" else None)
    runs: list[Run] = []
    landed = 0
    with ExitStack() as servers:
        lasting = {system: servers.enter_context(ConnectServer(conf=lasting_catalog(folder),
                                                               log_dir=str(work / f"{system}-connect-logs")))
                   for system, folder in folders.items()} if args.server == "lasting" else {}
        pids = {server.process.pid for server in lasting.values() if server.process is not None}
        for number in range(args.runs):
            rows = batch(number, args.minutes, args.sources)
            landed += len(rows)
            order = list(folders.items())
            for system, folder in order if number % 2 == 0 else order[::-1]:     # each system first every other run
                land_csv(folder, f"batch-{number:04d}.csv", rows)
                wall, cpu = timed_run(folder, lasting.get(system), pids)
                runs.append(Run(system, number + 1, landed, wall, cpu))
                print(f"run {number + 1:3d} {system:6s} {landed:8,d} rows  {wall:6.1f} s  {cpu:6.1f} CPU-s", flush=True)

    recent_equal = same_rows(published_rows(str(folders["viewdf"] / "warehouse" / "Recent")),
                             table_rows(folders["plain"], "recent"), ["src", "total", "n", "PART_TIMESTAMP"])
    busy_equal = same_rows(table_rows(folders["viewdf"], "busy"), table_rows(folders["plain"], "busy"),
                           ["src", "peak", "windows"])
    print(f"Recent rows equal: {recent_equal}; busy rows equal: {busy_equal}")
    if args.csv:
        args.csv.parent.mkdir(parents=True, exist_ok=True)
        with args.csv.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["system", "run", "rows", "wall_s", "cpu_s"])
            writer.writerows([r.system, r.run, r.rows, f"{r.wall:.2f}", f"{r.cpu:.2f}"] for r in runs)
    plot(runs, args.plot)
    print(f"wrote {args.plot}" + (f" and {args.csv}" if args.csv else "") + f"; pipelines in {work}")
    return 0 if recent_equal and busy_equal else 1


if __name__ == "__main__":
    sys.exit(main())
