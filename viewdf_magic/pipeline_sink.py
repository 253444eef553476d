"""ViewDF in a Spark Declarative Pipeline (``spark-pipelines run``): a streaming table of the pipeline is a
ViewDF stream, and downstream datasets read its views, after the stream has taken the run's rows.

In a pipeline's definitions file (``spark`` is the pipeline's Spark Connect session)::

    from pyspark import pipelines as dp
    from viewdf_magic.pipeline_sink import ViewDFPipeline

    viewdf = ViewDFPipeline(spark, "/data/warehouse", "CREATE STREAM IF NOT EXISTS M (...) ...; CREATE VIEW ...")

    @dp.table(name="M", format=viewdf.stream_format("M"))
    def m():
        return spark.readStream.table("events")        # each micro-batch is ingested into M once

    @dp.materialized_view
    def alerts():
        return viewdf.read("Loss60", after="M").where("total > 100")

How it works:

* **Definitions** run before the pipeline's graph is analysed (a downstream dataset's plan needs the view's
  schema). A definitions file may not change its session's configuration, which opening a warehouse does, so
  they run in a child process that connects to the pipeline's own Spark Connect server; when the warehouse
  already holds every object with the same definition, nothing runs.
* **The stream's table** has a format of its own (``viewdf_<stream>``), a Python data source with a stream
  writer: Spark's executors write each micro-batch's rows as Parquet files under the flow's checkpoint, and
  the commit (on the driver, in a Python worker with no SparkSession) opens a Spark Connect session back to
  the pipeline's server, ingests the files with ``Warehouse.sink`` (exactly once by batch id, under the
  flow's name) and maintains the views, then deletes the files. Reading the table gives the stream's rows.
  The commit's session carries the client's token: the format's registration holds it.
* **Downstream datasets** read a view through ``read(view, after=table)``: ``format("viewdf")`` joined
  with an empty read of the stream's table, which adds nothing to the rows but tells the pipeline that the
  dataset comes after that table's flow (it cannot see that ``format("viewdf")`` depends on it).

Needs ``spark.sql.python.filterPushdown.enabled: "true"`` in the pipeline's configuration (the ``viewdf``
reader pushes ``PART_TIMESTAMP`` filters), and ``viewdf_magic`` installed for the Python that Spark's
workers run. A full refresh of the stream's table starts its batch ids at 0 again, which the warehouse
refuses (it took those batches already).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from typing import Any, Iterator, cast

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from .catalog.arrow_fs import ARROW_SCHEMES, ArrowFileSystem
from .catalog.catalog import Catalog
from .storage.data_source import ViewDFDataSource

# The warehouse and the parser are imported where they are used: Spark's Python workers import
# this module to unpickle the stream table's writer, and the executors' tasks need neither (the module's import
# went from 0.76 to 0.45 s; docs/benchmarks.md).

STAGING = "viewdf_batches"      # below a flow's checkpoint: the micro-batches written and not yet ingested


class ViewDFPipeline:
    """A warehouse as a pipeline uses it: its definitions made, its formats registered on ``spark``."""

    def __init__(self, spark: SparkSession, warehouse: str, definitions: str | None = None) -> None:
        from .warehouse import warehouse_location

        self.spark, self.root = spark, warehouse_location(warehouse)
        self.remote = _remote(spark)
        if definitions and not _defined(self.root, definitions):
            local = ("SPARK_REMOTE", "SPARK_LOCAL_REMOTE", "SPARK_CONNECT_MODE_ENABLED")   # this process's own session
            subprocess.run([sys.executable, "-m", __name__], check=True, text=True,
                           env={key: value for key, value in os.environ.items() if key not in local},
                           input=json.dumps({"remote": self.remote, "warehouse": self.root, "statements": definitions}))
        spark.dataSource.register(ViewDFDataSource)

    def stream_format(self, stream: str) -> str:
        """Register the format of a streaming table that is ViewDF stream ``stream``, and return its name."""
        source = cast(type[ViewDFStreamTable], type(f"ViewDFStreamTable_{stream}", (ViewDFStreamTable,), {
            "warehouse": self.root, "stream": stream, "remote": self.remote}))
        self.spark.dataSource.register(source)
        return source.name()

    def read(self, view: str, after: str) -> DataFrame:
        """``spark.read.format("viewdf")`` of ``view``, read after the flow of the pipeline's table ``after``
        (the stream's table) has run."""
        frame = self.spark.read.format("viewdf").load(f"{self.root}/{view}")
        return frame.join(self.spark.read.table(after).select().limit(0), how="left_anti")


class ViewDFStreamTable(ViewDFDataSource):
    """The format of a pipeline's table that is a ViewDF stream: reads give the stream's rows, streaming
    writes ingest each micro-batch. ``ViewDFPipeline.stream_format`` makes a subclass naming the warehouse,
    the stream and the Spark Connect server the commits run through."""

    warehouse = ""
    stream = ""
    remote = ""

    @classmethod
    def name(cls) -> str:
        return f"viewdf_{cls.stream.lower()}"

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        self.options["path"] = f"{self.warehouse}/{self.stream}"

    def streamWriter(self, schema: StructType, overwrite: bool) -> "ViewDFStreamWriter":
        return ViewDFStreamWriter(self.warehouse, self.stream, self.remote, self.options["checkpointLocation"],
                                  self.options.get("queryName") or self.stream)


@dataclass
class StagedFiles(WriterCommitMessage):
    """The Parquet files one task wrote for a micro-batch (none when its partition had no rows)."""

    files: list[str]


class ViewDFStreamWriter(DataSourceStreamArrowWriter):
    """Tasks stage each micro-batch as Parquet files; the commit ingests them into the stream (exactly once by
    batch id, under ``name``) through a Spark Connect session, maintains the views, and deletes what is staged
    (failed attempts' files too: the query writes one batch at a time)."""

    def __init__(self, warehouse: str, stream: str, remote: str, checkpoint: str, name: str) -> None:
        self.warehouse, self.stream, self.remote, self.name = warehouse, stream, remote, name
        self.staging = f"{checkpoint.rstrip('/')}/{STAGING}"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedFiles:
        from pyspark import TaskContext

        batches = list(iterator)
        if not batches:
            return StagedFiles([])
        context = TaskContext.get()
        partition = context.partitionId() if context is not None else 0
        uri = f"{self.staging}/{uuid.uuid4().hex}/{partition}.parquet"    # a new folder per attempt
        filesystem, path = _arrow(uri)
        filesystem.create_dir(path.rpartition("/")[0], recursive=True)
        pq.write_table(pa.Table.from_batches(batches), path, filesystem=filesystem)
        return StagedFiles([uri])

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        from .warehouse import Warehouse

        files = [uri for message in messages if isinstance(message, StagedFiles) for uri in message.files]
        spark = SparkSession.builder.remote(self.remote).create()
        try:
            warehouse = Warehouse(self.warehouse, spark=spark, progress=False)
            batch = spark.read.parquet(*files) if files else spark.createDataFrame([], warehouse.schema(self.stream))
            warehouse.sink(self.stream, name=self.name)(batch, batchId)
            warehouse.close()
        finally:
            spark.stop()
        filesystem, path = _arrow(self.staging)
        filesystem.delete_dir_contents(path, missing_dir_ok=True)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        for message in messages:
            for uri in message.files if isinstance(message, StagedFiles) else ():
                filesystem, path = _arrow(uri.rpartition("/")[0])
                filesystem.delete_dir(path)


def _arrow(uri: str) -> tuple[pafs.FileSystem, str]:
    """pyarrow's filesystem and path for a Hadoop URI (``file:``, ``hdfs:``, ``s3a:``...)."""
    scheme, rest = uri.split(":", 1)
    return pafs.FileSystem.from_uri(f"{ARROW_SCHEMES.get(scheme.lower(), scheme)}:{rest}")


def _remote(spark: SparkSession) -> str:
    """The connection string of ``spark``'s Spark Connect server, as Python workers on its driver reach it."""
    builder: Any = spark.client._builder      # its client's channel: host, port and credentials
    params = "".join(f";{key}={value}" for key, value in (("token", builder.token),
                                                          ("use_ssl", "true" if builder.use_ssl else None)) if value)
    return f"sc://{builder.endpoint}/{params}"


def _defined(root: str, statements: str) -> bool:
    """Whether the warehouse at ``root`` holds every object ``statements`` create, with the same definitions
    (then running them, all ``IF NOT EXISTS``, would change nothing). Reads the catalog without Spark."""
    from .language.parser import parse

    catalog = Catalog(ArrowFileSystem(root))
    catalog.refresh()
    for statement in parse(statements):
        creation, name = getattr(statement, "creation", None), getattr(statement, "name", None)
        if creation is None or name is None or not creation.if_not_exists:
            return False
        existing = catalog.get(name.text)
        if existing is None:
            return False
        stored = getattr(parse(existing.origin or existing.definition)[0], "creation", None)
        if stored is None or stored.signature != creation.signature:
            return False
    return True


def _define() -> None:
    """The child process of ``ViewDFPipeline``: run the definitions on stdin (JSON: remote, warehouse,
    statements) through a Spark Connect session."""
    from .warehouse import Warehouse

    request = json.load(sys.stdin)
    spark = SparkSession.builder.remote(request["remote"]).create()
    try:
        Warehouse(request["warehouse"], spark=spark, progress=False).execute(request["statements"])
    finally:
        spark.stop()


if __name__ == "__main__":
    _define()
