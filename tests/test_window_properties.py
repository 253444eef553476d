"""Property test: for random streams (INT or DOUBLE values; negative, zero and NULL values, empty parts,
groups that come and go, several rows per group per part), random WINDOW/SLIDE and random queries
(SELECT lists mixing subtractable, distributive and holistic aggregates, with or without GROUP BY,
WHERE and HAVING), every part of a translated sliding-window view and its recomputation (the RECOMPUTE
query over the window's parts) equal an independent pandas oracle: exactly for INT values, and for
DOUBLE values within the drift bound of docs/language.md (``window_oracle.sum_drift_bound`` over the
values a running sum saw since its last REFRESH EVERY part). ``./run test`` draws 8 examples a run (each
run draws new ones), ``./run stress`` 64; VIEWDF_WINDOW_EXAMPLES sets the first number."""

import itertools
import os
import re

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oracles import rows, rows_by_part
from window_oracle import EPSILON, aggregate, sum_drift_bound, window_parts, within

EXAMPLES = int(os.environ.get("VIEWDF_WINDOW_EXAMPLES", "8"))
STRESS_EXAMPLES = 64
T0 = pd.Timestamp("2015-01-01 10:00")
FIRST_PART = 23668440                      # T0's part with PARTITION LENGTH 60
_warehouses = itertools.count()  # one fresh warehouse per example, never a reused name

INCREMENTAL = {"total": "sum(loss)", "nn": "count(loss)", "n": "count(*)", "mean": "avg(loss)",
               "peak": "max(loss)", "low": "min(loss)"}
HOLISTIC = {"nd": "count(DISTINCT loss)", "pa": "percentile_approx(loss, 0.5)", "med": "median(loss)"}
WHERE = {"": lambda frame: frame,
         "loss IS NULL OR loss <> 0": lambda frame: frame[frame["loss"].isna() | (frame["loss"] != 0).fillna(False)]}
HAVING = {"": lambda row: True,                      # no HAVING on sums or means: DOUBLE drift may flip them
          "count(*) >= 2": lambda row: row["n"] >= 2,
          "count(DISTINCT loss) >= 2 OR count(*) = 1": lambda row: row["nd"] >= 2 or row["n"] == 1,
          "max(loss) > 0 OR percentile_approx(loss, 0.5) < 0":
              lambda row: row["nn"] > 0 and (row["peak"] > 0 or row["pa"] < 0)}
DOUBLES = st.one_of(st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False),
                    st.sampled_from([0.1, 0.2, 0.3, -0.0, 1e15, -1e15, 1e-7]))


@st.composite
def streams(draw):
    double = draw(st.booleans())
    parts = draw(st.integers(3, 9))
    points = []
    for minute in range(parts):
        for _ in range(draw(st.integers(0, 3))):          # 0: an empty part
            src = draw(st.sampled_from(["a", "b", "c"]))
            value = draw(st.one_of(st.none(), DOUBLES if double else st.integers(-3, 3)))
            points.append((T0 + pd.Timedelta(minutes=minute, seconds=draw(st.integers(0, 59))), src, value))
    if not points:
        points.append((T0, "a", 0))
    width = draw(st.integers(1, 8))
    slide = draw(st.integers(1, width))
    data = pd.DataFrame(points, columns=["ts", "src", "loss"]).astype({"loss": "float64" if double else "Int64"})
    return data, width, slide, parts


@st.composite
def queries(draw):
    """(output columns, group keys, WHERE, HAVING): any mix of the aggregates, at least one."""
    incremental = draw(st.lists(st.sampled_from(sorted(INCREMENTAL)), max_size=6, unique=True))
    holistic = draw(st.lists(st.sampled_from(sorted(HOLISTIC)), min_size=0 if incremental else 1, max_size=3,
                             unique=True))
    keys = draw(st.sampled_from([["src"], []]))
    return keys + incremental + holistic, keys, draw(st.sampled_from(sorted(WHERE))), \
        draw(st.sampled_from(sorted(HAVING)))


def view_text(columns: list[str], keys: list[str], where: str, having: str, width: int, slide: int) -> str:
    items = [c if c in keys else f"{(INCREMENTAL | HOLISTIC)[c]} AS {c}" for c in columns]
    return (f"CREATE VIEW V AS SELECT {', '.join(items)} FROM M [WINDOW {width} MINUTES SLIDE {slide} MINUTES]"
            + (f" WHERE {where}" if where else "") + (f" GROUP BY {', '.join(keys)}" if keys else "")
            + (f" HAVING {having}" if having else ""))


def refreshed(wh, width: int, slide: int) -> int | None:
    """V__sum's REFRESH EVERY (it has one when it sums DOUBLE values), checked against the documented
    max(16, 4·⌈W/s⌉)."""
    helper = wh.catalog.get("V__sum")
    found = re.search(r"REFRESH EVERY (\d+) PARTS", helper.definition) if helper is not None else None
    if found is not None:
        assert int(found.group(1)) == max(16, 4 * -(-width // slide))
    return int(found.group(1)) if found else None


def allowed(row: pd.Series, chain: pd.DataFrame, keys: list[str]) -> dict[str, float]:
    """The absolute error allowed in a DOUBLE row: the sum drift bound over the values its group's running
    sum saw (``chain``), that divided by the count for avg (plus one rounding each side), one rounding
    for median; every other column is exact."""
    for key in keys:
        chain = chain[chain[key] == row[key]]
    total = sum_drift_bound([float(v) for v in chain["loss"].dropna()])
    if not row["nn"]:
        return {}
    return {"total": total, "mean": total / row["nn"] + 2 * EPSILON * abs(row["mean"]),
            "med": EPSILON * abs(row["med"])}


def expected_parts(data, width, slide, parts, query, refresh) -> dict:
    """{part start: (oracle rows, absolute error allowed per value)} for every view part. A running sum
    restarts from scratch at its first part and every ``refresh`` parts, so it saw the values from that
    part's window up to this part's."""
    columns, keys, where, having = query
    double = data["loss"].dtype == "float64"
    found = {}
    filtered = WHERE[where](data)
    first = int(pd.to_datetime(data["ts"]).min().timestamp()) // 60
    for stamp, window in window_parts(filtered, 60, width * 60, slide * 60, first, FIRST_PART + parts - 1):
        agg = aggregate(window, keys)
        agg = agg[[HAVING[having](row) for _, row in agg.iterrows()]] if len(agg) else agg
        j = int(stamp.timestamp()) // (slide * 60)
        start = max(first // slide, refresh * (j // refresh)) if refresh else j
        chain = filtered[(filtered["ts"] >= pd.Timestamp((start * slide + slide - width) * 60, unit="s"))
                         & (filtered["ts"] < pd.Timestamp((j + 1) * slide * 60, unit="s"))]
        limits = [allowed(row, chain, keys) if double else {} for _, row in agg.iterrows()]
        table = agg.assign(**{f"b_{c}": [limit.get(c, 0.0) for limit in limits] for c in columns})
        both = rows(table, columns + [f"b_{c}" for c in columns]) if len(agg) else []
        found[stamp] = ([r[:len(columns)] for r in both], [r[len(columns):] for r in both])
    return found


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=streams(), query=queries())
def test_window_view_equals_recompute_and_oracle(make_warehouse, case, query):
    check_window_view(make_warehouse, case, query)


@pytest.mark.stress
@settings(max_examples=STRESS_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=streams(), query=queries())
def test_window_view_equals_recompute_and_oracle_at_length(make_warehouse, case, query):
    check_window_view(make_warehouse, case, query)


def check_window_view(make_warehouse, case, query) -> None:
    """The view's parts and their recomputation equal the oracle's."""
    data, width, slide, parts = case
    columns, keys, where, having = query
    double = data["loss"].dtype == "float64"
    wh = make_warehouse(f"prop{next(_warehouses)}")
    wh.execute(f"CREATE STREAM M (ts TIMESTAMP, src STRING, loss {'DOUBLE' if double else 'INT'}) "
               f"PARTITION LENGTH 60")
    wh.ingest("M", data)
    wh.execute(f"SEAL M THROUGH '{T0 + pd.Timedelta(minutes=parts - 1)}'")
    wh.execute(view_text(columns, keys, where, having, width, slide))
    expected = expected_parts(data, width, slide, parts, query, refreshed(wh, width, slide))
    got = rows_by_part(wh.execute("SELECT * FROM V"), columns)
    assert got.keys() == {stamp for stamp, (found, _) in expected.items() if found}, (got, expected)
    for stamp, (found, limits) in expected.items():
        assert within(got.get(stamp, []), found, limits), (stamp, got.get(stamp), found, limits)
        fresh = rows(wh.recompute("V", stamp), columns)
        assert within(fresh, found, limits), (stamp, fresh, found, limits)
    wh.close()
