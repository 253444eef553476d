"""Handlers of the read-only statements: queries, SHOW, DESCRIBE, EXPLAIN VIEW and EXPLAIN DELETE/UPDATE,
VERIFY."""

from __future__ import annotations

import pandas as pd

from ..engine import catalog_tables
from ..engine.explain import explain
from ..wording import plural
from ..language import statements as st
from ..maintainer.compare import DEFAULT_TOLERANCE
from ..timeparts import format_part, to_utc

from ..engine.engine import Engine
from ..engine.results import Result
from .data import changed_stream


def query(engine: Engine, statement: st.Query) -> Result:
    frame, query = engine.query(statement.query)
    return Result(statement, frame=frame, query=query, note=engine.lag_note(query))


def show_streams(engine: Engine, statement: st.ShowStreams) -> Result:
    return Result(statement, table=catalog_tables.streams_table(engine.catalog))


def show_views(engine: Engine, statement: st.ShowViews) -> Result:
    return Result(statement, table=catalog_tables.views_table(engine.catalog, engine.maintainer.timeline,
                                                                 engine.maintainer.lags()))


def show_tables(engine: Engine, statement: st.ShowTables) -> Result:
    return Result(statement, table=catalog_tables.tables_table(engine.catalog))


def show_pending(engine: Engine, statement: st.ShowPending) -> Result:
    return Result(statement, table=engine.maintainer.pending())


def show_lateness(engine: Engine, statement: st.ShowLateness) -> Result:
    stream = None if statement.name is None else \
        engine.require(statement.name.text, ("stream",), statement, statement.name)
    return Result(statement, table=catalog_tables.lateness_table(engine.catalog, stream))


def show_parts(engine: Engine, statement: st.ShowParts) -> Result:
    definition = engine.require(statement.name.text, ("stream", "view"), statement, statement.name)
    table = catalog_tables.parts_table(engine.catalog, definition)
    if statement.changed_since is not None:
        try:
            since = to_utc(statement.changed_since).tz_localize(None)
        except ValueError as exc:
            raise statement.fragment.error(str(exc), statement.changed_since_at) from None
        table = table[table["last_updated"] >= since].reset_index(drop=True)
    return Result(statement, table=table)


def describe(engine: Engine, statement: st.Describe) -> Result:
    definition = engine.require(statement.name.text, ("stream", "view", "table"), statement, statement.name)
    return Result(statement, table=catalog_tables.describe_table(definition), detail=catalog_tables.describe_text(definition))


def explain_view(engine: Engine, statement: st.ExplainView) -> Result:
    definition = engine.require(statement.name.text, ("view",), statement, statement.name)
    return explain(engine, statement, definition)


def explain_change(engine: Engine, statement: st.ExplainChange) -> Result:
    """The parts a DELETE or UPDATE would read, the rows it would change in each, and the views it would
    recompute; nothing is changed."""
    change = statement.change
    definition = changed_stream(engine, change)
    plan = engine.corrector.plan(definition, change)
    if isinstance(change, st.Update):
        engine.corrector.check_types(plan, change)
    matching = engine.corrector.count(plan, change)
    parts = engine.catalog.state(definition.name).parts
    table = pd.DataFrame([{"part": s, "part_timestamp": format_part(s, definition.length), "stored_rows": parts[s].rows,
                           "matching_rows": matching.get(s, 0)} for s in plan.read],
                         columns=["part", "part_timestamp", "stored_rows", "matching_rows"])
    verb = "delete" if isinstance(change, st.Delete) else "update"
    rows = sum(matching.values())
    message = f"{verb.upper()} would read {plan.reading}, and {verb} {plural(rows, 'row')}"
    if rows:
        message += f" in {plural(len(matching), 'part')}"
        views = [d.name for d in engine.catalog.downstream(definition.name)[1:] if not d.owner]
        if views:
            message += (f"; the parts of {', '.join(views)} that read them would be recomputed (late-data repair, "
                        f"with early cutoff)")
    return Result(statement, message + ".", table=table)


def verify(engine: Engine, statement: st.Verify) -> Result:
    definition = engine.require(statement.name.text, ("view",), statement, statement.name)
    if engine.maintainer.compiled(definition).recompute is None:
        raise statement.fragment.error(f"{definition.name} has no RECOMPUTE clause to verify against",
                                       statement.name.start, statement.name.end)
    tolerance = DEFAULT_TOLERANCE if statement.tolerance is None else statement.tolerance
    rows = []
    state = engine.catalog.state(definition.name)
    for subscript, found in sorted(engine.verify_parts(definition, sorted(state.parts), tolerance).items()):
        rows.append({"part": subscript, "part_timestamp": format_part(subscript, definition.length),
                     "stored_rows": state.parts[subscript].rows, "missing_rows": found.missing,
                     "extra_rows": found.extra, "max_difference": found.max_difference, "equal": found.equal})
    table = pd.DataFrame(rows, columns=["part", "part_timestamp", "stored_rows", "missing_rows", "extra_rows",
                                        "max_difference", "equal"]).astype({"max_difference": float})
    bad = int((~table["equal"]).sum()) if len(table) else 0
    message = (f"{definition.name}: all {plural(len(table), 'part')} equal their recomputation" if not bad else
               f"{definition.name}: {bad} of {plural(len(table), 'part')} differ from their recomputation")
    drift = table["max_difference"].max()      # NaN when every part was compared exactly
    if not bad and drift > 0:                    # some float values were only equal within it
        message += (f", FLOAT/DOUBLE values within a relative {tolerance:g} "
                    f"(largest difference {drift:.3g})")
    return Result(statement, message + ".", table=table)

