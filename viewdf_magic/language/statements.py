"""The statements of the ViewDF language, as parsed from the user's text."""

from __future__ import annotations

from enum import Enum
from dataclasses import dataclass, field
from typing import ClassVar

from .source import Fragment


@dataclass(frozen=True)
class Name:
    """An object name as written, with where it was written."""

    text: str
    start: int
    end: int

    @property
    def key(self) -> str:
        return self.text.lower()


@dataclass(frozen=True)
class Statement:
    fragment: Fragment
    read_only: ClassVar[bool] = False     # runs under the engine's reading lock (it changes nothing)


@dataclass(frozen=True)
class Creation:
    """How a CREATE treats an object that already exists.

    ``IF NOT EXISTS``: nothing happens when the same definition exists. ``OR REPLACE`` (views): the
    view is redefined and recomputed when its definition changed; ``CASCADE`` also recomputes the
    views reading it. ``signature`` is the statement's tokens without these words, so two
    definitions are the same when they differ only in spacing, comments and keyword case.
    """

    if_not_exists: bool = False
    or_replace: bool = False
    cascade: bool = False
    signature: tuple[str, ...] = ()


@dataclass(frozen=True)
class Extent:
    """A number of parts (``3 PARTS``) or a duration in seconds (``2 HOURS``), as written."""

    value: int
    unit: str                    # parts or seconds
    start: int                   # where it is written

    def parts(self, partition_length: int) -> int:
        """In parts of the given length, rounding a duration up (never keep or allow less)."""
        return self.value if self.unit == "parts" else -(-self.value // partition_length)


@dataclass(frozen=True)
class CreateStream(Statement):
    name: Name
    columns: Fragment            # the column list, e.g. "ts TIMESTAMP, src STRING"
    timestamp: Name | None       # the TIMESTAMP column; None means "the only TIMESTAMP column"
    partition_length: int
    lateness: Extent | None = None   # ALLOWED LATENESS: older rows are refused (None: any late row is repaired)
    retain: Extent | None = None     # RETAIN: older parts are dropped (None: kept)
    unique: tuple[Name, ...] = ()    # UNIQUE (..) PER PART: no two rows of a part share these values
    creation: Creation = Creation()
    late_into: Name | None = None    # ON LATE DIVERT INTO t: rows later than allowed go to table t (None: refused)


@dataclass(frozen=True)
class Alter(Statement):
    """``ALTER STREAM|VIEW x SET ALLOWED LATENESS e [ON LATE ..] | SET RETAIN e | RESET ALLOWED LATENESS |
    RESET RETAIN``."""

    kind: str                    # STREAM or VIEW
    name: Name
    option: str                  # lateness or retain
    extent: Extent | None        # None: RESET (no bound)
    late_into: Name | None = None    # ALLOWED LATENESS e ON LATE DIVERT INTO t


@dataclass(frozen=True)
class CreateTable(Statement):
    """An unpartitioned dimension table, from a column list or a query."""

    name: Name
    columns: Fragment | None
    query: Fragment | None
    creation: Creation = Creation()


@dataclass(frozen=True)
class UniqueGuard:
    """``WHEN X[j] IS UNIQUE (a, b)`` on an UPDATE clause: it computes the parts where no two rows of
    the stream part X[j] share the columns."""

    part: Fragment               # the reference, X[j]
    columns: tuple[Name, ...]


class ClauseKind(str, Enum):
    """How a part came to be: the clause of a ViewDF that computed a view part, or, for a stream or table
    part, its ingest (``LATE``: rows arrived after the part was first written or sealed). The catalog
    records the value as a part's ``how`` (``PartMeta``); ``label`` is how messages and reports name it.
    ``RANGE`` is a ViewDF's RANGE clause: its parts are recorded as the UPDATE or RECOMPUTE they stand for."""

    INGEST = "ingest"
    LATE = "late"
    INITIALIZE = "initialize"
    UPDATE = "update"
    UPDATE_WHEN_UNIQUE = "update when unique"
    RECOMPUTE = "recompute"
    RANGE = "range"

    def __str__(self) -> str:            # as the catalog and SHOW PARTS spell it
        return self.value

    @property
    def label(self) -> str:
        """The kind in messages and reports: ``UPDATE WHEN UNIQUE``."""
        return self.value.upper()

    def same_clause(self, other: ClauseKind) -> bool:
        """Whether parts of both kinds come from the same clause, counting both UPDATEs as one (same rows)."""
        return self is other or {self, other} == {ClauseKind.UPDATE, ClauseKind.UPDATE_WHEN_UNIQUE}


@dataclass(frozen=True)
class DeltaQuery:
    """One clause of a View Delta Function: ``INITIALIZE V[i] AS <query>``."""

    clause: ClauseKind           # INITIALIZE, UPDATE (with or without a guard), RECOMPUTE or RANGE
    head: Name                   # the view name written in the head
    variable: str                # the part variable, e.g. "i" or "j"
    query: Fragment
    guard: UniqueGuard | None = None     # UPDATE V[j] WHEN X[j] IS UNIQUE (..) AS: the update for such parts


@dataclass(frozen=True)
class CreateViewDF(Statement):
    """A hand-written View Delta Function."""

    name: Name
    initialize: DeltaQuery
    update: DeltaQuery
    recompute: DeltaQuery | None
    partition_length: int | None
    partition_length_at: int | None
    start_at_latest: bool
    refresh_every: int | None = None      # REFRESH EVERY n PARTS: run RECOMPUTE instead of UPDATE
    creation: Creation = Creation()
    range: DeltaQuery | None = None       # RANGE V[j] AS ...: a run of parts in one query (maintainer/ranges.py)
    unchanged_when: Fragment | None = None   # UNCHANGED WHEN X[j] IS EMPTY [AND ...]: part j holds part j-1's rows
    empty_when: Fragment | None = None       # EMPTY WHEN X[j] IS EMPTY [AND ...]: part j has no rows
    unique_update: DeltaQuery | None = None  # UPDATE V[j] WHEN X[j] IS UNIQUE (..) AS ...: used where it holds

    def clause_for(self, kind: ClauseKind) -> DeltaQuery | None:
        """The clause that computes parts of ``kind`` (None: the view has no such clause; ingest has none)."""
        return {ClauseKind.INITIALIZE: self.initialize, ClauseKind.UPDATE: self.update,
                ClauseKind.UPDATE_WHEN_UNIQUE: self.unique_update, ClauseKind.RECOMPUTE: self.recompute,
                ClauseKind.RANGE: self.range}.get(kind)


@dataclass(frozen=True)
class CreateQueryView(Statement):
    """A view given as an ordinary query, to be translated into ViewDFs."""

    name: Name
    query: Fragment
    creation: Creation = Creation()


@dataclass(frozen=True)
class Insert(Statement):
    target: Name
    columns: tuple[Name, ...] | None
    query: Fragment


@dataclass(frozen=True)
class Ingest(Statement):
    """``Warehouse.ingest(stream, data)``: a batch of rows given as a pandas or Spark DataFrame (no text form)."""

    target: Name
    data: object


@dataclass(frozen=True)
class Assignment:
    """``column = value`` of an UPDATE's SET list."""

    column: Name
    value: Fragment


@dataclass(frozen=True)
class Delete(Statement):
    """``DELETE FROM M [WHERE condition]``: take rows out of a stream's stored parts."""

    target: Name
    condition: Fragment | None        # None: every row


@dataclass(frozen=True)
class Update(Statement):
    """``UPDATE M SET c = value, ... [WHERE condition]``: change rows of a stream's stored parts (a changed
    timestamp moves a row to its new part)."""

    target: Name
    assignments: tuple[Assignment, ...]
    condition: Fragment | None


@dataclass(frozen=True)
class Load(Statement):
    path: str
    path_at: int
    target: Name
    format: str | None
    options: dict[str, str] = field(default_factory=dict)
    force: bool = False           # load files taken before again
    move: bool = False            # remove the files from the path once their rows are committed


@dataclass(frozen=True)
class Query(Statement):
    query: Fragment
    read_only: ClassVar[bool] = True


@dataclass(frozen=True)
class ShowStreams(Statement):
    read_only: ClassVar[bool] = True


@dataclass(frozen=True)
class ShowViews(Statement):
    read_only: ClassVar[bool] = True


@dataclass(frozen=True)
class ShowTables(Statement):
    read_only: ClassVar[bool] = True


@dataclass(frozen=True)
class ShowPending(Statement):
    """``SHOW PENDING``: the next step each view would take, and the parts it would read."""

    read_only: ClassVar[bool] = True


@dataclass(frozen=True)
class ShowLateness(Statement):
    """``SHOW LATENESS [FOR M]``: rows on time and late per stream, and the view parts they made recompute."""

    name: Name | None = None
    read_only: ClassVar[bool] = True


@dataclass(frozen=True)
class ShowParts(Statement):
    """``SHOW PARTS [OF] x [CHANGED SINCE '<ts>']``."""

    name: Name
    changed_since: str | None = None
    changed_since_at: int = 0
    read_only: ClassVar[bool] = True


@dataclass(frozen=True)
class Describe(Statement):
    name: Name
    read_only: ClassVar[bool] = True


@dataclass(frozen=True)
class Drop(Statement):
    kind: str                    # STREAM, VIEW or TABLE
    name: Name
    cascade: bool
    if_exists: bool


@dataclass(frozen=True)
class Verify(Statement):
    """``VERIFY [VIEW] v [TOLERANCE x]``: every stored part against its RECOMPUTE result."""

    name: Name
    tolerance: float | None = None   # relative, for FLOAT/DOUBLE columns; 0: exact; None: the default
    read_only: ClassVar[bool] = True


@dataclass(frozen=True)
class Seal(Statement):
    """``SEAL M THROUGH '<ts>'``: close every part up to the one containing ts, empty if no data."""

    name: Name
    through: str
    through_at: int


@dataclass(frozen=True)
class SetMaintenance(Statement):
    """``SET MAINTENANCE MANUAL | AUTO``."""

    mode: str                    # manual or auto


@dataclass(frozen=True)
class Step(Statement):
    """``STEP [ALL | view] [n] [WITH PLAN]``: compute ready view parts by hand."""

    view: Name | None
    count: int | None            # None: every ready part (STEP ALL)
    plan: bool


@dataclass(frozen=True)
class Vacuum(Statement):
    """``VACUUM [RETAIN n <time unit>]``: delete data folders that no part references any more."""

    retain_seconds: int          # keep what stopped being referenced (or was written) more recently


@dataclass(frozen=True)
class ExplainView(Statement):
    """``EXPLAIN VIEW v``: the definition, the next step's resolved query and its Spark plans."""

    name: Name
    read_only: ClassVar[bool] = True


@dataclass(frozen=True)
class ExplainChange(Statement):
    """``EXPLAIN DELETE ..`` / ``EXPLAIN UPDATE ..``: the parts the change would read, and the rows and views
    it would change, without changing anything."""

    change: Delete | Update
    read_only: ClassVar[bool] = True
