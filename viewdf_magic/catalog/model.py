"""What the catalog records: object definitions and per-part metadata."""

from __future__ import annotations

import json
from operator import itemgetter
import re
from dataclasses import MISSING, asdict, dataclass, field, fields

from pyspark.sql.types import StructType

from ..language.statements import ClauseKind

PART_TIMESTAMP = "PART_TIMESTAMP"
CATALOG_VIEW = "viewdf_parts"      # the queryable part-metadata view


@dataclass(frozen=True)
class LineageRange:
    """Parts ``first .. last`` of object ``name`` were read."""

    name: str
    first: int
    last: int

    @property
    def text(self) -> str:
        """``M[5]`` or ``M[3 .. 7]``."""
        return f"{self.name}[{self.first}]" if self.first == self.last else f"{self.name}[{self.first} .. {self.last}]"


_SLICE = re.compile(r"(?P<folder>[^#@!\[\]]+)(?:#(?P<part>-?\d+)\[(?P<first>-?\d+),(?P<last>-?\d+)\])?"
                    r"(?P<loaded>!)?(?:@(?P<column>\w+))?")


@dataclass(frozen=True)
class Slice:
    """Rows of one part in one folder, as a part's ``PartMeta.folders`` lists them (as text).

    A folder (``data/<object id>/<write>``) is what one Spark write created; it may hold the rows of a run
    of parts, each row with its part number in the physical column ``__part``, sorted by it:

    * ``<folder>#<s>[<a>,<b>]`` — the rows of part ``s`` in a folder written for parts ``a .. b``. Read for
      another part ``t`` (a part that carries part ``s``'s rows over unchanged), the rows are stamped ``t``.
    * ``...@<column>`` — embedded rows: the struct column ``<column>`` of the folder's rows, where it is not
      NULL (a view whose part is a projection of its source's part, written in the source's Spark job).
    * ``...!`` — a loaded file taken as it was (``LOAD`` of a Parquet file whose columns are the stream's,
      copied into the folder, not re-encoded): it has neither ``__part`` nor ``PART_TIMESTAMP``, so both are
      computed from each row's timestamp when it is read.
    * ``<folder>`` alone — written before slices existed: the whole folder (or a ``__part=<s>`` sub-folder
      of an older range step or stream batch) is the part's, and has no ``__part`` column.
    """

    folder: str
    part: int | None = None        # None: a whole folder of the older layout
    first: int = 0                 # the parts the folder's write held
    last: int = 0
    column: str | None = None      # embedded rows: a struct column of the folder
    loaded: bool = False           # a loaded file: the part and PART_TIMESTAMP come from the row's timestamp

    @property
    def text(self) -> str:
        text = self.folder
        if self.part is not None:
            text += f"#{self.part}[{self.first},{self.last}]"
        return text + ("!" if self.loaded else "") + (f"@{self.column}" if self.column else "")

    @staticmethod
    def parse(text: str) -> "Slice":
        match = _SLICE.fullmatch(text)
        if match is None:
            raise ValueError(f"not a part slice: {text!r}")
        part = match["part"]
        if part is None:
            return Slice(match["folder"], column=match["column"])
        return Slice(match["folder"], int(part), int(match["first"]), int(match["last"]), match["column"],
                     match["loaded"] is not None)

    def holds(self, part: int) -> bool:
        """Whether the folder's write may have rows of ``part``."""
        return self.part is not None and self.first <= part <= self.last


def folder_of(text: str) -> str:
    """The folder a slice's text names (the unit that is referenced, and deleted when no part references it)."""
    match = _SLICE.fullmatch(text)
    if match is None:
        raise ValueError(f"not a part slice: {text!r}")
    return match["folder"]


@dataclass(frozen=True)
class PartMeta:
    """One stored part: where its files are and how it came to be."""

    subscript: int
    rows: int
    folders: tuple[str, ...]            # relative to the warehouse root; empty for an empty part
    seconds: float                      # compute (or ingest) time
    lineage: tuple[LineageRange, ...]   # exactly the parts it was computed from
    updated: float                      # when its content last changed, epoch seconds
    how: ClauseKind                     # ingest, late (sealed or new, then late rows), or the view's clause
    checksum: str = ""                  # view parts: an order-independent hash of the rows
    arrivals: tuple[float, ...] = ()    # stream parts: when each folder's rows arrived
    arrival_rows: tuple[int, ...] = ()  # stream parts: the rows of each arrival (empty in older catalogs)
    arrival_behind: tuple[int | None, ...] = ()   # stream parts: per arrival, the parts it was behind the
                                        # stream's newest part (0: into the newest itself), None: on time
    repairs: int = 0                    # view parts: recomputations after late data
    repairs_changed: int = 0            # view parts: of those, the ones whose content changed
    repair_seconds: float = 0.0         # view parts: the seconds those recomputations took
    changed: int = 0                    # catalog version of the last content change (set by the catalog)
    verified: int = 0                   # catalog version it was last computed or checked at (set by the catalog)
    unique: tuple[tuple[str, ...], ...] = ()     # stream parts: column sets (lower case) no two rows share
    repeated: tuple[tuple[str, ...], ...] = ()   # stream parts: column sets (lower case) two rows share

    @property
    def late_rows(self) -> bool:
        """A stream part that received rows after it was first written or sealed."""
        return len(self.arrivals) > 1 or self.how is ClauseKind.LATE

    def arrival_counts(self) -> tuple[tuple[int, ...], tuple[int | None, ...]]:
        """A stream part's rows and lateness per arrival (``arrival_rows``, ``arrival_behind``); a part of an
        older catalog, which kept only the arrival times, counts all its rows as its first arrival's, on time."""
        if len(self.arrival_rows) == len(self.arrivals):
            return self.arrival_rows, self.arrival_behind
        count = len(self.arrivals)
        return tuple(self.rows if k == 0 else 0 for k in range(count)), (None,) * count

    def to_json(self) -> dict:
        """Its fields for the catalog log, those at their defaults left out (``from_json`` restores them): a
        backfill commits thousands of parts in one entry, whose size and encoding time this keeps down."""
        values = self.__dict__
        data = dict(zip(_PART_REQUIRED, _required_values(values)))
        optional = _optional_values(values)
        if optional != _PART_DEFAULTS:
            data.update((name, value) for name, value, default in zip(_PART_OPTIONAL, optional, _PART_DEFAULTS)
                        if value != default)
        data["lineage"] = [[r.name, r.first, r.last] for r in self.lineage]
        data["how"] = self.how.value
        return data

    @staticmethod
    def from_json(data: dict) -> "PartMeta":
        data = dict(data)
        data["folders"] = tuple(data["folders"])
        data["lineage"] = tuple(LineageRange(*r) for r in data["lineage"])
        for name in ("arrivals", "arrival_rows", "arrival_behind"):
            if name in data:
                data[name] = tuple(data[name])
        for name in ("unique", "repeated"):
            if name in data:
                data[name] = tuple(tuple(columns) for columns in data[name])
        data["how"] = ClauseKind(data["how"])
        return PartMeta(**data)

    def at_version(self, changed: int, verified: int) -> "PartMeta":
        """The same part as committed at catalog versions ``changed`` and ``verified`` (a shallow copy, as
        ``dataclasses.replace`` makes, without its checks: a commit applies thousands of parts)."""
        copy = object.__new__(PartMeta)
        copy.__dict__.update(self.__dict__, changed=changed, verified=verified)
        return copy


_PART_REQUIRED = tuple(f.name for f in fields(PartMeta) if f.default is MISSING)
_PART_OPTIONAL = tuple(f.name for f in fields(PartMeta) if f.default is not MISSING)
_PART_DEFAULTS = tuple(f.default for f in fields(PartMeta) if f.default is not MISSING)
_required_values, _optional_values = itemgetter(*_PART_REQUIRED), itemgetter(*_PART_OPTIONAL)


@dataclass(frozen=True)
class ObjectDef:
    """A stream, view or dimension table."""

    kind: str                           # stream, view or table
    name: str
    id: str                             # names the data folder; never derived from the name
    schema_json: str                    # the logical schema (without PART_TIMESTAMP)
    definition: str                     # the statement that created it
    created: float
    partition_length: int | None = None
    timestamp_column: str | None = None
    sources: tuple[str, ...] = ()       # views: the objects their queries read
    start: int | None = None            # views created START AT LATEST: the first part
    origin: str | None = None           # translated views: the query the user wrote
    owner: str | None = None            # helper views: the translated view they serve
    notes: str = ""                     # translated views: how and why they were translated
    unique: tuple[str, ...] = ()        # streams: UNIQUE (..) PER PART columns, checked at ingest

    @property
    def key(self) -> str:
        return self.name.lower()

    @property
    def unique_clause(self) -> str:
        """``UNIQUE (a, b) PER PART`` as declared ("" when the stream declares none)."""
        return f"UNIQUE ({', '.join(self.unique)}) PER PART" if self.unique else ""

    def repeats_in(self, meta: PartMeta | None, columns: tuple[str, ...]) -> bool | None:
        """Whether two rows of the stream part ``meta`` share ``columns``: False when the part has at most one
        row, the stream is declared UNIQUE on some of them, or a step's job found no repeat on some of them;
        True when a step's job found two rows sharing them (or more of them); None when nobody checked."""
        wanted = {c.lower() for c in columns}
        if meta is None or meta.rows <= 1 or (self.unique and {c.lower() for c in self.unique} <= wanted):
            return False
        if any(set(known) <= wanted for known in meta.unique):
            return False
        if any(wanted <= set(known) for known in meta.repeated):
            return True
        return None

    @property
    def schema(self) -> StructType:
        return StructType.fromJson(json.loads(self.schema_json))

    @property
    def partitioned(self) -> bool:
        return self.kind != "table"

    @property
    def length(self) -> int:
        """The partition length in seconds of a stream or view (only tables have none)."""
        assert self.partition_length is not None, f"{self.kind} {self.name} has no partition length"
        return self.partition_length

    def to_json(self) -> dict:
        data = asdict(self)
        data["sources"] = list(self.sources)
        data["unique"] = list(self.unique)
        return data

    @staticmethod
    def from_json(data: dict) -> "ObjectDef":
        data = dict(data)
        data["sources"] = tuple(data.get("sources", ()))
        data["unique"] = tuple(data.get("unique", ()))
        return ObjectDef(**data)


@dataclass(frozen=True)
class LoadedFile:
    """A file that LOAD took into an object: where it was, its size, modification time and content hash
    when it was read, and when it was loaded (what makes a repeated LOAD of it a no-op)."""

    path: str
    size: int
    modified: float
    sha256: str
    loaded: float = 0.0

    def to_json(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_json(data: dict) -> "LoadedFile":
        return LoadedFile(**data)


@dataclass
class ObjectState:
    """The parts an object has, in subscript order. Streams are contiguous from ``first`` to ``newest``:
    subscripts in between that have no entry in ``parts`` were sealed empty."""

    parts: dict[int, PartMeta] = field(default_factory=dict)
    first: int | None = None
    newest: int | None = None
    sealed: list[tuple[int, int, float]] = field(default_factory=list)   # (from, to, when)
    table_folders: list[str] = field(default_factory=list)               # dimension tables
    table_rows: int = 0
    table_updated: float = 0.0
    lateness: int | None = None         # streams: ALLOWED LATENESS, in parts (None: unbounded)
    retain: int | None = None           # RETAIN, in parts (None: keep every part)
    dropped_before: int | None = None   # parts before this subscript were dropped by retention
    loaded: dict[str, LoadedFile] = field(default_factory=dict)        # files LOAD took, by path
    sink_batches: dict[str, int] = field(default_factory=dict)        # streams: per sink, its newest batch id
    late_into: str | None = None        # streams: the table rows later than ALLOWED LATENESS go to (None: refused)
    diverted_rows: int = 0              # streams: rows that went there
    refused_rows: int = 0               # streams: rows ALLOWED LATENESS refused (their batches wrote nothing)

    def oldest_part(self) -> int | None:
        """The oldest subscript with an entry in ``parts``."""
        return next(iter(self.parts), None)

    def newest_part(self) -> int | None:
        """The newest subscript with an entry in ``parts``."""
        return next(reversed(self.parts), None)

    def to_json(self) -> dict:
        return {"parts": [p.to_json() for p in self.parts.values()], "first": self.first,
                "newest": self.newest, "sealed": [list(s) for s in self.sealed],
                "table_folders": self.table_folders, "table_rows": self.table_rows,
                "table_updated": self.table_updated, "lateness": self.lateness, "retain": self.retain,
                "dropped_before": self.dropped_before, "loaded": [f.to_json() for f in self.loaded.values()],
                "sink_batches": self.sink_batches, "late_into": self.late_into, "diverted_rows": self.diverted_rows,
                "refused_rows": self.refused_rows}

    @staticmethod
    def from_json(data: dict) -> "ObjectState":
        parts = {p["subscript"]: PartMeta.from_json(p) for p in sorted(data["parts"], key=lambda p: p["subscript"])}
        return ObjectState(parts, data["first"], data["newest"], [tuple(s) for s in data["sealed"]],
                           list(data["table_folders"]), data["table_rows"], data["table_updated"],
                           data.get("lateness"), data.get("retain"), data.get("dropped_before"),
                           {f["path"]: LoadedFile.from_json(f) for f in data.get("loaded", [])},
                           dict(data.get("sink_batches", {})), data.get("late_into"), data.get("diverted_rows", 0),
                           data.get("refused_rows", 0))


CATALOG_DEFINITION = ObjectDef("table", CATALOG_VIEW, "catalog", StructType([]).json(), "", 0.0)
