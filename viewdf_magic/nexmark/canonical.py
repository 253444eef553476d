"""Result rows in one canonical form, whichever system produced them, so that they compare exactly
and can be recorded as JSON: integers stay integers, strings stay strings, timestamps become
``YYYY-MM-DD HH:MM:SS.ffffff`` (UTC, microseconds), DECIMALs their exact digits without trailing
zeros (``1000.000`` is ``1000``). Plain Python: the Flink harness (its own virtualenv, no Spark)
records with it and the tests read the recordings with it."""

from __future__ import annotations

import datetime
import decimal
import hashlib
import json
from collections.abc import Iterable, Sequence

LARGEST_RECORDED = 5000      # results with more rows are recorded as a count and a digest

CanonicalRow = tuple[object, ...]


def canonical_value(value: object) -> object:
    """One value in canonical form (naive datetimes are UTC)."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return value.isoformat(sep=" ", timespec="microseconds")
    if isinstance(value, decimal.Decimal):
        return format(value.normalize(), "f")
    if hasattr(value, "item"):         # numpy scalars
        return canonical_value(value.item())
    return value


def canonical_rows(rows: Iterable[Sequence[object]]) -> list[CanonicalRow]:
    """Rows in canonical form, sorted (by their JSON text, so mixed types and NULLs sort too)."""
    return sorted((tuple(canonical_value(value) for value in row) for row in rows), key=json.dumps)


def digest(rows: list[CanonicalRow]) -> str:
    """SHA-256 of sorted canonical rows, one JSON line each."""
    hashed = hashlib.sha256()
    for row in rows:
        hashed.update(json.dumps(row).encode() + b"\n")
    return hashed.hexdigest()


def recording(columns: Sequence[str], rows: list[CanonicalRow]) -> dict[str, object]:
    """A result as recorded: its columns, and its rows, or for a large result their count and digest."""
    if len(rows) > LARGEST_RECORDED:
        return {"columns": list(columns), "count": len(rows), "sha256": digest(rows)}
    return {"columns": list(columns), "rows": [list(row) for row in rows]}
