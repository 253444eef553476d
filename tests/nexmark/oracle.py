"""The Nexmark queries in DuckDB, formulated independently of the Spark ones: integer microseconds,
hop windows as explicit window starts, q5's maximum as a window function."""

from __future__ import annotations

import pandas as pd

ORACLE = {
    "q1": "SELECT auction, bidder, CAST(price AS DECIMAL(20, 0)) * 0.908, t, extra FROM b",
    "q2": "SELECT auction, price FROM b WHERE auction % 123 = 0",
    "q3": """SELECT p.name, p.city, p.state, a.id FROM a, p
             WHERE a.seller = p.id AND a.category = 10 AND p.state IN ('OR', 'ID', 'CA')""",
    "q4": """SELECT category, sum(final) // count(*) FROM (
                 SELECT a.id, a.category, max(b.price) AS final FROM a, b
                 WHERE b.auction = a.id AND b.t >= a.t AND b.t <= a.expires GROUP BY a.id, a.category)
             GROUP BY category""",
    "q5": """WITH counts AS (
                 SELECT auction, t // $slide * $slide - k * $slide AS starttime, count(*) AS num
                 FROM b CROSS JOIN range(0, $size // $slide) AS steps(k) GROUP BY ALL)
             SELECT auction, num, starttime FROM (
                 SELECT *, max(num) OVER (PARTITION BY starttime) AS most FROM counts) WHERE num = most""",
    "q7": """WITH highest AS (SELECT (t // $size + 1) * $size AS window_end, max(price) AS price FROM b GROUP BY 1)
             SELECT b.auction, b.price, b.bidder, b.t, b.extra, highest.window_end FROM b, highest
             WHERE b.price = highest.price AND b.t BETWEEN highest.window_end - $size AND highest.window_end""",
    "q8": """SELECT DISTINCT p.id, p.name, p.t // $size * $size FROM p, a
             WHERE a.seller = p.id AND a.t // $size = p.t // $size""",
}


def oracle_rows(events, name: str, window_us: int, slide_us: int, before_us: int | None = None) -> list[tuple]:
    """The rows of query ``name`` over ``events`` (NexmarkEvents), sorted, times in epoch
    microseconds; with ``before_us``, over the events before that time only."""
    import duckdb

    connection = duckdb.connect()
    for view, table in (("p", events.persons), ("a", events.auctions), ("b", events.bids)):
        connection.register(f"{view}_arrow", table)
        expires = ", epoch_us(expires) AS expires" if view == "a" else ""
        until = f" WHERE epoch_us(date_time) < {before_us}" if before_us is not None else ""
        connection.execute(f"CREATE VIEW {view} AS SELECT * EXCLUDE (date_time{', expires' if expires else ''}), "
                           f"epoch_us(date_time) AS t{expires} FROM {view}_arrow{until}")
    sql = ORACLE[name].replace("$size", str(window_us)).replace("$slide", str(slide_us))
    return sorted(connection.execute(sql).fetchall())


def spark_rows(frame) -> list[tuple]:
    """A Spark frame's rows as the oracle gives them: sorted, times in epoch microseconds."""
    data = frame.toPandas()
    for column in data.columns:
        if pd.api.types.is_datetime64_any_dtype(data[column]):
            data[column] = data[column].astype("datetime64[us]").astype("int64")
    return sorted(tuple(value.item() if hasattr(value, "item") else value for value in row)
                  for row in data.itertuples(index=False))
