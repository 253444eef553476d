"""The one planning entry for views defined by a query: a pattern query or a sliding-window
aggregate, checked (positioned errors) and translated into the ViewDFs that maintain it."""

from __future__ import annotations

from typing import TypeAlias

from pyspark.sql import SparkSession

from ..catalog.catalog import Catalog
from ..language.statements import CreateQueryView
from ..maintainer.views import ViewDefiner
from ..translation.pattern_query import find_pattern
from .pattern_views import PatternViewPlan, plan_pattern_view
from .window_views import WindowViewPlan, plan_window_view

QueryViewPlan: TypeAlias = PatternViewPlan | WindowViewPlan


def plan_query_view(statement: CreateQueryView, catalog: Catalog, spark: SparkSession,
                    definer: ViewDefiner) -> QueryViewPlan:
    """A pattern query's plan if the query has a PATTERN clause, else a window query's (which says
    what is wrong when the query is neither)."""
    clause = find_pattern(statement.query)
    if clause is not None:
        return plan_pattern_view(statement, clause, catalog, spark)
    return plan_window_view(statement, catalog, definer)
