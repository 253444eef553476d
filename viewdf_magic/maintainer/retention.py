"""Retention: the oldest part each stream or view still needs, and dropping the parts before it.

An object keeps every part that a view may still read: the parts its readers' next steps
reference and, when every stream upstream of a reader has an ALLOWED LATENESS, the parts
a repair of the oldest late-repairable part would reference. ``RETAIN n PARTS`` drops what
is older than the newest n parts, within that limit; a helper view owned by a translated
view needs no RETAIN: it keeps exactly what is still needed, once lateness is bounded.
Without a lateness bound, late rows can reach any part, so helpers keep everything.
"""

from __future__ import annotations

import time
from typing import Callable

from ..catalog.actions import DropParts
from ..catalog.catalog import Catalog
from ..catalog.model import ObjectDef
from ..errors import ViewDFError
from ..language.queries import CompiledQuery, RefKind
from ..timeparts import format_part
from .steps import ClauseOf
from .timeline import Timeline, check_retained
from .views import CompiledView


def _upstream_streams(catalog: Catalog, definition: ObjectDef) -> list[ObjectDef]:
    found: list[ObjectDef] = []
    seen: set[str] = set()
    pending = [definition]
    while pending:
        item = pending.pop()
        for source in item.sources:
            source_def = catalog.get(source)
            if source_def is None or source_def.key in seen:
                continue
            seen.add(source_def.key)
            if source_def.kind == "stream":
                found.append(source_def)
            elif source_def.kind == "view":
                pending.append(source_def)
    return found


class Retention:
    """Decides and applies part retention after maintenance."""

    def __init__(self, catalog: Catalog, timeline: Timeline, compiled: Callable[[ObjectDef], CompiledView],
                 clause: ClauseOf) -> None:
        self.catalog, self.timeline = catalog, timeline
        self.compiled, self.clause = compiled, clause       # a view's compiled clauses, the clause of a part

    def earliest_recomputable(self, reader: ObjectDef) -> int | None:
        """The oldest part of ``reader`` that may still be computed or repaired; None: any part."""
        next_part = self.timeline.next_part(reader)
        if next_part is None:
            return None
        earliest = next_part
        for stream in _upstream_streams(self.catalog, reader):
            state = self.catalog.state(stream.name)
            if state.newest is None:
                continue
            if state.lateness is None:
                return None
            earliest = min(earliest, (state.newest - state.lateness) * stream.length
                           // reader.length)
        return earliest

    def _clauses(self, reader: ObjectDef) -> list[CompiledQuery]:
        compiled = self.compiled(reader)
        clauses = [compiled.initialize, compiled.update]
        if compiled.refresh_every and compiled.recompute is not None:
            clauses.append(compiled.recompute)
        return clauses

    def needed_from(self, definition: ObjectDef, with_repairs: bool) -> int | None:
        """The oldest part of ``definition`` its readers may still read (None: no bound).

        Readers' next steps always count; ``with_repairs`` adds the parts late-data repairs may read."""
        bound: int | None = self.timeline.newest(definition)
        if bound is None:
            return None
        bound += 1
        readers = [d for d in self.catalog.views()
                   if d.key == definition.key or definition.key in {s.lower() for s in d.sources}]
        for reader in readers:
            at = self.earliest_recomputable(reader) if with_repairs else self.timeline.next_part(reader)
            if at is None:
                return None
            for query in self._clauses(reader):
                for binding in query.bindings:
                    if binding.name.lower() != definition.key or binding.kind is RefKind.TABLE:
                        continue
                    if binding.kind is not RefKind.PARTS or binding.lower is None:
                        return None        # unsubscripted or open below: every part is read
                    assert query.variable is not None      # every clause of a ViewDF names its part variable
                    lowest = binding.lower.smallest_from(query.variable, at)
                    if lowest is None:
                        return None        # no bound on how far back later steps read
                    bound = min(bound, lowest)
        return bound

    def cutoffs(self) -> dict[str, int]:
        """For each object that can drop parts now: the subscript before which they go."""
        result = {}
        for definition in list(self.catalog.objects.values()):
            if not definition.partitioned:
                continue
            state = self.catalog.state(definition.name)
            if not state.parts or (state.retain is None and definition.owner is None):
                continue
            before: int | None
            if state.retain is not None:
                needed = self.needed_from(definition, with_repairs=False)
                newest = self.timeline.newest(definition)
                assert newest is not None      # it has parts
                wanted = newest - state.retain + 1
                before = wanted if needed is None else min(wanted, needed)
            else:
                before = self.needed_from(definition, with_repairs=True)
                if before is None:
                    continue
            oldest = state.oldest_part()
            if oldest is not None and before > oldest and before > (state.dropped_before or before - 1):
                result[definition.key] = before
        return result

    def apply(self) -> dict[str, int]:
        """Drop every part retention no longer keeps. The catalog records their folders as garbage;
        ``storage.vacuum.sweep`` deletes them after the grace period, so a reader still scanning one
        of them (another process, an older catalog version) is not cut short."""
        cutoffs = self.cutoffs()
        now = time.time()
        self.catalog.commit([DropParts(key, before, now)
                             for key, before in cutoffs.items()])
        return cutoffs

    def unrepairable(self, stream: ObjectDef, subscript: int) -> str | None:
        """Why late rows for ``stream``'s part ``subscript`` cannot be repaired (None if they can): a view
        part they change, or a part its recomputation reads, was dropped by retention."""
        start_time = subscript * stream.length
        for view in self.catalog.downstream(stream.name)[1:]:
            state = self.catalog.state(view.name)
            at = start_time // view.length
            newest = state.newest_part()
            if state.dropped_before is None or newest is None or at > newest:
                continue
            if at < state.dropped_before:
                return (f"the part of {view.name} they change ({format_part(at, view.length)}) "
                        f"was dropped by retention")
            start = self.timeline.start(view)
            how, query = self.clause(view, at, at != start)
            try:
                check_retained(self.catalog, query, self.timeline.resolve(query, view, at))
            except ViewDFError as error:
                return f"recomputing {view.name}[{at}] would read parts dropped by retention ({error.message})"
        return None
