"""A warehouse's streams and views as temporary views of its SparkSession, for ``spark.sql`` and ``spark.table``.

Each is ``format("viewdf")`` over the object (storage/data_source.py). Spark plans a Python data source's parts
once per relation, so a temporary view would keep reading the parts of its first query: the views are made
again whenever the catalog has changed, after each statement the warehouse runs (and before each that reads).
Making one is an analysis without a Spark job, about 20-40 ms (measured), so this is opt-in.
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql.types import StructField, StructType, TimestampType

from ..catalog.catalog import Catalog
from ..catalog.model import PART_TIMESTAMP
from ..storage.data_source import FORMAT


class SessionViews:
    """The temporary views ``prefix + name`` of every stream and view of ``catalog`` (not a translated view's
    helpers), kept current."""

    def __init__(self, spark: SparkSession, root: str, catalog: Catalog, prefix: str = "") -> None:
        self.spark, self.root, self.catalog, self.prefix = spark, root.rstrip("/"), catalog, prefix
        self.names: dict[str, str] = {}       # object key -> its temporary view
        self._version: int | None = None      # the catalog version they were made at

    def refresh(self) -> None:
        """Make the views again if the catalog changed since they were made; drop those of dropped objects."""
        if self._version == self.catalog.version:
            return
        wanted = {d.key: self.prefix + d.name for d in self.catalog.objects.values()
                  if d.partitioned and d.owner is None}       # a translated view's helpers are its own
        for key, name in self.names.items():
            if wanted.get(key) != name:
                self.spark.catalog.dropTempView(name)
        for key, name in wanted.items():
            definition = self.catalog.objects[key]
            schema = StructType(definition.schema.fields + [StructField(PART_TIMESTAMP, TimestampType())])
            frame = self.spark.read.format(FORMAT).schema(schema).load(f"{self.root}/{definition.name}")
            frame.createOrReplaceTempView(name)
        self.names, self._version = wanted, self.catalog.version

    def drop(self) -> None:
        """Drop every view made here."""
        for name in self.names.values():
            self.spark.catalog.dropTempView(name)
        self.names, self._version = {}, None
