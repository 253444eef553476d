"""Handlers of the statements that add, change or remove data: INSERT, LOAD, DELETE, UPDATE, SEAL, VACUUM."""

from __future__ import annotations

import dataclasses
import os
import time
from contextlib import nullcontext
from typing import Callable, cast

import pandas as pd

from pyspark.sql import DataFrame
from pyspark.sql.types import StructField, StructType

from ..catalog.actions import Advance, Loaded
from ..catalog.model import LoadedFile, ObjectDef
from ..errors import ViewDFError
from ..storage.landing import Taken, UnreadablePath, fingerprint, remove_files, sort_files
from ..engine.conform import (FORMATS, ErrorAt, bad_line, conform_by_name, conform_by_position, read_file, target_fields,
                              to_frame, uncastable)
from ..engine.ingest import MAX_NEW_PARTS
from ..wording import agreeing, plural
from ..language import statements as st
from ..language.queries import CompiledQuery, values_rows, written_span
from ..storage.vacuum import vacuum as vacuum_folders
from ..timeparts import format_duration, format_part, subscript_of

from ..engine.engine import Engine
from ..engine.results import Result, timed


def takes_stream_rows(engine: Engine, statement: st.Statement) -> bool:
    """Whether ``statement`` is a LOAD or INSERT into a stream (whose maintenance may wait for the next one's)."""
    if not isinstance(statement, (st.Load, st.Insert)):
        return False
    definition = engine.catalog.get(statement.target.text)
    return definition is not None and definition.kind == "stream"


def _target(engine: Engine, statement: st.Statement, name: st.Name) -> ObjectDef:
    return engine.require(name.text, ("stream", "table"), statement, name)


def _write(engine: Engine, statement: st.Statement, definition: ObjectDef, frame: Callable[[], DataFrame], error,
           loaded: Loaded | None = None, note: str = "", as_is: list[LoadedFile] | None = None,
           moved: list[LoadedFile] | None = None) -> Result:
    """Append ``frame()`` to a table or stream, publishing ``loaded`` (the files it came from) in the same log
    entry as its rows, then maintain the views; ``note`` follows where the rows went in the message. A stream
    takes Parquet files ``as_is`` without Spark reading them when it can (``Ingester.load_as_is``). The files
    ``moved`` (LOAD .. MOVE) are removed once the rows are committed, before the views are maintained."""
    with engine.refusals_counted(), engine.catalog.transaction() if loaded is not None else nullcontext():
        if definition.kind == "table":
            rows = engine.ingester.append_table(definition, frame(), error)
        else:
            taken = engine.ingester.load_as_is(definition, as_is, error, moved is not None) if as_is else None
            report = taken if taken is not None else engine.ingester.append_stream(definition, frame(), error)
        if loaded is not None:
            engine.catalog.commit([loaded])
    removal = _removed(statement.path, moved) if isinstance(statement, st.Load) else ""
    if definition.kind == "table":
        return Result(statement, f"Inserted {plural(rows, 'row')} into {definition.name}{note}.{removal}")
    report.source = note
    seconds = engine.maintain_after(report)
    return Result(statement, f"Inserted {report}.{removal}" + engine.maintenance_note(), steps=report.steps,
                  maintenance_seconds=seconds)


def _removed(path: str, moved: list[LoadedFile] | None) -> str:
    """Remove the files a LOAD .. MOVE of ``path`` took (their rows committed); what the message says of it."""
    if not moved:
        return ""
    failures = remove_files(moved)
    said = f" Removed {plural(len(moved) - len(failures), 'loaded file')} from '{path}'."
    if failures:
        file, reason = failures[0]
        more = f" (and {plural(len(failures) - 1, 'other file')})" if len(failures) > 1 else ""
        said += (f" {_shown(file.path)}{more} could not be removed ({reason}): its rows are loaded, so the next "
                 f"LOAD .. MOVE skips it and removes it.")
    return said


def insert(engine: Engine, statement: st.Insert) -> Result:
    definition = _target(engine, statement, statement.target)
    query = statement.query
    error = lambda message: query.error(message)  # noqa: E731
    frame, compiled = engine.query(query)
    columns = [c.text for c in statement.columns] if statement.columns else None
    fields = target_fields(definition.schema, columns, error)
    conformed = conform_by_position(frame, definition.schema, columns, error)
    return _write(engine, statement, definition, lambda: conformed,
                  lambda message: _at_rejected_value(message, compiled, frame, fields))


def _at_rejected_value(message: str, query: CompiledQuery, frame: DataFrame, fields: list[StructField]) -> ViewDFError:
    """``message`` pointing at the first value of a VALUES list that its column's type rejects, else at the query
    (``frame`` is the query's rows, whose columns fill ``fields``)."""
    rows = values_rows(query.rewritten)
    found = uncastable(frame, fields) if rows is not None else None
    if rows is None or found is None:
        return query.fragment.error(message)
    row, column = found
    return query.fragment.error(message, *(written_span(query.rewritten, rows[row][column]) or ()))


def ingest(engine: Engine, statement: st.Ingest) -> Result:
    """A batch given as a pandas or Spark DataFrame, appended to a stream; the views are then maintained."""
    definition = engine.require(statement.target.text, ("stream",))
    frame = to_frame(engine.spark, cast("pd.DataFrame | DataFrame", statement.data))
    if frame.columns:   # errors have no statement text to point into
        frame = conform_by_name(frame, definition.schema, ViewDFError)
    with engine.refusals_counted():
        report = engine.ingester.append_stream(definition, frame, ViewDFError)
    report.maintenance_seconds = engine.maintain_after(report)
    report.failures = [str(f) for f in engine.maintainer.failures]
    return Result(statement, f"Ingested {report}.", steps=report.steps, ingested=report)


def load(engine: Engine, statement: st.Load) -> Result:
    """LOAD a file, or a folder's files: files the target took before are skipped (unless FORCE), and the
    files taken are recorded with their rows (storage/landing.py); MOVE then removes them from the path. MOVE
    hashes every file, even one at a recorded path with the recorded size and time: that path's file was
    removed, so this one may be another."""
    definition = _target(engine, statement, statement.target)
    error = lambda message: statement.fragment.error(message, statement.path_at)  # noqa: E731
    recorded = engine.catalog.state(definition.name).loaded
    try:
        files: list[LoadedFile] | None = fingerprint(statement.path, None if statement.move else recorded)
    except UnreadablePath as unreadable:
        files, unrecorded = None, str(unreadable)
    if files is None:        # Spark may still read it (a path only a Spark Connect server sees): unrecorded
        if statement.move:
            raise error(f"MOVE removes the files it loads, and {unrecorded}")
        unrecorded_frame = read_file(engine.spark, statement.path, statement.format, statement.options,
                                     definition.schema, error)
        return _write(engine, statement, definition, lambda: unrecorded_frame,
                      _at_bad_line(engine, statement, definition.schema, error),
                      note=f" (not recorded as loaded: {unrecorded}; a LOAD run again loads its rows again)")
    taken = sort_files(files, recorded, statement.move)
    if not statement.force:
        if taken.changed:
            file, before = taken.changed[0]
            raise error(f"{_shown(file.path)} has changed since it was loaded into {definition.name} on "
                        f"{_when(before.loaded)} ({before.size:,} bytes then, {file.size:,} now): loading it "
                        f"again would add its earlier rows twice. Add FORCE to load all of its rows again")
        if not taken.new:
            moved = [file for file, _ in taken.loaded] if statement.move else None
            return Result(statement, _nothing_new(statement.path, definition.name, files, taken)
                          + _removed(statement.path, moved))
    chosen = files if statement.force else taken.new
    paths = [f.path for f in chosen]
    frame = lambda: read_file(engine.spark, statement.path, statement.format, statement.options,  # noqa: E731
                              definition.schema, error, paths)
    now = time.time()
    loaded = Loaded(definition.key, tuple(dataclasses.replace(f, loaded=now) for f in chosen))
    skipped = len(files) - len(chosen)
    note = f" from {plural(len(chosen), 'new file')}; {plural(skipped, 'file')} loaded before skipped" if skipped else ""
    as_is = chosen if definition.kind == "stream" and _plain_parquet(statement, paths) else None
    moved = (chosen + [file for file, _ in taken.loaded if not statement.force]) if statement.move else None
    return _write(engine, statement, definition, frame, _at_bad_line(engine, statement, definition.schema, error), loaded,
                  note, as_is, moved)


def _plain_parquet(statement: st.Load, paths: list[str]) -> bool:
    """Whether every file a LOAD takes is Parquet (by FORMAT, or by its name) read without options."""
    return not statement.options and all(
        (statement.format or FORMATS.get(os.path.splitext(p)[1].lower())) == "parquet" for p in paths)


def _at_bad_line(engine: Engine, statement: st.Load, schema: StructType, error: ErrorAt) -> ErrorAt:
    """``error`` prefixed with where the first bad row of the CSV file or folder is (file and line), if known
    (files taken before loaded without error, so a bad row is in a file being loaded)."""
    def at_bad_line(message: str) -> ViewDFError:
        where = bad_line(engine.spark, statement.path, statement.format, statement.options, schema)
        return error(f"{where}: {message}" if where else message)
    return at_bad_line


def _shown(path: str) -> str:
    """A recorded file's path as a user wrote it (local paths without ``file:``)."""
    return f"'{path[len('file:'):] if path.startswith('file:') else path}'"


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


def _nothing_new(path: str, target: str, files: list[LoadedFile], taken: Taken) -> str:
    """The message of a LOAD whose files were all taken before."""
    if not files:
        return f"'{path}' holds no file to load; nothing was loaded."
    first = min(before.loaded for _, before in taken.loaded)
    if len(files) == 1:
        file, before = taken.loaded[0]
        also = "" if before.path == file.path else f" (as {_shown(before.path)})"
        return (f"'{path}' was loaded into {target} already{also}, on {_when(first)}; nothing was loaded. "
                f"Add FORCE to load it again.")
    return (f"No new file in '{path}': its {len(files)} files were loaded into {target} already (from "
            f"{_when(first)}); nothing was loaded. Add FORCE to load them again.")


def changed_stream(engine: Engine, change: st.Delete | st.Update) -> ObjectDef:
    """The stream (or table no view reads) a DELETE or UPDATE changes; a view, or a table views read, is refused,
    saying why."""
    name = change.target
    definition = engine.require(name.text, ("stream", "table", "view"), change, name)
    verb = "DELETE" if isinstance(change, st.Delete) else "UPDATE"
    if definition.kind == "view":
        raise change.fragment.error(f"'{name.text}' is a view: its rows follow from the streams it reads "
                                    f"({', '.join(definition.sources)}); change those, and it is recomputed",
                                    name.start, name.end)
    readers = [d.name for d in engine.catalog.downstream(definition.name)[1:] if not d.owner]
    if definition.kind == "table" and readers:
        raise change.fragment.error(
            f"'{name.text}' is a dimension table that {', '.join(readers)} {agreeing(len(readers), 'reads', 'read')}: "
            f"views read a table as it is when they compute a part, so a {verb} could not reach the parts computed "
            f"before it. INSERT adds rows to it, and DROP .. CASCADE then CREATE replaces it with those views",
            name.start, name.end)
    if isinstance(change, st.Update):
        engine.corrector.check_assignments(definition, change)
    return definition


def change(engine: Engine, statement: st.Delete | st.Update) -> Result:
    """DELETE or UPDATE rows: a stream's parts holding them are rewritten and the views' parts that read them
    recomputed; a table no view reads is rewritten (engine/corrections.py)."""
    definition = changed_stream(engine, statement)
    plan = engine.corrector.plan(definition, statement)
    if isinstance(statement, st.Update):
        engine.corrector.check_types(plan, statement)
    report = engine.corrector.change(plan, statement)
    seconds = engine.maintain_after(report) if report.rows else None
    return Result(statement, f"{report}." + engine.maintenance_note(), steps=report.steps,
                  maintenance_seconds=seconds)


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
    steps, seconds = timed(engine.maintain)
    return Result(statement, f"Sealed {definition.name} through "
                             f"{format_part(through, definition.length)}." + engine.maintenance_note(),
                  steps=steps, maintenance_seconds=seconds)

