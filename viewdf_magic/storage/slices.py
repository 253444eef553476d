"""Where a part's rows are: slices of data folders, and how a read of many parts groups them into scans.

A part's ``PartMeta.folders`` lists slices as text. A folder (``data/<object id>/<write>``) is what one
Spark write created; it may hold the rows of a run of parts, each row with its part number in the
physical column ``__part``, sorted by it:

* ``<folder>#<s>[<a>,<b>]`` — the rows of part ``s`` in a folder written for parts ``a .. b``. Read for
  another part ``t`` (a part that carries part ``s``'s rows over unchanged), the rows are stamped ``t``.
* ``...@<column>`` — embedded rows: the struct column ``<column>`` of the folder's rows, where it is not
  NULL (a view whose part is a projection of its source's part, written in the source's Spark job).
* ``<folder>`` alone — written before slices existed: the whole folder (or a ``__part=<s>`` sub-folder
  of an older range step or stream batch) is the part's, and has no ``__part`` column.

Reading several parts reads all slices of one embedded column with one Parquet scan whenever that is
safe: a folder joins the shared scan unless it holds rows of a wanted part that it is no longer read for
(its part was recomputed into another folder after late data); such a folder gets a scan of its own.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import cast

PART_COLUMN = "__part"

_SLICE = re.compile(r"(?P<folder>[^#@\[\]]+)(?:#(?P<part>-?\d+)\[(?P<first>-?\d+),(?P<last>-?\d+)\])?"
                    r"(?:@(?P<column>\w+))?")


@dataclass(frozen=True)
class Slice:
    """Rows of one part in one folder (see the module's docstring)."""

    folder: str
    part: int | None = None        # None: a whole folder of the older layout
    first: int = 0                 # the parts the folder's write held
    last: int = 0
    column: str | None = None      # embedded rows: a struct column of the folder

    @property
    def text(self) -> str:
        text = self.folder
        if self.part is not None:
            text += f"#{self.part}[{self.first},{self.last}]"
        return text + (f"@{self.column}" if self.column else "")

    @staticmethod
    def parse(text: str) -> "Slice":
        match = _SLICE.fullmatch(text)
        if match is None:
            raise ValueError(f"not a part slice: {text!r}")
        part = match["part"]
        if part is None:
            return Slice(match["folder"], column=match["column"])
        return Slice(match["folder"], int(part), int(match["first"]), int(match["last"]), match["column"])

    def holds(self, part: int) -> bool:
        """Whether the folder's write may have rows of ``part``."""
        return self.part is not None and self.first <= part <= self.last


def folder_of(text: str) -> str:
    """The folder a slice's text names (the unit that is referenced, and deleted when no part references it)."""
    return Slice.parse(text).folder


@dataclass(frozen=True)
class Wanted:
    """A slice read as part ``target`` (its own part, or a later part carrying its rows over)."""

    slice: Slice
    target: int


@dataclass(frozen=True)
class Scan:
    """One Parquet scan: ``folders``, keeping rows whose ``__part`` is a key of ``targets`` (each stamped
    as every part listed for it); ``targets`` is None for whole folders of the older layout. ``whole``:
    every part each folder was written for is wanted, so no row needs to be filtered out by part."""

    folders: tuple[str, ...]
    column: str | None
    targets: dict[int, tuple[int, ...]] | None
    whole: bool = False

    @property
    def restamped(self) -> bool:
        """Some rows are read as another part than the one they were written for."""
        return self.targets is not None and any(targets != (part,) for part, targets in self.targets.items())


def plan_scans(wanted: list[Wanted]) -> list[Scan]:
    """The scans that read ``wanted``: one per embedded column for the older layout's whole folders, and
    one per column for slices, except that a folder holding rows of another wanted part it is not read
    for gets its own scan."""
    scans: list[Scan] = []
    columns: dict[str | None, list[Wanted]] = {}
    for item in wanted:
        columns.setdefault(item.slice.column, []).append(item)
    for column, items in columns.items():
        whole = tuple(dict.fromkeys(i.slice.folder for i in items if i.slice.part is None))
        if whole:
            scans.append(Scan(whole, column, None))
        sliced = [i for i in items if i.slice.part is not None]
        by_folder: dict[str, list[Wanted]] = {}
        for item in sliced:
            by_folder.setdefault(item.slice.folder, []).append(item)
        parts = {cast(int, i.slice.part) for i in sliced}
        shared: list[Wanted] = []
        alone: list[list[Wanted]] = []
        for held in by_folder.values():
            mine = {i.slice.part for i in held}
            if any(held[0].slice.holds(p) for p in parts - mine):
                alone.append(held)
            else:
                shared += held
        for group in ([shared] if shared else []) + alone:
            targets: dict[int, tuple[int, ...]] = {}
            held_parts: dict[Slice, set[int]] = {}
            for item in group:
                part = cast(int, item.slice.part)
                if item.target not in targets.get(part, ()):
                    targets[part] = targets.get(part, ()) + (item.target,)
                held_parts.setdefault(dataclasses.replace(item.slice, part=None), set()).add(part)
            every_part = all(len(held) == piece.last - piece.first + 1 for piece, held in held_parts.items())
            scans.append(Scan(tuple(dict.fromkeys(i.slice.folder for i in group)), column, targets, every_part))
    return scans
