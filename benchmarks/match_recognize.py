"""MATCH_RECOGNIZE views against Apache Flink, against the general plan and against the paper's PATTERN view.

Four query shapes over the same generated parts (``--keys`` keys, ``--events`` events per part, each key's in
increasing time with random prices, ``--parts`` parts of a minute):

* ``rise_then_drop``: rising runs that end in a drop (``PATTERN (A+ B)``, the corpus's query; Flink accepts it),
  also as the PATTERN equivalent ``[a+, b]`` (its parts mean something else, so only speed compares);
* ``v_offset``: a fall then a rise read with ``PREV(price)``; Flink refuses PREV in DEFINE here, so its side reads
  ``LAST(price, 1)``, the same row inside a match;
* ``avg_define``: ``rise_then_drop`` whose end compares with ``AVG(A.price)``: a DEFINE over an aggregate, which
  the matcher compares;
* ``all_rows``: ``rise_then_drop`` with ALL ROWS PER MATCH (Flink refuses it), against the same ONE ROW view.

Systems, each measured in a warehouse of its own (so no job is shared between views): the view on the plan it
gets (translation/match_compact.py), ``rise_then_drop`` and ``avg_define`` also on the general plan
(``VIEWDF_MATCH_PLAN=general``),
and Flink 2.3 (tools/flink_match_bench.py in .venv-flink, batch mode over all the parts' rows as CSV, parallelism
1 and 2, a blackhole sink, less the same job over no rows). A view's warehouse is in manual maintenance: each part
is ingested, then ``STEP ALL`` computes its Helper and final parts; a part's figures are that step's wall seconds
and the CPU-seconds of the whole process tree (driver JVM, Python workers, this process), the first part
(INITIALIZE) left out. Events per second per core divide a part's events by its seconds and the session's cores
(Flink's by its seconds and parallelism, as Nexmark does); events per CPU-second divide by CPU-seconds.

``--rounds`` repeats everything, in alternating order; medians and [min, max] over every measured part of every
round. The views' rows are checked against Flink's count and the two plans' rows against each other.
``python -m benchmarks.match_recognize --keys 1000 --events 1000000 --parts 3 --rounds 3 --json mr.json``
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import tempfile
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from viewdf_magic import Warehouse
from viewdf_magic.translation.match_view import PLAN_SETTING

from .common import FIRST_PART, bench_session, measuring, median

REPO = pathlib.Path(__file__).resolve().parent.parent
FLINK_PYTHON = REPO / ".venv-flink" / "bin" / "python"
RISE = """MEASURES FIRST(A.price) AS start_price, LAST(A.price) AS top_price, B.price AS last_price, COUNT(*) AS n
  {rows} AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A+ B)
  DEFINE A AS LAST(A.price, 1) IS NULL OR A.price > LAST(A.price, 1), B AS B.price < {bound}"""
V_SHAPE = """MEASURES FIRST(A.price) AS start_price, LAST(B.price) AS bottom, LAST(C.price) AS top, COUNT(*) AS n
  ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A B+ C+ D)
  DEFINE B AS B.price < {previous}, C AS C.price > {previous}, D AS D.price <= {previous}"""


def _mr(body: str) -> str:
    return f"SELECT * FROM T MATCH_RECOGNIZE (PARTITION BY key ORDER BY ts, id {body}) AS M"


ONE_ROW = _mr(RISE.format(rows="ONE ROW PER MATCH", bound="LAST(A.price)"))
SHAPES: dict[str, tuple[str, str | None]] = {        # shape -> (the view's query, Flink's or None)
    "rise_then_drop": (ONE_ROW, ONE_ROW),
    "v_offset": (_mr(V_SHAPE.format(previous="PREV(price)")), _mr(V_SHAPE.format(previous="LAST(price, 1)"))),
    "avg_define": (_mr(RISE.format(rows="ONE ROW PER MATCH", bound="AVG(A.price)")),) * 2,
    "all_rows": (_mr(RISE.format(rows="ALL ROWS PER MATCH", bound="LAST(A.price)")), None),
}
GENERAL_TOO = ("rise_then_drop", "avg_define")      # shapes also measured on the general plan
PATTERN = """SELECT key, a[1].price AS start_price, last(a.price) AS top_price, b.price AS last_price,
  count(*) AS n
  FROM T PATTERN [a+, b] WHERE a[i].price > a[i-1].price AND b.price < last(a.price)
  GROUP BY key CONTIGUITY EVENTS"""


@dataclass
class Figures:
    """One system's measured parts over every round."""

    seconds: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rows: int | None = None
    plan: str = ""


def stream_part(spark: SparkSession, part: int, keys: int, events: int) -> DataFrame:
    """One minute of T: ``events`` rows spread over ``keys`` keys, each key's rows in increasing time."""
    per_key = -(-events // keys)
    return spark.range(part * events, (part + 1) * events).select(
        F.concat(F.lit("k"), (F.col("id") % keys).cast("string")).alias("key"),
        F.timestamp_micros(F.lit(part * 60 * 10**6) + ((F.col("id") - part * events) / keys).cast("long")
                           * (60 * 10**6 // per_key)).alias("ts"),
        F.floor(F.rand(part) * 100).cast("double").alias("price"),
        F.lit(1).cast("long").alias("vol"),
        F.col("id"))


def run_view(spark: SparkSession, folder: str, query: str, parts: list[DataFrame], general: bool,
             figures: Figures) -> list[tuple]:
    """Maintain ``query`` as view V over ``parts`` in a warehouse of its own; its rows."""
    warehouse = Warehouse(folder, spark=spark, progress=False)
    warehouse.execute("CREATE STREAM T (key STRING, ts TIMESTAMP, price DOUBLE, vol BIGINT, id BIGINT) "
                      "TIMESTAMP ts PARTITION LENGTH 60; SET MAINTENANCE MANUAL")
    if general:
        os.environ[PLAN_SETTING] = "general"
    try:
        [created] = warehouse.run(f"CREATE VIEW V AS {query}")
    finally:
        os.environ.pop(PLAN_SETTING, None)
    figures.plan = created.message
    for number, frame in enumerate(parts):
        warehouse.ingest("T", frame)
        with measuring(spark) as took:
            warehouse.execute("STEP ALL")
        if number:
            figures.seconds.append(took.wall)
            figures.cpu.append(took.cpu)
    frame = warehouse.execute("SELECT * FROM V").drop(columns=["PART_TIMESTAMP"])
    found = [tuple(values) for values in frame.itertuples(index=False)]
    figures.rows = len(found)
    return found


def run_flink(folder: str, query: str, parallelism: int, count: bool) -> dict:
    command = [str(FLINK_PYTHON), str(REPO / "tools" / "flink_match_bench.py"), "--data", folder, "--sql", query,
               "--parallelism", str(parallelism)] + ([] if count else ["--no-count"])
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def spread(values: list[float]) -> str:
    return f"{median(values):.2f} [{min(values):.2f}, {max(values):.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--events", type=int, default=100_000, help="events per part")
    parser.add_argument("--parts", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--no-flink", action="store_true")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    spark = bench_session()
    cores = spark.sparkContext.defaultParallelism
    flink = not args.no_flink and FLINK_PYTHON.exists()
    with tempfile.TemporaryDirectory(prefix="viewdf-mr-bench-") as folder:
        parts = []
        for part in range(FIRST_PART, FIRST_PART + args.parts):
            stream_part(spark, part, args.keys, args.events).write.parquet(f"{folder}/parts/{part}")
            spark.read.parquet(f"{folder}/parts/{part}").write.csv(f"{folder}/csv", mode="append",
                                                                    timestampFormat="yyyy-MM-dd HH:mm:ss.SSS")
            parts.append(spark.read.parquet(f"{folder}/parts/{part}"))
        systems: list[tuple[str, str, str]] = []      # (shape, system, how)
        for shape in args.shapes:
            systems.append((shape, "view", "auto"))
            if shape in GENERAL_TOO:
                systems.append((shape, "general plan", "general"))
            if shape == "rise_then_drop":
                systems.append((shape, "PATTERN view", "pattern"))
            if flink and SHAPES[shape][1] is not None:
                systems += [(shape, "Flink, parallelism 1", "1"), (shape, "Flink, parallelism 2", "2")]
        figures = {(shape, system): Figures() for shape, system, _ in systems}
        rows: dict[tuple[str, str], list[tuple]] = {}
        for round_number in range(args.rounds):
            order = systems if round_number % 2 == 0 else systems[::-1]
            for shape, system, how in order:
                measured = figures[(shape, system)]
                print(f"round {round_number + 1}: {shape}, {system}", flush=True)
                if how in ("1", "2"):
                    result = run_flink(f"{folder}/csv", SHAPES[shape][1] or "", int(how), round_number == 0)
                    measured.seconds.append(result["seconds"] - result["empty_seconds"])
                    measured.rows = result["rows"] if result["rows"] is not None else measured.rows
                    continue
                query = PATTERN if how == "pattern" else SHAPES[shape][0]
                found = run_view(spark, f"{folder}/wh-{shape}-{how}-{round_number}", query, parts, how == "general",
                                 measured)
                if how != "pattern":
                    rows[(shape, how)] = sorted(found, key=repr)
        events = args.events * (args.parts - 1)
        report = []
        print(f"\n{args.parts} parts of {args.events:,} events over {args.keys:,} keys; {cores} cores; "
              f"{args.rounds} rounds")
        for (shape, system), measured in figures.items():
            if system.startswith("Flink"):
                parallelism = int(system[-1])
                per_core = args.events * args.parts / median(measured.seconds) / parallelism
                line = dict(shape=shape, system=system, seconds=measured.seconds, per_core=per_core, rows=measured.rows)
                print(f"{shape:15s} {system:22s} {spread(measured.seconds):>24s} s for all parts  "
                      f"{per_core:10,.0f} events/s per core  {measured.rows} rows")
            else:
                per_core = args.events / median(measured.seconds) / cores
                per_cpu = args.events / median(measured.cpu)
                line = dict(shape=shape, system=system, seconds=measured.seconds, cpu=measured.cpu, per_core=per_core,
                            per_cpu_second=per_cpu, rows=measured.rows, plan=measured.plan)
                print(f"{shape:15s} {system:22s} {spread(measured.seconds):>24s} s per part, "
                      f"{spread(measured.cpu):>24s} CPU-s  {per_core:10,.0f} events/s per core  "
                      f"{per_cpu:10,.0f} per CPU-s  {measured.rows} rows")
            report.append(line)
        for shape in GENERAL_TOO:
            if (shape, "general") in rows:
                same = rows[(shape, "auto")] == rows[(shape, "general")]
                print(f"{shape}: the two plans' rows are {'equal' if same else 'DIFFERENT'}")
        print(f"({events:,} events measured per view and round)")
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(dict(args=vars(args), cores=cores, figures=report), indent=1))


if __name__ == "__main__":
    main()
