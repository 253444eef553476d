"""What the catalog records: object definitions and per-part metadata."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields

from pyspark.sql.types import StructType

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


@dataclass(frozen=True)
class PartMeta:
    """One stored part: where its files are and how it came to be."""

    subscript: int
    rows: int
    folders: tuple[str, ...]            # relative to the warehouse root; empty for an empty part
    seconds: float                      # compute (or ingest) time
    lineage: tuple[LineageRange, ...]   # exactly the parts it was computed from
    updated: float                      # when its content last changed, epoch seconds
    how: str                            # ingest, late (sealed or new, then late rows), initialize, update, recompute
    checksum: str = ""                  # view parts: an order-independent hash of the rows
    arrivals: tuple[float, ...] = ()    # stream parts: when each folder's rows arrived
    repairs: int = 0                    # view parts: recomputations after late data
    changed: int = 0                    # catalog version of the last content change (set by the catalog)
    verified: int = 0                   # catalog version it was last computed or checked at (set by the catalog)
    unique: tuple[tuple[str, ...], ...] = ()   # stream parts: column sets (lower case) no two rows share, checked

    @property
    def late_rows(self) -> bool:
        """A stream part that received rows after it was first written or sealed."""
        return len(self.arrivals) > 1 or self.how == "late"

    def to_json(self) -> dict:
        """Its fields for the catalog log (a shallow copy: ``asdict``'s deep copy cost seconds per
        backfill of thousands of parts)."""
        data = {name: getattr(self, name) for name in _PART_FIELDS}
        data["lineage"] = [[r.name, r.first, r.last] for r in self.lineage]
        return data

    @staticmethod
    def from_json(data: dict) -> "PartMeta":
        data = dict(data)
        data["folders"] = tuple(data["folders"])
        data["lineage"] = tuple(LineageRange(*r) for r in data["lineage"])
        data["arrivals"] = tuple(data.get("arrivals", ()))
        data["unique"] = tuple(tuple(columns) for columns in data.get("unique", ()))
        return PartMeta(**data)


_PART_FIELDS = tuple(f.name for f in fields(PartMeta))


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

    def unique_in(self, meta: PartMeta | None, columns: tuple[str, ...]) -> bool:
        """No two rows of the stream part ``meta`` share ``columns``: the part has no rows, the stream is
        declared UNIQUE on some of them, or ingest found no repeat on some of them."""
        wanted = {c.lower() for c in columns}
        if meta is None or meta.rows <= 1 or (self.unique and {c.lower() for c in self.unique} <= wanted):
            return True
        return any(set(known) <= wanted for known in meta.unique)

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
                "dropped_before": self.dropped_before, "loaded": [f.to_json() for f in self.loaded.values()]}

    @staticmethod
    def from_json(data: dict) -> "ObjectState":
        parts = {p["subscript"]: PartMeta.from_json(p) for p in sorted(data["parts"], key=lambda p: p["subscript"])}
        return ObjectState(parts, data["first"], data["newest"], [tuple(s) for s in data["sealed"]],
                           list(data["table_folders"]), data["table_rows"], data["table_updated"],
                           data.get("lateness"), data.get("retain"), data.get("dropped_before"),
                           {f["path"]: LoadedFile.from_json(f) for f in data.get("loaded", [])})


CATALOG_DEFINITION = ObjectDef("table", CATALOG_VIEW, "catalog", StructType([]).json(), "", 0.0)
