"""Run a compiled query on Spark with its placeholder tables bound to concrete parts."""

from __future__ import annotations

import io
from contextlib import contextmanager, redirect_stdout
from typing import Callable, Iterator

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from ..catalog.catalog import Catalog
from ..catalog.model import PART_TIMESTAMP
from ..language.queries import CompiledQuery, RefKind
from ..storage.parts import PartStore
from .spark_errors import spark_error
from .timeline import ResolvedRef


class QueryRunner:
    """Binds resolved references to Spark temp views named by their placeholders."""

    def __init__(self, spark: SparkSession, catalog: Catalog, store: PartStore,
                 catalog_frame: Callable[[], DataFrame]) -> None:
        self.spark = spark
        self.catalog = catalog
        self.store = store
        self.catalog_frame = catalog_frame

    def frame(self, ref: ResolvedRef, empty: bool = False) -> DataFrame:
        """The data one reference stands for (or an empty frame of its schema)."""
        definition = ref.definition
        if ref.binding.kind is RefKind.CATALOG:
            return self.catalog_frame()
        if empty:
            return self.store.empty(definition)
        state = self.catalog.state(definition.name) if definition.key in self.catalog.states else None
        if ref.binding.kind is RefKind.TABLE:
            return self.store.read_table(definition, state)
        if state is None:
            return self.store.empty(definition)
        return self.store.read_parts(definition, state, ref.subscripts)

    @contextmanager
    def bound(self, query: CompiledQuery, refs: list[ResolvedRef],
              frames: dict[str, DataFrame] | None = None, context: str = "") -> Iterator[DataFrame]:
        """Yield ``query``'s DataFrame; ``frames`` overrides the data of some placeholders."""
        registered = []
        try:
            for ref in refs:
                placeholder = ref.binding.placeholder
                frame = (frames or {}).get(placeholder)
                (frame if frame is not None else self.frame(ref)).createOrReplaceTempView(placeholder)
                registered.append(placeholder)
            try:
                result = self.spark.sql(query.sql)
            except PySparkException as exc:
                raise spark_error(exc, query.rewritten, query.bindings, context) from None
            yield result
        finally:
            for placeholder in registered:
                self.spark.catalog.dropTempView(placeholder)


def conform(frame: DataFrame, schema: StructType, query: CompiledQuery, clause: str) -> DataFrame:
    """Match a query's output to a view's schema by position (PART_TIMESTAMP is dropped)."""
    keep = [k for k, name in enumerate(frame.columns) if name.upper() != PART_TIMESTAMP]
    if len(keep) != len(schema.fields):
        names = ", ".join(frame.columns[k] for k in keep)
        raise query.rewritten.error(f"{clause} returns {len(keep)} columns ({names}) but the view has "
                                    f"{len(schema.fields)} ({', '.join(schema.fieldNames())}); "
                                    f"columns are matched by position")
    positional = frame.toDF(*[f"_c{k}" for k in range(len(frame.columns))])
    return positional.select([F.col(f"_c{k}").cast(field.dataType).alias(field.name)
                              for k, field in zip(keep, schema.fields)])


def check_runtime(action: Callable[[], object], query: CompiledQuery | None, context: str) -> object:
    """Run a Spark action, turning its failures into ViewDFErrors."""
    try:
        return action()
    except PySparkException as exc:
        if query is None:
            raise spark_error(exc, context=context) from None
        raise spark_error(exc, query.rewritten, query.bindings, context) from None


def explain_text(frame: DataFrame, mode: str = "formatted") -> str:
    """Spark's plan for ``frame`` as text (PySpark prints it; we capture it)."""
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        frame.explain(mode=mode)
    return buffer.getvalue()
