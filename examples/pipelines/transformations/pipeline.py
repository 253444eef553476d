"""CSV files landing in landing/ -> streaming table `events` -> streaming table `M`, a ViewDF stream whose
view `Recent` (a three-minute sliding window per source) ViewDF maintains incrementally -> materialized view
`busy`, read from `Recent` after M has taken the run's rows."""

import os

from pyspark import pipelines as dp
from pyspark.sql import SparkSession, functions as F

from viewdf_magic.pipeline_sink import ViewDFPipeline

spark = SparkSession.active()              # the pipeline's Spark Connect session
LANDING = os.path.abspath("landing")      # relative paths are the pipeline folder's (its definitions run there)

viewdf = ViewDFPipeline(spark, "warehouse", """
CREATE STREAM IF NOT EXISTS M (ts TIMESTAMP, src STRING, x INT) TIMESTAMP ts PARTITION LENGTH 60;
CREATE VIEW IF NOT EXISTS Recent AS
  SELECT src, sum(x) AS total, count(*) AS n FROM M [WINDOW 3 MINUTES] GROUP BY src HAVING count(*) >= 2;
""")


@dp.table
def events():
    return (spark.readStream.format("csv").option("header", "true")
            .schema("ts TIMESTAMP, src STRING, x INT").load(LANDING))


@dp.table(name="M", format=viewdf.stream_format("M"))
def m():
    return spark.readStream.table("events")


@dp.materialized_view
def busy():
    """For each source, its largest three-minute total and how many minutes' windows had it twice or more."""
    recent = viewdf.read("Recent", after="M")
    return recent.groupBy("src").agg(F.max("total").alias("peak"), F.count("*").alias("windows"))
