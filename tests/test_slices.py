"""Part slices (storage/slices.py): the text a part's folders are recorded as, and how a read of many
parts groups them into Parquet scans without ever reading rows a part no longer has."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from viewdf_magic.catalog.model import Slice, folder_of
from viewdf_magic.storage.parts import FILTER_LIST_PARTS, part_filter
from viewdf_magic.storage.slices import PART_COLUMN, Scan, Wanted, plan_scans


def test_slice_text_round_trips():
    for piece in [Slice("data/a1/f0"), Slice("data/a1/f0/__part=7"), Slice("data/a1/f0", 5, 3, 9),
                  Slice("data/a1/f0", -5, -10, -1), Slice("data/a1/f0", 5, 5, 5, "__vdf_0123456789ab")]:
        assert Slice.parse(piece.text) == piece
    assert folder_of("data/a1/f0#5[3,9]@__vdf_x") == "data/a1/f0"
    assert Slice("data/a1/f0", 5, 3, 9).text == "data/a1/f0#5[3,9]"
    with pytest.raises(ValueError):
        Slice.parse("data/a1/f0#5")


def test_one_scan_for_the_older_layout_and_one_for_runs():
    old = [Wanted(Slice(f"data/a/{k}"), k) for k in range(3)]
    run = [Wanted(Slice("data/a/run", k, 3, 9), k) for k in range(3, 6)]
    assert plan_scans(old + run) == [
        Scan(("data/a/0", "data/a/1", "data/a/2"), None, None),
        Scan(("data/a/run",), None, {3: (3,), 4: (4,), 5: (5,)})]


def test_folders_of_single_parts_and_runs_share_a_scan():
    wanted = [Wanted(Slice("data/a/run", k, 0, 4), k) for k in range(5)] + \
             [Wanted(Slice(f"data/a/{k}", k, k, k), k) for k in (5, 6)]
    [scan] = plan_scans(wanted)
    assert scan.folders == ("data/a/run", "data/a/5", "data/a/6") and sorted(scan.targets) == list(range(7))
    assert not scan.restamped and scan.whole       # each folder is read for every part it holds: no filter
    [part] = plan_scans(wanted[:2] + wanted[3:])
    assert not part.whole                          # the run's part 2 is not wanted: rows are filtered by part


def test_a_folder_holding_a_recomputed_part_is_scanned_alone():
    # part 2 of the run was recomputed after late data into its own folder: the run's rows of part 2 are
    # stale, so a scan that keeps part 2 must not read the run folder
    wanted = [Wanted(Slice("data/a/run", k, 0, 4), k) for k in (0, 1, 3, 4)] + [Wanted(Slice("data/a/new", 2, 2, 2), 2)]
    scans = plan_scans(wanted)
    assert scans == [Scan(("data/a/new",), None, {2: (2,)}, True),
                     Scan(("data/a/run",), None, {0: (0,), 1: (1,), 3: (3,), 4: (4,)})]


def test_carried_parts_are_read_as_every_part_that_carries_them():
    # parts 7 and 8 hold part 6's rows (UNCHANGED WHEN): one scan, part 6's rows stamped 6, 7 and 8
    source = Slice("data/a/run", 6, 4, 6)
    [scan] = plan_scans([Wanted(source, 6), Wanted(source, 7), Wanted(source, 8)])
    assert scan.targets == {6: (6, 7, 8)} and scan.restamped


def test_embedded_rows_are_scanned_by_their_column():
    wanted = [Wanted(Slice("data/h/0", 0, 0, 0, "__vdf_v"), 0), Wanted(Slice("data/v/1", 1, 1, 1), 1)]
    assert plan_scans(wanted) == [Scan(("data/h/0",), "__vdf_v", {0: (0,)}, True),
                                  Scan(("data/v/1",), None, {1: (1,)}, True)]


@st.composite
def _reads(draw):
    """Wanted slices of several writes: each write a folder over parts first..last, some of its parts read,
    some parts recomputed into one-part folders of their own."""
    wanted = []
    for index in range(draw(st.integers(1, 6))):
        first = draw(st.integers(0, 30))
        last = first + draw(st.integers(0, 5))
        held = draw(st.sets(st.integers(first, last), min_size=1))
        wanted += [Wanted(Slice(f"data/a/w{index}", part, first, last), part) for part in sorted(held)]
    return wanted


@settings(max_examples=200, deadline=None)
@given(_reads())
def test_a_folder_is_scanned_alone_exactly_when_it_holds_another_wanted_part(wanted):
    parts = {w.slice.part for w in wanted}
    folders = {w.slice.folder: w.slice for w in wanted}
    read = {folder: {w.slice.part for w in wanted if w.slice.folder == folder} for folder in folders}
    alone = {folder for folder, piece in folders.items()
             if any(piece.first <= p <= piece.last for p in parts - read[folder])}
    scans = plan_scans(wanted)
    for folder in alone:        # its own scan: a filter by part could not keep another folder's newer rows out
        assert [scan.folders for scan in scans if folder in scan.folders] == [(folder,)]
    shared = [scan for scan in scans if not set(scan.folders) <= alone]
    assert len(shared) == (1 if len(alone) < len(folders) else 0)
    assert not shared or set(shared[0].folders) == set(folders) - alone
    assert {p for scan in scans for p in scan.targets} == parts


def test_a_read_of_thousands_of_one_part_folders_is_one_scan():
    wanted = [Wanted(Slice(f"data/s/f{k}", k, k, k, None, True), k) for k in range(8_760)]     # a year of hours
    [scan] = plan_scans(wanted)
    assert scan.loaded and scan.whole and len(scan.folders) == 8_760 and sorted(scan.targets) == list(range(8_760))


@pytest.mark.parametrize("parts, form", [
    ([7], "range"), ([-3, -2, -1, 0, 1], "range"), ([5, 9], "list"), (list(range(0, 3 * FILTER_LIST_PARTS, 3)), "list"),
    (list(range(-70, 70, 2)), "mask"), ([0, 62, 63, 64, 125, 126, 127, 190, 1000, *range(2000, 2200, 3)], "mask"),
    ([p for p in range(376_954, 385_704) if p % 24 not in (1, 2, 3, 4)], "mask"),   # a year of hours, nights empty
])
def test_a_part_filter_keeps_exactly_the_wanted_parts(spark, parts, form):
    parts = sorted(set(parts))
    condition = part_filter(parts)
    assert {"range": "IN" not in condition and "shiftright" not in condition, "list": " IN (" in condition,
            "mask": "shiftright" in condition}[form]
    low, high = parts[0] - 130, parts[-1] + 130          # beyond either end by more than a mask word
    kept = spark.range(low, high).withColumnRenamed("id", PART_COLUMN).where(condition)
    assert sorted(row[0] for row in kept.collect()) == parts
