"""Which parts exist, and which parts a query needs: the paper's NEXT[V] and readiness bitmaps.

A stream's parts are contiguous from its first to its newest part (gaps are
sealed empty), and a view's parts are contiguous from its start to NEXT[V]-1,
so "does part s of X exist" is a comparison, and readiness of V[j] is that
comparison for every part V[j]'s query names.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping

from ..catalog.catalog import Catalog
from ..catalog.model import CATALOG_DEFINITION, LineageRange, ObjectDef
from ..errors import ViewDFError
from ..language.queries import Binding, CompiledQuery, RefKind


@dataclass(frozen=True)
class ResolvedRef:
    """A binding of a query, resolved for one computation to concrete parts ``first .. last``."""

    binding: Binding
    definition: ObjectDef
    first: int | None = None      # None for tables and the catalog view
    last: int | None = None

    @property
    def text(self) -> str:
        """The concrete parts, e.g. ``Helper[23668444]``; just the name for tables."""
        if self.first is None or self.last is None:
            return self.binding.name
        return LineageRange(self.binding.name, self.first, self.last).text

    @property
    def subscripts(self) -> range:
        if self.first is None or self.last is None:
            return range(0)
        return range(self.first, self.last + 1)


def existing(subscripts: range, parts: Mapping[int, object]) -> list[int]:
    """The subscripts in ``subscripts`` that ``parts`` has, in order, without walking a huge range."""
    if subscripts.stop - subscripts.start <= len(parts):
        return [s for s in subscripts if s in parts]
    return sorted(s for s in parts if s in subscripts)


def check_retained(catalog: Catalog, query: CompiledQuery, refs: list[ResolvedRef]) -> None:
    """Refuse to read parts that retention dropped: the result would silently miss rows."""
    for ref in refs:
        if ref.first is None or ref.last is None or ref.first > ref.last:
            continue
        state = catalog.state(ref.definition.name) if ref.definition.key in catalog.states else None
        if state is not None and state.dropped_before is not None and ref.first < state.dropped_before:
            raise query.fragment.error(
                f"{ref.text} needs parts of {ref.definition.name} before part {state.dropped_before}, which "
                f"were dropped by retention (RETAIN {state.retain} PARTS)", ref.binding.start, ref.binding.end)


class Timeline:
    """Answers questions about existing parts from the catalog."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._starts: dict[str, int | None] | None = None

    @contextmanager
    def unchanging(self) -> Iterator[None]:
        """A block in which the catalog does not change: each object's first part is found once (a run of
        thousands of parts resolves the same references for each)."""
        if self._starts is not None:
            yield
            return
        self._starts = {}
        try:
            yield
        finally:
            self._starts = None

    def start(self, definition: ObjectDef) -> int | None:
        """The first part subscript of a stream or view (None while unknown). A view without a
        fixed start begins with its earliest source, so late rows before it move it back."""
        if self._starts is None:
            return self._start(definition)
        if definition.key not in self._starts:
            self._starts[definition.key] = self._start(definition)
        return self._starts[definition.key]

    def _start(self, definition: ObjectDef) -> int | None:
        state = self.catalog.state(definition.name)
        if definition.kind == "stream":
            return state.first
        if definition.start is not None:
            return definition.start
        natural = self._start_from_sources(definition)
        if natural is None and state.parts:
            return state.oldest_part()
        return natural

    def _start_from_sources(self, definition: ObjectDef) -> int | None:
        starts = []
        for source in definition.sources:
            source_def = self.catalog.get(source)
            if source_def is None or not source_def.partitioned or source_def.key == definition.key:
                continue
            if source_def.owner is not None and source_def.owner.lower() == definition.key:
                continue     # a translated view starts with its data, not with its helpers
            first = self.start(source_def)
            if first is not None:
                starts.append(first * source_def.length)
        if not starts:
            return None
        return min(starts) // definition.length

    def newest(self, definition: ObjectDef) -> int | None:
        """The newest existing part subscript."""
        state = self.catalog.state(definition.name)
        if definition.kind == "stream":
            return state.newest
        return state.newest_part()

    def next_part(self, definition: ObjectDef) -> int | None:
        """NEXT[V]: the subscript of the view's next part."""
        newest = self.newest(definition)
        return newest + 1 if newest is not None else self.start(definition)

    def horizon(self) -> int | None:
        """End (epoch seconds) of the newest stream part; no view part starts at or after it."""
        ends = [(d_state.newest + 1) * d.length
                for d in self.catalog.objects.values() if d.kind == "stream"
                for d_state in [self.catalog.state(d.name)] if d_state.newest is not None]
        return max(ends) if ends else None

    def uniqueness(self, view: ObjectDef, subscript: int) -> Callable[[CompiledQuery, tuple[str, ...]], bool]:
        """For ``view``'s part ``subscript``: whether to compute it by the guarded UPDATE, that is whether no
        two rows of the stream parts a guard names (``X[j] IS UNIQUE (..)``) share the columns, as the
        stream declares or a step's job found, or, for a part nobody checked yet, as expected: unless the
        part before it repeated them. The step's job then checks (storage/repeats.py), and a part that
        repeats them after all is computed again by the general UPDATE (a part not written or sealed yet
        never qualifies)."""
        def unique(guard: CompiledQuery, columns: tuple[str, ...]) -> bool:
            for ref in self.resolve(guard, view, subscript):
                definition, state = ref.definition, self.catalog.state(ref.definition.name)
                if ref.first is None or ref.last is None or state.newest is None or ref.last > state.newest:
                    return False
                for s in ref.subscripts:
                    repeats = definition.repeats_in(state.parts.get(s), columns)
                    if repeats is None:
                        repeats = definition.repeats_in(state.parts.get(s - 1), columns) is True
                    if repeats:
                        return False
            return True
        return unique

    def unchecked(self, guard: CompiledQuery, view: ObjectDef, subscript: int, columns: tuple[str, ...]
                  ) -> list[ResolvedRef]:
        """The parts ``guard`` names at ``view``'s part ``subscript`` for which nobody knows yet whether two of
        their rows share ``columns`` (each a reference to one stream part)."""
        found = []
        for ref in self.resolve(guard, view, subscript):
            state = self.catalog.state(ref.definition.name)
            if any(ref.definition.repeats_in(state.parts.get(s), columns) is None for s in ref.subscripts):
                found.append(ref)
        return found

    def resolve(self, query: CompiledQuery, target: ObjectDef | None, subscript: int | None,
                scope: int | None = None) -> list[ResolvedRef]:
        """Concrete parts for each binding of ``query``, computing ``target[subscript]``
        (or an ad hoc query when ``target`` is None); ``scope`` limits ranges open below
        (``X[.. j]``) to their last ``scope`` parts."""
        resolved = []
        for binding in query.bindings:
            if binding.kind is RefKind.CATALOG:
                resolved.append(ResolvedRef(binding, CATALOG_DEFINITION))
                continue
            definition = self.catalog.get(binding.name)
            if definition is None:
                if target is None or binding.name.lower() != target.key:
                    raise ViewDFError(f"'{binding.name}' no longer exists")
                definition = target
            resolved.append(self._resolve_one(binding, definition, query, target, subscript, scope))
        return resolved

    def _resolve_one(self, binding: Binding, definition: ObjectDef, query: CompiledQuery,
                     target: ObjectDef | None, subscript: int | None, scope: int | None) -> ResolvedRef:
        if binding.kind in (RefKind.TABLE, RefKind.CATALOG):
            return ResolvedRef(binding, definition)
        first = self.start(definition)
        if binding.kind is RefKind.ALL:      # a bare name reads the parts the warehouse still has
            dropped_before = self.catalog.state(definition.name).dropped_before
            if first is not None and dropped_before is not None:
                first = max(first, dropped_before)
            newest = self.newest(definition)
            return ResolvedRef(binding, definition, first, newest if first is not None else None)
        if binding.kind is RefKind.AS_OF:
            assert target is not None and subscript is not None
            last = ((subscript + 1) * target.length - 1) // definition.length
            return ResolvedRef(binding, definition, first, last if first is not None else None)
        value = subscript if query.variable else self.newest(definition)
        if value is None:
            raise query.fragment.error(f"{definition.name} has no parts yet", binding.start, binding.end)
        env = {query.variable: value} if query.variable else {"LATEST": value}
        assert binding.upper is not None
        try:
            last = binding.upper.evaluate(env)
            lower = None if binding.lower is None else binding.lower.evaluate(env)
        except ZeroDivisionError:
            raise query.fragment.error(f"division by zero in a partition subscript ({binding.text})",
                                       binding.start, binding.end) from None
        if lower is None:
            lower = first if first is not None else last + 1
            if scope is not None:
                lower = max(lower, last - scope + 1)
        return ResolvedRef(binding, definition, lower, last)

    def available(self, ref: ResolvedRef, target: ObjectDef | None) -> bool:
        """Does every part ``ref`` names exist (parts before an object's first part count as empty)?"""
        if ref.first is None or ref.last is None or ref.first > ref.last:
            return True
        if target is not None and ref.definition.key == target.key:
            return True           # the view's own earlier parts: validated to be before the current one
        if ref.definition.kind == "stream":
            newest = self.newest(ref.definition)
            return newest is not None and ref.last <= newest
        next_part = self.next_part(ref.definition)
        return next_part is not None and ref.last < next_part

    def lineage(self, refs: list[ResolvedRef], computing: tuple[str, int] | None = None) -> tuple[LineageRange, ...]:
        """Exactly the existing parts that ``refs`` read; ``computing`` (a view's key and a part) counts
        that view's parts up to that one as existing (a range step reads its own run's parts)."""
        ranges = []
        for ref in refs:
            if ref.first is None or ref.last is None:
                continue
            start, newest = self.start(ref.definition), self.newest(ref.definition)
            if computing is not None and ref.definition.key == computing[0]:
                newest = computing[1] if newest is None else max(newest, computing[1])
                start = computing[1] if start is None else start
            if start is None or newest is None:
                continue
            first, last = max(ref.first, start), min(ref.last, newest)
            if first <= last:
                ranges.append(LineageRange(ref.definition.name, first, last))
        return tuple(ranges)
