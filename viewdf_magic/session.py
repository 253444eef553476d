"""The SparkSession a warehouse runs on."""

from __future__ import annotations

import os
from pathlib import Path

from pyspark.sql import SparkSession

EMBEDDED_CONFIG = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
    "spark.driver.memory": "4g",
    # errors only from the JVM's start on (setLogLevel comes too late for start-up warnings)
    "spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile=" + (
        Path(__file__).with_name("log4j2.properties").resolve().as_uri()),
}


def embedded_session(master: str | None = None) -> SparkSession:
    """The process's local SparkSession (``local[*]``, UI off, UTC), created on first use.

    ``VIEWDF_SPARK_MASTER`` overrides the master, ``VIEWDF_SHUFFLE_PARTITIONS`` the
    shuffle partition count.
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        return prepare(active)
    builder = SparkSession.builder.appName("viewdf").master(
        master or os.environ.get("VIEWDF_SPARK_MASTER", "local[*]"))
    for key, value in EMBEDDED_CONFIG.items():
        builder = builder.config(key, value)
    if "VIEWDF_SHUFFLE_PARTITIONS" in os.environ:
        builder = builder.config("spark.sql.shuffle.partitions", os.environ["VIEWDF_SHUFFLE_PARTITIONS"])
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("FATAL")
    return prepare(spark)


def prepare(spark: SparkSession) -> SparkSession:
    """Timestamps without a zone are UTC in ViewDF, so the session's time zone must be UTC."""
    if spark.conf.get("spark.sql.session.timeZone") != "UTC":
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    return spark
