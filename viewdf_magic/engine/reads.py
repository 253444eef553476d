"""What the notebook's widgets read from a warehouse: definitions, part metadata, recorded lineage, the
clause that computed a part, and a replay source's rows. Read-only: nothing here writes."""

from __future__ import annotations

from typing import Union

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..catalog.catalog import Catalog
from ..catalog.model import LineageRange, ObjectDef, ObjectState, PartMeta
from ..errors import ViewDFError
from ..language.parser import parse
from ..language.statements import CreateViewDF
from ..language.tokens import quote_name
from ..maintainer.maintainer import Maintainer
from ..timeparts import subscript_sql
from . import catalog_tables
from .conform import conform_by_name, read_file, to_frame

# Rows a replay can take: a file path, or a pandas or Spark DataFrame.
SourceRows = Union[str, pd.DataFrame, DataFrame]


class Reads:
    """The read methods of one open warehouse, for front ends that must not reach into its catalog."""

    def __init__(self, spark: SparkSession, catalog: Catalog, maintainer: Maintainer) -> None:
        self._spark, self._catalog, self._maintainer = spark, catalog, maintainer

    def definition(self, name: str) -> ObjectDef | None:
        """The stream, table or view called ``name`` (any case), or None."""
        return self._catalog.get(name)

    def state(self, name: str) -> ObjectState:
        """The parts of ``name`` the catalog records, with their metadata."""
        return self._catalog.state(name)

    def partitioned(self) -> list[ObjectDef]:
        """Every stream and view (the objects stored in parts)."""
        return [d for d in self._catalog.objects.values() if d.partitioned]

    def arrivals(self, stream: str) -> pd.DataFrame:
        """Each arrival of rows into a part of ``stream`` (``catalog_tables.arrivals_table``)."""
        return catalog_tables.arrivals_table(self._catalog, self._require_stream(stream))

    def repairs(self, stream: str) -> pd.DataFrame:
        """The recomputations of the parts of the views reading ``stream`` (``catalog_tables.repairs_table``)."""
        return catalog_tables.repairs_table(self._catalog, self._require_stream(stream))

    def _require_stream(self, name: str) -> ObjectDef:
        definition = self._catalog.get(name)
        if definition is None or definition.kind != "stream":
            raise ViewDFError(f"no stream named '{name}'")
        return definition

    def downstream(self, name: str) -> list[ObjectDef]:
        """``name`` and every view that reads it, directly or through other views."""
        return self._catalog.downstream(name)

    def upstream_parts(self, name: str, subscript: int) -> dict[str, set[int]]:
        """Every part that part ``subscript`` of ``name`` was computed from, transitively, by the
        lineage the catalog recorded: object name -> subscripts."""
        closure: dict[str, set[int]] = {}
        todo = [(name, subscript)]
        while todo:
            current, part = todo.pop()
            meta = self._meta(current, part)
            for read in meta.lineage if meta is not None else ():
                definition = self._catalog.get(read.name)
                key = definition.name if definition is not None else read.name
                seen = closure.setdefault(key, set())
                for s in range(read.first, read.last + 1):
                    if s not in seen:
                        seen.add(s)
                        todo.append((key, s))
        return closure

    def producing_query(self, name: str, subscript: int) -> str:
        """The ViewDF clause that computed a part (from the view's definition), or how a stream part
        came to be."""
        definition = self._catalog.get(name)
        if definition is None:
            raise ViewDFError(f"no stream or view named '{name}'")
        return producing_query(definition, self._meta(name, subscript))

    def recompute_lineage(self, view: ObjectDef, subscript: int) -> tuple[LineageRange, ...]:
        """The parts the view's RECOMPUTE query reads for part ``subscript``."""
        query = self._maintainer.compiled(view).recompute
        assert query is not None      # asked only for views with RECOMPUTE (see has_recompute)
        timeline = self._maintainer.timeline
        return timeline.lineage(timeline.resolve(query, view, subscript))

    def has_recompute(self, view: ObjectDef) -> bool:
        """Whether the view has a RECOMPUTE clause (a naive baseline)."""
        return self._maintainer.compiled(view).recompute is not None

    def stream_rows(self, stream: ObjectDef, source: SourceRows, part_column: str) -> DataFrame:
        """``source`` as a Spark DataFrame with the stream's columns (matched by name), and each row's
        part subscript in ``part_column``."""
        if isinstance(source, str):
            frame = read_file(self._spark, source, None, {}, stream.schema, ViewDFError)
        elif isinstance(source, pd.DataFrame) and source.empty:
            raise ViewDFError("the source has no rows")
        else:
            frame = conform_by_name(to_frame(self._spark, source), stream.schema, ViewDFError)
        assert stream.timestamp_column is not None      # every stream has one
        subscript = subscript_sql(quote_name(stream.timestamp_column), stream.length)
        return frame.withColumn(part_column, F.expr(subscript))

    def _meta(self, name: str, subscript: int) -> PartMeta | None:
        return self._catalog.state(name).parts.get(subscript) if self._catalog.get(name) is not None else None


def producing_query(definition: ObjectDef, meta: PartMeta | None) -> str:
    """The clause that computed a part with metadata ``meta`` (None: no part), as text."""
    if definition.kind == "stream":
        return "sealed empty (no rows arrived)" if meta is None else "ingested"
    if meta is None:
        return "not computed yet"
    [statement] = parse(definition.definition)
    assert isinstance(statement, CreateViewDF)         # a stored view's definition is its ViewDF
    clause = statement.clause_for(meta.how)
    assert clause is not None                          # the clause that computed a stored part exists
    guard = "" if clause.guard is None else \
        f" WHEN {clause.guard.part.text} IS UNIQUE ({', '.join(c.text for c in clause.guard.columns)})"
    text = f"{clause.clause.label} {clause.head.text}[{clause.variable}]{guard} AS\n  {clause.query.text.strip()}"
    if definition.origin:
        text += f"\n\n-- translated from:\n{definition.origin.strip()}"
    return text
