"""CREATE VIEW over ``FROM S [WINDOW w SLIDE s]``: check the query, translate it, and yield the
ViewDF statements of its helper views and final view for the warehouse to publish."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator, cast

import pandas as pd
from pyspark.sql.types import StructType

from ..catalog.catalog import Catalog
from ..catalog.model import ObjectDef
from ..errors import ViewDFError
from ..language.parser import parse
from ..language.source import Fragment
from ..language.statements import ClauseKind, CreateQueryView, CreateViewDF, DeltaQuery
from ..maintainer.views import ViewDefiner
from ..translation import (Column, WindowClause, WindowSource, WindowTranslation, analyze_window, find_window,
                           translate_window)
from ..translation.match_query import find_match_recognize
from ..translation.pattern_query import find_pattern
from ..translation.window_diagram import chain_edges
from ..translation.window_plan import affine, chunk_length
from ..maintainer.maintainer import Maintainer
from ..maintainer.steps import PendingStep
from ..timeparts import format_part, part_start
from ..wording import named_spans, plural
from .pattern_views import origin_query


@dataclass(frozen=True)
class WindowViewPlan:
    """A checked window query and its translation."""

    statement: CreateQueryView
    source: ObjectDef
    slide: int                      # seconds: the final view's partition length
    translation: WindowTranslation

    @property
    def helpers(self) -> tuple[str, ...]:
        return tuple(view.name for view in self.translation.views()[:-1])

    @property
    def description(self) -> str:
        helpers = f", helpers {', '.join(self.helpers)}" if self.helpers else ""
        recomputed = self.translation.columns("recomputed") if self.translation.holistic else ""
        mixed = f" ({recomputed} recomputed over the window)" if recomputed else ""
        return (f"PARTITION LENGTH {self.slide}, {self.translation.mode} sliding window{mixed}{helpers}; "
                f"EXPLAIN VIEW shows how it is maintained")

    def statements(self, catalog: Catalog) -> Iterator[tuple[CreateViewDF, dict]]:
        """The ViewDF statement of each helper, then of the final view, with the catalog fields
        to set; each is generated once the views it reads are defined."""
        name, origin = self.statement.name.text, self.statement.fragment.text
        for view in self.translation.views():
            # each helper is defined before the views that read it are generated
            [generated] = parse(self.translation.text(view, lambda helper: columns(cast(ObjectDef, catalog.get(helper)).schema)))
            assert isinstance(generated, CreateViewDF)
            if view.role == "final":
                fields = {"origin": origin, "notes": self.translation.notes(),
                          "sources": (self.source.name,) + self.helpers}
            else:   # described after its text: generating it decides some of what it does (REFRESH EVERY)
                summary = next(v.summary for v in self.translation.views() if v.name == view.name)
                fields = {"origin": origin, "owner": name, "notes": f"Helper view of {name}: {summary}."}
            yield generated, fields


def plan_window_view(statement: CreateQueryView, catalog: Catalog, definer: ViewDefiner,
                     existing: ObjectDef | None = None) -> WindowViewPlan:
    """Check a window query (positioned errors) and translate it. ``existing``: the view it defined, translated
    again for EXPLAIN (its schema is the query's output, and its helpers exist)."""
    clause = find_window(statement.query)
    if clause is None:
        raise statement.fragment.error(
            "this view is an ordinary query; only pattern queries (FROM stream PATTERN [a, b+] ...) and "
            "sliding-window aggregates (FROM stream [WINDOW 60 MINUTES]) are translated into ViewDFs "
            "automatically. Write it as CREATE VIEW name AS INITIALIZE name[i] AS ... UPDATE name[j] AS ...",
            statement.query.start)
    source = catalog.get(clause.source.text)
    if source is None or not source.partitioned:
        what = f"'{clause.source.text}' is a table, not a stream or view" if source is not None else \
            f"unknown stream or view '{clause.source.text}'"
        raise statement.fragment.error(what, clause.source.start, clause.source.end)
    length = source.length
    slide = clause.slide or length
    for value, at, what in ((clause.width, clause.width_at, "WINDOW"), (slide, clause.slide_at, "SLIDE")):
        if value % length:
            assert at is not None      # the default SLIDE is the partition length itself
            raise statement.fragment.error(f"{what} {value} s is not a multiple of {source.name}'s partition "
                                           f"length {length} s", *at)
    if slide > clause.width:
        assert clause.slide_at is not None      # the default SLIDE, the partition length, divides the WINDOW
        raise statement.fragment.error(f"SLIDE {slide} s is longer than the WINDOW {clause.width} s; a window "
                                       f"slides by at most its length", *clause.slide_at)
    query = analyze_window(statement.query, clause)
    output = existing.schema if existing is not None else \
        _probe(statement, clause, definer, clause.width // length, slide // length, slide)
    translation = translate_window(statement.name.text, query, WindowSource(source.name, source.length),
                                   columns(output))
    plan = WindowViewPlan(statement, source, slide, translation)
    for helper in plan.helpers if existing is None else ():
        if catalog.get(helper) is not None:
            raise statement.fragment.error(f"'{helper}' already exists; {statement.name.text} needs that name for "
                                           f"a helper view", statement.name.start, statement.name.end)
    return plan


def replan_window(definition: ObjectDef, catalog: Catalog, definer: ViewDefiner) -> WindowViewPlan | None:
    """The translation of a window view, rebuilt from its CREATE VIEW text (None for other views)."""
    statement = origin_query(definition)
    if statement is None or find_match_recognize(statement.query) is not None or find_pattern(statement.query) \
            is not None or find_window(statement.query) is None:
        return None
    return plan_window_view(statement, catalog, definer, existing=definition)


def explain_reads(plan: WindowViewPlan, catalog: Catalog, maintainer: Maintainer) -> tuple[str, pd.DataFrame | None]:
    """EXPLAIN's account of the next step of each view of the chain: a sentence, and a table of the parts
    each reads (as timestamps) against what recomputing its part would read; before any data, what the
    first parts will read."""
    translation, source = plan.translation, plan.source.name
    steps = [maintainer.pending_step(cast(ObjectDef, catalog.get(view.name))) for view in translation.views()]
    if any(step is None for step in steps):
        reads = "; ".join(f"{edge.target} reads {edge.source} ({edge.label})" for edge in chain_edges(translation)
                          if edge.source != edge.target)
        return (f"No part is ready yet: {source} has no part. Once it has one, the first part of each view "
                f"reads: {reads}; parts before {source}'s first count as empty, so the first windows are "
                f"partial.", None)
    rows = [_reads_row(translation, cast(PendingStep, step)) for step in steps]
    final = rows[-1]
    return (f"A step of {translation.name} reads {plural(final['parts read'], 'part')} instead of the "
            f"{final['instead of']} parts of {source} that recomputing its window reads; the table lists the "
            f"next step of each view of the chain.", pd.DataFrame(rows))


def _reads_row(translation: WindowTranslation, step: PendingStep) -> dict:
    """The parts one step reads (distinct, as timestamps) and the parts recomputing its part would read: the
    window's W parts for the running sums and the final view, the prefix and suffix a chunks part covers."""
    spans, parts = [], set()
    for ref in step.refs:
        if ref.first is None or ref.last is None or ref.first > ref.last:
            continue        # an empty range reads nothing
        name, length = ref.definition.name, ref.definition.length
        span = named_spans([(name, part_start(ref.first, length)), (name, part_start(ref.last, length))])
        spans += [span] if span not in spans else []
        parts |= {(name, s) for s in ref.subscripts}
    role = next(view.role for view in translation.views() if view.name == step.view.name)
    instead = {"pre": 1, "chunks": 2 * (step.subscript % chunk_length(translation.width) + 1)}.get(
        role, translation.width)
    return {"view": step.view.name, "part": format_part(step.subscript, step.view.length),
            "reads": ", ".join(spans), "parts read": len(parts), "instead of": instead}


def _probe(statement: CreateQueryView, clause: WindowClause, definer: ViewDefiner, width: int, slide: int,
           length: int) -> StructType:
    """Check the user's query over the window's parts as a ViewDF (names, columns, types; analysis
    only) and return its output schema; errors point at the user's text."""
    source = statement.fragment.source
    reference = f"[{affine(slide, slide - width)} .. {affine(slide, slide - 1)}]"
    shift = len(reference) - (clause.end - clause.start)
    modified = source[:clause.start] + reference + source[clause.end:]
    query = DeltaQuery(ClauseKind.INITIALIZE, statement.name, "j",
                       Fragment(modified, statement.query.start, statement.query.end + shift))
    probe = CreateViewDF(Fragment(modified, statement.fragment.start, statement.fragment.end + shift),
                         statement.name, query, replace(query, clause=ClauseKind.UPDATE), None, length, None, False)

    def back(position: int | None) -> int | None:
        if position is None or position < clause.start:
            return position
        return clause.start if position < clause.start + len(reference) else position - shift
    try:
        return definer.define(probe).schema
    except ViewDFError as error:
        if error.text != modified:
            raise
        end = back(error.end)
        start = back(error.position)
        raise ViewDFError(error.message, text=source, position=start,
                          end=end if end is None or start is None or end > start else None) from None


def columns(schema: StructType) -> tuple[Column, ...]:
    """A Spark schema's columns as the translation names them."""
    return tuple(Column(f.name, f.dataType.simpleString()) for f in schema.fields)
