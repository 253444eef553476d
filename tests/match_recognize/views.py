"""Running corpus queries through MATCH_RECOGNIZE views, and the rows they are expected to give part by part.

``corpus_warehouse`` puts every data set into one stream T (one part), each key prefixed with its data set's name,
so one view per corpus query covers all of its data sets. ``expected_by_part`` is the defining property of a
view's parts: part p holds, for each partition, the closed matches over the rows up to the end of part p that
were not closed up to the end of part p - 1 (the oracle's ``closed_only`` result grows as a prefix).
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Sequence

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import types as T

from . import corpus, datasets, oracle, results

SCHEMA = "key STRING, ts TIMESTAMP, price DOUBLE, vol BIGINT, id BIGINT"
SEPARATOR = ":"
ONE_PART = 2**31            # seconds: every data set's rows (2000 to 2024) in one part


def prefixed(name: str) -> list[dict[str, object]]:
    """A data set's rows with keys ``<data set>:<key>``."""
    return [row | {"key": f"{name}{SEPARATOR}{row['key']}"} for row in datasets.load(name)]


def plain_rows(frame: DataFrame) -> list[list[object]]:
    """A Spark result as plain Python rows (timestamps naive UTC, NULL as None, integers as int)."""
    integral = {f.name for f in frame.schema.fields if isinstance(f.dataType, (T.IntegerType, T.LongType))}
    table = frame.toPandas()
    rows = []
    for record in table.itertuples(index=False):
        row = []
        for name, value in zip(table.columns, record):
            if value is None or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
                row.append(None)
            elif isinstance(value, pd.Timestamp):
                row.append(value.to_pydatetime())
            else:
                row.append(int(value) if name in integral else value.item() if hasattr(value, "item") else value)
        rows.append(row)
    return rows


def of_dataset(rows: Sequence[Sequence[object]], name: str) -> list[list[object]]:
    """The normalised rows of one data set, its key prefix taken off the first column."""
    mine = [[row[0].split(SEPARATOR, 1)[1], *row[1:]] for row in rows if str(row[0]).startswith(name + SEPARATOR)]
    return results.normalise_rows(mine)


def oracle_rows(sql: str, rows: list[dict[str, object]]) -> list[list[object]]:
    """The oracle's closed matches, normalised."""
    return results.normalise_rows([list(row.values()) for row in oracle.run(sql, rows, closed_only=True)])


def expected_by_part(sql: str, rows: list[dict[str, object]], length: int, key: str = "key",
                     ) -> dict[int, list[list[object]]]:
    """Each part's rows (normalised), by part subscript, for a stream of partition length ``length``."""
    def part(row: dict[str, object]) -> int:
        stamp = row["ts"].replace(tzinfo=datetime.timezone.utc)  # type: ignore[attr-defined]
        return math.floor(stamp.timestamp() / length)
    subscripts = sorted({part(row) for row in rows})
    expected, before = {}, {}
    for subscript in range(subscripts[0], subscripts[-1] + 1):
        closed = oracle.run(sql, [row for row in rows if part(row) <= subscript], closed_only=True)
        by_key: dict[object, list[dict[str, object]]] = {}
        for match in closed:
            by_key.setdefault(match[key], []).append(match)
        new = [m for k, matches in by_key.items() for m in matches[len(before.get(k, [])):]]
        expected[subscript] = results.normalise_rows([list(m.values()) for m in new])
        before = by_key
    return expected


def corpus_warehouse(spark, path: str):
    """A warehouse with one stream T holding every data set (keys prefixed by its name) in one part, and, for
    the query without PARTITION BY, one stream per random data set."""
    from viewdf_magic import Warehouse

    warehouse = Warehouse(path, spark=spark, progress=False)
    warehouse.execute(f"CREATE STREAM T ({SCHEMA}) TIMESTAMP ts PARTITION LENGTH {ONE_PART}")
    warehouse.ingest("T", pd.DataFrame([row for name in datasets.DATASETS for row in prefixed(name)]))
    for name in corpus.RANDOM:
        warehouse.execute(f"CREATE STREAM T_{name} ({SCHEMA}) TIMESTAMP ts PARTITION LENGTH {ONE_PART}")
        warehouse.ingest(f"T_{name}", pd.DataFrame(datasets.load(name)))
    return warehouse


def _view_rows(warehouse, name: str, sql: str) -> list[list[object]]:
    warehouse.execute(f"CREATE VIEW {name} AS {sql}")
    return plain_rows(warehouse.run(f"SELECT * EXCEPT (PART_TIMESTAMP) FROM {name}")[-1].frame)


def results_by_dataset(warehouse, view: str, case: corpus.Case, sql: str,
                       ) -> dict[str, list[list[object]]]:
    """The rows of a view ``view`` of ``sql`` over ``corpus_warehouse`` for each of the case's data sets."""
    if case.id == "no_partition":     # all rows are one partition: one stream per data set
        return {name: results.normalise_rows(_view_rows(warehouse, f"{view}_{name}",
                                                        sql.replace("FROM T ", f"FROM T_{name} ")))
                for name in case.datasets}
    rows = _view_rows(warehouse, view, sql)
    return {name: of_dataset(rows, name) for name in case.datasets}
