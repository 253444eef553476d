"""Would stepping independent views concurrently pay (issue 17)? After one stream part arrives, the
scaling benchmark's views that read only the stream (the pattern helper, two window pre-aggregates and the
naive window view) are ready together. This runs exactly their Spark work (each step's query, written as
its part would be) one after the other and then from one thread each (Spark's fair scheduler, a pool per
thread), on the same parts, alternating, and reports the median wall seconds of each way. Nothing is
committed: the catalog does not change, so every round computes the same parts.

    python -m benchmarks.concurrent_steps --rows 1000 --rounds 7
    python -m benchmarks.concurrent_steps --rows 1000 --master spark://...   # a cluster
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from viewdf_magic import Warehouse
from viewdf_magic.maintainer.steps import PendingStep

from .common import bench_session
from .scaling import STREAM, VIEWS, cluster_session, stream_parts


def ready_steps(warehouse: Warehouse) -> list[PendingStep]:
    """Every view's next step that is ready now (none of them reads another's next part)."""
    found = [warehouse.maintainer.next_step(d) for d in warehouse.catalog.views()]
    return [step for step in found if step is not None]


def run_step(warehouse: Warehouse, step: PendingStep, pool: str | None) -> None:
    """The step's Spark work: its query, written as its part would be (then deleted)."""
    spark = warehouse.spark
    if pool is not None:
        spark.sparkContext.setLocalProperty("spark.scheduler.pool", pool)
    runner, store = warehouse.maintainer.runner, warehouse.store
    with runner.bound(step.query, step.refs, schema=step.view.schema, clause=step.how.upper()) as frame:
        folder, _ = store.write_part(step.view, step.subscript, store.stamp(step.view, step.subscript, frame))
    if folder:
        store.fs.delete(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1000, help="rows per stream part")
    parser.add_argument("--history", type=int, default=8, help="parts before the measured one")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--master", help="a standalone master URL (default: local[2])")
    args = parser.parse_args()
    config = {"spark.scheduler.mode": "FAIR"}
    spark = cluster_session(args.master, **config) if args.master else bench_session(**config)
    warehouse = Warehouse(tempfile.mkdtemp(prefix="viewdf-concurrent-"), spark=spark, progress=False)
    warehouse.execute(STREAM)
    for view in VIEWS:
        warehouse.execute(view)
    warehouse.ingest("M", stream_parts(spark, 0, args.history, args.rows))
    warehouse.execute("SET MAINTENANCE MANUAL")
    warehouse.ingest("M", stream_parts(spark, args.history, 1, args.rows))
    steps = ready_steps(warehouse)
    print(f"{len(steps)} views ready together: {', '.join(s.view.name for s in steps)}")
    times: dict[str, list[float]] = {"one after the other": [], "concurrently": []}
    with ThreadPoolExecutor(len(steps)) as threads:
        for round_ in range(args.rounds + 1):
            order = list(times) if round_ % 2 == 0 else list(reversed(times))
            for way in order:
                started = time.perf_counter()
                if way == "concurrently":
                    list(threads.map(lambda k: run_step(warehouse, steps[k], f"view{k}"), range(len(steps))))
                else:
                    for step in steps:
                        run_step(warehouse, step, None)
                if round_:                      # the first round warms up
                    times[way].append(time.perf_counter() - started)
    for way, seconds in times.items():
        print(f"{way}: median {statistics.median(seconds):.3f} s over {len(seconds)} rounds")
    sequential, concurrent = (statistics.median(v) for v in times.values())
    print(f"concurrent / sequential = {concurrent / sequential:.2f}")


if __name__ == "__main__":
    main()
