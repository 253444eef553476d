"""VERIFY VIEW of pattern and MATCH_RECOGNIZE views (issue 35): their RECOMPUTE searches the whole history, and
VERIFY runs that search once for every part (maintainer/verification.py, verify_history), so the number of Spark
jobs does not grow with the parts; a part that differs is checked again with RECOMPUTE itself and reported with
its missing and extra rows."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from test_verify_tolerance import FIRST, T0, columns, verify

STREAM = "CREATE STREAM M (ts TIMESTAMP, src STRING, loss INT) TIMESTAMP ts PARTITION LENGTH 60"
PATTERN = ("CREATE VIEW P AS SELECT src, a.loss AS high, count(*) AS n FROM M PATTERN [a, b+] "
           "WHERE a.loss > 10 AND b.loss > 10 GROUP BY src")
MATCH = ("CREATE VIEW R AS SELECT * FROM M MATCH_RECOGNIZE (PARTITION BY src ORDER BY ts "
         "MEASURES FIRST(A.loss) AS a_loss, COUNT(B.*) AS n ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW "
         "PATTERN (A B+) DEFINE A AS A.loss > 10, B AS B.loss > A.loss) AS X")
WRONG = 7                                     # the part whose stored rows are tampered with


def losses(minutes: int) -> pd.DataFrame:
    """Two rows a minute per source: s cycles 12, 15, 9 (a match of R ends at each 9, P's runs break there),
    t is always 20 (one run of P through every part, no match of R)."""
    cycle = [12, 15, 9]
    return pd.DataFrame([(T0 + pd.Timedelta(minutes=m, seconds=30 * r), src, cycle[(2 * m + r) % 3] if src == "s"
                          else 20) for m in range(minutes) for r in range(2) for src in "st"],
                        columns=["ts", "src", "loss"])


def tamper(warehouse, view: str, subscript: int, column: str) -> None:
    """Add 100 to ``column`` in every stored row of ``view``'s part ``subscript`` (its folder's files
    rewritten in place; a fused part is a struct column of its source's rows)."""
    [written] = warehouse.catalog.state(view).parts[subscript].folders
    folder, _, rest = written.partition("#")
    fused = rest.partition("@")[2]
    changed = 0
    for path in (Path(warehouse.path.removeprefix("file:")) / folder).glob("*.parquet"):
        table = pq.read_table(path)
        rows = table.to_pylist()
        for row in rows:
            target = row[fused] if fused else row
            if row["__part"] == subscript and target is not None:
                target[column] += 100
                changed += 1
        pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path, use_deprecated_int96_timestamps=True)
        path.with_name(f".{path.name}.crc").unlink(missing_ok=True)       # Hadoop's checksum of the old file
    assert changed


def _verify_jobs(spark, warehouse, minutes: int, group: str) -> dict[str, tuple[pd.DataFrame, int]]:
    """Both views over ``minutes`` parts, part WRONG of each tampered with, and each one's VERIFY VIEW table
    and number of Spark jobs."""
    warehouse.run(f"{STREAM}; {PATTERN}; {MATCH}")
    warehouse.ingest("M", losses(minutes))
    tamper(warehouse, "P", FIRST + WRONG, "n")
    tamper(warehouse, "R", FIRST + WRONG, "n")
    tracker = spark.sparkContext.statusTracker()
    found = {}
    for view in ("P", "R"):
        spark.sparkContext.setJobGroup(f"{group}-{view}", "VERIFY VIEW")
        try:
            table = verify(warehouse, f"VERIFY VIEW {view}")
        finally:
            spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
            spark.sparkContext.setLocalProperty("spark.job.description", None)
        found[view] = table, len(tracker.getJobIdsForGroup(f"{group}-{view}"))
    return found


def test_verify_searches_the_history_once_and_names_the_tampered_part(spark, make_warehouse, tmp_path):
    small = _verify_jobs(spark, make_warehouse("small"), 12, f"verify-small-{tmp_path.name}")
    large = _verify_jobs(spark, make_warehouse("large"), 40, f"verify-large-{tmp_path.name}")
    for view in ("P", "R"):                    # part 7: P has t's run, R the match of s ending there
        assert small[view][1] == large[view][1], view
        for (table, _), minutes in ((small[view], 12), (large[view], 40)):
            assert table.attrs["message"] == f"{view}: 1 of {minutes} parts differ from their recomputation."
            assert list(table["part"]) == [FIRST + m for m in range(minutes)]
            assert columns(table[~table["equal"]], "part", "stored_rows", "missing_rows", "extra_rows") == \
                [(FIRST + WRONG, 1, 1, 1)]
            assert table["stored_rows"].sum() > minutes / 2         # the views have rows to compare


def test_untouched_views_verify_equal_and_match_recompute(warehouse):
    warehouse.run(f"{STREAM}; {PATTERN}; {MATCH}")
    warehouse.ingest("M", losses(9))
    for view in ("P", "R"):
        table = verify(warehouse, f"VERIFY VIEW {view}")
        assert table.attrs["message"] == f"{view}: all 9 parts equal their recomputation."
        for minute in (0, 4, 8):       # the search over the whole history gives what RECOMPUTE gives per part
            assert warehouse.verify_part(view, T0 + pd.Timedelta(minutes=minute)).comparison.equal
