"""CREATE VIEW over ``FROM S [WINDOW w SLIDE s]``: check the query, translate it, and yield the
ViewDF statements of its helper views and final view for the warehouse to publish."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator, cast

from pyspark.sql.types import StructType

from ..catalog.catalog import Catalog
from ..catalog.model import ObjectDef
from ..errors import ViewDFError
from ..language.parser import parse
from ..language.source import Fragment
from ..language.statements import CreateQueryView, CreateViewDF, DeltaQuery
from ..maintainer.views import ViewDefiner
from ..translation import (Column, WindowClause, WindowSource, WindowTranslation, analyze_window, find_window,
                           translate_window)
from ..translation.window_plan import affine


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


def plan_window_view(statement: CreateQueryView, catalog: Catalog, definer: ViewDefiner) -> WindowViewPlan:
    """Check a window query (positioned errors) and translate it."""
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
    output = _probe(statement, clause, definer, clause.width // length, slide // length, slide)
    translation = translate_window(statement.name.text, query, WindowSource(source.name, source.length),
                                   columns(output))
    plan = WindowViewPlan(statement, source, slide, translation)
    for helper in plan.helpers:
        if catalog.get(helper) is not None:
            raise statement.fragment.error(f"'{helper}' already exists; {statement.name.text} needs that name for "
                                           f"a helper view", statement.name.start, statement.name.end)
    return plan


def _probe(statement: CreateQueryView, clause: WindowClause, definer: ViewDefiner, width: int, slide: int,
           length: int) -> StructType:
    """Check the user's query over the window's parts as a ViewDF (names, columns, types; analysis
    only) and return its output schema; errors point at the user's text."""
    source = statement.fragment.source
    reference = f"[{affine(slide, slide - width)} .. {affine(slide, slide - 1)}]"
    shift = len(reference) - (clause.end - clause.start)
    modified = source[:clause.start] + reference + source[clause.end:]
    query = DeltaQuery("INITIALIZE", statement.name, "j",
                       Fragment(modified, statement.query.start, statement.query.end + shift))
    probe = CreateViewDF(Fragment(modified, statement.fragment.start, statement.fragment.end + shift),
                         statement.name, query, replace(query, clause="UPDATE"), None, length, None, False)

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
