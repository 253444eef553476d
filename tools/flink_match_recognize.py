"""Run the MATCH_RECOGNIZE corpus in Apache Flink (PyFlink) and record the rows it produces.

Runs only inside .venv-flink (``./run flink-check [query ids]``). Each Flink-supported corpus query runs
over each of its data sets in Flink's batch mode (one local TableEnvironment, parallelism 1; the data
set is written to a CSV file read by the filesystem connector as table T), and the normalised rows go to
tests/match_recognize/flink_results/<query id>__<data set>.json. A query Flink rejects or fails is
recorded with its error instead of rows. A run of the whole corpus also removes recordings of queries or
data sets no longer in it.

``--streaming`` instead runs the queries in streaming mode (ts an event-time attribute whose watermark
lags 20 years, more than any data set's disorder, so everything is ordered and the bounded input's end
flushes it) and checks that each result equals the recorded batch result; it writes nothing.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import pathlib
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from match_recognize import corpus, datasets, results  # noqa: E402
from pyflink.table import EnvironmentSettings, TableEnvironment  # noqa: E402


def _environment(streaming: bool) -> TableEnvironment:
    settings = EnvironmentSettings.in_streaming_mode() if streaming else EnvironmentSettings.in_batch_mode()
    environment = TableEnvironment.create(settings)
    environment.get_config().set("parallelism.default", "1")
    return environment


def _csv_value(value: object) -> object:
    """Timestamps as Flink's CSV format reads them; floats exactly (repr round-trips)."""
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ", timespec="milliseconds")
    return repr(value) if isinstance(value, float) else value


def _write_csv(rows: list[dict[str, object]], path: pathlib.Path) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        for row in rows:
            writer.writerow([_csv_value(row[name]) for name in datasets.COLUMNS])


def _register(environment: TableEnvironment, path: pathlib.Path, streaming: bool) -> None:
    environment.execute_sql("DROP TEMPORARY TABLE IF EXISTS T")
    columns = ", ".join(f"{name} {kind}" for name, kind in zip(datasets.COLUMNS, datasets.FLINK_TYPES))
    if streaming:
        columns += ", WATERMARK FOR ts AS ts - INTERVAL '20' YEAR"
    environment.execute_sql(
        f"CREATE TEMPORARY TABLE T ({columns}) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')"
    )


def _run(environment: TableEnvironment, sql: str) -> dict[str, object]:
    try:
        result = environment.execute_sql(sql)
        columns = result.get_table_schema().get_field_names()
        with result.collect() as rows:
            collected = [list(row) for row in rows]
    except Exception as error:  # Flink's errors reach Python as py4j/pyflink exceptions of many types
        message = str(error).strip().splitlines()
        cause = next((line for line in message if "Exception:" in line), message[0] if message else repr(error))
        return {"error": cause.strip()}
    return {"columns": list(columns), "rows": results.normalise_rows(collected)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ids", nargs="*", help="corpus query ids (default: every Flink-supported query)")
    parser.add_argument("--streaming", action="store_true", help="check streaming mode against the recordings")
    arguments = parser.parse_args()
    chosen, streaming = arguments.ids, arguments.streaming
    cases = [case for case in corpus.CASES if case.runs_in_flink and (not chosen or case.id in chosen)]
    environment = _environment(streaming)
    results.RESULTS_DIR.mkdir(exist_ok=True)
    began = time.monotonic()
    written, different = set(), []
    with tempfile.TemporaryDirectory() as scratch:
        for name in sorted({name for case in cases for name in case.datasets}):
            data = pathlib.Path(scratch) / f"{name}.csv"
            _write_csv(datasets.load(name), data)
            _register(environment, data, streaming)
            for case in cases:
                if name not in case.datasets:
                    continue
                started = time.monotonic()
                outcome = _run(environment, case.sql)
                path = results.result_path(case.id, name)
                status = outcome.get("error") or f"{len(outcome['rows'])} rows"  # type: ignore[arg-type]
                if streaming:
                    same = outcome == json.loads(path.read_text())
                    status += ", as recorded" if same else ", NOT as recorded"
                    different += [] if same else [path.stem]
                else:
                    path.write_text(json.dumps(outcome, indent=1) + "\n")
                    written.add(path)
                print(f"{case.id} over {name}: {status} ({time.monotonic() - started:.1f} s)", flush=True)
    if not chosen and not streaming:
        for stale in set(results.RESULTS_DIR.glob("*.json")) - written:
            stale.unlink()
    print(f"{len(cases)} queries in {time.monotonic() - began:.0f} s", flush=True)
    if different:
        sys.exit(f"streaming results differ from the recorded batch results: {', '.join(different)}")


if __name__ == "__main__":
    main()
