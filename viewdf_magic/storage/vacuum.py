"""Deleting the data folders that no committed part references any more.

The catalog records, with the time, every folder that stops being referenced: the old folder
of a view part recomputed after late data, the parts retention drops, a dropped object's
folder (``Catalog.garbage``). They are not deleted at once, because a reader in another
process may have resolved them just before. ``sweep`` deletes those older than a grace
period; every maintenance pass runs it. ``vacuum`` (the VACUUM statement) sweeps too, and
also finds folders nobody recorded: leftovers of a crash before publication.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..catalog.actions import Vacuumed
from ..catalog.catalog import Catalog
from ..catalog.filesystem import FileSystem
from .slices import PART_COLUMN

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
    folders = {_top_folder(folder) for folder in catalog.references}
    for state in catalog.states.values():
        folders.update(_top_folder(f) for f in state.table_folders)
    return folders


def sweep(catalog: Catalog, fs: FileSystem, retain_seconds: float) -> VacuumReport:
    """Delete the recorded garbage older than ``retain_seconds`` and commit that it is gone.
    Call it holding the writer lock, on the newest catalog."""
    now = time.time()
    due = [folder for folder, since in catalog.garbage.items() if now - since >= retain_seconds]
    for folder in due:
        fs.delete(folder)
    for batch in {f.rsplit("/", 1)[0] for f in due if f"/{PART_COLUMN}=" in f}:   # a stream batch's last part
        if not any(name.startswith(f"{PART_COLUMN}=") for name in fs.list(batch)):
            fs.delete(batch)
    catalog.commit([Vacuumed(tuple(due))] if due else [])
    return VacuumReport(tuple(due), len(catalog.garbage))


def vacuum(catalog: Catalog, fs: FileSystem, retain_seconds: float) -> VacuumReport:
    """Sweep, then delete the folders nobody recorded (crash leftovers) untouched for longer than
    ``retain_seconds``. A folder holding recorded garbage waits for that garbage's grace period."""
    swept = sweep(catalog, fs, retain_seconds)
    referenced = referenced_folders(catalog)
    ids = {definition.id for definition in catalog.objects.values()}
    deleted, kept = list(swept.deleted), swept.kept
    for object_id in fs.list(DATA):
        owner = f"{DATA}/{object_id}"
        candidates = [f"{owner}/{name}" for name in fs.list(owner)] if object_id in ids else [owner]
        for folder in candidates:
            if folder in referenced or any(g == folder or g.startswith(folder + "/") for g in catalog.garbage):
                continue
            if fs.age(folder) > retain_seconds:
                fs.delete(folder)
                deleted.append(folder)
            else:
                kept += 1
    return VacuumReport(tuple(deleted), kept)
