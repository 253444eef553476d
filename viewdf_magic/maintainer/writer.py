"""Computing, storing and committing view parts: a step is analysed (``prepare``: known empty, the
previous part's rows again, or a Spark job ready to run), its job runs (perhaps on another thread,
maintainer/together.py), and its part is recorded and committed (``finish``). A range step's parts are
recorded here too (``recorded``)."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections import deque
from typing import Callable, Sequence

import pandas as pd
from pyspark.sql import DataFrame, Observation

from ..catalog.actions import Action, KeyFacts, Part, Verified
from ..catalog.catalog import Catalog
from ..catalog.model import ObjectDef, PartMeta, Slice
from ..language.queries import CompiledQuery
from ..language.statements import ClauseKind
from ..storage.parts import EMPTY_CHECKSUM, Counted, PartStore
from ..storage.repeats import counting_branch, repeats_found
from ..storage.spark_errors import SPARK_ERRORS
from ..timeparts import part_start
from .execute import QueryRunner, explain_text
from .fusion import Fusion, embed
from .reports import ReferenceReport, StepReport
from .steps import PartPreview, PendingStep, PreparedStep, Written, empty_rule, resolved_sql
from .timeline import ResolvedRef, Timeline, check_retained, existing
from .views import CompiledView


class PartWriter:
    """Computes one view part and commits it, or records the parts a range step wrote."""

    def __init__(self, catalog: Catalog, store: PartStore, runner: QueryRunner, timeline: Timeline,
                 compiled: Callable[[ObjectDef], CompiledView], history: deque[StepReport]) -> None:
        self.catalog = catalog
        self.store = store
        self.runner = runner
        self.timeline = timeline
        self.compiled = compiled          # a view's compiled clauses (Maintainer.compiled)
        self.history = history            # the maintainer's recent step reports
        self.jobless_empty_parts = True   # record parts known to be empty without a Spark job

    def compute(self, step: PendingStep, plan: bool = False, previous: PartMeta | None = None,
                fusions: Sequence[Fusion] = (), spent: float = 0.0, discarded: str = "") -> list[StepReport]:
        """Compute, store and commit one view part (and the ``fusions``' parts, in the same Spark job). With
        ``previous`` (the stored part, when late data is repaired), an identical result keeps the stored part
        and only records that it was checked."""
        prepared = self.prepare(step, plan, fusions)
        return self.finish(prepared, prepared.run(), previous, spent, discarded)

    def prepare(self, step: PendingStep, plan: bool, fusions: Sequence[Fusion]) -> PreparedStep:
        """``step`` analysed, with its Spark job (if it needs one) ready to run."""
        definition, subscript, how, query, refs = step.view, step.subscript, step.how, step.query, step.refs
        started = time.perf_counter()
        lineage = self.timeline.lineage(refs)
        empty_because = self.known_empty(step)
        if empty_because is not None:
            check_retained(self.catalog, query, refs)
            plan_text = f"No Spark job: the query returns no rows when {empty_because}." if plan else None
            # the fused views' parts are empty too, recorded with it
            return PreparedStep(step, started, lineage, plan_text, Written("", {}, tuple(fusions)))
        carried = self.unchanged(step)
        if carried is not None:
            previous_part, because = carried
            plan_text = f"No Spark job: the part holds {definition.name}[{subscript - 1}]'s rows, as {because}." \
                if plan else None
            # fused views step on their own
            return PreparedStep(step, started, lineage, plan_text,
                                Written("", {None: Counted(previous_part.rows, previous_part.checksum)}, ()),
                                folders=previous_part.folders)
        self.catalog.flush()      # parts recorded without a job so far are published before this one
        bound = self.runner.bind(query, refs, context=f"computing {definition.name}[{subscript}] ({how.label})",
                                 schema=definition.schema, clause=how.label,
                                 extra=self.store.stamp_columns(definition, subscript))
        stamped, checks = self.checking(step, bound.frame)
        with bound.running():
            fused = None
            if fusions:
                try:
                    fused = embed(list(fusions), self.runner, stamped)
                except SPARK_ERRORS:       # a fused view's error: it is reported when that view steps alone
                    fused = None
            plan_text = explain_text(stamped) if plan else None

        def write() -> Written:
            with bound.running():
                if fused is not None:
                    try:
                        written = Written(*self.store.write_part(definition, subscript, *fused), tuple(fusions))
                        return written._replace(facts=_facts(checks))
                    except SPARK_ERRORS:      # as above
                        pass
                return Written(*self.store.write_part(definition, subscript, stamped), (), _facts(checks))
        return PreparedStep(step, started, lineage, plan_text, None, job=write)

    def checking(self, step: PendingStep, frame: DataFrame
                 ) -> tuple[DataFrame, list[tuple[ResolvedRef, int, tuple[str, ...], Observation]]]:
        """For an UPDATE of a view with a guard (``WHEN X[j] IS UNIQUE (..)``) whose stream part nobody checked
        yet: the step's rows (``frame``) with branches that count, in the same job, whether two rows of such a
        part share the guard's columns (storage/repeats.py), and what each count is observed by."""
        compiled = self.compiled(step.view)
        guard, columns = compiled.unique_guard, compiled.unique_columns
        if guard is None or not step.how.same_clause(ClauseKind.UPDATE):
            return frame, []
        checks = []
        for part in self.timeline.unchecked(guard, step.view, step.subscript, columns):
            branch, observed = counting_branch(self.runner.frame(part), columns, frame.schema)
            frame = frame.union(branch)
            parts = self.catalog.state(part.definition.name).parts
            rows = sum(parts[s].rows for s in existing(part.subscripts, parts))
            checks.append((part, rows, tuple(sorted(c.lower() for c in columns)), observed))
        return frame, checks

    def finish(self, prepared: PreparedStep, result: Written, previous: PartMeta | None = None, spent: float = 0.0,
               discarded: str = "") -> list[StepReport]:
        """Record and commit what ``prepared``'s step computed (``result``), with what its job found of the
        stream parts its guard names; a guarded UPDATE whose part repeats a key after all is discarded, and
        the part computed again by the general UPDATE (the part's time counts both, ``spent`` seconds spent
        on it before; its report says why, ``discarded``)."""
        step, (folder, written, fusions, facts) = prepared.step, result
        definition, subscript = step.view, step.subscript
        if step.how is ClauseKind.UPDATE_WHEN_UNIQUE and (facts is None or any(fact.repeats for fact in facts)):
            if folder:
                self.store.fs.delete(folder)
            if facts:
                self.catalog.commit(list(facts))
            how, query = self.compiled(definition).clause(subscript, True)      # the general UPDATE
            general = PendingStep(definition, subscript, how, query, self.timeline.resolve(query, definition, subscript), True)
            return self.compute(general, prepared.plan is not None, previous, fusions,
                                spent + time.perf_counter() - prepared.started, self._why_discarded(facts))
        seconds = spent + time.perf_counter() - prepared.started
        meta, report = self.recorded(step, written.get(None), folder, (subscript, subscript), seconds,
                                      prepared.lineage, folders=prepared.folders)
        action, report = self.repaired(definition, meta, dataclasses.replace(report, plan=prepared.plan,
                                                                             discarded=discarded), previous)
        if isinstance(action, Verified):
            if folder:
                self.store.fs.delete(folder)
            self.catalog.commit([action, *(facts or ())])
            self.history.append(report)
            return [report]
        actions: list[Action] = [action, *(facts or ())]
        reports = [report]
        for fusion in fusions:
            fused_meta, fused_report = self.fused_part(fusion, definition, subscript, written, folder,
                                                       (subscript, subscript))
            actions.append(Part(fusion.view.key, fused_meta))
            reports.append(fused_report)
        self.catalog.commit(actions)
        self.history.extend(reports)
        return reports

    def _why_discarded(self, facts: tuple[KeyFacts, ...] | None) -> str:
        """Why a guarded UPDATE's part was discarded, in words: ``M[5] repeats (k)``."""
        if facts is None:
            return "its job did not count the whole guard part"
        found = []
        for fact in (fact for fact in facts if fact.repeats):
            definition = self.catalog.get(fact.name)
            found.append(f"{definition.name if definition is not None else fact.name}[{fact.subscript}] "
                         f"repeats ({', '.join(fact.columns)})")
        return "; ".join(found)

    @staticmethod
    def repaired(definition: ObjectDef, meta: PartMeta, report: StepReport, previous: PartMeta | None
                 ) -> tuple[Part | Verified, StepReport]:
        """The catalog action for a computed part: with ``previous`` (the stored part, when late data is
        repaired), a part that came out the same by the same clause keeps what is stored and is only marked
        checked; else the new part, counted as a repair of ``previous``."""
        if previous is not None and previous.checksum == meta.checksum and previous.how is meta.how:
            return (Verified(definition.key, meta.subscript, meta.seconds),
                    dataclasses.replace(report, repair="unchanged"))
        # the same rows computed by another clause (a range step recorded RECOMPUTE, a repair steps with
        # UPDATE): the new lineage is recorded, but the content did not change, so readers need no repair
        same_rows = previous is not None and previous.checksum == meta.checksum
        if previous is not None:
            meta = dataclasses.replace(meta, repairs=previous.repairs + 1,
                                       repair_seconds=previous.repair_seconds + meta.seconds,
                                       repairs_changed=previous.repairs_changed + (not same_rows))
            report = dataclasses.replace(report, repair="unchanged" if same_rows else "changed")
        return Part(definition.key, meta, same_rows), report

    def known_empty(self, step: PendingStep) -> str | None:
        """When ``step``'s inputs make its part certainly empty: which of them are empty, in words
        (e.g. ``M[5] is empty``); None when a Spark job must compute it."""
        if not self.jobless_empty_parts:
            return None
        declared = self._declared(step, self.compiled(step.view).empty_when)
        if declared is not None:
            return declared
        rule = empty_rule(step.query)
        if rule.never:
            return None
        refs = {ref.binding.placeholder: ref for ref in step.refs}
        if not rule.holds(lambda placeholder: self.runner.is_empty(refs[placeholder])):
            return None
        return rule.describe({placeholder: ref.text for placeholder, ref in refs.items()})

    def unchanged(self, step: PendingStep) -> tuple[PartMeta, str] | None:
        """The view's previous part, when its UNCHANGED WHEN inputs are empty at ``step``'s UPDATE, with the
        reason in words; its rows are then the new part's too (a slice read as another part is stamped
        as that part), and no Spark job runs. Not for a previous part stored before slices existed."""
        if not self.jobless_empty_parts or not step.how.same_clause(ClauseKind.UPDATE):
            return None
        because = self._declared(step, self.compiled(step.view).unchanged_when)
        previous = self.catalog.state(step.view.name).parts.get(step.subscript - 1)
        if because is None or previous is None or not all(Slice.parse(f).part is not None for f in previous.folders):
            return None
        return previous, f"{because} (UNCHANGED WHEN)"

    def _declared(self, step: PendingStep, declaration: CompiledQuery | None) -> str | None:
        """``X[5] is empty and ...`` when every part ``declaration`` names is known, kept and empty."""
        if declaration is None:
            return None
        refs = self.timeline.resolve(declaration, step.view, step.subscript)
        for ref in refs:
            state = self.catalog.states.get(ref.definition.key)
            dropped = state.dropped_before if state is not None else None
            if not self.timeline.available(ref, step.view) or (dropped is not None and (ref.first or 0) < dropped) \
                    or not self.runner.is_empty(ref):
                return None
        return " and ".join(f"{ref.text} is empty" for ref in refs)

    def _preview_loader(self, definition: ObjectDef, subscript: int) -> Callable[[int], pd.DataFrame]:
        return PartPreview(self.catalog, self.store, definition, subscript)

    def reference_reports(self, step: PendingStep) -> tuple[ReferenceReport, ...]:
        reports = []
        for ref in step.refs:
            if ref.first is None or ref.last is None:
                reports.append(ReferenceReport(ref.binding.text, ref.binding.name, None, None, None))
                continue
            parts = self.catalog.state(ref.definition.name).parts
            rows = sum(parts[s].rows for s in existing(ref.subscripts, parts))
            length = ref.definition.length
            reports.append(ReferenceReport(ref.binding.text, ref.text, part_start(ref.first, length),
                                           part_start(ref.last, length), rows))
        return tuple(reports)

    def _reads(self, step: PendingStep) -> tuple[str, tuple[ReferenceReport, ...]]:
        return resolved_sql(step.query, step.refs), self.reference_reports(step)

    def recorded(self, step: PendingStep, counted: Counted | None, folder: str, span: tuple[int, int],
                 seconds: float, lineage: tuple, column: str | None = None,
                 folders: tuple[str, ...] | None = None, ranged: bool = False, fused_into: str = ""
                 ) -> tuple[PartMeta, StepReport]:
        """The catalog entry and the report of a part that a write stored as ``counted`` in ``folder`` (or,
        given ``folders``, that is those slices); ``ranged``: a range step computed the parts of ``span``;
        ``fused_into``: the source part whose job wrote it."""
        definition, subscript = step.view, step.subscript
        rows, checksum = (counted.rows, counted.checksum) if counted is not None else (0, EMPTY_CHECKSUM)
        if folders is None:
            folders = (Slice(folder, subscript, span[0], span[1], column).text,) if rows else ()
        meta = PartMeta(subscript, rows, folders, seconds, lineage, time.time(), step.how, checksum)
        report = StepReport(definition.name, subscript, definition.length, step.how, rows, seconds, lineage,
                            functools.partial(self._reads, step), None, self._preview_loader(definition, subscript),
                            span=span if ranged else None, fused_into=fused_into)
        return meta, report

    def fused_part(self, fusion: Fusion, source: ObjectDef, subscript: int, written: dict[str | None, Counted],
                   folder: str, span: tuple[int, int], ranged: bool = False) -> tuple[PartMeta, StepReport]:
        """A fused view's part ``subscript``, written with ``source``'s (``written``: what the write held of it;
        ``ranged``: in a range step of the parts of ``span``)."""
        how, query = fusion.hows[subscript]
        refs = self.timeline.resolve(query, fusion.view, subscript)
        step = PendingStep(fusion.view, subscript, how, query, refs, True)
        lineage = self.timeline.lineage(refs, (source.key, span[1]))
        return self.recorded(step, written.get(fusion.column), folder, span, 0.0, lineage, fusion.column,
                             ranged=ranged, fused_into=f"{source.name}[{subscript}]")


def _facts(checks: list[tuple[ResolvedRef, int, tuple[str, ...], Observation]]) -> tuple[KeyFacts, ...] | None:
    """What a step's job found of each stream part it checked; None when it did not count one of them whole."""
    found = []
    for part, rows, columns, observed in checks:
        repeats = repeats_found(observed, rows)
        if repeats is None:
            return None
        found += [KeyFacts(part.definition.key, s, columns, repeats) for s in part.subscripts]
    return tuple(found)
