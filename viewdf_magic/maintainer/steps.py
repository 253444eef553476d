"""What a maintenance step is: a view's pending part, the step analysed and ready to run, and what its
Spark job wrote."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

import pandas as pd

from ..catalog.actions import KeyFacts
from ..catalog.catalog import Catalog
from ..catalog.model import PART_TIMESTAMP, ObjectDef
from ..language.emptiness import EmptyWhen, empty_when
from ..language.queries import CompiledQuery
from ..language.statements import ClauseKind
from ..storage.parts import Counted, PartStore
from .fusion import Fusion
from .timeline import ResolvedRef


def resolved_sql(query: CompiledQuery, refs: list[ResolvedRef]) -> str:
    """The query text with each placeholder shown as the concrete parts it reads."""
    text = query.sql
    for ref in refs:
        text = text.replace(ref.binding.placeholder, ref.text)
    return text


class Written(NamedTuple):
    """What a step's Spark job stored: its folder ("" when nothing), what it holds of the part (key None)
    and of each fused view, the fusions written with it, and what it found of the stream parts its guard
    names (catalog/actions.py's KeyFacts; None when it did not read one of them whole)."""

    folder: str
    counted: dict[str | None, Counted]
    fusions: tuple[Fusion, ...]
    facts: tuple[KeyFacts, ...] | None = ()


@dataclass(frozen=True)
class PendingStep:
    """A view's next part and the concrete parts its query needs."""

    view: ObjectDef
    subscript: int
    how: ClauseKind               # the clause that computes the part
    query: CompiledQuery
    refs: list[ResolvedRef]
    ready: bool


@dataclass(frozen=True)
class PreparedStep:
    """A step analysed on the maintainer's thread; ``run`` does its Spark work (none when ``job`` is None:
    ``result`` is then known), which may happen on another thread."""

    step: PendingStep
    started: float
    lineage: tuple
    plan: str | None
    result: Written | None
    folders: tuple[str, ...] | None = None      # the part's slices when it holds another part's rows
    job: Callable[[], Written] | None = None

    def run(self) -> Written:
        if self.job is None:
            assert self.result is not None
            return self.result
        return self.job()


class PartPreview:
    """A step report's first rows of its part, read on demand and remembered (a notebook renders a
    report as text and as HTML). Cheap to make: a backfill makes one per part."""

    def __init__(self, catalog: Catalog, store: PartStore, definition: ObjectDef, subscript: int) -> None:
        self.catalog, self.store, self.definition, self.subscript = catalog, store, definition, subscript
        self.read: dict[int, pd.DataFrame] = {}

    def __call__(self, limit: int) -> pd.DataFrame:
        if limit not in self.read:
            state = self.catalog.state(self.definition.name)
            frame = self.store.read_parts(self.definition, state, [self.subscript])
            self.read = {limit: frame.drop(PART_TIMESTAMP).limit(limit).toPandas()}
        return self.read[limit]


def empty_rule(query: CompiledQuery) -> EmptyWhen:
    """When ``query`` certainly returns no rows, over its placeholders (analysed once per compiled query)."""
    inputs = frozenset(binding.placeholder for binding in query.bindings)
    return query.analysed(("empty when", inputs), lambda tree: empty_when(tree, inputs))


# The clause that computes a view's part: (view, subscript, whether earlier parts exist) -> (kind, query).
ClauseOf = Callable[[ObjectDef, int, bool], tuple[ClauseKind, CompiledQuery]]
