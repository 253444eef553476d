"""Pattern View1 (the paper's section 2 query, translated automatically): the generated ViewDF
step against the naive Direct strategy at several scopes and a hand-written PySpark pipeline, end to
end (ingest and maintenance) and step only.

One record per (src, dest) pair per part; a fraction ``selectivity`` of losses are above 10.
Every part is ingested into streams of one warehouse, each holding View1:

* ``M`` is declared ``UNIQUE (src, dest) PER PART`` (what this workload is, and what the
  hand-written step assumes), so its View1 has only the single-event Helper plan; ingest checks the
  declaration;
* ``G`` is the same stream without the declaration: ingest finds, per part, that no pair repeats (one
  job over the keys' hashes), and the Helper's ``UPDATE .. WHEN G[j] IS UNIQUE (src, dest)`` runs;
* with ``--events-per-key 2 10``, streams ``E2``, ``E10`` hold the same number of events per part but
  2 or 10 per pair (``pairs / e`` pairs, a second apart): their parts take the general plan, compared
  with M's single-event step on the same number of events.

The hand-written pipeline (the thesis's "Hardcode") stores the raw batch as Parquet, then reads it back,
keeps losses > 10, left-joins the previous helper, writes it, and filters runs of at least 4 into the
view. End to end is ingest plus maintenance against storing plus the step. At each checkpoint part,
Direct (``Warehouse.recompute`` with ``scope``) recomputes View1's part from the last ``scope`` parts.

    python -m benchmarks.patterns --pairs 200000 --parts 12 --scopes 5 --events-per-key 2 10
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections import Counter

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from viewdf_magic import Warehouse
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


def several_per_key(spark, part: int, events: int, per_key: int, selectivity: float, seed: int = 0) -> DataFrame:
    """``events`` rows of one minute, ``per_key`` per (src, dest) pair, a second apart."""
    pairs = events // per_key
    return spark.range(pairs * per_key).select(
        F.timestamp_seconds(F.lit(part * 60) + (F.col("id") / pairs).cast("int")).alias("ts"),
        F.concat(F.lit("10.0."), (F.col("id") % pairs % 1000).cast("string")).alias("src"),
        F.concat(F.lit("10.1."), ((F.col("id") % pairs) / 1000).cast("int").cast("string")).alias("dest"),
        F.when(F.rand(seed * 7919 + part) < selectivity, 20).otherwise(5).alias("loss"))


def stream_ddl(name: str, declared: bool) -> str:
    text = VIEW1.replace("STREAM M ", f"STREAM {name} ").replace("FROM M ", f"FROM {name} ")
    text = text.replace("View1", f"{name}View") if name != "M" else text
    return text if declared else text.replace("UNIQUE (src, dest) PER PART", "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=1_000_000)
    parser.add_argument("--parts", type=int, default=101)
    parser.add_argument("--selectivity", type=float, default=0.1)
    parser.add_argument("--scopes", type=int, nargs="+", default=[5, 20, 100])
    parser.add_argument("--window", type=int, default=5, help="steps per median around each checkpoint")
    parser.add_argument("--cache", type=int, default=0, help="PartStore.cache_size: recent parts kept in memory")
    parser.add_argument("--events-per-key", type=int, nargs="*", default=[],
                        help="also streams with this many events per pair per part (the general plan)")
    args = parser.parse_args()
    spark = bench_session()
    root = tempfile.mkdtemp(prefix="viewdf-patterns-")
    wh = Warehouse(f"{root}/wh", spark, progress=False)
    wh.store.cache_size = args.cache
    streams = [("M", True), ("G", False)] + [(f"E{e}", False) for e in args.events_per_key]
    for name, declared in streams:
        wh.execute(stream_ddl(name, declared))
    step: dict[str, list[float]] = {name: [] for name, _ in streams}
    whole: dict[str, list[float]] = {name: [] for name, _ in streams}
    hand: list[float] = []
    hand_whole: list[float] = []
    direct: dict[int, float] = {}
    checkpoints = {min(scope, args.parts - 1): scope for scope in args.scopes}
    for k in range(args.parts):
        part = FIRST_PART + k
        batches = {"M": network_part(spark, part, args.pairs, args.selectivity, seed=k)}
        batches["G"] = batches["M"]
        for e in args.events_per_key:
            batches[f"E{e}"] = several_per_key(spark, part, args.pairs, e, args.selectivity, seed=k)
        for frame in {id(f): f for f in batches.values()}.values():
            frame.cache().count()
        for name, _ in streams[k % len(streams):] + streams[:k % len(streams)]:     # no stream always first
            started = time.perf_counter()
            report = wh.ingest(name, batches[name])
            whole[name].append(time.perf_counter() - started)
            step[name].append(sum(s.seconds for s in report.steps))
        out = f"{root}/hand/{k}"
        started = time.perf_counter()
        batches["M"].write.parquet(out + "/raw")
        stored = time.perf_counter()
        hand_written_step(spark, out + "/raw", f"{root}/hand/{k - 1}/helper" if k else None, out)
        hand.append(time.perf_counter() - stored)
        hand_whole.append(time.perf_counter() - started)
        for frame in {id(f): f for f in batches.values()}.values():
            frame.unpersist()
        if k > 1:
            shutil.rmtree(f"{root}/hand/{k - 2}", ignore_errors=True)
        if k in checkpoints:
            scope = checkpoints[k]
            direct[scope] = timed(lambda: wh.recompute("View1", part_start(part, 60), scope=scope))
            print(f"part {k}: Direct at scope {scope}: {direct[scope]:.2f} s", flush=True)
    later = slice(1, None)         # the UPDATE steps (part 0 is INITIALIZE)
    h, hw = median(hand[later]), median(hand_whole[later])
    print(f"\nevents per part: {args.pairs:,}, selectivity {args.selectivity}, parts {args.parts} "
          f"(medians over parts 1-{args.parts - 1})")
    print(f"hand-written: step {h:.3f} s, storing the batch and the step {hw:.3f} s")
    print("stream  end to end   /hand   step      /hand   /M step")
    m_step = median(step["M"][later])
    for name, declared in streams:
        w, g = median(whole[name][later]), median(step[name][later])
        label = {"M": "M (UNIQUE declared)", "G": "G (no declaration, 1 per pair)"}.get(name, f"{name} ({name[1:]} per pair)")
        print(f"{label:32s} {w:7.3f} s {w / hw:5.2f}x  {g:7.3f} s {g / h:5.2f}x  {g / m_step:5.2f}x")
    for name, _ in streams:
        helper = f"{'View1' if name == 'M' else name + 'View'}__helper"
        clauses = Counter(meta.how for meta in wh.catalog.state(helper).parts.values())
        print(f"{helper}: parts by clause {dict(clauses)}")
    overall = median(step["M"][later])
    for scope, seconds in sorted(direct.items()):
        print(f"Direct, scope {scope:>3}: {seconds:8.2f} s = {seconds / overall:6.1f}x the generated step")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
