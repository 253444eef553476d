"""MATCH_RECOGNIZE views (#20) against the oracle of the standard (tests/match_recognize/oracle.py): the corpus
queries Flink lacks (ALL ROWS PER MATCH, alternation, groups, PREV, greedy last variables, ...) over random
streams and real data, and views over random streams split into random parts, part by part, with the same
MATCH_NUMBER per partition. The random-parts test draws 2 streams a shape in ``./run test`` (each run draws
new ones) and 20 in ``./run stress``."""

from __future__ import annotations

import datetime
import itertools

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from match_recognize import corpus, datasets, results
from match_recognize.views import (SCHEMA, corpus_warehouse, expected_by_part, oracle_rows, plain_rows,
                                   results_by_dataset)

from viewdf_magic.translation.match_view import PLAN_SETTING

EXAMPLES = 2
STRESS_EXAMPLES = 20


@pytest.fixture(scope="module")
def warehouse_of_corpus(spark, tmp_path_factory):
    return corpus_warehouse(spark, str(tmp_path_factory.mktemp("mr") / "wh"))


@pytest.mark.parametrize("case", [c for c in corpus.CASES if not c.runs_in_flink or "default_skip" in c.flags],
                         ids=lambda c: c.id)
def test_oracle_corpus(case: corpus.Case, warehouse_of_corpus) -> None:
    """The shapes Flink lacks (and the standard's default skip) give the oracle's closed matches."""
    found = results_by_dataset(warehouse_of_corpus, f"oracle_{case.id}", case, case.sql)
    for name in case.datasets:
        assert found[name] == oracle_rows(case.sql, datasets.load(name)), name


# ------------------------------------------------------------------------------------------------------
# Parts: random streams split into random parts, each part against the oracle


def _mr(body: str) -> str:
    return f"SELECT * FROM S MATCH_RECOGNIZE (PARTITION BY key ORDER BY ts, id {body}) AS M"


PART_SHAPES = {
    # the example, with MATCH_NUMBER: PREV, an aggregate of B in C's DEFINE, COUNT(B.*)
    "dips": """MEASURES FIRST(A.id) AS a_id, LAST(B.price) AS bottom, LAST(C.id) AS c_id, COUNT(B.*) AS falls,
        MATCH_NUMBER() AS m ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A B+ C)
        DEFINE B AS B.price < PREV(B.price), C AS C.price > PREV(C.price) AND C.price > AVG(B.price)""",
    # reluctant, SKIP TO NEXT ROW: overlapping matches
    "reluctant": """MEASURES A.id AS a_id, COUNT(B.price) AS n_b, C.id AS c_id, MATCH_NUMBER() AS m
        AFTER MATCH SKIP TO NEXT ROW PATTERN (A B+? C) DEFINE B AS B.price > A.price, C AS C.price < LAST(B.price)""",
    # alternation in a repeated group, an optional end, ALL ROWS PER MATCH with RUNNING and FINAL navigations,
    # counts and an aggregate
    "zigzag": """MEASURES RUNNING COUNT(*) AS n, FINAL COUNT(*) AS total, CLASSIFIER() AS cls, MATCH_NUMBER() AS m,
        LAST(U.price) AS up, FIRST(D.id, 1) AS second_down, LAST(price, 1) AS before, COUNT(U.*) AS ups,
        SUM(D.vol) AS down_vol, FINAL LAST(D.id) AS last_down, FINAL FIRST(U.price, 1) AS second_up
        ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (S (U | D){2,} E?)
        DEFINE U AS U.price > PREV(U.price), D AS D.price < PREV(D.price), E AS E.price = PREV(E.price)""",
    # a greedy last variable: final when a row fails to extend it; SKIP TO LAST
    "greedy_last": """MEASURES FIRST(id) AS first_id, LAST(id) AS last_id, SUM(B.vol) AS vol
        AFTER MATCH SKIP TO LAST B PATTERN (A B{2,}) DEFINE A AS A.price <= 2, B AS B.price >= LAST(price, 1)""",
    # WITHIN ends searches at the first row outside the window
    "within": """MEASURES A.id AS a_id, C.id AS c_id, MATCH_NUMBER() AS m AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B*? C) WITHIN INTERVAL '3' SECOND DEFINE C AS C.price < A.price - 1""",
    # empty matches, reluctant optional, TO FIRST
    "empty": """MEASURES COUNT(A.price) AS n_a, FIRST(B.id, 1) AS second_b, MATCH_NUMBER() AS m
        AFTER MATCH SKIP PAST LAST ROW PATTERN (A* B??) DEFINE A AS A.price >= 3, B AS B.price = 1""",
    # aggregates in DEFINE over a row's own variable (MIN), another (SUM, AVG of an integer against an integer),
    # every row (COUNT(*), MAX), with overlapping alternatives: threads at one state with different aggregates
    "aggregates": """MEASURES FIRST(id) AS first_id, LAST(id) AS last_id, COUNT(A.*) AS n_a, SUM(B.vol) AS b_vol,
        MATCH_NUMBER() AS m AFTER MATCH SKIP TO NEXT ROW PATTERN ((A | B){2,4} C)
        DEFINE A AS A.price >= 2 AND A.vol = MIN(A.vol), B AS B.price <= 3 AND SUM(B.vol) <= 5,
               C AS C.vol > AVG(A.vol) AND COUNT(*) <= 4 AND (C.price < MAX(price))""",
    # the benchmark's rising runs: LAST(A.price, 1) is the row before while A+ runs, NULL at its start
    "rise": """MEASURES FIRST(A.price) AS start_price, LAST(A.price) AS top, B.id AS b_id, COUNT(*) AS n,
        MATCH_NUMBER() AS m AFTER MATCH SKIP PAST LAST ROW PATTERN (A+ B)
        DEFINE A AS LAST(A.price, 1) IS NULL OR A.price > LAST(A.price, 1), B AS B.price < LAST(A.price)""",
    # rows a bounded distance back (A and FIRST(B) from C), WITHIN, PREV in a measure, TO FIRST
    "bounded": """MEASURES A.id AS a_id, C.id AS c_id, PREV(A.price) AS before, COUNT(B.*) AS n_b
        AFTER MATCH SKIP TO FIRST C PATTERN (A B{0,3}? C) WITHIN INTERVAL '4' SECOND
        DEFINE B AS B.price <> A.price,
               C AS C.price < A.price AND (FIRST(B.price) IS NULL OR C.price <> FIRST(B.price))""",
}

# the plan each shape's Helper gets (translation/match_compact.py): the automaton plan when every DEFINE reads rows
# at offsets its automaton state fixes, the general fold otherwise, with the reason
PLANS = {"dips": "automaton plan", "aggregates": "automaton plan",
         "reluctant": "because a DEFINE reads a row of the match that can be more than 16 rows back (after B)",
         "within": "because a DEFINE reads a row of the match that can be more than 16 rows back (after B)",
         "zigzag": "automaton plan", "greedy_last": "automaton plan", "empty": "automaton plan",
         "rise": "automaton plan", "bounded": "automaton plan"}


# aggregates in DEFINE the matcher cannot compare: (view, its MATCH_RECOGNIZE, why it gets the general plan)
GENERAL = [("scaled", "MEASURES A.id AS a_id PATTERN (A B) DEFINE B AS B.price > 2 * AVG(A.price)",
            "DEFINE B reads an aggregate over a variable's rows other than in a comparison with a value (such as "
            "B.price < AVG(A.price)) joined to the rest by AND"),
           ("either", "MEASURES A.id AS a_id PATTERN (A B) DEFINE B AS B.price > SUM(A.vol) OR B.vol = 1",
            "DEFINE B reads an aggregate over a variable's rows other than in a comparison"),
           ("dated", "MEASURES A.id AS a_id PATTERN (A B) DEFINE B AS B.ts > MIN(A.ts)",
            "in DEFINE B, the value compared with MIN is of type timestamp: the matcher compares integers and "
            "floating-point numbers only")]


def test_each_shape_gets_its_plan(make_warehouse) -> None:
    """CREATE VIEW says which plan a MATCH_RECOGNIZE view gets and why, and EXPLAIN VIEW repeats it."""
    warehouse = make_warehouse("plans")
    warehouse.execute(f"CREATE STREAM S ({SCHEMA}) TIMESTAMP ts PARTITION LENGTH 5")
    messages = {}
    for shape, plan in PLANS.items():
        [created] = warehouse.run(f"CREATE VIEW {shape} AS {_mr(PART_SHAPES[shape])}")
        assert plan in created.message, (shape, created.message)
        messages[shape] = created.message
    # MIN(A.vol), SUM(B.vol), AVG(A.vol), COUNT(*), MAX(price); the arguments vol and price (a row's, whichever its
    # variable) and the operands A.vol, 5, C.vol, 4, C.price
    assert "5 aggregates per thread, compared with 7 values per row" in messages["aggregates"]
    for shape, query, reason in GENERAL:
        [created] = warehouse.run(f"CREATE VIEW {shape} AS {_mr(query)}")
        assert f"general plan (each partition's rows folded in Spark SQL), because {reason}" in created.message
        assert reason in warehouse.run(f"EXPLAIN VIEW {shape}")[-1].detail, shape
    for shape, plan in PLANS.items():
        assert plan in warehouse.run(f"EXPLAIN VIEW {shape}")[-1].detail, shape


@st.composite
def streams(draw) -> tuple[list[dict[str, object]], int, list[int]]:
    """Rows of S for keys a and b (prices 1-4, steps of 0-2 s, so ties in ts, and now and then a pause of
    both keys, so parts without rows), a partition length, and the parts after which a batch ends."""
    rows: list[dict[str, object]] = []
    clocks = {"a": 0, "b": 0}
    for number in range(draw(st.integers(min_value=4, max_value=36))):
        if draw(st.integers(0, 9)) == 0:
            clocks = {k: clock + 11 for k, clock in clocks.items()}
        key = draw(st.sampled_from("ab"))
        clocks[key] += draw(st.sampled_from((0, 1, 1, 2)))
        rows.append({"key": key, "ts": datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=clocks[key]),
                     "price": float(draw(st.integers(1, 4))), "vol": draw(st.integers(1, 3)), "id": number})
    length = draw(st.sampled_from((2, 3, 5)))
    last = max(clocks.values()) // length
    cuts = sorted(draw(st.sets(st.integers(min_value=0, max_value=last), max_size=2)))
    return rows, length, cuts


@pytest.mark.parametrize("shape", list(PART_SHAPES))
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(stream=streams())
def test_parts_equal_the_oracle(shape: str, stream, make_warehouse) -> None:
    """Each part holds exactly the matches that became final in it: the oracle's closed matches over the rows up
    to the part's end, minus those up to the previous part's end, with the same MATCH_NUMBER per partition.
    Rows arrive in batches ending after random parts (range steps and single steps)."""
    check_parts(shape, stream, make_warehouse)


@pytest.mark.stress
@pytest.mark.parametrize("shape", list(PART_SHAPES))
@settings(max_examples=STRESS_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(stream=streams())
def test_parts_equal_the_oracle_at_length(shape: str, stream, make_warehouse) -> None:
    check_parts(shape, stream, make_warehouse)


def check_parts(shape: str, stream, make_warehouse) -> None:
    """The view's parts (and, on the automaton plan, the general plan's over the same parts) against the oracle."""
    rows, length, cuts = stream
    compact = PLANS[shape] == "automaton plan"
    warehouse = make_warehouse(f"wh{next(_warehouses)}")
    warehouse.execute(f"CREATE STREAM S ({SCHEMA}) TIMESTAMP ts PARTITION LENGTH {length}")
    frame = pd.DataFrame(rows)
    subscripts = frame["ts"].map(lambda ts: int(ts.timestamp()) // length)
    last = int(subscripts.max())
    done = None
    for cut in [*cuts, None]:
        batch = frame[(subscripts > (done if done is not None else -1)) & (subscripts <= (cut if cut is not None else last))]
        if len(batch):
            warehouse.ingest("S", batch)
        if done is None:
            warehouse.execute(f"CREATE VIEW V AS {_mr(PART_SHAPES[shape])}")
            if compact:      # the same view on the general plan, over the same parts
                with pytest.MonkeyPatch.context() as patch:
                    patch.setenv(PLAN_SETTING, "general")
                    warehouse.execute(f"CREATE VIEW G AS {_mr(PART_SHAPES[shape])}")
        done = cut
    found = _by_part(warehouse, "V", length)
    if compact:
        assert _by_part(warehouse, "G", length) == found
    expected = expected_by_part(_mr(PART_SHAPES[shape]), rows, length)
    for subscript, want in expected.items():
        assert found.pop(subscript, []) == want, subscript
    assert not found


_warehouses = itertools.count()


def _by_part(warehouse, view: str, length: int) -> dict[int, list[list[object]]]:
    """A view's rows (normalised) by part subscript."""
    parts: dict[int, list[list[object]]] = {}
    for row in plain_rows(warehouse.run(f"SELECT * FROM {view}")[-1].frame):
        stamp = row[-1].replace(tzinfo=datetime.timezone.utc)
        parts.setdefault(int(stamp.timestamp()) // length, []).append(row[:-1])
    return {part: results.normalise_rows(found) for part, found in parts.items()}


def test_late_rows_repair_the_automaton_plan(make_warehouse) -> None:
    """A late row splits a rising run kept across parts in the automaton plan's Helper (its rows, not threads):
    the repaired parts are the oracle's over every row, and the general plan's."""
    prices = [1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 2, 5, 6]          # one run over parts 0 and 1, ending in part 1
    start = datetime.datetime(2024, 1, 1)
    rows = [{"key": "a", "ts": start + datetime.timedelta(seconds=second), "price": float(price), "vol": 1,
             "id": second} for second, price in enumerate(prices)]
    warehouse = make_warehouse()
    warehouse.execute(f"CREATE STREAM S ({SCHEMA}) TIMESTAMP ts PARTITION LENGTH 5")
    warehouse.ingest("S", pd.DataFrame(rows))
    warehouse.execute(f"CREATE VIEW V AS {_mr(PART_SHAPES['rise'])}")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(PLAN_SETTING, "general")
        warehouse.execute(f"CREATE VIEW G AS {_mr(PART_SHAPES['rise'])}")

    def expected(stream: list[dict[str, object]]) -> dict[int, list[list[object]]]:
        return {part: want for part, want in expected_by_part(_mr(PART_SHAPES["rise"]), stream, 5).items() if want}
    assert _by_part(warehouse, "V", 5) == expected(rows) == _by_part(warehouse, "G", 5)
    assert min(expected(rows)) == 340813441               # before the late row, the first match ends in part 1
    late = {"key": "a", "ts": start + datetime.timedelta(seconds=3.5), "price": 0.5, "vol": 1, "id": 100}
    warehouse.ingest("S", pd.DataFrame([late]))
    assert _by_part(warehouse, "V", 5) == expected(rows + [late]) == _by_part(warehouse, "G", 5)
    assert min(expected(rows + [late])) == 340813440      # the late row's drop ends a match in part 0 now


SKIP_WITHOUT_B = "MEASURES COUNT(*) AS n AFTER MATCH SKIP TO LAST B PATTERN (A B? C) DEFINE B AS B.price > 5"


@pytest.mark.parametrize("plan", ["automaton", "general"])
def test_a_skip_that_cannot_resume_stops_the_step(plan: str, make_warehouse) -> None:
    """AFTER MATCH SKIP TO LAST B after a match without a B row is the standard's error, on either plan, and the
    step fails with it: no part is written."""
    start = datetime.datetime(2024, 1, 1)
    rows = [{"key": "a", "ts": start + datetime.timedelta(seconds=second), "price": float(price), "vol": 1,
             "id": second} for second, price in enumerate([1, 2, 3])]
    warehouse = make_warehouse()
    warehouse.execute(f"CREATE STREAM S ({SCHEMA}) TIMESTAMP ts PARTITION LENGTH 5; SET MAINTENANCE MANUAL")
    with pytest.MonkeyPatch.context() as patch:
        if plan == "general":
            patch.setenv(PLAN_SETTING, "general")
        [created] = warehouse.run(f"CREATE VIEW V AS {_mr(SKIP_WITHOUT_B)}")
    assert (plan == "automaton") == ("automaton plan" in created.message)
    warehouse.ingest("S", pd.DataFrame(rows))
    with pytest.raises(Exception, match="AFTER MATCH SKIP TO LAST B: no row of the match is mapped to B"):
        warehouse.execute("STEP ALL")
    assert warehouse.execute("SELECT * FROM V").empty
