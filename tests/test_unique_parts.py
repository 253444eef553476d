"""UPDATE V[j] WHEN X[j] IS UNIQUE (..) AS ...: ingest records, per stream part, whether no two rows share
the columns a view asks about, and the maintainer runs that clause exactly for those parts (issue 22)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from viewdf_magic.errors import ViewDFError

T0 = pd.Timestamp("2015-01-01 10:00")
FIRST = 23668440                      # T0's part with PARTITION LENGTH 60
STREAM = "CREATE STREAM M (ts TIMESTAMP, k STRING, v INT) TIMESTAMP ts PARTITION LENGTH 60"
# Which UPDATE computed a part shows in its rows: the general one counts, the other says 'unique'.
COUNTS = """
CREATE VIEW Counts AS
INITIALIZE Counts[i] AS SELECT k, count(*) AS n, 'initialize' AS plan FROM M[i] GROUP BY k
UPDATE Counts[j] AS SELECT k, count(*) AS n, 'general' AS plan FROM M[j] GROUP BY k
UPDATE Counts[j] WHEN M[j] IS UNIQUE (K) AS SELECT k, 1 AS n, 'unique' AS plan FROM M[j]
"""


def rows(minute: int, *keys: str | None) -> pd.DataFrame:
    return pd.DataFrame({"ts": [T0 + pd.Timedelta(minutes=minute, seconds=s) for s in range(len(keys))],
                         "k": list(keys), "v": list(range(len(keys)))})


def plans(warehouse) -> dict[int, set]:
    """Minute -> the plan column's values in Counts' part."""
    stored = warehouse.execute("SELECT PART_TIMESTAMP AS at, plan FROM Counts")
    return {int((at - T0).total_seconds()) // 60: set(group["plan"]) for at, group in stored.groupby("at")}


def test_the_unique_update_runs_exactly_where_ingest_found_no_repeated_key(make_warehouse):
    warehouse = make_warehouse()
    warehouse.execute(STREAM + ";" + COUNTS)
    for minute, keys in enumerate([("a", "a"), ("a", "b"), ("a", "a", "b"), (None, None), ("c",), (None, "c")]):
        warehouse.ingest("M", rows(minute, *keys))
    assert plans(warehouse) == {0: {"initialize"}, 1: {"unique"}, 2: {"general"}, 3: {"general"}, 4: {"unique"},
                                5: {"unique"}}
    hows = {s - FIRST: meta.how for s, meta in warehouse.catalog.state("Counts").parts.items()}
    assert hows == {0: "initialize", 1: "update when unique", 2: "update", 3: "update", 4: "update when unique",
                    5: "update when unique"}
    facts = {s - FIRST: meta.unique for s, meta in warehouse.catalog.state("M").parts.items()}
    assert facts == {0: (), 1: (("k",),), 2: (), 3: (), 4: (("k",),), 5: (("k",),)}   # 0, 2, 3: a key twice (NULL too)
    reopened = make_warehouse()
    assert reopened.catalog.state("M").parts[FIRST + 5].unique == (("k",),)


def test_a_declared_unique_stream_needs_no_check_and_always_qualifies(make_warehouse):
    warehouse = make_warehouse()
    warehouse.execute(STREAM + " UNIQUE (k) PER PART;" + COUNTS)
    assert warehouse.maintainer.unique_key_sets(warehouse.catalog.get("M")) == []
    for minute in range(3):
        warehouse.ingest("M", rows(minute, "a", "b"))
    assert plans(warehouse) == {0: {"initialize"}, 1: {"unique"}, 2: {"unique"}}


def test_late_rows_that_repeat_a_key_send_the_part_back_to_the_general_update(make_warehouse):
    warehouse = make_warehouse()
    warehouse.execute(STREAM + " ALLOWED LATENESS 3 PARTS;" + COUNTS)
    for minute in range(3):
        warehouse.ingest("M", rows(minute, "a", "b"))
    assert plans(warehouse) == {0: {"initialize"}, 1: {"unique"}, 2: {"unique"}}
    warehouse.ingest("M", rows(1, "c"))          # still no key twice: the fact is kept
    assert plans(warehouse)[1] == {"unique"}
    warehouse.ingest("M", rows(1, "a"))          # now a twice: the repair takes the general UPDATE
    assert warehouse.catalog.state("M").parts[FIRST + 1].unique == ()
    stored = warehouse.execute("SELECT k, n, plan FROM Counts WHERE PART_TIMESTAMP = '2015-01-01 10:01:00'")
    assert sorted(stored.itertuples(index=False, name=None)) == [("a", 2, "general"), ("b", 1, "general"),
                                                                  ("c", 1, "general")]


def test_a_view_created_after_the_data_gets_facts_for_new_parts_only(make_warehouse):
    """Old parts were ingested before any view asked: they take the general UPDATE (correct, slower);
    parts ingested after the view exists are checked."""
    warehouse = make_warehouse()
    warehouse.execute(STREAM + "; SET MAINTENANCE MANUAL")
    for minute in range(3):
        warehouse.ingest("M", rows(minute, "a", "b"))
    warehouse.execute(COUNTS)
    warehouse.maintainer.range_steps = False
    warehouse.execute("STEP Counts 3")
    warehouse.ingest("M", rows(3, "a", "b"))
    warehouse.execute("STEP Counts 1")
    assert plans(warehouse) == {0: {"initialize"}, 1: {"general"}, 2: {"general"}, 3: {"unique"}}


def test_explain_names_the_update_each_recent_part_got(make_warehouse):
    warehouse = make_warehouse()
    warehouse.execute(STREAM + ";" + COUNTS)
    for minute, keys in enumerate([("a",), ("a", "b"), ("a", "a")]):
        warehouse.ingest("M", rows(minute, *keys))
    detail = warehouse.run("EXPLAIN VIEW Counts")[0].detail
    assert ("Counts has two UPDATE clauses: UPDATE WHEN M[j] IS UNIQUE (k) for the parts where ingest found no "
            "two rows with the same (k)") in detail
    assert ("Its newest parts: 2015-01-01 10:00:00 INITIALIZE; 2015-01-01 10:01:00 UPDATE WHEN UNIQUE; "
            "2015-01-01 10:02:00 UPDATE.") in detail


@pytest.mark.parametrize("clause, message, at", [
    ("UPDATE Counts[j] WHEN Other[j] IS UNIQUE (k) AS SELECT k, 1 AS n FROM M[j]",
     "IS UNIQUE is known for stream parts only (ingest checks them); Other is a view", "Other[j]"),
    ("UPDATE Counts[j] WHEN M[j] IS UNIQUE (w) AS SELECT k, 1 AS n FROM M[j]",
     "IS UNIQUE names 'w', which is not a column of M (ts, k, v)", "w)"),
    ("UPDATE Counts[j] WHEN Counts[j-1] IS UNIQUE (k) AS SELECT k, 1 AS n FROM M[j]",
     "IS UNIQUE is known for stream parts only (ingest checks them); Counts is this view", "Counts[j-1]"),
    ("UPDATE Counts[j] WHEN M[j] IS UNIQUE k AS SELECT k, 1 AS n FROM M[j]", "expected (", "k AS"),
])
def test_a_bad_guard_is_refused_at_its_position(make_warehouse, clause, message, at):
    warehouse = make_warehouse()
    warehouse.execute(STREAM + "; CREATE VIEW Other AS INITIALIZE Other[i] AS SELECT * FROM M[i] "
                               "UPDATE Other[j] AS SELECT * FROM M[j]")
    text = ("CREATE VIEW Counts AS INITIALIZE Counts[i] AS SELECT k, count(*) AS n FROM M[i] GROUP BY k "
            "UPDATE Counts[j] AS SELECT k, count(*) AS n FROM M[j] GROUP BY k " + clause)
    with pytest.raises(ViewDFError) as raised:
        warehouse.execute(text)
    assert message in str(raised.value)
    assert raised.value.position == text.index(at)
    assert warehouse.catalog.get("Counts") is None


def test_the_language_guide_example_keeps_the_latest_value_per_key(make_warehouse):
    """docs/language.md's Latest view, run as written, against pandas: every part holds each key's value
    at its newest row so far; parts without a repeated key took the guarded UPDATE."""
    guide = (Path(__file__).parent.parent / "docs" / "language.md").read_text()
    example = re.search(r"```sql\n(CREATE VIEW Latest AS.*?)```", guide, re.S).group(1)
    warehouse = make_warehouse()
    warehouse.execute("CREATE STREAM S (ts TIMESTAMP, k STRING, v INT) TIMESTAMP ts PARTITION LENGTH 60;" + example)
    batches = [[("a", 1), ("b", 2)], [("a", 3), ("a", 4)], [("c", 5)], [("b", 6), ("c", 7), ("b", 8)], [("a", 9)]]
    frames = [pd.DataFrame({"ts": [T0 + pd.Timedelta(minutes=m, seconds=s) for s in range(len(b))],
                            "k": [k for k, _ in b], "v": [v for _, v in b]}) for m, b in enumerate(batches)]
    for frame in frames:
        warehouse.ingest("S", frame)
    stored = warehouse.execute("SELECT PART_TIMESTAMP AS at, k, v FROM Latest")
    for minute in range(len(frames)):
        history = pd.concat(frames[:minute + 1]).sort_values("ts")
        want = sorted(history.groupby("k")["v"].last().items())
        got = sorted(stored[stored["at"] == T0 + pd.Timedelta(minutes=minute)][["k", "v"]]
                     .itertuples(index=False, name=None))
        assert got == want, minute
    hows = [warehouse.catalog.state("Latest").parts[FIRST + m].how for m in range(len(frames))]
    assert hows == ["initialize", "update", "update when unique", "update", "update when unique"]


def test_two_views_asking_different_columns_get_a_fact_each(make_warehouse):
    """Two guards over one stream (columns named like the check's own: s, k, h): one job finds, per part,
    which of the two column sets repeats, and each view takes the UPDATE its own set allows."""
    warehouse = make_warehouse()
    warehouse.execute("CREATE STREAM N (ts TIMESTAMP, s STRING, h INT) TIMESTAMP ts PARTITION LENGTH 60")
    for name, columns in (("ByS", "s"), ("BySH", "s, h")):
        warehouse.execute(f"""CREATE VIEW {name} AS
            INITIALIZE {name}[i] AS SELECT 'initialize' AS plan FROM N[i]
            UPDATE {name}[j] AS SELECT 'general' AS plan FROM N[j]
            UPDATE {name}[j] WHEN N[j] IS UNIQUE ({columns}) AS SELECT 'unique' AS plan FROM N[j]""")
    assert warehouse.maintainer.unique_key_sets(warehouse.catalog.get("N")) == [("s",), ("h", "s")]
    batches = [[("a", 1)], [("a", 1), ("b", 1)], [("a", 1), ("a", 2)], [("a", 1), ("a", 1)]]
    for minute, batch in enumerate(batches):
        warehouse.ingest("N", pd.DataFrame({"ts": [T0 + pd.Timedelta(minutes=minute, seconds=s) for s in range(len(batch))],
                                            "s": [s for s, _ in batch], "h": [h for _, h in batch]}))
    facts = [warehouse.catalog.state("N").parts[FIRST + m].unique for m in range(1, 4)]
    assert facts == [(("s",), ("h", "s")), (("h", "s"),), ()]
    for name, want in (("ByS", ["unique", "general", "general"]), ("BySH", ["unique", "unique", "general"])):
        stored = warehouse.execute(f"SELECT DISTINCT PART_TIMESTAMP AS at, plan FROM {name}")
        assert [set(stored[stored["at"] == T0 + pd.Timedelta(minutes=m)]["plan"]) for m in range(1, 4)] == \
            [{p} for p in want], name
