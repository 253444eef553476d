"""Nexmark throughput at saturation (issue 30's first standard run): every event is on disk when the
clock starts, and each system processes the backlog as fast as it can, batching as it chooses.

    python -m benchmarks.nexmark_saturation --events 1000000 --repeat 3 --plot saturation.png

* ``viewdf``: each stream the query reads is ingested in one call, then one maintenance step computes
  every view part (benchmarks/nexmark_runs.py, ``run_viewdf_backlog``).
* ``streaming``: Structured Streaming, the availableNow trigger with no limit on files per trigger.
* ``naive``: the batch query once over every event, its rows written as Parquet.
* ``flink``: tools/flink_nexmark.py, a bounded source in streaming mode, at parallelism 1 and at 2; its
  seconds and CPU-seconds are the job's less those of the same job over no events (start-up and planning).

The Spark systems' seconds run from the run's start (warehouse or query set-up included; ViewDF's set-up,
creating the warehouse with its streams and views, is also given apart) to its last row written; their
CPU-seconds are the driver process's and its JVM's meanwhile. Each round runs every system over every query,
a system's queries together, the systems' order rotated by one place a round; the figures are medians over
the rounds, with the lowest and highest round (``--discard-rounds N``: N rounds first, not counted). The
first round's rows are checked against the batch query's (benchmarks/nexmark.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass

import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from viewdf_magic.nexmark import NexmarkConfig
from viewdf_magic.nexmark.compare import Windows
from viewdf_magic.nexmark.parts import PartFiles, write_parts
from viewdf_magic.nexmark.queries import QUERY_STREAMS

from .common import bench_session, measuring
from .nexmark import add_workload_arguments, equals_batch_query, runnable
from .nexmark_report import aligned, bar_panels
from .nexmark_runs import (Run, run_flink, run_naive_backlog, run_streaming_backlog,
                           run_viewdf_backlog)

SPARK_RUNNERS = {"viewdf": run_viewdf_backlog, "streaming": run_streaming_backlog, "naive": run_naive_backlog}
SYSTEMS = ("viewdf", "streaming", "naive", "flink")


@dataclass(frozen=True)
class Throughput:
    """One system's figures for one query: medians over the rounds (lowest and highest events/s too)."""

    query: str
    system: str             # flink's carries its parallelism: "flink p1"
    cores: int
    seconds: float
    events_per_second: float
    events_per_core_second: float
    events_per_cpu_second: float | None
    lowest: float
    highest: float
    rounds: int
    equal: bool | None
    setup_seconds: float | None = None     # ViewDF: creating the warehouse, its streams and views


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _events(files: PartFiles, queries: list[str]) -> dict[str, int]:
    """The events each query reads (the streams it reads, every part)."""
    counts = {stream: sum(pq.read_metadata(files.path(stream, s)).num_rows for s in files.subscripts)
              for stream in {s for q in queries for s in QUERY_STREAMS[q]}}
    return {query: sum(counts[s] for s in QUERY_STREAMS[query]) for query in queries}


def _spark_round(spark: SparkSession, system: str, files: PartFiles, queries: list[str], windows: Windows,
                 folder: str) -> dict[str, tuple[float, float, Run]]:
    """Each query's wall and CPU-seconds in ``system``, with its run."""
    measured = {}
    for query in queries:
        with measuring(spark) as took:
            run = SPARK_RUNNERS[system](spark, files, query, windows, os.path.join(folder, system, query))
        measured[query] = (took.wall, took.cpu, run)
        _say(f"  {query} {system}: {measured[query][0]:.1f} s, {measured[query][1]:.1f} CPU-s")
    return measured


def _flink_round(files: PartFiles, queries: list[str], windows: Windows, folder: str, parallelism: int,
                 rows: bool) -> dict[str, tuple[float, float | None, Run]]:
    measured = {}
    for run in run_flink(files, queries, windows, os.path.join(folder, f"flink{parallelism}"), parallelism, rows):
        assert run.job_seconds is not None and run.empty_job_seconds is not None
        cpu = (run.cpu_seconds - run.empty_cpu_seconds
               if run.cpu_seconds is not None and run.empty_cpu_seconds is not None else None)
        measured[run.query] = (run.job_seconds - run.empty_job_seconds, cpu, run)
        _say(f"  {run.query} flink p{parallelism}: {measured[run.query][0]:.1f} s net of "
             f"{run.empty_job_seconds:.1f} s empty job")
    return measured


def run_saturation(spark: SparkSession, config: NexmarkConfig, windows: Windows, queries: list[str],
                   systems: list[str], folder: str, repeat: int = 3, check: bool = True,
                   discard: int = 0) -> list[Throughput]:
    """Generate the events, run every system over every query ``discard`` + ``repeat`` times, check the first
    round, and count the last ``repeat``: the ``discard`` rounds before them warm the JVM (a fresh one runs
    the first system's first query several times slower at 1M events)."""
    started = time.perf_counter()
    files = write_parts(config, os.path.join(folder, "parts"), windows.part_seconds)
    events = _events(files, queries)
    _say(f"{config.events:,} events in {len(files.subscripts)} parts ({time.perf_counter() - started:.1f} s)")
    if check:       # every event, under the names the batch query reads
        for stream in {s for q in queries for s in QUERY_STREAMS[q]}:
            spark.read.parquet(files.stream_folder(stream)).createOrReplaceTempView(stream)
    labels = [s for s in systems if s != "flink"] + (["flink p1", "flink p2"] if "flink" in systems else [])
    timings: dict[tuple[str, str], list[tuple[float, float | None, float | None]]] = {}
    equal: dict[tuple[str, str], bool | None] = {}
    cores: dict[str, int] = {}
    for round_index in range(discard + repeat):
        order = labels[round_index % len(labels):] + labels[:round_index % len(labels)]
        _say(f"round {round_index + 1}{' (not counted)' if round_index < discard else ''}: {', '.join(order)}")
        here = os.path.join(folder, f"round{round_index + 1}")
        for label in order:
            if label.startswith("flink"):
                try:
                    measured = _flink_round(files, queries, windows, here, int(label[-1]),
                                            rows=check and round_index == 0)
                except subprocess.CalledProcessError as failure:
                    _say(f"  {label} failed:\n{failure.stderr[-2000:]}")
                    continue
            else:
                measured = _spark_round(spark, label, files, queries, windows, here)
            for query, (seconds, cpu, run) in measured.items():
                setup = seconds - run.part_seconds[0] if label == "viewdf" else None
                if round_index >= discard:
                    timings.setdefault((query, label), []).append((seconds, cpu, setup))
                cores[label] = run.cores
                if check and round_index == 0:
                    equal[(query, label)] = equals_batch_query(spark, run, files, windows)
    return [_throughput(query, label, cores[label], events[query], timings[(query, label)], equal.get((query, label)))
            for query in queries for label in labels if (query, label) in timings]


def _throughput(query: str, label: str, cores: int, events: int,
                rounds: list[tuple[float, float | None, float | None]], equal: bool | None) -> Throughput:
    rates = [events / seconds for seconds, _, _ in rounds]
    cpus = [cpu for _, cpu, _ in rounds if cpu]
    setups = [setup for _, _, setup in rounds if setup is not None]
    seconds = statistics.median(s for s, _, _ in rounds)
    return Throughput(query, label, cores, seconds, statistics.median(rates), statistics.median(rates) / cores,
                      events / statistics.median(cpus) if cpus else None, min(rates), max(rates), len(rounds), equal,
                      statistics.median(setups) if setups else None)


def table(rows: list[Throughput]) -> str:
    """The figures as a fixed-width table."""
    header = ("query", "system", "cores", "seconds", "of which set-up", "events/s", "lowest-highest",
              "events/s per core", "events per CPU-s", "rounds", "equal")
    lines = [header] + [(r.query, r.system, str(r.cores), f"{r.seconds:.2f}",
                         "-" if r.setup_seconds is None else f"{r.setup_seconds:.2f}", f"{r.events_per_second:.1f}",
                         f"{r.lowest:.1f}-{r.highest:.1f}", f"{r.events_per_core_second:.1f}",
                         "-" if r.events_per_cpu_second is None else f"{r.events_per_cpu_second:.1f}",
                         str(r.rounds), {True: "yes", False: "NO", None: "-"}[r.equal]) for r in rows]
    return aligned(lines, 2)


def plot(rows: list[Throughput], path: str | None = None, title: str = ""):
    """Two panels, a bar per system and query: the seconds to take the whole backlog, and events per
    CPU-second."""
    return bar_panels(rows, list(dict.fromkeys(r.system for r in rows)),
                      (("seconds", "seconds to take the backlog (lower is better)"),
                       ("events_per_cpu_second", "events per CPU-second")), path, title)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_workload_arguments(parser, SYSTEMS)
    parser.add_argument("--discard-rounds", type=int, default=0,
                        help="rounds run first and not counted, to warm the JVM (default: %(default)s)")
    arguments = parser.parse_args()
    systems = runnable(arguments.systems)
    spark = bench_session(**{"spark.sql.shuffle.partitions": str(arguments.shuffle_partitions)})
    folder = arguments.workdir or tempfile.mkdtemp(prefix="viewdf-saturation-")
    load = os.getloadavg()[0]
    try:
        results = run_saturation(spark, NexmarkConfig(events=arguments.events, rate=arguments.rate, seed=arguments.seed),
                                 Windows(arguments.window, arguments.slide, arguments.part_seconds),
                                 arguments.queries, systems, folder, arguments.repeat, not arguments.no_check,
                                 arguments.discard_rounds)
    finally:
        if not arguments.workdir:
            shutil.rmtree(folder, ignore_errors=True)
    print(table(results))
    if arguments.json:
        with open(arguments.json, "w") as handle:
            json.dump({"events": arguments.events, "figures": [asdict(r) for r in results]}, handle, indent=1)
    if arguments.plot:
        plot(results, arguments.plot, f"Nexmark throughput at saturation, {arguments.events:,} events "
                                      f"in parts of {arguments.part_seconds} s")
    print(f"load average {load:.2f} before, {os.getloadavg()[0]:.2f} after, on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
