"""The MATCH_RECOGNIZE oracle: against Flink's recorded results, hand-computed cases, and properties."""

from __future__ import annotations

import datetime
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from match_recognize import corpus, datasets, oracle, results

# ------------------------------------------------------------------------------------------------------
# (a) Flink's recorded results


def _flink_cases() -> list[tuple[corpus.Case, str]]:
    return [(case, name) for case in corpus.CASES if case.runs_in_flink for name in case.datasets]


def _oracle_result(sql: str, rows: list[dict[str, object]], closed_only: bool) -> dict[str, object]:
    output = oracle.run(sql, rows, closed_only=closed_only)
    columns = list(output[0]) if output else None
    return {"columns": columns, "rows": results.normalise_rows([list(row.values()) for row in output])}


@pytest.fixture(scope="module")
def loaded() -> dict[str, list[dict[str, object]]]:
    return {name: datasets.load(name) for name in datasets.DATASETS}


@pytest.mark.parametrize(("case", "dataset"), _flink_cases(), ids=lambda value: getattr(value, "id", value))
def test_oracle_equals_flink(case: corpus.Case, dataset: str, loaded: dict[str, list[dict[str, object]]]) -> None:
    """Flink equals the oracle's closed matches (a match still open when the input ends stays pending and
    holds back the later ones), except where corpus.FLINK_DEPARTURES says otherwise."""
    recorded = json.loads(results.result_path(case.id, dataset).read_text())
    assert "error" not in recorded, recorded.get("error")
    departure = dict(case.flink_departs).get(dataset)
    sql = case.sql
    if "default_skip" in case.flags:  # Flink's default is SKIP TO NEXT ROW, the standard's PAST LAST ROW
        assert _oracle_result(sql, loaded[dataset], closed_only=True)["rows"] != recorded["rows"]
        sql = sql.replace("PATTERN", "AFTER MATCH SKIP TO NEXT ROW PATTERN")
    closed = _oracle_result(sql, loaded[dataset], closed_only=True)
    if departure is None:
        assert closed["rows"] == recorded["rows"]
    else:
        assert closed["rows"] != recorded["rows"], departure
    if departure == "window_timeout":
        assert _oracle_result(sql, loaded[dataset], closed_only=False)["rows"] == recorded["rows"]
    if closed["columns"] is not None:
        assert closed["columns"] == recorded["columns"]


def _recorded(case_id: str, dataset: str) -> list[list[object]]:
    return json.loads(results.result_path(case_id, dataset).read_text())["rows"]


def test_departure_greedy_commits(loaded: dict[str, list[dict[str, object]]]) -> None:
    """Prices 1 2 3 4 5 1 9 9, PATTERN (A B+ C): B+ must give back the 1 for C = 1 to match."""
    sql = corpus.BY_ID["greedy_commits"].sql
    assert _oracle_result(sql, loaded["tiny_greedy"], closed_only=True)["rows"] == [["k", 1, 4, 5]]
    assert _recorded("greedy_commits", "tiny_greedy") == []


def test_departure_optional_first_completed(loaded: dict[str, list[dict[str, object]]]) -> None:
    """Prices 0 1 8, PATTERN (A B? C): the greedy B? prefers B = 1, C = 8; Flink emits A = 0, C = 1."""
    sql = corpus.BY_ID["optional_middle"].sql
    assert _oracle_result(sql, loaded["tiny_optional"], closed_only=True)["rows"] == [["k", 0.0, 1.0, 8.0]]
    assert _recorded("optional_middle", "tiny_optional") == [["k", 0.0, None, 1.0]]


def test_departure_pending_replaced(loaded: dict[str, list[dict[str, object]]]) -> None:
    """Prices 4 3 3 4 3 4 5 at seconds 2 4 5 6 7 8 9, PATTERN (A B{2,}? C), SKIP TO NEXT ROW: the match from
    second 4 ends at the first C (second 8, three B rows); Flink's ends at second 9 with four."""
    sql = corpus.BY_ID["reluctant_at_least_n"].sql
    at = "2024-01-01T00:00:{:02d}.000".format
    standard = [["k", at(2), 5, at(9)], ["k", at(4), 3, at(8)], ["k", at(5), 2, at(8)], ["k", at(6), 2, at(9)]]
    assert _oracle_result(sql, loaded["tiny_pending"], closed_only=True)["rows"] == standard
    assert _recorded("reluctant_at_least_n", "tiny_pending") == [standard[0], ["k", at(4), 4, at(9)], *standard[2:]]


# ------------------------------------------------------------------------------------------------------
# The corpus's flags agree with what its queries use


def _can_be_empty(node: oracle.Node) -> bool:
    if isinstance(node, oracle.Var):
        return False
    if isinstance(node, oracle.Quant):
        return node.low == 0 or _can_be_empty(node.node)
    if isinstance(node, oracle.Seq):
        return all(_can_be_empty(item) for item in node.items)
    return any(_can_be_empty(option) for option in node.options)


def _features(case: corpus.Case) -> set[str]:
    query = oracle.parse(case.sql)
    pattern_text = case.sql.split("PATTERN", 1)[1].split("DEFINE", 1)[0].split("WITHIN", 1)[0].strip()[1:-1]
    pattern = query.pattern
    last = pattern.items[-1] if isinstance(pattern, oracle.Seq) else pattern
    quantifiers = []
    stack = [pattern]
    while stack:
        node = stack.pop()
        if isinstance(node, oracle.Quant):
            quantifiers.append(node)
            stack.append(node.node)
        elif isinstance(node, (oracle.Seq, oracle.Alt)):
            stack.extend(node.items if isinstance(node, oracle.Seq) else node.options)
    found = {
        "all_rows": query.all_rows,
        "alternation": "|" in pattern_text,
        "groups": "(" in pattern_text,
        "prev": "PREV(" in case.sql,
        "classifier": "CLASSIFIER()" in case.sql,
        "match_number": "MATCH_NUMBER()" in case.sql,
        "greedy_last": isinstance(last, oracle.Quant) and not last.reluctant and last.low != last.high,
        "reluctant_optional": any(q.reluctant and (q.low, q.high) == (0, 1) for q in quantifiers),
        "empty_match": _can_be_empty(pattern),
        "default_skip": "AFTER MATCH" not in case.sql,
        "running": "RUNNING " in case.sql,
        "no_lower_bound": "{," in pattern_text.replace(" ", ""),
    }
    return {name for name, present in found.items() if present}


def test_corpus_flags_name_the_features_used() -> None:
    assert len(corpus.CASES) >= 40
    assert len(corpus.BY_ID) == len(corpus.CASES)
    for case in corpus.CASES:
        assert case.flags == _features(case), case.id
        assert set(case.datasets) <= set(datasets.DATASETS), case.id


def test_every_oracle_only_query_runs(loaded: dict[str, list[dict[str, object]]]) -> None:
    """The queries Flink cannot run evaluate, in both modes, and match somewhere."""
    for case in corpus.CASES:
        if case.runs_in_flink:
            continue
        outputs = [oracle.run(case.sql, loaded[name], closed_only=closed) for name in case.datasets for closed in (False, True)]
        assert any(outputs), case.id


# ------------------------------------------------------------------------------------------------------
# (b) hand-computed cases, mostly what Flink lacks


def _rows(prices: list[float], key: str = "k") -> list[dict[str, object]]:
    start = datetime.datetime(2024, 1, 1)
    return [
        {"key": key, "ts": start + datetime.timedelta(seconds=number), "price": float(price), "vol": 1, "id": number}
        for number, price in enumerate(prices)
    ]


def _sql(measures: str, rest: str) -> str:
    return f"SELECT * FROM T MATCH_RECOGNIZE (PARTITION BY key ORDER BY ts MEASURES {measures} {rest}) AS M"


def _values(sql: str, prices: list[float], *names: str, closed_only: bool = False) -> list[tuple[object, ...]]:
    return [tuple(row[name] for name in names) for row in oracle.run(sql, _rows(prices), closed_only=closed_only)]


def test_all_rows_per_match_running_and_final() -> None:
    sql = _sql(
        "RUNNING COUNT(*) AS n, FINAL COUNT(*) AS total, CLASSIFIER() AS cls, MATCH_NUMBER() AS m",
        """ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A+ B)
        DEFINE A AS LAST(A.price, 1) IS NULL OR A.price > LAST(A.price, 1), B AS B.price < LAST(A.price)""",
    )
    output = oracle.run(sql, _rows([1, 2, 3, 1, 5]))
    assert list(output[0]) == ["key", "ts", "n", "total", "cls", "m", "price", "vol", "id"]
    assert [(row["id"], row["n"], row["total"], row["cls"], row["m"]) for row in output] == [
        (0, 1, 4, "A", 1),
        (1, 2, 4, "A", 1),
        (2, 3, 4, "A", 1),
        (3, 4, 4, "B", 1),
    ]


def test_alternation_prefers_the_left_branch() -> None:
    sql = _sql(
        "COUNT(A.price) AS n_a, COUNT(B.price) AS n_b, LAST(id) AS last_id",
        "AFTER MATCH SKIP PAST LAST ROW PATTERN ((A | B) C) DEFINE A AS A.price >= 2, B AS B.price >= 1, C AS C.price = 9",
    )
    assert _values(sql, [2, 9, 1, 9], "n_a", "n_b", "last_id") == [(1, 0, 1), (0, 1, 3)]


def test_alternation_backtracks_into_the_right_branch() -> None:
    sql = _sql(
        "CLASSIFIER() AS cls, COUNT(*) AS n",
        "AFTER MATCH SKIP PAST LAST ROW PATTERN (S U U | S D) DEFINE U AS U.price > LAST(price, 1), D AS D.price < LAST(price, 1)",
    )
    assert _values(sql, [5, 6, 4, 3, 4, 5], "cls", "n") == [("D", 2), ("U", 3)]


def test_group_quantified() -> None:
    sql = _sql(
        "COUNT(U.price) AS pairs, LAST(id) AS last_id",
        "AFTER MATCH SKIP PAST LAST ROW PATTERN (S (U D){2}) DEFINE U AS U.price > LAST(price, 1), D AS D.price < LAST(price, 1)",
    )
    assert _values(sql, [5, 6, 4, 7, 3, 8], "pairs", "last_id") == [(2, 4)]


def test_prev_reaches_rows_before_the_match() -> None:
    sql = _sql(
        "A.id AS a_id, PREV(A.price) AS before",
        "AFTER MATCH SKIP PAST LAST ROW PATTERN (A) DEFINE A AS A.price > PREV(A.price)",
    )
    assert _values(sql, [3, 1, 2, 4], "a_id", "before") == [(2, 1.0), (3, 2.0)]


def test_greedy_last_variable_open_at_the_end() -> None:
    sql = _sql(
        "A.id AS a_id, COUNT(B.price) AS n_b",
        "AFTER MATCH SKIP PAST LAST ROW PATTERN (A B+) DEFINE A AS A.price = 1, B AS B.price > 1",
    )
    prices = [1, 2, 3, 1, 2]
    assert _values(sql, prices, "a_id", "n_b") == [(0, 2), (3, 1)]
    assert _values(sql, prices, "a_id", "n_b", closed_only=True) == [(0, 2)]


_SUM_BELOW_30 = "SUM(A.price) AS total, FIRST(id) AS first_id, LAST(id) AS last_id"
_DOC_PRICES = [0, 7, 9, 10, 5, 10, 7, 14]  # Flink's documentation example from id 1; id 0 cannot start a match


def _skip(skip: str, pattern: str = "A+ C") -> str:
    return _sql(
        _SUM_BELOW_30,
        f"AFTER MATCH SKIP {skip} PATTERN ({pattern}) DEFINE A AS SUM(A.price) < 30 AND A.price > 0, S AS S.price > 0",
    )


def test_skip_past_last_row() -> None:
    expected = [(26.0, 1, 4), (17.0, 5, 7)]
    assert _values(_skip("PAST LAST ROW"), _DOC_PRICES, "total", "first_id", "last_id") == expected
    assert _values(_skip("PAST LAST ROW"), _DOC_PRICES, "total", "first_id", "last_id", closed_only=True) == expected


def test_skip_to_next_row() -> None:
    closed = [(26.0, 1, 4), (24.0, 2, 5), (25.0, 3, 6), (22.0, 4, 7), (17.0, 5, 7)]
    assert _values(_skip("TO NEXT ROW"), _DOC_PRICES, "total", "first_id", "last_id") == [*closed, (7.0, 6, 7)]
    assert _values(_skip("TO NEXT ROW"), _DOC_PRICES, "total", "first_id", "last_id", closed_only=True) == closed


def test_skip_to_last_variable() -> None:
    closed = [(26.0, 1, 4), (25.0, 3, 6), (17.0, 5, 7)]
    assert _values(_skip("TO LAST A"), _DOC_PRICES, "total", "first_id", "last_id", closed_only=True) == closed
    with pytest.raises(oracle.MatchRecognizeError, match="first row"):
        oracle.run(_skip("TO LAST A"), _rows(_DOC_PRICES))  # the open match 6-7's last A is its first row


def test_skip_to_first_variable() -> None:
    every = [(24.0, 1, 5), (25.0, 2, 6), (22.0, 3, 7), (17.0, 4, 7), (7.0, 5, 7)]
    sql = _skip("TO FIRST A", "S A+ C")
    assert _values(sql, _DOC_PRICES, "total", "first_id", "last_id") == every
    assert _values(sql, _DOC_PRICES, "total", "first_id", "last_id", closed_only=True) == every[:4]
    with pytest.raises(oracle.MatchRecognizeError, match="first row"):
        oracle.run(_skip("TO FIRST A"), _rows(_DOC_PRICES))


def test_skip_to_a_variable_without_rows_is_an_error() -> None:
    sql = _sql("COUNT(*) AS n", "AFTER MATCH SKIP TO LAST B PATTERN (A B? C) DEFINE B AS B.price > 5")
    with pytest.raises(oracle.MatchRecognizeError, match="no row of the match"):
        oracle.run(sql, _rows([1, 2, 3]))


def test_empty_matches() -> None:
    one_row = _sql("COUNT(A.price) AS n_a, MATCH_NUMBER() AS m", "PATTERN (A*) DEFINE A AS A.price >= 4")
    prices = [5, 1, 4, 4]
    assert _values(one_row, prices, "n_a", "m") == [(1, 1), (0, 2), (2, 3)]
    assert _values(one_row, prices, "n_a", "m", closed_only=True) == [(1, 1), (0, 2)]
    all_rows = _sql(
        "RUNNING COUNT(A.price) AS n_a, CLASSIFIER() AS cls, MATCH_NUMBER() AS m",
        "ALL ROWS PER MATCH PATTERN (A*) DEFINE A AS A.price >= 4",
    )
    assert _values(all_rows, prices, "id", "n_a", "cls", "m") == [
        (0, 1, "A", 1),
        (1, 0, None, 2),
        (2, 1, "A", 3),
        (3, 2, "A", 3),
    ]


def test_reluctant_optional_skips_when_it_can() -> None:
    rest = "PATTERN (A B{} C) DEFINE A AS A.price > 3, B AS B.price < 3, C AS C.price < 3"
    greedy = _sql("COUNT(B.price) AS n_b, C.id AS c_id", rest.format("?"))
    reluctant = _sql("COUNT(B.price) AS n_b, C.id AS c_id", rest.format("??"))
    assert _values(greedy, [5, 1, 1], "n_b", "c_id") == [(1, 2)]
    assert _values(reluctant, [5, 1, 1], "n_b", "c_id") == [(0, 1)]


def test_within_is_strict() -> None:
    sql = _sql(
        "FIRST(id) AS first_id, C.id AS c_id",
        "AFTER MATCH SKIP PAST LAST ROW PATTERN (A B*? C) WITHIN INTERVAL '2' SECOND DEFINE A AS A.price = 1, C AS C.price = 9",
    )
    assert _values(sql, [1, 0, 9, 1, 9], "first_id", "c_id") == [(3, 4)]


# ------------------------------------------------------------------------------------------------------
# (c) properties

_prices = st.lists(st.integers(min_value=1, max_value=4), min_size=0, max_size=25)


def _two_keys(first: list[int], second: list[int]) -> list[dict[str, object]]:
    rows = _rows(first, "a") + _rows(second, "b")
    for number, row in enumerate(rows):
        row["id"] = number
    return rows


@settings(max_examples=60, deadline=None)
@given(_prices, _prices)
def test_match_numbers_count_from_one_in_each_partition(first: list[int], second: list[int]) -> None:
    sql = _sql(
        "MATCH_NUMBER() AS m",
        "AFTER MATCH SKIP TO NEXT ROW PATTERN (A B+? C) DEFINE B AS B.price > A.price, C AS C.price < LAST(B.price)",
    )
    output = oracle.run(sql, _two_keys(first, second))
    for key in ("a", "b"):
        numbers = [row["m"] for row in output if row["key"] == key]
        assert numbers == list(range(1, len(numbers) + 1))


@settings(max_examples=60, deadline=None)
@given(_prices)
def test_skip_past_last_row_matches_do_not_overlap(prices: list[int]) -> None:
    sql = _sql(
        "FIRST(id) AS first_id, LAST(id) AS last_id",
        "AFTER MATCH SKIP PAST LAST ROW PATTERN (A+ B{1,2}) DEFINE A AS A.price >= LAST(price, 1), B AS B.price < 3",
    )
    output = oracle.run(sql, _rows(prices))
    for before, after in zip(output, output[1:]):
        assert before["last_id"] < after["first_id"]


@settings(max_examples=40, deadline=None)
@given(_prices)
def test_a_true_variable_matches_every_row(prices: list[int]) -> None:
    sql = _sql("A.id AS a_id", "PATTERN (A) DEFINE A AS TRUE")
    assert _values(sql, prices, "a_id") == [(number,) for number in range(len(prices))]


@settings(max_examples=60, deadline=None)
@given(_prices)
def test_closed_matches_are_a_prefix_of_all_matches(prices: list[int]) -> None:
    sql = _sql("FIRST(id) AS first_id, COUNT(B.price) AS n_b", "AFTER MATCH SKIP TO NEXT ROW PATTERN (A B*) DEFINE B AS B.price > A.price")
    every = oracle.run(sql, _rows(prices))
    closed = oracle.run(sql, _rows(prices), closed_only=True)
    assert closed == every[: len(closed)]


_GROWING = (
    "AFTER MATCH SKIP TO NEXT ROW PATTERN (A B*) DEFINE B AS B.price > A.price",
    "AFTER MATCH SKIP PAST LAST ROW PATTERN (A B+? C) DEFINE B AS B.price <= A.price, C AS C.price > A.price",
    "AFTER MATCH SKIP PAST LAST ROW PATTERN (A B*? C) WITHIN INTERVAL '3' SECOND DEFINE C AS C.price < A.price - 1",
    "AFTER MATCH SKIP TO LAST B PATTERN (A B{2,} C) DEFINE B AS B.price >= PREV(B.price), C AS C.price < LAST(B.price)",
)


@settings(max_examples=80, deadline=None)
@given(_prices, st.integers(min_value=0, max_value=25), st.sampled_from(_GROWING))
def test_closed_matches_stay_as_the_stream_grows(prices: list[int], cut: int, rest: str) -> None:
    """The closed matches over the first rows are a prefix of the closed matches and of all matches over
    all the rows: more input never changes or removes a closed match."""
    sql = _sql("FIRST(id) AS first_id, LAST(id) AS last_id, COUNT(*) AS n", rest)
    early = oracle.run(sql, _rows(prices[:cut]), closed_only=True)
    assert oracle.run(sql, _rows(prices), closed_only=True)[: len(early)] == early
    assert oracle.run(sql, _rows(prices))[: len(early)] == early
