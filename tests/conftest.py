"""Shared fixtures: one local SparkSession for the whole run, and fresh warehouses on it."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)


# The groups of tests that take minutes (fresh kernels and JVMs, a browser, process kills, long property runs),
# longest first: a notebook (each is its own group) or a test file. ``./run test`` schedules them in this order
# before the rest (--dist loadgroup --no-loadscope-reorder), so that the two workers do not end with one of them
# alone on a long group. Measured on a 2-core machine (the durations ./run test prints).
LONG_FIRST = ("tests/test_crash_safety.py", "08-nexmark", "tests/test_nexmark_views.py",
              "tests/test_window_properties.py", "01-quickstart", "03-sliding-windows", "05-benchmarking",
              "tests/test_cli.py", "tests/test_browser.py", "07-match-recognize", "tests/test_range_steps.py",
              "tests/test_verify_patterns.py", "tests/test_fused_parts.py", "tests/test_late_data.py",
              "06-your-own-data", "tests/test_interrupt.py", "04-late-data", "02-writing-viewdfs")


def _group(item: pytest.Item) -> str:
    return next(item.iter_markers("xdist_group")).args[0]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Each test file is one xdist group (its module fixtures are set up once, on one worker), unless its
    tests name their own groups (each notebook is one); the long groups go first."""
    for item in items:
        if not any(item.iter_markers("xdist_group")):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    rank = {group: k for k, group in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(_group(item), len(rank)))


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
