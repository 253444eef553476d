"""Compaction: a view's small folders rewritten as one.

A view followed part by part writes one folder per part. A step that reads the view's history (``X[.. j]``,
Nexmark q3's sellers so far) then opens one folder per part, a cost that grows with the history
(docs/benchmarks.md, "Latency at a fixed rate, 10M events"). Once a view has ``COMPACT_FOLDERS`` small folders
of its own, the oldest of them, up to ``COMPACT_ROWS`` rows, are read and written again as one folder sorted by
part, counted and hashed from what was written. Only if every part's rows and checksum equal the catalog's is
the move committed (``Moved``): each part's lineage, checksum and versions stay, and the folders it left are
garbage from then on (VACUUM's grace period lets readers finish). A compacted folder below ``SMALL_FOLDER_ROWS``
rows is small too, so folders merge again as they accumulate.
"""

from __future__ import annotations

import time
from collections import Counter

from pyspark.sql import functions as F

from ..catalog.actions import InvalidAction, Moved
from ..catalog.catalog import Catalog
from ..catalog.model import PART_TIMESTAMP, ObjectDef, ObjectState, Slice, folder_of
from ..language.tokens import backquote
from .parts import PartStore
from .slices import PART_COLUMN
from .spark_errors import SPARK_ERRORS, summary

COMPACT_FOLDERS = 32          # small folders of one view that start a compaction
SMALL_FOLDER_ROWS = 100_000   # a folder holding fewer of the view's rows is small
COMPACT_ROWS = 1_000_000      # rows one compaction rewrites at most (its first folder always)


class CompactionFailed(RuntimeError):
    """What a compaction wrote differs from the parts it read: nothing was committed."""


def small_folders(definition: ObjectDef, state: ObjectState) -> dict[str, list[int]]:
    """The view's own folders holding fewer than SMALL_FOLDER_ROWS of its rows, each with the parts (ascending)
    whose every slice lies in such a folder: the parts a compaction of it moves. Folders of other objects (a part
    written by its stream's ingest lies in the stream's folder) are left where they are."""
    own = f"data/{definition.id}/"
    rows: dict[str, int] = {}
    parts: dict[str, list[int]] = {}
    for subscript, meta in state.parts.items():
        folders = [folder_of(text) for text in meta.folders]
        for folder in folders:
            rows[folder] = rows.get(folder, 0) + meta.rows
        if folders and all(folder.startswith(own) for folder in folders):
            for folder in dict.fromkeys(folders):
                parts.setdefault(folder, []).append(subscript)
    small = {folder for folder, count in rows.items() if count < SMALL_FOLDER_ROWS and folder.startswith(own)}
    movable = {folder: [s for s in subscripts if all(folder_of(t) in small for t in state.parts[s].folders)]
               for folder, subscripts in parts.items() if folder in small}
    return {folder: subscripts for folder, subscripts in movable.items() if subscripts}


def chosen(folders: dict[str, list[int]], state: ObjectState) -> tuple[list[str], list[int]]:
    """The oldest small folders one compaction takes (at most COMPACT_ROWS rows, at least two folders) and the
    parts it moves: those whose every folder is taken."""
    taken: list[str] = []
    rows = 0
    for folder, subscripts in sorted(folders.items(), key=lambda item: item[1][0]):
        folder_rows = sum(state.parts[s].rows for s in subscripts)
        if len(taken) >= 2 and rows + folder_rows > COMPACT_ROWS:
            break
        taken.append(folder)
        rows += folder_rows
    inside = set(taken)
    moved = sorted({s for folder in taken for s in folders[folder]
                    if all(folder_of(t) in inside for t in state.parts[s].folders)})
    return taken, moved


class Compaction:
    """Compacts each view whose small folders have piled up (see the module's text). A view whose compaction
    failed (``failed``: why, by view name) is not compacted again in this session: its parts stay where they are,
    as they were, and the failure is reported, not raised, for the statement that triggered it succeeded."""

    def __init__(self, catalog: Catalog, store: PartStore) -> None:
        self.catalog, self.store = catalog, store
        self.failed: dict[str, str] = {}
        self.latest_failures: list[str] = []     # why each compaction of the latest ``apply`` failed

    def apply(self) -> None:
        """Compact every view that has COMPACT_FOLDERS small folders (none inside a transaction, which would
        publish the move only with everything else). Runs after every maintenance pass, so a view is looked at
        only when it owns COMPACT_FOLDERS folders at all: counted once per pass from the catalog's referenced
        folders, not from each view's parts."""
        self.latest_failures = []
        if self.catalog.in_transaction:
            return
        owned = Counter(folder.split("/")[1] for folder in self.catalog.references if folder.startswith("data/"))
        for definition in list(self.catalog.objects.values()):
            if (definition.kind != "view" or definition.name in self.failed
                    or owned[definition.id] < COMPACT_FOLDERS):
                continue
            state = self.catalog.state(definition.name)
            folders = small_folders(definition, state)
            if len(folders) < COMPACT_FOLDERS:
                continue
            try:
                self.compact(definition, state, folders)
            except (CompactionFailed, InvalidAction, *SPARK_ERRORS) as failure:
                self.failed[definition.name] = f"compacting {definition.name}: {summary(failure)}"
                self.latest_failures.append(self.failed[definition.name])

    def compact(self, definition: ObjectDef, state: ObjectState, folders: dict[str, list[int]]) -> None:
        """Move the parts of the oldest of ``folders`` (``small_folders``) into one new folder (nothing when they
        hold no part to move)."""
        taken, moved = chosen(folders, state)
        if not moved:
            return
        read = self.store.read_parts(definition, state, moved)
        columns = [backquote(f.name) for f in definition.schema.fields]
        numbered = read.select(*[F.col(c) for c in columns],
                               F.expr(f"CAST(unix_seconds({PART_TIMESTAMP}) DIV {definition.length} AS BIGINT)")
                               .alias(PART_COLUMN))
        folder, written = self.store.write_range(definition, self.store.stamp_run(definition, numbered))
        try:
            for subscript in moved:
                meta, counted = state.parts[subscript], written.get(subscript, {}).get(None)
                if counted is None or (counted.rows, counted.checksum) != (meta.rows, meta.checksum):
                    raise CompactionFailed(f"part {subscript} read back as "
                                           f"{counted.rows if counted else 0} rows where the catalog has {meta.rows}, "
                                           f"or with other contents: its stored files changed")
            first, last = moved[0], moved[-1]
            self.catalog.commit([Moved(definition.key, tuple(
                (s, (Slice(folder, s, first, last).text,), state.parts[s].folders) for s in moved), time.time())])
        except (CompactionFailed, InvalidAction):
            if folder:          # "" when nothing was written
                self.store.fs.delete(folder)
            raise
