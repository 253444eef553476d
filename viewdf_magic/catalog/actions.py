"""The catalog's log actions: one typed class for each kind of change, how it is written to the
log as JSON and read back, and what it does to the catalog's state."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterable, Protocol, cast

from .model import folder_of
from .model import LoadedFile, ObjectDef, ObjectState, PartMeta

OPTIONS = ("lateness", "retain", "late_into")


class InvalidAction(ValueError):
    """An action that cannot be read from the log or applied to the catalog's state."""


Undo = Callable[[], None]
_MISSING = object()


class CatalogState(Protocol):
    """What actions change: objects and their part states by lower-case name, settings, how many part
    slices reference each data folder, and data folders no part references any more (-> since when)."""

    objects: dict[str, ObjectDef]
    states: dict[str, ObjectState]
    settings: dict[str, str]
    references: dict[str, int]
    garbage: dict[str, float]


@dataclass(frozen=True)
class Action:
    """One change, published in a log entry (``op`` names its kind in the JSON)."""

    op: ClassVar[str]

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, **{f.name: getattr(self, f.name) for f in dataclasses.fields(self)}}

    @classmethod
    def read(cls, data: dict[str, Any]) -> "Action":
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data})

    def apply(self, state: CatalogState, version: int) -> Undo:
        """Change ``state``; return what puts back exactly what it changed (so a commit that fails
        half-way is undone at the cost of its own changes, not of the catalog's size). Every lookup
        that can fail comes before the first change."""
        raise NotImplementedError

    @property
    def object_name(self) -> str | None:
        """The (lower-case) name of the object whose state it changes, if one."""
        return getattr(self, "name", None)


@dataclass(frozen=True)
class Create(Action):
    """A stream, view or table is defined (with no parts)."""

    op = "create"
    definition: ObjectDef

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "object": self.definition.to_json()}

    @classmethod
    def read(cls, data: dict[str, Any]) -> "Create":
        return cls(ObjectDef.from_json(data["object"]))

    @property
    def object_name(self) -> str | None:
        return self.definition.key

    def apply(self, state: CatalogState, version: int) -> Undo:
        key = self.definition.key
        undo = _undo_items([(state.objects, key), (state.states, key)])
        state.objects[key] = self.definition
        state.states[key] = ObjectState()
        return undo


@dataclass(frozen=True)
class Drop(Action):
    """An object is dropped; its data folder is garbage from ``updated`` on (older logs have no
    ``updated``: DROP deleted the files at once)."""

    op = "drop"
    name: str
    updated: float | None = None

    def to_json(self) -> dict[str, Any]:
        return _without_none(super().to_json(), "updated")

    def apply(self, state: CatalogState, version: int) -> Undo:
        dropped = state.objects.get(self.name)
        folder = f"data/{dropped.id}" if dropped is not None and self.updated is not None else None
        parts = state.states[self.name].parts.values() if self.name in state.states else []
        # its folders go with its own; a folder of another object it read (a fused part) when no part reads it
        released = _reference(state, [], [text for meta in parts for text in meta.folders],
                              self.updated, inside=folder)
        undo = _undo_all(released, _undo_items([(state.objects, self.name), (state.states, self.name)]
                                               + ([(state.garbage, folder)] if folder else [])))
        state.objects.pop(self.name, None)
        state.states.pop(self.name, None)
        if folder:
            state.garbage[folder] = cast(float, self.updated)     # there is a folder only with updated
        return undo


@dataclass(frozen=True)
class Part(Action):
    """A part is stored (or recomputed). ``same_rows``: a view part recomputed by another clause with
    the rows it had, so readers computed from it stay fresh."""

    op = "part"
    name: str
    part: PartMeta
    same_rows: bool = False

    def to_json(self) -> dict[str, Any]:
        data = {"op": self.op, "name": self.name, "part": self.part.to_json()}
        return {**data, "same_rows": True} if self.same_rows else data

    @classmethod
    def read(cls, data: dict[str, Any]) -> "Part":
        return cls(data["name"], PartMeta.from_json(data["part"]), bool(data.get("same_rows", False)))

    def apply(self, state: CatalogState, version: int) -> Undo:
        target = _state(state, self.name)
        stream = state.objects[self.name].kind == "stream"
        replaced = target.parts.get(self.part.subscript)
        meta = self.part.at_version(replaced.changed if replaced is not None and self.same_rows else version, version)
        # a recomputed view part: its old folders are garbage once no part references them
        undo = _undo_all(_undo_items([(target.parts, meta.subscript)]), _undo_fields(target, "first"),
                         _undo_append(target.sealed),
                         _reference(state, meta.folders, replaced.folders if replaced is not None else (), meta.updated))
        newest = target.newest_part()
        target.parts[meta.subscript] = meta
        if replaced is None and newest is not None and meta.subscript < newest:     # keep subscript order
            ordered = sorted(target.parts.items())
            target.parts.clear()
            target.parts.update(ordered)
        if stream:
            if target.first is not None and meta.subscript < target.first - 1:   # late rows before the first part
                target.sealed.append((meta.subscript + 1, target.first - 1, meta.updated))
            target.first = meta.subscript if target.first is None else min(target.first, meta.subscript)
        return undo


@dataclass(frozen=True)
class Advance(Action):
    """A stream's newest part moves to ``through``; parts skipped on the way are sealed empty."""

    op = "advance"
    name: str
    through: int
    updated: float

    def apply(self, state: CatalogState, version: int) -> Undo:
        target = _state(state, self.name)
        if target.newest is not None and self.through <= target.newest:
            return _nothing
        undo = _undo_all(_undo_fields(target, "first", "newest"), _undo_append(target.sealed))
        begin = target.first if target.newest is None else target.newest + 1
        if begin is None:
            begin = self.through
        target.first = begin if target.first is None else target.first
        gap_start = None
        for subscript in range(begin, self.through + 2):
            empty = subscript <= self.through and subscript not in target.parts
            if empty and gap_start is None:
                gap_start = subscript
            elif not empty and gap_start is not None:
                target.sealed.append((gap_start, subscript - 1, self.updated))
                gap_start = None
        target.newest = self.through
        return undo


@dataclass(frozen=True)
class Verified(Action):
    """A view part was recomputed after late data, in ``seconds``, and came out unchanged."""

    op = "verified"
    name: str
    subscript: int
    seconds: float = 0.0

    def apply(self, state: CatalogState, version: int) -> Undo:
        parts = _state(state, self.name).parts
        meta = parts[self.subscript]
        parts[self.subscript] = dataclasses.replace(meta, verified=version, repairs=meta.repairs + 1,
                                                    repair_seconds=meta.repair_seconds + self.seconds)
        return _undo_items([(parts, self.subscript)], {self.subscript: meta})


@dataclass(frozen=True)
class KeyFacts(Action):
    """A step's job found whether two rows of a stream part share ``columns`` (lower case): the part's facts
    gain them; its rows, versions and folders stay. A part that no longer exists is left alone (retention
    may have dropped it while the step ran)."""

    op = "key_facts"
    name: str
    subscript: int
    columns: tuple[str, ...]
    repeats: bool

    @classmethod
    def read(cls, data: dict[str, Any]) -> "KeyFacts":
        return cls(data["name"], int(data["subscript"]), tuple(data["columns"]), bool(data["repeats"]))

    def apply(self, state: CatalogState, version: int) -> Undo:
        parts = _state(state, self.name).parts
        meta = parts.get(self.subscript)
        if meta is None:
            return _nothing
        if self.repeats:
            changed = dataclasses.replace(meta, repeated=tuple(dict.fromkeys((*meta.repeated, self.columns))))
        else:
            changed = dataclasses.replace(meta, unique=tuple(dict.fromkeys((*meta.unique, self.columns))))
        parts[self.subscript] = changed
        return _undo_items([(parts, self.subscript)], {self.subscript: meta})


@dataclass(frozen=True)
class Options(Action):
    """A stream's ALLOWED LATENESS or an object's RETAIN, in parts (None: unbounded), and the table a stream
    diverts rows later than allowed into (None: they are refused); only the options named in ``values``
    change."""

    op = "options"
    name: str
    values: dict[str, int | str | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = set(self.values) - set(OPTIONS)
        if unknown:
            raise InvalidAction(f"unknown option {', '.join(sorted(unknown))}")

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "name": self.name, **self.values}

    @classmethod
    def read(cls, data: dict[str, Any]) -> "Options":
        return cls(data["name"], {option: data[option] for option in OPTIONS if option in data})

    def apply(self, state: CatalogState, version: int) -> Undo:
        target = _state(state, self.name)
        undo = _undo_fields(target, *self.values)
        for option, value in self.values.items():
            setattr(target, option, value)
        return undo


@dataclass(frozen=True)
class DropParts(Action):
    """Retention: parts before ``before`` are gone, their folders garbage from ``updated`` on (older
    logs have no ``updated``: retention deleted the files at once)."""

    op = "drop_parts"
    name: str
    before: int
    updated: float | None = None

    def to_json(self) -> dict[str, Any]:
        return _without_none(super().to_json(), "updated")

    def apply(self, state: CatalogState, version: int) -> Undo:
        target = _state(state, self.name)
        dropped = [text for s, meta in target.parts.items() if s < self.before for text in meta.folders]
        undo = _undo_all(_reference(state, [], dropped, self.updated),      # nothing is freed without updated
                         _undo_fields(target, "parts", "sealed", "dropped_before"))
        target.parts = {s: meta for s, meta in target.parts.items() if s >= self.before}
        target.sealed = [(max(a, self.before), b, when) for a, b, when in target.sealed if b >= self.before]
        target.dropped_before = max(self.before, target.dropped_before or self.before)
        return undo


@dataclass(frozen=True)
class Moved(Action):
    """Compaction: the rows of view parts now lie in other slices (``moves``: each part's subscript, its new
    slices and the slices it had); their rows, checksums, lineage and versions stay. Folders no part references
    any more are garbage from ``since``. A part whose slices are no longer the ones it had (another writer
    replaced it meanwhile) makes the action invalid, so nothing moves."""

    op = "moved"
    name: str
    moves: tuple[tuple[int, tuple[str, ...], tuple[str, ...]], ...]
    since: float

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "name": self.name, "moves": [list(move) for move in self.moves], "since": self.since}

    @classmethod
    def read(cls, data: dict[str, Any]) -> "Moved":
        return cls(data["name"], tuple((int(s), tuple(new), tuple(old)) for s, new, old in data["moves"]),
                   float(data["since"]))

    def apply(self, state: CatalogState, version: int) -> Undo:
        parts = _state(state, self.name).parts
        for subscript, _, old in self.moves:
            meta = parts.get(subscript)
            if meta is None or meta.folders != old:
                raise InvalidAction(f"{self.name}[{subscript}] changed since its rows were moved")
        undo = _undo_all(_undo_items([(parts, s) for s, _, _ in self.moves]),
                         _reference(state, [t for _, new, _ in self.moves for t in new],
                                    [t for _, _, old in self.moves for t in old], self.since))
        for subscript, new, _ in self.moves:
            parts[subscript] = dataclasses.replace(parts[subscript], folders=new)
        return undo


@dataclass(frozen=True)
class Setting(Action):
    """A warehouse setting is set (or removed, with None)."""

    op = "setting"
    key: str
    value: str | None

    def apply(self, state: CatalogState, version: int) -> Undo:
        undo = _undo_items([(state.settings, self.key)])
        if self.value is None:
            state.settings.pop(self.key, None)
        else:
            state.settings[self.key] = self.value
        return undo


@dataclass(frozen=True)
class Vacuumed(Action):
    """VACUUM deleted these garbage folders."""

    op = "vacuumed"
    folders: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "folders": list(self.folders)}

    @classmethod
    def read(cls, data: dict[str, Any]) -> "Vacuumed":
        return cls(tuple(data["folders"]))

    def apply(self, state: CatalogState, version: int) -> Undo:
        undo = _undo_items([(state.garbage, folder) for folder in self.folders])
        for folder in self.folders:
            state.garbage.pop(folder, None)
        return undo


@dataclass(frozen=True)
class TableData(Action):
    """Rows were appended to a dimension table (in ``folders``; none for no rows), or, with ``replace``, the
    table's rows are now those (a DELETE or UPDATE rewrote it)."""

    op = "table_data"
    name: str
    folders: tuple[str, ...]
    rows: int
    updated: float
    replace: bool = False

    def to_json(self) -> dict[str, Any]:
        data = {**super().to_json(), "folders": list(self.folders)}
        return data if self.replace else {k: v for k, v in data.items() if k != "replace"}

    @classmethod
    def read(cls, data: dict[str, Any]) -> "TableData":
        return cls(data["name"], tuple(data["folders"]), data["rows"], data["updated"], bool(data.get("replace", False)))

    def apply(self, state: CatalogState, version: int) -> Undo:
        target = _state(state, self.name)
        undo = _undo_fields(target, "table_folders", "table_rows", "table_updated")
        target.table_folders = [*([] if self.replace else target.table_folders), *self.folders]
        target.table_rows = self.rows + (0 if self.replace else target.table_rows)
        target.table_updated = self.updated
        return undo


@dataclass(frozen=True)
class Loaded(Action):
    """LOAD took these files into a stream or table (published with their rows, in one entry)."""

    op = "loaded"
    name: str
    files: tuple[LoadedFile, ...]

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "name": self.name, "files": [f.to_json() for f in self.files]}

    @classmethod
    def read(cls, data: dict[str, Any]) -> "Loaded":
        return cls(data["name"], tuple(LoadedFile.from_json(f) for f in data["files"]))

    def apply(self, state: CatalogState, version: int) -> Undo:
        target = _state(state, self.name)
        undo = _undo_items([(target.loaded, f.path) for f in self.files])
        target.loaded.update((f.path, f) for f in self.files)
        return undo


@dataclass(frozen=True)
class SinkBatch(Action):
    """A Structured Streaming micro-batch ``batch`` of the sink ``sink`` was taken into the stream (published
    with its rows, in one entry): a replay of that batch id is skipped."""

    op = "sink_batch"
    name: str
    sink: str
    batch: int

    def apply(self, state: CatalogState, version: int) -> Undo:
        target = _state(state, self.name)
        undo = _undo_items([(target.sink_batches, self.sink)])
        target.sink_batches[self.sink] = self.batch
        return undo


@dataclass(frozen=True)
class TooLate(Action):
    """``rows`` rows of a batch were later than ALLOWED LATENESS: they went to the stream's divert table
    (``diverted``), or the batch was refused."""

    op = "too_late"
    name: str
    rows: int
    diverted: bool

    def apply(self, state: CatalogState, version: int) -> Undo:
        target = _state(state, self.name)
        counter = "diverted_rows" if self.diverted else "refused_rows"
        undo = _undo_fields(target, counter)
        setattr(target, counter, getattr(target, counter) + self.rows)
        return undo


KINDS: dict[str, type[Action]] = {kind.op: kind for kind in
                                  (Create, Drop, Part, Advance, Verified, KeyFacts, Options, DropParts, Moved, Setting,
                                   Vacuumed, TableData, Loaded, SinkBatch, TooLate)}


def read_action(data: dict[str, Any]) -> Action:
    """The action a log entry's JSON describes."""
    kind = KINDS.get(data.get("op", ""))
    if kind is None:
        raise InvalidAction(f"unknown catalog action {data.get('op')!r}")
    try:
        return kind.read(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidAction(f"malformed {kind.op} action {data}: {exc!r}") from None


def _state(state: CatalogState, name: str) -> ObjectState:
    found = state.states.get(name)
    if found is None:
        raise InvalidAction(f"no object named {name!r} in the catalog")
    return found


def _nothing() -> None:
    """Undo for an action that changed nothing."""


def _undo_items(items: list[tuple[Any, Any]], before: dict | None = None) -> Undo:
    """Undo for changes to these (dict, key) items: each gets back its value, or goes if it had none.
    ``before`` gives values the caller saw before changing them itself."""
    saved = [(mapping, key, (before or {}).get(key, mapping.get(key, _MISSING))) for mapping, key in items]

    def undo() -> None:
        for mapping, key, value in reversed(saved):
            if value is _MISSING:
                mapping.pop(key, None)
            else:
                mapping[key] = value
    return undo


def _reference(state: CatalogState, added: Iterable[str], removed: Iterable[str], since: float | None,
               inside: str | None = None) -> Undo:
    """Count one more reference to the folder of each slice in ``added`` and one fewer to each in
    ``removed``; a folder no slice references any more is garbage from ``since`` (none without it, as in
    older logs), unless it lies ``inside`` a folder that becomes garbage itself."""
    plus, minus = [folder_of(t) for t in added], [folder_of(t) for t in removed]
    touched = list(dict.fromkeys(plus + minus))
    undo = _undo_items([(state.references, f) for f in touched] + [(state.garbage, f) for f in touched])
    for folder in plus:
        state.references[folder] = state.references.get(folder, 0) + 1
    for folder in minus:
        left = state.references.get(folder, 0) - 1
        if left > 0:
            state.references[folder] = left
            continue
        state.references.pop(folder, None)
        if since is not None and not (inside and folder.startswith(inside + "/")):
            state.garbage[folder] = since
    return undo


def _undo_fields(target: ObjectState, *names: str) -> Undo:
    """Undo for fields an action assigns anew (a value, or a list or dict it replaces)."""
    saved = {name: getattr(target, name) for name in names}
    return lambda: vars(target).update(saved)


def _undo_append(items: list) -> Undo:
    """Undo for appending to ``items``."""
    length = len(items)
    return lambda: items.__delitem__(slice(length, None))


def _undo_all(*undos: Undo) -> Undo:
    def undo() -> None:
        for step in reversed(undos):
            step()
    return undo


def _without_none(data: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if not (k == key and v is None)}
