"""VERIFY VIEW and the replay's naive check compare FLOAT/DOUBLE columns within a relative tolerance
(maintainer/compare.py): running window sums that drift in the last bits verify, genuinely wrong parts do
not, every other column is compared exactly, and TOLERANCE 0 is the exact comparison."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pandas as pd
import pytest

from test_errors import fails
from viewdf_magic import ViewDFError
from viewdf_magic.language.parser import parse
from viewdf_magic.maintainer.compare import DEFAULT_TOLERANCE, Comparison, compare_rows
from viewdf_magic.notebook.replay import Replay

T0 = pd.Timestamp("2015-01-01 10:00")
FIRST = 23668440                      # 2015-01-01 10:00 in minute parts
TINY = 2.0 ** -53                     # half a unit in the last place of 1.0
NAN, INF = float("nan"), float("inf")
STREAM = "CREATE STREAM D (ts TIMESTAMP, k STRING, v DOUBLE) PARTITION LENGTH 60"
WINDOW = "CREATE VIEW W AS SELECT k, sum(v) AS total FROM D [WINDOW 2 MINUTES] GROUP BY k"


def values(vs: list[float], key: str = "a") -> pd.DataFrame:
    """One row per minute from 10:00 on."""
    return pd.DataFrame({"ts": [T0 + pd.Timedelta(minutes=m) for m in range(len(vs))], "k": key, "v": vs})


def verify(warehouse, text: str) -> pd.DataFrame:
    [result] = warehouse.run(text)
    result.table.attrs["message"] = result.message
    return result.table


def columns(table: pd.DataFrame, *names: str) -> list[tuple]:
    return list(table[list(names)].itertuples(index=False, name=None))


def ingest_minute_by_minute(warehouse, frame: pd.DataFrame) -> None:
    """One ingest per minute, so every window part is stepped from the one before (a running sum that can
    drift); a multi-part ingest would compute the run in one range step from its RECOMPUTE query."""
    for minute in sorted(frame["ts"].unique()):
        warehouse.ingest("D", frame[frame["ts"] == minute])


def rel(a: float, b: float) -> float:
    """The documented difference of two finite floats, computed as Spark computes it."""
    return abs(a - b) / max(1.0, abs(a), abs(b))


# -- a DOUBLE window sum whose running parts drift ------------------------------------------------------------
def test_a_drifting_double_window_sum_verifies_within_the_default_tolerance(warehouse):
    # Window of 2 parts over 1, 2^-53, 2^-53. Part 1: 1 + 2^-53 rounds to 1, both ways. Part 2: the running
    # sum adds 2^-53 and subtracts 1 from that 1 (0 or 2^-53, whatever Spark's order), the fresh sum is
    # 2^-53 + 2^-53 = 2^-52: 2^-53 or 2^-52 apart, relative to max(1, |a|, |b|) = 1.
    warehouse.execute(STREAM)
    warehouse.execute(WINDOW)
    ingest_minute_by_minute(warehouse, values([1.0, TINY, TINY]))
    assert list(warehouse.recompute("W", T0 + pd.Timedelta(minutes=2))["total"]) == [2 * TINY]
    assert list(warehouse.read_part("W", T0 + pd.Timedelta(minutes=2))["total"]) in ([0.0], [TINY])
    exact = verify(warehouse, "VERIFY VIEW W TOLERANCE 0")
    assert columns(exact, "part", "stored_rows", "missing_rows", "extra_rows", "equal") == [
        (FIRST, 1, 0, 0, True), (FIRST + 1, 1, 0, 0, True), (FIRST + 2, 1, 1, 1, False)]
    assert exact["max_difference"].isna().all()
    assert exact.attrs["message"] == "W: 1 of 3 parts differ from their recomputation."
    default = verify(warehouse, "VERIFY VIEW W")
    assert columns(default, "part", "missing_rows", "extra_rows", "equal") == [
        (FIRST, 0, 0, True), (FIRST + 1, 0, 0, True), (FIRST + 2, 0, 0, True)]
    drift = default["max_difference"].iloc[2]
    assert list(default["max_difference"].iloc[:2]) == [0.0, 0.0] and drift in (TINY, 2 * TINY)
    assert default.attrs["message"] == ("W: all 3 parts equal their recomputation, FLOAT/DOUBLE values within "
                                        f"a relative 1e-09 (largest difference {drift:.3g}).")
    check = warehouse.verify_part("W", T0 + pd.Timedelta(minutes=2))
    assert (check.comparison, check.recompute_seconds > 0) == (Comparison(0, 0, drift), True)
    assert warehouse.verify_part("W", T0 + pd.Timedelta(minutes=2), tolerance=0).comparison == Comparison(1, 1)


def test_cancellation_beyond_the_tolerance_is_still_reported(warehouse):
    # 1e16 leaves the window at part 2: the running sum has lost the 1 it added at part 1 (1e16 + 1 rounds
    # to 1e16), so it holds 0 or 1 where the fresh sum is 1 + 1 = 2. Relative to 2 that is no rounding noise.
    warehouse.execute(STREAM)
    warehouse.execute(WINDOW)
    ingest_minute_by_minute(warehouse, values([1e16, 1.0, 1.0]))
    table = verify(warehouse, "VERIFY VIEW W")
    assert columns(table, "missing_rows", "extra_rows", "equal") == [(0, 0, True), (0, 0, True), (1, 1, False)]
    assert list(table["max_difference"]) == [0.0, 0.0, 0.0]        # nothing matched only within the tolerance
    assert table.attrs["message"] == "W: 1 of 3 parts differ from their recomputation."
    loose = verify(warehouse, "VERIFY VIEW W TOLERANCE 1")
    assert loose["equal"].all() and loose["max_difference"].iloc[2] in (0.5, 1.0)    # |2 - 1| / 2 or |2 - 0| / 2


# -- a genuinely wrong part ---------------------------------------------------------------------------------
WRONG = """
CREATE VIEW T AS
INITIALIZE T[i] AS SELECT k, sum(v) AS total FROM D[i] GROUP BY k
UPDATE T[j] AS SELECT k, sum(v) * CASE WHEN k = 'b' THEN 1.000001 ELSE 1 END AS total FROM D[j] GROUP BY k
RECOMPUTE T[j] AS SELECT k, sum(v) FROM D[j] GROUP BY k
"""


def test_a_wrong_double_part_is_reported_with_exact_counts(warehouse):
    # T's UPDATE is off by a relative 1e-6 for key b: far beyond 1e-9, within 1e-5.
    warehouse.execute(STREAM)
    warehouse.ingest("D", pd.concat([values([3.0, 5.0, 7.0], "a"), values([2.0, 4.0, 6.0], "b"),
                                     values([1.5], "c")], ignore_index=True))
    warehouse.execute(WRONG)
    table = verify(warehouse, "VERIFY VIEW T")
    assert columns(table, "stored_rows", "missing_rows", "extra_rows", "equal") == [
        (3, 0, 0, True), (2, 1, 1, False), (2, 1, 1, False)]
    assert list(table["max_difference"]) == [0.0, 0.0, 0.0]
    assert table.attrs["message"] == "T: 2 of 3 parts differ from their recomputation."
    loose = verify(warehouse, "VERIFY VIEW T TOLERANCE 1e-5")
    assert list(loose["equal"]) == [True, True, True]
    assert list(loose["max_difference"]) == [0.0, rel(4.0 * 1.000001, 4.0), rel(6.0 * 1.000001, 6.0)]
    assert loose.attrs["message"] == ("T: all 3 parts equal their recomputation, FLOAT/DOUBLE values within "
                                      f"a relative 1e-05 (largest difference {rel(4.000004, 4.0):.3g}).")
    exact = verify(warehouse, "VERIFY T TOLERANCE 0")
    assert columns(exact, "missing_rows", "extra_rows", "equal") == [(0, 0, True), (1, 1, False), (1, 1, False)]


def test_tolerance_0_counts_exactly_what_except_all_counts(spark):
    actual = spark.createDataFrame([("x", 1.0), ("x", 1.0), ("x", 2.0), ("y", 5.0)], "k string, v double")
    expected = spark.createDataFrame([("x", 1.0), ("x", 2.0 + 1e-12), ("z", 5.0)], "k string, v double")
    assert (expected.exceptAll(actual).count(), actual.exceptAll(expected).count()) == (2, 3)
    assert compare_rows(actual, expected, 0) == Comparison(missing=2, extra=3, max_difference=None)
    # Within the tolerance, 2.0 pairs with 2.0 + 1e-12 (not with x's second 1.0); y and z stay unpaired.
    assert compare_rows(actual, expected) == Comparison(missing=1, extra=2, max_difference=rel(2.0, 2.0 + 1e-12))


# -- compare_rows on hand-built frames ------------------------------------------------------------------------
def test_duplicates_with_equal_exact_columns_pair_in_float_order(spark):
    actual = spark.createDataFrame([("x", 1.0), ("x", 1.0), ("x", 2.0), ("x", 3.0)], "k string, v double")
    drifted = spark.createDataFrame([("x", 3.0 + 3e-15), ("x", 1.0), ("x", 2.0 - 2e-15), ("x", 1.0 + 1e-15)],
                                    "k string, v double")
    largest = max(rel(1.0, 1.0 + 1e-15), rel(2.0, 2.0 - 2e-15), rel(3.0, 3.0 + 3e-15))
    assert largest == rel(1.0, 1.0 + 1e-15) > 1e-15          # 1e-15 rounds to 5 units in the last place of 1
    assert compare_rows(actual, drifted) == Comparison(0, 0, largest)
    assert compare_rows(actual, drifted, 0) == Comparison(3, 3)
    # One duplicate too many is one extra row, whatever the tolerance: the 2.0 with no drifted partner.
    assert compare_rows(actual.unionAll(actual.filter("v = 2.0")), drifted) == Comparison(0, 1, largest)
    # A second exact 1.0 pairs with actual's second 1.0, so 1.0 + 1e-15 is the one missing.
    assert compare_rows(actual, drifted.unionAll(drifted.filter("v = 1.0"))) == \
        Comparison(1, 0, rel(3.0, 3.0 + 3e-15))
    # Rows set aside when exactly equal: {1, 2} against {2, 3} is one missing and one extra, not two each.
    ones = spark.createDataFrame([(1.0,), (2.0,)], "v double")
    assert compare_rows(ones, spark.createDataFrame([(2.0,), (3.0,)], "v double")) == Comparison(1, 1, 0.0)


def test_nulls_nan_and_infinities_in_float_columns(spark):
    schema = "k string, v double, w float"
    actual = spark.createDataFrame([("a", None, 1.0), ("b", NAN, NAN), ("c", NAN, 1.0), ("d", None, 2.0),
                                    ("e", INF, -INF), ("f", INF, 0.5), (None, 1.0, None)], schema)
    expected = spark.createDataFrame([("a", None, 1.0), ("b", NAN, NAN), ("c", 1.0, 1.0), ("d", 0.0, 2.0),
                                      ("e", INF, -INF), ("f", 1e308, 0.5), (None, 1.0 + 1e-12, None)], schema)
    # c: NaN against 1, d: NULL against 0, f: infinity against 1e308 differ; the NULL key pairs NULL-safely.
    assert compare_rows(actual, expected) == Comparison(3, 3, rel(1.0, 1.0 + 1e-12))
    assert compare_rows(actual, expected, 0.5) == Comparison(3, 3, rel(1.0, 1.0 + 1e-12))
    same = "k IS NULL OR k NOT IN ('c', 'd', 'f')"
    assert compare_rows(actual.filter(same), expected.filter(same)) == Comparison(0, 0, rel(1.0, 1.0 + 1e-12))
    assert compare_rows(actual.filter(same), expected.filter(same), 0) == Comparison(1, 1)


def test_float_columns_and_several_of_them(spark):
    schema = "k int, f float, d double"
    actual = spark.createDataFrame([(1, 0.5, 10.0), (2, 0.25, 20.0)], schema)
    close = spark.createDataFrame([(1, 0.5, 10.0 + 1e-9), (2, 0.25, 20.0)], schema)
    assert compare_rows(actual, close, 1e-9) == Comparison(0, 0, rel(10.0, 10.0 + 1e-9))
    assert compare_rows(actual, close, 1e-11) == Comparison(1, 1, 0.0)
    # One float of the pair beyond the tolerance is enough; a FLOAT compares its own (float32) value.
    far = spark.createDataFrame([(1, 0.5, 10.0), (2, 0.25 + 1e-3, 20.0)], schema)
    [as_float32] = far.filter("k = 2").first()[1:2]
    assert as_float32 != 0.25 + 1e-3
    assert compare_rows(actual, far) == Comparison(1, 1, 0.0)
    assert compare_rows(actual, far, 1e-2) == Comparison(0, 0, as_float32 - 0.25)


def test_every_other_column_is_exact(spark):
    schema = "p decimal(38, 18), t timestamp, s string, a array<double>, r struct<x: double, y: string>, v double"
    when = dt.datetime(2015, 1, 1, 10, 0)
    row = (Decimal("1.000000000000000000"), when, "s", [1.0], (1.0, "y"), 1.0)
    variants = [(Decimal("1.000000000000000001"), when, "s", [1.0], (1.0, "y"), 1.0),
                (row[0], when + dt.timedelta(microseconds=1), "s", [1.0], (1.0, "y"), 1.0),
                (row[0], when, "S", [1.0], (1.0, "y"), 1.0),
                (row[0], when, "s", [1.0 + 1e-15], (1.0, "y"), 1.0),          # a DOUBLE inside an array
                (row[0], when, "s", [1.0], (1.0 + 1e-15, "y"), 1.0)]          # ... or a struct
    actual = spark.createDataFrame([row], schema)
    for variant in variants:
        assert compare_rows(actual, spark.createDataFrame([variant], schema), 0.5) == Comparison(1, 1, 0.0), variant
    drifted = (row[0], when, "s", [1.0], (1.0, "y"), 1.0 + 1e-15)
    assert compare_rows(actual, spark.createDataFrame([drifted], schema)) == Comparison(0, 0, rel(1.0, 1.0 + 1e-15))


def test_columns_match_by_position_and_bad_arguments_are_refused(spark):
    actual = spark.createDataFrame([(1, 1.0)], "a int, b double")
    assert compare_rows(actual, spark.createDataFrame([(1, 1.0)], "x int, y double")) == Comparison(0, 0, 0.0)
    with pytest.raises(ValueError, match="cannot compare 2 columns with 1"):
        compare_rows(actual, actual.select("a"))
    for bad in (-1e-9, NAN, INF):
        with pytest.raises(ValueError, match="the tolerance must be a finite number, 0 or more"):
            compare_rows(actual, actual, bad)
    assert DEFAULT_TOLERANCE == 1e-9


# -- the statement ------------------------------------------------------------------------------------------
def test_tolerance_clause_parses():
    assert [(s.name.text, s.tolerance) for s in parse(
        "VERIFY VIEW W; VERIFY W TOLERANCE 1e-6; VERIFY VIEW W TOLERANCE 0; verify view W tolerance 0.5; "
        "VERIFY W TOLERANCE 1E-12")] == [("W", None), ("W", 1e-6), ("W", 0.0), ("W", 0.5), ("W", 1e-12)]


@pytest.mark.parametrize("text,needle", [
    ("VERIFY VIEW W TOLERANCE abc", "abc"),
    ("VERIFY VIEW W\n  TOLERANCE -1", "-"),
    ("VERIFY VIEW W TOLERANCE 1e999", "1e999"),
    ("VERIFY VIEW W TOLERANCE 1e", "1e"),
    ("VERIFY VIEW W TOLERANCE 'x'", "'x'"),
])
def test_a_bad_tolerance_is_a_positioned_error(warehouse, text, needle):
    warehouse.execute(STREAM)
    error = fails(warehouse, text, needle, "expected a relative tolerance after TOLERANCE (a number, 0 or more, "
                                           "e.g. 1e-6)")
    assert error.message.endswith(f", found '{needle.strip(chr(39))}'" + (" (a string)" if needle == "'x'" else ""))


def test_a_missing_tolerance_is_a_positioned_error(warehouse):
    text = "VERIFY VIEW W TOLERANCE"
    with pytest.raises(ViewDFError) as caught:
        warehouse.execute(text)
    assert caught.value.message == ("expected a relative tolerance after TOLERANCE (a number, 0 or more, e.g. 1e-6) "
                                    "at the end of the statement")
    assert (caught.value.line, caught.value.column) == (1, len(text) + 1)


# -- the replay's naive check ---------------------------------------------------------------------------------
def test_the_replays_naive_check_uses_the_same_comparison(warehouse):
    warehouse.execute(STREAM)
    warehouse.execute(WINDOW)
    replay = Replay(warehouse, "D", values([1.0, TINY, TINY]), views=["W"], naive=True, speed=100)
    replay.play()
    assert replay.wait(300)
    timings = replay.timings
    assert list(timings["part"]) == [FIRST, FIRST + 1, FIRST + 2]
    assert list(timings["equal"]) == [True, True, True]          # the drift of part 2 is within the tolerance
    assert (timings["naive_seconds"] > 0).all()
    assert warehouse.verify_part("W", T0 + pd.Timedelta(minutes=2), tolerance=0).comparison == Comparison(1, 1)
    assert replay.status.value.endswith("✓ equal")


def _verify_jobs(spark, warehouse, minutes: int, group: str) -> tuple[pd.DataFrame, int]:
    """VERIFY VIEW V over ``minutes`` parts, and how many Spark jobs it ran."""
    rows = ", ".join(f"(TIMESTAMP '{T0 + pd.Timedelta(minutes=m)}', {m})" for m in range(minutes))
    warehouse.run("CREATE STREAM S (ts TIMESTAMP, x INT) PARTITION LENGTH 60; "
                  f"INSERT INTO S VALUES {rows}; "
                  "CREATE VIEW V AS INITIALIZE V[i] AS SELECT ts, x FROM S[i] "
                  "UPDATE V[j] AS SELECT ts, CASE WHEN x = 7 THEN x + 1 ELSE x END AS x FROM S[j] "  # part 7 is wrong
                  "UNION ALL SELECT ts, x FROM S[j] WHERE x = 9 "                                   # part 9 repeats
                  "RECOMPUTE V[j] AS SELECT ts, x FROM S[j]")
    tracker = spark.sparkContext.statusTracker()
    spark.sparkContext.setJobGroup(group, "VERIFY VIEW")
    try:
        table = verify(warehouse, "VERIFY VIEW V")
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
        spark.sparkContext.setLocalProperty("spark.job.description", None)
    return table, len(tracker.getJobIdsForGroup(group))


def test_verify_recomputes_a_run_of_parts_in_a_few_jobs_and_names_each_part_that_differs(spark, make_warehouse,
                                                                                           tmp_path):
    """A RECOMPUTE that lifts to many parts verifies a run of parts in a constant number of Spark jobs
    (issue 35: VERIFY in seconds), and still tells each part's missing and extra rows apart."""
    small, small_jobs = _verify_jobs(spark, make_warehouse("small"), 12, f"verify-small-{tmp_path.name}")
    large, large_jobs = _verify_jobs(spark, make_warehouse("large"), 40, f"verify-large-{tmp_path.name}")
    assert small_jobs == large_jobs <= 6
    for table, minutes in ((small, 12), (large, 40)):
        assert table.attrs["message"] == f"V: 2 of {minutes} parts differ from their recomputation."
        assert list(table["part"]) == [FIRST + m for m in range(minutes)]
        assert columns(table[~table["equal"]], "part", "stored_rows", "missing_rows", "extra_rows") == \
            [(FIRST + 7, 1, 1, 1), (FIRST + 9, 2, 0, 1)]
