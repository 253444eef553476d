"""What one partitioned write costs per part (issue 17): 1,460 rows in 365 parts written with
``partitionBy`` by 4 tasks, by 4 tasks after a shuffle by part (one file per part), and by one task,
against the same rows unpartitioned. A range step of a pattern Helper over a year of daily parts
writes exactly this shape.

    python -m benchmarks.partitioned_write
"""

from __future__ import annotations

import tempfile
import time

from pyspark.sql import functions as F

from .common import bench_session


def main() -> None:
    spark = bench_session()
    rows = spark.range(1460).select((F.col("id") % 365).alias("__part"), F.col("id").cast("double").alias("x"),
                                    F.lit("abc").alias("s")).localCheckpoint()
    shapes = {"4 tasks": lambda: rows.repartition(4), "4 tasks, shuffled by part": lambda: rows.repartition(4, "__part"),
              "1 task": lambda: rows.coalesce(1)}
    for _ in range(2):
        for name, shape in shapes.items():
            started = time.perf_counter()
            shape().write.partitionBy("__part").parquet(tempfile.mkdtemp() + "/out")
            print(f"{name}: {time.perf_counter() - started:.2f} s", flush=True)
    started = time.perf_counter()
    rows.coalesce(1).write.parquet(tempfile.mkdtemp() + "/out")
    print(f"unpartitioned, 1 task: {time.perf_counter() - started:.2f} s")


if __name__ == "__main__":
    main()
