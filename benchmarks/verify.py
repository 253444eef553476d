"""VERIFY VIEW against computing the same view by range steps (issue 35: VERIFY in seconds).

A stream of ``--parts`` one-minute parts (``--rows`` rows each, a few keys) is loaded once. Each repeat
creates a window view, a hand-written view, a pattern view and a MATCH_RECOGNIZE view over it (CREATE VIEW
computes every part by range steps) and then verifies each; views are created and verified in alternating
order. Runs of events break at every x divisible by 7, so matches stay a few events long. Reported: the medians and
spread of CREATE and VERIFY wall seconds per view, and VERIFY / CREATE.

    python -m benchmarks.verify --parts 600 --rows 20 --repeats 3
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time

import pandas as pd

from viewdf_magic import Warehouse

from .common import bench_session, median

STREAM = "CREATE STREAM S (ts TIMESTAMP, k STRING, x INT) TIMESTAMP ts PARTITION LENGTH 60"
VIEWS = {
    "window": "CREATE VIEW {name} AS SELECT k, sum(x) AS total, count(*) AS n FROM S [WINDOW 10 MINUTES] GROUP BY k",
    "hand-written": ("CREATE VIEW {name} AS INITIALIZE {name}[i] AS SELECT k, sum(x) AS total FROM S[i] GROUP BY k "
                     "UPDATE {name}[j] AS SELECT k, sum(x) AS total FROM S[j-2 .. j] GROUP BY k "
                     "RECOMPUTE {name}[j] AS SELECT k, sum(x) AS total FROM S[j-2 .. j] GROUP BY k"),
    "pattern": ("CREATE VIEW {name} AS SELECT k, a.x AS first_x, count(*) AS n FROM S PATTERN [a, b+] "
                "WHERE a.x % 7 <> 0 AND b.x % 7 <> 0 GROUP BY k"),
    "match-recognize": ("CREATE VIEW {name} AS SELECT * FROM S MATCH_RECOGNIZE (PARTITION BY k ORDER BY ts "
                        "MEASURES FIRST(A.x) AS first_x, COUNT(B.*) AS n AFTER MATCH SKIP PAST LAST ROW "
                        "PATTERN (A B+) DEFINE B AS B.x % 7 <> 0) AS M"),
}


def rows(parts: int, per_part: int) -> pd.DataFrame:
    start = pd.Timestamp("2015-01-01")
    return pd.DataFrame({"ts": [start + pd.Timedelta(minutes=p, seconds=r % 60) for p in range(parts)
                                for r in range(per_part)],
                         "k": [f"k{r % 5}" for _ in range(parts) for r in range(per_part)],
                         "x": [p * per_part + r for p in range(parts) for r in range(per_part)]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", type=int, default=600)
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    spark = bench_session()
    folder = tempfile.mkdtemp(prefix="viewdf-verify-")
    try:
        warehouse = Warehouse(folder, spark=spark, progress=False)
        warehouse.run(STREAM)
        warehouse.ingest("S", rows(args.parts, args.rows))
        times: dict[str, dict[str, list[float]]] = {kind: {"create": [], "verify": []} for kind in VIEWS}
        for repeat in range(args.repeats):
            order = list(VIEWS) if repeat % 2 == 0 else list(reversed(VIEWS))
            for kind in order:
                name = f"V{repeat}_{kind.replace('-', '_')}"
                started = time.perf_counter()
                warehouse.run(VIEWS[kind].format(name=name))
                created = time.perf_counter() - started
                started = time.perf_counter()
                [result] = warehouse.run(f"VERIFY VIEW {name}")
                verified = time.perf_counter() - started
                assert result.table["equal"].all(), result.message
                times[kind]["create"].append(created)
                times[kind]["verify"].append(verified)
                warehouse.run(f"DROP VIEW {name} CASCADE")
        print(f"{args.parts} parts of {args.rows} rows, {args.repeats} repeats (median [min, max] seconds)")
        for kind, measured in times.items():
            create, verify = measured["create"], measured["verify"]
            print(f"{kind:>15}: CREATE {median(create):.2f} [{min(create):.2f}, {max(create):.2f}]  "
                  f"VERIFY {median(verify):.2f} [{min(verify):.2f}, {max(verify):.2f}]  "
                  f"VERIFY/CREATE {median(verify) / median(create):.2f}x")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
