"""CREATE VIEW over ``FROM S MATCH_RECOGNIZE (...)``: check the query against its stream, translate it,
and yield the ViewDF statements of its Helper view and final view for the warehouse to publish."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import pandas as pd
from pyspark.sql import SparkSession

from ..catalog.catalog import Catalog
from ..catalog.model import ObjectDef
from ..language.parser import parse
from ..language.statements import CreateQueryView, CreateViewDF
from ..translation.match_diagram import automaton_svg, automaton_table
from ..translation.match_pattern import pattern_text
from ..translation.match_query import find_match_recognize, read_match_query
from ..translation.match_sql import MatchTranslation
from ..translation.match_view import StreamInfo, translate_match
from .pattern_views import origin_query, type_probe


@dataclass(frozen=True)
class MatchViewPlan:
    """A checked MATCH_RECOGNIZE query and its generated ViewDFs."""

    statement: CreateQueryView
    source: ObjectDef
    translation: MatchTranslation

    @property
    def description(self) -> str:
        pattern = pattern_text(self.translation.query.pattern)
        return (f"PARTITION LENGTH {self.source.partition_length}, MATCH_RECOGNIZE PATTERN ({pattern}) with helper "
                f"{self.translation.helper} on the {self.translation.plan_description}; EXPLAIN VIEW shows its "
                f"automaton")

    @property
    def conditions(self) -> dict[str, str]:
        """Each DEFINE condition, as SQL text, by variable."""
        return {variable: condition.sql() for variable, condition in self.translation.query.defines.items()}

    def explained(self) -> tuple[str, list[tuple[str, pd.DataFrame]]]:
        """EXPLAIN VIEW's drawing of the automaton (SVG) and its table of states."""
        automaton = self.translation.automaton
        return (automaton_svg(automaton, self.conditions),
                [("Automaton states", automaton_table(automaton, self.conditions))])

    def statements(self, catalog: Catalog) -> Iterator[tuple[CreateViewDF, dict]]:
        """The Helper's statement, then the final view's, with the catalog fields to set."""
        name, translation = self.statement.name.text, self.translation
        generated = (
            (translation.helper_text(), {"owner": name, "notes": f"Helper view of {name}: each partition's undecided "
                                                                 f"searches after each part, and the matches that "
                                                                 f"became final in it."}),
            (translation.final_text(), {"sources": (self.source.name, translation.helper),
                                        "notes": f"MATCH_RECOGNIZE view over {self.source.name}; RECOMPUTE is the "
                                                 f"standard's batch search over the whole history. Its Helper runs "
                                                 f"the {translation.plan_description}."}))
        for text, fields in generated:
            [statement] = parse(text)
            assert isinstance(statement, CreateViewDF)      # generated text is one CREATE VIEW ... INITIALIZE
            yield statement, {"origin": self.statement.fragment.text, **fields}


def plan_match_view(statement: CreateQueryView, at: int, catalog: Catalog, spark: SparkSession,
                    new: bool = True) -> MatchViewPlan:
    """Check a MATCH_RECOGNIZE query (its keyword is token ``at`` of the query; positioned errors) and
    translate it; ``new``: check its helper's name is free."""
    query = read_match_query(statement.query, at)
    source = catalog.get(query.source.text)
    if source is None or source.kind != "stream":
        what = f"'{query.source.text}' is a {source.kind}; MATCH_RECOGNIZE reads a stream" if source is not None \
            else f"unknown stream '{query.source.text}'"
        raise statement.fragment.error(what, query.source.start, query.source.end)
    assert source.timestamp_column is not None      # every stream has one
    stream = StreamInfo(source.name, source.length, source.timestamp_column,
                        [(f.name, f.dataType.simpleString()) for f in source.schema.fields])
    translation = translate_match(statement.name.text, query, stream, type_probe(spark, source))
    if new and catalog.get(translation.helper) is not None:
        raise statement.fragment.error(f"'{translation.helper}' already exists; {statement.name.text} needs that "
                                       f"name for its helper view", statement.name.start, statement.name.end)
    return MatchViewPlan(statement, source, translation)


def replan_match(definition: ObjectDef, catalog: Catalog, spark: SparkSession) -> MatchViewPlan | None:
    """The translation of a MATCH_RECOGNIZE view, rebuilt from its CREATE VIEW text (None for other views)."""
    statement = origin_query(definition)
    at = None if statement is None else find_match_recognize(statement.query)
    return None if statement is None or at is None else plan_match_view(statement, at, catalog, spark, new=False)
