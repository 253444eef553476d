"""Time: gaps and SEAL, backfill and START AT LATEST, PART_TIMESTAMP, partition references in ad hoc
queries, the part catalog, RECOMPUTE and VERIFY, and a property test of the paper's pattern views."""

import datetime as dt
import itertools

import pandas as pd
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from oracles import (PATTERN_COLUMNS, cumulative_totals, long_runs, loss_rows, loss_runs, minutes, non_empty,
                     rows, rows_by_part, window_sums)
from test_paper_example import LOSSES, PAPER_DDL

M_1000 = 23668440         # 2015-01-01 10:00 in minutes
STREAM_M = "CREATE STREAM M (ts TIMESTAMP, src STRING, dest STRING, loss INT) TIMESTAMP ts PARTITION LENGTH 60"
PAPER_STREAM, PAPER_VIEWS = PAPER_DDL.split(";", 1)
HELPER_AT_LATEST = PAPER_VIEWS.replace("PARTITION LENGTH 60;\n\nCREATE VIEW View2",
                                      "PARTITION LENGTH 60 START AT LATEST;\n\nCREATE VIEW View2")
assert HELPER_AT_LATEST != PAPER_VIEWS


def _stamps(first: str, last: str) -> list[pd.Timestamp]:
    return minutes(f"2015-01-01 {first}", f"2015-01-01 {last}")


def _pattern_parts(warehouse, view: str) -> dict:
    return rows_by_part(warehouse.execute(f"SELECT * FROM {view}"), PATTERN_COLUMNS)


# -- gaps and SEAL -------------------------------------------------------------------------------
def test_gap_is_sealed_and_breaks_the_run(warehouse):
    warehouse.execute(PAPER_DDL)
    warehouse.ingest("M", loss_rows("2015-01-01 10:00", [12]))
    report = warehouse.ingest("M", loss_rows("2015-01-01 10:05", [20, 30, 15, 11]))
    assert report.parts == [M_1000 + k for k in range(5, 9)] and report.sealed == 4

    shown = warehouse.execute("SHOW PARTS M")
    assert list(shown["part"]) == [M_1000 + k for k in range(9)]
    assert list(shown["how"]) == ["ingest"] + ["sealed"] * 4 + ["ingest"] * 4
    assert list(shown["rows"]) == [1, 0, 0, 0, 0, 1, 1, 1, 1]

    pair = ("10.0.0.1", "10.0.0.2")
    assert _pattern_parts(warehouse, "Helper") == {
        pd.Timestamp("2015-01-01 10:00"): [(*pair, 1, 12)],
        pd.Timestamp("2015-01-01 10:05"): [(*pair, 1, 20)],
        pd.Timestamp("2015-01-01 10:06"): [(*pair, 2, 50)],
        pd.Timestamp("2015-01-01 10:07"): [(*pair, 3, 65)],
        pd.Timestamp("2015-01-01 10:08"): [(*pair, 4, 76)]}
    assert _pattern_parts(warehouse, "View2") == {pd.Timestamp("2015-01-01 10:08"): [(*pair, 4, 76)]}
    helper = warehouse.parts("Helper")
    assert list(helper["part"]) == [M_1000 + k for k in range(9)], "views never wait on a gap"
    assert list(helper["rows"]) == [1, 0, 0, 0, 0, 1, 1, 1, 1]
    assert helper["lineage"].iloc[5] == f"M[{M_1000 + 5}], Helper[{M_1000 + 4}]"


def test_one_ingest_cascades_in_dependency_order(warehouse):
    warehouse.execute(PAPER_DDL)
    report = warehouse.ingest("M", loss_rows("2015-01-01 10:00", [12, 13, None, 14]))
    done = [(s.view, s.subscript) for s in report.steps]
    assert sorted(done) == sorted((v, M_1000 + k) for v in ("Helper", "View2") for k in range(4))
    for view, subscript in done:
        if view == "View2":
            assert done.index(("Helper", subscript)) < done.index(("View2", subscript))
    assert [s.how for s in report.steps if s.view == "Helper"] == ["initialize"] + ["update"] * 3


def test_seal_closes_parts_without_data(warehouse):
    warehouse.execute(PAPER_DDL)
    warehouse.ingest("M", loss_rows("2015-01-01 10:00", [12, 13]))
    [result] = warehouse.run("SEAL M THROUGH '2015-01-01 10:03:30'")
    assert "Sealed M through 2015-01-01 10:03:00" in result.message
    assert list(warehouse.parts("M")["how"]) == ["ingest", "ingest", "sealed", "sealed"]
    assert list(warehouse.parts("Helper")["part"]) == [M_1000 + k for k in range(4)]
    assert list(warehouse.parts("Helper")["rows"]) == [1, 1, 0, 0]

    version = warehouse.catalog.version
    [again] = warehouse.run("SEAL M THROUGH '2015-01-01 10:01:00'")
    assert "already sealed" in again.message and warehouse.catalog.version == version

    warehouse.execute("INSERT INTO M VALUES (TIMESTAMP '2015-01-01 10:04:00', '10.0.0.1', '10.0.0.2', 14)")
    assert _pattern_parts(warehouse, "Helper")[pd.Timestamp("2015-01-01 10:04")] == \
        [("10.0.0.1", "10.0.0.2", 1, 14)]


def test_seal_of_a_stream_without_parts(warehouse):
    warehouse.execute(STREAM_M)
    warehouse.execute("SEAL M THROUGH '2015-01-01 09:00:00'")
    warehouse.execute("INSERT INTO M VALUES (TIMESTAMP '2015-01-01 09:02:10', 'a', 'b', 1)")
    parts = warehouse.parts("M")
    assert list(parts["part_timestamp"]) == _stamps("09:00", "09:02")
    assert list(parts["how"]) == ["sealed", "sealed", "ingest"]
    assert rows(warehouse.execute("SELECT * FROM M"), ["src", "loss", "PART_TIMESTAMP"]) == \
        [("a", 1, pd.Timestamp("2015-01-01 09:02"))]


# -- backfill ------------------------------------------------------------------------------------
BACKFILL_DATA = [
    pd.concat([loss_rows("2015-01-01 10:00", [12, 15, 24, 20], second=15),
               loss_rows("2015-01-01 10:00", [30, 8, 40, None], src="10.0.0.3", second=59)]),
    loss_rows("2015-01-01 10:05", [16, 11], src="10.0.0.3"),          # 10:04 is a gap
]


def test_backfill_equals_views_maintained_from_the_start(make_warehouse):
    before, after = make_warehouse("before"), make_warehouse("after")
    before.execute(PAPER_DDL)
    after.execute(PAPER_STREAM)
    for batch in BACKFILL_DATA:
        before.ingest("M", batch)
        after.ingest("M", batch)
    [*_, created] = after.run(PAPER_VIEWS)
    assert "computed 7 parts up to 2015-01-01 10:06:00" in created.message

    runs = loss_runs(pd.concat(BACKFILL_DATA))
    for view, expected in (("Helper", runs), ("View2", long_runs(runs))):
        columns = ["part", "rows", "how", "lineage"]
        assert after.parts(view)[columns].equals(before.parts(view)[columns])
        assert list(after.parts(view)["part_timestamp"]) == _stamps("10:00", "10:06")
        assert _pattern_parts(after, view) == _pattern_parts(before, view) == non_empty(expected)
    assert non_empty(long_runs(runs)), "the data reaches View2"


def test_start_at_latest_initializes_at_the_newest_part(warehouse):
    warehouse.execute(STREAM_M)
    warehouse.ingest("M", loss_rows("2015-01-01 10:00", [12, 13, 14, 15, 16]))
    warehouse.execute(HELPER_AT_LATEST)
    helper = warehouse.parts("Helper")
    assert list(helper["part"]) == [M_1000 + 4] and list(helper["how"]) == ["initialize"]
    warehouse.ingest("M", loss_rows("2015-01-01 10:05", [17]))
    pair = ("10.0.0.1", "10.0.0.2")
    assert _pattern_parts(warehouse, "Helper") == {pd.Timestamp("2015-01-01 10:04"): [(*pair, 1, 16)],
                                                   pd.Timestamp("2015-01-01 10:05"): [(*pair, 2, 33)]}
    assert list(warehouse.parts("View2")["part"]) == [M_1000 + 4, M_1000 + 5]
    assert warehouse.execute("SELECT * FROM View2").empty


def test_window_over_parts_before_the_first_is_computed_at_once(warehouse):
    warehouse.execute(f"""{STREAM_M};
        CREATE VIEW W AS
        INITIALIZE W[i] AS SELECT src, sum(loss) AS s3 FROM M[i-2 .. i] GROUP BY src
        UPDATE W[j] AS SELECT src, sum(loss) AS s3 FROM M[j-2 .. j] GROUP BY src""")
    stream = pd.concat([loss_rows("2015-01-01 10:00", [1, 2, None, 4, None, None, 7]),
                        loss_rows("2015-01-01 10:01", [10, 20], src="b")]).sort_values("ts")
    early = stream["ts"] < pd.Timestamp("2015-01-01 10:02")
    warehouse.ingest("M", stream[early])
    assert list(warehouse.parts("W")["part"]) == [M_1000, M_1000 + 1]
    warehouse.ingest("M", stream[~early])
    span = _stamps("10:00", "10:06")
    assert list(warehouse.parts("W")["part_timestamp"]) == span
    assert rows_by_part(warehouse.execute("SELECT * FROM W"), ["src", "s3"]) == \
        non_empty(window_sums(stream, 3, span))


def test_partition_length_defaults_to_the_largest_source(warehouse):
    warehouse.execute(f"""{STREAM_M};
        CREATE STREAM H (ts TIMESTAMP, src STRING, budget INT) PARTITION LENGTH 1 HOUR;
        CREATE VIEW Over AS
        INITIALIZE Over[i] AS SELECT h.src, sum(m.loss) - max(h.budget) AS over
          FROM M[i*60 .. i*60+59] AS m JOIN H[i] AS h ON m.src = h.src GROUP BY h.src
        UPDATE Over[j] AS SELECT h.src, sum(m.loss) - max(h.budget) AS over
          FROM M[j*60 .. j*60+59] AS m JOIN H[j] AS h ON m.src = h.src GROUP BY h.src""")
    views = warehouse.execute("SHOW VIEWS")
    assert views.set_index("name").loc["Over", "partition_length"] == 3600
    warehouse.ingest("H", pd.DataFrame({"ts": [pd.Timestamp("2015-01-01 10:20")], "src": ["a"], "budget": [5]}))
    warehouse.ingest("M", loss_rows("2015-01-01 10:58", [4, 3], src="a"))
    assert rows(warehouse.execute("SELECT * FROM Over"), ["src", "over", "PART_TIMESTAMP"]) == \
        [("a", 2, pd.Timestamp("2015-01-01 10:00"))]


# -- PART_TIMESTAMP and partition references in ad hoc queries -----------------------------------
def test_part_timestamp_is_the_utc_start_of_the_part(warehouse):
    warehouse.execute(f"""{STREAM_M};
        CREATE STREAM H (ts TIMESTAMP, v INT) PARTITION LENGTH 1 HOUR;
        CREATE STREAM Epoch (ts TIMESTAMP, v INT) PARTITION LENGTH 60""")
    stamps = pd.to_datetime(["2015-01-01 09:59:59.999", "2015-01-01 10:00:00", "2015-01-01 10:00:59.999999",
                             "2015-01-01 10:01:00"], format="ISO8601")
    warehouse.ingest("M", pd.DataFrame({"ts": stamps, "src": "a", "dest": "b", "loss": [3, 4, 5, 6]}))
    warehouse.ingest("H", pd.DataFrame({"ts": stamps, "v": range(4)}))
    warehouse.ingest("Epoch", pd.DataFrame({"ts": pd.to_datetime(["1969-12-31 23:59:30", "1970-01-01 00:00:00"]),
                                            "v": [1, 2]}))
    for stream, unit in (("M", "min"), ("H", "h"), ("Epoch", "min")):
        found = warehouse.execute(f"SELECT ts, PART_TIMESTAMP FROM {stream}")
        assert len(found) == (2 if stream == "Epoch" else 4)
        assert (found["PART_TIMESTAMP"] == found["ts"].dt.floor(unit)).all(), stream
    assert list(warehouse.parts("Epoch")["part"]) == [-1, 0]
    assert list(warehouse.parts("H")["part_timestamp"]) == [pd.Timestamp("2015-01-01 09:00"),
                                                            pd.Timestamp("2015-01-01 10:00")]
    assert warehouse.execute("SELECT loss FROM M WHERE PART_TIMESTAMP = '2015-01-01 10:00:00'")["loss"] \
        .sort_values().tolist() == [4, 5]
    assert warehouse.execute("SELECT count(*) AS n FROM M WHERE PART_TIMESTAMP >= '2015-01-01 10:00'")["n"][0] == 3
    # An aware timestamp is placed by its UTC instant.
    warehouse.ingest("M", pd.DataFrame({"ts": [pd.Timestamp("2015-01-01 11:02:30+01:00")], "src": "tz", "dest": "b",
                                        "loss": [7]}))
    assert rows(warehouse.execute("SELECT ts, PART_TIMESTAMP FROM M WHERE src = 'tz'"), ["ts", "PART_TIMESTAMP"]) == \
        [(pd.Timestamp("2015-01-01 10:02:30"), pd.Timestamp("2015-01-01 10:02"))]


def test_latest_ranges_and_absolute_subscripts(warehouse):
    warehouse.execute(PAPER_DDL)
    warehouse.ingest("M", loss_rows("2015-01-01 10:00", LOSSES))          # parts 23668440 .. 23668446
    loss = lambda query: sorted(warehouse.execute(query)["loss"].tolist())  # noqa: E731
    assert loss("SELECT loss FROM M[LATEST]") == [7]
    assert loss("SELECT loss FROM M[latest - 1]") == [16]
    assert loss("SELECT loss FROM M[LATEST-2 .. LATEST]") == sorted([20, 16, 7])
    assert loss("SELECT loss FROM M[23668443]") == [24]
    assert loss("SELECT loss FROM M[23668441 .. 23668442]") == [12, 15]
    assert loss("SELECT loss FROM M[.. 23668441]") == [6, 12]
    assert loss("SELECT loss FROM M[23668445 ..]") == [7, 16]
    assert loss("SELECT loss FROM M[LATEST-100 .. LATEST]") == sorted(LOSSES)
    assert loss("SELECT loss FROM M") == sorted(LOSSES)
    both = warehouse.execute("SELECT n.loss, p.loss AS before FROM M[LATEST] AS n, M[LATEST-1] AS p")
    assert rows(both, ["loss", "before"]) == [(7, 16)]
    latest = warehouse.execute("SELECT * FROM Helper[LATEST-1]")
    assert rows(latest, [*PATTERN_COLUMNS, "PART_TIMESTAMP"]) == \
        [("10.0.0.1", "10.0.0.2", 5, 87, pd.Timestamp("2015-01-01 10:05"))]
    assert rows(warehouse.execute("SELECT split('a,b', ',')[1] AS second"), ["second"]) == [("b",)]
    assert rows(warehouse.execute("SELECT 'M[LATEST]' AS s FROM M[23668440]"), ["s"]) == [("M[LATEST]",)]
    assert rows(warehouse.execute("WITH M AS (SELECT 1 AS x) SELECT x FROM M"), ["x"]) == [(1,)]
    warehouse.execute("SEAL M THROUGH '2015-01-01 10:07:00'")
    sealed = warehouse.execute("SELECT * FROM M[LATEST]")
    assert sealed.empty and list(sealed.columns) == ["ts", "src", "dest", "loss", "PART_TIMESTAMP"]


def test_parts_catalog_view(warehouse):
    warehouse.execute(PAPER_DDL)
    warehouse.ingest("M", loss_rows("2015-01-01 10:00", [12, 15]))
    warehouse.ingest("M", loss_rows("2015-01-01 10:03", [24]))
    catalog = warehouse.execute("SELECT * FROM viewdf_parts")
    assert list(catalog.columns) == ["name", "part", "part_timestamp", "rows", "compute_seconds", "how",
                                     "lineage", "last_updated"]
    helper = warehouse.execute("SELECT part, part_timestamp, rows, how, lineage FROM viewdf_parts "
                               "WHERE name = 'Helper' ORDER BY part")
    assert helper.to_dict("list") == {
        "part": [M_1000 + k for k in range(4)],
        "part_timestamp": _stamps("10:00", "10:03"),
        "rows": [1, 1, 0, 1],
        "how": ["initialize", "update", "update", "update"],
        "lineage": [f"M[{M_1000}]"] + [f"M[{M_1000 + k}], Helper[{M_1000 + k - 1}]" for k in range(1, 4)]}
    sealed = warehouse.execute("SELECT name, part FROM viewdf_parts WHERE how = 'sealed'")
    assert rows(sealed, ["name", "part"]) == [("M", M_1000 + 2)]
    assert (catalog["compute_seconds"] >= 0).all() and catalog["last_updated"].notna().all()
    assert catalog.drop(columns=["compute_seconds", "last_updated"]).sort_values(["name", "part"]) \
        .reset_index(drop=True).equals(warehouse.parts().drop(columns=["compute_seconds", "last_updated"])
                                       .sort_values(["name", "part"]).reset_index(drop=True))


# -- RECOMPUTE and VERIFY ------------------------------------------------------------------------
TOTALS = f"""{STREAM_M};
CREATE VIEW Total AS
INITIALIZE Total[i] AS SELECT src, sum(loss) AS total FROM M[i] GROUP BY src
UPDATE Total[j] AS
  SELECT coalesce(p.src, n.src), coalesce(p.total, 0) + coalesce(n.total, 0)
  FROM Total[j-1] AS p FULL OUTER JOIN (SELECT src, sum(loss) AS total FROM M[j] GROUP BY src) AS n
  ON p.src = n.src
RECOMPUTE Total[j] AS SELECT src, sum(loss) AS total FROM M GROUP BY src;
CREATE VIEW Forgetful AS
INITIALIZE Forgetful[i] AS SELECT src, sum(loss) AS total FROM M[i] GROUP BY src
UPDATE Forgetful[j] AS SELECT src, sum(loss) AS total FROM M[j] GROUP BY src
RECOMPUTE Forgetful[j] AS SELECT src, sum(loss) AS total FROM M[.. j] GROUP BY src
"""
TOTALS_DATA = pd.concat([loss_rows("2015-01-01 10:00", [1, 2, None, 4, 8]),
                         loss_rows("2015-01-01 10:01", [16, None, None, 32], src="b")])


def test_unsubscripted_and_open_ranges_read_up_to_the_part_being_computed(warehouse):
    warehouse.execute(STREAM_M)
    warehouse.ingest("M", TOTALS_DATA)                 # data first, so the views backfill
    for view, source in (("AsOf", "M"), ("FromFirst", "M[.. {v}]")):
        warehouse.execute(f"""CREATE VIEW {view} AS
            INITIALIZE {view}[i] AS SELECT src, sum(loss) AS total FROM {source.format(v="i")} GROUP BY src
            UPDATE {view}[j] AS SELECT src, sum(loss) AS total FROM {source.format(v="j")} GROUP BY src""")
        assert rows_by_part(warehouse.execute(f"SELECT * FROM {view}"), ["src", "total"]) == \
            {minute: cumulative_totals(TOTALS_DATA, minute) for minute in _stamps("10:00", "10:04")}, view
    warehouse.execute("DROP VIEW AsOf; DROP VIEW FromFirst")        # spare them the 55 minutes sealed below
    warehouse.execute("""CREATE VIEW HourAsOf AS
        INITIALIZE HourAsOf[i] AS SELECT src, sum(loss) AS total FROM M GROUP BY src
        UPDATE HourAsOf[j] AS SELECT src, sum(loss) AS total FROM M GROUP BY src
        PARTITION LENGTH 3600""")
    assert warehouse.parts("HourAsOf").empty, "the hour needs M up to 10:59"
    warehouse.execute("SEAL M THROUGH '2015-01-01 10:59:00'")
    assert rows_by_part(warehouse.execute("SELECT * FROM HourAsOf"), ["src", "total"]) == \
        {pd.Timestamp("2015-01-01 10:00"): cumulative_totals(TOTALS_DATA, pd.Timestamp("2015-01-01 10:59"))}


def test_recompute_reads_parts_up_to_the_requested_one(warehouse):
    warehouse.execute(TOTALS)
    warehouse.ingest("M", TOTALS_DATA)
    at_1002 = cumulative_totals(TOTALS_DATA, pd.Timestamp("2015-01-01 10:02"))
    assert at_1002 == [("10.0.0.1", 3), ("b", 16)]
    for when in ("2015-01-01 10:02:30", dt.datetime(2015, 1, 1, 10, 2), pd.Timestamp("2015-01-01 10:02:59.5"),
                 pd.Timestamp("2015-01-01 11:02:00+01:00")):
        assert rows(warehouse.recompute("Total", when), ["src", "total"]) == at_1002, when
    for minute in _stamps("10:00", "10:04"):
        assert rows(warehouse.execute(f"SELECT * FROM Total WHERE PART_TIMESTAMP = '{minute}'"),
                    ["src", "total"]) == cumulative_totals(TOTALS_DATA, minute)
        assert rows(warehouse.recompute("Forgetful", minute), ["src", "total"]) == \
            cumulative_totals(TOTALS_DATA, minute)
    assert rows(warehouse.read_part("Total", "2015-01-01 10:03:10"), ["src", "total"]) == \
        cumulative_totals(TOTALS_DATA, pd.Timestamp("2015-01-01 10:03"))


def test_verify_compares_every_part_with_its_recomputation(warehouse):
    warehouse.execute(TOTALS)
    warehouse.ingest("M", TOTALS_DATA)
    [good] = warehouse.run("VERIFY VIEW Total")
    assert list(good.table["part"]) == [M_1000 + k for k in range(5)]
    assert good.table["equal"].all() and "all 5 parts equal" in good.message
    # Forgetful's UPDATE drops history, so every part after the first with earlier rows differs.
    bad = warehouse.execute("VERIFY Forgetful")
    assert list(bad["equal"]) == [True, False, False, False, False]
    assert list(bad["stored_rows"]) == [1, 2, 0, 1, 2]
    assert list(bad["missing_rows"]) == [0, 1, 2, 2, 2]
    assert list(bad["extra_rows"]) == [0, 1, 0, 1, 2]


# -- property: the paper's views against their definition ---------------------------------------
PAIRS = [("10.0.0.1", "10.0.0.2"), ("10.0.0.1", "10.0.0.3"), ("10.0.0.4", "10.0.0.2")]
HIGH_LOSSES = [11, 12, 25]                  # just above the threshold of 10, and well above it
BREAKS = [None, 10, 9]                      # no measurement, at the threshold, below it
_example_ids = itertools.count()


@st.composite
def loss_streams(draw):
    """Measurements of a few pairs over a few minutes: mostly high-loss runs, broken at random minutes
    by low values or missing measurements, with minutes where no pair reports (gaps), split into
    time-ordered batches."""
    span = draw(st.integers(4, 6))
    pairs = draw(st.lists(st.sampled_from(PAIRS), min_size=1, max_size=3, unique=True))
    gaps = draw(st.sets(st.integers(1, span - 1), max_size=1))
    records = []
    for src, dest in pairs:
        losses = draw(st.lists(st.sampled_from(HIGH_LOSSES), min_size=span, max_size=span))
        for minute in draw(st.sets(st.integers(0, span - 1), max_size=2)):
            losses[minute] = draw(st.sampled_from(BREAKS))
        for minute, loss in enumerate(losses):
            if loss is not None and minute not in gaps:
                stamp = pd.Timestamp("2015-01-01 10:00") + pd.Timedelta(minutes=minute,
                                                                         seconds=draw(st.integers(0, 59)))
                records.append((stamp, src, dest, loss))
    frame = pd.DataFrame(records, columns=["ts", "src", "dest", "loss"]).astype(
        {"ts": "datetime64[ns]", "loss": "int32"})
    minutes_ = sorted(frame["ts"].dt.floor("min").unique())
    cuts = draw(st.lists(st.booleans(), min_size=max(0, len(minutes_) - 1), max_size=max(0, len(minutes_) - 1)))
    batch_of = dict(zip(minutes_, itertools.accumulate([0] + [int(c) for c in cuts])))
    shuffle = draw(st.randoms(use_true_random=False))
    batches = []
    for _, batch in frame.groupby(frame["ts"].dt.floor("min").map(batch_of)):
        order = list(range(len(batch)))
        shuffle.shuffle(order)
        batches.append((draw(st.booleans()), batch.iloc[order].reset_index(drop=True)))
    return frame, batches


def _insert_statement(batch: pd.DataFrame) -> str:
    values = ", ".join(f"(TIMESTAMP '{r.ts}', '{r.src}', '{r.dest}', {r.loss})" for r in batch.itertuples())
    return f"INSERT INTO M VALUES {values}"


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(loss_streams())
def test_pattern_views_match_their_definition(make_warehouse, stream):
    """Every stored part of Helper and View2, empty ones included, is what the definition says,
    however the stream is split into batches and whether it arrives by INSERT or ingest."""
    frame, batches = stream
    warehouse = make_warehouse(f"property{next(_example_ids)}")
    warehouse.execute(PAPER_DDL)
    for as_statement, batch in batches:
        if as_statement:
            warehouse.execute(_insert_statement(batch))
        else:
            warehouse.ingest("M", batch)
    if frame.empty:
        assert warehouse.parts("Helper").empty
        return
    runs = loss_runs(frame)
    event(f"View2 has rows: {bool(non_empty(long_runs(runs)))}")
    event(f"gaps: {len(runs) - frame['ts'].dt.floor('min').nunique()}")
    for view, expected in (("Helper", runs), ("View2", long_runs(runs))):
        parts = warehouse.parts(view)
        assert list(parts["part_timestamp"]) == list(expected), view
        assert list(parts["rows"]) == [len(found) for found in expected.values()], view
        assert _pattern_parts(warehouse, view) == non_empty(expected), view
