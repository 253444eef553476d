"""SQL over named DataFrames on Spark Connect, with the DataFrames carried inside the plan.

A Connect server resolves a query's names whenever the query runs, so temp views would have to
outlive every later use of the result (a ``-o`` variable, a widget). ``spark.sql(text, **frames)``
carries the frames in the plan but renames them, which moves Spark's error positions away from
the user's text; this builds the same plan with our own names."""

from __future__ import annotations

from typing import cast

from pyspark.sql import DataFrame


def sql_with_frames(spark, text: str, frames: dict[str, DataFrame]) -> DataFrame:
    """``text`` as a Spark Connect DataFrame in which each name of ``frames`` is that frame."""
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
    from pyspark.sql.connect.plan import SQL, CachedRelation, SubqueryAlias

    # the frames are Spark Connect DataFrames (the classic DataFrame type has no _plan)
    command = SQL(text, [], {}, [SubqueryAlias(cast(ConnectDataFrame, frame)._plan, name) for name, frame in frames.items()])
    _, properties, _ = spark.client.execute_command(command.command(spark.client))
    if "sql_command_result" in properties:
        return ConnectDataFrame(CachedRelation(properties["sql_command_result"]), spark)
    return ConnectDataFrame(command, spark)
