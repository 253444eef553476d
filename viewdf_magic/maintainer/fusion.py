"""Fused parts (issue 17): a view whose part is a projection of one part of another view (a pattern's
or a window's final view, the paper's View2 over Helper) or of a stream gets no Spark job of its own.
When its source's part is written (a view step, or a stream batch under AUTO maintenance), the same job
adds one struct column holding the view's row (NULL where the row is filtered out), counts and hashes
it, and the view's part is recorded as that column of the source's folder (storage/slices.py). Reading,
lineage, VERIFY, retention and late-data repair see an ordinary part; a repair recomputes it on its own.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from pyspark.sql import DataFrame

from ..catalog.catalog import Catalog
from ..catalog.model import PART_TIMESTAMP, ObjectDef
from ..language.projection import Projection, projection
from ..language.queries import CompiledQuery, RefKind
from ..language.statements import ClauseKind
from ..storage.parts import Embedded
from .execute import QueryRunner
from .timeline import Timeline
from .views import CompiledView


@dataclass(frozen=True)
class Fusion:
    """A view whose parts ``first .. last`` are written with its source's, by ``sql`` over ``placeholder``
    (the source's rows, with the view's row in struct column ``column``); ``hows`` are the clauses
    (initialize, update) its parts are recorded as computed by, ``queries`` those clauses."""

    view: ObjectDef
    placeholder: str
    sql: str
    column: str
    hows: dict[int, tuple[ClauseKind, CompiledQuery]]

    @property
    def shape(self) -> str:
        """``sql`` with its source's placeholder named alike for every query."""
        return _shape(self.placeholder, self.sql)


def _shape(placeholder: str, sql: str) -> str:
    return sql.replace(placeholder, "__vdf_source")


def embed(fusions: list[Fusion], runner: QueryRunner, frame: DataFrame) -> tuple[DataFrame, Embedded]:
    """``frame`` (a source's rows with PART_TIMESTAMP) with each fused view's struct column added."""
    for fusion in fusions:
        with runner.named({fusion.placeholder: frame}) as sql:
            frame = sql(fusion.sql)
    return frame, tuple((f.column, f.view.schema) for f in fusions)


class Fuser:
    """Decides which views' parts are written with their source's."""

    def __init__(self, catalog: Catalog, timeline: Timeline, compiled: Callable[[ObjectDef], CompiledView],
                 clause: Callable[[ObjectDef, int, bool], tuple[ClauseKind, CompiledQuery]]) -> None:
        self.catalog = catalog
        self.timeline = timeline
        self.compiled = compiled
        self.clause = clause          # which clause computes a view's part (Maintainer.clause)

    def analyse(self, view: ObjectDef, query: CompiledQuery) -> tuple[str, Projection]:
        """The placeholder of the one part ``query`` projects, and the projection (or why not)."""
        parts = [b for b in query.bindings if b.kind is not RefKind.TABLE]
        if len(query.bindings) != 1 or len(parts) != 1:
            return "", Projection(None, reason="it reads more than one input")
        binding = parts[0]
        source = self.catalog.get(binding.name)
        if binding.kind is not RefKind.PARTS or binding.lower is not binding.upper or binding.upper is None \
                or binding.upper.offset(query.variable or "") != 0:
            return "", Projection(None, reason=f"it reads {binding.text}, not the part it computes")
        if source is None or source.kind not in ("view", "stream") or source.key == view.key:
            return "", Projection(None, reason=f"{binding.name} is neither another view nor a stream")
        if source.partition_length != view.partition_length:
            return "", Projection(None, reason=f"{binding.name} has another partition length")
        columns = tuple(source.schema.fieldNames()) + (PART_TIMESTAMP,)
        found = query.analysed(("projection", binding.placeholder, columns),
                               lambda tree: projection(tree, binding.placeholder, columns))
        if found.items is not None and len(found.items) != len(view.schema.fields):
            return "", Projection(None, reason="its columns do not match the view's")
        return binding.placeholder, found

    def describe(self, view: ObjectDef) -> str:
        """EXPLAIN VIEW's sentence on whether the view's parts are written with its source's."""
        compiled = self.compiled(view)
        placeholder, found = self.analyse(view, compiled.update)
        if found.items is None:
            return f"{view.name}'s parts run Spark jobs of their own: its UPDATE query is not a projection of one " \
                   f"part of another view or a stream ({found.reason})."
        source = compiled.update.bindings[0].name
        definition = self.catalog.get(source)
        when = "(under AUTO maintenance, for the parts a batch brings)" if definition is not None \
            and definition.kind == "stream" else "(when both are maintained together)"
        return (f"{view.name}'s parts need no Spark job of their own: its UPDATE is a projection of {source}[j], so "
                f"each part is computed in the job that writes {source}'s part {when}.")

    def fusions(self, source: ObjectDef, first: int, last: int, blocked: set[str]) -> list[Fusion]:
        """The views reading ``source`` whose parts ``first .. last`` can be written with ``source``'s: each
        is a projection of ``source``'s same part, by one query for the whole run, and is due at ``first``."""
        found = []
        for view in self.catalog.dependents(source.name):
            if view.key in blocked or view.partition_length != source.partition_length \
                    or self.timeline.next_part(view) != first:
                continue
            has_parts = bool(self.catalog.state(view.name).parts)
            hows = {s: self.clause(view, s, has_parts or s != first) for s in range(first, last + 1)}
            fusion = self._fusion(source, view, hows)
            if fusion is not None:
                found.append(fusion)
        return found

    def batch_fusions(self, stream: ObjectDef, barred: set[str]) -> list[Fusion]:
        """The views reading ``stream`` that may be written with its next batch: a projection of its part
        by the query of their next part, not ``barred``, and caught up with the stream (or without parts).
        Which of their parts a batch brings is decided once it is written (``batch_parts``)."""
        newest = self.catalog.state(stream.name).newest
        found = []
        for view in self.catalog.dependents(stream.name):
            if view.key in barred or view.partition_length != stream.partition_length:
                continue
            has_parts = bool(self.catalog.state(view.name).parts)
            following = self.timeline.next_part(view)
            if has_parts and (newest is None or following != newest + 1):
                continue
            subscript = following if following is not None else 0 if newest is None else newest + 1
            fusion = self._fusion(stream, view, {subscript: self.clause(view, subscript, has_parts)})
            if fusion is not None:
                found.append(fusion)
        return found

    def batch_parts(self, candidate: Fusion, stream: ObjectDef, newest_before: int | None, last: int) -> Fusion | None:
        """``candidate`` (of ``batch_fusions``), once its batch is published, with the parts it holds: the view's
        next part on, through the batch's ``last``, while each part is one the batch brought (after the
        stream's ``newest_before``) and its query is fused as the written one; None when there is none."""
        view = candidate.view
        has_parts = bool(self.catalog.state(view.name).parts)
        subscript = self.timeline.next_part(view)
        hows: dict[int, tuple[ClauseKind, CompiledQuery]] = {}
        shapes: dict[str, str | None] = {}
        while subscript is not None and subscript <= last and (newest_before is None or subscript > newest_before):
            how, query = self.clause(view, subscript, has_parts or bool(hows))
            if query.sql not in shapes:
                fused = self._fused(stream, view, query, candidate.column)
                shapes[query.sql] = None if fused is None else _shape(*fused)
            if shapes[query.sql] != candidate.shape:
                break
            hows[subscript] = (how, query)
            subscript += 1
        return dataclasses.replace(candidate, hows=hows) if hows else None

    def _fused(self, source: ObjectDef, view: ObjectDef, query: CompiledQuery, column: str) -> tuple[str, str] | None:
        """The placeholder of ``source``'s part in ``query``, and the SQL adding ``view``'s row to that part's
        rows as struct ``column``; None when ``query`` is not a projection of it."""
        placeholder, found = self.analyse(view, query)
        if found.items is None or query.bindings[0].name.lower() != source.key:
            return None
        return placeholder, found.fused(column, [(f.name, f.dataType.simpleString()) for f in view.schema.fields])

    def _fusion(self, source: ObjectDef, view: ObjectDef, hows: dict[int, tuple[ClauseKind, CompiledQuery]]) -> Fusion | None:
        column = f"__vdf_{view.id}"
        fused: dict[str, tuple[str, str]] = {}       # query text -> (placeholder, fused SQL)
        for _, query in hows.values():
            if query.sql not in fused:
                found = self._fused(source, view, query, column)
                if found is None:
                    return None
                fused[query.sql] = found
        if len({_shape(*found) for found in fused.values()}) != 1:
            return None
        placeholder, sql = next(iter(fused.values()))
        return Fusion(view, placeholder, sql, column, hows)
