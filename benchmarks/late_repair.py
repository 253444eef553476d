"""Late-data repair by range steps against repair one part at a time, in one run.

The paper's network stream M (one-minute parts, two sources, or ``--sources``) with four views over it: the hand-written
Helper and View2 (Helper reads its own previous part), a 3-minute sliding window and a pattern view. After
``--minutes`` of history, one late row for minute 2 is ingested, and the repair that follows is timed: with
range steps (a view's consecutive stale parts in one Spark job, where the view has a range plan) and with
``Maintainer.range_steps`` off (every stale part its own step), alternating which goes first, each in a
fresh warehouse with the same history. Both repairs must leave the same rows in every view.

    python -m benchmarks.late_repair --minutes 60 --repeat 3
    python -m benchmarks.late_repair --minutes 10 --sources 1000000     # parts of 1M rows
"""

from __future__ import annotations

import argparse
import statistics
import tempfile

import pandas as pd

from viewdf_magic import Warehouse
from viewdf_magic.network_example import NETWORK_DDL

from .common import bench_session, measuring

BASE = pd.Timestamp("2015-01-01 10:00")
VIEWS = [NETWORK_DDL,
         "CREATE VIEW Recent AS SELECT src, sum(loss) AS total, count(*) AS n FROM M [WINDOW 3 MINUTES] GROUP BY src",
         "CREATE VIEW Rising AS SELECT src, a.ts AS since, count(*) AS n FROM M PATTERN (a, b+) "
         "WHERE b.loss > a.loss GROUP BY src"]
CHECKED = ("View2", "Recent", "Rising")


def rows(minutes: list[float], losses: list[int], sources: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"ts": [BASE + pd.Timedelta(minutes=m) for m in minutes], "src": sources, "dest": "b",
                         "loss": losses}).astype({"loss": "int32"})


def history(minutes: int, sources: int = 2) -> pd.DataFrame:
    """A row a minute of each source (a and b, or s0, s1 ... for more than two): the even ones cycle through losses
    12, 15, 18, 21, 9, the odd ones through 11, 14, 5."""
    names = ["a", "b"] if sources == 2 else [f"s{k}" for k in range(sources)]
    return rows([m + (k + 0.5) / sources for m in range(minutes) for k in range(sources)],
                [[12, 15, 18, 21, 9][m % 5] if k % 2 == 0 else [11, 14, 5][m % 3]
                 for m in range(minutes) for k in range(sources)], names * minutes)


def repair(spark, folder: str, minutes: int, sources: int, ranged: bool) -> tuple[float, float, int, dict[str, list]]:
    """Wall and CPU-seconds of the repair after one late row, the parts it recomputed, and the views' rows."""
    warehouse = Warehouse(folder, spark=spark, progress=False)
    for statement in VIEWS:
        warehouse.execute(statement)
    data = history(minutes, sources)
    warehouse.ingest("M", data)
    warehouse.maintainer.range_steps = ranged
    with measuring(spark) as took:
        warehouse.ingest("M", rows([2.5], [30], [data.src.iloc[0]]))
    report = warehouse.last_repair
    assert report is not None and not report.failures
    contents = {view: warehouse.execute(f"SELECT hash(*) AS h FROM {view}").h.sort_values().tolist()
                for view in CHECKED}
    return took.wall, took.cpu, len(report.steps), contents


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sources", type=int, default=2, help="rows a minute (one per source)")
    arguments = parser.parse_args()
    spark = bench_session()
    folder = tempfile.mkdtemp(prefix="viewdf-late-repair-")
    repair(spark, f"{folder}/warm-up", arguments.minutes, arguments.sources, True)
    figures: dict[bool, list[tuple[float, float, int]]] = {True: [], False: []}
    contents: dict[bool, dict[str, list]] = {}
    for round_index in range(arguments.repeat):
        for ranged in (True, False) if round_index % 2 == 0 else (False, True):
            wall, cpu, parts, contents[ranged] = repair(spark, f"{folder}/{round_index}-{ranged}", arguments.minutes,
                                                        arguments.sources, ranged)
            figures[ranged].append((wall, cpu, parts))
    assert contents[True] == contents[False], "the two repairs left different rows"
    for ranged, label in ((True, "range steps"), (False, "one part at a time")):
        walls, cpus = [f[0] for f in figures[ranged]], [f[1] for f in figures[ranged]]
        print(f"{label:<20} {statistics.median(walls):6.2f} s ({min(walls):.2f}-{max(walls):.2f}), "
              f"{statistics.median(cpus):6.2f} CPU-s, {figures[ranged][0][2]} view parts recomputed")
    ratio = statistics.median(f[0] for f in figures[False]) / statistics.median(f[0] for f in figures[True])
    print(f"range-step repair is {ratio:.1f}x faster ({arguments.minutes} minutes of history, {arguments.sources:,} "
          f"rows a minute, {arguments.repeat} rounds, rows equal)")


if __name__ == "__main__":
    main()
