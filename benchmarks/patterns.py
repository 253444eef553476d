"""Pattern View1 (the paper's section 2 query, translated automatically): the generated ViewDF
step against the naive Direct strategy at several scopes and a hand-written PySpark step.

One record per (src, dest) pair per part; a fraction ``selectivity`` of losses are above 10.
Every part is ingested into two streams of one warehouse, each holding View1:

* ``M`` is declared ``UNIQUE (src, dest) PER PART`` (what this workload is, and what the
  hand-written step assumes), so its View1 gets the single-event Helper plan; ingest checks the
  declaration;
* ``G`` is the same stream without the declaration, so its View1 gets the general plan (several
  events per pair per part allowed).

The generated step is the Helper step plus the View1 step. The hand-written step (the thesis's
"Hardcode": read M[j], keep losses > 10, left-join the previous helper, write it, filter runs of at
least 4 into the view) is run on the same stored parts. Ingest (storing the batch, and for M the
uniqueness check) is timed too. At each checkpoint part, Direct (``Warehouse.recompute`` with
``scope``) recomputes View1's part from the last ``scope`` parts.

    python -m benchmarks.patterns --pairs 1000000 --parts 101 --scopes 5 20 100
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time

from pyspark.sql import functions as F

from viewdf_magic import Warehouse
from viewdf_magic.storage.slices import folder_of
from viewdf_magic.timeparts import part_start

from .common import FIRST_PART, bench_session, median, network_part, timed

VIEW1 = """
CREATE STREAM M (ts TIMESTAMP, src STRING, dest STRING, loss INT) TIMESTAMP ts PARTITION LENGTH 60
  UNIQUE (src, dest) PER PART;
CREATE VIEW View1 AS
  SELECT src, dest, a.ts AS since, count(*) AS ct, sum(loss) AS sum_loss, max(loss) AS peak
  FROM M PATTERN [a, b, c, d+]
  WHERE a.loss > 10 AND b.loss > 10 AND c.loss > 10 AND d.loss > 10
  GROUP BY src, dest
"""
GENERAL = (VIEW1.replace("UNIQUE (src, dest) PER PART", "").replace("View1", "General")
           .replace("STREAM M ", "STREAM G ").replace("FROM M ", "FROM G "))


def hand_written_step(spark, m_folder: str, previous: str | None, out: str) -> None:
    """Hardcode: one record per pair per part, so a run is extended or restarted by a join."""
    new = spark.read.parquet(m_folder).where("loss > 10").alias("n")
    if previous is None:
        helper = new.select("src", "dest", F.col("ts").alias("since"), F.lit(1).alias("ct"),
                            F.col("loss").cast("bigint").alias("sum_loss"), F.col("loss").alias("peak"))
    else:
        prev = spark.read.parquet(previous).alias("p")
        helper = new.join(prev, (F.col("n.src") == F.col("p.src")) & (F.col("n.dest") == F.col("p.dest")), "left") \
            .select("n.src", "n.dest", F.coalesce("p.since", "n.ts").alias("since"),
                    (F.coalesce("p.ct", F.lit(0)) + 1).alias("ct"),
                    (F.coalesce("p.sum_loss", F.lit(0)) + F.col("n.loss")).alias("sum_loss"),
                    F.greatest("p.peak", "n.loss").alias("peak"))
    helper.write.mode("overwrite").parquet(out + "/helper")
    spark.read.parquet(out + "/helper").where("ct >= 4").write.mode("overwrite").parquet(out + "/view")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=1_000_000)
    parser.add_argument("--parts", type=int, default=101)
    parser.add_argument("--selectivity", type=float, default=0.1)
    parser.add_argument("--scopes", type=int, nargs="+", default=[5, 20, 100])
    parser.add_argument("--window", type=int, default=5, help="steps per median around each checkpoint")
    parser.add_argument("--cache", type=int, default=0, help="PartStore.cache_size: recent parts kept in memory")
    args = parser.parse_args()
    spark = bench_session()
    root = tempfile.mkdtemp(prefix="viewdf-patterns-")
    wh = Warehouse(f"{root}/wh", spark, progress=False)
    wh.store.cache_size = args.cache
    wh.execute(VIEW1)
    wh.execute(GENERAL)
    times: dict[str, list[float]] = {name: [] for name in ("generated", "general", "ingest", "ingest G")}
    hand: list[float] = []
    direct: dict[int, float] = {}
    checkpoints = {min(scope, args.parts - 1): scope for scope in args.scopes}
    for k in range(args.parts):
        part = FIRST_PART + k
        batch = network_part(spark, part, args.pairs, args.selectivity, seed=k).cache()
        batch.count()
        for stream, step_key, ingest_key in (("M", "generated", "ingest"), ("G", "general", "ingest G")):
            started = time.perf_counter()
            report = wh.ingest(stream, batch)
            steps = sum(step.seconds for step in report.steps)
            times[step_key].append(steps)
            times[ingest_key].append(time.perf_counter() - started - steps)
        batch.unpersist()
        m_folder = wh.fs.uri(folder_of(wh.catalog.state("M").parts[part].folders[0]))
        hand.append(timed(lambda: hand_written_step(spark, m_folder, f"{root}/hand/{k - 1}/helper" if k else None,
                                                    f"{root}/hand/{k}")))
        if k > 1:
            shutil.rmtree(f"{root}/hand/{k - 2}", ignore_errors=True)
        if k in checkpoints:
            scope = checkpoints[k]
            direct[scope] = timed(lambda: wh.recompute("View1", part_start(part, 60), scope=scope))
            print(f"part {k}: Direct at scope {scope}: {direct[scope]:.2f} s", flush=True)
    print(f"\npairs per part: {args.pairs:,}, selectivity {args.selectivity}, parts {args.parts}")
    print("part window   generated   general   hand-written   generated/hand   general/hand"
          "   ingest (UNIQUE checked)   ingest")
    windows = [slice(max(1, k - args.window + 1), k + 1) for k in sorted(checkpoints)] + [slice(1, None)]
    for window in windows:
        g, a, h = (median(times["generated"][window]), median(times["general"][window]), median(hand[window]))
        label = f"{window.start:>4}-{window.stop - 1:<4}" if window.stop else "all parts"
        print(f"{label:12s} {g:8.3f} s {a:8.3f} s   {h:8.3f} s      {g / h:5.2f}x          {a / h:5.2f}x"
              f"       {median(times['ingest'][window]):8.3f} s       {median(times['ingest G'][window]):8.3f} s")
    overall_g = median(times["generated"][1:])
    for scope, seconds in sorted(direct.items()):
        print(f"Direct, scope {scope:>3}: {seconds:8.2f} s = {seconds / overall_g:6.1f}x the generated step")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
