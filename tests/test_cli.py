"""The ``viewdf`` command line: ``viewdf run FILE`` in-process, ``viewdf demo`` as a real subprocess."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from viewdf_magic.cli import main

EXAMPLE = Path(__file__).parents[1] / "examples" / "network.viewdf"


@pytest.fixture
def viewdf_run(spark, tmp_path, capsys):
    """``viewdf run FILE --warehouse <tmp> [options]``, in-process on the tests' Spark session.

    Returns the exit code, stdout and stderr.
    """
    def run(file: Path, *options: str) -> tuple[int, str, str]:
        code = main(["run", str(file), "--warehouse", str(tmp_path / "wh"), *options])
        out, err = capsys.readouterr()
        return code, out, err
    return run


@pytest.fixture
def script(tmp_path):
    """A statements file holding ``text``."""
    def write(text: str) -> Path:
        path = tmp_path / "script.viewdf"
        path.write_text(text)
        return path
    return write


def test_run_the_example_file(viewdf_run):
    code, out, err = viewdf_run(EXAMPLE)
    assert code == 0, err
    assert "Created view View2 (PARTITION LENGTH 60)." in out
    assert "Inserted 10 rows into 7 parts of M; 14 view parts computed." in out
    assert re.search(r"10\.0\.0\.1\s+10\.0\.0\.2\s+4\s+71\s+2015-01-01 10:04:00", out)
    assert re.search(r"10\.0\.0\.1\s+10\.0\.0\.2\s+5\s+87\s+2015-01-01 10:05:00", out)
    assert "(2 rows)" in out and "(7 rows)" in out


def test_run_cuts_rows_beyond_the_limit(viewdf_run, script):
    query = script("SELECT x FROM VALUES (1), (2), (3) AS t(x) ORDER BY x")
    code, out, _ = viewdf_run(query, "--limit", "2")
    assert code == 0
    assert "Showing the first 2 rows; more exist. Use --limit 0 to print them all." in out
    assert re.findall(r"^\s*\d$", out, re.MULTILINE) == [" 1", " 2"]
    code, out, _ = viewdf_run(query, "--limit", "0")
    assert "(3 rows)" in out and "Showing" not in out


def test_run_error_exits_1_with_a_caret(viewdf_run, script):
    code, out, err = viewdf_run(script("SHOW STREAMS;\nSELECT src FROM\n  Nowhere"))
    assert code == 1
    assert "(0 rows)" in out  # the statement before the error ran
    assert "at line 3, column 3:" in err
    assert re.search(r"\n\s+Nowhere\n\s+\^{7}", err) and "Traceback" not in err


def test_parse_error_runs_nothing(viewdf_run, script):
    code, out, err = viewdf_run(script("SHOW STREAMS;\nSHOW NOTHING"))
    assert code == 1 and out == ""
    assert "at line 2, column 6:" in err and "^^^^^^^" in err


def test_missing_file_exits_2(tmp_path, capsys):
    assert main(["run", str(tmp_path / "absent.viewdf")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_demo_prints_the_paper_numbers(tmp_path):
    viewdf = Path(sys.executable).with_name("viewdf")
    # the child's temporary folder is the test's own, so its JVM's log (session.JVM_LOG) is this run's alone
    done = subprocess.run([str(viewdf), "demo", "--pairs", "2", "--history", "30", "--warehouse", str(tmp_path / "wh")],
                          capture_output=True, text=True, timeout=600,    # a loaded 2-core machine: minutes
                          env={**os.environ, "TMPDIR": str(tmp_path)})
    jvm_log = tmp_path / "viewdf-spark-driver.log"
    assert done.returncode == 0, done.stderr + "\nThe JVM's log:\n" + (
        jvm_log.read_text(errors="replace")[-8000:] if jvm_log.exists() else "(none)")
    assert done.stderr == ""                  # nothing from the JVM's start (its log is in the temp folder)
    minutes = {block[:5]: block for block in done.stdout.split("\n\n")}
    assert "10.0.0.1 -> 10.0.0.2  ct=4 sum_loss=71  (the paper's pair)" in minutes["10:04"]
    assert "10.0.0.1 -> 10.0.0.2  ct=5 sum_loss=87  (the paper's pair)" in minutes["10:05"]
    assert "10.0.0.1" not in minutes["10:06"]
    assert re.search(r"Done: View2 has 10 parts holding \d+ rows; 40 view parts computed, mean step time", done.stdout)
    assert (tmp_path / "wh" / "_viewdf").is_dir()
    assert "  View2   the pairs that lost more than 10 packets in each of the last four or more minutes" \
        in done.stdout                                   # what each view asks
    assert re.search(r"E\[4\]\[4\]\s+d\s+d\s+self\s+each later d\s+d\.loss > 10", done.stdout)   # View1's FSM
    comparison = re.findall(r"^ (10:0\d)\s+[\d.]+\s+(\d+) parts?\s+[\d.]+\s+(\d+) parts?\s+(\w+)$", done.stdout,
                            re.MULTILINE)
    # minute m: the helper reads M[m] and its part m-1 (none at 10:00), View1 the helper's part m;
    # recomputation reads M from 10:00 to m; every part equals its recomputation
    assert comparison == [(f"10:0{m}", "2" if m == 0 else "3", str(m + 1), "yes") for m in range(10)]
    # then 30 minutes of history (101 rows a minute) in one load, and three more minutes computed both ways:
    # the incremental steps still read 3 parts, recomputation every minute of Day so far
    assert "After 30 minutes of history: stream Day, the same pattern view as DayView1, 3,030 rows loaded at once" \
        in done.stdout
    after = re.findall(r"^ (10:3\d)\s+[\d.]+\s+(\d+) parts?\s+[\d.]+\s+(\d+) parts?\s+(\w+)$", done.stdout,
                       re.MULTILINE)
    assert after == [(f"10:3{m}", "3", str(31 + m), "yes") for m in range(3)]


WATCH_DDL = ("CREATE STREAM M (ts TIMESTAMP, src STRING, loss INT) PARTITION LENGTH 60;"
             "CREATE VIEW Total AS SELECT src, sum(loss) AS total FROM M [WINDOW 2 MINUTES] GROUP BY src")


def _land(folder: Path, name: str, lines: list[str]) -> None:
    """A CSV file written beside the landing folder, then moved in (as a writer should)."""
    written = folder.parent / f".{name}"
    written.write_text("ts,src,loss\n" + "".join(f"{line}\n" for line in lines))
    written.rename(folder / name)


def test_watch_once_takes_only_the_files_it_has_not_taken(spark, tmp_path, capsys):
    from viewdf_magic import Warehouse

    landing, warehouse_path = tmp_path / "landing", str(tmp_path / "wh")
    landing.mkdir()
    Warehouse(warehouse_path, spark=spark, progress=False).run(WATCH_DDL)
    watch = ["watch", str(landing), "--into", "M", "--warehouse", warehouse_path, "--once"]
    _land(landing, "a.csv", ["2015-01-01 10:00:10,a,3", "2015-01-01 10:01:10,a,4"])
    assert main(watch) == 0
    out, err = capsys.readouterr()
    assert "Inserted 2 rows into 2 parts of M" in out and "1 new files taken into M" in err
    _land(landing, "b.csv", ["2015-01-01 10:02:10,a,5"])
    assert main(watch) == 0
    out, err = capsys.readouterr()
    assert "Inserted 1 row into 1 part of M from 1 new file; 1 file loaded before skipped" in out
    assert main(watch) == 0                    # nothing new: nothing loaded, nothing printed
    out, err = capsys.readouterr()
    assert out == "" and "0 new files taken into M" in err
    totals = Warehouse(warehouse_path, spark=spark, progress=False).execute("SELECT PART_TIMESTAMP, total FROM Total")
    assert sorted(totals["total"]) == [3, 7, 9]          # 10:00: 3; 10:01: 3+4; 10:02: 4+5


def test_watch_with_move_empties_the_landing_folder(spark, tmp_path, capsys):
    from viewdf_magic import Warehouse

    landing, warehouse_path = tmp_path / "landing", str(tmp_path / "wh")
    landing.mkdir()
    Warehouse(warehouse_path, spark=spark, progress=False).run(WATCH_DDL)
    watch = ["watch", str(landing), "--into", "M", "--warehouse", warehouse_path, "--once", "--move"]
    _land(landing, "a.csv", ["2015-01-01 10:00:10,a,3", "2015-01-01 10:01:10,a,4"])
    assert main(watch) == 0
    out, _ = capsys.readouterr()
    assert "Inserted 2 rows into 2 parts of M" in out and f"Removed 1 loaded file from '{landing}'." in out
    assert list(landing.iterdir()) == []
    _land(landing, "a.csv", ["2015-01-01 10:02:10,a,5"])          # the same name again: a new file
    assert main(watch) == 0
    assert list(landing.iterdir()) == []
    totals = Warehouse(warehouse_path, spark=spark, progress=False).execute("SELECT PART_TIMESTAMP, total FROM Total")
    assert sorted(totals["total"]) == [3, 7, 9]


def test_watch_loads_files_as_they_land_and_stops_cleanly_on_ctrl_c(spark, tmp_path):
    import signal
    import time

    from viewdf_magic import Warehouse

    landing, warehouse_path = tmp_path / "landing", str(tmp_path / "wh")
    landing.mkdir()
    Warehouse(warehouse_path, spark=spark, progress=False).run(WATCH_DDL)
    watcher = subprocess.Popen([str(Path(sys.executable).with_name("viewdf")), "watch", str(landing), "--into", "M",
                                "--warehouse", warehouse_path, "--every", "0.5"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _land(landing, "a.csv", ["2015-01-01 10:00:10,a,3"])
        _land(landing, "b.csv", ["2015-01-01 10:01:10,b,4"])
        deadline = time.monotonic() + 120
        loaded = {}
        while time.monotonic() < deadline and len(loaded) < 2:
            loaded = Warehouse(warehouse_path, spark=spark, progress=False).reads.state("M").loaded
            time.sleep(0.5)
        assert len(loaded) == 2
        watcher.send_signal(signal.SIGINT)
        out, err = watcher.communicate(timeout=60)
    finally:
        if watcher.poll() is None:
            os.kill(watcher.pid, signal.SIGKILL)
    assert watcher.returncode == 0, err
    assert "Inserted 2 rows into 2 parts of M" in out or out.count("Inserted 1 row") == 2
    assert "watched" in err and "2 new files taken into M" in err and "Traceback" not in err
