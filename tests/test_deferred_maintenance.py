"""Consecutive LOADs and INSERTs into streams in one run are maintained once, after the last of them
(Warehouse.run_iter): the views end up with exactly the parts that a maintenance after each statement gives,
and the oracle is pandas."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from viewdf_magic.errors import ViewDFError

START = dt.datetime(2015, 1, 1, 10, 0, tzinfo=dt.timezone.utc)
SCHEMA = ("CREATE STREAM S (ts TIMESTAMP, k BIGINT, x INT) TIMESTAMP ts PARTITION LENGTH 60; "
          "CREATE STREAM T (ts TIMESTAMP, k BIGINT, y INT) TIMESTAMP ts PARTITION LENGTH 60; "
          "CREATE TABLE Names (k BIGINT, name STRING)")
VIEWS = {
    "Big": "SELECT k, x FROM S[j] WHERE x > 1",
    "Small": "SELECT k, y FROM T[j] WHERE y < 5",
    "Pairs": "SELECT s.k, s.x, t.y FROM S[j] AS s JOIN T[j] AS t ON s.k = t.k",
}


def write(path, minute: int, column: str, values: list[int]) -> str:
    """A Parquet file of the stream's columns (taken as it is): one row per value, k = its index."""
    path.parent.mkdir(parents=True, exist_ok=True)
    stamps = [START + dt.timedelta(minutes=minute, seconds=10 * n) for n in range(len(values))]
    pq.write_table(pa.table({"ts": pa.array(stamps, pa.timestamp("us", tz="UTC")),
                             "k": pa.array(range(len(values)), pa.int64()), column: pa.array(values, pa.int32())}),
                   path)
    return str(path)


def create(warehouse) -> None:
    warehouse.run(SCHEMA)
    for name, query in VIEWS.items():
        warehouse.run(f"CREATE VIEW {name} AS INITIALIZE {name}[j] AS {query} UPDATE {name}[j] AS {query}")


def stored(warehouse) -> dict[str, list[tuple]]:
    return {name: sorted(map(tuple, warehouse.execute(f"SELECT * FROM {name}").astype(str).values.tolist()))
            for name in VIEWS}


def test_loads_in_one_run_are_maintained_once_after_the_last(make_warehouse, tmp_path):
    files = {(stream, minute): write(tmp_path / "in" / f"{stream}{minute}.parquet", minute, column, values)
             for stream, column in (("S", "x"), ("T", "y"))
             for minute, values in ((0, [1, 2, 3]), (1, [4, 0]), (2, [7, 1, 9]))}
    together, alone = make_warehouse("together"), make_warehouse("alone")
    for warehouse in (together, alone):
        create(warehouse)
    first, second = together.run(f"LOAD '{files['S', 0]}' INTO S; LOAD '{files['T', 0]}' INTO T")
    assert (first.steps, first.maintenance_seconds) == ([], 0.0)
    assert sorted(step.view for step in second.steps) == ["Big", "Pairs", "Small"]
    # a table's INSERT ends the chain: the LOAD before it is maintained first
    loaded, inserted = together.run(f"LOAD '{files['S', 1]}' INTO S; INSERT INTO Names VALUES (0, 'zero')")
    assert [step.view for step in loaded.steps] == ["Big"] and not inserted.steps
    # the last LOAD takes nothing new (its file was loaded before): the run still maintains the first's rows
    first, again = together.run(f"LOAD '{files['T', 1]}' INTO T; LOAD '{files['T', 0]}' INTO T")
    assert first.steps == [] and "nothing was loaded" in again.message
    assert sorted(step.view for step in again.steps) == ["Pairs", "Small"]
    # a failing LOAD: the batches taken before it are maintained, then its error is raised
    with pytest.raises(ViewDFError, match="does not exist"):
        together.run(f"LOAD '{files['S', 2]}' INTO S; LOAD '{tmp_path / 'missing.parquet'}' INTO T")
    assert together.execute("SELECT max(x) AS top FROM Big")["top"].tolist() == [9]
    together.run(f"LOAD '{files['T', 2]}' INTO T")

    for key in [("S", 0), ("T", 0), ("S", 1), ("T", 1), ("S", 2), ("T", 2)]:
        alone.run(f"LOAD '{files[key]}' INTO {key[0]}")
    assert stored(together) == stored(alone)
    s = pd.concat([pq.read_table(files["S", m]).to_pandas() for m in range(3)])
    t = pd.concat([pq.read_table(files["T", m]).to_pandas() for m in range(3)])
    s["part"], t["part"] = s.ts.dt.floor("60s"), t.ts.dt.floor("60s")
    pairs = s.merge(t, on=["part", "k"])
    assert stored(together)["Pairs"] == sorted(
        (str(k), str(x), str(y), str(p.tz_localize(None))) for p, k, x, y in zip(pairs.part, pairs.k, pairs.x, pairs.y))
    steps = [(step.view, step.subscript) for step in together.history()]
    assert len(steps) == len(set(steps)) == 9           # every view part computed once
