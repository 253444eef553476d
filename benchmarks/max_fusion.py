"""Could one Spark job per part make sliding MAX 3x faster than the pane merge? Hand-written PySpark probes.

The translated MAX view runs three steps per part (pre-aggregate, chunk helper, final view),
each its own Spark job. This script times, on the thesis's workload (1M rows per part, ten per
(src, dest) pair), hand-written versions of the same per-part work in one run, interleaved:

* pre-aggregate    — max(loss), count(*) per pair of the new part, written (the work of `Pane`);
* pane merge       — the pre-aggregate, then max over W stored pre-aggregates, written;
* three jobs       — the pre-aggregate, the chunk step and the final view, each written by its own job;
* two jobs         — the pre-aggregate computed inside the chunk step (stored there as a third side, for
  the suffixes of later chunks), then the final view;
* one job, three outputs — the same three results from one plan, written by one job (partitionBy);
* one job, one wide row  — the cheapest single job imaginable: one conditional aggregation over the
  new rows and the stored state, one row per pair with every result as a column, one write.

    python -m benchmarks.max_fusion --rows 1000000 --window 60 --rounds 7
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from itertools import count
from typing import Callable

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from viewdf_magic.storage.parts import content_checksum, part_stamp

from .common import bench_session, median
from .windows import window_part

def no_int() -> Column:
    return F.lit(None).cast("int")


def pre_aggregate(part: DataFrame) -> DataFrame:
    return part.groupBy(F.col("src").alias("k0"), F.col("dest").alias("k1")) \
        .agg(F.count(F.lit(1)).alias("n"), F.max("loss").alias("mx"))


def chunk_step(prefix_source: DataFrame, suffix_source: DataFrame, previous: DataFrame) -> DataFrame:
    """Both sides of the chunk helper: the prefix grows by ``prefix_source``, the suffix by ``suffix_source``."""
    prefix = prefix_source.select("k0", "k1", F.lit(1).alias("p"), F.col("mx").alias("p_mx"), no_int().alias("s"),
                                  no_int().alias("s_mx"))
    suffix = suffix_source.select("k0", "k1", no_int().alias("p"), no_int().alias("p_mx"), F.lit(1).alias("s"),
                                  F.col("mx").alias("s_mx"))
    return previous.union(prefix).union(suffix).groupBy("k0", "k1") \
        .agg(*[F.max(c).alias(c) for c in ("p", "p_mx", "s", "s_mx")])


def final_view(chunks: DataFrame, newest: DataFrame) -> DataFrame:
    """max over the suffix and prefix of stored chunk parts and the newest prefix."""
    side = lambda frame, name: frame.where(f"{name} = 1").select("k0", "k1", F.col(f"{name}_mx").alias("mx"))  # noqa: E731
    return side(chunks, "s").union(side(chunks, "p")).union(side(newest, "p")).groupBy("k0", "k1") \
        .agg(F.max("mx").alias("mx"))


class Probe:
    """Staged parts of M, W stored pre-aggregates and one stored chunk part, and the timed variants."""

    def __init__(self, spark, folder: str, rows: int, window: int) -> None:
        self.spark, self.folder, self.window = spark, folder, window
        self.outputs = count()
        window_part(spark, 1, rows).write.parquet(f"{folder}/M")
        pre_aggregate(window_part(spark, 0, rows)).write.parquet(f"{folder}/pre0")
        for k in range(1, window):
            shutil.copytree(f"{folder}/pre0", f"{folder}/pre{k}")
        chunk_step(self.pre(0), self.pre(1), self.spark.createDataFrame(
            [], "k0 string, k1 string, p int, p_mx int, s int, s_mx int")).write.parquet(f"{folder}/chunks")

    def read(self, name: str) -> DataFrame:
        return self.spark.read.parquet(f"{self.folder}/{name}")

    def pre(self, k: int) -> DataFrame:
        return self.read(f"pre{k}")

    def write(self, frame: DataFrame, partition: str | None = None, *metrics: Column) -> None:
        """Write as the engine does: the part timestamp column, row count and content hash observed."""
        observed = Observation()
        metrics = metrics or (F.count(F.lit(1)).alias("rows"), content_checksum(frame.schema).alias("hash"))
        writer = frame.withColumn("PART_TIMESTAMP", part_stamp(60)).observe(observed, *metrics).write
        if partition:
            writer = writer.partitionBy(partition)
        writer.parquet(f"{self.folder}/out{next(self.outputs)}")
        observed.get

    def pre_only(self) -> None:
        self.write(pre_aggregate(self.read("M")))

    def pane_merge(self) -> None:
        self.pre_only()
        merged = self.spark.read.parquet(*[f"{self.folder}/pre{k}" for k in range(self.window)])
        self.write(merged.groupBy("k0", "k1").agg(F.max("mx").alias("mx")))

    def three_jobs(self) -> None:
        self.pre_only()
        self.write(chunk_step(self.pre(0), self.pre(1), self.read("chunks")))
        self.write(final_view(self.read("chunks"), self.read("chunks")))

    def two_jobs(self) -> None:
        new = pre_aggregate(self.read("M"))
        chunks = chunk_step(new.select("k0", "k1", "mx"), self.pre(1), self.read("chunks"))
        own = new.select("k0", "k1", F.lit(1).alias("e"), F.col("mx").alias("e_mx"))
        self.write(chunks.unionByName(own, allowMissingColumns=True))
        self.write(final_view(self.read("chunks"), self.read("chunks")))

    def one_job_three_outputs(self) -> None:
        new = pre_aggregate(self.read("M"))
        chunks = chunk_step(new.select("k0", "k1", "mx"), self.pre(1), self.read("chunks"))
        outputs = {"pre": new, "chunks": chunks, "view": final_view(self.read("chunks"), chunks)}
        tagged = [frame.withColumn("__out", F.lit(tag)) for tag, frame in outputs.items()]
        union = tagged[0]
        for frame in tagged[1:]:
            union = union.unionByName(frame, allowMissingColumns=True)
        self.write(union, "__out", *[F.sum(F.when(F.col("__out") == tag, 1)).alias(tag) for tag in outputs])

    def one_job_wide_row(self) -> None:
        chunks = self.read("chunks")
        source = F.col("source")
        rows = self.read("M").select(F.col("src").alias("k0"), F.col("dest").alias("k1"), F.lit(0).alias("source"),
                                     F.col("loss").alias("v")) \
            .union(chunks.where("p = 1").select("k0", "k1", F.lit(1), "p_mx")) \
            .union(chunks.where("s = 1").select("k0", "k1", F.lit(2), "s_mx")) \
            .union(self.pre(1).select("k0", "k1", F.lit(3), "mx"))
        of = lambda *sources: F.max(F.when(source.isin(*sources), F.col("v")))  # noqa: E731
        self.write(rows.groupBy("k0", "k1").agg(
            F.sum(F.when(source == 0, 1)).alias("n"), of(0).alias("mx"), of(0, 1).alias("p_mx"),
            of(2, 3).alias("s_mx"), of(0, 1, 2).alias("w_mx")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows per part")
    parser.add_argument("--window", type=int, default=60, help="W: pre-aggregates the pane merge merges")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds (each runs every variant once)")
    args = parser.parse_args()
    spark = bench_session()
    folder = tempfile.mkdtemp(prefix="viewdf-max-fusion-")
    probe = Probe(spark, folder, args.rows, args.window)
    variants: dict[str, Callable[[], None]] = {
        "pre-aggregate": probe.pre_only, f"pane merge (W = {args.window})": probe.pane_merge,
        "three jobs": probe.three_jobs, "two jobs": probe.two_jobs, "one job, three outputs": probe.one_job_three_outputs,
        "one job, one wide row": probe.one_job_wide_row}
    for variant in variants.values():     # warm-up: code generation, file listing caches
        variant()
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, variant in variants.items():
            started = time.perf_counter()
            variant()
            times[name].append(time.perf_counter() - started)
    pane = median(times[f"pane merge (W = {args.window})"])
    print(f"rows per part {args.rows:,}, W = {args.window}, {args.rounds} rounds; 3x the pane merge needs "
          f"<= {pane / 3:.3f} s")
    for name, values in times.items():
        print(f"{name:>26}: median {median(values):.3f} s   pane merge / this = {pane / median(values):.2f}x")
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
