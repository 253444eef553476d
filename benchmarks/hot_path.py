"""Per-part maintenance time of the paper's hand-written Helper/View2 ViewDF.

Compares, in one run on the same parts: the warehouse with its in-memory cache of
recent parts (``cache_size`` 8), the warehouse without it (the default), and a hand-written PySpark
pipeline that keeps its own Helper folder (this minute's rows, filter, left join its Helper[j-1],
write Helper[j], filter to View2[j], write). All three take the same cached batch.

    python -m benchmarks.hot_path --pairs 1000000 --parts 8
"""

from __future__ import annotations

import argparse
import shutil
import tempfile

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from viewdf_magic import Warehouse
from viewdf_magic.network_example import NETWORK_DDL

from .common import FIRST_PART, bench_session, median, network_part, timed



def hand_written_step(spark, batch: DataFrame, previous_helper: str | None, out: str) -> None:
    """The paper's Helper and View2 by hand: this minute's rows (``batch``, the same DataFrame the warehouses
    ingest) joined with the pipeline's own previous Helper folder; both parts written as Parquet."""
    new = batch.where("loss > 10").alias("n")
    if previous_helper is None:          # INITIALIZE
        helper = new.select("src", "dest", F.lit(1).alias("ct"), F.col("loss").alias("sum_loss"))
    else:
        prev = spark.read.parquet(previous_helper).alias("p")
        helper = new.join(prev, (F.col("n.src") == F.col("p.src")) & (F.col("n.dest") == F.col("p.dest")), "left") \
            .select("n.src", "n.dest", (F.coalesce("p.ct", F.lit(0)) + 1).alias("ct"),
                    (F.coalesce("p.sum_loss", F.lit(0)) + F.col("n.loss")).alias("sum_loss"))
    helper.write.mode("overwrite").parquet(out + "/helper")
    spark.read.parquet(out + "/helper").where("ct >= 4").write.mode("overwrite").parquet(out + "/view")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=1_000_000)
    parser.add_argument("--parts", type=int, default=8)
    parser.add_argument("--selectivity", type=float, default=0.1)
    args = parser.parse_args()
    spark = bench_session()
    root = tempfile.mkdtemp(prefix="viewdf-bench-")
    warehouses = {"cached": Warehouse(f"{root}/cached", spark, progress=False),
                  "uncached": Warehouse(f"{root}/uncached", spark, progress=False)}
    warehouses["cached"].store.cache_size = 8
    times: dict[str, list[float]] = {"cached": [], "uncached": [], "hand-written": []}
    for wh in warehouses.values():
        wh.execute(NETWORK_DDL)
    for k in range(args.parts):
        part = FIRST_PART + k
        batch = network_part(spark, part, args.pairs, args.selectivity).cache()
        batch.count()
        for name, wh in warehouses.items():
            report = wh.ingest("M", batch)
            if k > 0:   # the first part runs INITIALIZE and warms the JVM
                times[name].append(sum(step.seconds for step in report.steps))
        previous = f"{root}/hand/{k - 1}/helper" if k > 0 else None
        seconds = timed(lambda: hand_written_step(spark, batch, previous, f"{root}/hand/{k}"))
        if k > 0:
            times["hand-written"].append(seconds)
        batch.unpersist()
    hand = median(times["hand-written"])
    print(f"pairs per part: {args.pairs:,}, selectivity {args.selectivity}, steps measured: {args.parts - 1}")
    for name, values in times.items():
        print(f"{name:>13}: median {median(values):.3f} s  ({median(values) / hand:.2f}x hand-written)  "
              f"all: {' '.join(f'{v:.2f}' for v in values)}")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
