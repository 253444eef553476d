"""A small run's rows and checksums per part, counted in this process (storage/counting.py), equal Spark's exact
decimal sums of the same stored hashes."""

from __future__ import annotations

import random

from pyspark.sql import functions as F

from viewdf_magic.storage.counting import counted_here
from viewdf_magic.storage.slices import PART_COLUMN


def test_counts_and_hash_sums_per_part_equal_sparks_decimal_sums(spark, tmp_path):
    rng = random.Random(7)
    extremes = [-(2 ** 63), 2 ** 63 - 1, -1, 0, 1, 2 ** 32, -(2 ** 32) - 1]
    rows = []
    for n in range(3_000):
        part = rng.choice([-3, 0, 5, 6, 9])
        own = extremes[n] if n < len(extremes) else rng.randint(-(2 ** 63), 2 ** 63 - 1)
        embedded = None if part == 9 or rng.random() < 0.3 else rng.randint(-(2 ** 63), 2 ** 63 - 1)
        rows.append((part, own, embedded))
    folder = str(tmp_path / "run")
    frame = spark.createDataFrame(rows, f"{PART_COLUMN} BIGINT, __hash BIGINT, v__hash BIGINT")
    frame.repartition(3).write.parquet(folder)          # several files, parts spread over them

    sums = frame.groupBy(PART_COLUMN).agg(F.expr("count(1) AS rows"),
                                           F.expr("sum(CAST(__hash AS DECIMAL(38,0))) AS checksum"),
                                           F.expr("count(v__hash) AS rows0"),
                                           F.expr("sum(CAST(v__hash AS DECIMAL(38,0))) AS checksum0"))
    expected = {row[PART_COLUMN]: row for row in sums.collect()}
    found = counted_here(f"file:{folder}", "__hash", ["v__hash"])
    assert found is not None and sorted(row[PART_COLUMN] for row in found) == sorted(expected)
    for row in found:
        oracle = expected[row[PART_COLUMN]]
        assert row["rows"] == oracle["rows"]
        assert row["checksum"] == int(oracle["checksum"])
        assert row["rows0"] == oracle["rows0"]
        assert row["checksum0"] == (None if oracle["checksum0"] is None else int(oracle["checksum0"]))
    assert expected[9]["rows0"] == 0 and [r for r in found if r[PART_COLUMN] == 9][0]["checksum0"] is None


def test_a_folder_pyarrow_cannot_read_is_left_to_spark(tmp_path):
    assert counted_here("nosuchscheme://bucket/run", "__hash", []) is None
