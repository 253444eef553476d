"""Driver-side cost of one catalog commit as a view's part count grows (no Spark job involved).

Records parts of one view, one commit each, inside a ``grouped`` block (as maintenance does), and
reports the median microseconds per commit around each of the given part counts. A commit should
cost its own change, not the catalog's size.

    python -m benchmarks.catalog_commits --sizes 1000 10000 40000
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from viewdf_magic.catalog.actions import Create, Part
from viewdf_magic.catalog.catalog import Catalog
from viewdf_magic.catalog.local_fs import LocalFileSystem
from viewdf_magic.catalog.model import LineageRange, ObjectDef, PartMeta

SCHEMA = '{"type":"struct","fields":[{"name":"x","type":"integer","nullable":true,"metadata":{}}]}'


def part(subscript: int) -> PartMeta:
    return PartMeta(subscript, 3, (f"data/v/{subscript}",), 0.5, (LineageRange("s", subscript, subscript),),
                    float(subscript), "update", "3:0")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 40000])
    parser.add_argument("--samples", type=int, default=500, help="commits timed around each size")
    args = parser.parse_args()
    catalog = Catalog(LocalFileSystem(tempfile.mkdtemp(prefix="catalog-commits-")))
    catalog.commit([Create(ObjectDef("view", "V", "v0001", SCHEMA, "CREATE VIEW V ...", 0.0, 60, sources=("S",)))])
    recorded = 0
    with catalog.grouped():
        for size in sorted(args.sizes):
            while recorded < size:
                catalog.commit([Part("v", part(recorded))])
                recorded += 1
            times = []
            for _ in range(args.samples):
                started = time.perf_counter()
                catalog.commit([Part("v", part(recorded))])
                times.append(time.perf_counter() - started)
                recorded += 1
            print(f"{size:>7} parts: {statistics.median(times) * 1e6:6.0f} µs per commit (median of {args.samples})")
            catalog.flush()


if __name__ == "__main__":
    main()
