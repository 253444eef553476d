"""A MATCH_RECOGNIZE query checked against its stream and translated: the automaton, the DEFINE conditions
and measures as templates, the values threads carry, the output columns and the RECOMPUTE query."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from .match_compact import compact_plan
from .match_pattern import automaton
from .match_query import MatchQuery
from .match_recompute import Search, recompute_runs_sql, recompute_sql
from .match_sql import HELPER_COLUMNS, MatchTranslation, position_slot
from .match_state import Values
from .match_terms import Output, Template, read_expression, term_type


PLAN_SETTING = "VIEWDF_MATCH_PLAN"     # "general": every view gets the general plan (to compare the plans)


@dataclass(frozen=True)
class StreamInfo:
    """What the translation needs of the stream: its name, partition length, timestamp column and
    columns (name, Spark SQL type) in schema order."""

    name: str
    partition_length: int
    timestamp: str
    columns: list[tuple[str, str]]


def _columns(query: MatchQuery, stream: StreamInfo, nodes: list[exp.Column], what: str) -> list[str]:
    names = {name.lower(): name for name, _ in stream.columns}
    found = []
    for node in nodes:
        if not isinstance(node, exp.Column) or node.table or node.name.lower() not in names:
            raise query.error(f"{what} lists columns of {stream.name}", node)
        found.append(names[node.name.lower()])
    return found


def _order(query: MatchQuery, stream: StreamInfo) -> list[str]:
    """ORDER BY: the stream's timestamp first, ascending, then tie-breaking columns, ascending."""
    for item in query.order:
        if item.args.get("desc"):
            raise query.error("ORDER BY ... DESC is not supported: a stream's rows arrive in ascending time", item)
    order = _columns(query, stream, [item.this for item in query.order], "ORDER BY")
    if order[0] != stream.timestamp:
        raise query.error(f"ORDER BY must start with {stream.name}'s timestamp column {stream.timestamp}: a view "
                          f"over a stream can only order by the time its rows arrive in", query.order[0])
    return order


def _type_check(query: MatchQuery, node: exp.Expr, sql: str, type_of: Callable[[str], str]) -> str:
    try:
        return type_of(sql)
    except ValueError as error:
        raise query.error(str(error), node) from None


def _outputs(query: MatchQuery, keys: list[str], order: list[str], stream: StreamInfo,
             measures: list[Output]) -> list[Output]:
    """The view's columns after the partition keys: the measures; with ALL ROWS PER MATCH, the ORDER BY columns
    first and the stream's other columns after them (as the standard orders them)."""
    taken = {k.lower() for k in keys} | ({c.lower() for c in order} if query.all_rows else set())
    for measure, output in zip(query.measures, measures):
        if output.name.lower() in taken:
            raise query.error(f"two output columns are named '{output.name}'; rename the measure", measure.expression)
        taken.add(output.name.lower())
    if not query.all_rows:
        return measures
    types = dict(stream.columns)
    leading = [Output(c, types[c]) for c in order if c not in keys]
    return leading + measures + [Output(c, t) for c, t in stream.columns if c.lower() not in taken]


def translate_match(name: str, query: MatchQuery, stream: StreamInfo, type_of: Callable[[str], str]) -> MatchTranslation:
    """The translation of a read MATCH_RECOGNIZE query over ``stream``; ``type_of`` types Spark SQL over
    the stream's columns qualified by ``__ev`` (ValueError with Spark's message when it does not analyse).
    Positioned errors for what is not supported."""
    type_of = functools.cache(type_of)      # the same arguments are typed many times
    keys = _columns(query, stream, query.partition, "PARTITION BY")
    for key, column in zip(keys, query.partition):
        if key.lower() in HELPER_COLUMNS:
            raise query.error(f"a PARTITION BY column named '{key}' is not supported: the helper view keeps each "
                              f"partition's {', '.join(HELPER_COLUMNS)} beside its keys", column)
    order = _order(query, stream)
    columns = sorted(stream.columns, key=lambda c: order.index(c[0]) if c[0] in order else len(order))
    lower = {n.lower(): n for n, _ in stream.columns}
    names = query.names
    values = Values(names, type_of)
    defines: dict[str, Template] = {}
    for variable, node in query.defines.items():
        template = read_expression(query, node, lower, "DEFINE")
        values.reads(template, variable)
        kind = _type_check(query, node, values.typed_nulls(template), type_of)
        if kind != "boolean":
            raise query.error(f"DEFINE {variable} must be a condition (boolean), not {kind}", node)
        defines[variable] = template
    measures = []
    for measure in query.measures:
        template = read_expression(query, measure.expression, lower, "MEASURES")
        values.reads(template)
        kind = _type_check(query, measure.expression, values.typed_nulls(template), type_of)
        measures.append(Output(measure.name, kind, template, measure.semantics == "FINAL"))
    outputs = _outputs(query, keys, order, stream, measures)
    skip = query.skip
    if skip.kind != "TO NEXT ROW":
        values.need(position_slot({"TO FIRST": "fpos"}.get(skip.kind, "lpos"), skip.variable))
    search = Search(query.pattern, names, defines, (skip.kind, skip.variable), query.within, stream.timestamp,
                    lambda term: term_type(term, type_of))
    searched = (search, outputs, query.all_rows, stream.name, stream.partition_length, stream.timestamp,
                [c for c, _ in columns], keys, query.around)
    states = automaton(query.pattern, query.fragment)
    plan = (f"{PLAN_SETTING}=general was set" if os.environ.get(PLAN_SETTING) == "general" else
            compact_plan(states, defines, values, search, (skip.kind, skip.variable), query.within, outputs,
                         query.all_rows))
    return MatchTranslation(name, query, states, stream.name, stream.partition_length, columns, keys, order, defines,
                            values, outputs, recompute_sql(*searched), recompute_runs_sql(*searched), plan)
