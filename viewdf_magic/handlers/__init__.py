"""Statement handlers, one module per family, found in a table keyed by statement class (as sqlglot's
generator keys its ``TRANSFORMS`` by expression class). Each takes the engine and the parsed statement
and returns a Result; none calls back into the ``Warehouse`` API."""

from __future__ import annotations

from typing import Callable

from ..engine.engine import Engine
from ..engine.results import Result
from ..errors import ViewDFError
from ..language import statements as st
from . import data, definitions, inspection, stepping

# each handler takes the engine and its own statement class (a dict keyed by class cannot say so)
HANDLERS: dict[type[st.Statement], Callable[..., Result]] = {
    st.CreateStream: definitions.create_stream,
    st.CreateTable: definitions.create_table,
    st.CreateViewDF: definitions.create_view,
    st.CreateQueryView: definitions.create_view,
    st.Alter: definitions.alter,
    st.Drop: definitions.drop,
    st.Insert: data.insert,
    st.Load: data.load,
    st.Seal: data.seal,
    st.Vacuum: data.vacuum,
    st.SetMaintenance: stepping.set_maintenance,
    st.Step: stepping.step,
    st.Query: inspection.query,
    st.Show: inspection.show,
    st.Describe: inspection.describe,
    st.ExplainView: inspection.explain_view,
    st.Verify: inspection.verify,
}

READ_ONLY = (st.Query, st.Show, st.Describe, st.ExplainView, st.Verify)


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
