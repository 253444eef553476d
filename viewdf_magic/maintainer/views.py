"""Define hand-written ViewDFs: compile their clauses, validate references, infer the schema."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, fields, replace
from typing import Callable, cast

from pyspark.errors import PySparkException
from pyspark.sql.types import StructField, StructType

from ..catalog.catalog import Catalog
from ..catalog.model import CATALOG_VIEW, PART_TIMESTAMP, ObjectDef
from ..language.parser import parse
from ..language.queries import (CompiledQuery, Lookup, ObjectKind, RefKind, Scope, compile_query, compile_references,
                                same_query)
from ..language.source import Fragment
from ..language.statements import ClauseKind, CreateViewDF, DeltaQuery
from .execute import QueryRunner
from ..storage.spark_errors import spark_error
from .timeline import ResolvedRef, Timeline

# Part subscripts at which reference arithmetic is checked for future and cyclic references.
_SAMPLE_SUBSCRIPTS = (1_000_000, 1_000_001, 1_000_059, 23_667_840, 23_667_899, 394_464)


@dataclass(frozen=True)
class ViewClauses:
    """A CREATE VIEW statement's clauses, compiled for Spark (each parsed once)."""

    initialize: CompiledQuery
    update: CompiledQuery
    recompute: CompiledQuery | None
    range: CompiledQuery | None = None      # RANGE: a run of parts at once (maintainer/ranges.py)
    unchanged_when: CompiledQuery | None = None   # UNCHANGED WHEN: inputs whose emptiness makes UPDATE copy V[j-1]
    empty_when: CompiledQuery | None = None       # EMPTY WHEN: inputs whose emptiness makes the part empty
    unique_update: CompiledQuery | None = None    # UPDATE .. WHEN X[j] IS UNIQUE (..): for parts where that holds
    unique_guard: CompiledQuery | None = None     # its X[j] (references only)
    unique_columns: tuple[str, ...] = ()          # its columns, as X's schema spells them

    def view(self, definition: ObjectDef, statement: CreateViewDF) -> CompiledView:
        """These clauses as the view ``definition``, which ``statement`` created."""
        clauses = {f.name: getattr(self, f.name) for f in fields(ViewClauses)}
        return CompiledView(**clauses, definition=definition, refresh_every=statement.refresh_every)


@dataclass(frozen=True, kw_only=True)
class CompiledView(ViewClauses):
    """A view's definition with its clauses compiled for Spark."""

    definition: ObjectDef
    refresh_every: int | None = None

    def for_entry(self, definition: ObjectDef) -> CompiledView | None:
        """These clauses for the catalog entry ``definition`` when it is the same view (its id and statement;
        other fields may have changed), else None."""
        if (self.definition.id, self.definition.definition) != (definition.id, definition.definition):
            return None
        return self if self.definition == definition else replace(self, definition=definition)

    def clause(self, subscript: int, has_parts: bool,
               unique: Callable[[CompiledQuery, tuple[str, ...]], bool] | None = None) -> tuple[ClauseKind, CompiledQuery]:
        """Which query computes part ``subscript``: INITIALIZE first, then UPDATE, with RECOMPUTE
        every ``refresh_every`` parts (it bounds the drift of floating-point running sums); the UPDATE
        WHEN .. IS UNIQUE clause where ``unique`` says its guard holds at the part."""
        if not has_parts:
            return ClauseKind.INITIALIZE, self.initialize
        if self.refresh_every and self.recompute is not None and subscript % self.refresh_every == 0:
            return ClauseKind.RECOMPUTE, self.recompute
        if self.unique_update is not None and self.unique_guard is not None and unique is not None \
                and unique(self.unique_guard, self.unique_columns):
            return ClauseKind.UPDATE_WHEN_UNIQUE, self.unique_update
        return ClauseKind.UPDATE, self.update


def catalog_lookup(catalog: Catalog) -> Lookup:
    """Name resolution for queries: the catalog's objects plus the part-metadata view."""
    kinds = {"stream": ObjectKind.STREAM, "view": ObjectKind.VIEW, "table": ObjectKind.TABLE}

    def lookup(name: str) -> tuple[str, ObjectKind] | None:
        definition = catalog.get(name)
        if definition is not None:
            return definition.name, kinds[definition.kind]
        if name.lower() == CATALOG_VIEW:
            return CATALOG_VIEW, ObjectKind.CATALOG
        return None
    return lookup


def _compile_clause(clause: DeltaQuery, lookup: Lookup, name: str) -> CompiledQuery:
    scope = Scope.RECOMPUTE if clause.clause is ClauseKind.RECOMPUTE else Scope.DELTA     # RANGE reads as UPDATE does
    return compile_query(clause.query, lookup, scope, clause.variable, name)


def _compile_declaration(declared: Fragment | None, statement: CreateViewDF, lookup: Lookup) -> CompiledQuery | None:
    """UNCHANGED WHEN / EMPTY WHEN: the parts it names, in the UPDATE clause's part variable."""
    if declared is None:
        return None
    return compile_references(declared, lookup, statement.update.variable, statement.name.text)


def _compile_guard(statement: CreateViewDF, lookup: Lookup, catalog: Catalog
                   ) -> tuple[CompiledQuery | None, CompiledQuery | None, tuple[str, ...]]:
    """UPDATE V[j] WHEN X[j] IS UNIQUE (..) AS ...: the clause, X[j], and the columns as X spells them.
    X must be one stream part and the columns its own."""
    clause = statement.unique_update
    if clause is None or clause.guard is None:
        return None, None, ()
    guard = compile_references(clause.guard.part, lookup, clause.variable, statement.name.text)
    fragment = clause.guard.part
    if len(guard.bindings) != 1:
        raise fragment.error("IS UNIQUE names one stream part, e.g. M[j]")
    binding = guard.bindings[0]
    source = catalog.get(binding.name)
    if source is None or source.kind != "stream":
        raise fragment.error(f"IS UNIQUE is known for stream parts only; {binding.name} is "
                             f"{'this view' if source is None else 'a ' + source.kind}", binding.start, binding.end)
    spelled = {f.name.lower(): f.name for f in source.schema.fields}
    columns = []
    for name in clause.guard.columns:
        if name.key not in spelled:
            raise statement.fragment.error(f"IS UNIQUE names '{name.text}', which is not a column of {source.name} "
                                           f"({', '.join(spelled.values())})", name.start, name.end)
        columns.append(spelled[name.key])
    return _compile_clause(clause, lookup, statement.name.text), guard, tuple(columns)


def _compile_clauses(statement: CreateViewDF, catalog: Catalog) -> ViewClauses:
    lookup = catalog_lookup(catalog)
    name = statement.name.text
    initialize = _compile_clause(statement.initialize, lookup, name)
    update = _compile_clause(statement.update, lookup, name)
    recompute = _compile_clause(statement.recompute, lookup, name) if statement.recompute else None
    ranged = _compile_clause(statement.range, lookup, name) if statement.range else None
    unique_update, guard, columns = _compile_guard(statement, lookup, catalog)
    return ViewClauses(initialize, update, recompute, ranged, _compile_declaration(statement.unchanged_when, statement, lookup),
                    _compile_declaration(statement.empty_when, statement, lookup), unique_update, guard, columns)


def compile_existing(definition: ObjectDef, catalog: Catalog) -> CompiledView:
    """Recompile a stored view definition (on reopen, or after creation)."""
    statement = parse(definition.definition)[0]
    assert isinstance(statement, CreateViewDF)
    return _compile_clauses(statement, catalog).view(definition, statement)


class ViewDefiner:
    """Checks a CREATE VIEW ... INITIALIZE ... UPDATE statement and builds its catalog entry."""

    def __init__(self, catalog: Catalog, timeline: Timeline, runner: QueryRunner) -> None:
        self.catalog = catalog
        self.timeline = timeline
        self.runner = runner
        self._defined: dict[str, CompiledView] = {}

    def define(self, statement: CreateViewDF) -> ObjectDef:
        """The catalog entry of a new view, checked; its compiled clauses are kept for ``take_compiled``."""
        name = statement.name
        if self.catalog.get(name.text) is not None or name.key == CATALOG_VIEW:
            raise statement.fragment.error(f"'{name.text}' already exists", name.start, name.end)
        compiled = _compile_clauses(statement, self.catalog)
        initialize, update, recompute, ranged = compiled.initialize, compiled.update, compiled.recompute, compiled.range
        unique_update, guard = compiled.unique_update, compiled.unique_guard
        clauses = [q for q in (initialize, update, recompute, ranged, unique_update) if q]
        sources = self._sources(clauses, name.text)
        partitioned = [s for s in sources if s.partitioned]
        if not partitioned:
            raise statement.fragment.error("a view must read at least one stream or view part",
                                           name.start, name.end)
        length = statement.partition_length or max(s.length for s in partitioned)
        for source in partitioned:
            if source.owner is not None and source.owner.lower() == name.key:
                continue    # a translated view's own helpers (older translations' coarser dyadic MAX/MIN blocks)
            if length % source.length:
                at = statement.partition_length_at or name.start
                raise statement.fragment.error(
                    f"PARTITION LENGTH {length} is not a multiple of {source.name}'s partition length "
                    f"{source.partition_length}", at)
        draft = ObjectDef("view", name.text, uuid.uuid4().hex[:12], StructType([]).json(),
                          statement.fragment.text, time.time(), length,
                          sources=tuple(s.name for s in sources))
        self._check_references(initialize, draft, ClauseKind.INITIALIZE)
        self._check_references(update, draft, ClauseKind.UPDATE)
        if recompute:
            self._check_references(recompute, draft, ClauseKind.RECOMPUTE)
        if ranged:
            self._check_references(ranged, draft, ClauseKind.RANGE)
        if unique_update and guard:
            self._check_references(unique_update, draft, ClauseKind.UPDATE)
            self._check_references(guard, draft, "UNIQUE WHEN")
        for declared, clause in ((compiled.unchanged_when, "UNCHANGED WHEN"), (compiled.empty_when, "EMPTY WHEN")):
            if declared is not None:
                self._check_references(declared, draft, clause)
        schema = self._infer_schema(initialize, update, recompute, draft)
        if unique_update:
            analyzed = self._analyze(unique_update, replace(draft, schema_json=schema.json()), ClauseKind.UPDATE)
            schema = self._widen(schema, analyzed, unique_update, ClauseKind.UPDATE)
        draft = replace(draft, schema_json=schema.json())
        if statement.start_at_latest:
            draft = replace(draft, start=self._latest_start(draft, partitioned))
        self._defined[draft.key] = compiled.view(draft, statement)
        return draft

    def take_compiled(self, definition: ObjectDef) -> CompiledView | None:
        """The clauses ``define`` compiled for ``definition`` (the same view: its id and statement), once."""
        view = self._defined.pop(definition.key, None)
        return view.for_entry(definition) if view is not None else None

    def _sources(self, clauses: list[CompiledQuery], view: str) -> list[ObjectDef]:
        seen: dict[str, ObjectDef] = {}
        for query in clauses:
            for binding in query.bindings:
                definition = self.catalog.get(binding.name)
                if definition is not None and binding.name.lower() != view.lower():
                    seen.setdefault(definition.key, definition)
        return list(seen.values())

    def _check_references(self, query: CompiledQuery, view: ObjectDef, clause: ClauseKind | str) -> None:
        """Refuse future and cyclic references of ``query``, a clause of kind ``clause`` or the references
        of a declaration (``clause`` is its text: ``EMPTY WHEN``)."""
        fragment = query.fragment
        name = clause.label if isinstance(clause, ClauseKind) else clause
        for binding in query.bindings:
            is_self = binding.name.lower() == view.key
            if is_self and not isinstance(clause, ClauseKind):
                raise fragment.error(f"{name} names inputs of {view.name}, not its own parts", binding.start,
                                     binding.end)
            if is_self and clause not in (ClauseKind.UPDATE, ClauseKind.RANGE):
                raise fragment.error(f"{name} cannot read {view.name}'s own parts; only UPDATE can "
                                     f"(e.g. {view.name}[j-1])", binding.start, binding.end)
            if binding.kind is not RefKind.PARTS or binding.upper is None:
                continue
            source = view if is_self else self.catalog.get(binding.name)
            assert source is not None      # compiling the query looked every name up
            assert query.variable is not None      # every clause of a ViewDF names its part variable
            for j in _SAMPLE_SUBSCRIPTS:
                try:
                    upper = binding.upper.evaluate({query.variable: j})
                except ZeroDivisionError as exc:
                    raise fragment.error(str(exc), binding.start, binding.end) from None
                if is_self and upper >= j:
                    raise fragment.error(
                        f"dependency cycle: {view.name}[{query.variable}] would read "
                        f"{binding.text}, a part that is not computed yet; a view can read only its own "
                        f"earlier parts", binding.start, binding.end)
                if not is_self and upper * source.length >= (j + 1) * view.length:
                    raise fragment.error(
                        f"{name} references a future part: {binding.text} starts after "
                        f"{view.name}[{query.variable}] ends", binding.start, binding.end)

    def _analyze(self, query: CompiledQuery, view: ObjectDef, clause: ClauseKind) -> StructType:
        """The output schema of ``query`` over empty inputs (analysis only, no Spark job)."""
        refs, frames = [], {}
        for binding in query.bindings:
            definition = view if binding.name.lower() == view.key else self.catalog.get(binding.name)
            # None only for the catalog view (viewdf_parts), whose frame does not read the definition
            ref = ResolvedRef(binding, cast(ObjectDef, definition))
            refs.append(ref)
            frames[binding.placeholder] = self.runner.frame(ref, empty=True)
        with self.runner.bound(query, refs, frames, context=f"in {clause.label}") as frame:
            return frame.schema

    def _infer_schema(self, initialize: CompiledQuery, update: CompiledQuery,
                      recompute: CompiledQuery | None, draft: ObjectDef) -> StructType:
        """INITIALIZE's columns, widened to UPDATE's types; RECOMPUTE's are checked against them. A clause that
        is INITIALIZE's query (``same_query``: neither then reads the view's own parts) has INITIALIZE's output,
        which the view's columns hold already, and is not analysed again."""
        schema = self._view_schema(self._analyze(initialize, draft, ClauseKind.INITIALIZE), initialize)
        for _ in range(0 if same_query(initialize, update) else 4):
            view = replace(draft, schema_json=schema.json())
            updated = self._analyze(update, view, ClauseKind.UPDATE)
            widened = self._widen(schema, updated, update, ClauseKind.UPDATE)
            if widened == schema:
                break
            schema = widened
        if recompute is not None and not same_query(initialize, recompute):
            self._widen(schema, self._analyze(recompute, replace(draft, schema_json=schema.json()),
                                              ClauseKind.RECOMPUTE), recompute, ClauseKind.RECOMPUTE)
        return schema

    def _view_schema(self, output: StructType, query: CompiledQuery) -> StructType:
        fields = [f for f in output.fields if f.name.upper() != PART_TIMESTAMP]
        seen: set[str] = set()
        for field in fields:
            if field.name.lower() in seen:
                raise query.rewritten.error(f"INITIALIZE returns two columns named '{field.name}'; "
                                            f"give them distinct aliases")
            seen.add(field.name.lower())
        return StructType([StructField(f.name, f.dataType, True) for f in fields])

    def _widen(self, schema: StructType, output: StructType, query: CompiledQuery, clause: ClauseKind) -> StructType:
        fields = [f for f in output.fields if f.name.upper() != PART_TIMESTAMP]
        if len(fields) != len(schema.fields):
            names = ", ".join(f.name for f in fields)
            raise query.rewritten.error(
                f"{clause.label} returns {len(fields)} columns ({names}) but INITIALIZE returns "
                f"{len(schema.fields)} ({', '.join(schema.fieldNames())}); columns are matched by position")
        if [f.dataType for f in fields] == [f.dataType for f in schema.fields]:
            return schema       # a union of equal types is that type (``schema``'s columns are all nullable)
        spark = self.runner.spark
        left = spark.createDataFrame([], schema)
        right = spark.createDataFrame([], StructType([StructField(s.name, f.dataType, True)
                                                      for s, f in zip(schema.fields, fields)]))
        try:
            union = left.union(right).schema
        except PySparkException as exc:
            raise spark_error(exc, query.rewritten, query.bindings,
                              f"{clause.label} column types do not match INITIALIZE's") from None
        return StructType([StructField(f.name, f.dataType, True) for f in union.fields])

    def _latest_start(self, draft: ObjectDef, sources: list[ObjectDef]) -> int | None:
        newest = [self.timeline.newest(s) for s in sources]
        known = [n for n in newest if n is not None]
        if len(known) < len(newest):
            return None
        return min(n * s.length for n, s in zip(known, sources)) // draft.length

