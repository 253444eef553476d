"""CREATE VIEW over ``FROM S PATTERN [...]``: check the query, build its FSM, and yield the ViewDF
statements of its Helper view and final view for the warehouse to publish."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.errors import PySparkException

from ..catalog.catalog import Catalog
from ..catalog.model import ObjectDef
from ..language.parser import parse
from ..language.statements import CreateQueryView, CreateViewDF
from ..storage.spark_errors import summary
from ..translation.pattern_fsm import EVENT, PatternFSM, build_fsm
from ..translation.match_query import find_match_recognize
from ..translation.pattern_query import PatternClause, analyze_pattern, find_pattern
from ..translation.pattern_sql import PatternTranslation, aux_rows


@dataclass(frozen=True)
class PatternViewPlan:
    """A checked pattern query, its FSM and its generated ViewDFs."""

    statement: CreateQueryView
    source: ObjectDef
    translation: PatternTranslation

    @property
    def fsm(self) -> PatternFSM:
        return self.translation.fsm

    @property
    def description(self) -> str:
        labels = ", ".join(v.label for v in self.fsm.variables)
        if self.translation.single_events:
            single = (f"; one event per group per part ({self.source.name} is {self.source.unique_clause}), "
                      f"so the helper's step groups nothing")
        elif self.fsm.query.keys:
            single = "; in parts where its step's job finds no group twice, the helper's step groups nothing"
        else:
            single = ""
        return (f"PARTITION LENGTH {self.source.partition_length}, pattern [{labels}] with helper "
                f"{self.translation.helper}{single}; EXPLAIN VIEW shows its FSM")

    def statements(self, catalog: Catalog) -> Iterator[tuple[CreateViewDF, dict]]:
        """The Helper's statement, then the final view's, with the catalog fields to set."""
        name, origin = self.statement.name.text, self.statement.fragment.text
        [helper] = parse(self.translation.helper_text())
        assert isinstance(helper, CreateViewDF)
        yield helper, {"origin": origin, "owner": name,
                       "notes": f"Helper view of {name}: the runs of its pattern alive after each part."}
        [final] = parse(self.translation.final_text())
        assert isinstance(final, CreateViewDF)
        yield final, {"origin": origin, "sources": (self.source.name, self.translation.helper),
                      "notes": f"Pattern view over {self.source.name}; RECOMPUTE is the Direct strategy "
                               f"(the pattern re-run over the whole history)."}


def type_probe(spark: SparkSession, source: ObjectDef):
    """Type SQL expressions over the stream's columns (qualified ``__ev``) by Spark analysis."""
    empty = spark.createDataFrame([], source.schema).alias(EVENT)

    def probe(sql: str) -> str:
        try:
            return empty.selectExpr(sql).schema[0].dataType.simpleString()
        except PySparkException as exc:
            raise ValueError(summary(exc)) from None
    return probe


def plan_pattern_view(statement: CreateQueryView, clause: PatternClause, catalog: Catalog,
                      spark: SparkSession, new: bool = True) -> PatternViewPlan:
    """Check a pattern query (positioned errors) and translate it; ``new``: check its helper's
    name is free."""
    source = catalog.get(clause.source.text)
    if source is None or source.kind != "stream":
        what = f"'{clause.source.text}' is a {source.kind}; a pattern reads a stream" if source is not None else \
            f"unknown stream '{clause.source.text}'"
        raise statement.fragment.error(what, clause.source.start, clause.source.end)
    query = analyze_pattern(statement.query, clause)
    columns = [f.name for f in source.schema.fields]
    probe = type_probe(spark, source)
    fsm = build_fsm(query, {c.lower(): c for c in columns}, probe)
    keys = {k.lower() for k in fsm.query.keys}
    single_events = bool(source.unique) and all(c.lower() in keys for c in source.unique)
    assert source.timestamp_column is not None      # every stream has one
    translation = PatternTranslation(statement.name.text, fsm, source.name, source.length,
                                     source.timestamp_column, columns, probe, single_events)
    if new and catalog.get(translation.helper) is not None:
        raise statement.fragment.error(f"'{translation.helper}' already exists; {statement.name.text} needs that "
                                       f"name for its helper view", statement.name.start, statement.name.end)
    return PatternViewPlan(statement, source, translation)


def origin_query(definition: ObjectDef) -> CreateQueryView | None:
    """The ``CREATE VIEW ... AS <query>`` a query view was defined by (None for other views and helpers)."""
    if not definition.origin or definition.owner:
        return None
    statements = parse(definition.origin)
    statement = statements[0] if len(statements) == 1 else None
    return statement if isinstance(statement, CreateQueryView) else None


def replan(definition: ObjectDef, catalog: Catalog, spark: SparkSession) -> PatternViewPlan | None:
    """The translation of a pattern view, rebuilt from its CREATE VIEW text (None for other views)."""
    statement = origin_query(definition)
    if statement is None or find_match_recognize(statement.query) is not None:
        return None
    clause = find_pattern(statement.query)
    if clause is None:
        return None
    return plan_pattern_view(statement, clause, catalog, spark, new=False)


def explain_tables(plan: PatternViewPlan) -> list[tuple[str, pd.DataFrame]]:
    """EXPLAIN's tables: states, edges with their predicates, and the runs' auxiliary values."""
    fsm = plan.fsm
    states = [{"state": 0, "name": "begin", "kind": "start", "runs kept per group": "-"}]
    for v in fsm.variables:
        kind = ("Kleene" if v.kleene else "single") + (", accepting" if v is fsm.final else "")
        kept = f"several (differ in {', '.join(a.name for a in fsm.live(v.index))})" if fsm.many(v.index) \
            else "at most one"
        states.append({"state": v.index, "name": v.label, "kind": kind, "runs kept per group": kept})
    names = ["begin"] + [v.name for v in fsm.variables]
    edges = [{"edge": f"E[{e.source}][{e.target}]", "from": names[e.source], "to": names[e.target],
              "kind": e.kind, "checked at": (f"first {names[e.target]}" if e.kind == "proceed" else
                                             f"each later {names[e.target]}"),
              "predicates": e.label} for e in fsm.edges]
    return [("States", pd.DataFrame(states)), ("Edges", pd.DataFrame(edges)),
            ("Values each run carries", pd.DataFrame(aux_rows(fsm)))]
