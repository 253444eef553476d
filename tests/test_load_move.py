"""LOAD .. MOVE takes over the files it loads (as Hive's LOAD DATA INPATH and Auto Loader's cleanSource do): a
Parquet file taken as it is is hard-linked into the warehouse instead of copied, and every file taken is removed
from the path once its rows are committed, never before. The oracles: pandas over the files' rows, their bytes'
SHA-256 and inode numbers taken before the LOAD, and the file system's listing after it."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile

import pandas as pd
import pytest

from viewdf_magic.errors import ViewDFError
from viewdf_magic.storage.loaded_parts import LOADED_FILE

from test_loaded_parts import STREAM, SUMS, expected_sums, rows, slices, stored_sums, write


def landing(tmp_path, offsets: list[list[int]], name: str = "landing"):
    """A folder of Parquet files, one per list of offsets (seconds after 10:00), and the rows of them all."""
    folder = tmp_path / name
    frames = []
    for n, seconds in enumerate(offsets):
        frame = rows(seconds).assign(x=[100 * n + k for k in range(len(seconds))])
        write(frame, folder / f"f{n}.parquet")
        frames.append(frame)
    return folder, pd.concat(frames, ignore_index=True)


def stored_files(warehouse, tmp_path, name: str = "wh") -> list[str]:
    return sorted({os.path.join(str(tmp_path / name), s.folder, LOADED_FILE) for s in slices(warehouse)})


def test_move_links_the_files_in_and_removes_them_after_the_commit(make_warehouse, tmp_path):
    folder, frame = landing(tmp_path, [[0, 20, 61], [75, 130], [179, 185, 190]])
    sources = sorted(folder.iterdir())
    before = {(p.stat().st_ino, hashlib.sha256(p.read_bytes()).hexdigest()) for p in sources}
    warehouse = make_warehouse()
    warehouse.run(f"{STREAM}; {SUMS}")
    message = warehouse.run(f"LOAD '{folder}' INTO M MOVE")[0].message
    assert message.startswith("Inserted 8 rows into 4 parts of M; 4 view parts computed. Removed")
    assert message.endswith(f"Removed 3 loaded files from '{folder}'.")
    assert list(folder.iterdir()) == []
    # the warehouse's files are the sources' own inodes, now with one name each, their bytes unchanged
    stored = stored_files(warehouse, tmp_path)
    assert {(os.stat(p).st_ino, hashlib.sha256(open(p, "rb").read()).hexdigest()) for p in stored} == before
    assert all(os.stat(p).st_nlink == 1 for p in stored)
    pd.testing.assert_frame_equal(stored_sums(warehouse), expected_sums(frame))
    pd.testing.assert_frame_equal(stored_sums(make_warehouse()), expected_sums(frame))     # after a restart

    again = warehouse.run(f"LOAD '{folder}' INTO M MOVE")[0].message
    assert again == f"'{folder}' holds no file to load; nothing was loaded."
    assert int(warehouse.execute("SELECT count(*) AS n FROM M")["n"][0]) == 8


def test_files_left_by_a_crash_after_the_commit_are_removed_not_loaded_twice(make_warehouse, tmp_path):
    """A LOAD that committed, then stopped before its removal, leaves its files recorded and in place: a LOAD
    without MOVE stands for it. The next LOAD .. MOVE loads only the new file and removes all three, and a file
    written later under a removed file's name is new."""
    folder, frame = landing(tmp_path, [[0, 20], [61, 75]])
    warehouse = make_warehouse()
    warehouse.run(f"{STREAM}; {SUMS}; LOAD '{folder}' INTO M")
    later = rows([130, 150]).assign(x=[7, 8])
    write(later, folder / "f2.parquet")
    message = warehouse.run(f"LOAD '{folder}' INTO M MOVE")[0].message
    assert message.startswith("Inserted 2 rows into 1 part of M from 1 new file; 2 files loaded before skipped; 1 view part")
    assert f"Removed 3 loaded files from '{folder}'." in message
    assert list(folder.iterdir()) == []

    reused = rows([185]).assign(x=[9])          # another file under a name MOVE took and removed
    write(reused, folder / "f0.parquet")
    message = warehouse.run(f"LOAD '{folder}' INTO M MOVE")[0].message
    assert message.startswith("Inserted 1 row into 1 part of M")
    assert list(folder.iterdir()) == []
    everything = pd.concat([frame, later, reused], ignore_index=True)
    pd.testing.assert_frame_equal(stored_sums(warehouse), expected_sums(everything))


def test_a_refused_move_removes_nothing(warehouse, tmp_path):
    folder = tmp_path / "csv"
    folder.mkdir()
    (folder / "a.csv").write_text("ts,k,x,tag\n2015-01-01 10:00:00,1,1,a\n")
    (folder / "b.csv").write_text("ts,k,x,tag\n2015-01-01 10:01:00,1,not a number,b\n")
    warehouse.run(STREAM)
    version = warehouse.engine.catalog.version
    with pytest.raises(ViewDFError):
        warehouse.run(f"LOAD '{folder}' INTO M MOVE")
    assert sorted(p.name for p in folder.iterdir()) == ["a.csv", "b.csv"]
    assert warehouse.engine.catalog.version == version

    (folder / "b.csv").write_text("ts,k,x,tag\n2015-01-01 10:01:00,1,2,b\n")
    message = warehouse.run(f"LOAD '{folder}' INTO M MOVE")[0].message     # rows Spark reads and writes
    assert message.startswith("Inserted 2 rows into 2 parts of M")
    assert list(folder.iterdir()) == []
    assert warehouse.execute("SELECT x, tag FROM M ORDER BY ts").values.tolist() == [[1, "a"], [2, "b"]]


def test_a_file_on_another_device_is_copied_then_removed(make_warehouse, tmp_path):
    other = tempfile.mkdtemp(dir="/dev/shm")        # tmpfs: hard links to the warehouse's disk fail there
    try:
        assert os.stat(other).st_dev != os.stat(tmp_path).st_dev
        source = os.path.join(other, "f.parquet")
        frame = rows([0, 61, 62])
        write(frame, tmp_path / "f.parquet")
        shutil.move(str(tmp_path / "f.parquet"), source)
        digest = hashlib.sha256(open(source, "rb").read()).hexdigest()
        warehouse = make_warehouse()
        warehouse.run(f"{STREAM}; {SUMS}")
        assert "Removed 1 loaded file from" in warehouse.run(f"LOAD '{source}' INTO M MOVE")[0].message
        assert not os.path.exists(source)
        [stored] = stored_files(warehouse, tmp_path)
        assert hashlib.sha256(open(stored, "rb").read()).hexdigest() == digest
        pd.testing.assert_frame_equal(stored_sums(warehouse), expected_sums(frame))
    finally:
        shutil.rmtree(other, ignore_errors=True)


def test_move_needs_files_it_can_list(warehouse, tmp_path):
    warehouse.run(STREAM)
    missing = tmp_path / "nowhere"
    text = f"LOAD '{missing}' INTO M MOVE"
    with pytest.raises(ViewDFError) as refused:
        warehouse.run(text)
    assert refused.value.message == f"MOVE removes the files it loads, and '{missing}' does not exist"
    assert refused.value.position == text.index("'")


def test_move_and_force_parse_in_any_order(warehouse):
    from viewdf_magic.language.parser import parse

    [first] = parse("LOAD 'a.parquet' INTO M MOVE FORCE")
    [second] = parse("LOAD 'a.parquet' INTO M FORCE FORMAT parquet MOVE")
    assert (first.move, first.force, second.move, second.force, second.format) == (True, True, True, True, "parquet")
    with pytest.raises(ViewDFError, match="expected FORMAT, OPTIONS, FORCE or MOVE"):
        parse("LOAD 'a.parquet' INTO M REMOVE")


def test_a_move_that_fails_before_its_commit_leaves_the_files_as_they_were(warehouse, tmp_path, monkeypatch):
    folder, frame = landing(tmp_path, [[0, 61], [75]])
    digests = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}
    warehouse.run(f"{STREAM}; {SUMS}")

    def refused(actions) -> None:
        raise OSError("disk full")
    monkeypatch.setattr(warehouse.engine.catalog, "commit", refused)
    with pytest.raises(OSError, match="disk full"):
        warehouse.run(f"LOAD '{folder}' INTO M MOVE")
    monkeypatch.undo()
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()} == digests
    assert all(p.stat().st_nlink == 1 for p in folder.iterdir())       # the warehouse's links are gone
    assert warehouse.engine.catalog.state("M").parts == {}
    assert "Removed 2 loaded files" in warehouse.run(f"LOAD '{folder}' INTO M MOVE")[0].message
    pd.testing.assert_frame_equal(stored_sums(warehouse), expected_sums(frame))
