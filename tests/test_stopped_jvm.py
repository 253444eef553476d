"""A classic session whose JVM dies (killed, out of memory, a crash) makes every later statement fail with one
message that says so and where the JVM's own last words are, not with py4j's connection errors."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from viewdf_magic.session import JVM_LOG_KEPT, trim_log

CHILD = textwrap.dedent("""
    import os, signal, sys
    from viewdf_magic import ViewDFError, Warehouse
    from viewdf_magic.session import embedded_session
    warehouse = Warehouse(sys.argv[1], embedded_session("local[1]"))
    warehouse.execute("CREATE STREAM S (ts TIMESTAMP, x INT) TIMESTAMP ts PARTITION LENGTH 60")
    jvm = warehouse.spark.sparkContext._gateway.proc
    os.kill(jvm.pid, signal.SIGKILL)
    jvm.wait()
    for statement in ("INSERT INTO S VALUES (TIMESTAMP '2015-01-01 10:00:00', 1)", "SELECT * FROM S"):
        try:
            warehouse.execute(statement)
        except ViewDFError as error:
            print("ViewDFError:", error)
""")


def test_a_killed_jvm_is_named_with_its_log(tmp_path):
    # the child's temporary folder is the test's own, so the JVM's log (session.JVM_LOG) is there; an old log of
    # 3 MB is trimmed to its last MB when the child starts its JVM
    old = b"".join(b"old line %07d\n" % n for n in range(3 * (1 << 20) // 17))
    (tmp_path / "viewdf-spark-driver.log").write_bytes(old)
    done = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "wh")], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    message = ("ViewDFError: Spark's JVM stopped, so this SparkSession can run nothing more: restart the kernel (or "
               f"the process) to start a new one. Its last lines in {tmp_path / 'viewdf-spark-driver.log'} say why.")
    assert done.stdout.splitlines() == [message, message]
    kept = old[len(old) - JVM_LOG_KEPT:]
    kept = kept[kept.index(b"\n") + 1:]          # from a line's start
    log = (tmp_path / "viewdf-spark-driver.log").read_bytes()
    assert log.startswith(kept) and not log.startswith(old[:len(kept)])


def test_trimming_a_log_keeps_its_last_whole_lines(tmp_path):
    log = tmp_path / "driver.log"
    log.write_bytes(b"first\nsecond\nthird\n")
    trim_log(log, 100)
    assert log.read_bytes() == b"first\nsecond\nthird\n"            # small enough: untouched
    trim_log(log, 9)                                                  # the last 9 bytes: "nd\nthird\n"
    assert log.read_bytes() == b"third\n"
    trim_log(tmp_path / "missing.log", 9)                             # no log yet: nothing to do
    assert not (tmp_path / "missing.log").exists()
