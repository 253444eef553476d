"""The MATCH_RECOGNIZE corpus: queries over table T(key, ts, price, vol, id) and the data sets each runs over.

A plain data module (no Flink, no sqlglot). Every query orders by ``ts, id`` (id breaks ties in ts).
``flags`` name the features a query uses that Flink 2.3 does not support; a query without such flags
is run in Flink by tools/flink_match_recognize.py. "default_skip" marks a query without AFTER MATCH
SKIP: the standard's default is PAST LAST ROW, Flink's (Calcite's) is TO NEXT ROW.
"""

from __future__ import annotations

from dataclasses import dataclass

RANDOM = ("rand1", "rand2")
ALL = ("rand1", "rand2", "stocks", "flights")

# Features Flink 2.3's MATCH_RECOGNIZE lacks (documented limitations, or rejected when tried).
FLINK_LACKS = frozenset(
    {
        "all_rows",  # ALL ROWS PER MATCH
        "alternation",  # |
        "groups",  # ( ) inside PATTERN
        "prev",  # PREV / NEXT physical offsets
        "greedy_last",  # a greedy quantifier on the pattern's last variable
        "classifier",  # CLASSIFIER()
        "match_number",  # MATCH_NUMBER()
        "reluctant_optional",  # A??
        "empty_match",  # a pattern that can match no row
        "running",  # the RUNNING keyword (Flink's code generator: "Unsupported call: RUNNING(DOUBLE)")
        "no_lower_bound",  # {,m}: documented, but fails ("The from should be a positive number"); {0,m} works
    }
)

# Where Flink's rows differ from the standard's (the oracle's), and why; checked in both directions by the tests.
FLINK_DEPARTURES = {
    "greedy_commits": "a row satisfying both a greedy loop's variable and the next variable stays in the loop;"
    " Flink never backtracks, so a match that needs that row to end the loop is lost",
    "optional_first_completed": "for a greedy B? Flink emits the match that skips B when it completes first,"
    " not the preferred match that maps a row to B",
    "pending_replaced": "a match completed while an earlier-starting match is still open is replaced by a later,"
    " longer match from the same start row, so a reluctant quantifier's shortest match is lost",
    # Not a departure from the standard: Flink keeps matches still open at the end of the input pending
    # (never emitted) and holds back the later matches, as the oracle's closed matches do, unless WITHIN
    # times them out: the end of bounded input moves time past every window, the open partial matches are
    # dropped and the matches they held back are emitted, as in the standard's batch result.
    "window_timeout": "WITHIN ends the open matches at the end of input: Flink equals the oracle's batch result",
}


@dataclass(frozen=True)
class Case:
    """One corpus query: an id, its SQL, the data sets it runs over, the Flink-lacking features it uses,
    and the data sets where Flink departs from the standard (data set -> a FLINK_DEPARTURES key)."""

    id: str
    sql: str
    datasets: tuple[str, ...]
    flags: frozenset[str] = frozenset()
    flink_departs: tuple[tuple[str, str], ...] = ()

    @property
    def runs_in_flink(self) -> bool:
        """Whether Flink supports every feature the query uses."""
        return not self.flags & FLINK_LACKS


def _mr(body: str, partition: str = "PARTITION BY key") -> str:
    return f"SELECT * FROM T MATCH_RECOGNIZE ({partition} ORDER BY ts, id {body}) AS M"


def _case(
    id: str,
    body: str,
    datasets: tuple[str, ...],
    *flags: str,
    partition: str = "PARTITION BY key",
    departs: tuple[tuple[str, str], ...] = (),
) -> Case:
    return Case(id, _mr(body, partition), datasets, frozenset(flags), departs)


_SUM_BELOW = """MEASURES SUM(A.price) AS sum_price, FIRST(ts) AS start_ts, LAST(ts) AS end_ts
  ONE ROW PER MATCH AFTER MATCH SKIP {skip}
  PATTERN ({pattern}) DEFINE A AS SUM(A.price) < 8"""

CASES: tuple[Case, ...] = (
    # --- Flink-supported: the documentation's shapes over every data set -------------------------
    _case(
        "v_shape",
        """MEASURES START_ROW.ts AS start_ts, LAST(DOWN.ts) AS bottom_ts, LAST(UP.ts) AS end_ts
        ONE ROW PER MATCH AFTER MATCH SKIP TO LAST UP
        PATTERN (START_ROW DOWN+ UP)
        DEFINE DOWN AS (LAST(DOWN.price, 1) IS NULL AND DOWN.price < START_ROW.price)
                       OR DOWN.price < LAST(DOWN.price, 1),
               UP AS UP.price > LAST(DOWN.price, 1)""",
        ALL,
    ),
    _case(
        "rise_then_drop",
        """MEASURES FIRST(A.price) AS start_price, LAST(A.price) AS top_price, B.price AS last_price
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A+ B)
        DEFINE A AS LAST(A.price, 1) IS NULL OR A.price > LAST(A.price, 1), B AS B.price < LAST(A.price)""",
        ALL,
    ),
    _case(
        "aggregates_in_measures",
        """MEASURES COUNT(*) AS n_rows, COUNT(A.price) AS n_a, SUM(A.vol) AS sum_vol, AVG(A.price) AS avg_a,
                 MIN(A.price) AS min_a, MAX(A.price) AS max_a, MIN(price) AS min_all, SUM(price) AS sum_all
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A+ B)
        DEFINE A AS LAST(A.price, 1) IS NULL OR A.price >= LAST(A.price, 1), B AS B.price < LAST(A.price)""",
        ALL,
    ),
    _case(
        "first_last_offsets",
        """MEASURES FIRST(A.price) AS a0, FIRST(A.price, 1) AS a1, FIRST(A.ts, 2) AS a2_ts,
                 LAST(A.price, 1) AS a_prev, LAST(A.price, 2) AS a_prev2, LAST(price, 1) AS before_b,
                 FIRST(price, 3) AS fourth
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A{3,} B)
        DEFINE A AS A.price >= FIRST(A.price), B AS B.price < FIRST(A.price)""",
        ALL,
    ),
    _case(
        "final_keyword",
        """MEASURES FINAL LAST(A.price) AS final_last, LAST(A.price) AS plain_last,
                 FINAL COUNT(A.price) AS final_count, SUM(A.vol) AS sum_vol
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A+ B)
        DEFINE A AS A.price <= FIRST(A.price), B AS B.price > FIRST(A.price)""",
        ALL,
    ),
    _case(
        "running_keyword",
        """MEASURES RUNNING LAST(A.price) AS running_last, RUNNING SUM(A.vol) AS running_vol
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A+ B)
        DEFINE A AS A.price <= FIRST(A.price), B AS B.price > FIRST(A.price)""",
        RANDOM,
        "running",
    ),
    _case(
        "avg_so_far_below",
        """MEASURES FIRST(A.ts) AS start_ts, LAST(A.ts) AS end_ts, AVG(A.price) AS avg_price, COUNT(A.price) AS n
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A+ B)
        DEFINE A AS AVG(A.price) < 3""",
        RANDOM,
    ),
    _case(
        "avg_so_far_below_stocks",
        """MEASURES FIRST(A.ts) AS start_ts, LAST(A.ts) AS end_ts, AVG(A.price) AS avg_price, COUNT(A.price) AS n
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A+ B)
        DEFINE A AS AVG(A.price) < 40""",
        ("stocks",),
    ),
    # --- AFTER MATCH SKIP ----------------------------------------------------------------------------
    _case("skip_past_last_row", _SUM_BELOW.format(skip="PAST LAST ROW", pattern="A+ C"), RANDOM),
    _case("skip_to_next_row", _SUM_BELOW.format(skip="TO NEXT ROW", pattern="A+ C"), RANDOM),
    _case("skip_to_last_var", _SUM_BELOW.format(skip="TO LAST A", pattern="S A+ C"), RANDOM),
    _case("skip_to_first_var", _SUM_BELOW.format(skip="TO FIRST A", pattern="S A+ C"), RANDOM),
    _case("skip_to_last_last_var", _SUM_BELOW.format(skip="TO LAST C", pattern="A+ C"), RANDOM),
    _case(
        "skip_default",
        """MEASURES FIRST(A.price) AS start_price, LAST(A.price) AS top_price, B.price AS last_price
        ONE ROW PER MATCH
        PATTERN (A+ B)
        DEFINE A AS LAST(A.price, 1) IS NULL OR A.price > LAST(A.price, 1), B AS B.price < LAST(A.price)""",
        RANDOM,
        "default_skip",
    ),
    # --- quantifiers ---------------------------------------------------------------------------------
    _case(
        "greedy_star_middle",
        """MEASURES A.price AS a_price, COUNT(B.price) AS n_b, C.price AS c_price
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B* C)
        DEFINE A AS A.price > 2, B AS B.price < 4, C AS C.price > 2""",
        RANDOM,
    ),
    _case(
        "reluctant_star_middle",
        """MEASURES A.price AS a_price, COUNT(B.price) AS n_b, C.price AS c_price
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B*? C)
        DEFINE A AS A.price > 2, B AS B.price < 4, C AS C.price > 2""",
        RANDOM,
    ),
    _case(
        "greedy_plus_negated_end",
        """MEASURES FIRST(B.ts) AS first_b, LAST(B.ts) AS last_b, C.price AS c_price
        ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
        PATTERN (A B+ C)
        DEFINE A AS A.price < 3, B AS B.price >= 3, C AS C.price < 3""",
        RANDOM,
    ),
    _case(
        "reluctant_plus_middle",
        """MEASURES A.ts AS a_ts, COUNT(B.price) AS n_b, SUM(B.vol) AS vol_b, C.ts AS c_ts
        ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
        PATTERN (A B+? C)
        DEFINE B AS B.price <> A.price, C AS C.price = A.price""",
        RANDOM,
    ),
    _case(
        "exactly_n",
        """MEASURES A.price AS a_price, FIRST(B.price) AS b1, LAST(B.price) AS b2, C.price AS c_price
        ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
        PATTERN (A B{2} C)
        DEFINE B AS B.price < A.price, C AS C.price > A.price""",
        ALL,
    ),
    _case(
        "at_least_n",
        """MEASURES A.ts AS a_ts, COUNT(B.price) AS n_b, MIN(B.price) AS min_b, C.ts AS c_ts
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B{2,} C)
        DEFINE B AS B.price <= A.price, C AS C.price > A.price""",
        ALL,
    ),
    _case(
        "between_n_m",
        """MEASURES A.ts AS a_ts, COUNT(B.price) AS n_b, C.ts AS c_ts
        ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
        PATTERN (A B{1,3} C)
        DEFINE B AS B.price < A.price, C AS C.price >= A.price""",
        ALL,
    ),
    _case(
        "up_to_m",
        """MEASURES A.ts AS a_ts, COUNT(B.price) AS n_b, C.ts AS c_ts
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B{,2} C)
        DEFINE A AS A.price >= 4, B AS B.price < 4, C AS C.price >= 4""",
        RANDOM,
        "no_lower_bound",
    ),
    _case(
        "zero_to_m",
        """MEASURES A.ts AS a_ts, COUNT(B.price) AS n_b, C.ts AS c_ts
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B{0,2} C)
        DEFINE A AS A.price >= 4, B AS B.price < 4, C AS C.price >= 4""",
        RANDOM,
    ),
    _case(
        "optional_middle",
        """MEASURES A.price AS a_price, B.price AS b_price, C.price AS c_price
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B? C)
        DEFINE B AS B.price < 3, C AS LAST(price, 1) < C.price""",
        (*ALL, "tiny_optional"),
        departs=(
            ("rand1", "optional_first_completed"),
            ("rand2", "optional_first_completed"),
            ("flights", "optional_first_completed"),
            ("tiny_optional", "optional_first_completed"),
        ),
    ),
    _case(
        "reluctant_at_least_n",
        """MEASURES A.ts AS a_ts, COUNT(B.price) AS n_b, C.ts AS c_ts
        ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
        PATTERN (A B{2,}? C)
        DEFINE B AS B.price <= A.price + 1, C AS C.price > A.price""",
        (*RANDOM, "tiny_pending"),
        departs=(("rand1", "pending_replaced"), ("tiny_pending", "pending_replaced")),
    ),
    _case(
        "reluctant_between",
        """MEASURES A.ts AS a_ts, COUNT(B.price) AS n_b, C.ts AS c_ts
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B{1,3}? C)
        DEFINE B AS B.price >= 2, C AS C.price >= 3""",
        RANDOM,
    ),
    _case(
        "reluctant_last_plus",
        """MEASURES A.ts AS a_ts, COUNT(B.price) AS n_b, LAST(B.ts) AS b_ts
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B+?)
        DEFINE A AS A.price = 1, B AS B.price > 1""",
        ("rand1", "rand2", "flights"),
    ),
    _case(
        "reluctant_last_between",
        """MEASURES A.ts AS a_ts, COUNT(B.price) AS n_b, SUM(B.price) AS sum_b
        ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
        PATTERN (A B{2,4}?)
        DEFINE A AS A.price <= 2, B AS B.price >= A.price""",
        RANDOM,
    ),
    _case(
        "four_singletons",
        """MEASURES A.price AS p1, B.price AS p2, C.price AS p3, D.price AS p4, D.ts AS end_ts
        ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
        PATTERN (A B C D)
        DEFINE B AS B.price < A.price, C AS C.price > B.price, D AS D.price < C.price""",
        ALL,
    ),
    # --- DEFINE expressions --------------------------------------------------------------------------
    _case(
        "define_first",
        """MEASURES FIRST(B.ts) AS first_b, COUNT(B.price) AS n_b, C.price AS c_price
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B+ C)
        DEFINE B AS B.price >= FIRST(B.price) AND B.price <> A.price, C AS C.price < FIRST(B.price)""",
        ALL,
    ),
    _case(
        "define_avg_so_far",
        """MEASURES AVG(B.price) AS avg_b, COUNT(B.price) AS n_b, C.price AS c_price
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B+ C)
        DEFINE B AS B.price <= AVG(B.price) + 1, C AS C.price > AVG(B.price) + 1""",
        RANDOM,
    ),
    _case(
        "define_arithmetic",
        """MEASURES A.price - C.price AS drop_size, C.ts AS c_ts, LAST(B.price * B.vol) AS last_amount
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B+? C)
        DEFINE B AS B.price * 2 >= A.price + 1, C AS C.price * 2 < A.price + B.vol - 4""",
        RANDOM,
    ),
    _case(
        "define_sum_vol",
        """MEASURES SUM(A.vol) AS sum_vol, COUNT(A.vol) AS n_a, B.vol AS b_vol
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A+ B)
        DEFINE A AS SUM(A.vol) < 20, B AS B.vol > 5""",
        RANDOM,
        departs=(("rand1", "greedy_commits"), ("rand2", "greedy_commits")),
    ),
    _case(
        "define_last_offsets",
        """MEASURES FIRST(B.ts) AS first_b, LAST(B.ts) AS last_b, C.price AS c_price
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B{2,} C)
        DEFINE B AS LAST(B.price, 2) IS NULL OR B.price <> LAST(B.price, 2),
               C AS C.price = LAST(B.price, 1)""",
        ALL,
    ),
    _case(
        "greedy_commits",
        """MEASURES FIRST(B.id) AS first_b, LAST(B.id) AS last_b, C.id AS c_id
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B+ C)
        DEFINE B AS LAST(B.price, 1) IS NULL OR B.price <> LAST(B.price, 1), C AS C.price < 2""",
        ("tiny_greedy",),
        departs=(("tiny_greedy", "greedy_commits"),),
    ),
    _case(
        "define_universal_last",
        """MEASURES FIRST(D.ts) AS first_d, COUNT(D.price) AS n_down, LAST(ts) AS end_ts
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (S D{3,} U)
        DEFINE D AS D.price < LAST(price, 1), U AS U.price > LAST(price, 1)""",
        ALL,
    ),
    # --- WITHIN ----------------------------------------------------------------------------------------
    _case(
        "within_seconds",
        """MEASURES A.ts AS a_ts, C.ts AS c_ts, A.price - C.price AS drop_size
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B*? C) WITHIN INTERVAL '5' SECOND
        DEFINE C AS C.price < A.price - 2""",
        RANDOM,
        departs=(("rand1", "window_timeout"),),
    ),
    _case(
        "within_days_stocks",
        """MEASURES A.ts AS a_ts, C.ts AS c_ts, A.price - C.price AS drop_size
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B*? C) WITHIN INTERVAL '92' DAY
        DEFINE C AS C.price < A.price * 0.85""",
        ("stocks",),
    ),
    _case(
        "within_minutes_flights",
        """MEASURES A.ts AS a_ts, C.ts AS c_ts, C.price - A.price AS delay_growth
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B*? C) WITHIN INTERVAL '20' MINUTE
        DEFINE C AS C.price > A.price + 30""",
        ("flights",),
    ),
    # --- data-set flavoured --------------------------------------------------------------------------
    _case(
        "delay_streak",
        """MEASURES FIRST(A.ts) AS start_ts, COUNT(A.price) AS n_delayed, MAX(A.price) AS worst, B.ts AS end_ts
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A{2,} B)
        DEFINE A AS A.price > 15, B AS B.price <= 15""",
        ("flights",),
    ),
    _case(
        "stock_drawdown",
        """MEASURES S.price AS peak, LAST(D.price) AS trough, COUNT(D.price) AS months, (S.price - LAST(D.price)) / S.price AS loss
        ONE ROW PER MATCH AFTER MATCH SKIP TO LAST D
        PATTERN (S D{3,} U)
        DEFINE D AS D.price < LAST(price, 1), U AS U.price >= LAST(price, 1)""",
        ("stocks",),
    ),
    _case(
        "no_partition",
        """MEASURES FIRST(A.key) AS first_key, COUNT(A.price) AS n_a, LAST(A.ts) AS end_ts, B.key AS b_key
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A{2,} B)
        DEFINE A AS A.key = FIRST(A.key), B AS B.key <> FIRST(A.key)""",
        RANDOM,
        partition="",
    ),
    # --- oracle only: what Flink lacks ------------------------------------------------------------------
    _case(
        "all_rows_running_final",
        """MEASURES RUNNING COUNT(*) AS running_n, FINAL COUNT(*) AS final_n, RUNNING LAST(A.price) AS last_a,
                 FINAL LAST(A.price) AS final_last_a, CLASSIFIER() AS cls, MATCH_NUMBER() AS match_no
        ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A+ B)
        DEFINE A AS LAST(A.price, 1) IS NULL OR A.price > LAST(A.price, 1), B AS B.price < LAST(A.price)""",
        ALL,
        "all_rows",
        "classifier",
        "match_number",
        "running",
    ),
    _case(
        "alternation_top",
        """MEASURES FIRST(ts) AS start_ts, LAST(ts) AS end_ts, COUNT(U.price) AS n_u, COUNT(D.price) AS n_d
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (S U U | S D D)
        DEFINE U AS U.price > LAST(price, 1), D AS D.price < LAST(price, 1)""",
        ALL,
        "alternation",
    ),
    _case(
        "alternation_in_group",
        """MEASURES FIRST(ts) AS start_ts, COUNT(*) AS n, CLASSIFIER() AS last_var
        ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
        PATTERN (S (U | D)+ E)
        DEFINE U AS U.price > LAST(price, 1), D AS D.price < LAST(price, 1), E AS E.price = LAST(price, 1)""",
        RANDOM,
        "alternation",
        "groups",
        "classifier",
    ),
    _case(
        "group_repeated",
        """MEASURES FIRST(ts) AS start_ts, COUNT(U.price) AS pairs, LAST(ts) AS end_ts
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (S (U D){2,} E)
        DEFINE U AS U.price > LAST(price, 1), D AS D.price < LAST(price, 1)""",
        ALL,
        "groups",
    ),
    _case(
        "group_reluctant",
        """MEASURES FIRST(ts) AS start_ts, COUNT(U.price) AS pairs, LAST(ts) AS end_ts
        ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
        PATTERN (S (U D)+? E)
        DEFINE U AS U.price > LAST(price, 1), D AS D.price < LAST(price, 1), E AS E.price >= LAST(price, 1)""",
        RANDOM,
        "groups",
    ),
    _case(
        "prev_down_run",
        """MEASURES FIRST(A.ts) AS start_ts, COUNT(A.price) AS n, LAST(A.price) AS bottom
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A{2,} B)
        DEFINE A AS A.price < PREV(A.price), B AS B.price >= PREV(B.price)""",
        ALL,
        "prev",
    ),
    _case(
        "prev_outside_match",
        """MEASURES A.ts AS a_ts, PREV(A.price, 2) AS two_before, B.price AS b_price
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B)
        DEFINE A AS A.price > PREV(A.price, 2), B AS B.price > PREV(LAST(A.price), 1)""",
        RANDOM,
        "prev",
    ),
    _case(
        "greedy_last_plus",
        """MEASURES A.ts AS a_ts, COUNT(B.price) AS n_b, LAST(B.ts) AS b_ts
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B+)
        DEFINE A AS A.price = 1, B AS B.price > 1""",
        ALL,
        "greedy_last",
    ),
    _case(
        "greedy_last_between",
        """MEASURES A.ts AS a_ts, COUNT(B.price) AS n_b, SUM(B.price) AS sum_b
        ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
        PATTERN (A B{2,4})
        DEFINE A AS A.price <= 2, B AS B.price >= A.price""",
        RANDOM,
        "greedy_last",
    ),
    _case(
        "classifier_match_number",
        """MEASURES CLASSIFIER() AS last_var, MATCH_NUMBER() AS match_no, COUNT(*) AS n
        ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
        PATTERN (A B? C)
        DEFINE A AS A.price >= 3, B AS B.price < A.price, C AS C.price > LAST(price, 1)""",
        ALL,
        "classifier",
        "match_number",
    ),
    _case(
        "reluctant_optional",
        """MEASURES A.price AS a_price, B.price AS b_price, C.price AS c_price
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B?? C)
        DEFINE B AS B.price < 3, C AS LAST(price, 1) < C.price""",
        RANDOM,
        "reluctant_optional",
    ),
    _case(
        "empty_matches",
        """MEASURES COUNT(A.price) AS n_a, MATCH_NUMBER() AS match_no
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A*)
        DEFINE A AS A.price >= 4""",
        RANDOM,
        "empty_match",
        "greedy_last",
        "match_number",
    ),
    _case(
        "empty_matches_all_rows",
        """MEASURES RUNNING COUNT(A.price) AS n_a, CLASSIFIER() AS cls, MATCH_NUMBER() AS match_no
        ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A*)
        DEFINE A AS A.price >= 4""",
        RANDOM,
        "empty_match",
        "greedy_last",
        "match_number",
        "classifier",
        "all_rows",
        "running",
    ),
)

BY_ID: dict[str, Case] = {case.id: case for case in CASES}
