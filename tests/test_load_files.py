"""LOAD takes each file once (issue 35): the catalog records the files it took with their rows, so a re-run
cell, a copy of a file, or a landing folder that keeps receiving files never loads the same rows twice;
FORCE loads them again, and a file changed since it was loaded is refused."""

from __future__ import annotations

import json
import os

import pytest

from viewdf_magic.errors import Interrupted, ViewDFError
from viewdf_magic.maintainer.maintainer import Maintainer
from viewdf_magic.maintainer.writer import PartWriter

STREAM = "CREATE STREAM M (ts TIMESTAMP, x INT) TIMESTAMP ts PARTITION LENGTH 60"
COPY = "CREATE VIEW C AS INITIALIZE C[i] AS SELECT ts, x FROM M[i] UPDATE C[j] AS SELECT ts, x FROM M[j]"


def write_csv(path, minutes: list[int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("ts,x\n" + "".join(f"2015-01-01 10:{m:02d}:00,{m}\n" for m in minutes))


def xs(warehouse, name: str = "M") -> list[int]:
    return sorted(warehouse.execute(f"SELECT x FROM {name}")["x"].tolist())


def test_a_file_loaded_again_is_skipped_unless_forced(warehouse, tmp_path):
    csv = tmp_path / "in" / "rows.csv"
    write_csv(csv, [0, 1, 2])
    warehouse.run(STREAM)
    first = warehouse.run(f"LOAD '{csv}' INTO M")[0]
    assert first.message.startswith("Inserted 3 rows into 3 parts of M")
    again = warehouse.run(f"LOAD '{csv}' INTO M")[0]
    assert again.message.startswith(f"'{csv}' was loaded into M already, on ")
    assert again.message.endswith("; nothing was loaded. Add FORCE to load it again.")
    assert xs(warehouse) == [0, 1, 2]

    copy = tmp_path / "elsewhere" / "copy.csv"          # the same content under another name
    copy.parent.mkdir()
    copy.write_bytes(csv.read_bytes())
    skipped = warehouse.run(f"LOAD '{copy}' INTO M")[0]
    assert f"was loaded into M already (as '{csv}')" in skipped.message
    forced = warehouse.run(f"LOAD '{csv}' INTO M FORCE")[0]
    assert forced.message.startswith("Inserted 3 rows into 3 parts of M (3 late rows into 3 earlier parts)")
    assert xs(warehouse) == [0, 0, 1, 1, 2, 2]


def test_a_file_changed_since_it_was_loaded_is_refused_before_anything_is_written(warehouse, tmp_path):
    csv = tmp_path / "rows.csv"
    write_csv(csv, [0, 1])
    warehouse.run(f"{STREAM}; LOAD '{csv}' INTO M")
    size = csv.stat().st_size
    write_csv(csv, [0, 1, 2])                             # a row appended
    version = warehouse.catalog.version
    text = f"LOAD '{csv}' INTO M"
    with pytest.raises(ViewDFError) as refused:
        warehouse.run(text)
    assert refused.value.message.startswith(f"'{csv}' has changed since it was loaded into M on ")
    assert refused.value.message.endswith(f"({size} bytes then, {csv.stat().st_size} now): loading it again would "
                                          f"add its earlier rows twice. Add FORCE to load all of its rows again")
    assert refused.value.position == text.index("'")
    assert warehouse.catalog.version == version and xs(warehouse) == [0, 1]
    warehouse.run(f"{text} FORCE")
    assert xs(warehouse) == [0, 0, 1, 1, 2]


def test_a_landing_folder_gives_each_file_once_and_the_record_survives_a_restart(make_warehouse, tmp_path):
    landing = tmp_path / "landing"
    write_csv(landing / "a.csv", [0, 1])
    write_csv(landing / "b.csv", [2])
    write_csv(landing / "_partial.csv", [50])             # hidden from Spark's file sources, and from LOAD
    write_csv(landing / ".c.csv.crc", [51])
    write_csv(landing / "archive" / "old.csv", [52])      # a sub-folder is not read
    warehouse = make_warehouse()
    warehouse.run(STREAM)
    assert warehouse.run(f"LOAD '{landing}' INTO M FORMAT csv")[0].message.startswith(
        "Inserted 3 rows into 3 parts of M.")
    write_csv(landing / "c.csv", [3, 4])
    taken = warehouse.run(f"LOAD '{landing}' INTO M FORMAT csv")[0]
    assert taken.message.startswith("Inserted 2 rows into 2 parts of M from 1 new file; 2 files loaded before "
                                    "skipped")
    assert xs(warehouse) == [0, 1, 2, 3, 4]

    reopened = make_warehouse()                           # the record is in the catalog, on disk
    nothing = reopened.run(f"LOAD '{landing}/' INTO M")[0]  # the format from the files' names
    assert nothing.message.startswith(f"No new file in '{landing}/': its 3 files were loaded into M already")
    assert xs(reopened) == [0, 1, 2, 3, 4]
    loaded = reopened.catalog.state("M").loaded
    assert sorted(os.path.relpath(path[len("file:"):], landing) for path in loaded) == ["a.csv", "b.csv", "c.csv"]
    assert {record.size for record in loaded.values()} == {(landing / name).stat().st_size
                                                           for name in ("a.csv", "b.csv", "c.csv")}


def test_a_landing_folder_load_reads_only_its_new_and_changed_files(warehouse, tmp_path, monkeypatch):
    """A file recorded at its path with its size and modification time is not read again to hash it."""
    from viewdf_magic.storage import landing as landing_module
    folder = tmp_path / "landing"
    for name, minutes in (("a.csv", [0]), ("b.csv", [1]), ("c.csv", [2])):
        write_csv(folder / name, minutes)
    warehouse.run(STREAM)
    warehouse.run(f"LOAD '{folder}' INTO M")
    hashed: list[str] = []
    real = landing_module._sha256
    monkeypatch.setattr(landing_module, "_sha256", lambda fs, path: hashed.append(os.path.basename(path)) or real(fs, path))
    write_csv(folder / "d.csv", [3])
    write_csv(folder / "b.csv", [1, 4])                  # changed: another size
    with pytest.raises(ViewDFError, match="b.csv' has changed since it was loaded"):
        warehouse.run(f"LOAD '{folder}' INTO M")
    assert sorted(hashed) == ["b.csv", "d.csv"]
    os.remove(folder / "b.csv")
    hashed.clear()
    assert warehouse.run(f"LOAD '{folder}' INTO M")[0].message.startswith("Inserted 1 row into 1 part of M from 1 "
                                                                          "new file; 2 files loaded before skipped")
    assert hashed == ["d.csv"] and xs(warehouse) == [0, 1, 2, 3]


def test_a_folder_load_lists_only_the_folder_itself(warehouse, tmp_path):
    """LOAD '/' lists one folder (no walk of the whole file system) and finds no file to load there."""
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    write_csv(empty / "sub" / "deep.csv", [0])
    warehouse.run(STREAM)
    assert warehouse.run(f"LOAD '{empty}' INTO M FORMAT csv")[0].message == \
        f"'{empty}' holds no file to load; nothing was loaded."
    assert xs(warehouse) == []


def test_the_files_are_recorded_in_the_log_entry_that_publishes_their_rows(warehouse, tmp_path):
    csv = tmp_path / "rows.csv"
    write_csv(csv, [0, 1])
    warehouse.run(STREAM)
    before = warehouse.catalog.version
    warehouse.run(f"LOAD '{csv}' INTO M")
    entries = sorted(p for p in (tmp_path / "wh" / "_viewdf" / "log").glob("*.json") if int(p.stem) > before)
    ops = [[action["op"] for action in json.loads(entry.read_text())["actions"]] for entry in entries]
    assert ops == [["part", "part", "advance", "loaded"]]


def test_an_interrupted_load_says_how_to_go_on_and_a_rerun_adds_nothing(warehouse, tmp_path, monkeypatch):
    csv = tmp_path / "rows.csv"
    write_csv(csv, [0, 1, 2, 3])
    # DISTINCT: not a projection of M's part, so C steps after the ingest rather than in its job
    warehouse.run(f"{STREAM}; " + COPY.replace("SELECT ts", "SELECT DISTINCT ts"))

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt          # Ctrl-C while the views are maintained, after the rows are stored
    monkeypatch.setattr(PartWriter, "compute", interrupted)
    monkeypatch.setattr(Maintainer, "compute_range", interrupted)
    with pytest.raises(Interrupted) as stopped:
        warehouse.run(f"LOAD '{csv}' INTO M")
    assert str(stopped.value).endswith(
        "the part being computed was not published. The stream's rows are stored: STEP ALL computes the view "
        "parts still missing (a LOAD run again skips the files it took; the same INSERT again would add its rows "
        "twice).")
    monkeypatch.undo()
    assert "nothing was loaded" in warehouse.run(f"LOAD '{csv}' INTO M")[0].message
    warehouse.run("STEP ALL")
    assert xs(warehouse) == xs(warehouse, "C") == [0, 1, 2, 3]
