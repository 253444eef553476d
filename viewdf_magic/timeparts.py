"""Time arithmetic: part subscripts, part timestamps and durations.

A row with timestamp ``ts`` belongs to part ``floor(unix_seconds(ts) / L)``.
Timestamps without a zone are UTC.
"""

from __future__ import annotations

import datetime as dt
from typing import TypeAlias

import pandas as pd

UNIT_SECONDS = {
    "SECOND": 1, "SECONDS": 1, "SEC": 1, "SECS": 1, "S": 1,
    "MINUTE": 60, "MINUTES": 60, "MIN": 60, "MINS": 60,
    "HOUR": 3600, "HOURS": 3600, "H": 3600,
    "DAY": 86400, "DAYS": 86400, "D": 86400,
}

TimestampLike: TypeAlias = str | dt.datetime | pd.Timestamp


def to_utc(value: TimestampLike) -> pd.Timestamp:
    """A timezone-aware UTC timestamp; naive input is taken as UTC."""
    try:
        stamp = pd.Timestamp(value)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"not a timestamp: {value!r}") from exc
    if stamp is pd.NaT:
        raise ValueError(f"not a timestamp: {value!r}")
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def epoch_micros(value: TimestampLike) -> int:
    """Microseconds since the Unix epoch, exactly (any year from 1 to 9999)."""
    delta = to_utc(value).to_pydatetime(warn=False) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def subscript_of(value: TimestampLike, length: int) -> int:
    """The part subscript that contains ``value`` for partition length ``length`` seconds."""
    return epoch_micros(value) // (length * 1_000_000)


def part_start(subscript: int, length: int) -> pd.Timestamp:
    """The start of a part as a naive UTC timestamp (how Spark returns it); NaT outside the years
    pandas can represent (1677 to 2262)."""
    try:
        return pd.Timestamp(subscript * length, unit="s")
    except (OverflowError, ValueError):      # OutOfBoundsDatetime is a ValueError
        return pd.NaT


def format_part(subscript: int, length: int) -> str:
    """A part's start, human readable, e.g. ``2015-01-01 10:04:00`` (``part N`` beyond year 9999)."""
    try:
        return (dt.datetime(1970, 1, 1) + dt.timedelta(seconds=subscript * length)).strftime("%Y-%m-%d %H:%M:%S")
    except OverflowError:
        return f"part {subscript}"


def format_duration(seconds: int) -> str:
    """A duration in its largest whole unit, e.g. ``2 HOURS``, ``90 SECONDS``."""
    for unit, size in (("DAYS", 86400), ("HOURS", 3600), ("MINUTES", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size} {unit if seconds // size > 1 else unit[:-1]}"
    return f"{seconds} SECONDS"


def subscript_sql(column: str, length: int) -> str:
    """Spark SQL for the part subscript of a timestamp column (exact integer arithmetic)."""
    micros = length * 1_000_000
    us = f"unix_micros({column})"
    return f"(({us} - pmod({us}, {micros})) div {micros})"
