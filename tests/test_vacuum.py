"""VACUUM: replaced view parts and crash leftovers are deleted once older than RETAIN; nothing referenced is."""

from __future__ import annotations

import os

import pytest

from viewdf_magic.network_example import NETWORK_DDL
from viewdf_magic.errors import ViewDFError
from viewdf_magic.catalog.model import folder_of
from oracles import data_folders, local_root
from test_late_data import FIRST, assert_equals_rebuild, batch, view2


def _folders(warehouse) -> dict[tuple[str, int], tuple[str, ...]]:
    """Each view part's data folders (a part is a slice of a folder: storage/slices.py)."""
    return {(d.name, s): tuple(folder_of(f) for f in meta.folders) for d in warehouse.catalog.views()
            for s, meta in warehouse.catalog.state(d.name).parts.items()}


def test_vacuum_deletes_replaced_parts_and_crash_leftovers_once_older_than_retain(warehouse, make_warehouse):
    warehouse.execute(NETWORK_DDL)
    warehouse.ingest("M", batch([0, 1, 2, 4, 5, 6], [12, 15, 24, 20, 16, 7]))
    before = _folders(warehouse)
    warehouse.ingest("M", batch([3], [30]))         # late: Helper[3..5] and View2[3..5] change
    after = _folders(warehouse)
    changed = {key for key, folders in before.items() if after[key] != folders and folders}
    assert changed == {("Helper", FIRST + 4), ("Helper", FIRST + 5)}   # Helper[3] and View2 were empty
    replaced = {f for key in changed for f in before[key]}
    assert set(warehouse.catalog.garbage) == replaced
    root = local_root(warehouse)
    leftover = f"data/{warehouse.catalog.get('Helper').id}/0f0f0f0f-crashed-write"
    dropped = "data/0123456789ab"        # an object id the catalog does not know (a DROP cut short)
    for folder in (leftover, f"{dropped}/batch"):
        os.makedirs(os.path.join(root, folder))
        open(os.path.join(root, folder, "part-0.parquet"), "wb").close()
    on_disk = data_folders(warehouse)

    [kept] = warehouse.run("VACUUM")                    # RETAIN 1 HOUR: all of it is younger
    assert kept.message == "Deleted 0 unreferenced data folders; kept 4 more, unreferenced for less than " \
                           "RETAIN 1 HOUR."
    assert data_folders(warehouse) == on_disk

    [done] = warehouse.run("VACUUM RETAIN 0 SECONDS")
    assert done.message == "Deleted 4 unreferenced data folders."
    gone = replaced | {leftover, dropped}
    assert on_disk - data_folders(warehouse) == {f for f in on_disk if any(f == g or f.startswith(g + "/")
                                                                           for g in gone)}
    assert warehouse.catalog.garbage == {}
    assert view2(warehouse) == [("10:03", 4, 81), ("10:04", 5, 101), ("10:05", 6, 117)]
    assert_equals_rebuild(warehouse, make_warehouse, [NETWORK_DDL], "rebuilt")
    reopened = make_warehouse()
    assert reopened.catalog.garbage == {} and view2(reopened) == view2(warehouse)
    assert reopened.run("VACUUM RETAIN 0 SECONDS")[0].message == "Deleted 0 unreferenced data folders."


def test_maintenance_deletes_recorded_garbage_once_the_grace_period_is_over(warehouse, monkeypatch):
    import viewdf_magic.engine.engine as engine_module

    warehouse.execute(NETWORK_DDL)
    warehouse.ingest("M", batch([0, 1, 2, 4, 5, 6], [12, 15, 24, 20, 16, 7]))
    warehouse.ingest("M", batch([3], [30]))          # late: replaces Helper[4] and Helper[5]
    garbage = set(warehouse.catalog.garbage)
    assert len(garbage) == 2
    warehouse.ingest("M", batch([7], [9]))           # within the grace period: kept
    assert set(warehouse.catalog.garbage) == garbage and garbage <= data_folders(warehouse)
    monkeypatch.setattr(engine_module, "VACUUM_RETAIN_SECONDS", 0)
    warehouse.ingest("M", batch([8], [9]))           # past it: the maintenance pass deletes them
    assert warehouse.catalog.garbage == {} and not garbage & data_folders(warehouse)
    assert view2(warehouse) == [("10:03", 4, 81), ("10:04", 5, 101), ("10:05", 6, 117)]


def test_retention_of_a_stream_leaves_no_empty_batch_folders(warehouse, monkeypatch):
    import viewdf_magic.engine.engine as engine_module

    monkeypatch.setattr(engine_module, "VACUUM_RETAIN_SECONDS", 0)
    warehouse.execute("CREATE STREAM S (ts TIMESTAMP, src STRING, dest STRING, loss INT) PARTITION LENGTH 60 "
                      "RETAIN 2 PARTS")
    for minute in range(5):                             # one batch folder per part
        warehouse.ingest("S", batch([minute], [1]))
    stream = warehouse.catalog.get("S")
    kept = {folder_of(f).split("/")[2] for meta in warehouse.catalog.state("S").parts.values() for f in meta.folders}
    assert sorted(warehouse.catalog.state("S").parts) == [FIRST + 3, FIRST + 4] and len(kept) == 2
    assert set(os.listdir(os.path.join(local_root(warehouse), "data", stream.id))) == kept
    assert warehouse.catalog.garbage == {}


def test_garbage_is_kept_in_checkpoints_and_recorded_on_replay(warehouse, make_warehouse):
    warehouse.execute(NETWORK_DDL)
    warehouse.ingest("M", batch([0, 1, 2, 4], [12, 15, 24, 20]))
    warehouse.ingest("M", batch([3], [30]))
    garbage = dict(warehouse.catalog.garbage)
    assert garbage
    assert make_warehouse().catalog.garbage == garbage        # replayed from the log
    warehouse.catalog._checkpoint()
    assert make_warehouse().catalog.garbage == garbage        # read from the checkpoint


@pytest.mark.parametrize("text, message, column", [
    ("VACUUM RETAIN 3 PARTS", "VACUUM RETAIN takes a duration (SECONDS, MINUTES, HOURS, DAYS), not parts", 17),
    ("VACUUM RETAIN", "expected VACUUM RETAIN (a whole number) at the end of the statement", 14),
    ("VACUUM RETAIN 2", "expected a time unit (SECONDS, MINUTES, HOURS, DAYS) after VACUUM RETAIN at the end of "
                        "the statement", 16),
    ("VACUUM now", "unexpected text after the statement, found 'now'", 8)])
def test_vacuum_errors(warehouse, text, message, column):
    with pytest.raises(ViewDFError) as caught:
        warehouse.execute(text)
    assert caught.value.message == message
    assert caught.value.column == column
