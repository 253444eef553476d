"""The SparkSession a warehouse runs on."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Callable

from py4j.protocol import Py4JError
from pyspark import SparkContext
from pyspark.sql import SparkSession

EMBEDDED_APP = "viewdf"
# Spark lists the files of a read of more than this many folders in a Spark job of its own
LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
EMBEDDED_CONFIG = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    LISTING_THRESHOLD: "100000",
    "spark.driver.memory": "4g",
    # errors only from the JVM's start on (setLogLevel comes too late for start-up warnings)
    "spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile=" + (
        Path(__file__).with_name("log4j2.properties").resolve().as_uri()),
}


# Where the embedded session's JVM writes its standard error: its start-up banner (incubator modules,
# default log level) is nothing a user can act on, and Spark's errors reach Python as exceptions.
JVM_LOG = Path(tempfile.gettempdir()) / "viewdf-spark-driver.log"
JVM_LOG_KEPT = 1 << 20          # at a start, a log past this size keeps only its last this many bytes


_logged_gateway: object | None = None     # the py4j gateway of the JVM whose standard error is JVM_LOG


def _with_jvm_stderr_in_log(start: Callable[[], SparkSession]) -> SparkSession:
    """Run ``start`` with file descriptor 2 pointing at JVM_LOG, so a JVM it launches inherits the
    log as its standard error; this process's own standard error is restored afterwards."""
    global _logged_gateway
    launching = SparkContext._gateway is None
    if launching:
        trim_log(JVM_LOG, JVM_LOG_KEPT)
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(JVM_LOG, "ab") as log:
            os.dup2(log.fileno(), 2)
            spark = start()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    if launching:
        _logged_gateway = SparkContext._gateway
    return spark


def trim_log(path: Path, kept: int) -> None:
    """Keep only the last ``kept`` bytes of the log at ``path`` (from a line's start), in place: every embedded
    session on the machine appends to it, and a JVM that still writes there goes on at its new end."""
    try:
        with open(path, "r+b") as log:
            size = log.seek(0, os.SEEK_END)
            if size <= kept:
                return
            log.seek(size - kept)
            tail = log.read()
            tail = tail[tail.find(b"\n") + 1:]
            log.seek(0)
            log.truncate()
            log.write(tail)
    except FileNotFoundError:
        return


def stopped_jvm(spark: SparkSession) -> str | None:
    """When the JVM of a classic ``spark`` no longer answers (it exited, or was killed): the message to give
    instead of py4j's connection errors; None while it answers."""
    if is_connect_session(spark):
        return None
    jvm = spark.sparkContext._jvm
    try:
        if jvm is not None:
            jvm.java.lang.System.nanoTime()
            return None
    except (Py4JError, ConnectionError):
        pass
    logged = spark.sparkContext._gateway is not None and spark.sparkContext._gateway is _logged_gateway
    why = f" Its last lines in {JVM_LOG} say why." if logged else ""
    return (f"Spark's JVM stopped, so this SparkSession can run nothing more: restart the kernel (or the process) "
            f"to start a new one.{why}")


def embedded_session(master: str | None = None) -> SparkSession:
    """The process's local SparkSession (``local[*]``, UI off, UTC), created on first use.

    ``VIEWDF_SPARK_MASTER`` overrides the master, ``VIEWDF_SHUFFLE_PARTITIONS`` the
    shuffle partition count.
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        return prepare(active)
    conf = {"spark.sql.shuffle.partitions": os.environ["VIEWDF_SHUFFLE_PARTITIONS"]} \
        if "VIEWDF_SHUFFLE_PARTITIONS" in os.environ else None
    return connect_session(master or os.environ.get("VIEWDF_SPARK_MASTER", "local[*]"), conf=conf)


def is_connect_session(spark: object) -> bool:
    """True for a Spark Connect session (its driver runs elsewhere; no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def is_spark_session(candidate: object) -> bool:
    """A classic or a Spark Connect SparkSession."""
    return isinstance(candidate, SparkSession) or is_connect_session(candidate)


def connect_session(master: str | None = None, remote: str | None = None,
                    conf: dict[str, str] | None = None) -> SparkSession:
    """A session on a cluster (``master``: ``spark://``, ``yarn``, ``k8s://``, ``local[*]``) or on a
    Spark Connect server (``remote``: ``sc://host:port``).

    A classic session this process already runs on another master is stopped only if ViewDF
    started it (the embedded one); a session the user made is theirs, so that is an error."""
    if (master is None) == (remote is None):
        raise ValueError("give either a master URL or a Spark Connect (sc://) URL")
    if remote is not None:
        builder = SparkSession.builder.remote(remote)
        for key, value in (conf or {}).items():
            builder = builder.config(key, value)
        try:
            return prepare(builder.getOrCreate())
        except ImportError as missing:
            raise ImportError(f"Spark Connect needs its client libraries: pip install 'viewdf-magic[connect]' "
                              f"({missing})") from None
    active = SparkSession.getActiveSession()
    if active is not None and active.sparkContext.master == master:
        for key, value in (conf or {}).items():
            active.conf.set(key, value)
        return prepare(active)
    if active is not None:
        if active.sparkContext.appName != EMBEDDED_APP:
            raise RuntimeError(f"this process already runs a Spark session on {active.sparkContext.master}; "
                               "stop it (spark.stop()) or restart the kernel to use another master")
        active.stop()
    assert master is not None      # exactly one of master and remote is given
    builder = SparkSession.builder.appName(EMBEDDED_APP).master(master)
    if master.startswith("local"):
        # Spark's Python workers (the viewdf data source, UDFs) run this interpreter, with its packages,
        # not whichever python3 comes first on PATH (the JVM and its workers inherit the variable)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    for key, value in {**EMBEDDED_CONFIG, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = _with_jvm_stderr_in_log(builder.getOrCreate)
    spark.sparkContext.setLogLevel("FATAL")
    return prepare(spark)


def prepare(spark: SparkSession) -> SparkSession:
    """Timestamps without a zone are UTC in ViewDF, so the session's time zone must be UTC."""
    if spark.conf.get("spark.sql.session.timeZone") != "UTC":
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    return spark


def list_in_driver(spark: SparkSession) -> None:
    """For a warehouse on local disks: list the folders of a read in the driver however many there are.
    Spark's default lists more than 32 in a Spark job of its own, so reading a history of parts (``X[.. j]``,
    a window's chunks) took a job more than its step needed, where listing takes milliseconds. A
    threshold the session set (not the default) is kept."""
    if spark.conf.get(LISTING_THRESHOLD) == "32":
        spark.conf.set(LISTING_THRESHOLD, EMBEDDED_CONFIG[LISTING_THRESHOLD])
