"""Two processes on one warehouse: writers take turns under the writer lock (or the second gets a
clear "in use by ..." error), a lock left by a killed process is taken over, and a reader never
sees a torn state."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from crash_worker import Child
from test_late_data import assert_equals_rebuild

from viewdf_magic import Warehouse
from viewdf_magic.network_example import NETWORK_DDL
from viewdf_magic.errors import ViewDFError

TESTS = Path(__file__).resolve().parent
BASE = pd.Timestamp("2015-01-01 10:00")
K = 3                 # rows per batch
BATCHES = 8           # batches per writer
PAUSE = 0.5           # seconds between a writer's INSERTs (a waiting writer polls the lock every 0.25 s at most)
STREAM = "CREATE STREAM M (ts TIMESTAMP, src STRING, dest STRING, loss INT) TIMESTAMP ts PARTITION LENGTH 60"
COPY = ("CREATE VIEW Copy AS INITIALIZE Copy[i] AS SELECT src, dest, loss FROM M[i] "
        "UPDATE Copy[j] AS SELECT src, dest, loss FROM M[j] PARTITION LENGTH 60")

# Children run these with ``python -c``; they start a small Spark session like the crash worker's.
PRELUDE = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {tests!r})
    from crash_worker import small_session
    from viewdf_magic import Warehouse
    spark = small_session()
""").format(tests=str(TESTS))

WRITER = PRELUDE + textwrap.dedent("""
    from test_concurrent_kernels import insert_statement
    path, writer = sys.argv[1], int(sys.argv[2])
    warehouse = Warehouse(path, spark=spark, progress=False, lock_timeout=600)
    print("READY", flush=True)
    sys.stdin.readline()
    for batch in range({batches}):
        started = time.monotonic()
        warehouse.execute(insert_statement(writer, batch))
        # the catalog version of this statement's last commit (the catalog is refreshed only by the next one)
        print(f"DONE {{batch}} {{time.monotonic() - started:.2f}} {{warehouse.catalog.version}}", flush=True)
        time.sleep({pause})            # a person running cells, not a loop holding on to the lock
    print("FINISHED", flush=True)
""").format(batches=BATCHES, pause=PAUSE)

HOLDER = PRELUDE + textwrap.dedent("""
    warehouse = Warehouse(sys.argv[1], spark=spark, progress=False)
    with warehouse.writer.held():
        print("HELD", flush=True)
        sys.stdin.readline()
    print("RELEASED", flush=True)
    sys.stdin.readline()
    with warehouse.writer.held():
        print("HELD AGAIN", flush=True)
        time.sleep(600)
""")

TAKES_OVER = PRELUDE + textwrap.dedent("""
    from viewdf_magic.catalog import lock
    path, dead = sys.argv[1], int(sys.argv[2])
    alive = lock._alive
    # Checking whether the dead holder lives takes a while (a slow machine, a busy filesystem), long
    # enough for the other writer to read the same stale lock file in the meantime.
    lock._alive = lambda pid: (time.sleep(2), False)[1] if pid == dead else alive(pid)
    warehouse = Warehouse(path, spark=spark, progress=False)
    print("READY", flush=True)
    sys.stdin.readline()
    with warehouse.writer.held():
        print(f"HELD {time.monotonic():.6f}", flush=True)
        time.sleep(3)
        print(f"RELEASING {time.monotonic():.6f}", flush=True)
    print("FINISHED", flush=True)
""")

READER = PRELUDE + textwrap.dedent("""
    import select
    warehouse = Warehouse(sys.argv[1], spark=spark, progress=False)
    query = "SELECT (SELECT count(*) FROM M) AS m, (SELECT count(*) FROM Copy) AS c"
    print("READY", flush=True)
    while True:
        stop = bool(select.select([sys.stdin], [], [], 0)[0])
        started = time.monotonic()
        row = warehouse.execute(query).iloc[0]
        print(f"SEEN {started:.6f} {row.m} {row.c}", flush=True)
        if stop:
            break
""")


def rows(writer: int, batch: int) -> list[tuple]:
    """Writer ``writer``'s batch ``batch``: K rows in minute ``batch``, source ``w<writer>`` (the two
    writers' rows are disjoint), losses mostly above the views' threshold of 10."""
    return [(BASE + pd.Timedelta(minutes=batch, seconds=30 * writer + r), f"w{writer}", "xyz"[r],
             11 + (7 * batch + 5 * r + 3 * writer) % 30 if (batch + r) % 4 else 4) for r in range(K)]


def insert_statement(writer: int, batch: int) -> str:
    values = ", ".join(f"(TIMESTAMP '{ts}', '{src}', '{dest}', {loss})" for ts, src, dest, loss in rows(writer, batch))
    return f"INSERT INTO M VALUES {values}"


def stored_rows(warehouse: Warehouse) -> Counter:
    frame = warehouse.execute("SELECT ts, src, dest, loss FROM M")
    return Counter((pd.Timestamp(ts), src, dest, int(loss)) for ts, src, dest, loss in frame.itertuples(index=False))


def python(code: str, *args: str) -> list[str]:
    return ["-c", code, *args]


@pytest.fixture
def children(tmp_path):
    """Start children; every one still running at the end is killed with its process group."""
    started: list[Child] = []

    def start(code: str, *args: str) -> Child:
        child = Child(python(code, *args), tmp_path / "children-stderr.txt")
        started.append(child)
        return child
    yield start
    for child in started:
        child.kill()


def test_two_writers_take_turns_and_lose_nothing(spark, tmp_path, children):
    path = tmp_path / "wh"
    make = lambda name: Warehouse(str(tmp_path / name), spark=spark, progress=False)  # noqa: E731
    make("wh").execute(NETWORK_DDL)
    writers = [children(WRITER, str(path), str(w)) for w in (0, 1)]
    for writer in writers:
        writer.wait_for("READY", timeout=300)
    for writer in writers:            # both start inserting at the same moment
        writer.send("go")
    for writer in writers:
        writer.wait_for("FINISHED", timeout=600)
        assert writer.finish(timeout=60) == 0, writer.stderr_tail()
    done = {w: [line.split()[1:] for line in writer.lines if line.startswith("DONE")]
            for w, writer in enumerate(writers)}
    assert [len(lines) for lines in done.values()] == [BATCHES, BATCHES]
    order = [w for _, w in sorted((int(version), w) for w, lines in done.items() for _, _, version in lines)]
    switches = sum(a != b for a, b in zip(order, order[1:]))
    seconds = {w: [float(s) for _, s, _ in lines] for w, lines in done.items()}
    print(f"seconds per INSERT, lock wait included: {seconds}; commit order {order}")
    assert switches >= 3, f"the writers did not take turns: {order}"     # they really ran at the same time

    warehouse = make("wh")
    assert warehouse.recovered == []                 # each writer finished its own maintenance
    assert not (path / "_viewdf" / "lock").exists()
    assert "repair" not in warehouse.catalog.settings
    assert [d.name for d in warehouse.catalog.views() if warehouse.maintainer.next_step(d)] == []
    expected = Counter(row for w in (0, 1) for b in range(BATCHES) for row in rows(w, b))
    assert stored_rows(warehouse) == expected
    assert sorted(warehouse.catalog.state("M").parts) == \
        list(range(warehouse.catalog.state("M").first, warehouse.catalog.state("M").first + BATCHES))
    assert_equals_rebuild(warehouse, make, [NETWORK_DDL], "rebuilt")


def test_a_live_writer_blocks_with_a_clear_error_and_a_killed_ones_lock_is_taken_over(spark, tmp_path, children):
    path = tmp_path / "wh"
    lock = path / "_viewdf" / "lock"
    warehouse = Warehouse(str(path), spark=spark, progress=False, lock_timeout=1.0)
    warehouse.execute(STREAM)
    holder = children(HOLDER, str(path))
    holder.wait_for("HELD", timeout=300)

    started = time.monotonic()
    with pytest.raises(ViewDFError) as caught:
        warehouse.execute(insert_statement(0, 0))
    waited = time.monotonic() - started
    message = caught.value.message
    assert f"is in use by process {holder.proc.pid} on {socket.gethostname()}" in message
    assert "waited 1s" in message and f"delete {warehouse.fs.uri('_viewdf/lock')}" in message
    assert 1.0 <= waited < 30.0
    assert warehouse.catalog.get("M") is not None and not warehouse.catalog.state("M").parts   # nothing written

    holder.send("release")
    holder.wait_for("RELEASED", timeout=60)
    assert not lock.exists()
    warehouse.execute(insert_statement(0, 0))           # the lock is free again
    assert sum(stored_rows(warehouse).values()) == K

    holder.send("again")
    holder.wait_for("HELD AGAIN", timeout=60)
    assert f'"pid": {holder.proc.pid}' in lock.read_text()
    holder.kill()                                        # SIGKILL while it holds the lock
    assert f'"pid": {holder.proc.pid}' in lock.read_text()          # left behind by the dead process
    warehouse.execute(insert_statement(0, 1))           # taken over at once (waiting 1 s would have failed)
    assert not lock.exists()
    assert stored_rows(warehouse) == Counter(rows(0, 0) + rows(0, 1))


def test_two_writers_taking_over_a_dead_processs_lock_do_not_both_get_it(spark, tmp_path, children):
    path = tmp_path / "wh"
    lock = path / "_viewdf" / "lock"
    Warehouse(str(path), spark=spark, progress=False).execute(STREAM)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()                      # a process id on this host that is no longer alive
    # What a writer SIGKILLed while holding the lock leaves (see the test above).
    lock.write_text(json.dumps({"host": socket.gethostname(), "pid": gone.pid, "since": time.time(), "token": "x"}))
    takers = [children(TAKES_OVER, str(path), str(gone.pid)) for _ in range(2)]
    for taker in takers:
        taker.wait_for("READY", timeout=300)
    for taker in takers:
        taker.send("go")
    held = []
    for taker in takers:
        start = float(taker.wait_for("HELD", timeout=120).split()[1])
        end = float(taker.wait_for("RELEASING", timeout=120).split()[1])
        assert taker.finish(timeout=60) == 0, taker.stderr_tail()
        held.append((start, end))
    (first_start, first_end), (second_start, second_end) = sorted(held)
    assert first_end <= second_start, \
        f"both writers held the lock at once: {first_start:.2f}-{first_end:.2f} and {second_start:.2f}-{second_end:.2f}"
    assert not lock.exists()


def test_an_unreadable_lock_file_is_taken_over_once_it_is_old(spark, tmp_path):
    """A writer killed between creating the lock and writing its holder leaves an empty file (on
    filesystems where the lock is not hard-linked into place, such as HDFS)."""
    path = tmp_path / "wh"
    lock = path / "_viewdf" / "lock"
    warehouse = Warehouse(str(path), spark=spark, progress=False, lock_timeout=1.0)
    warehouse.execute(STREAM)
    lock.write_text("")
    with pytest.raises(ViewDFError, match="is busy; try again"):
        warehouse.execute(insert_statement(0, 0))
    assert lock.exists() and sum(stored_rows(warehouse).values()) == 0
    old = time.time() - 60
    os.utime(lock, (old, old))
    warehouse.execute(insert_statement(0, 0))
    assert not lock.exists()
    assert sum(stored_rows(warehouse).values()) == K


def test_a_reader_never_sees_a_torn_state_while_a_writer_inserts(spark, tmp_path, children):
    path = tmp_path / "wh"
    warehouse = Warehouse(str(path), spark=spark, progress=False)
    warehouse.execute(f"{STREAM}; {COPY}")
    reader = children(READER, str(path))
    reader.wait_for("READY", timeout=300)

    def observe(after: float) -> None:
        """Wait for a line of the reader reporting a query that started after ``after``."""
        while float(reader.wait_for("SEEN", timeout=120).split()[1]) <= after:
            pass

    observe(0.0)
    for batch in range(BATCHES):
        warehouse.execute(insert_statement(0, batch))
        observe(time.monotonic())      # a query that started after this batch was committed
    reader.send("stop")
    assert reader.finish(timeout=120) == 0, reader.stderr_tail()
    seen = [(int(m), int(c)) for _, _, m, c in (line.split() for line in reader.lines if line.startswith("SEEN"))]
    torn = [(m, c) for m, c in seen if m % K or c % K or c > m]
    assert torn == [], f"torn states seen (M rows, Copy rows): {torn}"
    assert {m for m, _ in seen} >= {K * (b + 1) for b in range(BATCHES)}     # every committed state
    assert seen[-1] == (K * BATCHES, K * BATCHES)
    print(f"{len(seen)} reads; (M rows, Copy rows) seen: {sorted(Counter(seen).items())}")


def test_a_writer_waits_for_the_lock_with_a_status_line_and_an_interrupt_stops_the_wait(spark, tmp_path, children,
                                                                                       capfd):
    """By default a second writer waits (no timeout), saying for whom; an interrupt stops the wait cleanly."""
    import threading

    from test_interrupt import interrupted_when

    from viewdf_magic.errors import Interrupted
    path = tmp_path / "wh"
    warehouse = Warehouse(str(path), spark=spark, progress=True)
    warehouse.execute(STREAM)
    holder = children(HOLDER, str(path))
    holder.wait_for("HELD", timeout=300)
    version = warehouse.catalog.version

    status = f"for the writer lock: process {holder.proc.pid} on {socket.gethostname()} (writing since "
    with interrupted_when(lambda: time.sleep(2.5) or True), pytest.raises(Interrupted) as stopped:
        warehouse.execute(insert_statement(0, 0))
    assert str(stopped.value) == "Interrupted while waiting for the writer lock: nothing was written."
    assert status in capfd.readouterr().err
    assert warehouse.catalog.version == version and not warehouse.catalog.state("M").parts

    released = threading.Timer(2.0, lambda: holder.send("release"))
    released.start()
    started = time.monotonic()
    warehouse.execute(insert_statement(0, 0))            # waits for the holder's release, then writes
    assert time.monotonic() - started >= 1.5
    released.join()
    assert sum(stored_rows(warehouse).values()) == K
