"""Nexmark q1-q5, q7 and q8: ViewDF views against Spark Structured Streaming, Flink SQL and naive
recomputation, on the same generated events in one run.

    python -m benchmarks.nexmark --events 1000000 --part-seconds 2 --plot docs/figures/nexmark.png
    python -m benchmarks.nexmark --events 100000 --queries q5 q7 --systems viewdf streaming

The events are generated once (viewdf_magic.nexmark: one Parquet file per stream and part); every
system runs every query over those parts (benchmarks/nexmark_runs.py; Flink in .venv-flink, made by
``./run flink-env``, skipped when it is missing); each system's rows are checked against the batch
query's over all the events (viewdf_magic/nexmark/compare.py: keyed by view part, over the windows
every system has closed); and the figures are medians over the views' parts
(benchmarks/nexmark_report.py). Progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, replace

import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

from viewdf_magic.nexmark import NexmarkConfig
from viewdf_magic.nexmark.compare import Windows, closed, difference, keyed, view_keyed
from viewdf_magic.nexmark.parts import STREAMS, PartFiles, write_parts
from viewdf_magic.nexmark.queries import nexmark_queries
from viewdf_magic.nexmark.views import NEXMARK_VIEWS

from .common import bench_session, measuring
from .nexmark_report import Figures, combined, figures, input_table, plot, table
from .nexmark_runs import (Run, flink_available, flink_rows, naive_rows, run_flink, run_naive,
                           run_structured_streaming, run_viewdf, viewdf_rows)

SYSTEMS = ("viewdf", "streaming", "flink", "naive")
SPARK_RUNNERS = {"viewdf": run_viewdf, "streaming": run_structured_streaming, "naive": run_naive}


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _events_per_part(files: PartFiles) -> list[int]:
    return [sum(pq.read_metadata(files.path(stream, subscript)).num_rows for stream in STREAMS)
            for subscript in files.subscripts]


def _rows(spark: SparkSession, run: Run, batch: DataFrame, windows: Windows) -> DataFrame:
    """The run's rows keyed by view part."""
    if run.system == "viewdf":
        return view_keyed(run.query, viewdf_rows(spark, run))
    if run.system == "flink":
        return keyed(run.query, flink_rows(spark, run, batch), windows)
    if run.system == "naive":
        return keyed(run.query, naive_rows(spark, run, batch), windows)
    assert run.rows is not None
    return keyed(run.query, spark.read.parquet(run.rows).select(*batch.columns), windows)


def equals_batch_query(spark: SparkSession, run: Run, files: PartFiles, windows: Windows) -> bool:
    """Whether the run's rows are the batch query's over every event, over the windows all closed."""
    batch = spark.sql(nexmark_queries(windows.window_seconds, windows.slide_seconds)[run.query])
    last = files.subscripts[-1] * files.part_seconds
    expected = closed(run.query, keyed(run.query, batch, windows), windows, last)
    found = difference(expected, closed(run.query, _rows(spark, run, batch, windows), windows, last))
    if not found.equal:
        _say(f"  {run.query} {run.system}: {found.missing} rows missing, {found.extra} extra")
    return found.equal


def run_benchmark(spark: SparkSession, config: NexmarkConfig, windows: Windows, queries: list[str],
                  systems: list[str], folder: str, flink_parallelism: int = 2, warmup: int = 2,
                  check: bool = True, repeat: int = 1) -> tuple[list[Figures], list[Run]]:
    """Generate ``config``'s events as parts under ``folder``, run every query in every system ``repeat``
    times (round r starts the systems' order r places further on, so none always runs first), check the
    first round's rows; the figures (medians over the rounds), and every run with its seconds per part."""
    started = time.perf_counter()
    files = write_parts(config, os.path.join(folder, "parts"), windows.part_seconds)
    events = _events_per_part(files)
    _say(f"{config.events:,} events in {len(files.subscripts)} parts of {windows.part_seconds} s "
         f"({time.perf_counter() - started:.1f} s to generate)")
    per_round: dict[tuple[str, str], list[Figures]] = {}
    runs: list[Run] = []
    for round_index in range(repeat):
        order = systems[round_index % len(systems):] + systems[:round_index % len(systems)]
        here = os.path.join(folder, f"round{round_index + 1}")
        measured = _run_round(spark, files, windows, queries, order, here, flink_parallelism)
        if check and round_index == 0:      # every event, under the names the naive runs point at their parts
            for stream in STREAMS:
                spark.read.parquet(files.stream_folder(stream)).createOrReplaceTempView(stream)
        for run in measured:
            period = windows.view_length(run.query) // windows.part_seconds
            found = figures(run, events, files.subscripts, period, windows.closing_offset(run.query), warmup)
            equal = equals_batch_query(spark, run, files, windows) if check and round_index == 0 else None
            per_round.setdefault((run.query, run.system), []).append(replace(found, equal=equal))
        runs += measured
    results = [combined(per_round[key]) for key in sorted(per_round, key=lambda k: (queries.index(k[0]),
                                                                                      SYSTEMS.index(k[1])))]
    return results, runs


def _run_round(spark: SparkSession, files: PartFiles, windows: Windows, queries: list[str], systems: list[str],
               folder: str, flink_parallelism: int) -> list[Run]:
    """Every query in every system once, in ``systems``' order; a Spark system's run is timed whole, in wall
    and CPU-seconds."""
    runs: list[Run] = []
    for query in queries:
        for system in systems:
            if system not in SPARK_RUNNERS:
                continue
            with measuring(spark) as took:
                run = SPARK_RUNNERS[system](spark, files, query, windows, os.path.join(folder, system, query))
            run.wall_seconds, run.cpu_seconds = took.wall, took.cpu
            runs.append(run)
            _say(f"{query} {system}: {run.wall_seconds:.1f} s, {run.cpu_seconds:.1f} CPU-s")
    if "flink" in systems:
        started = time.perf_counter()
        try:
            runs += run_flink(files, queries, windows, os.path.join(folder, "flink"), flink_parallelism)
        except subprocess.CalledProcessError as failure:    # e.g. out of memory: report it, keep the rest
            _say(f"flink failed after {time.perf_counter() - started:.1f} s:\n{failure.stderr[-2000:]}")
        else:
            _say(f"flink: {time.perf_counter() - started:.1f} s")
    return runs


def add_workload_arguments(parser: argparse.ArgumentParser, systems: tuple[str, ...]) -> None:
    """The events, their parts and windows, the queries, the systems, the session and check options, the
    rounds and the outputs (the command lines of this module, benchmarks/nexmark_saturation.py and
    benchmarks/nexmark_latency.py)."""
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rate", type=int, default=10_000, help="events per second of event time")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--part-seconds", type=int, default=2)
    parser.add_argument("--window", type=int, default=10, help="q5's, q7's and q8's window (seconds)")
    parser.add_argument("--slide", type=int, default=2, help="q5's slide (seconds)")
    parser.add_argument("--queries", nargs="+", default=list(NEXMARK_VIEWS), choices=NEXMARK_VIEWS)
    parser.add_argument("--systems", nargs="+", default=list(systems), choices=systems)
    parser.add_argument("--shuffle-partitions", type=int, default=2)
    parser.add_argument("--no-check", action="store_true", help="skip the equality check")
    parser.add_argument("--workdir", help="keep the data and results here (default: a temporary folder)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="rounds, each starting the systems' order one further on; figures are medians")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--plot", help="draw the figures into this PNG")


def runnable(systems: list[str]) -> list[str]:
    """``systems`` less Flink when .venv-flink is missing (said on stderr)."""
    if "flink" in systems and not flink_available():
        _say("flink skipped: .venv-flink is missing (./run flink-env makes it)")
        return [s for s in systems if s != "flink"]
    return systems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_workload_arguments(parser, SYSTEMS)
    parser.add_argument("--flink-parallelism", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=2, help="view parts left out of the medians")
    arguments = parser.parse_args()
    systems = runnable(arguments.systems)
    config = NexmarkConfig(events=arguments.events, rate=arguments.rate, seed=arguments.seed)
    windows = Windows(arguments.window, arguments.slide, arguments.part_seconds)
    spark = bench_session(**{"spark.sql.shuffle.partitions": str(arguments.shuffle_partitions)})
    folder = arguments.workdir or tempfile.mkdtemp(prefix="viewdf-nexmark-")
    load = os.getloadavg()[0]
    try:
        results, runs = run_benchmark(spark, config, windows, arguments.queries, systems, folder,
                                      arguments.flink_parallelism, arguments.warmup, not arguments.no_check,
                                      arguments.repeat)
    finally:
        if not arguments.workdir:
            shutil.rmtree(folder, ignore_errors=True)
    print(table(results))
    if input_table(results):
        print(input_table(results))
    print(f"load average {load:.2f} before, {os.getloadavg()[0]:.2f} after, on {os.cpu_count()} cores")
    if arguments.json:
        with open(arguments.json, "w") as handle:
            json.dump({"events": arguments.events, "rate": arguments.rate, "part_seconds": arguments.part_seconds,
                       "window": arguments.window, "slide": arguments.slide,
                       "figures": [asdict(f) for f in results],
                       "runs": [{key: value for key, value in asdict(run).items() if key != "rows"} for run in runs]},
                      handle, indent=1)
    if arguments.plot:
        plot(results, arguments.plot, f"Nexmark, {arguments.events:,} events, parts of {arguments.part_seconds} s")


if __name__ == "__main__":
    main()
