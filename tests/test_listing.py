"""A warehouse on local disks lists the folders of a read in the driver (viewdf_magic.session.list_in_driver):
Spark's default lists more than 32 in a Spark job of its own, which a step reading a long history paid."""

from __future__ import annotations

from test_fused_parts import spark_jobs

from viewdf_magic.session import LISTING_THRESHOLD


def test_opening_a_warehouse_raises_the_default_threshold_and_keeps_a_chosen_one(spark, make_warehouse, tmp_path):
    folders = []
    for n in range(40):
        folder = str(tmp_path / "folders" / str(n))
        spark.range(1).write.parquet(folder)
        folders.append(folder)
    try:
        spark.conf.set(LISTING_THRESHOLD, "32")
        assert spark_jobs(spark, "listed-by-spark", lambda: spark.read.schema("id BIGINT").parquet(*folders)) == 1
        make_warehouse("default")
        assert spark.conf.get(LISTING_THRESHOLD) == "100000"
        assert spark_jobs(spark, "listed-in-driver", lambda: spark.read.schema("id BIGINT").parquet(*folders)) == 0
        spark.conf.set(LISTING_THRESHOLD, "64")
        make_warehouse("chosen")
        assert spark.conf.get(LISTING_THRESHOLD) == "64"
    finally:
        spark.conf.set(LISTING_THRESHOLD, "100000")
