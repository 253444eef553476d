"""The one planning entry for views defined by a query: a MATCH_RECOGNIZE query, a pattern query or a
sliding-window aggregate, checked (positioned errors) and translated into the ViewDFs that maintain it."""

from __future__ import annotations

from typing import TypeAlias

from pyspark.sql import SparkSession

from ..catalog.catalog import Catalog
from ..catalog.model import ObjectDef
from ..language.statements import CreateQueryView
from ..maintainer.views import ViewDefiner
from ..translation.match_query import find_match_recognize
from ..translation.pattern_query import find_pattern
from .match_views import MatchViewPlan, plan_match_view, replan_match
from .pattern_views import PatternViewPlan, plan_pattern_view, replan
from .window_views import WindowViewPlan, plan_window_view

QueryViewPlan: TypeAlias = MatchViewPlan | PatternViewPlan | WindowViewPlan


def plan_query_view(statement: CreateQueryView, catalog: Catalog, spark: SparkSession,
                    definer: ViewDefiner) -> QueryViewPlan:
    """A MATCH_RECOGNIZE query's plan if the query has that clause, a pattern query's if it has a PATTERN
    clause, else a window query's (which says what is wrong when the query is none of them)."""
    at = find_match_recognize(statement.query)
    if at is not None:
        return plan_match_view(statement, at, catalog, spark)
    clause = find_pattern(statement.query)
    if clause is not None:
        return plan_pattern_view(statement, clause, catalog, spark)
    return plan_window_view(statement, catalog, definer)


def recompute_runs(definition: ObjectDef, catalog: Catalog, spark: SparkSession) -> str | None:
    """A pattern or MATCH_RECOGNIZE view's RECOMPUTE search for a run of parts in one query (VERIFY VIEW), from
    its CREATE VIEW text translated again; None for other views and for shapes whose search does not lift."""
    match = replan_match(definition, catalog, spark)
    if match is not None:
        return match.translation.recompute_runs
    pattern = replan(definition, catalog, spark)
    return None if pattern is None else pattern.translation.direct_runs()
