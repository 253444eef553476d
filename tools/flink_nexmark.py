"""Run the Nexmark queries in Apache Flink SQL (PyFlink) over generated Nexmark parts.

Runs only inside .venv-flink (PyFlink pins its own pyarrow and grpcio); it reads the per-part Parquet
files of ``viewdf_magic.nexmark.parts.write_parts``, writes each stream as one CSV file (PyFlink ships
no Parquet format), and runs each query as a streaming job: ``date_time`` is a TIMESTAMP(6) column,
windows use ``rt``, its millisecond truncation (Flink's event-time attribute is TIMESTAMP(3);
truncation never moves an event across a whole-second window bound), with a watermark equal to it
(the events are in time order). The SQL is nexmark-flink's ``queries/q*.sql`` with our column names
and the windows as parameters; like the batch queries (viewdf_magic/nexmark/queries.py), q5 and q8
keep the window's start and q7 its end. Mini-batches are on as in nexmark-flink's configuration.

    ./run flink-nexmark                                  record the tests' configuration (tests/nexmark)
    python tools/flink_nexmark.py --data D --rows OUT    each query's rows as CSV under OUT/<query>/
    python tools/flink_nexmark.py --data D --timing      seconds and CPU-seconds per query (blackhole sink), JSON lines
    python tools/flink_nexmark.py --data D --follow F --queries q5 --ready R --stop S
                                                         one query over CSV parts as they arrive in F (below)

Recording writes tests/nexmark/flink_results/<query>.json with canonical rows (a count and a digest
for large results) and _input.json describing the data. ``--timing`` runs each query twice, over the
data and over no events; the second is the job's fixed cost (planning, deployment, start-up). It also
times a scan of each stream a query reads (over the data, less over none): reading and parsing the CSV,
which the Spark systems do not pay (they read Parquet), so that it can be subtracted.

``--follow`` is the fixed-rate latency run's Flink (benchmarks/nexmark_latency.py): one query as an unbounded
job over ``F/<stream>/`` (the filesystem source watching for new CSV files every 10 ms), mini-batches off and
watermarks every 50 ms (set for latency, not throughput), each row printed to stdout (the print sink) led by
``CURRENT_TIMESTAMP`` (taken per row as it leaves the query) and the event time its row is due by
(``FOLLOWED``). It touches ``R`` once the job runs and cancels it when ``S`` appears.
"""

from __future__ import annotations

import argparse
import collections
import csv
import datetime
import decimal
import glob
import json
import os
import pathlib
import re
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from pyflink.table import EnvironmentSettings, TableEnvironment  # noqa: E402

from benchmarks.flink_csv import write_csv  # noqa: E402
from benchmarks.process_cpu import tree_cpu_seconds  # noqa: E402
from viewdf_magic.nexmark import NexmarkConfig  # noqa: E402
from viewdf_magic.nexmark.canonical import canonical_rows, digest, recording  # noqa: E402
from viewdf_magic.nexmark.parts import STREAMS, write_parts  # noqa: E402

FLINK_TYPES = {pa.int64(): "BIGINT", pa.string(): "STRING"}
CHANGELOG_QUERIES = {"q4"}       # its result is updated: recorded as a changelog and folded


def flink_queries(window: int, slide: int) -> dict[str, str]:
    """nexmark-flink's queries over ``person``, ``auction`` and ``bid``."""
    hop = f"HOP(TABLE bid, DESCRIPTOR(rt), INTERVAL '{slide}' SECOND, INTERVAL '{window}' SECOND)"

    def tumble(table: str) -> str:
        return f"TUMBLE(TABLE {table}, DESCRIPTOR(rt), INTERVAL '{window}' SECOND)"
    return {
        "q1": "SELECT auction, bidder, 0.908 * price AS price, date_time, extra FROM bid",
        "q2": "SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0",
        "q3": """SELECT P.name, P.city, P.state, A.id FROM auction AS A INNER JOIN person AS P ON A.seller = P.id
                 WHERE A.category = 10 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA')""",
        "q4": """SELECT Q.category, AVG(Q.final) AS average_final FROM (
                   SELECT MAX(B.price) AS final, A.category FROM auction A, bid B
                   WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
                   GROUP BY A.id, A.category) Q
                 GROUP BY Q.category""",
        "q5": f"""SELECT AuctionBids.auction, AuctionBids.num, AuctionBids.starttime FROM (
                    SELECT auction, count(*) AS num, window_start AS starttime, window_end AS endtime
                    FROM TABLE({hop}) GROUP BY auction, window_start, window_end) AS AuctionBids
                  JOIN (
                    SELECT max(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime FROM (
                      SELECT count(*) AS num, window_start AS starttime, window_end AS endtime
                      FROM TABLE({hop}) GROUP BY auction, window_start, window_end) AS CountBids
                    GROUP BY CountBids.starttime, CountBids.endtime) AS MaxBids
                  ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime
                     AND AuctionBids.num >= MaxBids.maxn""",
        "q7": f"""SELECT B.auction, B.price, B.bidder, B.date_time, B.extra, B1.window_end FROM bid B
                  JOIN (SELECT MAX(price) AS maxprice, window_end FROM TABLE({tumble('bid')})
                        GROUP BY window_start, window_end) B1
                  ON B.price = B1.maxprice
                  WHERE B.date_time BETWEEN B1.window_end - INTERVAL '{window}' SECOND AND B1.window_end""",
        "q8": f"""SELECT P.id, P.name, P.starttime FROM (
                    SELECT id, name, window_start AS starttime, window_end AS endtime FROM TABLE({tumble('person')})
                    GROUP BY id, name, window_start, window_end) P
                  JOIN (
                    SELECT seller, window_start AS starttime, window_end AS endtime FROM TABLE({tumble('auction')})
                    GROUP BY seller, window_start, window_end) A
                  ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime""",
    }


# The queries the latency run follows, each with the column of its rows that says by which event time the row is
# due: q2 and q3 keep their input's time for it (q3 the later of the two rows it joins). q4 is not followed: its
# rows (a category's average) carry no event time, and keeping one would change what it emits.
FOLLOWED = {"q1": "date_time", "q2": "date_time", "q3": "due", "q5": "starttime", "q7": "window_end",
            "q8": "starttime"}


def followed_queries(window: int, slide: int) -> dict[str, str]:
    """The queries ``--follow`` runs: ``flink_queries`` with q2 and q3 keeping their event time."""
    queries = flink_queries(window, slide)
    queries["q2"] = "SELECT auction, price, date_time FROM bid WHERE MOD(auction, 123) = 0"
    queries["q3"] = queries["q3"].replace("SELECT P.name, P.city, P.state, A.id",
                                          "SELECT P.name, P.city, P.state, A.id, GREATEST(A.date_time, P.date_time) AS due")
    return {name: sql for name, sql in queries.items() if name in FOLLOWED}


def _environment(parallelism: int, checkpoints: str | None, latency: bool = False) -> TableEnvironment:
    environment = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = environment.get_config()
    settings = {"parallelism.default": str(parallelism), "table.exec.mini-batch.enabled": "true",
                "table.exec.mini-batch.allow-latency": "2 s", "table.exec.mini-batch.size": "50000"}
    if latency:      # nexmark-flink's mini-batches trade latency for throughput; watermarks every 50 ms, not 200
        settings.update({"table.exec.mini-batch.enabled": "false", "pipeline.auto-watermark-interval": "50 ms",
                         "table.local-time-zone": "UTC"})
    for key, value in settings.items():
        config.set(key, value)
    if checkpoints:      # the filesystem sink commits its files at checkpoints, the last one at the input's end
        config.set("execution.checkpointing.interval", "5 s")
        config.set("execution.checkpointing.storage", "filesystem")
        config.set("execution.checkpointing.dir", pathlib.Path(checkpoints).as_uri())
    return environment


def _write_csv(data: str, scratch: str, empty: bool) -> dict[str, str]:
    """Each stream's parts as one CSV file (or an empty one); the Flink column list of each stream."""
    columns = {}
    for stream in STREAMS:
        files = sorted(glob.glob(os.path.join(data, stream, "*.parquet")))
        schema = pq.read_schema(files[0])
        folder = os.path.join(scratch, "empty" if empty else "data", stream)
        os.makedirs(folder, exist_ok=True)
        write_csv([] if empty else files, schema, os.path.join(folder, "events.csv"))
        columns[stream] = _column_list(schema)
    return columns


def _column_list(schema: pa.Schema) -> str:
    """A stream's Flink columns: its own, and ``rt`` (event time in milliseconds) with its watermark."""
    types = [f"{field.name} {FLINK_TYPES.get(field.type, 'TIMESTAMP(6)')}" for field in schema]
    return ", ".join([*types, "rt AS CAST(date_time AS TIMESTAMP(3))", "WATERMARK FOR rt AS rt"])



def _register(environment: TableEnvironment, columns: dict[str, str], folder: str) -> None:
    for stream, column_list in columns.items():
        environment.execute_sql(f"DROP TEMPORARY TABLE IF EXISTS {stream}")
        environment.execute_sql(f"CREATE TEMPORARY TABLE {stream} ({column_list}) WITH ('connector' = 'filesystem', "
                                f"'path' = '{os.path.join(folder, stream)}', 'format' = 'csv')")


def _sink_columns(environment: TableEnvironment, sql: str) -> list[tuple[str, str]]:
    schema = environment.sql_query(sql).get_schema()
    return [(name, str(kind)) for name, kind in zip(schema.get_field_names(), schema.get_field_data_types())]


def _run(environment: TableEnvironment, name: str, sql: str, options: str) -> tuple[float, float]:
    """CREATE TABLE AS the query into a sink; the job's seconds and CPU-seconds (this process and its JVM)."""
    environment.execute_sql(f"DROP TABLE IF EXISTS sink_{name}")
    started, cpu = time.perf_counter(), tree_cpu_seconds(os.getpid())
    environment.execute_sql(f"CREATE TABLE sink_{name} WITH ({options}) AS {sql}").wait()
    return time.perf_counter() - started, tree_cpu_seconds(os.getpid()) - cpu


def _read_streams(sql: str) -> list[str]:
    """The streams a query reads."""
    return [stream for stream in STREAMS if re.search(rf"(\bFROM|\bJOIN|\bTABLE|,)\s*{stream}\b", sql)]


def _timed(environment: TableEnvironment, folders: dict[bool, dict[str, str]], scratch: str, name: str,
           sql: str) -> dict[bool, tuple[float, float]]:
    """``sql`` into a blackhole over the events and over none: (seconds, CPU-seconds) of each job."""
    measured = {}
    for empty, columns in folders.items():
        _register(environment, columns, os.path.join(scratch, "empty" if empty else "data"))
        measured[empty] = _run(environment, name, sql, "'connector' = 'blackhole'")
    return measured


def _time_queries(environment: TableEnvironment, folders: dict[bool, dict[str, str]], scratch: str,
                  queries: dict[str, str], parallelism: int) -> None:
    """Print a JSON line per query: its job's seconds and CPU-seconds over the events and over none, and
    those of reading its input (a scan of each stream it reads, less the scan of none), which the Spark
    systems read from Parquet instead of parsing CSV."""
    scans = {}
    for name, sql in queries.items():
        job = _timed(environment, folders, scratch, name, sql)
        streams = _read_streams(sql)
        for stream in streams:
            if stream not in scans:
                scan = _timed(environment, folders, scratch, f"scan_{stream}", f"SELECT * FROM {stream}")
                scans[stream] = tuple(scan[False][k] - scan[True][k] for k in (0, 1))
        print(json.dumps({"query": name, "seconds": job[False][0], "empty_seconds": job[True][0],
                          "cpu_seconds": job[False][1], "empty_cpu_seconds": job[True][1],
                          "input_seconds": sum(scans[s][0] for s in streams),
                          "input_cpu_seconds": sum(scans[s][1] for s in streams),
                          "parallelism": parallelism}), flush=True)


def _follow(data: str, folder: str, query: str, window: int, slide: int, parallelism: int, ready: str,
            stop: str) -> None:
    """Run ``query`` over the CSV parts arriving under ``folder`` until ``stop`` exists (see the module's text)."""
    environment = _environment(parallelism, None, latency=True)
    for stream in STREAMS:
        schema = pq.read_schema(sorted(glob.glob(os.path.join(data, stream, "*.parquet")))[0])
        environment.execute_sql(f"CREATE TEMPORARY TABLE {stream} ({_column_list(schema)}) WITH ("
                                f"'connector' = 'filesystem', 'path' = '{os.path.join(folder, stream)}', "
                                "'format' = 'csv', 'source.monitor-interval' = '10 ms')")
    sql = followed_queries(window, slide)[query]
    running = environment.execute_sql(f"CREATE TABLE emitted WITH ('connector' = 'print') AS SELECT "
                                      f"CURRENT_TIMESTAMP AS emitted_at, {FOLLOWED[query]} AS due_by, q.* FROM ({sql}) q")
    client = running.get_job_client()
    assert client is not None
    while client.get_job_status().result().name != "RUNNING":
        time.sleep(0.05)
    pathlib.Path(ready).touch()
    while not os.path.exists(stop):
        time.sleep(0.05)
    client.cancel().result()


def _value(text: str, kind: str) -> object:
    if kind in ("BIGINT", "INTEGER"):
        return int(text)
    if kind == "DECIMAL":
        return decimal.Decimal(text)
    if kind == "TIMESTAMP":
        return datetime.datetime.fromisoformat(text)
    return text


def _folded_changelog(folder: str, columns: list[tuple[str, str]]) -> list[list[object]]:
    """The rows a debezium-json changelog leaves: each insert counts +1, each delete -1."""
    counts: collections.Counter[tuple[object, ...]] = collections.Counter()
    for path in glob.glob(os.path.join(folder, "part-*")):
        with open(path) as lines:
            for line in lines:
                change = json.loads(line)
                for side, sign in (("before", -1), ("after", 1)):
                    if change[side] is not None:
                        counts[tuple(change[side][name] for name, _ in columns)] += sign
    if any(count < 0 for count in counts.values()):
        raise RuntimeError(f"the changelog in {folder} deletes rows it never inserted")
    return [list(row) for row, count in counts.items() for _ in range(count)]


def _rows(folder: str, columns: list[tuple[str, str]]) -> list[list[object]]:
    """The rows of a query's CSV files, typed as Flink typed them."""
    rows = []
    for path in glob.glob(os.path.join(folder, "part-*")):
        with open(path, newline="") as handle:
            rows += [[_value(text, kind) for text, (_, kind) in zip(row, columns)] for row in csv.reader(handle)]
    return rows


def _results(environment: TableEnvironment, queries: dict[str, str], out: str) -> dict[str, list[tuple[str, str]]]:
    """Run each query into CSV files under ``out/<query>`` (a changelog is folded into its rows
    first); each query's columns and their Flink types."""
    results = {}
    for name, sql in queries.items():
        columns = _sink_columns(environment, sql)
        path = os.path.join(out, name)
        if name in CHANGELOG_QUERIES:
            changes = path + ".changelog"
            seconds, _ = _run(environment, name, sql,
                              f"'connector' = 'filesystem', 'path' = '{changes}', 'format' = 'debezium-json'")
            os.makedirs(path)
            with open(os.path.join(path, "part-folded.csv"), "w", newline="") as handle:
                csv.writer(handle).writerows(_folded_changelog(changes, columns))
        else:
            seconds, _ = _run(environment, name, sql, f"'connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv'")
        print(f"{name}: {seconds:.1f} s", file=sys.stderr, flush=True)
        results[name] = columns
    return results


def _run_for_rows(data: str, scratch: str, queries: dict[str, str], parallelism: int,
                  out: str) -> dict[str, list[tuple[str, str]]]:
    """Run the queries over the parts in ``data`` with their rows into ``out`` (see ``_results``)."""
    environment = _environment(parallelism, os.path.join(scratch, "checkpoints"))
    _register(environment, _write_csv(data, scratch, empty=False), os.path.join(scratch, "data"))
    return _results(environment, queries, out)


def _chosen(queries: dict[str, str], names: list[str] | None) -> dict[str, str]:
    return {name: sql for name, sql in queries.items() if not names or name in names}


def _record(arguments: argparse.Namespace) -> None:
    import nexmark as fixed

    config = NexmarkConfig(**fixed.EVENTS)
    with tempfile.TemporaryDirectory() as scratch:
        data = os.path.join(scratch, "parts")
        write_parts(config, data, fixed.PART_SECONDS)
        queries = _chosen(flink_queries(fixed.WINDOW_SECONDS, fixed.SLIDE_SECONDS), arguments.queries)
        out = os.path.join(scratch, "out")
        results = {name: (columns, _rows(os.path.join(out, name), columns)) for name, columns in
                   _run_for_rows(data, scratch, queries, arguments.parallelism, out).items()}
        inputs = {stream: digest(canonical_rows(tuple(row.values()) for row in
                                                pq.read_table(os.path.join(data, stream)).to_pylist()))
                  for stream in STREAMS}
    fixed.FLINK_RESULTS.mkdir(exist_ok=True)
    for name, (columns, rows) in results.items():
        recorded = recording([column for column, _ in columns], canonical_rows(rows))
        (fixed.FLINK_RESULTS / f"{name}.json").write_text(_one_row_a_line(recorded))
    meta = {"events": fixed.EVENTS, "window_seconds": fixed.WINDOW_SECONDS, "slide_seconds": fixed.SLIDE_SECONDS,
            "part_seconds": fixed.PART_SECONDS, "parallelism": arguments.parallelism,
            "flink": _flink_version(), "input_sha256": inputs}
    (fixed.FLINK_RESULTS / "_input.json").write_text(json.dumps(meta, indent=1) + "\n")


def _one_row_a_line(recorded: dict[str, object]) -> str:
    """JSON with each row on a line of its own, so that a re-recording's diff shows the rows that changed."""
    fields = [f"{json.dumps(key)}: {json.dumps(value)}" for key, value in recorded.items() if key != "rows"]
    if "rows" in recorded:
        rows = ",\n  ".join(json.dumps(row) for row in recorded["rows"])  # type: ignore[attr-defined]
        fields.append(f'"rows": [\n  {rows}\n ]' if rows else '"rows": []')
    return "{" + ",\n ".join(fields) + "}\n"


def _flink_version() -> str:
    from importlib.metadata import version

    return version("apache-flink")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="a folder of per-part Parquet files (parts.write_parts); default: record")
    parser.add_argument("--rows", help="write each query's rows as CSV under this folder")
    parser.add_argument("--timing", action="store_true", help="time each query into a blackhole sink")
    parser.add_argument("--window", type=int, default=10)
    parser.add_argument("--slide", type=int, default=2)
    parser.add_argument("--parallelism", type=int, default=1)
    parser.add_argument("--queries", nargs="*", help="query names (default: all)")
    parser.add_argument("--follow", help="run the one query of --queries over CSV parts arriving in this folder")
    parser.add_argument("--ready", help="with --follow: touched once the job runs")
    parser.add_argument("--stop", help="with --follow: the job is cancelled when this file appears")
    arguments = parser.parse_args()
    if arguments.follow:
        _follow(arguments.data, arguments.follow, arguments.queries[0], arguments.window, arguments.slide,
                arguments.parallelism, arguments.ready, arguments.stop)
        return
    if not arguments.data:
        _record(arguments)
        return
    queries = _chosen(flink_queries(arguments.window, arguments.slide), arguments.queries)
    with tempfile.TemporaryDirectory() as scratch:
        if arguments.rows:
            _run_for_rows(arguments.data, scratch, queries, arguments.parallelism, arguments.rows)
            return
        environment = _environment(arguments.parallelism, None)
        folders = {empty: _write_csv(arguments.data, scratch, empty) for empty in (False, True)}
        _time_queries(environment, folders, scratch, queries, arguments.parallelism)


if __name__ == "__main__":
    main()
