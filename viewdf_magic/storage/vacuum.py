"""VACUUM: delete the data folders that no committed part references any more.

Two kinds of folders become garbage. A view part recomputed after late data leaves its old
folder behind: the catalog records when (``Catalog.garbage``), because a reader in another
process may have resolved the old part just before. A crash before publication leaves a
folder that was never referenced; so does a DROP or a retention drop interrupted after its
commit. A folder is deleted once it has been garbage (or, never referenced, untouched) for
longer than the RETAIN period, so reads that resolved an older catalog version and writes
still in flight are left alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..catalog.catalog import Catalog
from ..catalog.filesystem import FileSystem

DATA = "data"


@dataclass(frozen=True)
class VacuumReport:
    """What one VACUUM deleted, and how much garbage it kept for a later one."""

    deleted: tuple[str, ...]
    kept: int                    # unreferenced folders younger than the RETAIN period


def _top_folder(folder: str) -> str:
    """``data/<object id>/<write>``: the unit a write creates (a stream batch holds one sub-folder per part)."""
    return "/".join(folder.split("/")[:3])


def referenced_folders(catalog: Catalog) -> set[str]:
    """Every write folder that a committed part or table row references."""
    folders = set()
    for state in catalog.states.values():
        folders.update(_top_folder(f) for meta in state.parts.values() for f in meta.folders)
        folders.update(_top_folder(f) for f in state.table_folders)
    return folders


def vacuum(catalog: Catalog, fs: FileSystem, retain_seconds: float) -> VacuumReport:
    """Delete unreferenced folders older than ``retain_seconds`` and commit that the recorded
    garbage is gone. Call it holding the writer lock, on the newest catalog."""
    now = time.time()
    referenced = referenced_folders(catalog)
    ids = {definition.id for definition in catalog.objects.values()}
    deleted, kept, listed = [], 0, set()
    for object_id in fs.list(DATA):
        owner = f"{DATA}/{object_id}"
        candidates = [f"{owner}/{name}" for name in fs.list(owner)] if object_id in ids else [owner]
        for folder in candidates:
            listed.add(folder)
            if folder in referenced:
                continue
            since = catalog.garbage.get(folder)
            age = now - since if since is not None else fs.age(folder)
            if age > retain_seconds:
                fs.delete(folder)
                deleted.append(folder)
            else:
                kept += 1
    gone = [f for f in catalog.garbage if f in deleted or f not in listed]
    catalog.commit([{"op": "vacuumed", "folders": gone}] if gone else [])
    return VacuumReport(tuple(deleted), kept)
