"""Shared fixtures: one local SparkSession for the whole run, and fresh warehouses on it."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("viewdf-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.default.parallelism", "2")
               .getOrCreate())
    session.sparkContext.setLogLevel("FATAL")
    yield session
    session.stop()


@pytest.fixture
def make_warehouse(spark, tmp_path):
    """Open (or reopen) a warehouse under this test's temporary folder."""
    from viewdf_magic import Warehouse

    def make(name: str = "wh") -> Warehouse:
        return Warehouse(str(tmp_path / name), spark=spark, progress=False)
    return make


@pytest.fixture
def warehouse(make_warehouse):
    return make_warehouse()
