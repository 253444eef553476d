"""Late-data repair: recompute every view part whose inputs changed after it was computed.

Every part records the catalog version of its last content change (``changed``) and the
version it was last computed or checked at (``verified``). A view part is *stale* when a
part its query reads now changed after it was verified. Walking views in dependency order
and each view's parts in time order recomputes stale parts; a recomputed part that comes
out identical keeps its content and its ``changed`` version, so nothing downstream of it
turns stale: that is the early cutoff. The walk is idempotent, so a repair interrupted by
a crash is finished by running it again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable

from ..catalog.actions import Setting
from ..catalog.catalog import Catalog
from ..catalog.model import ObjectDef, PartMeta
from ..errors import ViewDFError
from ..wording import plural
from .maintainer import MaintenanceFailure
from .steps import ClauseOf, PendingStep
from .reports import StepReport
from .timeline import Timeline, existing

REPAIR_SETTING = "repair"     # catalog setting: {"since": epoch seconds, "version": catalog version}


@dataclass
class RepairReport:
    """What one repair did."""

    steps: list[StepReport] = field(default_factory=list)    # parts recomputed or added
    skipped: int = 0        # affected parts not recomputed because their inputs came out unchanged
    deferred: int = 0       # stale parts waiting for a source part that is not computed yet
    failures: list[MaintenanceFailure] = field(default_factory=list)

    def add(self, other: "RepairReport") -> None:
        """Fold a later pass of the same repair into this report."""
        self.steps += other.steps
        self.skipped += other.skipped
        self.deferred = other.deferred
        self.failures += other.failures

    @property
    def changed(self) -> int:
        return sum(1 for s in self.steps if s.repair != "unchanged")

    @property
    def unchanged(self) -> int:
        return sum(1 for s in self.steps if s.repair == "unchanged")

    def __str__(self) -> str:
        if not self.steps and not self.skipped:
            return "no view part depended on the late rows"
        return (f"{plural(len(self.steps), 'view part')} recomputed ({self.changed} changed, {self.unchanged} "
                f"unchanged), {self.skipped} skipped by early cutoff")


def request_repair(settings: dict[str, str], since: int, version: int) -> Setting:
    """The setting action that asks for a repair of everything from ``since`` (epoch seconds) on,
    caused by changes at catalog ``version``; merged with a repair still pending."""
    pending = settings.get(REPAIR_SETTING)
    if pending is not None:
        old = json.loads(pending)
        since, version = min(since, old["since"]), min(version, old["version"])
    return Setting(REPAIR_SETTING, json.dumps({"since": since, "version": version}))


class Repairer:
    """Brings every view part up to date with late-changed inputs."""

    def __init__(self, catalog: Catalog, timeline: Timeline, clause: ClauseOf,
                 compute: Callable[[list[PendingStep], dict[int, PartMeta]], list[StepReport]],
                 run_limit: Callable[[ObjectDef], int]) -> None:
        self.catalog, self.timeline = catalog, timeline
        self.clause = clause        # the clause that computes a view's part
        # compute and commit a run of a view's stale parts (the first of them at least; a range step where the
        # view has one), keeping each stored part that comes out the same
        self.compute = compute
        self.run_limit = run_limit  # the most parts of a view one step computes (1 without range steps)

    @property
    def pending(self) -> bool:
        return REPAIR_SETTING in self.catalog.settings

    def run(self) -> RepairReport:
        """Repair what the pending request names. The request is cleared unless a view failed or a stale
        part waits for a source part that maintenance has not computed yet (a start that moved back
        creates such parts); running again after maintenance finishes the repair."""
        report = RepairReport()
        request = self.catalog.settings.get(REPAIR_SETTING)
        if request is None:
            return report
        parsed = json.loads(request)
        since, version = parsed["since"], parsed["version"]
        touched: set[tuple[str, int]] = set()
        blocked: set[str] = set()
        for definition in self.catalog.views():
            if definition.key in blocked:
                continue
            failure = self._repair_view(definition, since, version, touched, report)
            if failure is not None:
                report.failures.append(failure)
                blocked.update(d.key for d in self.catalog.downstream(definition.name))
        if not blocked and not report.deferred:
            self.catalog.commit([Setting(REPAIR_SETTING, None)])
        return report

    def _repair_view(self, definition: ObjectDef, since: int, version: int,
                     touched: set[tuple[str, int]], report: RepairReport) -> MaintenanceFailure | None:
        state = self.catalog.state(definition.name)
        start, newest = self.timeline.start(definition), state.newest_part()
        if newest is None or start is None:
            return None
        first = max(start, since // definition.length)
        if state.dropped_before is not None:
            first = max(first, state.dropped_before)
        subscript = first
        while subscript <= newest:
            try:
                step, previous, stale, affected = self._examine(definition, subscript, start, version, touched, set())
            except ViewDFError as error:
                return MaintenanceFailure(definition.name, subscript, error)
            if stale and not all(self.timeline.available(ref, definition) for ref in step.refs):
                report.deferred += 1
            elif stale:
                run, stored = [step], {subscript: previous} if previous is not None else {}
                # with range steps, the stale parts after it, or those reading a part of the run (a view reading its
                # own earlier parts), join the run, up to what one step computes
                limit = self.run_limit(definition)
                while len(run) < limit and run[-1].subscript < newest:
                    try:
                        later, kept, stale, _ = self._examine(definition, run[-1].subscript + 1, start, version,
                                                              touched, {s.subscript for s in run})
                    except ViewDFError:      # reported when the walk reaches it
                        break
                    if not stale or not all(self.timeline.available(ref, definition) for ref in later.refs):
                        break
                    run.append(later)
                    if kept is not None:
                        stored[later.subscript] = kept
                try:
                    steps = self.compute(run, stored)
                except ViewDFError as error:
                    return MaintenanceFailure(definition.name, subscript, error)
                report.steps += steps
                done = {s.subscript for s in steps if s.view == definition.name}
                touched.update((definition.key, s) for s in done)
                subscript = max(done, default=subscript)
            elif affected:
                report.skipped += 1
                touched.add((definition.key, subscript))
            subscript += 1
        return None

    def _examine(self, definition: ObjectDef, subscript: int, start: int, version: int,
                 touched: set[tuple[str, int]], recomputed: set[int]
                 ) -> tuple[PendingStep, PartMeta | None, bool, bool]:
        """The step that computes part ``subscript`` of ``definition``, its stored part, whether it is stale (an
        input changed after it was computed, or it reads one of the ``recomputed`` parts of its own) and whether
        an input changed at all since ``version``."""
        how, query = self.clause(definition, subscript, subscript != start)
        refs = self.timeline.resolve(query, definition, subscript)
        previous = self.catalog.state(definition.name).parts.get(subscript)
        inputs = [(ref.definition, s) for ref in refs if ref.definition.partitioned
                  for s in existing(ref.subscripts, self.catalog.state(ref.definition.name).parts)]
        affected = any(self._touched(d, s, version, touched) for d, s in inputs)
        stale = (previous is None or not previous.how.same_clause(how)
                 or any(self._changed(d, s) > previous.verified for d, s in inputs)
                 or any(d.key == definition.key and s in recomputed for d, s in inputs))
        return PendingStep(definition, subscript, how, query, refs, True), previous, stale, affected

    def _changed(self, definition: ObjectDef, subscript: int) -> int:
        meta = self.catalog.state(definition.name).parts.get(subscript) if definition.partitioned else None
        return meta.changed if meta is not None else 0

    def _touched(self, definition: ObjectDef, subscript: int, version: int, touched: set[tuple[str, int]]) -> bool:
        return (definition.key, subscript) in touched or self._changed(definition, subscript) >= version
