"""Statement handlers, one module per family, found in a table keyed by statement class (as sqlglot's
generator keys its ``TRANSFORMS`` by expression class). Each takes the engine and the parsed statement
and returns a Result; none calls back into the ``Warehouse`` API."""

from __future__ import annotations

from typing import Any, Callable, TypeVar

from ..engine.engine import Engine
from ..engine.results import Result
from ..errors import ViewDFError
from ..language import statements as st
from . import data, definitions, inspection, stepping

StatementT = TypeVar("StatementT", bound=st.Statement)
Handler = Callable[[Engine, Any], Result]


def _handles(kind: type[StatementT], handler: Callable[[Engine, StatementT], Result]) -> tuple[type[st.Statement], Handler]:
    """One entry of ``HANDLERS``: mypy checks that ``handler`` takes ``kind`` (a dict keyed by class cannot)."""
    return kind, handler


HANDLERS: dict[type[st.Statement], Handler] = dict([
    _handles(st.CreateStream, definitions.create_stream),
    _handles(st.CreateTable, definitions.create_table),
    _handles(st.CreateViewDF, definitions.create_view),
    _handles(st.CreateQueryView, definitions.create_view),
    _handles(st.Alter, definitions.alter),
    _handles(st.Drop, definitions.drop),
    _handles(st.Insert, data.insert),
    _handles(st.Load, data.load),
    _handles(st.Ingest, data.ingest),
    _handles(st.Delete, data.change),
    _handles(st.Update, data.change),
    _handles(st.Seal, data.seal),
    _handles(st.Vacuum, data.vacuum),
    _handles(st.SetMaintenance, stepping.set_maintenance),
    _handles(st.Step, stepping.step),
    _handles(st.Query, inspection.query),
    _handles(st.ShowStreams, inspection.show_streams),
    _handles(st.ShowViews, inspection.show_views),
    _handles(st.ShowTables, inspection.show_tables),
    _handles(st.ShowPending, inspection.show_pending),
    _handles(st.ShowParts, inspection.show_parts),
    _handles(st.ShowLateness, inspection.show_lateness),
    _handles(st.Describe, inspection.describe),
    _handles(st.ExplainView, inspection.explain_view),
    _handles(st.ExplainChange, inspection.explain_change),
    _handles(st.Verify, inspection.verify),
])


def dispatch(engine: Engine, statement: st.Statement) -> Result:
    """Run one parsed statement (the caller holds the engine's reading or writing lock)."""
    try:
        return HANDLERS[type(statement)](engine, statement)
    except ViewDFError as error:
        # Parts are computed from the stored definition, so errors found then point into the statement
        # alone; when it is this statement, point into the whole text it was written in.
        fragment = statement.fragment
        if error.text is not None and error.text != fragment.source and error.text == fragment.text:
            raise error.located(fragment.source, fragment.start) from None
        raise
