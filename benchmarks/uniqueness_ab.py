"""A/B runs behind issue 22's design choices, each variant on the same parts in one run.

``check``: where ingest should find which parts repeat a key. One batch of ``--events`` network rows
(one per (src, dest) pair) is written per repeat, three ways:

* ``write``     the write alone (sorted by part, observed counts), as ingest does without checks;
* ``separate``  the write, then a second job over the written keys' hashes grouped by part and hash
                (what ingest does);
* ``in-write``  one job: the rows shuffled by (part, hash) and sorted, a window count per (part, hash),
                and the parts with a count above 1 observed while writing.

``plans``: what the general pattern plan's pieces cost. View1 over a stream with ``--per-key`` events
per pair per part (so every part takes the general UPDATE) is created several times, each with its
Helper's SQL changed one way before creation; each ingest steps every copy, in creation order, so
``--variants`` is best run twice in opposite orders (the copy stepped later is favoured). Variants:
``base`` (as generated), ``nocut`` (no killer lookup: wrong where a pair has a killer and another
event, timing only), ``bcast`` (the killer lookup as a broadcast semi-join with the distinct pairs
that have other events), ``sortif`` (sort a pair's events only when it has more than one).

    python -m benchmarks.uniqueness_ab check --events 1000000 --repeats 6
    python -m benchmarks.uniqueness_ab plans --events 1000000 --per-key 2 --parts 7 --variants base,nocut,sortif
"""

from __future__ import annotations

import argparse
import tempfile
import time
from typing import Callable

from pyspark.sql import DataFrame, Observation, Window
from pyspark.sql import functions as F

from viewdf_magic import Warehouse
from viewdf_magic.translation import pattern_sql

from .common import FIRST_PART, bench_session, median, network_part
from .patterns import several_per_key, stream_ddl


def _numbered(frame: DataFrame) -> DataFrame:
    return frame.withColumn("__part", F.floor(F.unix_timestamp("ts") / 60).cast("bigint"))


def _write(frame: DataFrame, out: str) -> None:
    observed = Observation()
    _numbered(frame).sortWithinPartitions("__part").observe(observed, F.count(F.lit(1)).alias("rows")) \
        .write.parquet(out)
    observed.get


def _separate(spark, frame: DataFrame, out: str) -> None:
    _write(frame, out)
    spark.read.parquet(out).select("__part", F.xxhash64("src", "dest").alias("h")).groupBy("__part", "h").count() \
        .where("count > 1").select("__part").distinct().collect()


def _in_write(frame: DataFrame, out: str) -> None:
    keyed = _numbered(frame).withColumn("__h", F.xxhash64("src", "dest")).repartition("__part", "__h") \
        .sortWithinPartitions("__part", "__h")
    counted = keyed.withColumn("__c", F.count(F.lit(1)).over(Window.partitionBy("__part", "__h")))
    observed = Observation()
    counted.observe(observed, F.collect_set(F.when(F.col("__c") > 1, F.col("__part"))).alias("repeats")) \
        .drop("__h", "__c").write.parquet(out)
    observed.get


def check(events: int, repeats: int) -> None:
    spark = bench_session()
    root = tempfile.mkdtemp(prefix="viewdf-uniqueness-")
    ways: dict[str, Callable[[DataFrame, str], None]] = {
        "write": _write, "separate": lambda frame, out: _separate(spark, frame, out), "in-write": _in_write}
    times: dict[str, list[float]] = {name: [] for name in ways}
    for k in range(repeats):
        batch = network_part(spark, FIRST_PART + k, events, 0.1, seed=k).cache()
        batch.count()
        for name, way in ways.items():
            started = time.perf_counter()
            way(batch, f"{root}/{name}{k}")
            times[name].append(time.perf_counter() - started)
        batch.unpersist()
    plain = median(times["write"][1:])
    print(f"{events:,} rows per batch, medians of repeats 2-{repeats}")
    for name, values in times.items():
        seconds = median(values[1:])
        print(f"{name:10s} {seconds:7.3f} s   check costs {seconds - plain:+.3f} s")


def _variant(original: Callable[..., str], kind: str) -> Callable[..., str]:
    def helper_query(self: pattern_sql.PatternTranslation, part: str, previous: str | None,
                     single: bool | None = None) -> str:
        lines = original(self, part, previous, single).split("\n")
        if kind == "nocut":
            lines = [line for line in lines if not line.startswith((", cut AS", ", prior AS"))]
            at = next(k for k, line in enumerate(lines) if line.startswith(", folded AS"))
            lines.insert(at, ", prior AS (SELECT * FROM joined)")
        elif kind == "bcast":
            lines = [(", holders AS (SELECT DISTINCT src, dest FROM events WHERE NOT killer)\n"
                      ", cut AS (SELECT /*+ BROADCAST(holders) */ x.src, x.dest, max(x.e) AS last_killer FROM events AS x "
                      "LEFT SEMI JOIN holders ON x.src <=> holders.src AND x.dest <=> holders.dest WHERE x.killer "
                      "GROUP BY x.src, x.dest)") if line.startswith(", cut AS") else line for line in lines]
        elif kind == "sortif":
            lines = [line.replace("array_sort(collect_list(e))",
                                  "(CASE WHEN count(*) > 1 THEN array_sort(collect_list(e)) ELSE collect_list(e) END)")
                     for line in lines]
        else:
            assert kind == "base", kind
        return "\n".join(lines)
    return helper_query


def plans(events: int, per_key: int, parts: int, variants: list[str]) -> None:
    spark = bench_session()
    warehouse = Warehouse(tempfile.mkdtemp(prefix="viewdf-plans-") + "/wh", spark, progress=False)
    stream, view = stream_ddl("S", False).strip().split(";", 1)
    warehouse.execute(stream)
    original = pattern_sql.PatternTranslation.helper_query
    try:
        for kind in variants:
            pattern_sql.PatternTranslation.helper_query = _variant(original, kind)    # type: ignore[method-assign]
            warehouse.execute(view.replace("SView", f"V_{kind}"))
    finally:
        pattern_sql.PatternTranslation.helper_query = original                         # type: ignore[method-assign]
    times: dict[str, list[float]] = {kind: [] for kind in variants}
    for k in range(parts):
        batch = several_per_key(spark, FIRST_PART + k, events, per_key, 0.1, seed=k).cache()
        batch.count()
        report = warehouse.ingest("S", batch)
        for step in report.steps:
            kind = step.view.removeprefix("V_").removesuffix("__helper")
            if step.view.endswith("__helper") and kind in times:
                times[kind].append(step.seconds)
        batch.unpersist()
    print(f"{events:,} events per part, {per_key} per pair; Helper step medians over parts 1-{parts - 1}, "
          f"in creation order")
    for kind, values in times.items():
        print(f"{kind:8s} {median(values[1:]):7.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["check", "plans"])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=6)
    parser.add_argument("--per-key", type=int, default=2)
    parser.add_argument("--parts", type=int, default=7)
    parser.add_argument("--variants", default="base,nocut,bcast,sortif")
    args = parser.parse_args()
    if args.what == "check":
        check(args.events, args.repeats)
    else:
        plans(args.events, args.per_key, args.parts, args.variants.split(","))


if __name__ == "__main__":
    main()
