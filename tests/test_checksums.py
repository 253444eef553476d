"""Part checksums (storage/parts.py): the exact sum of the rows' 64-bit hashes, however it is summed."""

from __future__ import annotations

from decimal import Decimal

from pyspark.sql import functions as F

from viewdf_magic.storage.parts import content_checksum, hash_sum, row_hash


def test_checksums_are_the_exact_sums_of_row_hashes(spark):
    frame = spark.range(3000).select((F.col("id") % 3).alias("part"),
                                     F.when(F.col("id") % 7 == 0, None).otherwise(F.col("id").cast("string")).alias("s"),
                                     (F.col("id") * 0.5).alias("d"))
    columns = frame.drop("part").schema
    hashed = row_hash([f.name for f in columns.fields], columns)
    rows = frame.select("part", "s", F.expr(hashed).alias("h"), F.xxhash64(
        "s", "d", F.array(F.col("s").isNull(), F.col("d").isNull())).alias("defined")).collect()
    assert all(r["h"] == r["defined"] for r in rows)     # the stored checksums' hash: warehouses stay comparable
    assert {r["h"] < 0 for r in rows} == {True, False}
    total = sum(r["h"] for r in rows)
    assert abs(total) > 2 ** 63          # beyond a long: the sum must be exact, not wrapped

    [whole] = frame.select(content_checksum(columns).alias("c"), F.expr(hash_sum(hashed, "s IS NOT NULL")).alias("w")).collect()
    assert whole["c"] == Decimal(total)
    assert whole["w"] == Decimal(sum(r["h"] for r in rows if r["s"] is not None))

    by_part = frame.groupBy("part").agg(F.expr(hash_sum(hashed)).alias("c")).collect()
    assert {r["part"]: r["c"] for r in by_part} == \
        {p: Decimal(sum(r["h"] for r in rows if r["part"] == p)) for p in range(3)}
    assert spark.range(0).select(F.expr(hash_sum("xxhash64(id)")).alias("c")).first()["c"] is None
