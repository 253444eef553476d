"""Handlers of the statements that define and drop objects: CREATE STREAM, TABLE and VIEW, ALTER, DROP."""

from __future__ import annotations

import time
import uuid
from dataclasses import replace
from typing import Iterable

from pyspark.errors import PySparkException
from pyspark.sql.types import StringType, StructField, StructType, TimestampNTZType, TimestampType

from ..catalog.actions import Action, Create, Options
from ..catalog.model import CATALOG_VIEW, ObjectDef
from ..engine.query_views import plan_query_view
from ..engine.conform import stream_schema_check
from ..errors import ViewDFError
from ..wording import agreeing, plural
from ..language import statements as st
from ..language.parser import VACUUM_RETAIN_SECONDS, parse
from ..maintainer.maintainer import StepReport
from ..storage.spark_errors import spark_error
from ..timeparts import format_duration

from ..engine.engine import Engine
from ..engine.results import Result, timed


def _check_new_name(engine: Engine, statement: st.Statement, name: st.Name) -> None:
    if engine.catalog.get(name.text) is not None or name.key == CATALOG_VIEW:
        raise statement.fragment.error(f"'{name.text}' already exists", name.start, name.end)


def _unchanged(engine: Engine, statement: st.CreateStream | st.CreateTable | st.CreateViewDF | st.CreateQueryView,
               kind: str) -> Result | None:
    """``IF NOT EXISTS`` or ``OR REPLACE`` naming an object that exists: a Result saying nothing changed
    when its definition is the same; an error when IF NOT EXISTS meets another definition; None when
    the statement goes on (to create, or to replace)."""
    creation, name = statement.creation, statement.name
    existing = engine.catalog.get(name.text)
    if existing is None or not (creation.if_not_exists or creation.or_replace):
        return None
    if existing.kind != kind:
        raise statement.fragment.error(f"'{existing.name}' is a {existing.kind}, not a {kind}",
                                       name.start, name.end)
    if existing.owner:
        raise statement.fragment.error(f"'{existing.name}' is a helper view of {existing.owner}",
                                       name.start, name.end)
    stored = parse(existing.origin or existing.definition)[0]
    stored_creation = getattr(stored, "creation", None)
    if stored_creation is not None and stored_creation.signature == creation.signature:
        return Result(statement, f"{kind.capitalize()} {existing.name} already exists with this definition; "
                                 f"nothing changed.")
    if creation.or_replace:
        return None
    hint = "CREATE OR REPLACE VIEW redefines it" if kind == "view" else \
        f"drop it first (DROP {kind.upper()} {existing.name})"
    raise statement.fragment.error(f"{kind} '{existing.name}' already exists with another definition; {hint}",
                                   name.start, name.end)


def _schema(engine: Engine, statement: st.Statement, columns) -> StructType:
    try:
        schema = engine.spark.createDataFrame([], columns.text).schema
    except PySparkException as exc:
        error = spark_error(exc)
        raise columns.error(f"bad column list: {error.message}", columns.start) from None
    stream_schema_check(schema, lambda message: columns.error(message, columns.start))
    return schema


def create_stream(engine: Engine, statement: st.CreateStream) -> Result:
    unchanged = _unchanged(engine, statement, "stream")
    if unchanged is not None:
        return unchanged
    _check_new_name(engine, statement, statement.name)
    schema = _schema(engine, statement, statement.columns)
    timestamps = [f for f in schema.fields if isinstance(f.dataType, (TimestampType, TimestampNTZType))]
    if statement.timestamp is not None:
        found = [f for f in schema.fields if f.name.lower() == statement.timestamp.text.lower()]
        if not found or found[0] not in timestamps:
            raise statement.fragment.error(f"'{statement.timestamp.text}' is not a TIMESTAMP column",
                                           statement.timestamp.start, statement.timestamp.end)
        column = found[0].name
    elif len(timestamps) == 1:
        column = timestamps[0].name
    else:
        raise statement.fragment.error("name the timestamp column with TIMESTAMP <column>",
                                       statement.name.start, statement.name.end)
    definition = ObjectDef("stream", statement.name.text, uuid.uuid4().hex[:12], schema.json(),
                           statement.fragment.text, time.time(), statement.partition_length,
                           timestamp_column=column, unique=_unique_columns(statement, schema))
    length = statement.partition_length
    late_into, created = _divert_table(engine, statement, definition, statement.late_into)
    options = Options(definition.key, {"lateness": statement.lateness.parts(length) if statement.lateness else None,
                                       "retain": statement.retain.parts(length) if statement.retain else None,
                                       "late_into": late_into})
    engine.catalog.commit([Create(definition), *created, options])
    return Result(statement, f"Created stream {definition.name} (PARTITION LENGTH "
                             f"{definition.partition_length}, TIMESTAMP {column}{_options_text(engine, definition)}).")


def _unique_columns(statement: st.CreateStream, schema: StructType) -> tuple[str, ...]:
    """The UNIQUE (..) PER PART columns as the schema spells them."""
    columns: list[str] = []
    for name in statement.unique:
        found = [f.name for f in schema.fields if f.name.lower() == name.key]
        if not found:
            raise statement.fragment.error(f"UNIQUE names '{name.text}', which is not a column of "
                                           f"{statement.name.text}", name.start, name.end)
        if found[0] in columns:
            raise statement.fragment.error(f"'{name.text}' is named twice in UNIQUE", name.start, name.end)
        columns.append(found[0])
    return tuple(columns)


DIVERT_COLUMNS = [StructField("arrived", TimestampType()), StructField("reason", StringType())]


def _divert_table(engine: Engine, statement: st.CreateStream | st.Alter, stream: ObjectDef,
                  name: st.Name | None) -> tuple[str | None, list[Action]]:
    """The table ON LATE DIVERT INTO names (None without one) and the action creating it when it does not exist:
    the stream's columns, then ``arrived`` and ``reason``. An existing table must have those columns."""
    if name is None:
        return None, []
    schema = StructType(stream.schema.fields + DIVERT_COLUMNS)
    existing = engine.catalog.get(name.text)
    if name.key == stream.key:
        raise statement.fragment.error(f"{stream.name} cannot divert its late rows into itself", name.start, name.end)
    if existing is None:
        _check_new_name(engine, statement, name)
        table = ObjectDef("table", name.text, uuid.uuid4().hex[:12], schema.json(),
                          f"-- rows later than ALLOWED LATENESS of {stream.name}", time.time())
        return table.name, [Create(table)]
    if existing.kind != "table":
        raise statement.fragment.error(f"'{name.text}' is a {existing.kind}; ON LATE DIVERT INTO needs a table",
                                       name.start, name.end)
    wanted = [(f.name.lower(), f.dataType) for f in schema.fields]
    if [(f.name.lower(), f.dataType) for f in existing.schema.fields] != wanted:
        columns = ", ".join(f"{f.name} {f.dataType.simpleString().upper()}" for f in schema.fields)
        raise statement.fragment.error(f"table {existing.name} cannot take {stream.name}'s late rows: it needs the "
                                       f"columns ({columns})", name.start, name.end)
    return existing.name, []


def _options_text(engine: Engine, definition: ObjectDef) -> str:
    state = engine.catalog.state(definition.name)
    text = f", ALLOWED LATENESS {state.lateness} PARTS" if state.lateness is not None else ""
    text += f" ON LATE DIVERT INTO {state.late_into}" if state.late_into is not None else ""
    text += f", {definition.unique_clause}" if definition.unique else ""
    return text + (f", RETAIN {state.retain} PARTS" if state.retain is not None else "")


def alter(engine: Engine, statement: st.Alter) -> Result:
    definition = engine.require(statement.name.text, (statement.kind.lower(),), statement, statement.name)
    value = statement.extent.parts(definition.length) if statement.extent is not None else None
    values: dict[str, int | str | None] = {statement.option: value}
    created: list[Action] = []
    if statement.option == "lateness":      # its ON LATE goes with it (RESET: refused again)
        values["late_into"], created = _divert_table(engine, statement, definition, statement.late_into)
    engine.catalog.commit([*created, Options(definition.key, values)])
    steps, seconds = timed(engine.maintain)
    return Result(statement, f"{definition.name}: {_options_text(engine, definition).lstrip(', ') or 'no bounds'}."
                  + engine.maintenance_note(), steps=steps, maintenance_seconds=seconds)


def create_table(engine: Engine, statement: st.CreateTable) -> Result:
    unchanged = _unchanged(engine, statement, "table")
    if unchanged is not None:
        return unchanged
    _check_new_name(engine, statement, statement.name)
    if statement.columns is not None:
        schema = _schema(engine, statement, statement.columns)
        frame = None
    else:
        frame, _ = engine.query(statement.query)
        schema = frame.schema
    definition = ObjectDef("table", statement.name.text, uuid.uuid4().hex[:12], schema.json(),
                           statement.fragment.text, time.time())
    if frame is not None:
        assert statement.query is not None      # frame is the query's
        # The rows are written before the table is published, so a failing query leaves nothing behind.
        rows = engine.ingester.append_table(definition, frame, statement.query.error, create=True)
        return Result(statement, f"Created table {definition.name} with {plural(rows, 'row')}.")
    engine.catalog.commit([Create(definition)])
    return Result(statement, f"Created table {definition.name}.")


def _publish(engine: Engine, views: Iterable[tuple[st.CreateViewDF, dict]]) -> tuple[list[StepReport], float | None]:
    """Define each view in turn and publish them all with their backfill, all or nothing; return the backfill's
    steps and wall seconds (None in manual mode, which computes nothing).

    ``views`` yields (statement, catalog fields to set); it may be a generator whose later
    statements depend on the views defined before them."""
    defined: list[ObjectDef] = []
    try:
        with engine.catalog.transaction():
            for statement, fields in views:
                definition = replace(engine.maintainer.definer.define(statement), **fields)
                engine.catalog.commit([Create(definition)])
                defined.append(definition)
            if engine.maintenance != "auto":
                return [], None
            return timed(lambda: engine.maintainer.step(n=None, among=defined))
    except ViewDFError:
        for definition in defined:
            engine.maintainer.forget(definition)
            engine.store.delete_object(definition)
        raise


def _created(statement: st.Statement, name: str, description: str,
             backfill: tuple[list[StepReport], float | None]) -> Result:
    steps, seconds = backfill
    mine = [s for s in steps if s.view == name]
    message = f"Created view {name} ({description})"
    if mine:
        message += f"; computed {plural(len(mine), 'part')} up to {mine[-1].part_timestamp:%Y-%m-%d %H:%M:%S}"
    return Result(statement, message + ".", steps=steps, maintenance_seconds=seconds)


def create_view(engine: Engine, statement: st.CreateViewDF | st.CreateQueryView) -> Result:
    """CREATE VIEW, with IF NOT EXISTS or OR REPLACE [CASCADE]."""
    unchanged = _unchanged(engine, statement, "view")
    if unchanged is not None:
        return unchanged
    old = engine.catalog.get(statement.name.text) if statement.creation.or_replace else None
    return _define_view(engine, statement) if old is None else _replace_view(engine, statement, old)


def _define_view(engine: Engine, statement: st.CreateViewDF | st.CreateQueryView) -> Result:
    """Define a new view (a ViewDF, or a query translated into ViewDFs) and compute its parts."""
    if isinstance(statement, st.CreateViewDF):
        backfill = _publish(engine, [(statement, {})])
        definition = engine.catalog.get(statement.name.text)
        assert definition is not None      # just published
        return _created(statement, definition.name, f"PARTITION LENGTH {definition.partition_length}", backfill)
    _check_new_name(engine, statement, statement.name)
    plan = plan_query_view(statement, engine.catalog, engine.spark, engine.maintainer.definer)
    return _created(statement, statement.name.text, plan.description, _publish(engine, plan.statements(engine.catalog)))


def _replace_view(engine: Engine, statement: st.CreateViewDF | st.CreateQueryView, old: ObjectDef) -> Result:
    """OR REPLACE of a view whose definition changed: drop it, define it anew and compute its parts;
    with CASCADE, the views reading it are defined again from their own text and recomputed. One
    catalog transaction: if anything fails, the old views stay as they were."""
    name = statement.name
    doomed = engine.catalog.downstream(old.name)
    readers = [d for d in engine.catalog.views() if d in doomed[1:] and d.owner is None]
    if readers and not statement.creation.cascade:
        names = ", ".join(d.name for d in readers)
        raise statement.fragment.error(
            f"cannot replace {old.name}: {names} read{'s' if len(readers) == 1 else ''} it; "
            f"CREATE OR REPLACE VIEW {old.name} CASCADE AS ... recomputes {'it' if len(readers) == 1 else 'them'} "
            f"too", name.start, name.end)
    with engine.catalog.transaction():
        engine.drop_objects(doomed)
        result = _define_view(engine, statement)
        for reader in readers:
            again = parse(reader.origin or reader.definition)[0]
            assert isinstance(again, (st.CreateViewDF, st.CreateQueryView))
            try:
                recomputed = _define_view(engine, again)
            except ViewDFError as error:
                raise statement.fragment.error(f"{reader.name}, which reads {old.name}, cannot be defined over "
                                               f"the new {old.name}: {error.message}; nothing was replaced",
                                               name.start, name.end) from None
            result.steps += recomputed.steps
            if recomputed.maintenance_seconds is not None:
                result.maintenance_seconds = (result.maintenance_seconds or 0.0) + recomputed.maintenance_seconds
    assert result.message is not None      # _define_view's results always have one
    message = "Replaced" + result.message.removeprefix("Created")
    if readers:
        message = message.rstrip(".") + f"; recomputed {', '.join(d.name for d in readers)} (CASCADE)."
    return Result(statement, message, steps=result.steps, maintenance_seconds=result.maintenance_seconds)


def drop(engine: Engine, statement: st.Drop) -> Result:
    kind = statement.kind.lower()
    definition = engine.catalog.get(statement.name.text)
    if definition is None and statement.if_exists:
        return Result(statement, f"No {kind} named {statement.name.text}; nothing dropped.")
    definition = engine.require(statement.name.text, (kind,), statement, statement.name)
    owner = engine.catalog.get(definition.owner) if definition.owner else None
    if owner is not None:
        raise statement.fragment.error(f"{definition.name} is a helper view of {owner.name}; "
                                       f"DROP VIEW {owner.name} drops it", statement.name.start, statement.name.end)
    doomed = engine.catalog.downstream(definition.name)
    if len(doomed) > 1 and not statement.cascade:
        names = ", ".join(d.name for d in doomed[1:])
        raise statement.fragment.error(f"cannot drop {definition.name}: {names} "
                                       f"{agreeing(len(doomed) - 1, 'depends', 'depend')} on it; "
                                       f"use DROP {statement.kind} {definition.name} CASCADE",
                                       statement.name.start, statement.name.end)
    dropped = engine.drop_objects(doomed)
    return Result(statement, f"Dropped {', '.join(d.name for d in dropped)}. The data files are deleted after "
                             f"{format_duration(VACUUM_RETAIN_SECONDS)} (VACUUM RETAIN 0 SECONDS deletes them now).")

