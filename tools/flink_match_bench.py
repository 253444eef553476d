"""Time one MATCH_RECOGNIZE query in Apache Flink (PyFlink) for ``python -m benchmarks.match_recognize``.

Runs only inside .venv-flink. Reads the CSV files under ``--data`` (key, ts, price, vol, id) as table T with
Flink's filesystem connector, runs ``--sql`` in batch mode with ``--parallelism`` into a blackhole sink, then
over an empty folder (the fixed cost of a job), and (unless ``--no-count``) into a CSV sink to count the rows;
prints one JSON line
``{"seconds", "empty_seconds", "rows"}``.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
import time

from pyflink.table import EnvironmentSettings, TableEnvironment

COLUMNS = "key STRING, ts TIMESTAMP(3), price DOUBLE, vol BIGINT, id BIGINT"


def _run(data: str, sql: str, parallelism: int, sink: str) -> float:
    """Seconds to run ``sql`` over the CSV files in ``data`` into a table with connector options ``sink``."""
    environment = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    environment.get_config().set("parallelism.default", str(parallelism))
    environment.execute_sql(f"CREATE TEMPORARY TABLE T ({COLUMNS}) WITH ('connector' = 'filesystem', "
                            f"'path' = '{data}', 'format' = 'csv')")
    started = time.perf_counter()
    environment.execute_sql(f"CREATE TABLE sink WITH ({sink}) AS {sql}").wait()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", required=True, help="a folder of CSV files: key, ts, price, vol, id")
    parser.add_argument("--sql", required=True, help="the MATCH_RECOGNIZE query over T")
    parser.add_argument("--parallelism", type=int, default=1)
    parser.add_argument("--no-count", action="store_true", help="skip the third job, which counts the rows")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        empty = pathlib.Path(folder) / "empty"
        empty.mkdir()
        (empty / "none.csv").write_text("")
        seconds = _run(args.data, args.sql, args.parallelism, "'connector' = 'blackhole'")
        empty_seconds = _run(str(empty), args.sql, args.parallelism, "'connector' = 'blackhole'")
        rows = None
        if not args.no_count:
            out = pathlib.Path(folder) / "rows"
            _run(args.data, args.sql, args.parallelism,
                 f"'connector' = 'filesystem', 'path' = '{out}', 'format' = 'csv'")
            rows = sum(len(path.read_text().splitlines()) for path in out.rglob("*") if path.is_file()
                       and not path.name.startswith("."))
    print(json.dumps({"seconds": seconds, "empty_seconds": empty_seconds, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
