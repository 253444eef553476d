"""The replay widget, driven through its widget objects, and the timing plot."""

from __future__ import annotations

import base64
import time

import pandas as pd
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from shells import magic_shell

from oracles import cumulative_totals, loss_rows, rows
from viewdf_magic import ViewDFError
from viewdf_magic.network_example import NETWORK_DDL, network_stream
from viewdf_magic.notebook.batches import Batches, NetworkStream
from viewdf_magic.notebook.magic import StatementFailed
from viewdf_magic.notebook.replay import Replay
from viewdf_magic.notebook.timing_plot import TIMING_COLUMNS, TimingPlot

# A running total per src, and the same view with a fault: its UPDATE forgets the previous part, so
# from the second part on it holds one minute, while its RECOMPUTE states the running total.
TOTALS = """
CREATE VIEW Totals AS
INITIALIZE Totals[i] AS SELECT src, sum(loss) AS total FROM M[i] GROUP BY src
UPDATE Totals[j] AS
  SELECT src, sum(total) AS total
  FROM (SELECT src, total FROM Totals[j-1] UNION ALL SELECT src, loss FROM M[j]) GROUP BY src
RECOMPUTE Totals[j] AS SELECT src, sum(loss) FROM M[.. j] GROUP BY src;

CREATE VIEW Forgetful AS
INITIALIZE Forgetful[i] AS SELECT src, sum(loss) AS total FROM M[i] GROUP BY src
UPDATE Forgetful[j] AS SELECT src, sum(loss) AS total FROM M[j] GROUP BY src
RECOMPUTE Forgetful[j] AS SELECT src, sum(loss) FROM M[.. j] GROUP BY src
"""
FIRST = 23668440                      # 2015-01-01 10:00 in minute parts
PARTS = [FIRST + k for k in range(4)]
MINUTES = [pd.Timestamp("2015-01-01 10:00") + pd.Timedelta(minutes=k) for k in range(4)]
STREAM = pd.concat([loss_rows("2015-01-01 10:00", [6, 12, 15, 24]),
                    loss_rows("2015-01-01 10:00", [30, 30, 30, 30], src="10.0.0.3", dest="10.0.0.4", second=20)],
                   ignore_index=True)


@pytest.fixture
def network(warehouse):
    warehouse.execute(NETWORK_DDL + ";" + TOTALS)
    return warehouse


def poll(condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def stream_parts(warehouse) -> list[int]:
    return list(warehouse.parts("M")["part"])


def test_step_ingests_exactly_one_part(network):
    replay = Replay(network, "M", STREAM, views=["Helper", "View2"])
    assert (replay.position, len(replay.batches)) == (0, 4)
    replay.step_button.click()
    assert replay.wait(120)
    assert stream_parts(network) == PARTS[:1]
    assert list(network.parts("M")["rows"]) == [2]
    assert list(network.parts("Helper")["part"]) == PARTS[:1]
    assert list(network.parts("View2")["part"]) == PARTS[:1]
    assert (replay.position, replay.slider.value) == (1, 1)
    replay.step_button.click()
    assert replay.wait(120)
    assert stream_parts(network) == PARTS[:2]
    assert list(network.parts("Helper")["part"]) == PARTS[:2]
    assert list(network.parts("View2")["part"]) == PARTS[:2]
    assert replay.position_label.value == "batch 2 of 4 into M, next part 2015-01-01 10:02:00."
    # Helper's status line: 10:01 has the pair at 12 (ct 1) and the steady pair at 30 (ct 2).
    assert "Helper: part 2015-01-01 10:01:00, 2 rows, incremental" in replay.status.value
    assert "View2: part 2015-01-01 10:01:00, 0 rows, incremental" in replay.status.value


def test_naive_shows_a_tick_for_a_correct_view_and_a_cross_for_a_faulty_one(network):
    replay = Replay(network, "M", STREAM, views=["Totals", "Forgetful"], naive=True, speed=100)
    replay.play_button.click()
    assert replay.wait(300)
    timings = replay.timings
    totals, forgetful = timings[timings["view"] == "Totals"], timings[timings["view"] == "Forgetful"]
    assert list(totals["equal"]) == [True, True, True, True]
    assert list(forgetful["equal"]) == [True, False, False, False]     # INITIALIZE is right; UPDATE is not
    lines = replay.status.value.split("<br>")
    assert lines[0].startswith("Totals: part 2015-01-01 10:03:00, 2 rows") and lines[0].endswith("✓ equal")
    assert lines[1].startswith("Forgetful: part 2015-01-01 10:03:00, 2 rows") and lines[1].endswith("✗ differs")
    for minute in MINUTES:
        stored = network.execute(f"SELECT * FROM Totals WHERE PART_TIMESTAMP = '{minute}'")
        assert rows(stored, ["src", "total"]) == cumulative_totals(STREAM, minute)


def test_timings_hold_one_row_per_batch_and_view(network):
    replay = Replay(network, "M", STREAM, views=["Totals", "View2"], speed=100)
    replay.play()
    assert replay.wait(300)
    timings = replay.timings
    assert list(timings.columns) == TIMING_COLUMNS
    assert list(timings["batch"]) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert list(timings["view"]) == ["Totals", "View2"] * 4
    assert list(timings["part"]) == [p for p in PARTS for _ in range(2)]
    assert list(timings["part_timestamp"]) == [m for m in MINUTES for _ in range(2)]
    assert list(timings["rows"]) == [2, 0, 2, 0, 2, 0, 2, 1]          # the pair at 30 reaches ct 4 at 10:03
    # Totals reads M[i], then Totals[j-1] and M[j]; View2 reads Helper[j].
    assert list(timings["incremental_parts_read"]) == [1, 1, 2, 1, 2, 1, 2, 1]
    assert (timings["incremental_seconds"] > 0).all()
    assert timings[["naive_seconds", "naive_parts_read", "equal"]].isna().all().all()
    assert replay.tables.value.count("newest part") == 2 and "10.0.0.3" in replay.tables.value


def test_naive_timings_count_the_parts_recomputation_reads(network):
    replay = Replay(network, "M", STREAM, views=["Totals"], naive=True, speed=100)
    replay.play()
    assert replay.wait(300)
    timings = replay.timings
    assert list(timings["naive_parts_read"]) == [1, 2, 3, 4]            # M[.. j] from the first part
    assert list(timings["incremental_parts_read"]) == [1, 2, 2, 2]
    assert (timings["naive_seconds"] > 0).all()


def test_naive_needs_a_recompute_clause(network):
    with pytest.raises(ViewDFError, match="naive recomputation needs a RECOMPUTE clause; Helper, View2 has none"):
        Replay(network, "M", STREAM, views=["Helper", "View2", "Totals"], naive=True)
    replay = Replay(network, "M", STREAM, views=["View2"])
    replay.naive_box.value = True
    assert replay.naive_box.value is False
    assert "View2 has none" in replay.position_label.value


def test_pause_then_play_resumes_at_the_next_part(network):
    replay = Replay(network, "M", STREAM, views=["Totals"], speed=0.2)      # five seconds between parts
    replay.play_button.click()
    assert replay.play_button.description == "Pause"
    poll(lambda: replay.position >= 1)
    replay.play_button.click()                                             # pause while it waits
    assert replay.wait(120)
    assert replay.play_button.description == "Play"
    assert replay.position == 1
    assert stream_parts(network) == PARTS[:1]
    replay.speed.value = 100
    replay.play_button.click()
    assert replay.wait(300)
    assert replay.position == 4
    parts = network.parts("M")
    assert list(parts["part"]) == PARTS and list(parts["how"]) == ["ingest"] * 4
    assert list(parts["rows"]) == [2, 2, 2, 2]
    assert list(replay.timings["batch"]) == [0, 1, 2, 3]
    assert replay.step_button.disabled and replay.position_label.value.endswith("all parts ingested.")
    replay.step()                                                          # nothing left: nothing happens
    assert replay.wait(10) and (replay.position, replay.error) == (4, None)


def test_play_right_after_pause_is_not_lost(network):
    replay = Replay(network, "M", STREAM, views=["Totals"], speed=100)
    replay.play()
    replay.pause()
    replay.play()                     # arrives while the worker may still be finishing its batch
    assert replay.wait(300)
    assert replay.position == 4 and stream_parts(network) == PARTS


def test_slider_forward_ingests_up_to_there(network):
    replay = Replay(network, "M", STREAM, views=["Totals"], speed=100)
    replay.slider.value = 3
    assert replay.wait(300)
    assert replay.position == 3 and stream_parts(network) == PARTS[:3]


def test_reset_recreates_the_stream_and_views_empty(network):
    replay = Replay(network, "M", STREAM, views=["Totals"], speed=100)
    replay.play(until=2)
    assert replay.wait(300)
    replay.reset_button.click()
    assert replay.position == 0 and replay.timings.empty
    assert stream_parts(network) == [] and list(network.parts("Totals")["part"]) == []
    assert {d.name for d in network.catalog.views()} == {"Helper", "View2", "Totals", "Forgetful"}
    replay.play()
    assert replay.wait(300)
    assert stream_parts(network) == PARTS
    assert list(replay.timings["part"]) == PARTS


def test_a_new_replay_skips_batches_already_in_the_stream(network):
    network.ingest("M", STREAM[STREAM["ts"] < MINUTES[2]])
    replay = Replay(network, "M", STREAM, views=["Totals"])
    assert replay.position == 2
    replay.step()
    assert replay.wait(120)
    assert stream_parts(network) == PARTS[:3]


def test_the_replay_links_to_explain_view_of_each_view(network):
    network.execute("CREATE VIEW Runs AS SELECT src, dest, count(*) AS ct FROM M PATTERN [a, b+] "
                    "WHERE a.loss > 10 AND b.loss > 10 GROUP BY src, dest")
    replay = Replay(network, "M", STREAM, views=["Runs", "Totals"])
    assert replay.explain_choice.options == ("hide", "Runs", "Totals")
    replay.step()
    assert replay.wait(120)
    replay.explain_choice.value = "Runs"
    shown = replay.explanation.value
    assert shown.count("<svg") == 1 and "class='viewdf-figure'" in shown       # the FSM diagram
    assert "Runs is a pattern query, translated into the FSM above" in shown
    assert "CREATE VIEW Runs__helper AS" in shown
    assert "Next part: Runs__helper[23668441] (2015-01-01 10:01:00), UPDATE, waiting." in shown
    assert "== Physical Plan ==" in shown
    replay.explain_choice.value = "Totals"
    assert "<svg" not in replay.explanation.value and "UPDATE Totals[j] AS" in replay.explanation.value
    replay.explain_choice.value = "hide"
    assert replay.explanation.value == ""


def test_sources_are_split_into_one_batch_per_part(network, spark, tmp_path):
    STREAM.to_csv(tmp_path / "m.csv", index=False)
    STREAM.to_parquet(tmp_path / "m.parquet", coerce_timestamps="us")     # Spark reads no nanoseconds
    STREAM.to_json(tmp_path / "m.json", orient="records", lines=True, date_format="iso")
    sources = [STREAM, spark.createDataFrame(STREAM), str(tmp_path / "m.csv"), str(tmp_path / "m.parquet"),
               str(tmp_path / "m.json")]
    for source in sources:
        batches = Batches(network, "M", source)
        assert (batches.subscripts, batches.rows) == (PARTS, [2, 2, 2, 2])
        assert rows(batches.frame(1).toPandas(), ["src", "loss"]) == [("10.0.0.1", 12), ("10.0.0.3", 30)]
    gappy = STREAM[STREAM["ts"].dt.minute != 1]
    assert Batches(network, "M", gappy).subscripts == [PARTS[0], PARTS[2], PARTS[3]]


def test_the_synthetic_network_stream(network):
    frame = network_stream(3, pairs=2, selectivity=1.0, rows_per_part=5)
    assert list(frame.groupby(frame["ts"].dt.floor("min")).size()) == [5, 5, 5]
    paper = frame[frame["src"] == "10.0.0.1"]
    assert list(paper["loss"]) == [6, 12, 15] and list(paper["ts"]) == MINUTES[:3]
    others = frame[frame["src"] != "10.0.0.1"]
    assert list(others["src"]) == ["10.0.1.1", "10.0.1.2", "10.0.1.1", "10.0.1.2"] * 3
    assert others["loss"].between(11, 30).all()
    assert network_stream(2, pairs=3, selectivity=0.0)["loss"].iloc[[1, 2, 3, 5, 6, 7]].between(0, 10).all()
    batches = Batches(network, "M", NetworkStream(parts=3, pairs=2, rows_per_part=5))
    assert (batches.subscripts, batches.rows) == (PARTS[:3], [5, 5, 5])


def test_plot_draws_the_timings_and_saves(tmp_path):
    timings = pd.DataFrame({"batch": [0, 1, 2], "view": "V", "part": [1, 2, 3],
                            "part_timestamp": MINUTES[:3], "rows": [1, 1, 1],
                            "incremental_seconds": [0.5, 0.25, 0.25], "incremental_parts_read": [1, 2, 2],
                            "naive_seconds": [0.5, 1.0, 1.5], "naive_parts_read": [1, 2, 3],
                            "equal": [True, True, True], "late_rows": [0, 2, 0]}, columns=TIMING_COLUMNS)
    plot = TimingPlot(timings)
    assert plot.late_batches == [1]
    assert [p.get_label() for p in plot.axes[0].patches] == ["batch with late rows"]
    assert plot.series() == {
        ("seconds per batch", "V incremental"): ([0, 1, 2], [0.5, 0.25, 0.25]),
        ("seconds per batch", "V naive"): ([0, 1, 2], [0.5, 1.0, 1.5]),
        ("cumulative seconds", "V incremental"): ([0, 1, 2], [0.5, 0.75, 1.0]),
        ("cumulative seconds", "V naive"): ([0, 1, 2], [0.5, 1.5, 3.0]),
        ("parts read per batch", "V incremental"): ([0, 1, 2], [1.0, 2.0, 2.0]),
        ("parts read per batch", "V naive"): ([0, 1, 2], [1.0, 2.0, 3.0]),
    }
    assert bytes(plot.widget.value).startswith(b"\x89PNG")
    bundle = plot._repr_mimebundle_()          # a static PNG beside the widget, for previews without widgets
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert base64.b64decode(bundle["image/png"]) == bytes(plot.widget.value)
    plot.save(tmp_path / "timings.png")
    plot.save(tmp_path / "timings.svg")
    assert (tmp_path / "timings.png").read_bytes().startswith(b"\x89PNG")
    assert "<svg" in (tmp_path / "timings.svg").read_text()


def test_the_replay_plot_follows_its_timings(network):
    replay = Replay(network, "M", STREAM, views=["Totals"], naive=True, speed=100)
    replay.play(until=2)
    assert replay.wait(300)
    series = replay.plot.series()
    timings = replay.timings
    assert series[("cumulative seconds", "Totals naive")] == ([0, 1], list(timings["naive_seconds"].cumsum()))
    assert series[("parts read per batch", "Totals incremental")] == ([0, 1], [1.0, 2.0])
    assert series[("parts read per batch", "Totals naive")] == ([0, 1], [1.0, 2.0])


def test_the_replay_marks_the_batches_that_carried_late_rows(network):
    """Two batches replayed, then a row of 10:03 arrives from elsewhere: the replay's batch of 10:02 is behind it
    and that of 10:03 goes into an existing part, so both carry late rows."""
    replay = Replay(network, "M", STREAM, views=["Totals"], speed=100)
    replay.play(until=2)
    assert replay.wait(300)
    network.ingest("M", loss_rows("2015-01-01 10:03", [3], src="10.0.0.9", dest="10.0.0.8"))
    replay.play()
    assert replay.wait(300)
    assert list(replay.timings["late_rows"]) == [0, 0, 2, 2]
    assert replay.plot.late_batches == [2, 3]


def viewdf_shell(spark, warehouse) -> InteractiveShell:
    """The IPython shell with the magics loaded on ``spark``, ``warehouse``'s path current."""
    ip = magic_shell(spark)
    with capture_output():
        ip.run_line_magic("viewdf", f"--warehouse {warehouse.path}")
    return ip


@pytest.fixture
def shell(spark, network):
    return viewdf_shell(spark, network)


def test_replay_magic(shell, tmp_path):
    shell.user_ns["frame"] = STREAM
    replay = shell.run_line_magic("viewdf", "replay M --from frame --views Totals,Forgetful --naive --speed 50")
    assert isinstance(replay, Replay)
    assert ([v.name for v in replay.views], replay.naive, replay.speed.value) == (["Totals", "Forgetful"], True, 50)
    assert replay.batches.subscripts == PARTS
    synthetic = shell.run_line_magic("viewdf", "replay M --from network --parts 3 --pairs 2 --rows-per-part 5")
    assert (synthetic.batches.rows, [v.name for v in synthetic.views]) == \
        ([5, 5, 5], ["Helper", "View2", "Totals", "Forgetful"])
    STREAM.to_csv(tmp_path / "m.csv", index=False)
    assert shell.run_line_magic("viewdf", f"replay M --from {tmp_path / 'm.csv'}").batches.rows == [2, 2, 2, 2]
    with pytest.raises(StatementFailed, match="no stream named 'Nope' to replay into"):
        shell.run_line_magic("viewdf", "replay Nope --from frame")
