"""A reader in another process than the writer, reading with ``format("viewdf")`` while the writer ingests and
maintains, sees whole published parts only: every part it reads equals that part as it finally is (the parts
here are never repaired), and a part it does not see is not published yet."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pandas as pd

from crash_worker import Child

from viewdf_magic import Warehouse

TESTS = Path(__file__).resolve().parent
BATCHES = 8
ROWS = 300          # per batch, one minute each: a part that is read half-written would show fewer
DDL = ("CREATE STREAM M (ts TIMESTAMP, k INT, v INT) PARTITION LENGTH 60;"
       "CREATE VIEW Totals AS INITIALIZE Totals[i] AS SELECT k, count(*) AS n, sum(v) AS total FROM M[i] GROUP BY k "
       "UPDATE Totals[j] AS SELECT k, count(*) AS n, sum(v) AS total FROM M[j] GROUP BY k")

WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    import pandas as pd
    from crash_worker import small_session
    from viewdf_magic import Warehouse
    warehouse = Warehouse(sys.argv[1], spark=small_session(), progress=False)
    print("READY", flush=True)
    for b in range({batches}):
        start = pd.Timestamp("2015-01-01 10:00") + pd.Timedelta(minutes=b)
        warehouse.ingest("M", pd.DataFrame({{"ts": [start + pd.Timedelta(milliseconds=100 * r) for r in range({rows})],
                                             "k": [r % 7 for r in range({rows})], "v": list(range({rows}))}}
                                            ).astype({{"k": "int32", "v": "int32"}}))
        print(f"ACK {{b}}", flush=True)
    print("DONE", flush=True)
""").format(tests=str(TESTS), batches=BATCHES, rows=ROWS)


def by_part(frame: pd.DataFrame) -> dict[str, list[tuple]]:
    """A read's rows, part by part, each part's rows sorted."""
    return {str(at): sorted(map(tuple, rows.drop(columns="PART_TIMESTAMP").itertuples(index=False)))
            for at, rows in frame.groupby("PART_TIMESTAMP")}


def test_a_reader_in_another_process_sees_only_whole_published_parts(spark, tmp_path):
    path = tmp_path / "wh"
    Warehouse(str(path), spark=spark, progress=False).run(DDL)
    writer = Child(["-c", WRITER, str(path)], tmp_path / "writer-stderr.txt")
    reads: list[tuple[dict, dict]] = []
    try:
        writer.wait_for("READY", timeout=300)
        while writer.proc.poll() is None or not reads:
            view = spark.read.format("viewdf").load(f"{path}/Totals").toPandas()     # the view first: its parts
            stream = spark.read.format("viewdf").load(f"{path}/M").toPandas()        # read stream parts
            reads.append((by_part(stream), by_part(view)))
        assert writer.finish(timeout=600) == 0, writer.stderr_tail()
        assert writer.lines[-1] == "DONE"
    finally:
        writer.kill()
    final_stream = by_part(spark.read.format("viewdf").load(f"{path}/M").toPandas())
    final_view = by_part(spark.read.format("viewdf").load(f"{path}/Totals").toPandas())
    assert len(final_stream) == len(final_view) == BATCHES
    assert all(len(rows) == ROWS for rows in final_stream.values())
    for stream, view in reads:
        assert all(final_stream[at] == rows for at, rows in stream.items())       # whole parts, never a piece
        assert all(final_view[at] == rows for at, rows in view.items())
        assert set(view) <= set(stream)        # a view part is published after the stream part it reads
    seen = {len(stream) for stream, _ in reads}
    assert len(seen - {0, BATCHES}) >= 2, f"the reads saw too few moments of the writer's progress: {sorted(seen)}"
