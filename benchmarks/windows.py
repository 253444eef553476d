"""Sliding-window SUM and MAX: per-part step time of each strategy, measured in one run.

On the thesis's workload (ten rows per (src, dest) pair per one-minute part), for a
window of W parts sliding by one part:

* naive        — recompute the window query over the W newest parts (a ViewDF reading M[j-W+1 .. j]);
* pane merge   — the paper's DataCell scheme: per-part maxima (Pane), merged over W parts every step (PaneMax);
* ViewDF MAX   — the translated `max(loss) ... [WINDOW W MINUTES]` view (chunked prefix and suffix maxima);
* ViewDF SUM   — the translated `sum(loss) ... [WINDOW W MINUTES]` view (ViewDF_Sum: add new, subtract expired);
* Structured Streaming — `groupBy(window(ts, "W minutes", "1 minute"), src, dest)` with sum and max,
  fed one part per micro-batch (what a Spark user would write instead).

To show how far any MAX design could go, the run also times the cheapest step there is: OnePartCopy
copies the newest Pane part (one 100k-row part at 1M rows, no grouping). Every MAX strategy runs the
per-part pre-aggregate plus at least one step that writes the view part, so pane merge / (Pane +
OnePartCopy) bounds the ratio of any design that keeps the window step a step of its own.

Each strategy's step is also split into its per-part pre-aggregate of M (Pane, WinMax__pre,
WinSum__pre) and the rest, the window step proper. `--windows` sweeps W (one warehouse per W,
the same parts) and `--plot` draws median step against W.

    python -m benchmarks.windows --rows 100000 --window 60 --measure 5
    python -m benchmarks.windows --rows 100000 --windows 10 30 60 100 --no-streaming --plot sweep.png
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
STRATEGIES = ("naive", "pane merge", "ViewDF MAX", "ViewDF SUM")
STREAMING = "Structured Streaming"
STREAMING_WARMUP = 3      # micro-batches fed before the measured ones (see structured_streaming)
WITHOUT_PRE = " w/o pre-aggregate"
FLOOR_VIEW = "OnePartCopy"
INGEST = "ingest"         # writing M's part (counts and checks included), shared by every strategy


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
        "floor": f"CREATE VIEW {FLOOR_VIEW} AS INITIALIZE {FLOOR_VIEW}[i] AS SELECT src, dest, peak FROM Pane[i] "
                 f"UPDATE {FLOOR_VIEW}[j] AS SELECT src, dest, peak FROM Pane[j] START AT LATEST",
    }


def strategy_of(view: str) -> str:
    if view in (FLOOR_VIEW, INGEST):
        return view
    if view.lower().startswith("winsum"):
        return "ViewDF SUM"
    if view.lower().startswith("winmax"):
        return "ViewDF MAX"
    if view in ("Pane", "PaneMax"):
        return "pane merge"
    return "naive"


def is_pre_aggregate(view: str) -> bool:
    """The per-part pre-aggregate of M (per (src, dest) of one part): Pane, WinMax__pre, WinSum__pre."""
    return view == "Pane" or view.endswith("__pre")


def view_order(view: str) -> tuple:
    """Strategy, then pre-aggregate, helpers, final view."""
    strategy = strategy_of(view)
    rank = STRATEGIES.index(strategy) if strategy in STRATEGIES else len(STRATEGIES)
    return rank, 0 if is_pre_aggregate(view) else 2 if "__" not in view else 1, view


def stage_parts(spark: SparkSession, folder: str, count: int, rows: int) -> list[str]:
    """Parts 0 .. count-1 of M, one Parquet file each, written in order (the streaming source takes
    files oldest first, one per micro-batch)."""
    files = []
    for k in range(count):
        staged = f"{folder}/staging-{k}"
        window_part(spark, FIRST_PART + k, rows).coalesce(1).write.parquet(staged)
        [data_file] = glob.glob(f"{staged}/*.parquet")
        files.append(f"{folder}/part-{k:05d}.parquet")
        shutil.move(data_file, files[-1])
        shutil.rmtree(staged)
    return files


def measure_viewdf(spark: SparkSession, folder: str, files: list[str], window: int) -> list[dict[str, float]]:
    """Ingest ``files`` one part at a time into a fresh warehouse holding the translated SUM and MAX
    views; at part W+1 (window full) create the pane-merge and naive views (Pane backfills its W+1
    parts). Returns, for each part after that, the seconds of every view step it caused and of the
    ingest itself (INGEST)."""
    wh = Warehouse(folder, spark, progress=False)
    views = strategy_views(window)
    wh.execute(STREAM + ";" + views["ViewDF SUM"] + ";" + views["ViewDF MAX"])
    warm = window + 1
    measured = []
    for k, path in enumerate(files):
        if k == warm:
            pane, pane_max = views["pane merge"].split(";")
            wh.execute(pane)
            wh.execute(pane_max + ";" + views["naive"] + ";" + views["floor"])
        started = time.perf_counter()
        report = wh.ingest("M", spark.read.parquet(path))
        elapsed = time.perf_counter() - started
        if k > warm:
            seconds: dict[str, float] = defaultdict(float)
            for step in report.steps:
                seconds[step.view] += step.seconds
            seconds[INGEST] = elapsed - sum(step.seconds for step in report.steps)
            measured.append(dict(seconds))
    return measured


def structured_streaming(spark: SparkSession, folder: str, files: list[str], window: int) -> list[float]:
    """Seconds (trigger execution) of each micro-batch of Spark Structured Streaming fed ``files``, one
    per micro-batch, the first STREAMING_WARMUP included.

    A short feed is representative: every (src, dest) pair occurs in every part, so from the first
    micro-batch on the state holds all W open windows times all pairs, and each batch expands its
    rows into W windows, updates that whole state and evicts one window (from the second batch on,
    with the 0-second watermark). The warm-up batches cover code generation, the state store's
    first versions and the first eviction."""
    os.makedirs(f"{folder}/in")
    for path in files:
        os.link(path, f"{folder}/in/{os.path.basename(path)}")
    source = (spark.readStream.schema("ts timestamp, src string, dest string, loss int")
              .option("maxFilesPerTrigger", 1).parquet(f"{folder}/in"))
    query = (source.withWatermark("ts", "0 seconds")
             .groupBy(F.window("ts", f"{window} minutes", "1 minute"), "src", "dest")
             .agg(F.sum("loss").alias("total"), F.max("loss").alias("peak"))
             .writeStream.outputMode("update").format("noop")
             .option("checkpointLocation", f"{folder}/checkpoint").start())
    try:
        query.processAllAvailable()
        return [p["durationMs"]["triggerExecution"] / 1000 for p in query.recentProgress if p["numInputRows"] > 0]
    finally:
        query.stop()


def seconds(measured: list[dict[str, float]], keep) -> list[float]:
    """Per measured part, the seconds of the views ``keep`` accepts."""
    return [sum(s for view, s in step.items() if keep(view)) for step in measured]


def series(measured: list[dict[str, float]]) -> dict[str, list[float]]:
    """Per strategy, its seconds per measured part in total and without its pre-aggregate."""
    found = {}
    for strategy in STRATEGIES:
        found[strategy] = seconds(measured, lambda v: strategy_of(v) == strategy)
        if strategy != "naive":
            found[strategy + WITHOUT_PRE] = seconds(
                measured, lambda v: strategy_of(v) == strategy and not is_pre_aggregate(v))
    for probe in (FLOOR_VIEW, INGEST):
        found[probe] = seconds(measured, lambda v: v == probe)
    return found


def print_run(measured: list[dict[str, float]], times: dict[str, list[float]]) -> None:
    """Median step per strategy, each view's share, and the ratios the issue's targets name."""
    values = lambda xs: " ".join(f"{x:.2f}" for x in xs)  # noqa: E731
    views = sorted({v for step in measured for v in step}, key=view_order)
    for strategy in STRATEGIES + (STREAMING,):
        if not times.get(strategy):
            continue
        print(f"{strategy:>22}: median {median(times[strategy]):7.3f} s   all: {values(times[strategy])}")
        for view in (v for v in views if strategy_of(v) == strategy and strategy != STREAMING):
            ran = [step[view] for step in measured if view in step]
            print(f"{'':>24}{view:<14} median {median(ran):7.3f} s in the {len(ran)} of {len(measured)} steps "
                  f"it ran in; mean per step {sum(ran) / len(measured):.3f} s")
    ratio = lambda a, b: median(times[a]) / median(times[b])  # noqa: E731
    print("Pane and WinMax__pre compute the same per-part pre-aggregate: max(loss) per (src, dest) over one "
          "part of M (WinMax__pre adds count(*)).")
    print(f"ingest (writing M's part, checks included; not in any strategy's step): median "
          f"{median(times[INGEST]):.3f} s")
    for strategy in STRATEGIES[1:]:
        pre = seconds(measured, lambda v: strategy_of(v) == strategy and is_pre_aggregate(v))
        print(f"{strategy}: medians {median(pre):.3f} s pre-aggregate, "
              f"{median(times[strategy + WITHOUT_PRE]):.3f} s the rest")
    print(f"MAX: pane merge / ViewDF MAX = {ratio('pane merge', 'ViewDF MAX'):.2f}x in total (target: 3x); "
          f"PaneMax / ViewDF MAX without its pre-aggregate = "
          f"{ratio('pane merge' + WITHOUT_PRE, 'ViewDF MAX' + WITHOUT_PRE):.2f}x (window maintenance only)")
    pane, pre, copy = median(times["pane merge"]), median(seconds(measured, lambda v: v == "Pane")), \
        median(times[FLOOR_VIEW])
    print(f"Bound: 3x the pane merge needs at most {pane / 3:.3f} s per part. Any MAX design runs the pre-aggregate "
          f"(Pane: {pre:.3f} s) and a step writing the view part; the cheapest step, {FLOOR_VIEW} (a copy of one "
          f"Pane part), takes {copy:.3f} s, so a design with its own window step is at best "
          f"{pane / (pre + copy):.2f}x the pane merge.")
    streaming = f", {STREAMING} / ViewDF SUM = {ratio(STREAMING, 'ViewDF SUM'):.2f}x (target: 5x)" \
        if times.get(STREAMING) else ""
    print(f"SUM: naive / ViewDF SUM = {ratio('naive', 'ViewDF SUM'):.2f}x (target: 4x){streaming}")


COLUMNS = {"naive": "naive", "pane merge": "pane merge", "pane merge" + WITHOUT_PRE: "(PaneMax)",
           "ViewDF MAX": "ViewDF MAX", "ViewDF MAX" + WITHOUT_PRE: "(MAX w/o pre)", "ViewDF SUM": "ViewDF SUM",
           "ViewDF SUM" + WITHOUT_PRE: "(SUM w/o pre)", STREAMING: "Str. Streaming"}


def print_sweep(results: dict[int, dict[str, list[float]]]) -> None:
    """One row per W: the median step of each strategy (parenthesized: without its pre-aggregate)."""
    names = [name for name in COLUMNS if all(results[w].get(name) for w in results)]
    print("median step (s) per W\n" + f"{'W':>5}" + "".join(f"{COLUMNS[n]:>15}" for n in names))
    for window, times in results.items():
        print(f"{window:>5}" + "".join(f"{median(times[n]):>15.3f}" for n in names))


def plot(results: dict[int, dict[str, list[float]]], path: str, rows: int) -> None:
    """Median step against W, one line per strategy (dashed: without the pre-aggregate), log y."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    windows = sorted(results)
    colors = dict(zip(STRATEGIES + (STREAMING,), ("C3", "C1", "C2", "C0", "C4")))
    figure, axis = plt.subplots(figsize=(7, 4.5))
    for name in COLUMNS:
        if all(results[w].get(name) for w in windows):
            without = name.endswith(WITHOUT_PRE)
            axis.plot(windows, [median(results[w][name]) for w in windows], marker="o", linestyle="--" if without
                      else "-", color=colors[name.removesuffix(WITHOUT_PRE)],
                      label=f"{name.removesuffix(WITHOUT_PRE)}, without its pre-aggregate" if without else name)
    axis.set_yscale("log")
    for ticks in (axis.yaxis.set_major_formatter, axis.yaxis.set_minor_formatter):
        ticks(matplotlib.ticker.FormatStrFormatter("%g"))
    axis.set_xticks(windows)
    axis.set_xlabel("W (parts per window, one part per minute)")
    axis.set_ylabel("median step (s)")
    axis.set_title(f"Sliding-window step against W, {rows:,} rows per part, local[2]")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000, help="rows per part")
    parser.add_argument("--window", type=int, default=60, help="window length W in parts (minutes)")
    parser.add_argument("--windows", type=int, nargs="+", help="a sweep over W: one warehouse per W, same parts")
    parser.add_argument("--measure", type=int, default=5, help="parts measured after the window is full")
    parser.add_argument("--no-streaming", action="store_true", help="skip the Structured Streaming baseline")
    parser.add_argument("--streaming-parts", type=int,
                        help=f"micro-batches of Structured Streaming measured (default: --measure): the last "
                             f"parts, fed after {STREAMING_WARMUP} warm-up parts; earlier parts are not fed")
    parser.add_argument("--plot", help="write a PNG of median step against W")
    args = parser.parse_args()
    spark = bench_session()
    root = tempfile.mkdtemp(prefix="viewdf-windows-")
    windows = args.windows or [args.window]
    started = time.perf_counter()
    files = stage_parts(spark, f"{root}/parts", max(windows) + 2 + args.measure, args.rows)
    print(f"rows per part {args.rows:,}; {len(files)} parts staged in {time.perf_counter() - started:.0f} s")
    results = {}
    for window in windows:
        used = files[:window + 2 + args.measure]
        started = time.perf_counter()
        measured = measure_viewdf(spark, f"{root}/wh-{window}", used, window)
        results[window] = series(measured)
        print(f"\nW = {window}: {len(used)} parts ingested, {len(measured)} measured, "
              f"{time.perf_counter() - started:.0f} s")
        if not args.no_streaming:
            started = time.perf_counter()
            fed = used[-(args.streaming_parts or args.measure) - STREAMING_WARMUP:]
            batches = structured_streaming(spark, f"{root}/streaming-{window}", fed, window)
            results[window][STREAMING] = batches[STREAMING_WARMUP:]
            warmup = " ".join(f"{s:.2f}" for s in batches[:STREAMING_WARMUP])
            print(f"{STREAMING}: {len(fed)} parts fed, warm-up batches {warmup} s, "
                  f"{time.perf_counter() - started:.0f} s")
        print_run(measured, results[window])
        shutil.rmtree(f"{root}/wh-{window}", ignore_errors=True)
    if len(windows) > 1:
        print()
        print_sweep(results)
    if args.plot:
        plot(results, args.plot, args.rows)
        print(f"plot written to {args.plot}")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
