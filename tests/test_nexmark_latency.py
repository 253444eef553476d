"""The fixed-rate latency run's measuring (benchmarks/nexmark_follow.py, benchmarks/nexmark_latency.py): which
part a row is due by, the percentile, Flink's printed rows, and ViewDF and Structured Streaming following
parts as a feeder makes them arrive, on the small configuration of tests/nexmark (6 parts of 2 s, 4 s windows
sliding by 2 s). Rows are checked against the batch query; the latencies themselves are benchmark figures,
not asserted here."""

from __future__ import annotations

import os

import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from benchmarks.nexmark import equals_batch_query
from benchmarks.flink_csv import as_text_times
from benchmarks.nexmark_follow import (DueParts, Feeder, _printed_rows, backlog_csv, due_part, follow_naive,
                                      follow_streaming, follow_viewdf, taken_in, write_csv_parts)
from benchmarks.nexmark_latency import counted_parts, nearest_rank
from benchmarks.nexmark_runs import Run
from nexmark import EVENTS, PART_SECONDS, SLIDE_SECONDS, WINDOW_SECONDS
from viewdf_magic.nexmark import NexmarkConfig
from viewdf_magic.nexmark.compare import Windows
from viewdf_magic.nexmark.parts import STREAMS, write_parts

WINDOWS = Windows(WINDOW_SECONDS, SLIDE_SECONDS, PART_SECONDS)
SECOND = 1_000_000


@pytest.mark.parametrize(("query", "seconds", "part"), [
    ("q1", 1000.5, 500), ("q1", 1001.999999, 500), ("q2", 1002, 501), ("q3", 1003.9, 501),
    ("q5", 1000, 501),    # the window [1000, 1004) closes with the part [1002, 1004)
    ("q8", 996, 499),     # [996, 1000) closes with [998, 1000)
    ("q7", 1000, 500),    # the window ending at 1000 keeps bids at 1000 itself, in the part [1000, 1002)
])
def test_a_row_is_due_by_the_part_of_its_event_or_of_the_end_of_its_window(query, seconds, part):
    assert due_part(query, int(seconds * SECOND), WINDOWS) == part


def test_the_nearest_rank_percentile():
    assert nearest_rank([5.0, 1.0, 4.0, 2.0, 3.0], 0.5) == 3.0
    assert nearest_rank([5.0, 1.0, 4.0, 2.0, 3.0], 0.99) == 5.0
    assert nearest_rank([float(v) for v in range(1, 201)], 0.99) == 198.0
    assert nearest_rank([7.0], 0.99) == 7.0


def test_flinks_printed_rows_give_each_rows_part_and_emission(tmp_path):
    printed = tmp_path / "printed.txt"
    printed.write_text("+I[2026-11-30T03:17:54.127Z, 2015-07-14T23:59:52, 1100, 809, 2015-07-14T23:59:52]\n"
                       "2> +I[2026-11-30T03:17:55.5Z, 2015-07-14T23:59:54.000100, a, b, c]\n\n")
    rows = _printed_rows(str(printed), "q5", WINDOWS)
    start = 1436918392      # 2015-07-14 23:59:52 UTC
    assert [part for part, _ in rows] == [(start + 4) // 2 - 1, (start + 2 + 4) // 2 - 1]
    assert [round(emitted, 3) for _, emitted in rows] == [1796008674.127, 1796008675.5]
    printed.write_text("-U[2026-11-30T03:17:54.127Z, 2015-07-14T23:59:52, 1]\n")
    with pytest.raises(ValueError, match="other than an insert"):
        _printed_rows(str(printed), "q5", WINDOWS)


def test_waiting_for_flinks_last_part_reads_each_printed_line_once(tmp_path):
    """While Flink prints, each look reads only the lines added since the last one; a line still being printed
    counts once it is whole."""
    start = 1436918392      # 2015-07-14 23:59:52 UTC: q1's part start // 2
    printed = tmp_path / "printed.txt"
    printed.write_text("")
    with open(printed) as reading, open(printed, "a") as flink:
        due = DueParts(reading, "q1", WINDOWS)
        assert due.seen() == set()
        flink.write("+I[2026-11-30T03:17:54.127Z, 2015-07-14T23:59:52, 1]\n+I[2026-11-30T03:17:55Z, 2015-07-1")
        flink.flush()
        assert due.seen() == {start // 2}
        flink.write("4T23:59:55, 2]\n")
        flink.flush()
        assert due.seen() == {start // 2, (start + 3) // 2}
        flink.write("-U[2026-11-30T03:17:56Z, 2015-07-14T23:59:58, 3]\n")
        flink.flush()
        with pytest.raises(ValueError, match="other than an insert"):
            due.seen()


@pytest.fixture(scope="module")
def parts(spark, tmp_path_factory):
    files = write_parts(NexmarkConfig(**EVENTS), tmp_path_factory.mktemp("latency") / "parts", PART_SECONDS)
    return files


def _every_event(spark, files):
    for stream in STREAMS:
        spark.read.parquet(files.stream_folder(stream)).createOrReplaceTempView(stream)


@pytest.mark.parametrize("query", ["q5", "q3"])
def test_structured_streaming_commits_a_window_only_after_the_next_parts_events(spark, parts, tmp_path, query):
    """Its rows equal the batch query's; every part commits after it arrived, and a window (q5) only once the
    next part has arrived, since only its events move the watermark past the window's end."""
    followed = follow_streaming(spark, parts, query, WINDOWS, str(tmp_path), 0.3, lambda: 0.0)
    arrived = followed.feeder.arrived
    assert set(followed.commits) >= set(parts.subscripts)
    assert all(followed.commits[s] >= arrived[s] for s in parts.subscripts)
    _every_event(spark, parts)
    if query == "q5":
        closing = [s for s in counted_parts(spark, parts, query, WINDOWS, 0) if s + 1 in arrived]
        assert closing and all(followed.commits[s] >= arrived[s + 1] for s in closing)
    assert equals_batch_query(spark, Run("streaming", query, 0, rows=followed.rows), parts, WINDOWS)


def test_viewdf_follows_the_arrivals_and_keeps_the_batch_querys_rows(spark, parts, tmp_path):
    used = iter([1.0, 3.5])
    followed = follow_viewdf(spark, parts, "q5", WINDOWS, str(tmp_path), 0.3, lambda: next(used))
    arrived = followed.feeder.arrived
    assert sorted(followed.commits) == list(parts.subscripts)
    assert all(followed.commits[s] >= arrived[s] for s in parts.subscripts)
    assert followed.cpu_seconds == 2.5
    _every_event(spark, parts)
    assert equals_batch_query(spark, Run("viewdf", "q5", 0, rows=followed.rows), parts, WINDOWS)


def test_a_feeders_backlog_arrives_at_once_before_the_parts_it_paces(tmp_path):
    for stream in STREAMS:
        (tmp_path / "from" / stream).mkdir(parents=True)
        (tmp_path / "to" / stream).mkdir(parents=True)
        for subscript in range(5):
            (tmp_path / "from" / stream / str(subscript)).write_text(stream)
    feeder = Feeder(tuple(range(5)), 0.2, lambda stream, s: str(tmp_path / "from" / stream / str(s)),
                    lambda stream, s: str(tmp_path / "to" / stream / str(s)), backlog=3)
    feeder.deliver_backlog()
    assert sorted(feeder.arrived) == [0, 1, 2]
    assert all(sorted(p.name for p in (tmp_path / "to" / stream).iterdir()) == ["0", "1", "2"] for stream in STREAMS)
    feeder.start()
    feeder.join()
    arrived = feeder.arrived
    assert sorted(arrived) == [0, 1, 2, 3, 4]
    assert arrived[4] - arrived[3] > 0.15 > arrived[2] - arrived[0]
    with pytest.raises(ValueError, match="a backlog of 5 parts leaves none of the 5 parts"):
        Feeder(tuple(range(5)), 0.2, str, str, backlog=5)


def test_the_backlogs_parts_are_not_counted(spark, parts):
    _every_event(spark, parts)
    assert counted_parts(spark, parts, "q3", WINDOWS, 1, backlog=3) == list(parts.subscripts[4:-1])
    assert counted_parts(spark, parts, "q3", WINDOWS, 0) == list(parts.subscripts[:-1])


@pytest.mark.parametrize("follow", [follow_viewdf, follow_streaming, follow_naive], ids=["viewdf", "streaming", "naive"])
def test_a_backlog_is_taken_in_before_the_clock_starts_and_every_row_is_kept(spark, parts, tmp_path, follow):
    """The backlog's parts are committed before the first paced part arrives; every paced part commits after
    it arrived; the rows equal the batch query's."""
    followed = follow(spark, parts, "q3", WINDOWS, str(tmp_path), 0.3, lambda: 0.0, backlog=4)
    arrived, first_paced = followed.feeder.arrived, parts.subscripts[4]
    assert set(followed.commits) >= set(parts.subscripts)
    assert all(followed.commits[s] <= arrived[first_paced] for s in parts.subscripts[:4])
    assert all(followed.commits[s] >= arrived[s] for s in parts.subscripts[4:])
    _every_event(spark, parts)
    assert equals_batch_query(spark, Run(follow.__name__.removeprefix("follow_"), "q3", 0, rows=followed.rows),
                              parts, WINDOWS)


def test_flinks_backlog_is_one_csv_file_of_consecutive_parts_per_reader_and_arrives_with_them(parts, tmp_path):
    """Each reader's file holds consecutive parts in time order (so no event of it is late for the watermark its
    reader set), every backlog part exactly once; the paced parts keep a file each; delivering the backlog links
    the chunk files and marks every backlog part arrived."""
    csv = write_csv_parts(parts, str(tmp_path / "csv"), backlog=5, chunks=2)
    for stream in STREAMS:
        chunks = backlog_csv(csv, stream)
        assert [os.path.basename(c) for c in chunks] == ["backlog-0000.csv", "backlog-0001.csv"]
        expected = [as_text_times(pq.read_table(parts.path(stream, s))).to_pylist() for s in parts.subscripts[:5]]
        schema = as_text_times(pq.read_table(parts.path(stream, parts.subscripts[0]))).schema
        read = [pcsv.read_csv(c, read_options=pcsv.ReadOptions(column_names=schema.names),
                              convert_options=pcsv.ConvertOptions(column_types=schema)).to_pylist() for c in chunks]
        assert read == [sum(expected[:2], []), sum(expected[2:], [])]
        assert sorted(p.name for p in (tmp_path / "csv" / stream).iterdir() if p.name.startswith("part-")) == \
            [f"part-{s:012d}.csv" for s in parts.subscripts[5:]]
        (tmp_path / "in" / stream).mkdir(parents=True)
    feeder = Feeder(parts.subscripts, 0.1, str, str, backlog=5)
    feeder.deliver_backlog(lambda stream: [(c, str(tmp_path / "in" / stream / os.path.basename(c)))
                                           for c in backlog_csv(csv, stream)])
    assert sorted(feeder.arrived) == list(parts.subscripts[:5])
    assert all(sorted(p.name for p in (tmp_path / "in" / stream).iterdir()) == ["backlog-0000.csv", "backlog-0001.csv"]
               for stream in STREAMS)


def _clock(monkeypatch, busy_until: float, busy_cores: float, idle_cores: float):
    """A fake clock and a process tree's CPU-seconds: ``busy_cores`` until ``busy_until``, then ``idle_cores``."""
    now = [0.0]
    monkeypatch.setattr("benchmarks.nexmark_follow.time.time", lambda: now[0])
    monkeypatch.setattr("benchmarks.nexmark_follow.time.sleep", lambda seconds: now.__setitem__(0, now[0] + seconds))
    return lambda: (busy_cores * min(now[0], busy_until) + idle_cores * max(0.0, now[0] - busy_until))


def test_a_backlog_is_taken_in_once_the_job_has_been_all_but_idle_for_the_quiet_time(monkeypatch):
    cpu = _clock(monkeypatch, busy_until=10.0, busy_cores=1.8, idle_cores=0.05)
    waited = taken_in(cpu, lambda: None, quiet=3.0, cores=0.15, look=0.25)
    assert 13.0 <= waited <= 13.5       # three quiet seconds after the work ended, not before
    cpu = _clock(monkeypatch, busy_until=10.0, busy_cores=1.8, idle_cores=0.5)     # never quiet enough
    with pytest.raises(RuntimeError, match="still busy with its backlog after 60 s"):
        taken_in(cpu, lambda: None, quiet=3.0, cores=0.15, timeout=60.0, look=0.25)
    with pytest.raises(RuntimeError, match="the job ended"):
        taken_in(cpu, lambda: 1, quiet=3.0, cores=0.15, look=0.25)
