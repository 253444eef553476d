"""UPDATE V[j] WHEN X[j] IS UNIQUE (..) AS ...: the maintainer runs that clause for the stream parts where no
two rows share the columns, as the steps' own Spark jobs find and record per part (issues 22 and 30): it expects
a part nobody checked to qualify unless the part before did not, and a part that turns out not to is computed
again by the general UPDATE."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from oracles import data_folders

from viewdf_magic.catalog.model import folder_of
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


def test_the_unique_update_keeps_exactly_the_parts_without_a_repeated_key(make_warehouse):
    warehouse = make_warehouse()
    warehouse.execute(STREAM + ";" + COUNTS)
    for minute, keys in enumerate([("a", "a"), ("a", "b"), ("a", "a", "b"), (None, None), ("c",), (None, "c")]):
        warehouse.ingest("M", rows(minute, *keys))
    assert plans(warehouse) == {0: {"initialize"}, 1: {"unique"}, 2: {"general"}, 3: {"general"}, 4: {"unique"},
                                5: {"unique"}}
    hows = {s - FIRST: meta.how for s, meta in warehouse.catalog.state("Counts").parts.items()}
    assert hows == {0: "initialize", 1: "update when unique", 2: "update", 3: "update", 4: "update when unique",
                    5: "update when unique"}
    # 0: the INITIALIZE checks nothing; 2 and 3: a key twice (NULL too); 4: one row, nothing to check
    facts = {s - FIRST: (meta.unique, meta.repeated) for s, meta in warehouse.catalog.state("M").parts.items()}
    assert facts == {0: ((), ()), 1: ((("k",),), ()), 2: ((), (("k",),)), 3: ((), (("k",),)), 4: ((), ()),
                     5: ((("k",),), ())}
    reopened = make_warehouse()
    assert reopened.catalog.state("M").parts[FIRST + 5].unique == (("k",),)
    assert reopened.catalog.state("M").parts[FIRST + 3].repeated == (("k",),)


def test_a_part_after_a_repeating_one_takes_the_general_update_and_records_its_fact(make_warehouse):
    """Part 2 repeats a key, so part 3 is expected to and takes the general UPDATE, whose job finds it does
    not: part 4 takes the guarded one again. No part runs two jobs for the step but part 2 (checked, then
    recomputed)."""
    warehouse = make_warehouse()
    warehouse.execute(STREAM + ";" + COUNTS)
    for minute, keys in enumerate([("a", "b"), ("a", "b"), ("a", "a"), ("a", "b"), ("a", "b")]):
        warehouse.ingest("M", rows(minute, *keys))
    assert plans(warehouse) == {0: {"initialize"}, 1: {"unique"}, 2: {"general"}, 3: {"general"}, 4: {"unique"}}
    facts = {s - FIRST: (meta.unique, meta.repeated) for s, meta in warehouse.catalog.state("M").parts.items()}
    assert facts == {0: ((), ()), 1: ((("k",),), ()), 2: ((), (("k",),)), 3: ((("k",),), ()), 4: ((("k",),), ())}
    # part 2's report says why its guarded attempt was discarded; the others had none
    reports = {r.subscript - FIRST: r for r in warehouse.maintainer.history if r.view == "Counts"}
    assert {m: r.discarded for m, r in reports.items()} == {0: "", 1: "", 2: f"M[{FIRST + 2}] repeats (k)", 3: "",
                                                           4: ""}
    assert reports[2].title.endswith(f", after a discarded UPDATE WHEN UNIQUE (M[{FIRST + 2}] repeats (k))")
    counts = warehouse.execute("SELECT PART_TIMESTAMP AS at, k, n FROM Counts")
    assert sorted((int((at - T0).total_seconds()) // 60, k, n) for at, k, n in counts.itertuples(index=False)) == \
        [(0, "a", 1), (0, "b", 1), (1, "a", 1), (1, "b", 1), (2, "a", 2), (3, "a", 1), (3, "b", 1), (4, "a", 1),
         (4, "b", 1)]


def test_a_declared_unique_stream_needs_no_check_and_always_qualifies(make_warehouse):
    warehouse = make_warehouse()
    warehouse.execute(STREAM + " UNIQUE (k) PER PART;" + COUNTS)
    for minute in range(3):
        warehouse.ingest("M", rows(minute, "a", "b"))
    assert plans(warehouse) == {0: {"initialize"}, 1: {"unique"}, 2: {"unique"}}
    assert all(not meta.unique and not meta.repeated for meta in warehouse.catalog.state("M").parts.values())


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
    assert warehouse.catalog.state("M").parts[FIRST + 1].repeated == (("k",),)
    stored = warehouse.execute("SELECT k, n, plan FROM Counts WHERE PART_TIMESTAMP = '2015-01-01 10:01:00'")
    assert sorted(stored.itertuples(index=False, name=None)) == [("a", 2, "general"), ("b", 1, "general"),
                                                                  ("c", 1, "general")]


def test_a_view_created_after_the_data_checks_the_old_parts_too(make_warehouse):
    """Parts ingested before any view asked are checked by the steps that read them, as new ones are."""
    warehouse = make_warehouse()
    warehouse.execute(STREAM + "; SET MAINTENANCE MANUAL")
    for minute in range(3):
        warehouse.ingest("M", rows(minute, "a", "b"))
    warehouse.execute(COUNTS)
    warehouse.maintainer.range_steps = False
    warehouse.execute("STEP Counts 3")
    warehouse.ingest("M", rows(3, "a", "b"))
    warehouse.execute("STEP Counts 1")
    assert plans(warehouse) == {0: {"initialize"}, 1: {"unique"}, 2: {"unique"}, 3: {"unique"}}


def test_explain_names_the_update_each_recent_part_got(make_warehouse):
    warehouse = make_warehouse()
    warehouse.execute(STREAM + ";" + COUNTS)
    for minute, keys in enumerate([("a",), ("a", "b"), ("a", "a")]):
        warehouse.ingest("M", rows(minute, *keys))
    detail = warehouse.run("EXPLAIN VIEW Counts")[0].detail
    assert ("Counts has two UPDATE clauses: UPDATE WHEN M[j] IS UNIQUE (k) for the parts where no two rows have "
            "the same (k)") in detail
    assert ("the guarded one runs unless the part before repeated them, and a part where they repeat after all is "
            "computed again by the general one") in detail
    assert ("Its newest parts: 2015-01-01 10:00:00 INITIALIZE; 2015-01-01 10:01:00 UPDATE WHEN UNIQUE; "
            "2015-01-01 10:02:00 UPDATE.") in detail


def test_explain_shows_the_check_in_the_plans_of_a_step_that_runs_it(make_warehouse):
    """The next step at a part nobody checked counts its keys in the same job, and EXPLAIN VIEW's plans show that
    branch; the newest stored part, computed again, has been checked and shows none."""
    warehouse = make_warehouse()
    warehouse.execute(STREAM + ";" + COUNTS)
    warehouse.ingest("M", rows(0, "a", "b"))
    warehouse.set_maintenance("manual")
    warehouse.ingest("M", rows(1, "a", "b"))

    def plans_of(result) -> str:
        return next(text for title, text in result.sections if title.startswith("Spark plans of"))

    explained = warehouse.run("EXPLAIN VIEW Counts")[0]
    assert "the next part of Counts" in next(title for title, _ in explained.sections if title.startswith("Spark plans"))
    assert plans_of(explained).count("xxhash64(k") >= 1
    warehouse.execute("STEP Counts 1")
    explained = warehouse.run("EXPLAIN VIEW Counts")[0]
    assert "the newest stored part" in next(title for title, _ in explained.sections if title.startswith("Spark plans"))
    assert "xxhash64" not in plans_of(explained)


@pytest.mark.parametrize("clause, message, at", [
    ("UPDATE Counts[j] WHEN Other[j] IS UNIQUE (k) AS SELECT k, 1 AS n FROM M[j]",
     "IS UNIQUE is known for stream parts only; Other is a view", "Other[j]"),
    ("UPDATE Counts[j] WHEN M[j] IS UNIQUE (w) AS SELECT k, 1 AS n FROM M[j]",
     "IS UNIQUE names 'w', which is not a column of M (ts, k, v)", "w)"),
    ("UPDATE Counts[j] WHEN Counts[j-1] IS UNIQUE (k) AS SELECT k, 1 AS n FROM M[j]",
     "IS UNIQUE is known for stream parts only; Counts is this view", "Counts[j-1]"),
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
    """Two guards over one stream: each view's steps find, per part, whether their own column set repeats,
    and each view takes the UPDATE its own set allows."""
    warehouse = make_warehouse()
    warehouse.execute("CREATE STREAM N (ts TIMESTAMP, s STRING, h INT) TIMESTAMP ts PARTITION LENGTH 60")
    for name, columns in (("ByS", "s"), ("BySH", "s, h")):
        warehouse.execute(f"""CREATE VIEW {name} AS
            INITIALIZE {name}[i] AS SELECT 'initialize' AS plan FROM N[i]
            UPDATE {name}[j] AS SELECT 'general' AS plan FROM N[j]
            UPDATE {name}[j] WHEN N[j] IS UNIQUE ({columns}) AS SELECT 'unique' AS plan FROM N[j]""")
    batches = [[("a", 1)], [("a", 1), ("b", 1)], [("a", 1), ("a", 2)], [("a", 1), ("a", 1)]]
    for minute, batch in enumerate(batches):
        warehouse.ingest("N", pd.DataFrame({"ts": [T0 + pd.Timedelta(minutes=minute, seconds=s) for s in range(len(batch))],
                                            "s": [s for s, _ in batch], "h": [h for _, h in batch]}))
    stream = warehouse.catalog.get("N")
    known = [(stream.repeats_in(meta, ("s",)), stream.repeats_in(meta, ("s", "h"))) for meta in
             [warehouse.catalog.state("N").parts[FIRST + m] for m in range(1, 4)]]
    assert known == [(False, False), (True, False), (True, True)]
    for name, want in (("ByS", ["unique", "general", "general"]), ("BySH", ["unique", "unique", "general"])):
        stored = warehouse.execute(f"SELECT DISTINCT PART_TIMESTAMP AS at, plan FROM {name}")
        assert [set(stored[stored["at"] == T0 + pd.Timedelta(minutes=m)]["plan"]) for m in range(1, 4)] == \
            [{p} for p in want], name


def test_a_guarded_update_that_stops_reading_early_still_has_the_whole_part_checked(make_warehouse):
    """A LIMIT lets Spark stop reading the part early for the query itself; the check counts every row of the
    part all the same, finds the repeated key, and the part is computed again by the general UPDATE."""
    warehouse = make_warehouse()
    warehouse.execute(STREAM + """;
        CREATE VIEW Firsts AS
        INITIALIZE Firsts[i] AS SELECT k, count(*) AS n, 'initialize' AS plan FROM M[i] GROUP BY k
        UPDATE Firsts[j] AS SELECT k, count(*) AS n, 'general' AS plan FROM M[j] GROUP BY k
        UPDATE Firsts[j] WHEN M[j] IS UNIQUE (k) AS SELECT k, 1 AS n, 'unique' AS plan FROM M[j] LIMIT 1""")
    keys = [f"k{n:02}" for n in range(30)]
    warehouse.ingest("M", rows(0, "a"))
    warehouse.ingest("M", rows(1, *keys, "k07"))
    stored = warehouse.execute("SELECT k, n, plan FROM Firsts WHERE PART_TIMESTAMP = '2015-01-01 10:01:00'")
    assert sorted(stored.itertuples(index=False, name=None)) == \
        sorted((k, 2 if k == "k07" else 1, "general") for k in keys)
    assert warehouse.catalog.state("M").parts[FIRST + 1].repeated == (("k",),)


def test_a_guard_whose_update_reads_another_part_is_checked_all_the_same(make_warehouse):
    """The check reads the guard's part itself, whatever the guarded UPDATE reads."""
    warehouse = make_warehouse()
    warehouse.execute(STREAM + """;
        CREATE VIEW Counts AS
        INITIALIZE Counts[i] AS SELECT k, count(*) AS n, 'initialize' AS plan FROM M[i] GROUP BY k
        UPDATE Counts[j] AS SELECT k, count(*) AS n, 'general' AS plan FROM M[j] GROUP BY k
        UPDATE Counts[j] WHEN M[j] IS UNIQUE (k) AS SELECT k, 1 AS n, 'unique' AS plan FROM M[j-1]""")
    for minute, keys in enumerate([("a", "b"), ("c", "d"), ("a", "a")]):
        warehouse.ingest("M", rows(minute, *keys))
    assert plans(warehouse) == {0: {"initialize"}, 1: {"unique"}, 2: {"general"}}
    facts = {s - FIRST: (meta.unique, meta.repeated) for s, meta in warehouse.catalog.state("M").parts.items()}
    assert facts == {0: ((), ()), 1: ((("k",),), ()), 2: ((), (("k",),))}


def test_a_guarded_part_whose_check_brought_no_count_is_computed_by_the_general_update(make_warehouse, monkeypatch):
    """When the step's job brings back no count of the part (its metrics lost, or not every row counted:
    ``repeats_found`` is None), nothing is known: the guarded part is discarded, the general UPDATE computes it,
    and no fact is recorded, so the next step checks the part's successor as unchecked again."""
    import viewdf_magic.maintainer.writer as writer_module

    warehouse = make_warehouse()
    warehouse.execute(STREAM + ";" + COUNTS)
    warehouse.ingest("M", rows(0, "a", "b"))
    monkeypatch.setattr(writer_module, "repeats_found", lambda observed, rows: None)
    warehouse.ingest("M", rows(1, "a", "b"))
    monkeypatch.undo()
    warehouse.ingest("M", rows(2, "a", "b"))
    assert plans(warehouse) == {0: {"initialize"}, 1: {"general"}, 2: {"unique"}}
    hows = {s - FIRST: meta.how for s, meta in warehouse.catalog.state("Counts").parts.items()}
    assert hows == {0: "initialize", 1: "update", 2: "update when unique"}
    facts = {s - FIRST: (meta.unique, meta.repeated) for s, meta in warehouse.catalog.state("M").parts.items()}
    assert facts == {0: ((), ()), 1: ((), ()), 2: ((("k",),), ())}
    reports = {r.subscript - FIRST: r.discarded for r in warehouse.maintainer.history if r.view == "Counts"}
    assert reports == {0: "", 1: "its job did not count the whole guard part", 2: ""}
    # the discarded attempt's folder is gone: every folder of Counts is a part's
    key = warehouse.catalog.get("Counts").id
    named = {folder_of(text) for meta in warehouse.catalog.state("Counts").parts.values() for text in meta.folders}
    assert {f for f in data_folders(warehouse) if f.startswith(f"data/{key}/")} == named
