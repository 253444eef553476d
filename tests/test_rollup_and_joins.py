"""The paper's section 4.2 views: an hourly rollup over minute parts, a band join of two streams,
and a ViewDF that combines its own previous part with a dimension table."""

import pandas as pd

from oracles import hourly_loss, minute_join, minutes, rows, rows_by_part, running_region_totals

STREAM_M = "CREATE STREAM M (ts TIMESTAMP, src STRING, dest STRING, loss INT) TIMESTAMP ts PARTITION LENGTH 60"

VIEW3 = """
CREATE VIEW View3 AS
INITIALIZE View3[i] AS
  SELECT src, dest, sum(loss) AS sum_loss FROM M[i*60 .. i*60+59] GROUP BY src, dest
UPDATE View3[j] AS
  SELECT src, dest, sum(loss) AS sum_loss FROM M[j*60 .. j*60+59] GROUP BY src, dest
PARTITION LENGTH 3600
"""

HOUR_10 = 394474          # 2015-01-01 10:00 in hours
MINUTE_1000 = 23668440    # 2015-01-01 10:00 in minutes


def _measurements(*rows_: tuple) -> pd.DataFrame:
    return pd.DataFrame(rows_, columns=["ts", "src", "dest", "loss"]).astype(
        {"ts": "datetime64[ns]", "loss": "int32"})


def test_hourly_rollup_waits_for_the_last_minute_of_each_hour(warehouse):
    warehouse.execute(f"{STREAM_M}; {VIEW3}")
    batches = [
        _measurements(("2015-01-01 10:30:05", "a", "b", 3), ("2015-01-01 10:31:00", "a", "b", 4),
                      ("2015-01-01 10:45:59", "a", "c", 10), ("2015-01-01 10:45:00", "a", "b", 1),
                      ("2015-01-01 10:58:30", "x", "y", 7)),
        _measurements(("2015-01-01 10:59:59", "a", "b", 100)),
        _measurements(("2015-01-01 11:05:00", "a", "b", 5), ("2015-01-01 11:40:00", "x", "y", 6)),
        _measurements(("2015-01-01 12:10:00", "a", "b", 9)),
    ]
    view3_parts = lambda: list(warehouse.parts("View3")["part"])  # noqa: E731

    warehouse.ingest("M", batches[0])
    assert view3_parts() == [], "10:00's hour is not over before M[10:59] exists"
    warehouse.ingest("M", batches[1])
    assert view3_parts() == [HOUR_10]
    warehouse.ingest("M", batches[2])
    assert view3_parts() == [HOUR_10], "11:00's hour waits for M[11:59]"
    warehouse.ingest("M", batches[3])                       # seals 11:41 .. 12:09
    assert view3_parts() == [HOUR_10, HOUR_10 + 1]
    warehouse.execute("SEAL M THROUGH '2015-01-01 12:59:00'")
    assert view3_parts() == [HOUR_10, HOUR_10 + 1, HOUR_10 + 2]

    expected = hourly_loss(pd.concat(batches))
    assert rows_by_part(warehouse.execute("SELECT * FROM View3"), ["src", "dest", "sum_loss"]) == expected
    parts = warehouse.parts("View3")
    assert list(parts["part_timestamp"]) == [pd.Timestamp(f"2015-01-01 {h}:00") for h in (10, 11, 12)]
    assert list(parts["how"]) == ["initialize", "update", "update"]
    assert list(parts["rows"]) == [len(expected[t]) for t in parts["part_timestamp"]]
    # The partial first hour read only the minutes M has (from 10:30); later hours all 60.
    assert list(parts["lineage"]) == [f"M[{MINUTE_1000 + 30} .. {MINUTE_1000 + 59}]",
                                      f"M[{MINUTE_1000 + 60} .. {MINUTE_1000 + 119}]",
                                      f"M[{MINUTE_1000 + 120} .. {MINUTE_1000 + 179}]"]


def test_hourly_rollup_of_one_sealed_hour_is_empty(warehouse):
    warehouse.execute(f"{STREAM_M}; {VIEW3}")
    warehouse.ingest("M", _measurements(("2015-01-01 10:59:00", "a", "b", 2),
                                        ("2015-01-01 12:00:00", "a", "b", 3)))
    parts = warehouse.parts("View3")
    assert list(parts["part"]) == [HOUR_10, HOUR_10 + 1]
    assert list(parts["rows"]) == [1, 0]
    assert warehouse.execute("SELECT * FROM View3 WHERE PART_TIMESTAMP = '2015-01-01 11:00:00'").empty


BAND_JOIN = """
CREATE STREAM N (nts TIMESTAMP, src STRING, latency INT) PARTITION LENGTH 60;
CREATE VIEW J AS
INITIALIZE J[i] AS SELECT * FROM M[i] NATURAL JOIN N[i]
UPDATE J[j] AS SELECT * FROM M[j] NATURAL JOIN N[j]
PARTITION LENGTH 60
"""
J_COLUMNS = ["src", "ts", "dest", "loss", "nts", "latency"]


def _latencies(*rows_: tuple) -> pd.DataFrame:
    return pd.DataFrame(rows_, columns=["nts", "src", "latency"]).astype(
        {"nts": "datetime64[ns]", "latency": "int32"})


def test_band_join_waits_for_both_streams(warehouse):
    warehouse.execute(f"{STREAM_M}; {BAND_JOIN}")
    m_batches = [
        _measurements(("2015-01-01 10:00:10", "a", "b", 1), ("2015-01-01 10:00:50", "a", "c", 2),
                      ("2015-01-01 10:00:20", "b", "c", 3), ("2015-01-01 10:01:00", "a", "b", 4),
                      ("2015-01-01 10:02:00", "c", "a", 5)),
        _measurements(("2015-01-01 10:03:59", "c", "b", 6)),
    ]
    n_batches = [
        # b at 10:01 must not join M's b at 10:00: a band join matches within one minute only.
        _latencies(("2015-01-01 10:00:30", "a", 70), ("2015-01-01 10:00:00", "a", 71),
                   ("2015-01-01 10:01:00", "b", 72), ("2015-01-01 10:01:30", "a", 73)),
        _latencies(("2015-01-01 10:03:00", "c", 74)),
    ]
    j_parts = lambda: list(warehouse.parts("J")["part"])  # noqa: E731

    warehouse.ingest("M", m_batches[0])
    assert j_parts() == [], "J[j] waits for N[j]"
    warehouse.ingest("N", n_batches[0])
    assert j_parts() == [MINUTE_1000, MINUTE_1000 + 1], "J[10:02] waits for N[10:02]"
    warehouse.ingest("N", n_batches[1])                      # seals N[10:02]
    assert j_parts() == [MINUTE_1000 + k for k in range(3)], "J[10:03] waits for M[10:03]"
    warehouse.ingest("M", m_batches[1])
    assert j_parts() == [MINUTE_1000 + k for k in range(4)]

    expected = minute_join(pd.concat(m_batches), pd.concat(n_batches), ["src"], J_COLUMNS)
    result = warehouse.execute("SELECT * FROM J")
    assert list(result.columns) == [*J_COLUMNS, "PART_TIMESTAMP"]
    assert rows_by_part(result, J_COLUMNS) == expected
    assert list(warehouse.parts("J")["rows"]) == [len(expected.get(m, [])) for m in
                                                   minutes("2015-01-01 10:00", "2015-01-01 10:03")]
    assert warehouse.parts("J")["lineage"].iloc[1] == f"M[{MINUTE_1000 + 1}], N[{MINUTE_1000 + 1}]"


REGION_TOTALS = """
CREATE TABLE regions (src STRING, region STRING);
INSERT INTO regions VALUES ('a', 'east'), ('b', 'east'), ('c', 'west'), ('d', 'north');
CREATE VIEW RegionTotal AS
INITIALIZE RegionTotal[i] AS
  SELECT r.region, coalesce(sum(m.loss), 0) AS total
  FROM regions AS r LEFT JOIN M[i] AS m ON m.src = r.src
  GROUP BY r.region
UPDATE RegionTotal[j] AS
  SELECT p.region, p.total + coalesce(n.added, 0)
  FROM RegionTotal[j-1] AS p
  LEFT JOIN (SELECT r.region, sum(m.loss) AS added
             FROM M[j] AS m JOIN regions AS r ON m.src = r.src
             GROUP BY r.region) AS n
  ON p.region = n.region
"""


def test_running_total_from_previous_part_and_dimension_table(warehouse):
    warehouse.execute(f"{STREAM_M}; {REGION_TOTALS}")
    stream = _measurements(("2015-01-01 10:00:00", "a", "x", 5), ("2015-01-01 10:00:30", "c", "x", 7),
                           ("2015-01-01 10:01:00", "b", "x", 11), ("2015-01-01 10:01:10", "z", "x", 1000),
                           ("2015-01-01 10:03:00", "a", "x", 2), ("2015-01-01 10:04:00", "c", "x", 3),
                           ("2015-01-01 10:04:00", "b", "x", 4))
    warehouse.ingest("M", stream.iloc[:4])
    warehouse.ingest("M", stream.iloc[4:])                   # seals M[10:02]
    regions = warehouse.execute("SELECT * FROM regions")
    span = minutes("2015-01-01 10:00", "2015-01-01 10:04")
    expected = running_region_totals(stream, regions, span)
    result = warehouse.execute("SELECT * FROM RegionTotal")
    assert list(result.columns) == ["region", "total", "PART_TIMESTAMP"]
    assert rows_by_part(result, ["region", "total"]) == expected
    assert list(warehouse.parts("RegionTotal")["how"]) == ["initialize"] + ["update"] * 4
    assert rows(warehouse.execute("SELECT * FROM RegionTotal[LATEST]"), ["region", "total"]) == \
        [("east", 22), ("north", 0), ("west", 10)]
