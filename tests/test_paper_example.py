"""The paper's section 2 example: Helper and View2 over the network-monitoring stream M."""

import pandas as pd

from viewdf_magic.network_example import NETWORK_DDL

PAPER_DDL = NETWORK_DDL      # the paper's M, Helper and View2, shared with the demo
LOSSES = [6, 12, 15, 24, 20, 16, 7]


def _rows(frame: pd.DataFrame) -> list[tuple]:
    return sorted(tuple(r) for r in frame[["src", "dest", "ct", "sum_loss"]].itertuples(index=False))


def test_paper_example_through_inserts(warehouse):
    warehouse.execute(PAPER_DDL)
    for minute, loss in enumerate(LOSSES):
        warehouse.execute(f"INSERT INTO M VALUES (TIMESTAMP '2015-01-01 10:0{minute}:00', "
                          f"'10.0.0.1', '10.0.0.2', {loss})")
    at = lambda t: warehouse.execute(f"SELECT * FROM View2 WHERE PART_TIMESTAMP = '2015-01-01 {t}'")  # noqa: E731
    assert _rows(at("10:03:00")) == []
    assert _rows(at("10:04:00")) == [("10.0.0.1", "10.0.0.2", 4, 71)]
    assert _rows(at("10:05:00")) == [("10.0.0.1", "10.0.0.2", 5, 87)]
    assert _rows(at("10:06:00")) == []
    latest = warehouse.execute("SELECT * FROM View2[LATEST]")
    assert latest.empty and list(latest.columns) == ["src", "dest", "ct", "sum_loss", "PART_TIMESTAMP"]


def test_paper_example_through_ingest(warehouse):
    warehouse.execute(PAPER_DDL)
    batch = pd.DataFrame({"ts": pd.date_range("2015-01-01 10:00", periods=7, freq="min"),
                          "src": "10.0.0.1", "dest": "10.0.0.2", "loss": LOSSES})
    report = warehouse.ingest("M", batch)
    assert report.parts == list(range(23668440, 23668447))
    assert _rows(warehouse.execute("SELECT * FROM View2 WHERE PART_TIMESTAMP = '2015-01-01 10:05:00'")) == \
        [("10.0.0.1", "10.0.0.2", 5, 87)]
    # View2 has one part per minute, and each read exactly Helper's part of the same minute.
    parts = warehouse.parts("View2")
    assert list(parts["part"]) == list(range(23668440, 23668447))
    assert list(parts["lineage"]) == [f"Helper[{s}]" for s in range(23668440, 23668447)]
    helper = warehouse.parts("Helper")
    assert helper["lineage"].iloc[0] == "M[23668440]"
    assert helper["how"].iloc[0] == "initialize"
    assert helper["lineage"].iloc[3] == "M[23668443], Helper[23668442]"
    assert list(helper["rows"]) == [0, 1, 1, 1, 1, 1, 0]


def test_subscript_of_paper_timestamp():
    from viewdf_magic.timeparts import part_start, subscript_of

    assert subscript_of("2015-01-01 00:00:00", 60) == 23667840
    assert subscript_of("2015-01-01 00:00:59.999", 60) == 23667840
    assert subscript_of("2015-01-01 00:00:00", 3600) == 394464
    assert subscript_of("1969-12-31 23:59:30", 60) == -1
    assert part_start(23667841, 60) == pd.Timestamp("2015-01-01 00:01:00")
