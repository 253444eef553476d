"""Property test: for random streams (negative, zero and NULL values, empty parts, groups that come and
go, several rows per group per part) and random WINDOW/SLIDE, every stored part of a translated
sliding-window view equals its recomputation (VERIFY VIEW: the RECOMPUTE query over the window's
parts) and an independent pandas oracle, for sum, count, count(*), avg, max and min."""

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oracles import rows, rows_by_part
from window_oracle import aggregate, close, window_parts

T0 = pd.Timestamp("2015-01-01 10:00")
COLUMNS = ["src", "total", "nn", "n", "mean", "peak", "low"]


@st.composite
def streams(draw):
    parts = draw(st.integers(3, 9))
    points = []
    for minute in range(parts):
        for _ in range(draw(st.integers(0, 3))):          # 0: an empty part
            src = draw(st.sampled_from(["a", "b", "c"]))
            value = draw(st.one_of(st.none(), st.integers(-3, 3)))
            points.append((T0 + pd.Timedelta(minutes=minute, seconds=draw(st.integers(0, 59))), src, value))
    if not points:
        points.append((T0, "a", 0))
    width = draw(st.integers(1, 6))
    slide = draw(st.integers(1, width))
    return pd.DataFrame(points, columns=["ts", "src", "loss"]), width, slide, parts


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=streams())
def test_window_view_equals_recompute_and_oracle(make_warehouse, case):
    data, width, slide, parts = case
    wh = make_warehouse(f"prop{abs(hash((len(data), width, slide, parts))) % 10**9}_{id(data)}")
    wh.execute("CREATE STREAM M (ts TIMESTAMP, src STRING, loss INT) PARTITION LENGTH 60")
    wh.ingest("M", data)
    wh.execute(f"SEAL M THROUGH '{T0 + pd.Timedelta(minutes=parts - 1)}'")
    wh.execute(f"CREATE VIEW V AS SELECT src, sum(loss) AS total, count(loss) AS nn, count(*) AS n, "
               f"avg(loss) AS mean, max(loss) AS peak, min(loss) AS low "
               f"FROM M [WINDOW {width} MINUTES SLIDE {slide} MINUTES] GROUP BY src")
    table = wh.execute("VERIFY VIEW V")
    assert table["equal"].all(), table
    expected = {}
    for stamp, window in window_parts(data, 60, width * 60, slide * 60, newest_part=23668440 + parts - 1):
        found = rows(aggregate(window, ["src"]), COLUMNS)
        if found:
            expected[stamp] = found
    got = rows_by_part(wh.execute("SELECT * FROM V"), COLUMNS)
    assert got.keys() == expected.keys(), (got, expected)
    for stamp in expected:
        assert close(got[stamp], expected[stamp]), (stamp, got[stamp], expected[stamp])
    wh.close()
