"""Handlers of the statements that add or remove data: INSERT, LOAD, SEAL, VACUUM."""

from __future__ import annotations

import time

from pyspark.sql import DataFrame

from ..catalog.actions import Advance
from ..catalog.model import ObjectDef
from ..engine.conform import conform_by_position, read_file
from ..engine.ingest import MAX_NEW_PARTS
from ..wording import plural
from ..language import statements as st
from ..storage.vacuum import vacuum as vacuum_folders
from ..timeparts import format_duration, format_part, subscript_of

from ..engine.engine import Engine
from ..engine.results import Result


def _target(engine: Engine, statement: st.Statement, name: st.Name) -> ObjectDef:
    return engine.require(name.text, ("stream", "table"), statement, name)


def _write(engine: Engine, statement: st.Statement, definition: ObjectDef, frame: DataFrame, error) -> Result:
    if definition.kind == "table":
        rows = engine.ingester.append_table(definition, frame, error)
        return Result(statement, f"Inserted {plural(rows, 'row')} into {definition.name}.")
    report = engine.ingester.append_stream(definition, frame, error)
    report.steps = engine.maintain()
    report.repair = engine.last_repair
    return Result(statement, f"Inserted {report}." + engine.maintenance_note(), steps=report.steps)


def insert(engine: Engine, statement: st.Insert) -> Result:
    definition = _target(engine, statement, statement.target)
    query = statement.query
    error = lambda message: query.error(message)  # noqa: E731
    frame, _ = engine.query(query)
    columns = [c.text for c in statement.columns] if statement.columns else None
    frame = conform_by_position(frame, definition.schema, columns, error)
    return _write(engine, statement, definition, frame, error)


def load(engine: Engine, statement: st.Load) -> Result:
    definition = _target(engine, statement, statement.target)
    error = lambda message: statement.fragment.error(message, statement.path_at)  # noqa: E731
    frame = read_file(engine.spark, statement.path, statement.format, statement.options,
                                    definition.schema, error)
    return _write(engine, statement, definition, frame, error)


def vacuum(engine: Engine, statement: st.Vacuum) -> Result:
    report = vacuum_folders(engine.catalog, engine.fs, statement.retain_seconds)
    kept = (f"; kept {report.kept} more, unreferenced for less than RETAIN "
            f"{format_duration(statement.retain_seconds)}" if report.kept else "")
    return Result(statement, f"Deleted {plural(len(report.deleted), 'unreferenced data folder')}{kept}.")


def seal(engine: Engine, statement: st.Seal) -> Result:
    definition = engine.require(statement.name.text, ("stream",), statement, statement.name)
    try:
        through = subscript_of(statement.through, definition.length)
    except ValueError as exc:
        raise statement.fragment.error(str(exc), statement.through_at) from None
    newest = engine.catalog.state(definition.name).newest
    if newest is not None and through <= newest:
        return Result(statement, f"{definition.name} is already sealed through "
                                 f"{format_part(newest, definition.length)}.")
    if newest is not None and through - newest > MAX_NEW_PARTS:
        raise statement.fragment.error(
            f"sealing through {statement.through} would create {through - newest:,} empty parts of "
            f"{definition.name}; the limit is {MAX_NEW_PARTS:,}", statement.through_at)
    engine.catalog.commit([Advance(definition.key, through, time.time())])
    steps = engine.maintain()
    return Result(statement, f"Sealed {definition.name} through "
                             f"{format_part(through, definition.length)}." + engine.maintenance_note(),
                  steps=steps)

