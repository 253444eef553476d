"""A MATCH_RECOGNIZE view against Apache Flink and against the paper's PATTERN view, over the same parts.

The query: rising runs that end in a drop, per key (``PATTERN (A+ B)``, the corpus's ``rise_then_drop``,
which Flink supports). The PATTERN equivalent (``[a+, b]``) states the same conditions; its meaning differs
(each part holds each key's longest match ending at its last event, docs/language.md), so it is compared
for speed only. ``--keys`` keys, ``--events`` events per part (each key's in increasing time, random prices),
``--parts`` parts of a minute.

* **view**: a warehouse holding both views; every part is ingested on its own and each view steps through it.
  A view's seconds per part are its Helper's and final view's compute seconds (SHOW PARTS), the first
  part (INITIALIZE) left out; events per second per core divide a part's events by the median and by the
  session's cores.
* **flink**: tools/flink_match_bench.py in .venv-flink (``./run flink-env``): the query in batch mode over all
  the parts' rows, parallelism 1 and 2, into a blackhole sink, less the same job over no rows; events per
  second per core divide all the events by that and by the parallelism.

Each system's row count is printed (Flink's batch leaves out the matches still open at the end, as the view
does). ``python -m benchmarks.match_recognize --keys 1000 --events 1000000 --parts 6``
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import tempfile

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from viewdf_magic import Warehouse

from .common import FIRST_PART, bench_session, median

REPO = pathlib.Path(__file__).resolve().parent.parent
FLINK_PYTHON = REPO / ".venv-flink" / "bin" / "python"
MATCH = """SELECT * FROM T MATCH_RECOGNIZE (PARTITION BY key ORDER BY ts, id
  MEASURES FIRST(A.price) AS start_price, LAST(A.price) AS top_price, B.price AS last_price, COUNT(*) AS n
  ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A+ B)
  DEFINE A AS LAST(A.price, 1) IS NULL OR A.price > LAST(A.price, 1), B AS B.price < LAST(A.price)) AS M"""
PATTERN = """SELECT key, a[1].price AS start_price, last(a.price) AS top_price, b.price AS last_price,
  count(*) AS n
  FROM T PATTERN [a+, b] WHERE a[i].price > a[i-1].price AND b.price < last(a.price)
  GROUP BY key CONTIGUITY EVENTS"""


def stream_part(spark: SparkSession, part: int, keys: int, events: int) -> DataFrame:
    """One minute of T: ``events`` rows spread over ``keys`` keys, each key's rows in increasing time."""
    per_key = -(-events // keys)
    return spark.range(part * events, (part + 1) * events).select(
        F.concat(F.lit("k"), (F.col("id") % keys).cast("string")).alias("key"),
        F.timestamp_micros(F.lit(part * 60 * 10**6) + ((F.col("id") - part * events) / keys).cast("long")
                           * (60 * 10**6 // per_key)).alias("ts"),
        F.floor(F.rand(part) * 100).cast("double").alias("price"),
        F.lit(1).cast("long").alias("vol"),
        F.col("id"))


def view_seconds(warehouse: Warehouse, view: str) -> list[float]:
    """Seconds per part of a translated view: its Helper's plus its own, INITIALIZE's part left out."""
    parts = [warehouse.run(f"SHOW PARTS {name}")[-1].table for name in (f"{view}__helper", view)]
    seconds = parts[0]["compute_seconds"].to_numpy() + parts[1]["compute_seconds"].to_numpy()
    return [float(s) for s in seconds[1:]]


def run_flink(folder: str, parallelism: int) -> dict[str, float]:
    done = subprocess.run([str(FLINK_PYTHON), str(REPO / "tools" / "flink_match_bench.py"), "--data", folder,
                           "--sql", MATCH, "--parallelism", str(parallelism)], check=True, capture_output=True,
                          text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--events", type=int, default=100_000, help="events per part")
    parser.add_argument("--parts", type=int, default=4)
    parser.add_argument("--no-flink", action="store_true")
    args = parser.parse_args()
    spark = bench_session()
    cores = spark.sparkContext.defaultParallelism
    first = FIRST_PART
    with tempfile.TemporaryDirectory(prefix="viewdf-mr-bench-") as folder:
        warehouse = Warehouse(f"{folder}/wh", spark=spark, progress=False)
        warehouse.execute("CREATE STREAM T (key STRING, ts TIMESTAMP, price DOUBLE, vol BIGINT, id BIGINT) "
                          "TIMESTAMP ts PARTITION LENGTH 60")
        warehouse.execute(f"CREATE VIEW Runs AS {MATCH}; CREATE VIEW Rising AS {PATTERN}")
        for part in range(first, first + args.parts):
            frame = stream_part(spark, part, args.keys, args.events).cache()
            warehouse.ingest("T", frame)
            frame.write.mode("append").csv(f"{folder}/csv", timestampFormat="yyyy-MM-dd HH:mm:ss.SSS")
            frame.unpersist()
        print(f"{args.parts} parts of {args.events} events over {args.keys} keys; {cores} cores")
        for view, what in (("Runs", "MATCH_RECOGNIZE view"), ("Rising", "PATTERN view")):
            seconds = median(view_seconds(warehouse, view))
            rows = warehouse.execute(f"SELECT count(*) AS n FROM {view}")["n"][0]
            print(f"{what:22s} {seconds:8.2f} s per part (median)  {args.events / seconds / cores:12,.0f} "
                  f"events/s per core  {rows} rows")
        if args.no_flink or not FLINK_PYTHON.exists():
            print("Flink skipped (./run flink-env makes .venv-flink)")
            return
        events = args.events * args.parts
        for parallelism in (1, 2):
            measured = run_flink(f"{folder}/csv", parallelism)
            seconds = measured["seconds"] - measured["empty_seconds"]
            print(f"{'Flink, parallelism ' + str(parallelism):22s} {seconds:8.2f} s for all parts "
                  f"(job {measured['seconds']:.2f} s, empty job {measured['empty_seconds']:.2f} s)  "
                  f"{events / seconds / parallelism:12,.0f} events/s per core  {measured['rows']} rows")


if __name__ == "__main__":
    main()
