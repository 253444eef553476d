"""Run a compiled query on Spark with its placeholder tables bound to concrete parts."""

from __future__ import annotations

import io
from collections import OrderedDict
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass
from typing import Callable, Iterator

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from ..catalog.catalog import Catalog
from ..catalog.model import PART_TIMESTAMP
from ..language.lifting import RESERVED_PREFIX
from ..language.queries import CompiledQuery, RefKind
from ..language.tokens import backquote
from ..storage.parts import PartStore
from ..session import is_connect_session
from .connect_sql import sql_with_frames
from ..storage.spark_errors import SPARK_ERRORS, spark_error
from .timeline import ResolvedRef, check_retained, existing

PREFIX_CACHE_SIZE = 256
OPEN_QUERY = " FROM (\n"        # where conform_prefix's SELECT list ends and the query starts


@dataclass(frozen=True)
class BoundQuery:
    """An analysed query's DataFrame, and how to report the Spark errors its actions raise."""

    frame: DataFrame
    query: CompiledQuery
    context: str
    shift: int                  # where the query's text starts inside the SQL Spark ran

    @contextmanager
    def running(self) -> Iterator[None]:
        """Spark errors raised in the block, as ViewDFErrors positioned in the user's query."""
        try:
            yield
        except SPARK_ERRORS as exc:
            raise spark_error(exc, self.query.rewritten, self.query.bindings, self.context, self.shift) from None


class QueryRunner:
    """Binds resolved references to Spark temp views named by their placeholders."""

    def __init__(self, spark: SparkSession, catalog: Catalog, store: PartStore,
                 catalog_frame: Callable[[], DataFrame]) -> None:
        self.spark = spark
        self.catalog = catalog
        self.store = store
        self.catalog_frame = catalog_frame
        self._prefixes: OrderedDict[tuple, tuple[str, str]] = OrderedDict()

    def frame(self, ref: ResolvedRef, empty: bool = False) -> DataFrame:
        """The data one reference stands for (or an empty frame of its schema)."""
        definition = ref.definition
        if ref.binding.kind is RefKind.CATALOG:
            return self.catalog_frame()
        if empty:
            return self.store.empty(definition)
        state = self.catalog.state(definition.name) if definition.key in self.catalog.states else None
        if ref.binding.kind is RefKind.TABLE:
            assert state is not None      # a table reference names a table of the catalog
            return self.store.read_table(definition, state)
        if state is None:
            return self.store.empty(definition)
        return self.store.read_parts(definition, state, existing(ref.subscripts, state.parts))

    def is_empty(self, ref: ResolvedRef) -> bool:
        """Whether ``frame(ref)`` has no rows, known from the catalog alone."""
        if ref.binding.kind is RefKind.CATALOG:
            return False
        state = self.catalog.states.get(ref.definition.key)
        if ref.binding.kind is RefKind.TABLE:
            return state is None or not state.table_folders
        return state is None or not self.store.with_rows(state, existing(ref.subscripts, state.parts))

    def bind(self, query: CompiledQuery, refs: list[ResolvedRef], frames: dict[str, DataFrame] | None = None,
             context: str = "", schema: StructType | None = None, clause: str = "", extra: str = "") -> BoundQuery:
        """``query``'s DataFrame, analysed now; ``frames`` overrides the data of some placeholders.

        With ``schema``, the output is matched to it by position and cast (PART_TIMESTAMP
        dropped), and ``extra`` (SQL select items) is added after it. That happens in SQL around the query, so
        Spark's positions for errors
        raised later, while an action runs the query (``BoundQuery.running``), still point into
        the user's text. The placeholders' temp views exist only while the query is analysed."""
        if frames is None:
            check_retained(self.catalog, query, refs)
        named = {}
        for ref in refs:
            given = (frames or {}).get(ref.binding.placeholder)
            named[ref.binding.placeholder] = given if given is not None else self.frame(ref)
        shift = 0
        with self.named(named) as sql:
            try:
                if schema is None:
                    result = sql(query.sql)
                else:
                    prefix, columns = self._conformed(sql, query, named, schema, clause)
                    if extra:
                        prefix = f"{prefix.removesuffix(OPEN_QUERY)}, {extra}{OPEN_QUERY}"
                    shift = len(prefix)
                    result = sql(f"{prefix}{query.sql}\n) AS __vdf_output({columns})")
            except SPARK_ERRORS as exc:
                raise spark_error(exc, query.rewritten, query.bindings, context, shift) from None
        return BoundQuery(result, query, context, shift)

    @contextmanager
    def bound(self, query: CompiledQuery, refs: list[ResolvedRef], frames: dict[str, DataFrame] | None = None,
              context: str = "", schema: StructType | None = None, clause: str = "") -> Iterator[DataFrame]:
        """Yield ``bind``'s DataFrame; Spark errors raised in the block are positioned in the query."""
        bound = self.bind(query, refs, frames, context, schema, clause)
        with bound.running():
            yield bound.frame

    def _conformed(self, sql: Callable[[str], DataFrame], query: CompiledQuery, named: dict[str, DataFrame],
                   schema: StructType, clause: str) -> tuple[str, str]:
        """The prefix that conforms ``query``'s output to ``schema``, and its output's positional names.
        Remembered by query text and input schemas, so a step analyses its (long) query once, not twice."""
        key = (query.sql, clause, schema.json(), tuple((name, frame.schema.json()) for name, frame in named.items()))
        known = self._prefixes.get(key)
        if known is None:
            output = sql(query.sql).schema
            known = conform_prefix(output, schema, query, clause), _positional(output.fieldNames())
            self._prefixes[key] = known
            while len(self._prefixes) > PREFIX_CACHE_SIZE:
                self._prefixes.popitem(last=False)
        else:
            self._prefixes.move_to_end(key)
        return known

    @contextmanager
    def named(self, frames: dict[str, DataFrame]) -> Iterator[Callable[[str], DataFrame]]:
        """Yield a function that runs SQL in which each name of ``frames`` is that frame: temp views
        for the block on a classic session; on Spark Connect, frames carried inside the plan."""
        if is_connect_session(self.spark):
            yield lambda text: sql_with_frames(self.spark, text, frames)
            return
        registered = []
        try:
            for name, frame in frames.items():
                frame.createOrReplaceTempView(name)
                registered.append(name)
            yield self.spark.sql
        finally:
            for name in registered:
                self.spark.catalog.dropTempView(name)


def _positional(columns: list[str]) -> str:
    return ", ".join(f"_c{k}" for k in range(len(columns)))


def conform_prefix(output: StructType, schema: StructType, query: CompiledQuery, clause: str,
                   carried: str | None = None) -> str:
    """The SQL that opens ``SELECT CAST(..) AS .. FROM (`` around a query to match ``schema`` by position.

    Columns that already have the right type are not cast, so Spark keeps reporting run-time
    errors at the user's expression rather than at the cast. With ``carried`` (a lifted query, see
    language/lifting.py), the query's last column is the part of each row: it is kept under that name,
    and the part columns the lifting added elsewhere are dropped with PART_TIMESTAMP."""
    columns = output.fieldNames()
    last = len(columns) - 1 if carried else len(columns)
    keep = [k for k, name in enumerate(columns[:last])
            if name.upper() != PART_TIMESTAMP and not (carried and name.startswith(RESERVED_PREFIX))]
    if len(keep) != len(schema.fields):
        names = ", ".join(columns[k] for k in keep)
        raise query.rewritten.error(f"{clause} returns {len(keep)} columns ({names}) but the view has "
                                    f"{len(schema.fields)} ({', '.join(schema.fieldNames())}); "
                                    f"columns are matched by position")
    casts = ", ".join(
        (f"_c{k}" if output.fields[k].dataType == field.dataType else f"CAST(_c{k} AS {field.dataType.simpleString()})")
        + f" AS {backquote(field.name)}" for k, field in zip(keep, schema.fields))
    if carried:
        casts += f", _c{last} AS {backquote(carried)}"
    return f"SELECT {casts}{OPEN_QUERY}"


def explain_text(frame: DataFrame, mode: str = "formatted") -> str:
    """Spark's plan for ``frame`` as text (PySpark prints it; we capture it)."""
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        frame.explain(mode=mode)
    return buffer.getvalue()
