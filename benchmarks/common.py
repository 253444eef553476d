"""Shared benchmark pieces: the Spark session, synthetic network-monitoring parts, timing."""

from __future__ import annotations

import statistics
import time
from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

FIRST_PART = 23668440          # 2015-01-01 10:00 UTC, minute parts


def bench_session(**config: str) -> SparkSession:
    """The same local[2] session shape as the NOTES calibration runs, plus ``config``."""
    builder = SparkSession.builder
    for key, value in config.items():
        builder = builder.config(key, value)
    spark = (builder.master("local[2]").appName("viewdf-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC").config("spark.sql.shuffle.partitions", "4")
             .config("spark.driver.memory", "6g").getOrCreate())
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


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def median(values: list[float]) -> float:
    return statistics.median(values)
