"""Crash-safety stress run: the CI test's kill loop (tests/crash_worker.py), longer.

A worker process ingests small batches (on time and late) into a warehouse with hand-written, window
and pattern views and is SIGKILLed, with its JVM, at random points; after each kill the warehouse is
reopened (which recovers), checked for partial parts, lost or duplicated batches and unfinished
maintenance, and at the end (and every ``--rebuild-every`` kills) every view is compared with a
rebuild from scratch. Prints the counts and writes them as JSON.

    python -m benchmarks.crash_stress --kills 60 --warehouse /tmp/crash-stress
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from crash_worker import crash_loop, small_session, write_counts  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=60)
    parser.add_argument("--warehouse", required=True,
                        help="a folder for the warehouse, its rebuilds and the workers' stderr (emptied first)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--rebuild-every", type=int, default=20, help="also compare with a rebuild every N kills")
    parser.add_argument("--counts", default="test-artifacts/crash-stress.json", help="where to write the counts")
    args = parser.parse_args()

    root = Path(args.warehouse)
    if root.exists():
        shutil.rmtree(root)
    spark = small_session("local[2]")
    counts = crash_loop(spark, root, kills=args.kills, seed=args.seed, rebuild_every=args.rebuild_every,
                        log=lambda line: print(line, flush=True))
    write_counts(counts, Path(args.counts))
    print(counts.summary())
    print(f"counts written to {args.counts}")


if __name__ == "__main__":
    main()
