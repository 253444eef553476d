"""One end-to-end scenario (hand-written, pattern and window views, then a late-data repair) that
runs the same way on any SparkSession: local mode in the test process, a standalone cluster or a
Spark Connect server in a child process (``python tests/deployment_scenario.py --master URL PATH``
or ``--remote sc://HOST:PORT PATH`` prints the result as JSON).

``--smoke`` runs its short form (CI): the hand-written views and a MATCH_RECOGNIZE view (whose automaton plan
runs a Python Arrow UDF on the executors or the Connect server), one on-time batch and the late one, read back
after a reopen. The full form runs in ``./run stress``."""

from __future__ import annotations

import argparse
import json
import os
import sys

import pandas as pd

BASE = pd.Timestamp("2015-01-01 10:00")
PATTERN_VIEW = ("CREATE VIEW Rising AS SELECT src, dest, count(*) AS ct, sum(loss) AS total "
                "FROM M PATTERN [a, b+] WHERE a.loss > 10 AND b.loss > a.loss GROUP BY src, dest")
WINDOW_VIEW = ("CREATE VIEW Recent AS SELECT src, sum(loss) AS total, max(loss) AS peak, count(*) AS n "
               "FROM M [WINDOW 3 MINUTES] GROUP BY src")
MATCH_VIEW = ("CREATE VIEW Climbs AS SELECT * FROM M MATCH_RECOGNIZE (PARTITION BY src ORDER BY ts "
              "MEASURES A.loss AS low, B.loss AS high ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW "
              "PATTERN (A B) DEFINE B AS B.loss > PREV(B.loss)) AS m")
# (minute, src, loss): three on-time batches, then late rows for minutes already maintained
BATCHES = [
    [(0, "a", 12), (0, "b", 5), (1, "a", 15), (1, "b", 11)],
    [(2, "a", 24), (2, "b", 30), (4, "a", 20), (4, "b", 31)],
    [(5, "a", 16), (5, "b", 2), (6, "a", 7), (6, "b", 40)],
    [(3, "a", 30), (3, "b", 35), (1, "b", 0)],           # late: a new part 3, and a row into part 1
]


def frame(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame({"ts": [BASE + pd.Timedelta(minutes=m) for m, _, _ in rows],
                         "src": [s for _, s, _ in rows], "dest": "x", "loss": [v for _, _, v in rows]})


def run_scenario(spark, path: str, smoke: bool = False) -> dict:
    """Every view's parts and rows after the scenario, and what the late batch repaired."""
    from viewdf_magic import Warehouse
    from viewdf_magic.network_example import NETWORK_DDL

    warehouse = Warehouse(path, spark=spark, progress=False)
    warehouse.execute(NETWORK_DDL)
    warehouse.execute(MATCH_VIEW)
    views = ("Helper", "View2", "Climbs")
    if not smoke:
        warehouse.execute(PATTERN_VIEW)
        warehouse.execute(WINDOW_VIEW)
        views += ("Rising", "Recent")
    for rows in BATCHES[1:2] if smoke else BATCHES[:-1]:
        warehouse.ingest("M", frame(rows))
    report = warehouse.ingest("M", frame(BATCHES[-1]))
    result = {"late": [int(s) for s in report.late], "repaired": report.repair.changed if report.repair else 0}
    if not smoke:
        result.update(inspected(warehouse))
    reopened = Warehouse(path, spark=spark, progress=False)      # what is stored, read back from disk
    for name in views:
        rows = reopened.run(f"SELECT * FROM {name}")[0].frame.collect()
        result[name] = sorted(json.dumps(row.asDict(recursive=True), default=str, sort_keys=True) for row in rows)
    return result


def inspected(warehouse) -> dict:
    """A positioned Spark error, VERIFY, a recomputation and EXPLAIN on the full scenario's views."""
    from viewdf_magic.errors import ViewDFError

    result: dict = {}
    try:
        warehouse.run("SELECT src, nosuch FROM View2")
    except ViewDFError as error:          # Spark's own error, positioned in the user's text
        result["error"] = [error.message.splitlines()[0], error.position]
    result["verified"] = {name: warehouse.run(f"VERIFY VIEW {name}")[0].message for name in ("Rising", "Recent")}
    result["recomputed"] = json.loads(warehouse.recompute("Rising", BASE + pd.Timedelta(minutes=4), scope=3)
                                      .sort_values(["src"]).to_json(orient="records"))
    [explained] = warehouse.run("EXPLAIN VIEW Rising")
    result["explained"] = explained.figure is not None and ["== Physical Plan ==" in text for title, text in
                                                             explained.sections if title.startswith("Spark plans")] \
        == [True, True]                      # Rising's helper and Rising
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--master")
    where.add_argument("--remote")
    parser.add_argument("--smoke", action="store_true", help="the short form")
    parser.add_argument("path")
    args = parser.parse_args()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("viewdf-deployment-scenario")
    builder = builder.remote(args.remote) if args.remote else builder.master(args.master).config(
        "spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
    spark = builder.getOrCreate()
    try:
        print(json.dumps(run_scenario(spark, args.path, smoke=args.smoke)))
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
