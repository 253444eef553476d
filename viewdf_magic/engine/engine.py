"""The engine: the warehouse's parts wired together, its locks, and what happens after every
write (late-data repair, the maintenance cascade, retention, compaction, the garbage sweep)."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Iterator

import pandas as pd
from py4j.protocol import Py4JError
from pyspark.sql import DataFrame, SparkSession

from ..catalog.actions import Drop, Setting, SinkBatch, TooLate
from ..catalog.catalog import Catalog
from ..catalog.backends import open_filesystem
from ..catalog.local_fs import LocalFileSystem
from ..catalog.lock import WriterLock
from ..catalog.model import PART_TIMESTAMP, ObjectDef
from . import catalog_tables
from .corrections import ChangeReport, Corrector
from .match_runner import register as register_match_runner
from .ingest import Ingester, IngestReport
from ..errors import Interrupted, RowsRefused, ViewDFError
from ..wording import agreeing, named_spans, plural
from ..language import statements as st
from ..language.parser import VACUUM_RETAIN_SECONDS
from ..language.queries import LATEST, CompiledQuery, RefKind, Scope, compile_query
from ..maintainer.compare import Comparison, compare_rows
from ..maintainer.cancellation import cancel_on_interrupt
from ..maintainer.maintainer import Maintainer, StepReport
from ..maintainer.ranges import RangeFailed
from ..maintainer.repair import RepairReport, Repairer
from ..maintainer.retention import Retention
from ..maintainer.timeline import ResolvedRef
from ..storage.spark_errors import check_runtime
from ..maintainer.verification import lifted_plan, verify_history, verify_runs
from ..maintainer.views import catalog_lookup
from ..session import embedded_session, is_connect_session, list_in_driver, prepare, stopped_jvm
from ..storage.compaction import Compaction
from ..storage.data_source import ViewDFDataSource
from ..storage.parts import PartStore
from ..storage.shared_storage import check_shared_storage
from ..storage.vacuum import sweep
from ..timeparts import TimestampLike, format_part, part_start, subscript_of

from .query_views import recompute_runs
from .session_views import SessionViews
from .reads import Reads
from .results import PartCheck, timed


class Engine:
    """One open warehouse: its catalog, storage and maintainer, the writer lock, and the policy run
    after every change. Statement handlers (``handlers``) and the ``Warehouse`` API call it."""

    def __init__(self, path: str, spark: SparkSession | None = None, *, progress: bool = True,
                 lock_timeout: float | None = None) -> None:
        self.spark = prepare(spark) if spark is not None else embedded_session()
        self.fs = open_filesystem(self.spark, path)
        if isinstance(self.fs, LocalFileSystem):
            list_in_driver(self.spark)
        if is_connect_session(self.spark):
            check_shared_storage(self.spark, self.fs)
        self.path = self.fs.root
        # format("viewdf"): any Spark job reads a view; its PART_TIMESTAMP filters choose the parts read
        self.spark.dataSource.register(ViewDFDataSource)
        self.spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
        register_match_runner(self.spark)      # the search of MATCH_RECOGNIZE views on the automaton plan
        self.catalog = Catalog(self.fs)
        self.store = PartStore(self.spark, self.fs)
        self.maintainer = Maintainer(self.spark, self.catalog, self.store, self._parts_frame, progress)
        maintainer = self.maintainer
        self.repairer = Repairer(self.catalog, maintainer.timeline, maintainer.clause, maintainer.repair_run,
                                 maintainer.run_limit)
        self.retention = Retention(self.catalog, maintainer.timeline, maintainer.compiled, maintainer.clause)
        self.compaction = Compaction(self.catalog, self.store)
        self.ingester = Ingester(self.spark, self.catalog, self.store, self.retention, maintainer,
                                 lambda: self.maintenance == "auto")
        self.corrector = Corrector(self.spark, self.catalog, self.store, self.ingester, maintainer.runner.named)
        self.writer = WriterLock(self.fs, lock_timeout, status=progress)
        self.reads = Reads(self.spark, self.catalog, self.maintainer)
        self.session_views: SessionViews | None = None     # register_views: the session's temporary views
        self._lock = threading.RLock()
        self._since: int | None = None    # catalog version when the running statement began
        self.last_repair: RepairReport | None = None     # of the latest maintenance that repaired late data
        # set by the caller while a batch is taken whose maintenance waits for the next batch (``maintain_after``)
        self.maintenance_deferred = False
        self.maintenance_owed = False      # a batch was taken with its maintenance deferred; ``maintain`` clears it
        self.recovered: list[StepReport] = self.recover()

    def recover(self) -> list[StepReport]:
        """Finish maintenance that a crashed or interrupted process left: a pending late-data repair,
        and in auto mode every ready view part."""
        auto = self.maintenance == "auto"
        if not self.repairer.pending and not (auto and any(self.maintainer.next_step(d) for d in self.catalog.views())):
            return []
        with self.writing():
            return self.maintain()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the writer lock (one writing process at a time) on the newest catalog, interruptibly; then bring
        the session's views up to date (``register_views``)."""
        failed = True
        try:
            with self._lock, self.writer.held():
                self._refresh()
                with self._interruptible():
                    yield
            failed = False
        finally:
            if self.session_views is not None and self._since is None:      # the statement's outermost block
                try:
                    with self._lock:
                        self.session_views.refresh()
                except Exception:
                    if not failed:
                        raise
                    # the statement's own error is the one to report; the next read refreshes the views again

    def register_views(self, prefix: str = "") -> list[str]:
        """Register every stream and view as a temporary view ``prefix + name`` of the session, kept current
        (engine/session_views.py); the names registered."""
        with self._lock:
            if self.session_views is not None:
                self.session_views.drop()
            self.session_views = SessionViews(self.spark, self.path, self.catalog, prefix)
            self._refresh()
            self.session_views.refresh()
            return sorted(self.session_views.names.values())

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Read the newest committed catalog, interruptibly; published parts never change, so no lock is
        needed."""
        with self._lock:
            self._refresh()
            if self.session_views is not None:
                self.session_views.refresh()
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
        except (Py4JError, ConnectionError):      # py4j's words for a JVM that died mid-statement, or before it
            stopped = stopped_jvm(self.spark)
            if stopped is None:
                raise
            raise ViewDFError(stopped) from None
        finally:
            self._since = None

    def _kept(self, since: int) -> str:
        """What a statement interrupted after catalog version ``since`` published, as a message."""
        kept: dict[str, list[tuple[str, pd.Timestamp]]] = {"stream": [], "view": []}
        for definition in self.catalog.objects.values():
            if definition.kind in kept:
                parts = self.catalog.state(definition.name).parts
                kept[definition.kind] += [(definition.name, part_start(subscript, definition.length))
                                          for subscript in sorted(parts) if parts[subscript].verified > since]
        named = [f"{plural(len(parts), kind + ' part')} ({named_spans(parts)})"
                 for kind, parts in kept.items() if parts]
        if not named:
            return "Interrupted: no part was published."
        message = f"Interrupted: kept {' and '.join(named)}; the part being computed was not published."
        if kept["stream"] and any(self.maintainer.next_step(d) is not None for d in self.catalog.views()):
            message += (" The stream's rows are stored: STEP ALL computes the view parts still missing "
                        "(a LOAD run again skips the files it took; the same INSERT again would add its rows twice).")
        return message

    def _refresh(self) -> None:
        if self.catalog.refresh():       # another process committed: forget what it may have replaced
            self.store.cache.clear()
            self.store.forget_plans()

    @property
    def maintenance(self) -> str:
        """``auto`` (maintain on every change) or ``manual`` (only when stepped)."""
        return self.catalog.settings.get("maintenance", "auto")

    def set_maintenance(self, mode: str) -> list[StepReport]:
        """Switch maintenance mode; switching to auto computes everything that is ready."""
        if mode not in ("auto", "manual"):
            raise ViewDFError(f"maintenance mode must be 'auto' or 'manual', not {mode!r}")
        with self.writing():
            if mode != self.maintenance:
                self.catalog.commit([Setting("maintenance", mode)])
            return self.maintain()

    def step(self, view: str | None = None, n: int | None = 1, plan: bool = False) -> list[StepReport]:
        """Compute the next ready part (or ``n`` parts; all with ``n=None``) in dependency order.

        With ``view``, compute that view's next part; it is an error if it is not ready. Computing all
        (STEP ALL) first finishes a late-data repair that an interrupted statement left pending, so the parts
        it left stale are recomputed too.
        """
        with self.writing():
            definition = self.require(view, ("view",)) if view else None
            repaired = self.maintain() if n is None and not plan and self.repairer.pending else []
            if definition is not None and self.maintainer.next_step(definition) is None:
                if repaired:
                    return repaired
                raise ViewDFError(self.not_ready(definition))
            return repaired + self.maintainer.step(definition, n, plan)

    def maintain(self) -> list[StepReport]:
        """Repair view parts that late data changed (in any mode), then, in auto mode, compute
        everything that is ready; failures are recorded in ``maintainer.failures``, not raised."""
        self.maintenance_owed = False
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
        self.compaction.apply()
        sweep(self.catalog, self.fs, VACUUM_RETAIN_SECONDS)
        return steps

    def take_batch(self, definition: ObjectDef, frame: DataFrame, sink: str, batch_id: int) -> IngestReport | None:
        """Append a Structured Streaming micro-batch to a stream and maintain, exactly once per ``(sink,
        batch_id)``: the batch id is published in the same log entry as the rows, so a batch that Spark replays
        after a restart (its id not above the newest taken) is skipped, and None returned. The caller holds the
        writing lock. A batch id below the newest taken is refused (a new checkpoint under an old name)."""
        newest = self.catalog.state(definition.name).sink_batches.get(sink, -1)
        if batch_id == newest:       # Spark replays only the batch whose commit it had not recorded
            return None
        if batch_id < newest:
            raise ViewDFError(f"batch {batch_id} of the sink '{sink}' into {definition.name} is older than the newest "
                              f"it took ({newest}), which a replay never is: a query with a new checkpoint starts "
                              f"again at 0. Give it its own name: sink('{definition.name}', name='...'); nothing "
                              f"was written")
        with self.refusals_counted(), self.catalog.transaction():
            report = self.ingester.append_stream(definition, frame, ViewDFError)
            self.catalog.commit([SinkBatch(definition.key, sink, batch_id)])
        self.maintain_after(report)
        return report

    @contextmanager
    def refusals_counted(self) -> Iterator[None]:
        """Run a batch's ingest (and its transaction, inside this block); when ALLOWED LATENESS refuses it, the
        refused rows are counted in the catalog (SHOW LATENESS) once the batch's own writes are undone, and
        the error goes on."""
        try:
            yield
        except RowsRefused as refused:
            self.catalog.commit([TooLate(refused.stream, refused.rows, diverted=False)])
            raise

    def maintain_after(self, report: IngestReport | ChangeReport) -> float:
        """Maintain after ``report``'s batch was published (``maintain``), recording on it the steps and the
        late-data repair (failures are in ``maintainer.failures``); the seconds it took. While
        ``maintenance_deferred``, only note that maintenance is owed (0 seconds): the next batch's maintains both."""
        if self.maintenance_deferred:
            self.maintenance_owed = True
            return 0.0
        steps, seconds = timed(self.maintain)
        report.steps = [*report.steps, *steps]      # the view parts written with the batch first
        report.repair = self.last_repair
        return seconds

    def maintenance_note(self) -> str:
        """Failures of the latest cascade, as a sentence to append to a statement's message."""
        return "".join([f" Warning: {failure}; {failure.view} and the views that read it are behind until "
                        f"this is fixed." for failure in self.maintainer.failures]
                       + [f" Warning: {failure}; its parts stay where they were, and it is not compacted again "
                          f"in this session." for failure in self.compaction.latest_failures])

    def lag_note(self, query: CompiledQuery) -> str | None:
        """One line naming the views ``query`` reads that are not up to date (``Maintainer.lags``: a failed
        part, ready parts not computed, or such a view upstream), or None. A view read only at fixed parts
        it has already computed (``V[5]``, not ``V[LATEST]`` or ``V``) is complete there and not named."""
        read = list(dict.fromkeys(ref.binding.name.lower() for ref in self.maintainer.timeline.resolve(query, None, None)
                                  if ref.definition.kind == "view" and not self._reads_computed_parts(ref)))
        lags = self.maintainer.lags(of=read)
        lagging = [lags[key] for key in read if key in lags]
        if not lagging:
            return None
        named = [f"{lag.view.name} ({lag.state})" for lag in lagging]
        listed = named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}"
        return (f"Note: {listed} {agreeing(len(named), 'is', 'are')} not up to date; the result has only the "
                f"parts computed so far.")

    def _reads_computed_parts(self, ref: ResolvedRef) -> bool:
        """Whether ``ref`` (to a view) reads fixed parts that are all computed already."""
        binding = ref.binding
        if binding.kind is not RefKind.PARTS or ref.last is None or any(
                s is not None and LATEST in s.variables for s in (binding.lower, binding.upper)):
            return False
        newest = self.maintainer.timeline.newest(ref.definition)
        return newest is not None and ref.last <= newest

    def not_ready(self, definition: ObjectDef) -> str:
        step = self.maintainer.pending_step(definition)
        if step is None:
            return f"{definition.name} is not ready: its sources have no parts yet"
        waiting = [r for r in step.refs if not self.maintainer.timeline.available(r, definition)]
        stamp = format_part(step.subscript, definition.length)
        if not waiting:
            return f"{definition.name} is not ready: its next part {stamp} is after the newest stream data"
        missing = ", ".join(f"{r.binding.name}[{r.last}]" for r in waiting)
        return f"{definition.name} is not ready: its next part {stamp} waits for {missing}"

    def close(self) -> None:
        """Drop cached parts and read plans. The SparkSession is left running."""
        self.store.cache.clear()
        self.store.forget_plans()

    def require(self, name: str, kinds: tuple[str, ...], statement: st.Statement | None = None,
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

    def subscript(self, definition: ObjectDef, part_timestamp: TimestampLike) -> int:
        try:
            return subscript_of(part_timestamp, definition.length)
        except ValueError as exc:
            raise ViewDFError(str(exc)) from None

    def _parts_frame(self) -> DataFrame:
        table = catalog_tables.parts_table(self.catalog)
        if table.empty:
            return self.spark.createDataFrame(
                [], "name string, part bigint, part_timestamp timestamp, rows bigint, compute_seconds double, "
                    "how string, lineage string, last_updated timestamp")
        return self.spark.createDataFrame(table)

    def _compile_adhoc(self, fragment) -> CompiledQuery:
        return compile_query(fragment, catalog_lookup(self.catalog), Scope.ADHOC)

    def query(self, fragment) -> tuple[DataFrame, CompiledQuery]:
        query = self._compile_adhoc(fragment)
        refs = self.maintainer.timeline.resolve(query, None, None)
        for ref in refs:
            if ref.binding.kind is not RefKind.PARTS or ref.binding.lower is not ref.binding.upper:
                continue
            assert ref.last is not None      # a single-part reference resolves to that part
            start = self.maintainer.timeline.start(ref.definition)
            newest = self.maintainer.timeline.newest(ref.definition)
            if start is None or newest is None or not start <= ref.last <= newest:
                span = "it has no parts" if start is None or newest is None else \
                    f"its parts run from {start} to {newest}"
                raise fragment.error(f"{ref.definition.name} has no part {ref.last} ({span})",
                                     ref.binding.start, ref.binding.end)
        with self.maintainer.runner.bound(query, refs) as frame:
            return frame, query

    def drop_objects(self, doomed: list[ObjectDef]) -> list[ObjectDef]:
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

    def verify_parts(self, definition: ObjectDef, subscripts: list[int], tolerance: float) -> dict[int, Comparison]:
        """Stored parts against their recomputation: in runs, a constant number of Spark jobs each, where the
        view's RECOMPUTE query lifts to many parts, or where its translation lifts its search over the whole
        history (a pattern's, a MATCH_RECOGNIZE's: the parts that differ are then checked again one by one
        with RECOMPUTE itself) (maintainer/verification.py); else one part at a time."""
        view = self.maintainer.compiled(definition)
        timeline, ranges = self.maintainer.timeline, self.maintainer.ranges
        self.store.forget_plans()       # read the files as they are now (a plan holds the listing it was made with)
        try:
            # a translation's search over the history first: lifting it would repeat the history for every part
            history = recompute_runs(definition, self.catalog, self.spark) if subscripts and view.recompute else None
            if history is not None:
                found = verify_history(self.catalog, self.store, timeline, ranges, view, history, subscripts,
                                       tolerance)
                return {s: c if c.equal else self.verify_part(definition, s, tolerance).comparison
                        for s, c in found.items()}
            plan = lifted_plan(view, self.catalog)
            if plan.lifted:
                return verify_runs(self.catalog, self.store, timeline, ranges, view, plan, subscripts, tolerance)
        except RangeFailed:    # part by part below, which positions the error in the user's text
            pass
        return {s: self.verify_part(definition, s, tolerance).comparison for s in subscripts}

    def verify_part(self, definition: ObjectDef, subscript: int, tolerance: float) -> PartCheck:
        started = time.perf_counter()
        fresh = self.maintainer.recompute(definition, subscript)        # computed here (a local checkpoint)
        seconds = time.perf_counter() - started
        stored = self.store.read_parts(definition, self.catalog.state(definition.name), [subscript])
        comparison = check_runtime(lambda: compare_rows(stored.drop(PART_TIMESTAMP), fresh, tolerance),
                                   "verifying")
        return PartCheck(comparison, seconds)
