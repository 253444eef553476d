"""How a read of many parts groups their slices (``catalog.model.Slice``: where a part's rows are) into scans.

Reading several parts reads all slices of one embedded column with one Parquet scan whenever that is
safe: a folder joins the shared scan unless it holds rows of a wanted part that it is no longer read for
(its part was recomputed into another folder after late data); such a folder gets a scan of its own.
"""

from __future__ import annotations

import bisect
import dataclasses
from dataclasses import dataclass
from typing import cast

from ..catalog.model import Slice

PART_COLUMN = "__part"


@dataclass(frozen=True)
class Wanted:
    """A slice read as part ``target`` (its own part, or a later part carrying its rows over)."""

    slice: Slice
    target: int


@dataclass(frozen=True)
class Scan:
    """One Parquet scan: ``folders``, keeping rows whose ``__part`` is a key of ``targets`` (each stamped
    as every part listed for it); ``targets`` is None for whole folders of the older layout. ``whole``:
    every part each folder was written for is wanted, so no row needs to be filtered out by part.
    ``loaded``: the folders hold loaded files, whose ``__part`` is computed from each row's timestamp."""

    folders: tuple[str, ...]
    column: str | None
    targets: dict[int, tuple[int, ...]] | None
    whole: bool = False
    loaded: bool = False

    @property
    def restamped(self) -> bool:
        """Some rows are read as another part than the one they were written for."""
        return self.targets is not None and any(targets != (part,) for part, targets in self.targets.items())


def plan_scans(wanted: list[Wanted]) -> list[Scan]:
    """The scans that read ``wanted``: one per embedded column for the older layout's whole folders, and
    one per column (and for loaded files) for slices, except that a folder holding rows of another wanted
    part it is not read for gets its own scan."""
    scans: list[Scan] = []
    columns: dict[tuple[str | None, bool], list[Wanted]] = {}
    for item in wanted:
        columns.setdefault((item.slice.column, item.slice.loaded), []).append(item)
    for (column, loaded), items in columns.items():
        whole = tuple(dict.fromkeys(i.slice.folder for i in items if i.slice.part is None))
        if whole:
            scans.append(Scan(whole, column, None))
        sliced = [i for i in items if i.slice.part is not None]
        by_folder: dict[str, list[Wanted]] = {}
        for item in sliced:
            by_folder.setdefault(item.slice.folder, []).append(item)
        parts = sorted({cast(int, i.slice.part) for i in sliced})
        shared: list[Wanted] = []
        alone: list[list[Wanted]] = []
        for held in by_folder.values():
            if _holds_another(held, parts):
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
            scans.append(Scan(tuple(dict.fromkeys(i.slice.folder for i in group)), column, targets, every_part, loaded))
    return scans


def _holds_another(held: list[Wanted], parts: list[int]) -> bool:
    """Whether the folder of ``held`` (slices of one write, so of one range of parts) may hold rows of a wanted
    part (``parts``, ascending) that it is not read for: counted by bisection, so that planning a read of a
    year of hourly folders does not compare every folder with every part."""
    piece = held[0].slice
    wanted_inside = bisect.bisect_right(parts, piece.last) - bisect.bisect_left(parts, piece.first)
    mine_inside = len({i.slice.part for i in held if piece.holds(cast(int, i.slice.part))})
    return wanted_inside > mine_inside
