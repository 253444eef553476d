"""Normalised result rows, shared by the Flink harness and the oracle tests.

A result is a list of column names and a sorted list of rows; timestamps become ISO strings
(``YYYY-MM-DDTHH:MM:SS.fff``), floats are rounded to 9 significant digits, Decimals become floats.
"""

from __future__ import annotations

import datetime
import decimal
import json
import pathlib
from collections.abc import Sequence

RESULTS_DIR = pathlib.Path(__file__).with_name("flink_results")


def normalise_value(value: object) -> object:
    """One value in its recorded form."""
    if isinstance(value, datetime.datetime):
        return value.isoformat(timespec="milliseconds")
    if isinstance(value, decimal.Decimal):
        value = float(value)
    if isinstance(value, float):
        return float(f"{value:.9g}")
    return value


def normalise_rows(rows: Sequence[Sequence[object]]) -> list[list[object]]:
    """Rows with normalised values, sorted (by their JSON text, so NULLs sort too)."""
    normalised = [[normalise_value(value) for value in row] for row in rows]
    return sorted(normalised, key=lambda row: json.dumps(row))


def result_path(query_id: str, dataset: str) -> pathlib.Path:
    """Where Flink's result for one query over one data set is recorded."""
    return RESULTS_DIR / f"{query_id}__{dataset}.json"
