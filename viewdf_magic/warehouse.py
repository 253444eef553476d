"""The Warehouse: the Python API over the language, the catalog, the storage and the maintainer."""

from __future__ import annotations

import threading
import time
import uuid
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Iterable, Iterator

import pandas as pd
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import IntegralType, StructType, TimestampNTZType, TimestampType

from .catalog.actions import Advance, Create, Drop, Options, Setting
from .catalog.catalog import Catalog
from .catalog.filesystem import open_filesystem
from .catalog.lock import WriterLock
from .catalog.model import CATALOG_VIEW, PART_TIMESTAMP, ObjectDef
from .commands import inspect
from .commands.pattern_views import explain_tables, plan_pattern_view, replan
from .commands.window_views import plan_window_view
from .translation.fsm_diagram import fsm_svg
from .translation.pattern_query import find_pattern
from .commands.ingest import (MAX_NEW_PARTS, IngestReport, Ingester, conform_by_name, conform_by_position,
                              stream_schema_check)
from .errors import Interrupted, ViewDFError
from .wording import agreeing, plural
from .language import statements as st
from .language.parser import VACUUM_RETAIN_SECONDS, parse
from .language.source import Fragment
from .language.queries import CompiledQuery, RefKind, Scope, compile_query
from .maintainer.compare import DEFAULT_TOLERANCE, Comparison, compare_rows
from .maintainer.cancellation import cancel_on_interrupt
from .maintainer.execute import explain_text
from .maintainer.maintainer import Maintainer, PendingStep, StepReport, resolved_sql
from .maintainer.repair import RepairReport, Repairer
from .maintainer.reports import named_spans
from .maintainer.retention import Retention
from .maintainer.spark_errors import check_runtime, spark_error
from .maintainer.views import catalog_lookup
from .session import embedded_session, is_connect_session, prepare
from .storage.parts import PartStore
from .storage.shared_storage import check_shared_storage
from .storage.vacuum import sweep, vacuum
from .timeparts import TimestampLike, format_duration, format_part, part_start, subscript_of, to_utc


@dataclass(frozen=True)
class PartCheck:
    """A view part against its recomputation: the comparison, and the seconds the recomputation took."""

    comparison: Comparison
    recompute_seconds: float


class MaintenanceWarning(UserWarning):
    """A view part could not be computed; the data that triggered it was stored."""


@dataclass
class Result:
    """The outcome of one statement."""

    statement: st.Statement
    message: str | None = None
    frame: DataFrame | None = None        # rows of a query, as a (lazy) Spark DataFrame
    table: pd.DataFrame | None = None     # rows of SHOW, DESCRIBE or VERIFY
    detail: str | None = None             # extra text, e.g. a definition
    steps: list[StepReport] = field(default_factory=list)
    query: CompiledQuery | None = None    # the compiled query behind ``frame``, for error positions
    figure: str | None = None             # an SVG drawing, e.g. a pattern's FSM
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)   # further titled tables
    sections: list[tuple[str, str]] = field(default_factory=list)   # titled long texts, shown folded

    @property
    def has_rows(self) -> bool:
        return self.frame is not None or self.table is not None

    def to_pandas(self) -> pd.DataFrame | None:
        """All rows, or None for a statement without rows."""
        return self.head(None)[0] if self.has_rows else None

    def head(self, limit: int | None) -> tuple[pd.DataFrame, bool]:
        """At most ``limit`` rows (all for 0 or None) and whether more exist; only ``limit + 1``
        rows are fetched from Spark."""
        if self.table is not None:
            rows = self.table
        else:
            assert self.frame is not None, "statement has no rows"
            frame = self.frame.limit(limit + 1) if limit else self.frame
            with warnings.catch_warnings():   # PySpark warns before re-raising a failed Arrow collect
                warnings.simplefilter("ignore", UserWarning)
                rows = check_runtime(frame.toPandas, "running the query",
                                     *((self.query.rewritten, self.query.bindings) if self.query else ()))
            rows = _integers_stay_integers(rows, frame.schema)
        if limit and len(rows) > limit:
            return rows.head(limit), True
        return rows, False


def _integers_stay_integers(rows: pd.DataFrame, schema: StructType) -> pd.DataFrame:
    """pandas turns an integer column with NULLs into floats (5.0); show it as nullable integers."""
    for spark_field in schema.fields:
        column = spark_field.name
        if isinstance(spark_field.dataType, IntegralType) and column in rows and rows[column].dtype.kind == "f":
            rows[column] = rows[column].astype("Int64")
    return rows


_READ_ONLY = (st.Query, st.Show, st.Describe, st.ExplainView, st.Verify)


class Warehouse:
    """A ViewDF warehouse at ``path`` (local, ``file:``, ``hdfs:`` or ``s3a:``).

    With no ``spark`` session, an embedded local one is started. ``spark`` may be a classic
    session on any master or a Spark Connect session; with Spark Connect, this process writes the
    catalog and the server writes the parts, so ``path`` must be storage both reach.
    """

    def __init__(self, path: str, spark: SparkSession | None = None, *, progress: bool = True,
                 lock_timeout: float = 30.0) -> None:
        self.spark = prepare(spark) if spark is not None else embedded_session()
        self.fs = open_filesystem(self.spark, path)
        if is_connect_session(self.spark):
            check_shared_storage(self.spark, self.fs)
        self.path = self.fs.root
        self.catalog = Catalog(self.fs)
        self.store = PartStore(self.spark, self.fs)
        self.maintainer = Maintainer(self.spark, self.catalog, self.store, self._parts_frame, progress)
        self.repairer = Repairer(self.maintainer)
        self.retention = Retention(self.maintainer)
        self.ingester = Ingester(self.spark, self.catalog, self.store, self.retention)
        self.writer = WriterLock(self.fs, lock_timeout)
        self._lock = threading.RLock()
        self._since: int | None = None    # catalog version when the running statement began
        self.last_repair: RepairReport | None = None     # of the latest maintenance that repaired late data
        self.recovered: list[StepReport] = self._recover()

    def _recover(self) -> list[StepReport]:
        """Finish maintenance that a crashed or interrupted process left: a pending late-data repair,
        and in auto mode every ready view part."""
        auto = self.maintenance == "auto"
        if not self.repairer.pending and not (auto and any(self.maintainer.next_step(d) for d in self.catalog.views())):
            return []
        with self._writing():
            return self._maintain()

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Hold the writer lock (one writing process at a time) on the newest catalog, interruptibly."""
        with self._lock, self.writer.held():
            self._refresh()
            with self._interruptible():
                yield

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """Read the newest committed catalog, interruptibly; published parts never change, so no lock is
        needed."""
        with self._lock:
            self._refresh()
            with self._interruptible():
                yield

    @contextmanager
    def _interruptible(self) -> Iterator[None]:
        """Run one statement so that an interrupt (KeyboardInterrupt) cancels its Spark jobs and raises
        Interrupted naming the parts it published, which stay (an open catalog transaction is rolled
        back, so a view being created is not). A statement run by another (STEP calls ``step``) is part
        of it."""
        if self._since is not None:
            yield
            return
        self._since = self.catalog.version
        try:
            with cancel_on_interrupt(self.spark):
                yield
        except KeyboardInterrupt:
            raise Interrupted(self._kept(self._since)) from None
        finally:
            self._since = None

    def _kept(self, since: int) -> str:
        """What a statement interrupted after catalog version ``since`` published, as a message."""
        kept: dict[str, list[tuple[str, pd.Timestamp]]] = {"stream": [], "view": []}
        for definition in self.catalog.objects.values():
            if definition.kind in kept:
                parts = self.catalog.state(definition.name).parts
                kept[definition.kind] += [(definition.name, part_start(subscript, definition.partition_length))
                                          for subscript in sorted(parts) if parts[subscript].verified > since]
        named = [f"{plural(len(parts), kind + ' part')} ({named_spans(parts)})"
                 for kind, parts in kept.items() if parts]
        if not named:
            return "Interrupted: no part was published."
        return f"Interrupted: kept {' and '.join(named)}; the part being computed was not published."

    def _refresh(self) -> None:
        if self.catalog.refresh():       # another process committed: forget what it may have replaced
            self.store.cache.clear()

    # -- public API ----------------------------------------------------------------------
    def execute(self, text: str) -> pd.DataFrame | None:
        """Run ``;``-separated statements; return the last query's rows as pandas, or None."""
        results = self.run(text)
        for result in reversed(results):
            if result.has_rows:
                return result.to_pandas()
        return None

    def run(self, text: str) -> list[Result]:
        """Run ``;``-separated statements and return one Result for each."""
        return list(self.run_iter(text))

    def run_iter(self, text: str) -> Iterator[Result]:
        """Run ``;``-separated statements one at a time, yielding each Result as it is ready.

        Nothing runs if any statement fails to parse; a failing statement stops the rest
        (the ones before it have taken effect)."""
        for statement in parse(text):
            with (self._reading() if isinstance(statement, _READ_ONLY) else self._writing()):
                result = self._dispatch(statement)
            yield result

    def ingest(self, stream: str, data: pd.DataFrame | DataFrame) -> IngestReport:
        """Append a batch to a stream, routed to parts by timestamp, then run maintenance (rows for
        earlier parts are late data: every view part that depends on them is repaired).

        A Spark DataFrame is read twice, once to count and check it and once to write it; persist
        it first if computing it is expensive (nondeterministic plans are cached automatically, and
        a batch whose second read puts rows in other parts is redone from a cache)."""
        with self._writing():
            definition = self._require(stream, ("stream",))
            frame = self.ingester.to_frame(data)
            if frame.columns:   # errors have no statement text to point into
                frame = conform_by_name(frame, definition.schema, ViewDFError)
            report = self.ingester.append_stream(definition, frame, ViewDFError)
            report.steps = self._maintain()
            report.repair = self.last_repair
            report.failures = [str(f) for f in self.maintainer.failures]
            for failure in report.failures:   # statements report failures in their message instead
                warnings.warn(MaintenanceWarning(failure), stacklevel=2)
            return report

    def recompute(self, view: str, part_timestamp: TimestampLike, scope: int | None = None) -> pd.DataFrame:
        """The view part containing ``part_timestamp``, computed from scratch (RECOMPUTE). With
        ``scope``, ranges open below (``S[.. j]``, e.g. a pattern view's Direct strategy) read only
        their last ``scope`` parts."""
        if scope is not None and scope < 1:
            raise ValueError("scope must be at least 1 part")
        with self._reading():
            definition = self._require(view, ("view",))
            subscript = self._subscript(definition, part_timestamp)
            frame = self.maintainer.recompute(definition, subscript, scope)
            return check_runtime(frame.toPandas, f"recomputing {view}")

    def read_part(self, name: str, part_timestamp: TimestampLike) -> pd.DataFrame:
        """The stored rows of the part of ``name`` containing ``part_timestamp``."""
        with self._reading():
            definition = self._require(name, ("stream", "view"))
            subscript = self._subscript(definition, part_timestamp)
            frame = self.store.read_parts(definition, self.catalog.state(name), [subscript])
            return frame.toPandas()

    def parts(self, name: str | None = None) -> pd.DataFrame:
        """Part metadata (rows, compute time, lineage, last update) of one object or all."""
        with self._reading():
            definition = self._require(name, ("stream", "view")) if name else None
            return inspect.parts_table(self.catalog, definition)

    @property
    def maintenance(self) -> str:
        """``auto`` (maintain on every change) or ``manual`` (only when stepped)."""
        return self.catalog.settings.get("maintenance", "auto")

    def set_maintenance(self, mode: str) -> list[StepReport]:
        """Switch maintenance mode; switching to auto computes everything that is ready."""
        if mode not in ("auto", "manual"):
            raise ViewDFError(f"maintenance mode must be 'auto' or 'manual', not {mode!r}")
        with self._writing():
            if mode != self.maintenance:
                self.catalog.commit([Setting("maintenance", mode)])
            return self._maintain()

    def step(self, view: str | None = None, n: int | None = 1, plan: bool = False) -> list[StepReport]:
        """Compute the next ready part (or ``n`` parts; all with ``n=None``) in dependency order.

        With ``view``, compute that view's next part; it is an error if it is not ready.
        """
        with self._writing():
            definition = self._require(view, ("view",)) if view else None
            if definition is not None and self.maintainer.next_step(definition) is None:
                raise ViewDFError(self._not_ready(definition))
            return self.maintainer.step(definition, n, plan)

    def pending(self) -> pd.DataFrame:
        """Each view's next part and every part it references, with whether each exists."""
        with self._reading():
            return self.maintainer.pending()

    def history(self) -> list[StepReport]:
        """The most recent maintenance steps (automatic or stepped), oldest first."""
        return list(self.maintainer.history)

    def _maintain(self) -> list[StepReport]:
        """Repair view parts that late data changed (in any mode), then, in auto mode, compute
        everything that is ready; failures are recorded in ``maintainer.failures``, not raised."""
        repair = RepairReport() if self.repairer.pending else None
        steps: list[StepReport] = []
        failures = []
        while True:
            progress = 0
            if repair is not None and self.repairer.pending:
                done = self.repairer.run()
                repair.add(done)
                steps += done.steps
                progress += len(done.steps)
            if self.maintenance == "auto":
                computed = self.maintainer.cascade()
                steps += computed
                failures += self.maintainer.failures
                progress += len(computed)
            if not self.repairer.pending or not progress:
                break      # a repair waiting for parts that computed nothing new waits for the next change
        self.last_repair = repair
        failures = (repair.failures if repair is not None else []) + failures
        self.maintainer.failures = list({(f.view, f.subscript): f for f in failures}.values())
        self.retention.apply()
        sweep(self.catalog, self.fs, VACUUM_RETAIN_SECONDS)
        return steps

    def _maintenance_note(self) -> str:
        """Failures of the latest cascade, as a sentence to append to a statement's message."""
        return "".join(f" Warning: {failure}; {failure.view} and the views that read it are behind until "
                       f"this is fixed." for failure in self.maintainer.failures)

    def _not_ready(self, definition: ObjectDef) -> str:
        step = self.maintainer.pending_step(definition)
        if step is None:
            return f"{definition.name} is not ready: its sources have no parts yet"
        waiting = [r for r in step.refs if not self.maintainer.timeline.available(r, definition)]
        stamp = format_part(step.subscript, definition.partition_length)
        if not waiting:
            return f"{definition.name} is not ready: its next part {stamp} is after the newest stream data"
        missing = ", ".join(f"{r.binding.name}[{r.last}]" for r in waiting)
        return f"{definition.name} is not ready: its next part {stamp} waits for {missing}"

    def close(self) -> None:
        """Drop cached parts. The SparkSession is left running."""
        self.store.cache.clear()

    # -- helpers -------------------------------------------------------------------------
    def _require(self, name: str, kinds: tuple[str, ...], statement: st.Statement | None = None,
                 at: st.Name | None = None) -> ObjectDef:
        definition = self.catalog.get(name)
        if definition is None or definition.kind not in kinds:
            what = " or ".join(kinds)
            message = f"no {what} named '{name}'"
            if definition is not None:
                message = f"'{name}' is a {definition.kind}, not a {what}"
            if statement is not None and at is not None:
                raise statement.fragment.error(message, at.start, at.end)
            raise ViewDFError(message)
        return definition

    def _subscript(self, definition: ObjectDef, part_timestamp: TimestampLike) -> int:
        try:
            return subscript_of(part_timestamp, definition.partition_length)
        except ValueError as exc:
            raise ViewDFError(str(exc)) from None

    def _parts_frame(self) -> DataFrame:
        table = inspect.parts_table(self.catalog)
        if table.empty:
            return self.spark.createDataFrame(
                [], "name string, part bigint, part_timestamp timestamp, rows bigint, compute_seconds double, "
                    "how string, lineage string, last_updated timestamp")
        return self.spark.createDataFrame(table)

    def _compile_adhoc(self, fragment) -> CompiledQuery:
        return compile_query(fragment, catalog_lookup(self.catalog), Scope.ADHOC)

    def _query(self, fragment) -> tuple[DataFrame, CompiledQuery]:
        query = self._compile_adhoc(fragment)
        refs = self.maintainer.timeline.resolve(query, None, None)
        for ref in refs:
            if ref.binding.kind is not RefKind.PARTS or ref.binding.lower is not ref.binding.upper:
                continue
            start = self.maintainer.timeline.start(ref.definition)
            newest = self.maintainer.timeline.newest(ref.definition)
            if start is None or newest is None or not start <= ref.last <= newest:
                span = "it has no parts" if start is None or newest is None else \
                    f"its parts run from {start} to {newest}"
                raise fragment.error(f"{ref.definition.name} has no part {ref.last} ({span})",
                                     ref.binding.start, ref.binding.end)
        with self.maintainer.runner.bound(query, refs) as frame:
            return frame, query

    # -- statements ----------------------------------------------------------------------
    def _dispatch(self, statement: st.Statement) -> Result:
        handler = getattr(self, f"_run_{type(statement).__name__}")
        try:
            return handler(statement)
        except ViewDFError as error:
            # Parts are computed from the stored definition, so errors found then point into the statement
            # alone; when it is this statement, point into the whole text it was written in.
            fragment = statement.fragment
            if error.text is not None and error.text != fragment.source and error.text == fragment.text:
                raise error.located(fragment.source, fragment.start) from None
            raise

    def _check_new_name(self, statement: st.Statement, name: st.Name) -> None:
        if self.catalog.get(name.text) is not None or name.key == CATALOG_VIEW:
            raise statement.fragment.error(f"'{name.text}' already exists", name.start, name.end)

    def _unchanged(self, statement: st.CreateStream | st.CreateTable | st.CreateViewDF | st.CreateQueryView,
                   kind: str) -> Result | None:
        """``IF NOT EXISTS`` or ``OR REPLACE`` naming an object that exists: a Result saying nothing changed
        when its definition is the same; an error when IF NOT EXISTS meets another definition; None when
        the statement goes on (to create, or to replace)."""
        creation, name = statement.creation, statement.name
        existing = self.catalog.get(name.text)
        if existing is None or not (creation.if_not_exists or creation.or_replace):
            return None
        if existing.kind != kind:
            raise statement.fragment.error(f"'{existing.name}' is a {existing.kind}, not a {kind}",
                                           name.start, name.end)
        if existing.owner:
            raise statement.fragment.error(f"'{existing.name}' is a helper view of {existing.owner}",
                                           name.start, name.end)
        stored = parse(existing.origin or existing.definition)[0]
        if getattr(stored, "creation", None) is not None and stored.creation.signature == creation.signature:
            return Result(statement, f"{kind.capitalize()} {existing.name} already exists with this definition; "
                                     f"nothing changed.")
        if creation.or_replace:
            return None
        hint = "CREATE OR REPLACE VIEW redefines it" if kind == "view" else \
            f"drop it first (DROP {kind.upper()} {existing.name})"
        raise statement.fragment.error(f"{kind} '{existing.name}' already exists with another definition; {hint}",
                                       name.start, name.end)

    def _schema(self, statement: st.Statement, columns) -> StructType:
        try:
            schema = self.spark.createDataFrame([], columns.text).schema
        except PySparkException as exc:
            error = spark_error(exc)
            raise columns.error(f"bad column list: {error.message}", columns.start) from None
        stream_schema_check(schema, lambda message: columns.error(message, columns.start))
        return schema

    def _run_CreateStream(self, statement: st.CreateStream) -> Result:
        unchanged = self._unchanged(statement, "stream")
        if unchanged is not None:
            return unchanged
        self._check_new_name(statement, statement.name)
        schema = self._schema(statement, statement.columns)
        timestamps = [f for f in schema.fields if isinstance(f.dataType, (TimestampType, TimestampNTZType))]
        if statement.timestamp is not None:
            found = [f for f in schema.fields if f.name.lower() == statement.timestamp.text.lower()]
            if not found or found[0] not in timestamps:
                raise statement.fragment.error(f"'{statement.timestamp.text}' is not a TIMESTAMP column",
                                               statement.timestamp.start, statement.timestamp.end)
            column = found[0].name
        elif len(timestamps) == 1:
            column = timestamps[0].name
        else:
            raise statement.fragment.error("name the timestamp column with TIMESTAMP <column>",
                                           statement.name.start, statement.name.end)
        definition = ObjectDef("stream", statement.name.text, uuid.uuid4().hex[:12], schema.json(),
                               statement.fragment.text, time.time(), statement.partition_length,
                               timestamp_column=column, unique=self._unique_columns(statement, schema))
        length = statement.partition_length
        options = Options(definition.key, {"lateness": statement.lateness.parts(length) if statement.lateness else None,
                                           "retain": statement.retain.parts(length) if statement.retain else None})
        self.catalog.commit([Create(definition), options])
        return Result(statement, f"Created stream {definition.name} (PARTITION LENGTH "
                                 f"{definition.partition_length}, TIMESTAMP {column}{self._options_text(definition)}).")

    @staticmethod
    def _unique_columns(statement: st.CreateStream, schema: StructType) -> tuple[str, ...]:
        """The UNIQUE (..) PER PART columns as the schema spells them."""
        columns: list[str] = []
        for name in statement.unique:
            found = [f.name for f in schema.fields if f.name.lower() == name.key]
            if not found:
                raise statement.fragment.error(f"UNIQUE names '{name.text}', which is not a column of "
                                               f"{statement.name.text}", name.start, name.end)
            if found[0] in columns:
                raise statement.fragment.error(f"'{name.text}' is named twice in UNIQUE", name.start, name.end)
            columns.append(found[0])
        return tuple(columns)

    def _options_text(self, definition: ObjectDef) -> str:
        state = self.catalog.state(definition.name)
        text = f", ALLOWED LATENESS {state.lateness} PARTS" if state.lateness is not None else ""
        text += f", {definition.unique_clause}" if definition.unique else ""
        return text + (f", RETAIN {state.retain} PARTS" if state.retain is not None else "")

    def _run_Alter(self, statement: st.Alter) -> Result:
        definition = self._require(statement.name.text, (statement.kind.lower(),), statement, statement.name)
        value = statement.extent.parts(definition.partition_length) if statement.extent is not None else None
        self.catalog.commit([Options(definition.key, {statement.option: value})])
        steps = self._maintain()
        return Result(statement, f"{definition.name}: {self._options_text(definition).lstrip(', ') or 'no bounds'}."
                      + self._maintenance_note(), steps=steps)

    def _run_CreateTable(self, statement: st.CreateTable) -> Result:
        unchanged = self._unchanged(statement, "table")
        if unchanged is not None:
            return unchanged
        self._check_new_name(statement, statement.name)
        if statement.columns is not None:
            schema = self._schema(statement, statement.columns)
            frame = None
        else:
            frame, _ = self._query(statement.query)
            schema = frame.schema
        definition = ObjectDef("table", statement.name.text, uuid.uuid4().hex[:12], schema.json(),
                               statement.fragment.text, time.time())
        if frame is not None:
            # The rows are written before the table is published, so a failing query leaves nothing behind.
            rows = self.ingester.append_table(definition, frame, statement.query.error, create=True)
            return Result(statement, f"Created table {definition.name} with {plural(rows, 'row')}.")
        self.catalog.commit([Create(definition)])
        return Result(statement, f"Created table {definition.name}.")

    def _publish(self, views: Iterable[tuple[st.CreateViewDF, dict]]) -> list[StepReport]:
        """Define each view in turn and publish them all with their backfill, all or nothing.

        ``views`` yields (statement, catalog fields to set); it may be a generator whose later
        statements depend on the views defined before them."""
        defined: list[ObjectDef] = []
        try:
            with self.catalog.transaction():
                for statement, fields in views:
                    definition = replace(self.maintainer.definer.define(statement), **fields)
                    self.catalog.commit([Create(definition)])
                    defined.append(definition)
                if self.maintenance != "auto":
                    return []
                return [step for d in defined for step in self.maintainer.step(self.catalog.get(d.name), n=None)]
        except ViewDFError:
            for definition in defined:
                self.maintainer.forget(definition)
                self.store.delete_object(definition)
            raise

    def _created(self, statement: st.Statement, name: str, description: str, steps: list[StepReport]) -> Result:
        mine = [s for s in steps if s.view == name]
        message = f"Created view {name} ({description})"
        if mine:
            message += f"; computed {plural(len(mine), 'part')} up to {mine[-1].part_timestamp:%Y-%m-%d %H:%M:%S}"
        return Result(statement, message + ".", steps=steps)

    def _run_CreateViewDF(self, statement: st.CreateViewDF) -> Result:
        return self._create_view(statement)

    def _run_CreateQueryView(self, statement: st.CreateQueryView) -> Result:
        return self._create_view(statement)

    def _create_view(self, statement: st.CreateViewDF | st.CreateQueryView) -> Result:
        """CREATE VIEW, with IF NOT EXISTS or OR REPLACE [CASCADE]."""
        unchanged = self._unchanged(statement, "view")
        if unchanged is not None:
            return unchanged
        old = self.catalog.get(statement.name.text) if statement.creation.or_replace else None
        return self._define_view(statement) if old is None else self._replace_view(statement, old)

    def _define_view(self, statement: st.CreateViewDF | st.CreateQueryView) -> Result:
        """Define a new view (a ViewDF, or a query translated into ViewDFs) and compute its parts."""
        if isinstance(statement, st.CreateViewDF):
            steps = self._publish([(statement, {})])
            definition = self.catalog.get(statement.name.text)
            return self._created(statement, definition.name, f"PARTITION LENGTH {definition.partition_length}",
                                 steps)
        self._check_new_name(statement, statement.name)
        clause = find_pattern(statement.query)
        if clause is not None:
            plan = plan_pattern_view(statement, clause, self.catalog, self.spark)
        else:
            plan = plan_window_view(statement, self.catalog, self.maintainer.definer)
        steps = self._publish(plan.statements(self.catalog))
        return self._created(statement, statement.name.text, plan.description, steps)

    def _replace_view(self, statement: st.CreateViewDF | st.CreateQueryView, old: ObjectDef) -> Result:
        """OR REPLACE of a view whose definition changed: drop it, define it anew and compute its parts;
        with CASCADE, the views reading it are defined again from their own text and recomputed. One
        catalog transaction: if anything fails, the old views stay as they were."""
        name = statement.name
        doomed = self.catalog.downstream(old.name)
        readers = [d for d in self.catalog.views() if d in doomed[1:] and d.owner is None]
        if readers and not statement.creation.cascade:
            names = ", ".join(d.name for d in readers)
            raise statement.fragment.error(
                f"cannot replace {old.name}: {names} read{'s' if len(readers) == 1 else ''} it; "
                f"CREATE OR REPLACE VIEW {old.name} CASCADE AS ... recomputes {'it' if len(readers) == 1 else 'them'} "
                f"too", name.start, name.end)
        with self.catalog.transaction():
            self._drop_objects(doomed)
            result = self._define_view(statement)
            for reader in readers:
                again = parse(reader.origin or reader.definition)[0]
                assert isinstance(again, (st.CreateViewDF, st.CreateQueryView))
                try:
                    result.steps += self._define_view(again).steps
                except ViewDFError as error:
                    raise statement.fragment.error(f"{reader.name}, which reads {old.name}, cannot be defined over "
                                                   f"the new {old.name}: {error.message}; nothing was replaced",
                                                   name.start, name.end) from None
        message = "Replaced" + result.message.removeprefix("Created")
        if readers:
            message = message.rstrip(".") + f"; recomputed {', '.join(d.name for d in readers)} (CASCADE)."
        return Result(statement, message, steps=result.steps)

    def _target(self, statement: st.Statement, name: st.Name) -> ObjectDef:
        return self._require(name.text, ("stream", "table"), statement, name)

    def _write(self, statement: st.Statement, definition: ObjectDef, frame: DataFrame, error) -> Result:
        if definition.kind == "table":
            rows = self.ingester.append_table(definition, frame, error)
            return Result(statement, f"Inserted {plural(rows, 'row')} into {definition.name}.")
        report = self.ingester.append_stream(definition, frame, error)
        report.steps = self._maintain()
        report.repair = self.last_repair
        return Result(statement, f"Inserted {report}." + self._maintenance_note(), steps=report.steps)

    def _run_Insert(self, statement: st.Insert) -> Result:
        definition = self._target(statement, statement.target)
        query = statement.query
        error = lambda message: query.error(message)  # noqa: E731
        frame, _ = self._query(query)
        columns = [c.text for c in statement.columns] if statement.columns else None
        frame = conform_by_position(frame, definition.schema, columns, error)
        return self._write(statement, definition, frame, error)

    def _run_Load(self, statement: st.Load) -> Result:
        definition = self._target(statement, statement.target)
        error = lambda message: statement.fragment.error(message, statement.path_at)  # noqa: E731
        frame = self.ingester.read_file(statement.path, statement.format, statement.options,
                                        definition.schema, error)
        return self._write(statement, definition, frame, error)

    def _run_Query(self, statement: st.Query) -> Result:
        frame, query = self._query(statement.query)
        return Result(statement, frame=frame, query=query)

    def _run_SetMaintenance(self, statement: st.SetMaintenance) -> Result:
        steps = self.set_maintenance(statement.mode)
        message = f"Maintenance is {statement.mode}."
        if steps:
            message += f" Computed {plural(len(steps), 'pending view part')}."
        return Result(statement, message + self._maintenance_note(), steps=steps)

    def _run_Step(self, statement: st.Step) -> Result:
        if statement.view is not None:
            definition = self._require(statement.view.text, ("view",), statement, statement.view)
            if self.maintainer.next_step(definition) is None:
                raise statement.fragment.error(self._not_ready(definition), statement.view.start, statement.view.end)
        steps = self.step(statement.view.text if statement.view else None, statement.count, statement.plan)
        message = f"Computed {plural(len(steps), 'view part')}." if steps else "Nothing is ready to compute."
        return Result(statement, message, steps=steps)

    def _run_Show(self, statement: st.Show) -> Result:
        timeline = self.maintainer.timeline
        if statement.what == "PENDING":
            return Result(statement, table=self.maintainer.pending())
        if statement.what == "STREAMS":
            return Result(statement, table=inspect.streams_table(self.catalog))
        if statement.what == "VIEWS":
            return Result(statement, table=inspect.views_table(self.catalog, timeline))
        if statement.what == "TABLES":
            return Result(statement, table=inspect.tables_table(self.catalog))
        definition = self._require(statement.name.text, ("stream", "view"), statement, statement.name)
        table = inspect.parts_table(self.catalog, definition)
        if statement.changed_since is not None:
            try:
                since = to_utc(statement.changed_since).tz_localize(None)
            except ValueError as exc:
                raise statement.fragment.error(str(exc), statement.changed_since_at) from None
            table = table[table["last_updated"] >= since].reset_index(drop=True)
        return Result(statement, table=table)

    def _run_Describe(self, statement: st.Describe) -> Result:
        definition = self._require(statement.name.text, ("stream", "view", "table"), statement, statement.name)
        return Result(statement, table=inspect.describe_table(definition), detail=inspect.describe_text(definition))

    def _run_Drop(self, statement: st.Drop) -> Result:
        kind = statement.kind.lower()
        definition = self.catalog.get(statement.name.text)
        if definition is None and statement.if_exists:
            return Result(statement, f"No {kind} named {statement.name.text}; nothing dropped.")
        definition = self._require(statement.name.text, (kind,), statement, statement.name)
        owner = self.catalog.get(definition.owner) if definition.owner else None
        if owner is not None:
            raise statement.fragment.error(f"{definition.name} is a helper view of {owner.name}; "
                                           f"DROP VIEW {owner.name} drops it", statement.name.start, statement.name.end)
        doomed = self.catalog.downstream(definition.name)
        if len(doomed) > 1 and not statement.cascade:
            names = ", ".join(d.name for d in doomed[1:])
            raise statement.fragment.error(f"cannot drop {definition.name}: {names} "
                                           f"{agreeing(len(doomed) - 1, 'depends', 'depend')} on it; "
                                           f"use DROP {statement.kind} {definition.name} CASCADE",
                                           statement.name.start, statement.name.end)
        dropped = self._drop_objects(doomed)
        return Result(statement, f"Dropped {', '.join(d.name for d in dropped)}. The data files are deleted after "
                                 f"{format_duration(VACUUM_RETAIN_SECONDS)} (VACUUM RETAIN 0 SECONDS deletes them now).")

    def _drop_objects(self, doomed: list[ObjectDef]) -> list[ObjectDef]:
        """Drop ``doomed`` (an object and the views reading it) and the helper views they own, readers
        first; return them in that order."""
        doomed = list(doomed)
        for item in list(doomed):          # translated views take their helper views with them
            doomed.extend(d for d in self.catalog.objects.values()
                          if d.owner and d.owner.lower() == item.key and d not in doomed)
        ordered = list(reversed(doomed))
        now = time.time()
        self.catalog.commit([Drop(d.key, now) for d in ordered])
        for d in ordered:
            self.maintainer.forget(d)
            self.store.forget(d)
        return ordered

    def explain_view(self, view: str) -> Result:
        """EXPLAIN VIEW of ``view``: how it is maintained, and its next step's query and plans."""
        with self._reading():
            return self._run_ExplainView(st.ExplainView(Fragment(view, 0, len(view)), st.Name(view, 0, len(view))))

    def _run_ExplainView(self, statement: st.ExplainView) -> Result:
        """A summary first (a pattern's FSM, a window's strategies, what each next step reads), then
        the ViewDFs, queries and Spark plans as sections that notebooks show folded."""
        definition = self._require(statement.name.text, ("view",), statement, statement.name)
        summary: list[str] = []
        figure, tables, explained = None, [], [definition]
        plan = replan(definition, self.catalog, self.spark)
        if plan is not None:
            helper = self.catalog.get(plan.translation.helper)
            figure, tables = fsm_svg(plan.fsm), explain_tables(plan)
            summary.append(f"{definition.name} is a pattern query, translated into the FSM above, a Helper ViewDF "
                           f"({helper.name}) that keeps each group's live runs, and a final ViewDF.")
            explained = [helper, definition]
        if definition.notes:
            summary.append(definition.notes)
        sections: list[tuple[str, str]] = []
        for view in explained:
            line, plans = self._explain_steps(view)
            summary += [line, self.maintainer.jobless_summary(view)]
            sections += [(f"ViewDF of {view.name}", inspect.describe_text(view)), *plans]
        summary += [self.maintainer.range_plan(view).describe(view.name) for view in
                    [*explained, *(d for d in self.catalog.views() if d.owner and d.owner.lower() == definition.key
                                   and d not in explained)]]
        summary.append("The parts each next step reads:")
        table = self.maintainer.pending()
        return Result(statement, detail="\n\n".join(summary),
                      table=table[table["view"].isin([view.name for view in explained])].reset_index(drop=True),
                      figure=figure, tables=tables, sections=sections)

    def _explain_steps(self, definition: ObjectDef) -> tuple[str, list[tuple[str, str]]]:
        """A line on the view's next part, and the resolved query and Spark's plans of a step: the next
        one when it is ready, else the newest stored part computed again, so the plans read stored parts."""
        step = self.maintainer.pending_step(definition)
        if step is None:
            return f"Next part of {definition.name}: unknown until every source has a part.", []
        empty_because = self.maintainer.known_empty(step) if step.ready else None
        line = (f"Next part: {definition.name}[{step.subscript}] "
                f"({format_part(step.subscript, definition.partition_length)}), {step.how.upper()}, "
                f"{'ready' if step.ready else 'waiting'}"
                + (f", recorded empty without a Spark job ({empty_because})." if empty_because else "."))
        shown, which = step, f"the next part of {definition.name}"
        latest = None if step.ready else self.maintainer.latest_step(definition)
        if latest is not None and latest.ready:
            shown, which = latest, (f"{definition.name}[{latest.subscript}] "
                                    f"({format_part(latest.subscript, definition.partition_length)}), "
                                    f"the newest stored part")
        try:
            plans = self._plans(definition, shown)
        except ViewDFError:             # the newest part's inputs were dropped by retention
            shown, which = step, f"the next part of {definition.name}"
            plans = self._plans(definition, shown)
        return line, [(f"Query of {which}", resolved_sql(shown.query, shown.refs)),
                      (f"Spark plans of {which}", plans)]

    def _plans(self, definition: ObjectDef, step: PendingStep) -> str:
        """Spark's logical and physical plans for computing ``step``."""
        with self.maintainer.runner.bound(step.query, step.refs, schema=definition.schema,
                                          clause=step.how.upper()) as frame:
            return explain_text(frame, mode="extended").strip()

    def _run_Verify(self, statement: st.Verify) -> Result:
        definition = self._require(statement.name.text, ("view",), statement, statement.name)
        if self.maintainer.compiled(definition).recompute is None:
            raise statement.fragment.error(f"{definition.name} has no RECOMPUTE clause to verify against",
                                           statement.name.start, statement.name.end)
        tolerance = DEFAULT_TOLERANCE if statement.tolerance is None else statement.tolerance
        rows = []
        state = self.catalog.state(definition.name)
        for subscript in sorted(state.parts):
            found = self._verify_part(definition, subscript, tolerance).comparison
            rows.append({"part": subscript, "part_timestamp": format_part(subscript, definition.partition_length),
                         "stored_rows": state.parts[subscript].rows, "missing_rows": found.missing,
                         "extra_rows": found.extra, "max_difference": found.max_difference, "equal": found.equal})
        table = pd.DataFrame(rows, columns=["part", "part_timestamp", "stored_rows", "missing_rows", "extra_rows",
                                            "max_difference", "equal"]).astype({"max_difference": float})
        bad = int((~table["equal"]).sum()) if len(table) else 0
        message = (f"{definition.name}: all {plural(len(table), 'part')} equal their recomputation" if not bad else
                   f"{definition.name}: {bad} of {plural(len(table), 'part')} differ from their recomputation")
        drift = table["max_difference"].max()      # NaN when every part was compared exactly
        if not bad and drift > 0:                    # some float values were only equal within it
            message += (f", FLOAT/DOUBLE values within a relative {tolerance:g} "
                        f"(largest difference {drift:.3g})")
        return Result(statement, message + ".", table=table)

    def verify_part(self, view: str, part_timestamp: TimestampLike,
                    tolerance: float = DEFAULT_TOLERANCE) -> PartCheck:
        """The stored part of ``view`` containing ``part_timestamp`` against its recomputation, compared as
        VERIFY VIEW compares them (FLOAT/DOUBLE columns within a relative ``tolerance``; 0 is exact)."""
        with self._reading():
            definition = self._require(view, ("view",))
            return self._verify_part(definition, self._subscript(definition, part_timestamp), tolerance)

    def _verify_part(self, definition: ObjectDef, subscript: int, tolerance: float) -> PartCheck:
        started = time.perf_counter()
        fresh = self.maintainer.recompute(definition, subscript)        # computed here (a local checkpoint)
        seconds = time.perf_counter() - started
        stored = self.store.read_parts(definition, self.catalog.state(definition.name), [subscript])
        comparison = check_runtime(lambda: compare_rows(stored.drop(PART_TIMESTAMP), fresh, tolerance),
                                   "verifying")
        return PartCheck(comparison, seconds)

    def _run_Vacuum(self, statement: st.Vacuum) -> Result:
        report = vacuum(self.catalog, self.fs, statement.retain_seconds)
        kept = (f"; kept {report.kept} more, unreferenced for less than RETAIN "
                f"{format_duration(statement.retain_seconds)}" if report.kept else "")
        return Result(statement, f"Deleted {plural(len(report.deleted), 'unreferenced data folder')}{kept}.")

    def _run_Seal(self, statement: st.Seal) -> Result:
        definition = self._require(statement.name.text, ("stream",), statement, statement.name)
        try:
            through = subscript_of(statement.through, definition.partition_length)
        except ValueError as exc:
            raise statement.fragment.error(str(exc), statement.through_at) from None
        newest = self.catalog.state(definition.name).newest
        if newest is not None and through <= newest:
            return Result(statement, f"{definition.name} is already sealed through "
                                     f"{format_part(newest, definition.partition_length)}.")
        if newest is not None and through - newest > MAX_NEW_PARTS:
            raise statement.fragment.error(
                f"sealing through {statement.through} would create {through - newest:,} empty parts of "
                f"{definition.name}; the limit is {MAX_NEW_PARTS:,}", statement.through_at)
        self.catalog.commit([Advance(definition.key, through, time.time())])
        steps = self._maintain()
        return Result(statement, f"Sealed {definition.name} through "
                                 f"{format_part(through, definition.partition_length)}." + self._maintenance_note(),
                      steps=steps)
