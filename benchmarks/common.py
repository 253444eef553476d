"""Shared benchmark pieces: the Spark session, synthetic network-monitoring parts, timing."""

from __future__ import annotations

import os
import statistics
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from viewdf_magic.session import LISTING_THRESHOLD

from .process_cpu import tree_cpu_seconds

FIRST_PART = 23668440          # 2015-01-01 10:00 UTC, minute parts


def bench_session(**config: str) -> SparkSession:
    """The same local[2] session shape as the NOTES calibration runs; ``config`` is applied last, so it
    overrides these defaults (``--shuffle-partitions`` once had no effect: the default came after it). Every
    system lists a read's folders in the driver, as a warehouse on local disks does (Spark's default starts
    a listing job for more than 32 folders or files)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)    # Python workers (UDFs, data sources) on this venv
    settings = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                "spark.sql.session.timeZone": "UTC", "spark.sql.shuffle.partitions": "4",
                "spark.driver.memory": "6g", LISTING_THRESHOLD: "100000", **config}
    builder = SparkSession.builder.master("local[2]").appName("viewdf-bench")
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("FATAL")
    return spark


def network_part(spark: SparkSession, part: int, pairs: int, selectivity: float, seed: int = 0) -> DataFrame:
    """One minute of the paper's stream: one row per (src, dest) pair; a fraction
    ``selectivity`` of losses are above the threshold 10."""
    return spark.range(pairs).select(
        F.timestamp_seconds(F.lit(part * 60)).alias("ts"),
        F.concat(F.lit("10.0."), (F.col("id") % 1000).cast("string")).alias("src"),
        F.concat(F.lit("10.1."), (F.col("id") / 1000).cast("int").cast("string")).alias("dest"),
        F.when(F.rand(seed * 7919 + part) < selectivity, 20).otherwise(5).alias("loss"))


def session_cpu_seconds(spark: SparkSession) -> float:
    """CPU-seconds used so far by this Python process, its Spark driver JVM (every thread: tasks, the planner,
    GC, the JIT) and the JVM's descendants (the Python workers of UDFs and data sources, and those they
    reaped), from /proc (Linux)."""
    jvm = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()    # type: ignore[union-attr]
    own = os.times()
    return tree_cpu_seconds(jvm) + own.user + own.system


@dataclass
class Took:
    """The wall and CPU-seconds (``session_cpu_seconds``) of a ``measuring`` block, set when it ends."""

    wall: float = 0.0
    cpu: float = 0.0


@contextmanager
def measuring(spark: SparkSession) -> Iterator[Took]:
    """Time the block in wall and CPU-seconds: ``with measuring(spark) as took: ...``, then ``took.wall``."""
    took = Took()
    cpu, started = session_cpu_seconds(spark), time.perf_counter()
    yield took
    took.wall, took.cpu = time.perf_counter() - started, session_cpu_seconds(spark) - cpu


def linked_copy(source: str, target: str) -> str:
    """``target``: a folder of hard links to the files of folder ``source`` (none copied), for a LOAD .. MOVE to
    take over and remove while ``source`` stays for the next run and the other systems."""
    os.makedirs(target)
    for name in sorted(os.listdir(source)):
        os.link(os.path.join(source, name), os.path.join(target, name))
    return target


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def median(values: list[float]) -> float:
    return statistics.median(values)
