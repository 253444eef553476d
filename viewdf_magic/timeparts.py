"""Time arithmetic: part subscripts, part timestamps and durations.

A row with timestamp ``ts`` belongs to part ``floor(unix_seconds(ts) / L)``.
Timestamps without a zone are UTC.
"""

from __future__ import annotations

import datetime as dt

import pandas as pd

UNIT_SECONDS = {
    "SECOND": 1, "SECONDS": 1, "SEC": 1, "SECS": 1, "S": 1,
    "MINUTE": 60, "MINUTES": 60, "MIN": 60, "MINS": 60,
    "HOUR": 3600, "HOURS": 3600, "H": 3600,
    "DAY": 86400, "DAYS": 86400, "D": 86400,
}

TimestampLike = str | dt.datetime | pd.Timestamp


def to_utc(value: TimestampLike) -> pd.Timestamp:
    """A timezone-aware UTC timestamp; naive input is taken as UTC."""
    try:
        stamp = pd.Timestamp(value)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"not a timestamp: {value!r}") from exc
    if stamp is pd.NaT:
        raise ValueError(f"not a timestamp: {value!r}")
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")


def epoch_micros(value: TimestampLike) -> int:
    """Microseconds since the Unix epoch, exactly."""
    stamp = to_utc(value)
    return stamp.value // 1000


def subscript_of(value: TimestampLike, length: int) -> int:
    """The part subscript that contains ``value`` for partition length ``length`` seconds."""
    return epoch_micros(value) // (length * 1_000_000)


def part_start(subscript: int, length: int) -> pd.Timestamp:
    """The start of a part as a naive UTC timestamp (how Spark returns it)."""
    return pd.Timestamp(subscript * length * 1_000_000_000)


def format_part(subscript: int, length: int) -> str:
    """A part's start, human readable, e.g. ``2015-01-01 10:04:00``."""
    return part_start(subscript, length).strftime("%Y-%m-%d %H:%M:%S")


def subscript_sql(column: str, length: int) -> str:
    """Spark SQL for the part subscript of a timestamp column (exact integer arithmetic)."""
    micros = length * 1_000_000
    us = f"unix_micros({column})"
    return f"(({us} - pmod({us}, {micros})) div {micros})"
