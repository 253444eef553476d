"""Range steps (issue 17): a run of ready parts computed in one Spark job must store exactly the parts
that one-part-at-a-time maintenance stores, and refuse the query shapes whose meaning would change."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace

import duckdb
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_pattern_properties import STREAM as PATTERN_STREAM
from test_pattern_properties import patterns, streams

from viewdf_magic.language.lifting import lift
from viewdf_magic.language.statements import ClauseKind

INPUTS = frozenset({"a", "b"})
START = pd.Timestamp("2015-01-01 10:00:00")
MINUTES = 10
_names = itertools.count()


@pytest.mark.parametrize("sql, reason", [
    ("SELECT count(*) FROM a", "it aggregates without GROUP BY, which returns a row even for an empty part"),
    ("SELECT x FROM a HAVING x > 1", "it aggregates without GROUP BY, which returns a row even for an empty part"),
    ("SELECT x FROM a ORDER BY x", "it has ORDER BY, which orders all parts' rows together"),
    ("SELECT x FROM a LIMIT 3", "it has LIMIT or OFFSET, which would cut across parts"),
    ("SELECT x FROM (SELECT x FROM a ORDER BY x LIMIT 2) t", "it has ORDER BY, which orders all parts' rows together"),
    ("SELECT x FROM a WHERE x IN (SELECT x FROM b)", "a subquery in an expression reads parts"),
    ("SELECT x, rand() AS r FROM a", "it calls RAND(), which is nondeterministic"),
    ("SELECT x, shuffle(array(x)) AS r FROM a", "it calls shuffle(), which is nondeterministic"),
    ("SELECT my_udf(x) FROM a", "it calls my_udf(), which is not known to be deterministic (a user-defined function?)"),
    ("SELECT k, count(*) FROM a GROUP BY ROLLUP (k)", "it uses GROUPING SETS, ROLLUP or CUBE"),
    ("SELECT x FROM a UNION ALL SELECT x FROM dims", "one side of its UNION reads no part"),
    ("SELECT x AS __vdf_j FROM a", "it uses the name __vdf_j, which range steps reserve"),
    ("SELECT x FROM dims", "its result does not depend on any part it reads"),
])
def test_shapes_that_keep_per_part_steps(sql, reason):
    assert lift(sql, INPUTS).reason == reason and lift(sql, INPUTS).sql is None


@pytest.mark.parametrize("sql, lifted, joined", [
    ("SELECT a.k, p.x FROM a JOIN p ON a.k = p.k",
     "SELECT a.k, p.x, a.__vdf_j AS __vdf_part FROM a JOIN p ON (a.k = p.k) AND p.__vdf_j <= a.__vdf_j", {"p"}),
    ("SELECT p.k FROM p JOIN a ON a.k = p.k",          # before the relation it meets: every join is inner
     "SELECT p.k, a.__vdf_j AS __vdf_part FROM p JOIN a ON (a.k = p.k) AND p.__vdf_j <= a.__vdf_j", {"p"}),
    ("SELECT a.k FROM a LEFT ANTI JOIN p ON a.k = p.k",
     "SELECT a.k, a.__vdf_j AS __vdf_part FROM a LEFT ANTI JOIN p ON (a.k = p.k) AND p.__vdf_j <= a.__vdf_j", {"p"}),
    ("SELECT a.k, p.x FROM a LEFT JOIN p ON a.k = p.k",
     "SELECT a.k, p.x, a.__vdf_j AS __vdf_part FROM a LEFT JOIN p ON (a.k = p.k) AND p.__vdf_j <= a.__vdf_j", {"p"}),
    # where its rows would be output without a part to meet, every step needs its own copy of them
    ("SELECT a.k, p.x FROM a RIGHT JOIN p ON a.k = p.k",
     "SELECT a.k, p.x, COALESCE(a.__vdf_j, p.__vdf_j) AS __vdf_part FROM a RIGHT JOIN p ON (a.k = p.k) "
     "AND a.__vdf_j = p.__vdf_j", set()),
    ("SELECT p.k FROM p LEFT JOIN a ON a.k = p.k",
     "SELECT p.k, COALESCE(p.__vdf_j, a.__vdf_j) AS __vdf_part FROM p LEFT JOIN a ON (a.k = p.k) "
     "AND p.__vdf_j = a.__vdf_j", set()),
    ("SELECT a.k FROM a JOIN p ON a.k = p.k UNION ALL SELECT k FROM p",     # one reading repeats: both do
     "SELECT a.k, COALESCE(a.__vdf_j, p.__vdf_j) AS __vdf_part FROM a JOIN p ON (a.k = p.k) AND a.__vdf_j = p.__vdf_j "
     "UNION ALL SELECT k, p.__vdf_j AS __vdf_part FROM p", set()),
])
def test_every_part_so_far_is_joined_on_its_first_step_where_the_join_allows(sql, lifted, joined):
    found = lift(sql, frozenset({"a", "p"}), frozenset({"p"}))
    assert (found.sql, set(found.joined)) == (lifted, joined)


def test_joins_and_groups_gain_the_part():
    lifted = lift("SELECT a.k, count(*) AS n FROM a JOIN b ON a.k = b.k GROUP BY a.k", INPUTS).sql
    assert lifted == ("SELECT a.k, COUNT(*) AS n, COALESCE(a.__vdf_j, b.__vdf_j) AS __vdf_part FROM a "
                      "JOIN b ON (a.k = b.k) AND a.__vdf_j = b.__vdf_j GROUP BY a.k, COALESCE(a.__vdf_j, b.__vdf_j)")
    windowed = lift("SELECT k, sum(x) OVER (PARTITION BY k) AS s FROM a", INPUTS).sql
    assert windowed == "SELECT k, SUM(x) OVER (PARTITION BY k, a.__vdf_j) AS s, a.__vdf_j AS __vdf_part FROM a"


def random_rows(seed: int) -> pd.DataFrame:
    """A stream of MINUTES one-minute parts with a few keys, ties, NULLs and empty minutes."""
    rng = random.Random(seed)
    rows = []
    for minute in range(MINUTES):
        if minute in (4, 5, 7):                       # empty parts inside the run
            continue
        for _ in range(rng.randint(1, 6)):
            rows.append((START + pd.Timedelta(minutes=minute, seconds=rng.randint(0, 59)),
                         rng.choice(["p", "q", "r"]), rng.choice([None, -3, 0, 1, 2, 7, 11])))
    return pd.DataFrame(rows, columns=["ts", "k", "x"]).astype({"x": "Int64"})


SCHEMA = ("CREATE STREAM S (ts TIMESTAMP, k STRING, x INT) TIMESTAMP ts PARTITION LENGTH 60; "
          "CREATE TABLE Names (k STRING, name STRING); "
          "INSERT INTO Names VALUES ('p', 'Pat'), ('q', 'Quinn')")
VIEWS = {
    "Filtered": "SELECT k, x FROM S[j] WHERE x > 0",
    "Star": "SELECT * FROM S[j] WHERE x IS NULL OR x < 2",
    "Recent": "SELECT k, count(*) AS n, sum(x) AS total, max(x) AS peak FROM S[j-2 .. j] GROUP BY k",
    "Pairs": "SELECT a.k, count(*) AS n FROM Filtered[j] AS a JOIN S[j-1 .. j] AS b ON a.k = b.k GROUP BY a.k",
    "Outer": ("SELECT coalesce(a.k, b.k) AS k, a.x AS now, b.x AS before FROM S[j] AS a "
              "FULL OUTER JOIN S[j-1] AS b ON a.k = b.k AND a.x = b.x"),
    "Both": "SELECT k, x FROM S[j] UNION ALL SELECT k, x FROM S[j-3]",
    "Ranked": ("WITH t AS (SELECT k, x FROM S[j-1 .. j] WHERE x IS NOT NULL) "
               "SELECT DISTINCT k, max(x) OVER (PARTITION BY k) AS top FROM t"),
    "Named": "SELECT n.name, s.x FROM S[j] AS s JOIN Names AS n ON s.k = n.k",
    "Counted": "SELECT count(*) AS n FROM S[j]",      # not lifted: one row even for an empty part
    # every part so far (each row repeated for every later step of the run)
    "Seen": "SELECT k, count(*) AS n, sum(x) AS total FROM S[.. j] GROUP BY k",
    "Repeats": "SELECT a.k, a.x, count(*) AS before FROM S[j] AS a JOIN S[.. j-1] AS b ON a.k = b.k AND a.x = b.x "
               "GROUP BY a.k, a.x",
}
# every part so far, read once per run and joined on each row's first step: in FROM before the part it meets
# (Nexmark q3's shape), as the right side of an anti join and of a left outer join (Repeats: of an inner join)
HISTORY_JOINS = {
    "Earlier": "SELECT b.k, b.x AS before, a.x AS now FROM S[.. j-1] AS b JOIN S[j] AS a ON a.k = b.k AND b.x < a.x",
    "Novel": "SELECT a.k, a.x FROM S[j] AS a LEFT ANTI JOIN S[.. j-1] AS b ON a.k = b.k AND a.x <=> b.x",
    "Beaten": "SELECT a.k, a.x, b.x AS higher FROM S[j] AS a LEFT JOIN S[.. j] AS b ON a.k = b.k AND b.x > a.x",
}
# views with longer parts than S's, reading S's parts k*j+a .. k*j+b: their partition length (seconds)
LONGER = {
    "Threes": ("SELECT k, count(*) AS n, max(x) AS peak FROM S[3*j .. 3*j+2] GROUP BY k", 180),   # tumbling
    "Firsts": ("SELECT k, x FROM S[3*j] WHERE x IS NOT NULL", 180),                              # a gap of two
    "Overlaps": ("SELECT k, count(*) AS n FROM S[2*j-2 .. 2*j+1] GROUP BY k", 120),            # two steps a part
}


def create_views(warehouse, views: dict[str, str] = VIEWS) -> None:
    warehouse.run(SCHEMA)
    for name, query in views.items():
        warehouse.run(f"CREATE VIEW {name} AS INITIALIZE {name}[j] AS {query} UPDATE {name}[j] AS {query} "
                      f"RECOMPUTE {name}[j] AS {query}")
    for name, (query, length) in LONGER.items():
        warehouse.run(f"CREATE VIEW {name} AS INITIALIZE {name}[j] AS {query} UPDATE {name}[j] AS {query} "
                      f"PARTITION LENGTH {length}")
    warehouse.run("CREATE VIEW Win AS SELECT k, sum(x) AS total, avg(x) AS mean, count(*) AS n "
                  "FROM S [WINDOW 3 MINUTES] GROUP BY k")


def stored_parts(warehouse, name: str) -> dict[int, tuple]:
    """Each part's rows (sorted), row count, content hash and lineage."""
    definition = warehouse.catalog.get(name)
    state = warehouse.catalog.state(name)
    frame = warehouse.store.read_parts(definition, state, sorted(state.parts)).toPandas()
    frame = frame.astype(object).where(frame.notna(), None)
    result = {}
    for subscript, meta in state.parts.items():
        stamp = pd.Timestamp(subscript * definition.length, unit="s")
        rows = frame[frame["PART_TIMESTAMP"] == stamp].drop(columns="PART_TIMESTAMP")
        result[subscript] = (sorted((tuple(_plain(v) for v in row) for row in rows.values.tolist()), key=repr),
                             meta.rows, meta.checksum, meta.lineage)
    return result


def _plain(value):
    """Arrays and structs (numpy arrays, dicts from Arrow) as tuples, so rows compare with ==."""
    if isinstance(value, dict):
        return tuple((k, _plain(v)) for k, v in value.items())
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)) and getattr(value, "ndim", 0):
        return tuple(_plain(v) for v in value.tolist())
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    return value


@pytest.mark.parametrize("seed", [3])
def test_range_steps_store_the_parts_that_per_part_steps_store(make_warehouse, seed):
    rows = random_rows(seed)
    stores = {}
    for ranged in (False, True):
        warehouse = make_warehouse(f"ranged-{ranged}")
        warehouse.maintainer.range_steps = ranged
        create_views(warehouse)
        warehouse.set_maintenance("manual")     # AUTO would write Filtered and Win__pre with the batch
        warehouse.ingest("S", rows)
        warehouse.step(n=None)
        spans = {report.view: report.span for report in warehouse.history() if report.span}
        stores[ranged] = {name: stored_parts(warehouse, name) for name in [*VIEWS, *LONGER, "Win", "Win__pre"]}
        if ranged:      # every liftable view computed its parts in one range step, from the first part: its
            # INITIALIZE is the query its runs compute (every view here is written with the same text twice, and
            # so are the window's Win and Win__pre; Win__sum's INITIALIZE is its RECOMPUTE, which its runs lift)
            maintainer, catalog = warehouse.engine.maintainer, warehouse.engine.catalog
            names = [name for name in [*VIEWS, *LONGER, "Win", "Win__pre", "Win__sum"] if name != "Counted"]
            assert all(maintainer.range_plan(catalog.get(name)).takes_initialize for name in names)
            assert maintainer.range_plan(catalog.get("Win__sum")).how is ClauseKind.RECOMPUTE
            first, last = rows.ts.min().value // 60_000_000_000, rows.ts.max().value // 60_000_000_000
            longer = {name: (min(stores[False][name]), max(stores[False][name])) for name in LONGER}
            assert all(len(stores[False][name]) >= 3 for name in LONGER)
            assert spans == {name: (first, last) for name in [*VIEWS, "Win", "Win__pre", "Win__sum"]
                             if name != "Counted"} | longer
            assert [meta.how for meta in catalog.state("Win__sum").parts.values()][:2] == \
                [ClauseKind.INITIALIZE, ClauseKind.RECOMPUTE]
            verified = warehouse.run("VERIFY VIEW Win; VERIFY VIEW Recent; VERIFY VIEW Outer")
            assert all(result.table["equal"].all() for result in verified)
    for name in [*VIEWS, *LONGER, "Win", "Win__pre"]:
        assert stores[True][name] == stores[False][name], name


def test_range_steps_equal_an_independent_oracle(warehouse):
    rows = random_rows(5)
    create_views(warehouse)
    warehouse.ingest("S", rows)
    assert_recent_equals_duckdb(warehouse, rows)


def assert_recent_equals_duckdb(warehouse, rows: pd.DataFrame) -> None:
    """DuckDB computes Recent (a 3-part window per key) for every part from the raw rows."""
    first, last = rows.ts.min().value // 60_000_000_000, rows.ts.max().value // 60_000_000_000
    expected = duckdb.sql(f"""
        SELECT j, k, count(*) AS n, sum(x) AS total, max(x) AS peak
        FROM range({first}, {last + 1}) AS parts(j)
        JOIN (SELECT *, epoch(ts)::BIGINT // 60 AS part FROM rows) AS r ON r.part BETWEEN j - 2 AND j
        GROUP BY j, k""").df()
    stored = stored_parts(warehouse, "Recent")
    for j in range(first, last + 1):
        mine = expected[expected.j == j]
        want = sorted(((k, int(n), None if pd.isna(t) else int(t), None if pd.isna(p) else int(p))
                       for k, n, t, p in zip(mine.k, mine.n, mine.total, mine.peak)), key=repr)
        assert stored[j][0] == want, j


def test_runs_are_cut_at_the_input_row_budget_and_verify_cuts_its_runs_the_same_way(make_warehouse, monkeypatch):
    """With RANGE_ROWS lowered, each range step of Recent (3 parts of S per part) reads at most that many input
    rows unless it is a single part, and a run ends only where its next part would cross the budget. VERIFY,
    whose runs the same budget cuts, finds every part equal, and every part equals DuckDB's recomputation."""
    import viewdf_magic.maintainer.ranges as ranges_module

    budget = 12
    monkeypatch.setattr(ranges_module, "RANGE_ROWS", budget)
    rows = random_rows(5)
    minute = rows.ts.astype("int64") // 60_000_000_000
    first, last = int(minute.min()), int(minute.max())
    per_minute = minute.value_counts().to_dict()

    def reads(j: int) -> int:            # input rows of Recent's part j: S[j-2 .. j]
        return sum(per_minute.get(m, 0) for m in range(j - 2, j + 1))

    warehouse = make_warehouse()
    warehouse.run(SCHEMA + "; CREATE VIEW Recent AS INITIALIZE Recent[j] AS " + VIEWS["Recent"]
                  + " UPDATE Recent[j] AS " + VIEWS["Recent"] + " RECOMPUTE Recent[j] AS " + VIEWS["Recent"]
                  + "; SET MAINTENANCE MANUAL")
    warehouse.ingest("S", rows)
    warehouse.step(n=None)
    history = [r for r in warehouse.history() if r.view == "Recent"]
    runs = sorted({r.span for r in history if r.span} | {(r.subscript, r.subscript) for r in history if not r.span})
    assert [s for a, b in runs for s in range(a, b + 1)] == list(range(first, last + 1))
    assert any(a < b for a, b in runs) and len(runs) > 2
    for (a, b), following in zip(runs, [*runs[1:], None]):
        taken = sum(reads(j) for j in range(a, b + 1))
        assert a == b or taken <= budget, (a, b)
        if following is not None and a != first:       # the first part is an INITIALIZE, a step of its own
            assert taken + reads(b + 1) > budget, (a, b)
    verified = warehouse.run("VERIFY VIEW Recent")[-1].table
    assert verified["equal"].all() and len(verified) == last - first + 1
    assert_recent_equals_duckdb(warehouse, rows)


def test_a_projections_later_runs_are_not_cut_at_the_input_row_budget(make_warehouse, monkeypatch):
    """With RANGE_ROWS lowered, Filtered (a projection of S[j], whose job holds no rows in memory) takes a first
    run of at most that many input rows (the first run's bound), then every other part in one run."""
    import viewdf_magic.maintainer.ranges as ranges_module

    budget = 12
    monkeypatch.setattr(ranges_module, "RANGE_ROWS", budget)
    monkeypatch.setattr(ranges_module, "RANGE_SECONDS", 1e6)      # the pace does not cut the run here
    rows = random_rows(5)
    minute = rows.ts.astype("int64") // 60_000_000_000
    first, last = int(minute.min()), int(minute.max())
    per_minute = minute.value_counts().to_dict()
    cut, taken = first, per_minute[first]
    while taken + per_minute.get(cut + 1, 0) <= budget:
        cut += 1
        taken += per_minute.get(cut, 0)
    assert first < cut < last - 1
    warehouse = make_warehouse()
    warehouse.run(SCHEMA + "; CREATE VIEW Filtered AS INITIALIZE Filtered[j] AS " + VIEWS["Filtered"]
                  + " UPDATE Filtered[j] AS " + VIEWS["Filtered"] + "; SET MAINTENANCE MANUAL")
    warehouse.ingest("S", rows)
    warehouse.step(n=None)
    spans = sorted({r.span for r in warehouse.history() if r.view == "Filtered"})
    assert spans == [(first, cut), (cut + 1, last)]
    stored = warehouse.execute("SELECT k, x FROM Filtered ORDER BY k, x")
    expected = rows[rows.x > 0].sort_values(["k", "x"])
    assert list(zip(stored.k, stored.x)) == list(zip(expected.k, expected.x))


def test_range_steps_over_every_part_so_far_and_longer_parts_equal_an_independent_oracle(warehouse):
    """DuckDB computes Repeats (each row of S[j] with how often its key and value came before, S[.. j-1]), the
    HISTORY_JOINS views and Overlaps (2-minute parts counting the 4 minutes 2*j-2 .. 2*j+1 per key) from the raw
    rows, which one ingest brings, so all take range steps (the histories read once per run)."""
    rows = random_rows(11)
    create_views(warehouse, VIEWS | HISTORY_JOINS)
    warehouse.ingest("S", rows)
    assert {r.view for r in warehouse.history() if r.span and r.span[0] < r.span[1]} >= \
        {"Repeats", "Overlaps", *HISTORY_JOINS}
    assert all(warehouse.maintainer.range_plan(warehouse.catalog.get(name)).joined
               for name in ("Repeats", *HISTORY_JOINS))
    minutes = "(SELECT *, epoch(ts)::BIGINT // 60 AS m FROM rows)"
    repeats = duckdb.sql(f"""
        SELECT a.m AS j, a.k, a.x, count(*) AS n FROM {minutes} AS a JOIN {minutes} AS b
        ON a.k = b.k AND a.x = b.x AND b.m < a.m GROUP BY ALL""").fetchall()
    novel = duckdb.sql(f"""
        SELECT a.m AS j, a.k, a.x FROM {minutes} AS a WHERE NOT EXISTS (
            SELECT 1 FROM {minutes} AS b WHERE b.k = a.k AND b.x IS NOT DISTINCT FROM a.x AND b.m < a.m)""").fetchall()
    earlier = duckdb.sql(f"""
        SELECT a.m AS j, b.k, b.x, a.x FROM {minutes} AS a JOIN {minutes} AS b
        ON a.k = b.k AND b.x < a.x AND b.m < a.m""").fetchall()
    beaten = duckdb.sql(f"""
        SELECT a.m AS j, a.k, a.x, b.x FROM {minutes} AS a LEFT JOIN {minutes} AS b
        ON a.k = b.k AND b.x > a.x AND b.m <= a.m""").fetchall()
    first, last = min(stored_parts(warehouse, "Overlaps")), max(stored_parts(warehouse, "Overlaps"))
    overlaps = duckdb.sql(f"""
        SELECT j, k, count(*) AS n FROM range({first}, {last + 1}) AS parts(j)
        JOIN {minutes} AS r ON r.m BETWEEN 2 * j - 2 AND 2 * j + 1 GROUP BY ALL""").fetchall()
    for name, expected in (("Repeats", repeats), ("Overlaps", overlaps), ("Novel", novel), ("Earlier", earlier),
                           ("Beaten", beaten)):
        want: dict[int, list] = {}
        for j, *row in expected:
            want.setdefault(j, []).append(tuple(row))
        stored = {j: part[0] for j, part in stored_parts(warehouse, name).items() if part[0]}
        assert stored == {j: sorted(found, key=repr) for j, found in want.items()}, name


def test_late_rows_repair_range_parts_in_range_steps_and_a_reopen_reads_them(make_warehouse):
    rows = random_rows(7)
    warehouse = make_warehouse()
    create_views(warehouse)
    warehouse.ingest("S", rows)
    late = pd.DataFrame({"ts": [START + pd.Timedelta(minutes=4, seconds=5)], "k": ["q"], "x": [5]}).astype({"x": "Int64"})
    warehouse.ingest("S", late)
    # the repair recomputes runs of stale parts in range steps too: Recent's three windows holding minute 4,
    # and every part of Seen (all parts so far) from minute 4 on
    minute = START.value // 60_000_000_000
    spans = {step.view: step.span for step in warehouse.last_repair.steps if step.span}
    assert spans["Recent"] == (minute + 4, minute + 6) and spans["Seen"] == (minute + 4, minute + 9)
    fresh = make_warehouse("fresh")
    create_views(fresh)
    fresh.ingest("S", pd.concat([rows, late], ignore_index=True))
    reopened = make_warehouse()
    for name in [*VIEWS, "Win"]:
        assert {s: p[:2] for s, p in stored_parts(reopened, name).items()} == \
               {s: p[:2] for s, p in stored_parts(fresh, name).items()}, name


def test_explain_view_says_which_plan_a_view_gets(warehouse):
    create_views(warehouse)
    warehouse.ingest("S", random_rows(1))
    recent = warehouse.explain_view("Recent").detail
    assert "Runs of ready parts of Recent are computed in one Spark job each (a range step, lifted from its " \
           "UPDATE query)" in recent
    assert "S[.. j-1] is read once per run, each row joined with the run's parts it counts for." in \
        warehouse.explain_view("Repeats").detail
    counted = warehouse.explain_view("Counted").detail
    assert ("Counted is computed one part per step: its UPDATE query cannot be lifted to many parts: it "
            "aggregates without GROUP BY, which returns a row even for an empty part.") in counted
    running = "\n".join(text for title, text in warehouse.explain_view("Win").sections
                         if title.startswith("Index formulas"))       # a window view's per-subscript account
    assert "Runs of ready parts of Win__sum are computed in one Spark job each (a range step, lifted from its " \
           "RECOMPUTE query" in running



@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(pattern=patterns(), data=streams(), contiguity=st.sampled_from([None, "EVENTS"]))
def test_pattern_range_steps_equal_per_part_steps(make_warehouse, pattern, data, contiguity):
    """A pattern Helper's RANGE clause folds a whole run; its parts and the final view's must be the
    parts that stepping one part at a time stores (the oracle check of the same patterns is in
    test_pattern_properties, which ingests whole streams and so runs range steps)."""
    stores = []
    for ranged in (False, True):
        warehouse = make_warehouse(f"pattern{next(_names)}")
        warehouse.maintainer.range_steps = ranged
        warehouse.run(PATTERN_STREAM)
        warehouse.run(replace(pattern, contiguity=contiguity).sql("V"))
        warehouse.ingest("M", data)
        stores.append({name: stored_parts(warehouse, name) for name in ("V", "V__helper")})
        if ranged and len(warehouse.catalog.state("V").parts) > 2:
            assert {r.view for r in warehouse.history() if r.span} == {"V", "V__helper"}
    assert stores[0] == stores[1]


def test_a_range_clause_step_covers_at_most_range_clause_work(make_warehouse, monkeypatch):
    """A RANGE clause's fold costs up to the square of a run's parts, so a run's input rows x parts is
    capped; lifted views' runs are not, and the capped runs store what per-part steps store."""
    import viewdf_magic.maintainer.maintainer as maintainer_module

    monkeypatch.setattr(maintainer_module, "RANGE_CLAUSE_WORK", 40)
    rows = random_rows(11)
    minute = rows.ts.astype("int64") // 60_000_000_000
    first, last = int(minute.min()), int(minute.max())
    stores = []
    for ranged in (False, True):
        warehouse = make_warehouse(f"capped-{ranged}")
        warehouse.maintainer.range_steps = ranged
        warehouse.run("CREATE STREAM S (ts TIMESTAMP, k STRING, x INT) TIMESTAMP ts PARTITION LENGTH 60; "
                      "CREATE VIEW Up AS SELECT k, a.ts AS since, count(*) AS n FROM S PATTERN (a, b+) "
                      "WHERE b.x > a.x GROUP BY k CONTIGUITY EVENTS; "
                      "CREATE VIEW Kept AS INITIALIZE Kept[j] AS SELECT k, x FROM S[j] "
                      "UPDATE Kept[j] AS SELECT k, x FROM S[j]; "
                      "SET MAINTENANCE MANUAL")      # AUTO would write Kept with the batch
        warehouse.ingest("S", rows)
        warehouse.step(n=None)
        stores.append({name: stored_parts(warehouse, name) for name in ("Up", "Up__helper", "Kept")})
        if ranged:
            history = warehouse.history()
            runs = sorted({r.span for r in history if r.view == "Up__helper" and r.span})
            stepped = {r.subscript for r in history if r.view == "Up__helper" and not r.span}
            assert len(runs) >= 2
            for run_first, run_last in runs:            # the stream's rows alone already count toward the cap
                assert minute.between(run_first, run_last).sum() * (run_last - run_first + 1) <= 40
            covered = {s for a, b in runs for s in range(a, b + 1)} | stepped
            assert covered == set(range(first, last + 1))
            assert {r.span for r in history if r.view == "Kept" and r.span} == {(first, last)}    # INITIALIZE too
    assert stores[0] == stores[1]


@pytest.mark.parametrize("initialize, update, same", [
    ("SELECT x FROM S[i] WHERE x > 1", "SELECT x FROM S[j] WHERE x > 1", True),
    ("SELECT sum(x) AS x FROM S[i-2 .. i] GROUP BY k", "SELECT sum(x) AS x FROM S[j-2 .. j] GROUP BY k", True),
    ("SELECT x FROM S[i] WHERE x > 1", "SELECT x FROM S[j] WHERE x > 2", False),
    ("SELECT x FROM S[i-1]", "SELECT x FROM S[j]", False),
    ("SELECT x FROM S[i]", "SELECT x FROM S[j] UNION ALL SELECT x FROM V[j-1]", False),
    ("SELECT x FROM S[i] JOIN T[i] USING (x)", "SELECT x FROM T[j] JOIN S[j] USING (x)", False),
])
def test_a_first_part_joins_the_range_step_when_initialize_is_the_update_query(make_warehouse, initialize, update, same):
    warehouse = make_warehouse()
    warehouse.run("CREATE STREAM S (ts TIMESTAMP, k INT, x INT) TIMESTAMP ts PARTITION LENGTH 60; "
                  "CREATE STREAM T (ts TIMESTAMP, k INT, x INT) TIMESTAMP ts PARTITION LENGTH 60")
    warehouse.run(f"CREATE VIEW V AS INITIALIZE V[i] AS {initialize} UPDATE V[j] AS {update}")
    assert warehouse.engine.maintainer.range_plan(warehouse.engine.catalog.get("V")).takes_initialize is same
    rows = pd.DataFrame({"ts": [START + pd.Timedelta(minutes=m) for m in range(6)], "k": [1] * 6, "x": range(6)})
    warehouse.ingest("T", rows)
    warehouse.ingest("S", rows)
    parts = warehouse.engine.catalog.state("V").parts
    folders = {text.split("#")[0] for meta in parts.values() for text in meta.folders}
    assert [meta.how.value for meta in parts.values()][:2] == ["initialize", "update"]
    if same:        # one range step wrote every part with rows, the INITIALIZE part included
        assert len(folders) == 1
