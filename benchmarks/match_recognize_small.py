"""MATCH_RECOGNIZE's two plans on small, real parts: vega_datasets' stocks (5 symbols, monthly prices 2000-2010)
in 28-day parts, as notebook 07 has them.

Each round opens a warehouse per plan (the automaton plan, then the general one, in alternating order), creates
one view (``--view``: notebook 07's ``Runs``, ``PATTERN (A B+)`` with B rising by ``PREV``; or ``Rally``, a rise
then a month below the rise's average, an AVG in DEFINE), ingests 2009's 13 parts in one batch (one range step)
and then each part of 2010 on its own (one step per part), and reports the wall and CPU-seconds of the range
ingest and the median per-part ingest. The first round includes each session's first call of the automaton
plan's Python workers; later rounds show the steady state.
``python -m benchmarks.match_recognize_small --rounds 3 [--view rally]``
"""

from __future__ import annotations

import argparse
import os
import tempfile
from typing import Callable

import pandas as pd
from pyspark.sql import SparkSession
from vega_datasets import data

from viewdf_magic import Warehouse
from viewdf_magic.translation.match_view import PLAN_SETTING

from .common import bench_session, measuring, median

RUNS = """CREATE VIEW Runs AS SELECT * FROM Stocks MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY date
  MEASURES FIRST(A.date) AS since, COUNT(*) AS months, A.price AS low, LAST(B.price) AS high, MATCH_NUMBER() AS run
  ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A B+) DEFINE B AS B.price > PREV(B.price))"""
RALLY = """CREATE VIEW Rally AS SELECT * FROM Stocks MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY date
  MEASURES FIRST(B.date) AS since, AVG(B.price) AS average, C.price AS below, C.date AS fell
  ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A B+ C)
  DEFINE B AS B.price > PREV(B.price), C AS C.price < AVG(B.price))"""
VIEWS = {"runs": RUNS, "rally": RALLY}


def measured(spark: SparkSession, action: Callable[[], object]) -> tuple[float, float]:
    with measuring(spark) as took:
        action()
    return took.wall, took.cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--view", choices=sorted(VIEWS), default="runs")
    args = parser.parse_args()
    spark = bench_session(**{"spark.sql.shuffle.partitions": "2"})
    stocks = data.stocks().sort_values(["symbol", "date"]).reset_index(drop=True)
    history = stocks[stocks.date.dt.year == 2009]
    months = [group for _, group in stocks[stocks.date.dt.year == 2010].groupby(stocks.date.dt.month)]
    figures: dict[str, dict[str, list[float]]] = {plan: {"range": [], "range_cpu": [], "part": [], "part_cpu": []}
                                                  for plan in ("automaton", "general")}
    for round_number in range(args.rounds):
        for plan in ("automaton", "general") if round_number % 2 == 0 else ("general", "automaton"):
            warehouse = Warehouse(tempfile.mkdtemp(prefix="viewdf-mr-small-") + "/wh", spark=spark, progress=False)
            warehouse.execute("CREATE STREAM Stocks (symbol STRING, date TIMESTAMP, price DOUBLE) TIMESTAMP date "
                              "PARTITION LENGTH 28 DAYS")
            if plan == "general":
                os.environ[PLAN_SETTING] = "general"
            try:
                warehouse.execute(VIEWS[args.view])
            finally:
                os.environ.pop(PLAN_SETTING, None)
            seconds, cpu = measured(spark, lambda: warehouse.ingest("Stocks", history))
            figures[plan]["range"].append(seconds)
            figures[plan]["range_cpu"].append(cpu)
            steps = [measured(spark, lambda month=month: warehouse.ingest("Stocks", pd.DataFrame(month)))
                     for month in months]
            figures[plan]["part"].append(median([s for s, _ in steps]))
            figures[plan]["part_cpu"].append(median([c for _, c in steps]))
            print(f"round {round_number + 1}, {plan} plan: 13 parts in one batch {seconds:.2f} s ({cpu:.2f} CPU-s), "
                  f"a part alone {figures[plan]['part'][-1]:.2f} s ({figures[plan]['part_cpu'][-1]:.2f} CPU-s)",
                  flush=True)
    for plan, values in figures.items():
        steady = {name: median(series[1:] or series) for name, series in values.items()}
        print(f"{plan:9s} plan, rounds 2 on (medians): 13 parts in one batch {steady['range']:.2f} s "
              f"({steady['range_cpu']:.2f} CPU-s), a part alone {steady['part']:.2f} s ({steady['part_cpu']:.2f} CPU-s)")

if __name__ == "__main__":
    main()
