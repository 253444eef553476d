"""Retention: helpers keep only the parts still needed; RETAIN drops old parts; dropped parts are never read."""

from __future__ import annotations

import os

import pytest

from viewdf_magic.errors import ViewDFError
from viewdf_magic.catalog.model import folder_of

from test_late_data import FIRST, PATTERN_VIEW, batch

STREAM = "CREATE STREAM M (ts TIMESTAMP, src STRING, dest STRING, loss INT) PARTITION LENGTH 60"


def kept(warehouse, name: str) -> list[int]:
    return sorted(s - FIRST for s in warehouse.catalog.state(name).parts)


def data_folders(warehouse, name: str) -> int:
    """Folders holding Parquet files of ``name``: one per write (a range step's run of parts is one)."""
    root = warehouse.path[len("file:"):]
    object_id = warehouse.catalog.get(name).id
    folder = os.path.join(root, "data", object_id)
    return sum(1 for _, _, files in os.walk(folder) if any(f.endswith(".parquet") for f in files))


def test_a_pattern_helper_keeps_its_look_back_plus_the_lateness_bound(warehouse, make_warehouse):
    warehouse.execute(STREAM + " ALLOWED LATENESS 2 PARTS")
    warehouse.execute(PATTERN_VIEW)
    warehouse.ingest("M", batch(list(range(10)), [11 + m for m in range(10)]))
    # Helper[j] reads Helper[j-1]; a late row may still reach M[7], so Helper[6 .. 9] are kept.
    assert kept(warehouse, "Rising__helper") == [6, 7, 8, 9]
    assert warehouse.catalog.state("Rising__helper").dropped_before == FIRST + 6
    garbage = warehouse.catalog.garbage            # dropped parts wait for the grace period (or VACUUM)
    assert garbage and all(f.startswith(f"data/{warehouse.catalog.get('Rising__helper').id}/") for f in garbage)
    # the run of parts 1 .. 9 is one folder, kept while parts 6 .. 9 read it; part 0's folder is garbage
    referenced = {folder_of(f) for meta in warehouse.catalog.state("Rising__helper").parts.values() for f in meta.folders}
    assert len(referenced) == 1 and not referenced & set(garbage)
    assert data_folders(warehouse, "Rising__helper") == len(referenced) + len(garbage)
    warehouse.execute("VACUUM RETAIN 0 SECONDS")
    assert data_folders(warehouse, "Rising__helper") == len(referenced) and warehouse.catalog.garbage == {}
    assert kept(warehouse, "Rising") == list(range(10))        # the user's view and the stream keep everything
    assert kept(warehouse, "M") == list(range(10))
    report = warehouse.ingest("M", batch([7.5], [5]))            # late, within the bound: repaired
    assert report.late == [FIRST + 7] and report.repair.steps
    with pytest.raises(ViewDFError, match="ALLOWED LATENESS 2 PARTS"):
        warehouse.ingest("M", batch([6.5], [5]))
    assert warehouse.run("VERIFY VIEW Rising")[0].message == "Rising: all 10 parts equal their recomputation."
    reopened = make_warehouse()
    assert kept(reopened, "Rising__helper") == [6, 7, 8, 9]


def test_without_a_lateness_bound_helpers_keep_every_part(warehouse):
    warehouse.execute(STREAM)
    warehouse.execute(PATTERN_VIEW)
    warehouse.ingest("M", batch(list(range(6)), [11 + m for m in range(6)]))
    assert kept(warehouse, "Rising__helper") == list(range(6))


def test_retain_drops_old_stream_parts_and_reading_them_is_a_clear_error(warehouse):
    warehouse.execute(STREAM + " RETAIN 3 PARTS")
    warehouse.execute("CREATE VIEW Pairs AS SELECT src, count(*) AS n FROM M [WINDOW 2 MINUTES] GROUP BY src")
    warehouse.ingest("M", batch(list(range(8)), [1] * 8))
    assert kept(warehouse, "M") == [5, 6, 7]
    assert warehouse.catalog.state("M").dropped_before == FIRST + 5
    shown = warehouse.execute("SHOW PARTS M")
    assert list(shown["part"] - FIRST) == [5, 6, 7]
    assert len(warehouse.execute("SELECT * FROM M")) == 3        # a bare name reads the parts still kept
    with pytest.raises(ViewDFError) as caught:
        warehouse.execute(f"SELECT * FROM M[{FIRST + 2} .. {FIRST + 6}]")
    assert "dropped by retention (RETAIN 3 PARTS)" in caught.value.message
    assert caught.value.position is not None
    with pytest.raises(ViewDFError, match="before 2015-01-01 10:05:00, which retention dropped"):
        warehouse.ingest("M", batch([1], [1]))
    assert kept(warehouse, "Pairs") == list(range(8))


def test_retain_never_drops_what_the_next_step_reads(warehouse):
    warehouse.execute(STREAM)
    warehouse.execute("CREATE VIEW Wide AS "
                      "INITIALIZE Wide[i] AS SELECT src, count(*) AS n FROM M[i-3 .. i] GROUP BY src "
                      "UPDATE Wide[j] AS SELECT src, count(*) AS n FROM M[j-3 .. j] GROUP BY src "
                      "PARTITION LENGTH 60")
    warehouse.execute("ALTER STREAM M SET RETAIN 1 PARTS")
    warehouse.ingest("M", batch(list(range(6)), [1] * 6))
    # Wide's next part (10:06) reads M[10:03 .. 10:06]: those stay although RETAIN asks for one part.
    assert kept(warehouse, "M") == [3, 4, 5]
    warehouse.ingest("M", batch([6], [1]))
    assert kept(warehouse, "M") == [4, 5, 6]
    counts = warehouse.execute("SELECT n FROM Wide WHERE PART_TIMESTAMP = '2015-01-01 10:06:00'")
    assert counts["n"].tolist() == [4]


def test_retain_on_a_view_and_late_rows_it_can_no_longer_repair(warehouse):
    warehouse.execute(STREAM)
    warehouse.execute("CREATE VIEW Totals AS SELECT src, sum(loss) AS total FROM M [WINDOW 2 MINUTES] GROUP BY src")
    warehouse.execute("ALTER VIEW Totals SET RETAIN 2 PARTS")
    warehouse.ingest("M", batch(list(range(5)), [1, 2, 3, 4, 5]))
    assert kept(warehouse, "Totals") == [3, 4]
    version = warehouse.catalog.version
    with pytest.raises(ViewDFError, match="cannot be repaired: the part of Totals they change"):
        warehouse.ingest("M", batch([1.5], [9]))
    assert warehouse.catalog.version == version
    warehouse.ingest("M", batch([3.5], [10]))
    totals = warehouse.execute("SELECT total FROM Totals ORDER BY PART_TIMESTAMP")["total"].tolist()
    assert totals == [3 + 4 + 10, 4 + 10 + 5]


def test_chunked_max_helpers_keep_the_parts_later_steps_read_back(warehouse):
    """WinMax's suffix reference j-2*((j-5)%3) moves back as j grows, and __chunks reads __pre[j/3*6-1-j]:
    retention keeps what the next 3 steps read (not only the next one), so no step meets a dropped part."""
    warehouse.execute(STREAM + " ALLOWED LATENESS 1 PARTS")
    warehouse.execute("CREATE VIEW WinMax AS SELECT src, max(loss) AS peak FROM M [WINDOW 6 MINUTES] GROUP BY src")
    for minute in range(14):
        warehouse.ingest("M", batch([minute], [(minute * 7) % 11]))
        chunks, pre = (warehouse.catalog.state(n) for n in ("WinMax__chunks", "WinMax__pre"))
        j = FIRST + minute + 1                   # the next part; the oldest a repair may recompute is j-2
        for k in range(j - 2, j + 3):            # what the view and __chunks read from there on
            assert k - 2 * ((k - 5) % 3) >= (chunks.dropped_before or 0), (minute, k)
            assert k // 3 * 6 - 1 - k >= (pre.dropped_before or 0), (minute, k)
    assert warehouse.catalog.state("WinMax__pre").dropped_before is not None      # retention did drop parts
    assert warehouse.run("VERIFY VIEW WinMax")[0].message == "WinMax: all 14 parts equal their recomputation."


def test_subscripts_that_go_back_and_forth_have_their_smallest_value_found():
    from viewdf_magic.language.source import Fragment
    from viewdf_magic.language.subscripts import parse_subscript

    def smallest(text: str, start: int):
        return parse_subscript(Fragment(text, 0, len(text)), {"j"}).smallest_from("j", start)

    for text in ("j-2*((j-59)%30)", "j/30*60-1-j", "j-1-(30-j%30)/30", "(j*5+4)/8-2", "j-3"):
        subscript = parse_subscript(Fragment(text, 0, len(text)), {"j"})
        for start in range(100, 160):
            brute = min(subscript.evaluate({"j": k}) for k in range(start, start + 400))
            assert smallest(text, start) == brute, (text, start)
    assert smallest("j*j", 5) is None and smallest("j/(j-1)", 5) is None and smallest("100-j", 5) is None
