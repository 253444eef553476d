"""A read of at most SINGLE_TASK_ROWS rows is one Spark task (storage/parts.py): a step that groups a small part
needs no exchange, so it is one Spark job. Over the threshold, the read keeps Spark's partitions and the step
shuffles. Either way, the parts hold the same rows."""

from __future__ import annotations

import pandas as pd
from test_fused_parts import spark_jobs

import viewdf_magic.storage.parts as parts_module

START = pd.Timestamp("2015-01-01 10:00:00")
QUERY = "SELECT k, count(*) AS n, sum(x) AS total FROM S[j-1 .. j] GROUP BY k"


def test_a_grouping_step_over_a_small_read_is_one_job_and_over_the_threshold_it_shuffles(spark, warehouse,
                                                                                          monkeypatch):
    warehouse.maintainer.range_steps = False         # one part per step, so each step's jobs can be counted
    warehouse.run("CREATE STREAM S (ts TIMESTAMP, k STRING, x INT) TIMESTAMP ts PARTITION LENGTH 60; "
                  f"CREATE VIEW G AS INITIALIZE G[j] AS {QUERY} UPDATE G[j] AS {QUERY}")
    warehouse.set_maintenance("manual")
    rows = pd.DataFrame([(START + pd.Timedelta(minutes=m, seconds=s), k, x)
                         for m in range(4) for s, k, x in [(1, "p", m), (2, "q", 10 * m), (3, "p", 7)]],
                        columns=["ts", "k", "x"])
    warehouse.ingest("S", rows)
    first = START.value // 60_000_000_000

    jobs = [spark_jobs(spark, f"one-task-{k}", lambda: warehouse.step("G")) for k in range(2)]
    monkeypatch.setattr(parts_module, "SINGLE_TASK_ROWS", 0)        # every read is over the threshold
    jobs += [spark_jobs(spark, f"shuffled-{k}", lambda: warehouse.step("G")) for k in range(2)]
    assert jobs[:2] == [1, 1]           # the step's write; no exchange, so no job for its map stage
    assert all(n > 1 for n in jobs[2:])

    definition, state = warehouse.catalog.get("G"), warehouse.catalog.state("G")
    stored = warehouse.store.read_parts(definition, state, sorted(state.parts)).toPandas()
    for j in range(first, first + 4):
        minutes = rows[(rows.ts.astype("int64") // 60_000_000_000).between(j - 1, j)]
        want = sorted((k, len(group), int(group.x.sum())) for k, group in minutes.groupby("k"))
        part = stored[stored.PART_TIMESTAMP == pd.Timestamp(j * 60, unit="s")]
        assert sorted(zip(part.k, part.n, part.total)) == want, j
