"""CREATE VIEW's fixed cost before any part is computed: Spark's analyses of a view's clauses.

Each of ``--warehouses`` new warehouses gets the flights stream (no rows), then a ``[WINDOW 3 HOURS]`` view
(its probe, ``__pre``, ``__sum`` and the view) and a ViewDF whose UPDATE is its INITIALIZE; the first
``--warm-up`` warehouses are not timed. Run it once per commit, alternating, for an A/B.

    python tools/tree_cpu.py python -m benchmarks.create_view
"""

from __future__ import annotations

import argparse
import shutil
import tempfile

from viewdf_magic import Warehouse

from .common import bench_session, median, timed
from .parts_overhead import DELAYS, FLIGHTS

LATE = ("CREATE VIEW Late AS INITIALIZE Late[i] AS SELECT origin, count(*) AS n FROM F[i] WHERE dep_delay > 60 "
        "GROUP BY origin UPDATE Late[j] AS SELECT origin, count(*) AS n FROM F[j] WHERE dep_delay > 60 GROUP BY origin")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warehouses", type=int, default=12)
    parser.add_argument("--warm-up", type=int, default=2)
    args = parser.parse_args()
    spark = bench_session()
    root = tempfile.mkdtemp(prefix="viewdf-create-")
    times: dict[str, list[float]] = {"window": [], "viewdf": []}
    for k in range(args.warehouses):
        warehouse = Warehouse(f"{root}/{k}", spark=spark, progress=False)
        warehouse.execute(FLIGHTS)
        for name, text in (("window", DELAYS), ("viewdf", LATE)):
            seconds = timed(lambda: warehouse.execute(text))
            if k >= args.warm_up:
                times[name].append(seconds)
    for name, values in times.items():
        print(f"{name}: median {median(values):.3f} s, range {min(values):.3f}-{max(values):.3f} "
              f"({len(values)} creates)")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
