"""Compaction (storage/compaction.py): a view followed part by part has its small folders rewritten as one,
every part keeping its rows, checksum, lineage and versions; a stored file that changed stops it, with nothing
moved; the move survives a restart and VACUUM."""

from __future__ import annotations

import glob
import os

import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from viewdf_magic.catalog.model import folder_of
from viewdf_magic.storage import compaction

MINUTE = 60
STREAM = "CREATE STREAM S (ts TIMESTAMP, k STRING, v INT) PARTITION LENGTH 60"
# an aggregate of each part: computed by its own step, into a folder of its own per part
VIEW = """CREATE VIEW Totals AS
INITIALIZE Totals[i] AS SELECT k, count(*) AS n, sum(v) AS total FROM S[i] GROUP BY k
UPDATE Totals[j] AS SELECT k, count(*) AS n, sum(v) AS total FROM S[j] GROUP BY k
RECOMPUTE Totals[j] AS SELECT k, count(*) AS n, sum(v) AS total FROM S[j] GROUP BY k"""


def minute(m: int) -> pd.DataFrame:
    """Part ``m``'s rows: keys a and b, values from the minute's number."""
    return pd.DataFrame({"ts": pd.to_datetime([m * MINUTE + 1, m * MINUTE + 2, m * MINUTE + 3], unit="s"),
                         "k": ["a", "b", "a"], "v": [m, 2 * m, 3]})


def expected(minutes: range) -> pd.DataFrame:
    """The oracle: each part's totals by pandas."""
    frames = []
    for m in minutes:
        rows = minute(m).groupby("k", as_index=False).agg(n=("v", "size"), total=("v", "sum"))
        frames.append(rows.assign(PART_TIMESTAMP=pd.Timestamp(m * MINUTE, unit="s")))
    frame = pd.concat(frames).astype({"n": "int64", "total": "int64", "PART_TIMESTAMP": "datetime64[ns]"})
    return frame.sort_values(["PART_TIMESTAMP", "k"]).reset_index(drop=True)


def stored(warehouse) -> pd.DataFrame:
    got = warehouse.execute("SELECT k, n, total, PART_TIMESTAMP FROM Totals")
    got = got.astype({"n": "int64", "total": "int64", "PART_TIMESTAMP": "datetime64[ns]"})
    return got.sort_values(["PART_TIMESTAMP", "k"]).reset_index(drop=True)


def referenced(warehouse) -> set[str]:
    return {folder_of(t) for meta in warehouse.catalog.state("Totals").parts.values() for t in meta.folders}


def kept(meta):
    """What compaction must not change of a part."""
    return meta.subscript, meta.rows, meta.checksum, meta.lineage, meta.how, meta.changed, meta.updated


@pytest.fixture
def four_folders(monkeypatch):
    monkeypatch.setattr(compaction, "COMPACT_FOLDERS", 4)


def test_small_folders_are_rewritten_as_one_and_every_part_keeps_what_it_was(four_folders, warehouse,
                                                                              make_warehouse):
    warehouse.execute(STREAM)
    warehouse.execute(VIEW)
    metas = {}
    folders_seen = []
    for m in range(7):
        warehouse.ingest("S", minute(m))
        metas.update({s: kept(meta) for s, meta in warehouse.catalog.state("Totals").parts.items()})
        folders_seen.append(len(referenced(warehouse)))
    # a folder per part until four pile up, then one; the compacted folder is small, so it is merged again
    assert folders_seen == [1, 2, 3, 1, 2, 3, 1]
    parts = warehouse.catalog.state("Totals").parts
    assert {s: kept(meta) for s, meta in parts.items()} == metas
    assert all(t.split("#")[1].endswith("[0,6]") for meta in parts.values() for t in meta.folders)
    pd.testing.assert_frame_equal(stored(warehouse), expected(range(7)))
    assert len(warehouse.catalog.garbage) == 8       # parts 0-3's folders, then the first compacted one and 4-6's
    warehouse.execute("VACUUM RETAIN 0 SECONDS")
    pd.testing.assert_frame_equal(stored(warehouse), expected(range(7)))
    assert warehouse.run("VERIFY VIEW Totals")[0].message == "Totals: all 7 parts equal their recomputation."
    reopened = make_warehouse()
    assert {s: kept(meta) for s, meta in reopened.catalog.state("Totals").parts.items()} == metas
    pd.testing.assert_frame_equal(stored(reopened), expected(range(7)))


def test_a_stored_file_that_changed_stops_the_compaction_and_nothing_moves(four_folders, warehouse):
    warehouse.execute(STREAM)
    warehouse.execute(VIEW)
    for m in range(3):
        warehouse.ingest("S", minute(m))
    root = warehouse.path[len("file:"):]
    (first,) = warehouse.catalog.state("Totals").parts[0].folders
    path = glob.glob(os.path.join(root, folder_of(first), "*.parquet"))[0]
    table = pq.read_table(path)         # a total changed behind the catalog's back
    table = table.set_column(table.schema.get_field_index("total"), "total", pc.add(table.column("total"), 1))
    pq.write_table(table, path, use_deprecated_int96_timestamps=True)
    os.remove(os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.crc"))    # Hadoop's checksum of it
    before = {s: meta.folders for s, meta in warehouse.catalog.state("Totals").parts.items()}
    data = os.path.join(root, "data", warehouse.catalog.get("Totals").id)
    written = set(os.listdir(data))
    report = warehouse.run("INSERT INTO S VALUES (TIMESTAMP '1970-01-01 00:03:01', 'a', 1)")[0]
    assert "Warning: compacting Totals: part 0 read back as 2 rows where the catalog has 2, or with other " \
           "contents: its stored files changed; its parts stay where they were" in report.message
    parts = warehouse.catalog.state("Totals").parts
    assert {s: parts[s].folders for s in before} == before
    assert set(os.listdir(data)) == written | {folder_of(parts[3].folders[0]).rsplit("/", 1)[1]}
    warehouse.ingest("S", minute(4))                 # not tried again in this session
    assert len(referenced(warehouse)) == 5


