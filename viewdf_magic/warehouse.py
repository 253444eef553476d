"""The Warehouse: the Python API over the engine (the language, catalog, storage and maintainer wired
together) and the statement handlers."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Callable, Iterator

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from .engine import catalog_tables
from .engine.engine import Engine
from .engine.conform import conform_by_name
from .engine.ingest import IngestReport
from .engine.reads import Reads
from .engine.results import MaintenanceWarning, PartCheck, Result, timed
from .errors import ViewDFError
from .handlers import dispatch
from .handlers.data import takes_stream_rows
from .language import statements as st
from .catalog.filesystem import qualify
from .catalog.model import PART_TIMESTAMP, LineageRange, ObjectDef, PartMeta
from .language.parser import parse
from .language.source import Fragment
from .maintainer.compare import DEFAULT_TOLERANCE
from .maintainer.maintainer import StepReport
from .maintainer.repair import RepairReport
from .storage.spark_errors import check_runtime
from .timeparts import TimestampLike

# What front ends (notebook/, cli) use besides the Warehouse: the records its methods and reads return.
__all__ = ["LineageRange", "MaintenanceWarning", "ObjectDef", "PART_TIMESTAMP", "PartCheck", "PartMeta", "Reads",
           "Result", "StepReport", "Warehouse", "statement_count", "warehouse_location"]


def statement_count(text: str) -> int:
    """How many statements ``text`` holds; bad input raises a ViewDFError with its position. Needs no
    Spark session."""
    return len(parse(text))


def warehouse_location(path: str) -> str:
    """The URI a warehouse at ``path`` is known by (local paths become absolute ``file:`` URIs)."""
    return qualify(path)


class Warehouse:
    """A ViewDF warehouse at ``path`` (local, ``file:``, ``hdfs:`` or ``s3a:``).

    With no ``spark`` session, an embedded local one is started. ``spark`` may be a classic
    session on any master or a Spark Connect session; with Spark Connect, this process writes the
    catalog and the server writes the parts, so ``path`` must be storage both reach.
    """

    def __init__(self, path: str, spark: SparkSession | None = None, *, progress: bool = True,
                 lock_timeout: float | None = None) -> None:
        self.engine = Engine(path, spark, progress=progress, lock_timeout=lock_timeout)
        engine = self.engine
        self.spark, self.fs, self.path, self.catalog, self.store = (engine.spark, engine.fs, engine.path,
                                                                    engine.catalog, engine.store)
        self.maintainer, self.repairer, self.retention, self.ingester, self.writer = (
            engine.maintainer, engine.repairer, engine.retention, engine.ingester, engine.writer)
        self.recovered: list[StepReport] = engine.recovered   # steps a crashed process left, done on opening
        self.reads: Reads = engine.reads     # what the notebook's widgets read (definitions, parts, lineage)

    @property
    def last_repair(self) -> RepairReport | None:
        """The latest maintenance that repaired late data, or None."""
        return self.engine.last_repair

    def execute(self, text: str) -> pd.DataFrame | None:
        """Run ``;``-separated statements; return the last query's rows as pandas, or None. A query over
        views that are not up to date warns (``MaintenanceWarning``) with its ``Result.note``."""
        results = self.run(text)
        for result in reversed(results):
            if result.has_rows:
                if result.note:
                    warnings.warn(MaintenanceWarning(result.note), stacklevel=2)
                return result.to_pandas()
        return None

    def run(self, text: str) -> list[Result]:
        """Run ``;``-separated statements and return one Result for each."""
        return list(self.run_iter(text))

    def run_iter(self, text: str) -> Iterator[Result]:
        """Run ``;``-separated statements one at a time, yielding each Result as it is ready.

        Nothing runs if any statement fails to parse; a failing statement stops the rest
        (the ones before it have taken effect). Consecutive LOADs and INSERTs into streams are
        maintained once, after the last of them (``takes_stream_rows``): a view that reads several of
        them computes its part once, and views of different streams step together."""
        statements = parse(text)
        engine = self.engine
        for k, statement in enumerate(statements):
            following = statements[k + 1] if k + 1 < len(statements) else None
            with (engine.reading() if statement.read_only else engine.writing()):
                deferred = takes_stream_rows(engine, statement) and following is not None \
                    and takes_stream_rows(engine, following)
                engine.maintenance_deferred = deferred
                try:
                    result = dispatch(engine, statement)
                except ViewDFError:        # the batches taken before it are maintained, as if each were alone
                    engine.maintenance_deferred = False
                    if engine.maintenance_owed:
                        engine.maintain()
                    raise
                finally:
                    engine.maintenance_deferred = False
                if engine.maintenance_owed and not deferred:     # the last of them took no rows
                    steps, seconds = timed(engine.maintain)
                    result = dataclasses.replace(result, steps=[*result.steps, *steps],
                                                 maintenance_seconds=(result.maintenance_seconds or 0.0) + seconds)
            yield result

    def ingest(self, stream: str, data: pd.DataFrame | DataFrame) -> IngestReport:
        """Append a batch to a stream, routed to parts by timestamp, then run maintenance (rows for
        earlier parts are late data: every view part that depends on them is repaired).

        A Spark DataFrame is read twice, once to count and check it and once to write it; persist
        it first if computing it is expensive (nondeterministic plans are cached automatically, and
        a batch whose second read puts rows in other parts is redone from a cache)."""
        with self.engine.writing():
            result = dispatch(self.engine, st.Ingest(*_named(stream), data))
        report = result.ingested
        assert report is not None      # an ingest's result carries its report
        for failure in report.failures:   # statements report failures in their message instead
            warnings.warn(MaintenanceWarning(failure), stacklevel=2)
        return report

    def sink(self, stream: str, name: str | None = None) -> Callable[[DataFrame, int], None]:
        """A ``foreachBatch`` function that takes each micro-batch of a Structured Streaming query into
        ``stream`` exactly once, then maintains the views as the warehouse's maintenance mode says::

            query = events.writeStream.foreachBatch(warehouse.sink("M")) \\
                .option("checkpointLocation", "checkpoints/M").start()

        ``name`` (default: the stream's) tells the queries feeding one stream apart: the newest batch id of
        each is kept in the catalog with the batch's rows, so a batch Spark replays after a crash is skipped
        (a query with a new checkpoint starts at batch 0 again and needs a name of its own: an older batch id
        than the newest taken is refused).
        Late rows are repaired, too-late rows and bad rows fail the batch (and so the query) with
        ``LOAD``'s messages, and nothing of that batch is written. Classic sessions only: on Spark Connect,
        ``foreachBatch`` runs its function in a server-side process."""
        key = (name or stream).lower()

        def take(batch: DataFrame, batch_id: int) -> None:
            engine = self.engine
            with engine.writing():
                definition = engine.require(stream, ("stream",))
                frame = conform_by_name(batch, definition.schema, ViewDFError) if batch.columns else batch
                report = engine.take_batch(definition, frame, key, batch_id)
                for failure in engine.maintainer.failures if report is not None else ():
                    warnings.warn(MaintenanceWarning(str(failure)), stacklevel=2)
        return take

    def register_views(self, prefix: str = "") -> list[str]:
        """Register every stream and view (not translated views' helpers) as a temporary view of the session,
        so that ``spark.sql`` and ``spark.table`` read them (with ``PART_TIMESTAMP``), and return their names
        (``prefix`` + name).

        They read the parts published when a query is analysed, and are made again after every statement
        this warehouse runs (about 20-40 ms each, so this is off until asked for); a change made by another
        process is seen after this warehouse's next statement, or by calling this again."""
        return self.engine.register_views(prefix)

    def recompute(self, view: str, part_timestamp: TimestampLike, scope: int | None = None) -> pd.DataFrame:
        """The view part containing ``part_timestamp``, computed from scratch (RECOMPUTE). With
        ``scope``, ranges open below (``S[.. j]``, e.g. a pattern view's Direct strategy) read only
        their last ``scope`` parts."""
        if scope is not None and scope < 1:
            raise ValueError("scope must be at least 1 part")
        engine = self.engine
        with engine.reading():
            definition = engine.require(view, ("view",))
            subscript = engine.subscript(definition, part_timestamp)
            frame = engine.maintainer.recompute(definition, subscript, scope)
            return check_runtime(frame.toPandas, f"recomputing {view}")

    def read_part(self, name: str, part_timestamp: TimestampLike) -> pd.DataFrame:
        """The stored rows of the part of ``name`` containing ``part_timestamp``."""
        engine = self.engine
        with engine.reading():
            definition = engine.require(name, ("stream", "view"))
            subscript = engine.subscript(definition, part_timestamp)
            frame = engine.store.read_parts(definition, engine.catalog.state(name), [subscript])
            return frame.toPandas()

    def schema(self, name: str) -> StructType:
        """The columns of the stream, view or table ``name`` (a part's rows also have ``PART_TIMESTAMP``)."""
        with self.engine.reading():
            return self.engine.require(name, ("stream", "view", "table")).schema

    def parts(self, name: str | None = None) -> pd.DataFrame:
        """Part metadata (rows, compute time, lineage, last update) of one object or all."""
        with self.engine.reading():
            definition = self.engine.require(name, ("stream", "view")) if name else None
            return catalog_tables.parts_table(self.catalog, definition)

    @property
    def maintenance(self) -> str:
        """``auto`` (maintain on every change) or ``manual`` (only when stepped)."""
        return self.engine.maintenance

    def set_maintenance(self, mode: str) -> list[StepReport]:
        """Switch maintenance mode; switching to auto computes everything that is ready."""
        return self.engine.set_maintenance(mode)

    def step(self, view: str | None = None, n: int | None = 1, plan: bool = False) -> list[StepReport]:
        """Compute the next ready part (or ``n`` parts; all with ``n=None``) in dependency order.

        With ``view``, compute that view's next part; it is an error if it is not ready.
        """
        return self.engine.step(view, n, plan)

    def pending(self) -> pd.DataFrame:
        """Each view's next part and every part it references, with whether each exists."""
        with self.engine.reading():
            return self.maintainer.pending()

    def history(self) -> list[StepReport]:
        """The most recent maintenance steps (automatic or stepped), oldest first."""
        return list(self.maintainer.history)

    def close(self) -> None:
        """Drop cached parts. The SparkSession is left running."""
        self.engine.close()

    def explain_view(self, view: str) -> Result:
        """EXPLAIN VIEW of ``view``: how it is maintained, and its next step's query and plans."""
        with self.engine.reading():
            return dispatch(self.engine, st.ExplainView(*_named(view)))

    def drop(self, name: str, kind: str = "view", *, cascade: bool = False, if_exists: bool = False) -> Result:
        """DROP ``kind`` (stream, view or table) ``name``: with ``cascade``, the views reading it too."""
        if kind.lower() not in ("stream", "view", "table"):
            raise ValueError(f"kind must be 'stream', 'view' or 'table', not {kind!r}")
        fragment, named = _named(name)
        with self.engine.writing():
            return dispatch(self.engine, st.Drop(fragment, kind.upper(), named, cascade, if_exists))

    def verify_part(self, view: str, part_timestamp: TimestampLike,
                    tolerance: float = DEFAULT_TOLERANCE) -> PartCheck:
        """The stored part of ``view`` containing ``part_timestamp`` against its recomputation, compared as
        VERIFY VIEW compares them (FLOAT/DOUBLE columns within a relative ``tolerance``; 0 is exact)."""
        engine = self.engine
        with engine.reading():
            definition = engine.require(view, ("view",))
            return engine.verify_part(definition, engine.subscript(definition, part_timestamp), tolerance)


def _named(name: str) -> tuple[Fragment, st.Name]:
    """A statement's text and name for a call that names an object (errors point into the name)."""
    return Fragment(name, 0, len(name)), st.Name(name, 0, len(name))
