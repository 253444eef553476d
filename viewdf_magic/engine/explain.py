"""EXPLAIN VIEW, assembled in one place: what kind of view it is (a pattern's FSM, a MATCH_RECOGNIZE automaton, a
window's helper chain), which parts are computed without a Spark job, fused or in range steps, what each next
step reads, and the ViewDFs, resolved queries and Spark plans. A new translation adds its case here."""

from __future__ import annotations

from typing import cast

import pandas as pd

from ..catalog.model import ObjectDef
from ..errors import ViewDFError
from ..language import statements as st
from ..language.statements import ClauseKind
from ..maintainer.execute import explain_text
from ..maintainer.maintainer import Maintainer
from ..maintainer.steps import PendingStep, empty_rule, resolved_sql
from ..timeparts import format_duration, format_part
from ..translation.fsm_diagram import fsm_svg
from ..translation.window_diagram import strategy_rows, window_svg
from ..wording import plural
from . import catalog_tables
from .engine import Engine
from .match_views import replan_match
from .pattern_views import explain_tables, replan
from .results import Result
from .window_views import WindowViewPlan, explain_reads, replan_window


def explain(engine: Engine, statement: st.Statement, definition: ObjectDef) -> Result:
    """EXPLAIN VIEW of ``definition``: a summary first (a pattern's FSM, a window's helper chain and strategies,
    what each next step reads), then the ViewDFs, queries and Spark plans (and a window's index formulas) as
    sections that notebooks show folded."""
    window = replan_window(definition, engine.catalog, engine.maintainer.definer)
    if window is not None:
        return _explain_window(engine, statement, definition, window)
    summary: list[str] = []
    figure, tables, explained = None, [], [definition]
    plan = replan(definition, engine.catalog, engine.spark)
    match = replan_match(definition, engine.catalog, engine.spark)
    if plan is not None:
        helper = engine.catalog.get(plan.translation.helper)
        assert helper is not None      # a pattern view is defined with its helper
        figure, tables = fsm_svg(plan.fsm), explain_tables(plan)
        summary.append(f"{definition.name} is a pattern query, translated into the FSM above, a Helper ViewDF "
                       f"({helper.name}) that keeps each group's live runs, and a final ViewDF.")
        explained = [helper, definition]
    elif match is not None:
        helper = engine.catalog.get(match.translation.helper)
        assert helper is not None      # a MATCH_RECOGNIZE view is defined with its helper
        figure, tables = match.explained()
        summary.append(f"{definition.name} is a MATCH_RECOGNIZE query, translated into the automaton above, a "
                       f"Helper ViewDF ({helper.name}) that keeps each partition's undecided searches, and a final "
                       f"ViewDF; RECOMPUTE is a batch search, which VERIFY VIEW compares the parts with.")
        explained = [helper, definition]
    if definition.notes:
        summary.append(definition.notes)
    sections: list[tuple[str, str]] = []
    for view in explained:
        line, plans = _explain_steps(engine, view)
        summary += [line, *_maintenance_summary(engine, view)]
        sections += [(f"ViewDF of {view.name}", catalog_tables.describe_text(view)), *plans]
    summary += [_range_summary(engine.maintainer, view) for view in
                [*explained, *(d for d in engine.catalog.views() if d.owner and d.owner.lower() == definition.key
                               and d not in explained)]]
    summary.append("The parts each next step reads:")
    table = engine.maintainer.pending()
    return Result(statement, detail="\n\n".join(summary),
                  table=table[table["view"].isin([view.name for view in explained])].reset_index(drop=True),
                  figure=figure, tables=tables, sections=sections)


def _maintenance_summary(engine: Engine, definition: ObjectDef) -> list[str]:
    """EXPLAIN's sentences on a view's parts recorded without a Spark job, fused, or chosen by uniqueness."""
    return [_jobless_summary(engine.maintainer, definition), engine.maintainer.fuser.describe(definition),
            *[text for text in [_unique_summary(engine, definition)] if text]]


def _explain_window(engine: Engine, statement: st.Statement, definition: ObjectDef,
                    plan: WindowViewPlan) -> Result:
    """A window view's EXPLAIN: its helper chain drawn, each aggregate's strategy, the parts each view's next
    step reads against recomputation; folded: the index formulas, then the ViewDFs, queries and plans."""
    translation = plan.translation
    views = [cast(ObjectDef, engine.catalog.get(view.name)) for view in translation.views()]
    line, plans = _explain_steps(engine, definition)
    reads, table = explain_reads(plan, engine.catalog, engine.maintainer)
    source, length = plan.source, plan.source.length
    summary = [f"{definition.name} is a sliding window over {source.name}: WINDOW "
               f"{format_duration(translation.width * length)} = {plural(translation.width, 'part')}, SLIDE "
               f"{format_duration(translation.slide * length)} = {plural(translation.slide, 'part')} of "
               f"{source.name}, maintained by the views drawn above ({translation.mode})."]
    summary += [line, reads] if table is not None else [reads]
    formulas = [definition.notes or ""] + [text for view in views for text in
                                           [*_maintenance_summary(engine, view), _range_summary(engine.maintainer, view)]]
    sections = [("Index formulas: the parts each view reads, per subscript", "\n\n".join(formulas))]
    for view in views:
        sections.append((f"ViewDF of {view.name}", catalog_tables.describe_text(view)))
    tables = [("Strategy per aggregate", pd.DataFrame(strategy_rows(translation)))]
    if table is not None:
        tables.append(("Parts the next step of each view reads", table))
    return Result(statement, detail="\n\n".join(summary), figure=window_svg(translation), tables=tables,
                  sections=sections + plans)


def _explain_steps(engine: Engine, definition: ObjectDef) -> tuple[str, list[tuple[str, str]]]:
    """A line on the view's next part, and the resolved query and Spark's plans of a step: the next
    one when it is ready, else the newest stored part computed again, so the plans read stored parts."""
    step = engine.maintainer.pending_step(definition)
    if step is None:
        return f"Next part of {definition.name}: unknown until every source has a part.", []
    empty_because = engine.maintainer.writer.known_empty(step) if step.ready else None
    line = (f"Next part: {definition.name}[{step.subscript}] "
            f"({format_part(step.subscript, definition.length)}), {step.how.label}, "
            f"{'ready' if step.ready else 'waiting'}"
            + (f", recorded empty without a Spark job ({empty_because})." if empty_because else "."))
    shown, which = step, f"the next part of {definition.name}"
    latest = None if step.ready else engine.maintainer.latest_step(definition)
    if latest is not None and latest.ready:
        shown, which = latest, (f"{definition.name}[{latest.subscript}] "
                                f"({format_part(latest.subscript, definition.length)}), "
                                f"the newest stored part")
    try:
        plans = _plans(engine, definition, shown)
    except ViewDFError:             # the newest part's inputs were dropped by retention
        shown, which = step, f"the next part of {definition.name}"
        plans = _plans(engine, definition, shown)
    return line, [(f"Query of {which}", resolved_sql(shown.query, shown.refs)),
                  (f"Spark plans of {which}", plans)]


RECENT_PARTS = 8        # EXPLAIN VIEW names the clause of this many newest parts


def _unique_summary(engine: Engine, definition: ObjectDef) -> str:
    """For a view with UPDATE .. WHEN X[j] IS UNIQUE: when it runs, and which UPDATE each recent part got."""
    view = engine.maintainer.compiled(definition)
    if view.unique_guard is None:
        return ""
    guard = f"{view.unique_guard.fragment.text} IS UNIQUE ({', '.join(view.unique_columns)})"
    parts = engine.catalog.state(definition.name).parts
    recent = [(s, parts[s].how) for s in list(parts)[-RECENT_PARTS:]]
    named = "; ".join(f"{format_part(s, definition.length)} {how.label}" for s, how in recent)
    columns = ", ".join(view.unique_columns)
    return (f"{definition.name} has two UPDATE clauses: UPDATE WHEN {guard} for the parts where no two rows have the "
            f"same ({columns}), the other for the rest (a run of parts computed in one range step uses its range "
            f"plan). Each UPDATE's own Spark job finds whether ({columns}) repeats in its part: the guarded one runs "
            f"unless the part before repeated them, and a part where they repeat after all is computed again by the "
            f"general one. " + (f"Its newest parts: {named}." if recent else ""))


def _plans(engine: Engine, definition: ObjectDef, step: PendingStep) -> str:
    """Spark's logical and physical plans for computing ``step``, with the branches that check its guard's
    parts when its job would (maintainer/writer.py)."""
    with engine.maintainer.runner.bound(step.query, step.refs, schema=definition.schema,
                                      clause=step.how.label) as frame:
        checked, _ = engine.maintainer.writer.checking(step, frame)
        return explain_text(checked, mode="extended").strip()


def _range_summary(maintainer: Maintainer, definition: ObjectDef) -> str:
    """The sentence on how runs of the view's parts are computed."""
    summary = maintainer.range_plan(definition).describe(definition.name)
    failed = maintainer.range_failure(definition)
    if failed is not None:
        summary += (f" This session, Spark could not run its range step ({failed}), so its parts are computed "
                    f"one at a time until the warehouse is opened again.")
    return summary


def _jobless_summary(maintainer: Maintainer, definition: ObjectDef) -> str:
    """The sentences on which of the view's parts are recorded without a Spark job."""
    view = maintainer.compiled(definition)
    clauses = [(ClauseKind.INITIALIZE, view.initialize), (ClauseKind.UPDATE, view.update),
               (ClauseKind.RECOMPUTE, view.recompute)]
    rules = [(kind, query, empty_rule(query)) for kind, query in clauses if query is not None]
    known = [f"{kind.label} when {rule.describe({b.placeholder: b.text for b in query.bindings})}"
             for kind, query, rule in rules if not rule.never]
    if view.empty_when is not None:
        known.append(f"any part when {view.empty_when.fragment.text} (declared EMPTY WHEN)")
    if not known:
        summary = (f"Every part of {definition.name} runs a Spark job: its query's shape does not guarantee "
                   f"an empty result when some of its inputs are empty.")
    else:
        summary = (f"A part of {definition.name} is recorded empty without a Spark job ({'; '.join(known)}); "
                   f"the catalog knows every input part's row count.")
    if view.unchanged_when is not None:
        summary += (f" An UPDATE part is recorded as holding the previous part's rows, without a Spark job, "
                    f"when {view.unchanged_when.fragment.text} (declared UNCHANGED WHEN).")
    return summary
