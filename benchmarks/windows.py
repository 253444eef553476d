"""Sliding-window SUM and MAX: per-part step time of each strategy, measured in one run.

On the thesis's workload (ten rows per (src, dest) pair per one-minute part), for a
window of W parts sliding by one part:

* naive        — recompute the window query over the W newest parts (a ViewDF reading M[j-W+1 .. j]);
* pane merge   — the paper's DataCell scheme: per-part maxima, merged over W parts every step;
* ViewDF MAX   — the translated `max(loss) ... [WINDOW W MINUTES]` view (dyadic interval synopses);
* ViewDF SUM   — the translated `sum(loss) ... [WINDOW W MINUTES]` view (ViewDF_Sum: add new, subtract expired);
* Structured Streaming — `groupBy(window(ts, "W minutes", "1 minute"), src, dest)` with sum and max,
  fed one part per micro-batch (what a Spark user would write instead).

    python -m benchmarks.windows --rows 100000 --window 60 --measure 5
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import tempfile
import time
from collections import defaultdict

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from viewdf_magic import Warehouse

from .common import FIRST_PART, bench_session, median

STREAM = "CREATE STREAM M (ts TIMESTAMP, src STRING, dest STRING, loss INT) TIMESTAMP ts PARTITION LENGTH 60"


def window_part(spark: SparkSession, part: int, rows: int) -> DataFrame:
    """One minute: ``rows`` rows, ten per (src, dest) pair, spread over the minute."""
    pairs = max(1, rows // 10)
    return spark.range(rows).select(
        F.timestamp_seconds(F.lit(part * 60) + (F.col("id") % 60)).alias("ts"),
        F.concat(F.lit("10.0."), (F.col("id") % pairs % 1000).cast("string")).alias("src"),
        F.concat(F.lit("10.1."), (F.col("id") % pairs / 1000).cast("int").cast("string")).alias("dest"),
        (F.rand(part) * 100).cast("int").alias("loss"))


def strategy_views(window: int) -> dict[str, str]:
    """Statements creating each strategy's views (the naive and pane-merge ones start at the newest part)."""
    last = f"j-{window - 1} .. j"
    return {
        "ViewDF SUM": f"CREATE VIEW WinSum AS SELECT src, dest, sum(loss) AS total FROM M [WINDOW {window} MINUTES] "
                      f"GROUP BY src, dest",
        "ViewDF MAX": f"CREATE VIEW WinMax AS SELECT src, dest, max(loss) AS peak FROM M [WINDOW {window} MINUTES] "
                      f"GROUP BY src, dest",
        "pane merge": "CREATE VIEW Pane AS INITIALIZE Pane[i] AS SELECT src, dest, max(loss) AS peak FROM M[i] "
                      "GROUP BY src, dest UPDATE Pane[j] AS SELECT src, dest, max(loss) AS peak FROM M[j] "
                      "GROUP BY src, dest;"
                      f"CREATE VIEW PaneMax AS INITIALIZE PaneMax[i] AS SELECT src, dest, max(peak) AS peak "
                      f"FROM Pane[i-{window - 1} .. i] GROUP BY src, dest UPDATE PaneMax[j] AS SELECT src, dest, "
                      f"max(peak) AS peak FROM Pane[{last}] GROUP BY src, dest START AT LATEST",
        "naive": f"CREATE VIEW Naive AS INITIALIZE Naive[i] AS SELECT src, dest, sum(loss) AS total, max(loss) AS peak "
                 f"FROM M[i-{window - 1} .. i] GROUP BY src, dest UPDATE Naive[j] AS SELECT src, dest, "
                 f"sum(loss) AS total, max(loss) AS peak FROM M[{last}] GROUP BY src, dest START AT LATEST",
    }


def strategy_of(view: str) -> str:
    if view.lower().startswith("winsum"):
        return "ViewDF SUM"
    if view.lower().startswith("winmax"):
        return "ViewDF MAX"
    if view in ("Pane", "PaneMax"):
        return "pane merge"
    return "naive"


def structured_streaming(spark: SparkSession, folder: str, parts: list[int], window: int) -> list[float]:
    """Seconds per micro-batch of Spark Structured Streaming, one part file per batch."""
    source = (spark.readStream.schema("ts timestamp, src string, dest string, loss int")
              .option("maxFilesPerTrigger", 1).parquet(folder))
    query = (source.withWatermark("ts", "0 seconds")
             .groupBy(F.window("ts", f"{window} minutes", "1 minute"), "src", "dest")
             .agg(F.sum("loss").alias("total"), F.max("loss").alias("peak"))
             .writeStream.outputMode("update").format("noop")
             .option("checkpointLocation", folder + "-checkpoint").start())
    try:
        query.processAllAvailable()
        return [p["durationMs"]["triggerExecution"] / 1000 for p in query.recentProgress
                if p["numInputRows"] > 0][-len(parts):]
    finally:
        query.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000, help="rows per part")
    parser.add_argument("--window", type=int, default=60, help="window length W in parts (minutes)")
    parser.add_argument("--measure", type=int, default=5, help="parts measured after the window is full")
    parser.add_argument("--no-streaming", action="store_true", help="skip the Structured Streaming baseline")
    args = parser.parse_args()
    spark = bench_session()
    root = tempfile.mkdtemp(prefix="viewdf-windows-")
    wh = Warehouse(f"{root}/wh", spark, progress=False)
    views = strategy_views(args.window)
    wh.execute(STREAM + ";" + views["ViewDF SUM"] + ";" + views["ViewDF MAX"])
    warm = args.window + 1
    total = warm + 1 + args.measure
    times: dict[str, list[float]] = defaultdict(list)
    started = time.perf_counter()
    for k in range(total):
        part = FIRST_PART + k
        staged = f"{root}/staged/{k}"
        window_part(spark, part, args.rows).coalesce(1).write.parquet(staged)
        os.makedirs(f"{root}/stream", exist_ok=True)
        [data_file] = glob.glob(f"{staged}/*.parquet")
        shutil.move(data_file, f"{root}/stream/part-{k:05d}.parquet")   # one file per part, for streaming
        if k == warm:   # the window is full: start the baselines that need no history of their own
            wh.execute(views["pane merge"].split(";")[0])
            wh.execute(views["pane merge"].split(";")[1] + ";" + views["naive"])
        report = wh.ingest("M", spark.read.parquet(f"{root}/stream/part-{k:05d}.parquet"))
        if k > warm:
            per_strategy: dict[str, float] = defaultdict(float)
            for step in report.steps:
                per_strategy[strategy_of(step.view)] += step.seconds
            for name, seconds in per_strategy.items():
                times[name].append(seconds)
    print(f"rows per part {args.rows:,}, W = {args.window}, measured parts {args.measure}, "
          f"setup {time.perf_counter() - started:.0f} s")
    if not args.no_streaming:
        times["Structured Streaming"] = structured_streaming(spark, f"{root}/stream", list(range(total)),
                                                             args.window)[-args.measure:]
    for name in ("naive", "pane merge", "ViewDF MAX", "ViewDF SUM", "Structured Streaming"):
        if times.get(name):
            print(f"{name:>22}: median {median(times[name]):.3f} s   all: "
                  f"{' '.join(f'{v:.2f}' for v in times[name])}")
    show = lambda a, b: f"{median(times[a]) / median(times[b]):.1f}x"  # noqa: E731
    if times.get("ViewDF SUM") and times.get("naive"):
        print(f"SUM: naive / ViewDF = {show('naive', 'ViewDF SUM')}" +
              (f", Structured Streaming / ViewDF = {show('Structured Streaming', 'ViewDF SUM')}"
               if times.get("Structured Streaming") else ""))
    if times.get("ViewDF MAX") and times.get("pane merge"):
        print(f"MAX: pane merge / ViewDF = {show('pane merge', 'ViewDF MAX')}")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
