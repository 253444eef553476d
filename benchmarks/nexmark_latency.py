"""Nexmark latency at a fixed rate (issue 30's second standard run): every system is fed part by part, one
part of every stream each period, and each part's latency runs from its arrival to its last output committed.

    python -m benchmarks.nexmark_latency --events 1000000 --queries q1 q5 q7 --repeat 3 --plot latency.png
    python -m benchmarks.nexmark_latency --events 10000000 --backlog 450 --queries q3 --systems viewdf streaming

The feeder, the systems and what "committed" means for each are in benchmarks/nexmark_follow.py. The period
defaults to the part's length (2 s of event time: the events arrive at their own rate, 10,000 a second); a
system that cannot keep up shows it as latencies that grow part after part (the table's ``last``). Each
query's first ``--warmup`` parts and its last part (whose windows no watermark ever closes) are not counted,
nor, for the window queries, parts that close no window. p99 is the nearest rank, so below 100 parts it is
the highest latency. Each round runs every system over every query, the systems' order rotated by one place a
round; figures are medians over the rounds, with the lowest and highest round's p50. The first round's rows
are checked against the batch query's (Flink's by count per part: it prints them). Flink's q4 is not run:
its rows carry no event time to say which part they are due by (tools/flink_nexmark.py, ``FOLLOWED``).

``--backlog N`` makes the first N parts arrive at once, as a history each system takes in before the clock
starts (ViewDF in one LOAD, Structured Streaming in its first micro-batch, Flink from one CSV file of consecutive
parts per source reader, until its process tree is all but idle); the rest arrive one a period and are
measured. Latency over the last parts of 10M events then takes their periods, not 1,000 s per query and
system.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from viewdf_magic.nexmark import NexmarkConfig
from viewdf_magic.nexmark.compare import Windows
from viewdf_magic.nexmark.parts import PartFiles, write_parts
from viewdf_magic.nexmark.queries import QUERY_STREAMS, nexmark_queries

from .common import bench_session, session_cpu_seconds
from .nexmark import add_workload_arguments, equals_batch_query, runnable
from .nexmark_follow import (WINDOW_DUE, Followed, due_part, follow_flink, follow_naive, follow_streaming,
                             follow_viewdf, printed_counts, write_csv_parts)
from .nexmark_report import aligned, bar_panels
from .nexmark_runs import Run

SYSTEMS = ("viewdf", "streaming", "naive", "flink")
SPARK_FOLLOWERS = {"viewdf": follow_viewdf, "streaming": follow_streaming, "naive": follow_naive}


@dataclass(frozen=True)
class Latency:
    """One system's latencies for one query, in seconds: medians over the rounds of each round's p50, p99 and
    last counted part, the lowest and highest round's p50, and the CPU-seconds used while following."""

    query: str
    system: str
    parts: int
    p50: float
    p99: float
    last: float
    lowest: float
    highest: float
    cpu_seconds: float | None
    rounds: int
    equal: bool | None


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def nearest_rank(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile: the smallest value with at least ``fraction`` of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def counted_parts(spark: SparkSession, files: PartFiles, query: str, windows: Windows, warmup: int,
                  backlog: int = 0) -> list[int]:
    """The parts whose latency counts: past the backlog and the warm-up, before the last part, and (window
    queries) closing a window. Needs the batch query's streams registered over every event."""
    middle = list(files.subscripts[backlog + warmup:-1])
    if query not in WINDOW_DUE:
        return middle
    return [s for s in middle if s in _batch_counts(spark, query, windows)]


def _batch_counts(spark: SparkSession, query: str, windows: Windows) -> dict[int, int]:
    """The batch query's rows per part they are due by (window queries)."""
    batch = spark.sql(nexmark_queries(windows.window_seconds, windows.slide_seconds)[query])
    counts: dict[int, int] = {}
    for row in batch.groupBy(F.unix_micros(F.col(WINDOW_DUE[query])).alias("micros")).count().collect():
        part = due_part(query, row["micros"], windows)
        counts[part] = counts.get(part, 0) + row["count"]
    return counts


def _register_every_event(spark: SparkSession, files: PartFiles, queries: list[str]) -> None:
    """The streams the queries read, every event, under the names the batch query reads."""
    for stream in {s for q in queries for s in QUERY_STREAMS[q]}:
        spark.read.parquet(files.stream_folder(stream)).createOrReplaceTempView(stream)


def _flink_equal(spark: SparkSession, followed: Followed, files: PartFiles, query: str, windows: Windows) -> bool:
    """Whether Flink printed as many rows as the batch query has: per closed window (window queries), in all
    (the others)."""
    assert followed.rows is not None
    printed = printed_counts(followed.rows, query, windows)
    if query in WINDOW_DUE:
        closing = files.subscripts[-2]
        expected = {s: n for s, n in _batch_counts(spark, query, windows).items() if s <= closing}
        return {s: n for s, n in printed.items() if s <= closing} == expected
    return sum(printed.values()) == spark.sql(nexmark_queries(windows.window_seconds, windows.slide_seconds)[query]).count()


def run_latency(spark: SparkSession, config: NexmarkConfig, windows: Windows, queries: list[str], systems: list[str],
                folder: str, period: float, repeat: int = 3, warmup: int = 2, check: bool = True,
                flink_parallelism: int = 2, backlog: int = 0) -> tuple[list[Latency], list[dict]]:
    """Generate the events, follow them in every system ``repeat`` times (the first ``backlog`` parts taken in
    before the clock starts); the figures and every run's latencies."""
    started = time.perf_counter()
    files = write_parts(config, os.path.join(folder, "parts"), windows.part_seconds)
    csv = (write_csv_parts(files, os.path.join(folder, "csv"), backlog, flink_parallelism)
           if "flink" in systems else "")
    _say(f"{config.events:,} events in {len(files.subscripts)} parts, " + (f"{backlog} at once, then " if backlog else "")
         + f"one every {period} s ({time.perf_counter() - started:.1f} s to generate)")
    _register_every_event(spark, files, queries)
    counted = {query: counted_parts(spark, files, query, windows, warmup, backlog) for query in queries}
    measured: dict[tuple[str, str], list[tuple[list[float], float | None]]] = {}
    equal: dict[tuple[str, str], bool] = {}
    runs = []
    for round_index in range(repeat):
        order = systems[round_index % len(systems):] + systems[:round_index % len(systems)]
        _say(f"round {round_index + 1}: {', '.join(order)}")
        for query in queries:
            for system in order:
                if system == "flink" and query == "q4":
                    continue
                here = os.path.join(folder, f"round{round_index + 1}", system, query)
                if system == "flink":
                    followed = follow_flink(files, query, windows, here, period, csv, flink_parallelism,
                                            counted[query][-1], backlog)
                else:
                    followed = SPARK_FOLLOWERS[system](spark, files, query, windows, here, period,
                                                       lambda: session_cpu_seconds(spark), backlog)
                assert followed.feeder is not None
                arrived = followed.feeder.arrived
                latencies = [followed.commits[s] - arrived[s] for s in counted[query] if s in followed.commits]
                measured.setdefault((query, system), []).append((latencies, followed.cpu_seconds))
                runs.append({"round": round_index + 1, "query": query, "system": system,
                             "latencies": {s: followed.commits[s] - arrived[s] for s in followed.commits if s in arrived},
                             "cpu_seconds": followed.cpu_seconds})
                _say(f"  {query} {system}: p50 {statistics.median(latencies):.2f} s, highest {max(latencies):.2f} s "
                     f"over {len(latencies)} parts, {followed.cpu_seconds or 0:.1f} CPU-s")
                if check and round_index == 0:
                    _register_every_event(spark, files, [query])      # naive registers the names per part
                    equal[(query, system)] = (_flink_equal(spark, followed, files, query, windows) if system == "flink"
                                              else equals_batch_query(spark, Run(system, query, 0, rows=followed.rows),
                                                                      files, windows))
    return [_latency(query, system, rounds, equal.get((query, system)))
            for query in queries for system in systems if (rounds := measured.get((query, system)))], runs


def _latency(query: str, system: str, rounds: list[tuple[list[float], float | None]], equal: bool | None) -> Latency:
    p50s = [statistics.median(latencies) for latencies, _ in rounds]
    cpus = [cpu for _, cpu in rounds if cpu is not None]
    return Latency(query, system, len(rounds[0][0]), statistics.median(p50s),
                   statistics.median(nearest_rank(latencies, 0.99) for latencies, _ in rounds),
                   statistics.median(latencies[-1] for latencies, _ in rounds), min(p50s), max(p50s),
                   statistics.median(cpus) if cpus else None, len(rounds), equal)


def table(rows: list[Latency]) -> str:
    """The figures as a fixed-width table."""
    header = ("query", "system", "parts", "p50 (s)", "lowest-highest p50", "p99 (s)", "last (s)", "CPU-s", "rounds",
              "equal")
    lines = [header] + [(r.query, r.system, str(r.parts), f"{r.p50:.2f}", f"{r.lowest:.2f}-{r.highest:.2f}",
                         f"{r.p99:.2f}", f"{r.last:.2f}", "-" if r.cpu_seconds is None else f"{r.cpu_seconds:.1f}",
                         str(r.rounds), {True: "yes", False: "NO", None: "-"}[r.equal]) for r in rows]
    return aligned(lines, 2)


def plot(rows: list[Latency], path: str | None = None, title: str = ""):
    """Two panels, a bar per system and query: p50 and p99 latency."""
    return bar_panels(rows, list(dict.fromkeys(r.system for r in rows)),
                      (("p50", "p50 latency, seconds (lower is better)"), ("p99", "p99 latency, seconds")), path, title)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_workload_arguments(parser, SYSTEMS)
    parser.add_argument("--period", type=float, help="seconds between parts (default: the part's length)")
    parser.add_argument("--warmup", type=int, default=2, help="first parts of each run not counted")
    parser.add_argument("--backlog", type=int, default=0,
                        help="first parts arriving at once, taken in before the clock starts")
    parser.add_argument("--flink-parallelism", type=int, default=2)
    arguments = parser.parse_args()
    systems = runnable(arguments.systems)
    spark = bench_session(**{"spark.sql.shuffle.partitions": str(arguments.shuffle_partitions)})
    folder = arguments.workdir or tempfile.mkdtemp(prefix="viewdf-latency-")
    period = arguments.period or float(arguments.part_seconds)
    load = os.getloadavg()[0]
    try:
        results, runs = run_latency(spark, NexmarkConfig(events=arguments.events, rate=arguments.rate,
                                                         seed=arguments.seed),
                                    Windows(arguments.window, arguments.slide, arguments.part_seconds),
                                    arguments.queries, systems, folder, period, arguments.repeat, arguments.warmup,
                                    not arguments.no_check, arguments.flink_parallelism, arguments.backlog)
    finally:
        if not arguments.workdir:
            shutil.rmtree(folder, ignore_errors=True)
    print(table(results))
    print(f"load average {load:.2f} before, {os.getloadavg()[0]:.2f} after, on {os.cpu_count()} cores")
    if arguments.json:
        with open(arguments.json, "w") as handle:
            json.dump({"events": arguments.events, "period": period, "backlog": arguments.backlog,
                       "figures": [asdict(r) for r in results], "runs": runs}, handle, indent=1)
    if arguments.plot:
        plot(results, arguments.plot, f"Nexmark latency, {arguments.events:,} events, a part of "
                                      f"{arguments.part_seconds} s every {period:g} s"
                                      + (f" after {arguments.backlog} at once" if arguments.backlog else ""))


if __name__ == "__main__":
    main()
