"""The view maintainer: computes every ready view part, in dependency order."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from tqdm.auto import tqdm

from ..catalog.actions import Action, Part
from ..catalog.catalog import Catalog
from ..catalog.model import ObjectDef, PartMeta
from ..errors import ViewDFError
from ..language.queries import CompiledQuery
from ..language.statements import ClauseKind
from ..storage.parts import Counted, PartStore
from ..timeparts import format_part, part_start
from ..wording import plural
from . import together
from .collection import fewer_full_collections
from .execute import QueryRunner
from .fusion import Fuser, Fusion
from .ranges import (RANGE_CLAUSE_WORK, RANGE_PARTS, RangeFailed, RangePlan, RangeRunner, RunBudget,
                     paced_parts, plan_range)
from .reports import StepReport
from .steps import PendingStep
from .timeline import Timeline, check_retained
from .views import CompiledView, ViewDefiner, compile_existing
from .writer import PartWriter

PROGRESS_MIN_STEPS = 10
HISTORY_SIZE = 500


@dataclass(frozen=True)
class MaintenanceFailure:
    """A view part that could not be computed."""

    view: str
    subscript: int
    error: ViewDFError

    def __str__(self) -> str:
        return f"maintaining {self.view} failed: {self.error.message}"

    @property
    def reason(self) -> str:
        """The error's first sentence, without the step it names (``Division by zero``)."""
        return self.error.reason.split(". ", 1)[0].rstrip(".")


@dataclass(frozen=True)
class Lag:
    """Why a view lacks parts its sources allow: its part ``failure`` names could not be computed (in this
    session's latest maintenance), its next ``ready`` parts could be computed but are not (manual
    maintenance, or a failure upstream), or it reads, directly or through other views, ``waiting_for``
    views that lag themselves. Waiting for rows a source has not got is not lag."""

    view: ObjectDef
    failure: MaintenanceFailure | None
    ready: int
    waiting_for: tuple[str, ...]

    @property
    def own(self) -> bool:
        """Whether the view lags by itself, not only because views it reads do."""
        return self.failure is not None or self.ready > 0

    @property
    def state(self) -> str:
        """SHOW VIEWS' state: ``failed at <part>: <reason>``, ``3 parts behind``, ``waiting for Helper``."""
        phrases = []
        if self.failure is not None:
            phrases.append(f"failed at {format_part(self.failure.subscript, self.view.length)}: {self.failure.reason}")
        elif self.ready:
            phrases.append(f"{plural(self.ready, 'part')} behind")
        if self.waiting_for:
            phrases.append(f"waiting for {', '.join(self.waiting_for)}")
        return ", ".join(phrases)


class Maintainer:
    """Owns readiness (NEXT[V] and its references) and runs maintenance steps."""

    def __init__(self, spark: SparkSession, catalog: Catalog, store: PartStore,
                 catalog_frame: Callable[[], DataFrame], progress: bool = True) -> None:
        self.spark = spark
        self.catalog = catalog
        self.store = store
        self.progress = progress
        self.timeline = Timeline(catalog)
        self.runner = QueryRunner(spark, catalog, store, catalog_frame)
        self.definer = ViewDefiner(catalog, self.timeline, self.runner)
        self.history: deque[StepReport] = deque(maxlen=HISTORY_SIZE)
        self.failures: list[MaintenanceFailure] = []      # of the latest step() or cascade()
        self._compiled: dict[str, CompiledView] = {}
        self.range_steps = True             # compute runs of ready parts in one job where the view allows
        self.fused_parts = True             # write a view's projection parts in its source's job
        self.concurrent_steps = True        # run independent views' one-part steps' Spark jobs together
        self.ranges = RangeRunner(catalog, store, self.runner)
        self._range_plans: dict[str, tuple[CompiledView, RangePlan]] = {}
        self._range_failed: dict[str, str] = {}   # views whose range step Spark could not run (this session): why
        self._range_pace: dict[str, float] = {}   # seconds per part of each view's latest range step (this session)
        self.fuser = Fuser(catalog, self.timeline, self.compiled, self.clause)
        self.writer = PartWriter(catalog, store, self.runner, self.timeline, self.compiled, self.history)

    @property
    def jobless_empty_parts(self) -> bool:
        """Whether parts known to be empty, or to hold the previous part's rows, are recorded without a Spark job."""
        return self.writer.jobless_empty_parts

    @jobless_empty_parts.setter
    def jobless_empty_parts(self, on: bool) -> None:
        self.writer.jobless_empty_parts = on

    def compiled(self, definition: ObjectDef) -> CompiledView:
        """``definition``'s clauses, compiled once: when the view was defined, or when it is first read after
        a reopen. A catalog entry reread with the same contents keeps them."""
        cached = self._compiled.get(definition.key)
        found = cached.for_entry(definition) if cached is not None else None
        if found is None:
            found = self.definer.take_compiled(definition) or compile_existing(definition, self.catalog)
        self._compiled[definition.key] = found
        return found

    def clause(self, definition: ObjectDef, subscript: int, has_parts: bool) -> tuple[ClauseKind, CompiledQuery]:
        """The clause that computes ``definition``'s part ``subscript`` (``has_parts``: some part comes before
        it), the guarded UPDATE where the stream parts its guard names are unique."""
        return self.compiled(definition).clause(subscript, has_parts, self.timeline.uniqueness(definition, subscript))

    def forget(self, definition: ObjectDef) -> None:
        self._compiled.pop(definition.key, None)
        self.definer.take_compiled(definition)      # what define kept, if the view was never read
        self._range_plans.pop(definition.key, None)
        self._range_failed.pop(definition.key, None)
        self._range_pace.pop(definition.key, None)

    # -- readiness -----------------------------------------------------------------------
    def pending_step(self, definition: ObjectDef) -> PendingStep | None:
        """NEXT[V] with its references resolved, ready or not; None while the start is unknown."""
        subscript = self.timeline.next_part(definition)
        if subscript is None:
            return None
        return self._step_at(definition, subscript, bool(self.catalog.state(definition.name).parts))

    def latest_step(self, definition: ObjectDef) -> PendingStep | None:
        """The view's newest stored part as a step that would compute it again (its references are
        stored parts); None before its first part."""
        parts = self.catalog.state(definition.name).parts
        if not parts:
            return None
        subscript = max(parts)
        return self._step_at(definition, subscript, any(s < subscript for s in parts))

    def _step_at(self, definition: ObjectDef, subscript: int, has_parts: bool) -> PendingStep:
        how, query = self.clause(definition, subscript, has_parts)
        refs = self.timeline.resolve(query, definition, subscript)
        horizon = self.timeline.horizon()
        in_time = horizon is not None and subscript * definition.length < horizon
        ready = in_time and all(self.timeline.available(ref, definition) for ref in refs)
        return PendingStep(definition, subscript, how, query, refs, ready)

    def next_step(self, definition: ObjectDef) -> PendingStep | None:
        """The view's next part, if every part its query references exists."""
        step = self.pending_step(definition)
        return step if step is not None and step.ready else None

    def pending(self) -> pd.DataFrame:
        """For each view: its next part and every part that part references (the NEXT[V] and B[V]
        bookkeeping), one row per reference."""
        rows: list[dict[str, Any]] = []
        for definition in self.catalog.views():
            step = self.pending_step(definition)
            if step is None:
                rows.append({"view": definition.name, "next_part": None, "part_timestamp": None, "clause": None,
                             "reference": None, "resolves_to": "waiting for the first part of a source",
                             "exists": False, "ready": False})
                continue
            stamp = part_start(step.subscript, definition.length)
            for ref, summary in zip(step.refs, self.writer.reference_reports(step)):
                rows.append({"view": definition.name, "next_part": step.subscript, "part_timestamp": stamp,
                             "clause": step.how.label, "reference": summary.written,
                             "resolves_to": summary.resolved, "exists": self.timeline.available(ref, definition),
                             "ready": step.ready})
        return pd.DataFrame(rows, columns=["view", "next_part", "part_timestamp", "clause", "reference",
                                           "resolves_to", "exists", "ready"])

    def ready_parts(self, definition: ObjectDef) -> int:
        """How many of the view's next parts could be computed now, NEXT[V] on, found by bisection (a later
        part reads later parts, so once a part is not ready, none after it is)."""
        step = self.pending_step(definition)
        horizon = self.timeline.horizon()
        if step is None or not step.ready or horizon is None:
            return 0
        first, last = step.subscript, -(-horizon // definition.length) - 1    # the last part before the horizon
        while first < last:
            middle = (first + last + 1) // 2
            if self._step_at(definition, middle, True).ready:
                first = middle
            else:
                last = middle - 1
        return first - step.subscript + 1

    def lags(self, of: Iterable[str] | None = None) -> dict[str, Lag]:
        """The views (by key) that lag (``Lag``); a view missing is up to date. With ``of``, only those
        objects and the views they read are looked at."""
        failures = {failure.view.lower(): failure for failure in self.failures}
        wanted = None if of is None else self.catalog.upstream(of)
        lags: dict[str, Lag] = {}
        for definition in self.catalog.views():         # sources before the views that read them
            if wanted is not None and definition.key not in wanted:
                continue
            waiting: list[str] = []
            for source in definition.sources:        # not the view itself: it is not in ``lags`` yet
                lag = lags.get(source.lower())
                if lag is not None:
                    waiting += [lag.view.name] if lag.own else lag.waiting_for
            lag = Lag(definition, failures.get(definition.key), self.ready_parts(definition),
                      tuple(dict.fromkeys(waiting)))
            if lag.own or lag.waiting_for:
                lags[definition.key] = lag
        return lags

    # -- computing -----------------------------------------------------------------------
    def cascade(self) -> list[StepReport]:
        """Compute every ready part of every view, sources before dependents.

        A view whose step fails is recorded in ``failures`` and skipped, with the
        views that read it, for the rest of the cascade; the others carry on.
        """
        return self.step(n=None, keep_going=True)

    def step(self, view: ObjectDef | None = None, n: int | None = 1, plan: bool = False,
             keep_going: bool = False, among: list[ObjectDef] | None = None) -> list[StepReport]:
        """Compute up to ``n`` ready parts (all when None) in dependency order, of one ``view`` or of the
        views ``among`` (all when None).

        A run of ready parts of a view with a range plan is computed in one range step; parts
        recorded without a Spark job are published together, before the next job runs. When every
        ready part is computed (``n`` None, no single ``view``), a view whose part is a projection of
        its source's part is written in its source's Spark job (maintainer/fusion.py)."""
        reports: list[StepReport] = []
        self.failures = []
        blocked: set[str] = set()
        fuse = self.fused_parts and view is None and n is None and not plan
        allowed = None if among is None else {d.key for d in among}
        bar = None
        total = self._estimated_steps() if n is None else n
        if self.progress and total >= PROGRESS_MIN_STEPS:
            bar = tqdm(total=total, desc="maintaining views", unit="part", leave=False)
        try:
            with self.catalog.grouped(), fewer_full_collections():
                while n is None or len(reports) < n:
                    step = self._first_ready(view, blocked, allowed)
                    if step is None:
                        break
                    barred = blocked | ({d.key for d in self.catalog.views()} - allowed if allowed is not None else set())
                    wave = [step]
                    if fuse and self.concurrent_steps and not self.store.cache_size:    # the cache is not shared
                        others = (self.next_step(d) for d in self._candidates(blocked, allowed) if d.key != step.view.key)
                        wave = together.wave(step, others, self._takes_range_step)
                    outcomes: list[tuple[PendingStep, list[StepReport] | ViewDFError]]
                    if len(wave) > 1:
                        outcomes = together.compute_together(
                            self.spark, self.writer, wave,
                            lambda s: self.fuser.fusions(s.view, s.subscript, s.subscript, barred), keep_going)
                    else:
                        try:
                            outcomes = [(step, self._advance(step, plan, None if n is None else n - len(reports),
                                                             barred if fuse else None))]
                        except ViewDFError as error:
                            outcomes = [(step, error)]
                    for stepped, outcome in outcomes:
                        if isinstance(outcome, ViewDFError):
                            if not keep_going:
                                raise outcome
                            self.failures.append(MaintenanceFailure(stepped.view.name, stepped.subscript, outcome))
                            blocked.update(d.key for d in self.catalog.downstream(stepped.view.name))
                            outcome = []
                        reports += outcome
                        if bar is not None:
                            bar.update(max(1, len(outcome)))
        finally:
            if bar is not None:
                bar.close()
        return reports

    def _advance(self, step: PendingStep, plan: bool, limit: int | None, barred: set[str] | None) -> list[StepReport]:
        """Compute ``step``'s part, or the run of ready parts it starts when the view has a range plan;
        with ``barred`` (views not to fuse), with the views fused into it."""
        if self.range_steps and not plan and self._may_start_run(step) and step.view.key not in self._range_failed:
            ranged = self.range_plan(step.view)
            run = self._ready_run(step, ranged, limit) if ranged.lifted else []
            if len(run) > 1:
                fusions = [] if barred is None else self.fuser.fusions(step.view, run[0].subscript,
                                                                      run[-1].subscript, barred)
                try:
                    return self.compute_range(ranged, run, fusions)
                except RangeFailed as failed:      # computed part by part below, which reports any error in place
                    self._range_failed[step.view.key] = str(failed).split("\n")[0]
        fusions = [] if barred is None else self.fuser.fusions(step.view, step.subscript, step.subscript, barred)
        return self.writer.compute(step, plan, fusions=fusions)

    def _may_start_run(self, step: PendingStep) -> bool:
        """Whether a range step may begin at ``step``'s part: any but an INITIALIZE part, which may too when
        INITIALIZE is the query the run computes (UPDATE's, or a running sum's RECOMPUTE: the run computes the
        part as INITIALIZE would, and records it as INITIALIZE)."""
        return step.how is not ClauseKind.INITIALIZE or self.range_plan(step.view).takes_initialize

    def _takes_range_step(self, step: PendingStep) -> bool:
        """Whether ``_advance`` computes more than ``step``'s part (a range step); only the run's first two
        parts are looked at, for the whole run's lookup costs time per part."""
        if not self.range_steps or not self._may_start_run(step) or step.view.key in self._range_failed:
            return False
        ranged = self.range_plan(step.view)
        return ranged.lifted and len(self._ready_run(step, ranged, 2)) > 1

    def range_failure(self, definition: ObjectDef) -> str | None:
        """Why Spark could not run the view's range step this session (its parts are then computed one at
        a time until the warehouse is opened again); None when it could."""
        return self._range_failed.get(definition.key)

    def range_plan(self, definition: ObjectDef) -> RangePlan:
        """How runs of ``definition``'s parts are computed (analysed once per definition)."""
        view = self.compiled(definition)
        known = self._range_plans.get(definition.key)
        if known is None or known[0] is not view:
            known = (view, plan_range(view, self.catalog))
            self._range_plans[definition.key] = known
        return known[1]

    def _ready_run(self, step: PendingStep, ranged: RangePlan, limit: int | None) -> list[PendingStep]:
        """The ready parts from ``step`` on that one range step computes: consecutive, each ready, at
        most RANGE_PARTS, about RANGE_ROWS input rows and, for a RANGE clause, RANGE_CLAUSE_WORK; outside
        a transaction, as many as take about RANGE_SECONDS at the view's pace (``paced_parts``), and before
        its pace is known, about RANGE_FIRST_ROWS input rows. A projection of one part (``Fuser.analyse``) is
        not bounded by RANGE_ROWS."""
        definition, view = step.view, self.compiled(step.view)
        horizon = self.timeline.horizon()
        assert ranged.query is not None and horizon is not None
        most = self.run_limit(definition) if limit is None else min(limit, self.run_limit(definition))
        first = not self.catalog.in_transaction and definition.key not in self._range_pace
        streamed = self.fuser.analyse(definition, ranged.query)[1].items is not None
        budget = RunBudget(self.catalog, ranged, most, RANGE_CLAUSE_WORK if ranged.clause is ClauseKind.RANGE else None,
                           first, streamed)
        run: list[PendingStep] = []
        subscript = step.subscript
        with self.timeline.unchanging():
            while len(run) < most and subscript * definition.length < horizon:
                if ranged.how is ClauseKind.UPDATE and view.clause(subscript, True)[0] is not ClauseKind.UPDATE:
                    break
                refs = self.timeline.resolve(ranged.query, definition, subscript)
                if not all(self.timeline.available(ref, definition) for ref in refs) or not budget.admits(refs):
                    break
                how = step.how if subscript == step.subscript else ranged.how       # the first may be INITIALIZE
                run.append(PendingStep(definition, subscript, how, ranged.query, refs, True))
                subscript += 1
        return run

    def repair_run(self, run: list[PendingStep], previous: dict[int, PartMeta]) -> list[StepReport]:
        """Recompute a view's consecutive stale parts ``run`` (late-data repair, ``previous``: the stored parts):
        as many of them as one range step takes where the view has a range plan, else the first alone. A part
        that comes out the same keeps what is stored (``PartWriter.repaired``)."""
        first = run[0]
        if len(run) > 1 and first.how is not ClauseKind.INITIALIZE and self.run_limit(first.view) > 1:
            ranged = self.range_plan(first.view)
            steps = self._ready_run(first, ranged, len(run))
            if len(steps) > 1:
                try:
                    return self.compute_range(ranged, steps, previous=previous)
                except RangeFailed as failed:      # part by part, which reports any error in place
                    self._range_failed[first.view.key] = str(failed).split("\n")[0]
        return self.writer.compute(first, previous=previous.get(first.subscript))

    def run_limit(self, definition: ObjectDef) -> int:
        """The most parts of ``definition`` one step computes now: a range step's bound (RANGE_PARTS and, outside
        a transaction, the view's pace) where its runs take range steps (this session), else 1."""
        if not (self.range_steps and definition.key not in self._range_failed
                and self.range_plan(definition).lifted):
            return 1
        if self.catalog.in_transaction:
            return RANGE_PARTS
        return min(RANGE_PARTS, paced_parts(self._range_pace.get(definition.key)))

    def compute_range(self, ranged: RangePlan, run: list[PendingStep], fusions: Sequence[Fusion] = (),
                      previous: dict[int, PartMeta] | None = None) -> list[StepReport]:
        """Compute, store and commit a run of parts (and the ``fusions``' parts) in one range step (no job
        when every part is known to be empty). With ``previous`` (late-data repair: the stored parts), each
        part is recorded as ``PartWriter.repaired`` says."""
        definition = run[0].view
        started = time.perf_counter()
        folder = ""
        written: dict[int, dict[str | None, Counted]] = {}
        if not all(self.writer.known_empty(step) is not None for step in run):
            check_retained(self.catalog, run[0].query, run[0].refs)
            self.catalog.flush()
            folder, written = self.ranges.run(definition, ranged, run[0].subscript, run[-1].subscript, fusions)
        seconds = (time.perf_counter() - started) / len(run)
        if folder:
            self._range_pace[definition.key] = seconds
        with self.timeline.unchanging():
            actions, reports = self._record_range(run, written, folder, seconds, fusions, previous)
        if previous is not None and folder and not any(isinstance(action, Part) and action.part.folders
                                                       for action in actions):    # every part came out the same
            self.store.fs.delete(folder)
        self.catalog.commit(actions)
        self.history.extend(reports)
        return reports

    def _record_range(self, run: list[PendingStep], written: dict[int, dict[str | None, Counted]], folder: str,
                      seconds: float, fusions: Sequence[Fusion], previous: dict[int, PartMeta] | None
                      ) -> tuple[list[Action], list[StepReport]]:
        """The catalog entries and reports of a range step's parts, as ``compute_range`` says."""
        definition = run[0].view
        first, last = run[0].subscript, run[-1].subscript
        actions: list[Action] = []
        reports: list[StepReport] = []
        for step in run:
            counted = written.get(step.subscript, {})
            lineage = self.timeline.lineage(step.refs, (definition.key, step.subscript - 1))
            meta, report = self.writer.recorded(step, counted.get(None), folder, (first, last), seconds, lineage,
                                                ranged=True)
            if previous is None:
                action: Action = Part(definition.key, meta)
            else:
                action, report = self.writer.repaired(definition, meta, report, previous.get(step.subscript))
            actions.append(action)
            reports.append(report)
        for fusion in fusions:
            for step in run:
                fused, fused_report = self.writer.fused_part(fusion, definition, step.subscript,
                                                             written.get(step.subscript, {}), folder, (first, last),
                                                             ranged=True)
                actions.append(Part(fusion.view.key, fused))
                reports.append(fused_report)
        return actions, reports

    def batch_fusions(self, stream: ObjectDef) -> list[Fusion]:
        """The views to write with ``stream``'s next batch (``Fuser.batch_fusions``), unless their latest step
        failed."""
        if not self.fused_parts:
            return []
        return self.fuser.batch_fusions(stream, {failure.view.lower() for failure in self.failures})

    def record_batch(self, stream: ObjectDef, candidates: Sequence[Fusion], newest_before: int | None, folder: str,
                     span: tuple[int, int], written: dict[int, dict[str | None, Counted]]) -> list[StepReport]:
        """Record and commit the view parts that a batch of ``stream`` wrote with its rows (``candidates``:
        the fusions it was written with; ``written``: what each part holds of each), once the batch's parts
        are published: the stream's ``newest_before`` it and the batch's parts ``span``."""
        actions: list[Action] = []
        reports: list[StepReport] = []
        for candidate in candidates:
            fusion = self.fuser.batch_parts(candidate, stream, newest_before, span[1])
            if fusion is None:
                continue
            for subscript in fusion.hows:
                meta, report = self.writer.fused_part(fusion, stream, subscript, written.get(subscript, {}), folder, span)
                actions.append(Part(fusion.view.key, meta))
                reports.append(report)
        self.catalog.commit(actions)
        self.history.extend(reports)
        return reports

    def _candidates(self, blocked: set[str], allowed: set[str] | None, view: ObjectDef | None = None
                    ) -> Iterable[ObjectDef]:
        """The views a step may compute (``view``, or all in dependency order): not ``blocked``, and ``allowed``."""
        for definition in [view] if view is not None else self.catalog.views():
            if definition.key not in blocked and (allowed is None or definition.key in allowed):
                yield definition

    def _first_ready(self, view: ObjectDef | None, blocked: set[str], allowed: set[str] | None) -> PendingStep | None:
        for definition in self._candidates(blocked, allowed, view):
            step = self.next_step(definition)
            if step is not None:
                return step
        return None

    def _estimated_steps(self) -> int:
        horizon = self.timeline.horizon()
        if horizon is None:
            return 0
        total = 0
        for definition in self.catalog.views():
            next_part = self.timeline.next_part(definition)
            if next_part is not None:
                total += max(0, -(-horizon // definition.length) - next_part)
        return total

    def recompute(self, definition: ObjectDef, subscript: int, scope: int | None = None) -> DataFrame:
        """The view part computed from scratch with the view's RECOMPUTE query; ``scope`` limits
        its open ranges (``X[.. j]``) to their last ``scope`` parts (the Direct strategy's scope)."""
        view = self.compiled(definition)
        if view.recompute is None:
            raise ViewDFError(f"{definition.name} has no RECOMPUTE clause, so it cannot be recomputed "
                              f"from scratch; add RECOMPUTE {definition.name}[j] AS <query>")
        refs = self.timeline.resolve(view.recompute, definition, subscript, scope)
        context = f"recomputing {definition.name}[{subscript}] ({format_part(subscript, definition.length)})"
        with self.runner.bound(view.recompute, refs, context=context, schema=definition.schema,
                               clause=ClauseKind.RECOMPUTE.label) as frame:
            return frame.localCheckpoint()
