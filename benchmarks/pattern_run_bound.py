"""The flights pattern backfill under other bounds of a RANGE clause's run (``RANGE_CLAUSE_WORK``, input rows x
parts): how many Spark jobs and seconds the pattern view's CREATE takes over a year of hourly parts.

Each value runs in a process of its own (this module sets the bound for the process), backfilling twice in new
warehouses (the first on a colder JVM):

    for work in 5000000 20000000 80000000; do python -m benchmarks.pattern_run_bound --work $work; done
"""

from __future__ import annotations

import argparse

import viewdf_magic.maintainer.maintainer as maintainer

from .common import bench_session, timed
from .parts_overhead import FLIGHTS, WORSENING, JobCounter, flight_rows, new_warehouse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=int, required=True, help="input rows x parts of one RANGE clause step")
    parser.add_argument("--flight-days", type=int, default=365)
    parser.add_argument("--backfills", type=int, default=2)
    args = parser.parse_args()
    maintainer.RANGE_CLAUSE_WORK = args.work
    spark = bench_session()
    rows = flight_rows(args.flight_days)
    counter = JobCounter(spark)
    figures = []
    for k in range(args.backfills):
        warehouse = new_warehouse(spark, "run-bound", "range", True)
        warehouse.execute(FLIGHTS)
        warehouse.ingest("F", rows)
        with counter.counting(f"run-bound-{k}"):
            seconds = timed(lambda: warehouse.execute(WORSENING))
        figures.append(f"{seconds:.2f} s / {counter.jobs} jobs")
    print(f"RANGE_CLAUSE_WORK {args.work:,}: " + ", ".join(figures))


if __name__ == "__main__":
    main()
