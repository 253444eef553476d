"""Shared fixtures: one local SparkSession for the whole run, and fresh warehouses on it."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)

# The JVMs the tests start in child processes (the notebooks' kernels, the CLI, crash workers, a standalone
# cluster, the Nexmark benchmark) live for seconds to a few minutes on tiny data, where HotSpot's optimising
# compiler (C2) and G1's background threads cost more CPU than they save: with the client compiler only and
# the serial collector, a notebook's run takes 80 CPU-seconds instead of 120. The workers' own sessions (the
# ``spark`` fixture) live for the whole run, and the same flags made them slower, so they keep the JVM's
# defaults. The `java` launcher reads JDK_JAVA_OPTIONS (docs/benchmarks.md, "The test suite's time").
# Without tiered compilation the JVM reserves 48 MB for compiled code, not 240 MB: a child that generates Java
# code for its queries (the CLI demo's session does) filled it ("CodeCache is full. Compiler has been
# disabled."), and its JVM then died in the middle of a step, so the code cache keeps the tiered size.
SHORT_LIVED_JVM_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
os.environ.setdefault("JDK_JAVA_OPTIONS", SHORT_LIVED_JVM_OPTIONS)


# The groups of tests that take minutes (fresh kernels and JVMs, a browser, process kills, long property runs),
# longest first: a notebook (each is its own group) or a test file. ``./run test`` schedules them in this order
# before the rest (--dist loadscope --no-loadscope-reorder, with the groups of ``group_of``), so that the two
# workers do not end with one of them alone on a long group. Measured on a 2-core machine (the durations
# ./run test prints).
LONG_FIRST = ("tests/test_range_steps.py", "tests/test_pattern_properties.py", "08-nexmark",
              "tests/test_late_data.py", "tests/test_corrections.py", "tests/test_nexmark_views.py",
              "tests/test_match_recognize_parts.py",
              "tests/test_cli.py", "tests/test_crash_safety.py", "tests/test_browser.py", "tests/test_fused_parts.py",
              "07-match-recognize", "tests/test_concurrent_kernels.py", "tests/test_verify_patterns.py",
              "06-your-own-data", "tests/test_windows.py", "tests/test_match_recognize_views.py",
              "tests/test_hostile_input.py", "02-writing-viewdfs", "tests/test_interrupt.py",
              "tests/test_window_properties.py", "04-late-data", "tests/test_replay.py", "03-sliding-windows",
              "tests/test_cluster.py", "05-benchmarking", "01-quickstart", "tests/test_timeline.py",
              "tests/test_sink_kills.py", "tests/test_pipelines.py")
NOTEBOOK_RUN = "tests/test_notebooks.py::test_notebook_runs_on_a_fresh_kernel["


def group_of(nodeid: str) -> str:
    """The group a test runs in, on one worker: its notebook for a notebook run (each notebook is one group,
    its long form included), else its file (whose module fixtures are then set up once)."""
    if nodeid.startswith(NOTEBOOK_RUN):
        return nodeid[len(NOTEBOOK_RUN):].rstrip("]").removesuffix("-long-form")
    return nodeid.split("::")[0]


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadscope`` with the groups of ``group_of``. (xdist's own loadgroup marks a test's group in
    its node id, which pytest 9 no longer reads: every test became a group of its own, and a file's module
    fixtures were set up on both workers.)"""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return GroupScheduling(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """The long groups go first, in ``LONG_FIRST``'s order."""
    rank = {group: k for k, group in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(group_of(item.nodeid), len(rank)))


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master("local[2]").appName("viewdf-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.default.parallelism", "2")
               # tiny data: compiling each query's Java code costs more than it saves (about 14% of the suite)
               .config("spark.sql.codegen.wholeStage", "false")
               .config("spark.sql.codegen.factoryMode", "NO_CODEGEN"))
    # this JVM lives for the whole run: without our flags (a developer's own JDK_JAVA_OPTIONS stay)
    ours = os.environ.get("JDK_JAVA_OPTIONS") == SHORT_LIVED_JVM_OPTIONS
    if ours:
        del os.environ["JDK_JAVA_OPTIONS"]
    try:
        session = builder.getOrCreate()
    finally:
        if ours:
            os.environ["JDK_JAVA_OPTIONS"] = SHORT_LIVED_JVM_OPTIONS
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
