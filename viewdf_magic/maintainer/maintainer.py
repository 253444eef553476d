"""The view maintainer: computes every ready view part, in dependency order."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Callable

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from tqdm.auto import tqdm

from ..catalog.catalog import Catalog
from ..catalog.model import LineageRange, ObjectDef, PartMeta
from ..errors import ViewDFError
from ..language.queries import CompiledQuery
from ..storage.parts import PartStore
from ..timeparts import format_part, part_start
from .execute import QueryRunner, check_runtime, conform
from .timeline import ResolvedRef, Timeline
from .views import CompiledView, ViewDefiner, compile_existing

PROGRESS_MIN_STEPS = 10
HISTORY_SIZE = 500


@dataclass(frozen=True)
class StepReport:
    """What one maintenance step did."""

    view: str
    subscript: int
    part_timestamp: pd.Timestamp
    how: str                      # initialize or update
    rows: int
    seconds: float
    lineage: tuple[LineageRange, ...]
    sql: str                      # the query with partition references resolved

    def __str__(self) -> str:
        read = ", ".join(_range_text(r) for r in self.lineage) or "nothing"
        return (f"{self.view}[{self.subscript}] ({self.part_timestamp:%Y-%m-%d %H:%M:%S}) "
                f"{self.how.upper()}: {self.rows} rows in {self.seconds:.3f}s, read {read}")


def _range_text(r: LineageRange) -> str:
    return f"{r.name}[{r.first}]" if r.first == r.last else f"{r.name}[{r.first} .. {r.last}]"


def resolved_sql(query: CompiledQuery, refs: list[ResolvedRef]) -> str:
    """The query text with each placeholder shown as the concrete parts it reads."""
    text = query.sql
    for ref in refs:
        if ref.first is None or ref.last is None:
            shown = ref.binding.name
        elif ref.first == ref.last:
            shown = f"{ref.binding.name}[{ref.first}]"
        else:
            shown = f"{ref.binding.name}[{ref.first} .. {ref.last}]"
        text = text.replace(ref.binding.placeholder, shown)
    return text


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
        self._compiled: dict[str, CompiledView] = {}

    def compiled(self, definition: ObjectDef) -> CompiledView:
        cached = self._compiled.get(definition.key)
        if cached is None or cached.definition is not definition:
            cached = compile_existing(definition, self.catalog)
            self._compiled[definition.key] = cached
        return cached

    def forget(self, definition: ObjectDef) -> None:
        self._compiled.pop(definition.key, None)

    # -- readiness -----------------------------------------------------------------------
    def next_step(self, definition: ObjectDef) -> tuple[int, str, CompiledQuery, list[ResolvedRef]] | None:
        """The view's next part, if every part its query references exists."""
        subscript = self.timeline.next_part(definition)
        horizon = self.timeline.horizon()
        if subscript is None or horizon is None or subscript * definition.partition_length >= horizon:
            return None
        view = self.compiled(definition)
        has_parts = bool(self.catalog.state(definition.name).parts)
        how, query = ("update", view.update) if has_parts else ("initialize", view.initialize)
        refs = self.timeline.resolve(query, definition, subscript)
        if all(self.timeline.available(ref, definition) for ref in refs):
            return subscript, how, query, refs
        return None

    # -- computing -----------------------------------------------------------------------
    def cascade(self) -> list[StepReport]:
        """Compute every ready part of every view, sources before dependents."""
        reports: list[StepReport] = []
        bar = None
        total = self._estimated_steps()
        if self.progress and total >= PROGRESS_MIN_STEPS:
            bar = tqdm(total=total, desc="maintaining views", unit="part", leave=False)
        try:
            progressed = True
            while progressed:
                progressed = False
                for definition in self.catalog.views():
                    while (step := self.next_step(definition)) is not None:
                        reports.append(self.compute(definition, *step))
                        progressed = True
                        if bar is not None:
                            bar.update(1)
        finally:
            if bar is not None:
                bar.close()
        return reports

    def _estimated_steps(self) -> int:
        horizon = self.timeline.horizon()
        if horizon is None:
            return 0
        total = 0
        for definition in self.catalog.views():
            next_part = self.timeline.next_part(definition)
            if next_part is not None:
                total += max(0, -(-horizon // definition.partition_length) - next_part)
        return total

    def compute(self, definition: ObjectDef, subscript: int, how: str, query: CompiledQuery,
                refs: list[ResolvedRef]) -> StepReport:
        """Compute, store and commit one view part."""
        context = f"computing {definition.name}[{subscript}] ({how.upper()})"
        started = time.perf_counter()
        lineage = self.timeline.lineage(refs)
        with self.runner.bound(query, refs, context=context) as frame:
            frame = conform(frame, definition.schema, query, how.upper())
            folder, rows = check_runtime(lambda: self.store.write_part(definition, subscript, frame),
                                         query, context)
        seconds = time.perf_counter() - started
        meta = PartMeta(subscript, rows, (folder,) if folder else (), seconds, lineage, time.time(), how)
        self.catalog.commit([{"op": "part", "name": definition.key, "part": meta.to_json()}])
        if folder:
            self.store.remember(definition, subscript, folder)
        report = StepReport(definition.name, subscript, part_start(subscript, definition.partition_length),
                            how, rows, seconds, lineage, resolved_sql(query, refs))
        self.history.append(report)
        return report

    def recompute(self, definition: ObjectDef, subscript: int) -> DataFrame:
        """The view part computed from scratch with the view's RECOMPUTE query."""
        view = self.compiled(definition)
        if view.recompute is None:
            raise ViewDFError(f"{definition.name} has no RECOMPUTE clause, so it cannot be recomputed "
                              f"from scratch; add RECOMPUTE {definition.name}[j] AS <query>")
        refs = self.timeline.resolve(view.recompute, definition, subscript)
        context = f"recomputing {definition.name}[{subscript}] ({format_part(subscript, definition.partition_length)})"
        with self.runner.bound(view.recompute, refs, context=context) as frame:
            result = conform(frame, definition.schema, view.recompute, "RECOMPUTE")
            return check_runtime(lambda: result.localCheckpoint(), view.recompute, context)
