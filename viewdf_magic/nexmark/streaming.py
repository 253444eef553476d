"""The Nexmark queries in Spark Structured Streaming, the baseline a Spark user would write instead of
views: event-time windows with watermarks, one micro-batch per part (or per ``parts_per_batch`` parts)
read from the per-part files of ``parts.write_parts``, rows appended to a Parquet sink.

Each query returns the columns of the batch query of the same name (``queries.nexmark_queries``),
window start or end included, so the rows compare one to one. Two queries are not what Flink's
text says, because Structured Streaming refuses its shape:

* q4 aggregates twice (the highest bid per auction, then the average per category). Chained
  aggregations run only in append mode on event-time windows, and this one has no window; so the
  stream computes the highest bid per auction in update mode and ``foreachBatch`` folds each batch's
  changed auctions into a per-auction table in the driver and writes the per-category averages.
* q5's maximum count per window is a second aggregation over the first one's windows (chained, in
  append mode), which keeps the auctions of each window as a list and picks those at the maximum.

The watermark delay is zero for the window queries (the events of a part arrive in time order, after every
earlier part) and one part's length for q4 (``_delay``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from .parts import PartFiles
from .queries import check_windows

Sources = Callable[[str], DataFrame]


def _q1(source: Sources, window: int, slide: int) -> DataFrame:
    return source("bid").selectExpr("auction", "bidder", "0.908 * price AS price", "date_time", "extra")


def _q2(source: Sources, window: int, slide: int) -> DataFrame:
    return source("bid").where("auction % 123 = 0").select("auction", "price")


def _q3(source: Sources, window: int, slide: int) -> DataFrame:
    auctions = source("auction").where("category = 10").selectExpr("id", "seller")
    sellers = source("person").where("state IN ('OR', 'ID', 'CA')").selectExpr("id AS person", "name", "city", "state")
    return auctions.join(sellers, F.expr("seller = person")).select("name", "city", "state", "id")


def _q4_highest_bids(source: Sources, window: int, slide: int) -> DataFrame:
    auctions = source("auction").selectExpr("id", "category", "date_time AS opened", "expires")
    bids = source("bid").selectExpr("auction", "price", "date_time AS placed")
    joined = auctions.join(bids, F.expr("id = auction AND placed BETWEEN opened AND expires"))
    return joined.groupBy("id", "category").agg(F.max("price").alias("final"))


def _q5(source: Sources, window: int, slide: int) -> DataFrame:
    hop = F.window("date_time", f"{window} seconds", f"{slide} seconds")
    counts = source("bid").groupBy(hop.alias("w"), "auction").agg(F.count("*").alias("num"))
    per_window = counts.groupBy(F.window_time("w").alias("t")).agg(
        F.max("num").alias("most"), F.collect_list(F.struct("auction", "num", F.col("w.start").alias("start"))).alias("all"))
    return (per_window.select(F.explode("all").alias("a"), "most").where("a.num = most")
            .select("a.auction", "a.num", F.col("a.start").alias("starttime")))


def _q7(source: Sources, window: int, slide: int) -> DataFrame:
    bids = source("bid")
    # window_time (the window's end less 1 µs) keeps the event-time mark that ``w.end`` loses, so the join's
    # range condition below lets Spark evict bids older than the newest aggregated window
    highest = (bids.groupBy(F.window("date_time", f"{window} seconds").alias("w"))
               .agg(F.max("price").alias("maxprice")).select("maxprice", F.window_time("w").alias("last_instant")))
    # Flink's BETWEEN: from the window's start up to and including its end (last_instant + 1 µs)
    return bids.join(highest, F.expr(
        f"price = maxprice AND date_time BETWEEN last_instant - INTERVAL {window} SECONDS + INTERVAL 1 MICROSECOND "
        f"AND last_instant + INTERVAL 1 MICROSECOND")).select(
        "auction", "price", "bidder", "date_time", "extra",
        (F.col("last_instant") + F.expr("INTERVAL 1 MICROSECOND")).alias("window_end"))


def _q8(source: Sources, window: int, slide: int) -> DataFrame:
    tumble = F.window("date_time", f"{window} seconds")
    persons = source("person").select("id", "name", tumble.alias("w"))
    sellers = source("auction").select("seller", tumble.alias("sw"))
    joined = persons.join(sellers, F.expr("id = seller AND w = sw"))
    return joined.dropDuplicates(["id", "name", "w"]).select("id", "name", F.col("w.start").alias("starttime"))


QUERIES = {"q1": _q1, "q2": _q2, "q3": _q3, "q4": _q4_highest_bids, "q5": _q5, "q7": _q7, "q8": _q8}
_WATERMARKED = {"q4", "q5", "q7", "q8"}


def _delay(query: str, files: PartFiles) -> str:
    """The watermark's delay. q4's watermark only bounds its join's state, so it allows a part's length: when
    parts arrive as they are made, one stream's part can reach a micro-batch before another's, and with no
    delay the join then drops rows (measured in the latency run). The window queries emit a window when the
    watermark passes its end, so theirs is zero."""
    return f"{files.part_seconds} seconds" if query == "q4" else "0 seconds"


@dataclass(frozen=True)
class StreamingRun:
    """One query's run: seconds, input rows and rows held and evicted in state of each micro-batch (summed
    over the stateful operators), and the folder of its rows."""

    batch_seconds: list[float]
    batch_rows: list[int]
    output: str
    state_rows: list[int]
    state_rows_removed: list[int]


class _CategoryAverages:
    """q4's second aggregation, done in foreachBatch: the highest bid of every auction so far, per
    category their sum and count, changed by the auctions each batch updates, and ``sum DIV count``
    (Flink's integer AVG) written to ``path`` after each batch."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.finals: dict[int, int] = {}
        self.totals: dict[int, list[int]] = {}

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        for row in batch.collect():
            total = self.totals.setdefault(row["category"], [0, 0])
            before = self.finals.get(row["id"])
            total[0] += row["final"] - (before or 0)
            total[1] += before is None
            self.finals[row["id"]] = row["final"]
        categories = sorted(self.totals)
        table = pa.table({"category": pa.array(categories, pa.int64()), "average_final": pa.array(
            [self.totals[c][0] // self.totals[c][1] for c in categories], pa.int64())})
        os.makedirs(self.path, exist_ok=True)
        pq.write_table(table, os.path.join(self.path, "part-00000.parquet"))


def start_streaming(spark: SparkSession, query: str, files: PartFiles, folder: str, window_seconds: int,
                    slide_seconds: int, parts_per_batch: int | None = 1, watched: str | None = None) -> StreamingQuery:
    """Start ``query`` writing its rows as Parquet under ``folder/rows``, ``parts_per_batch`` parts per
    micro-batch (None: whatever has arrived). With ``watched`` (a folder of ``<stream>/`` folders that parts
    arrive in), it runs until stopped, a micro-batch as soon as new files are there; without, over every part
    of ``files`` to the end (AvailableNow)."""
    check_windows(window_seconds, slide_seconds)
    # every micro-batch's progress is kept (100 by default)
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", str(2 * len(files.subscripts) + 100))

    def source(stream: str) -> DataFrame:
        reader = spark.readStream.schema(files.schema(spark, stream))
        if parts_per_batch is not None:
            reader = reader.option("maxFilesPerTrigger", parts_per_batch)
        frame = reader.parquet(os.path.join(watched, stream) if watched else files.stream_folder(stream))
        return frame.withWatermark("date_time", _delay(query, files)) if query in _WATERMARKED else frame

    frame = QUERIES[query](source, window_seconds, slide_seconds)
    rows = os.path.join(folder, "rows")
    writer = frame.writeStream.option("checkpointLocation", os.path.join(folder, "checkpoint"))
    if query == "q4":
        writer = writer.outputMode("update").foreachBatch(_CategoryAverages(rows))
    else:
        writer = writer.outputMode("append").format("parquet").option("path", rows)
    return writer.start() if watched else writer.trigger(availableNow=True).start()


def run_streaming(spark: SparkSession, query: str, files: PartFiles, folder: str, window_seconds: int,
                  slide_seconds: int, parts_per_batch: int | None = 1) -> StreamingRun:
    """Run ``query`` over every part of ``files`` to the end (AvailableNow), ``parts_per_batch``
    parts per micro-batch (None: every part in one), writing its rows as Parquet under ``folder/rows``."""
    running = start_streaming(spark, query, files, folder, window_seconds, slide_seconds, parts_per_batch)
    running.awaitTermination()
    progress = running.recentProgress
    return StreamingRun([p["durationMs"]["triggerExecution"] / 1000 for p in progress],
                        [p["numInputRows"] for p in progress], os.path.join(folder, "rows"),
                        [sum(o["numRowsTotal"] for o in p["stateOperators"]) for p in progress],
                        [sum(o["numRowsRemoved"] for o in p["stateOperators"]) for p in progress])
