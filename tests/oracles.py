"""Independent pandas oracles for the views under test, and helpers to compare engine output with them.

Every oracle here recomputes a view's meaning from the raw input rows with plain pandas,
without ViewDF's incremental UPDATE logic, so a match is evidence the engine is right.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import numpy as np
import pandas as pd

MINUTE = pd.Timedelta(minutes=1)
PAIR = ["src", "dest"]
PATTERN_COLUMNS = ["src", "dest", "ct", "sum_loss"]


# -- normalizing engine output ---------------------------------------------------------------
def rows(frame: pd.DataFrame, columns: list[str]) -> list[tuple]:
    """The rows of ``frame`` as sorted plain-Python tuples of ``columns``."""
    picked = frame[columns].astype(object).where(frame[columns].notna(), None)
    return sorted((tuple(_plain(v) for v in r) for r in picked.itertuples(index=False)), key=_nulls_first)


def _nulls_first(row: tuple) -> tuple:
    return tuple((value is not None, value if value is not None else 0) for value in row)


def rows_by_part(frame: pd.DataFrame, columns: list[str]) -> dict[pd.Timestamp, list[tuple]]:
    """``rows`` of each PART_TIMESTAMP of an engine result (parts without rows are absent)."""
    return {pd.Timestamp(stamp): rows(group, columns) for stamp, group in frame.groupby("PART_TIMESTAMP")}


def _plain(value):
    """numpy scalars as Python ones, so tuples compare and print plainly."""
    if isinstance(value, np.generic):
        return value.item()
    return value


def non_empty(expected: dict) -> dict:
    """Drop the parts of an oracle that have no rows (a query over a view cannot show them)."""
    return {stamp: value for stamp, value in expected.items() if value}


def minutes(first: str | pd.Timestamp, last: str | pd.Timestamp) -> list[pd.Timestamp]:
    return list(pd.date_range(first, last, freq="min"))


# -- oracles -----------------------------------------------------------------------------------
def loss_runs(stream: pd.DataFrame, last_minute: pd.Timestamp | None = None,
              threshold: int = 10) -> dict[pd.Timestamp, list[tuple]]:
    """Helper of the paper's section 2, by definition: for every minute from the stream's first to
    ``last_minute``, the pairs whose measurements were > threshold in every minute of a run of
    consecutive minutes ending at that minute, with the run's length ``ct`` and ``sum_loss``.
    A minute with no measurement for a pair ends its run."""
    stream = stream.assign(minute=pd.to_datetime(stream["ts"]).dt.floor("min"))
    first = stream["minute"].min()
    last = last_minute if last_minute is not None else stream["minute"].max()
    loss = {(r.minute, r.src, r.dest): r.loss for r in stream.itertuples(index=False)}
    pairs = sorted(set(zip(stream["src"], stream["dest"])))
    result: dict[pd.Timestamp, list[tuple]] = {}
    for minute in pd.date_range(first, last, freq="min"):
        found = []
        for src, dest in pairs:
            ct, total, at = 0, 0, minute
            while (at, src, dest) in loss and loss[(at, src, dest)] > threshold:
                ct, total, at = ct + 1, total + loss[(at, src, dest)], at - MINUTE
            if ct:
                found.append((src, dest, ct, total))
        result[minute] = sorted(found)
    return result


def long_runs(runs: dict[pd.Timestamp, list[tuple]], min_ct: int = 4) -> dict[pd.Timestamp, list[tuple]]:
    """View2 of the paper: the runs of at least ``min_ct`` minutes."""
    return {minute: [r for r in found if r[2] >= min_ct] for minute, found in runs.items()}


def hourly_loss(stream: pd.DataFrame) -> dict[pd.Timestamp, list[tuple]]:
    """View3 of the paper's section 4.2: sum of loss per pair and hour."""
    hour = pd.to_datetime(stream["ts"]).dt.floor("h")
    sums = stream.assign(hour=hour).groupby(["hour", *PAIR], as_index=False)["loss"].sum()
    return {pd.Timestamp(h): rows(g, [*PAIR, "loss"]) for h, g in sums.groupby("hour")}


def minute_join(left: pd.DataFrame, right: pd.DataFrame, on: list[str],
                columns: list[str]) -> dict[pd.Timestamp, list[tuple]]:
    """Band join of the paper's section 4.2: rows of two streams that agree on ``on`` within a minute."""
    left = left.assign(minute=pd.to_datetime(left["ts"]).dt.floor("min"))
    right = right.assign(minute=pd.to_datetime(right["nts"]).dt.floor("min"))
    joined = left.merge(right, on=["minute", *on])
    return {pd.Timestamp(m): rows(g, columns) for m, g in joined.groupby("minute")}


def running_region_totals(stream: pd.DataFrame, regions: pd.DataFrame,
                          minutes_: list[pd.Timestamp]) -> dict[pd.Timestamp, list[tuple]]:
    """Total loss per region from the stream's start through each minute; every region listed."""
    stream = stream.assign(minute=pd.to_datetime(stream["ts"]).dt.floor("min")).merge(regions, on="src")
    result = {}
    for minute in minutes_:
        upto = stream[stream["minute"] <= minute].groupby("region")["loss"].sum()
        result[minute] = sorted((region, int(upto.get(region, 0))) for region in sorted(set(regions["region"])))
    return result


def cumulative_totals(stream: pd.DataFrame, minute: pd.Timestamp) -> list[tuple]:
    """Total loss per src over every row up to the end of ``minute``."""
    stream = stream[pd.to_datetime(stream["ts"]).dt.floor("min") <= minute]
    return sorted((src, int(total)) for src, total in stream.groupby("src")["loss"].sum().items())


def window_sums(stream: pd.DataFrame, width: int, minutes_: list[pd.Timestamp]) -> dict[pd.Timestamp, list[tuple]]:
    """Sum of loss per src over the ``width`` minutes ending at each minute."""
    stamps = pd.to_datetime(stream["ts"]).dt.floor("min")
    result = {}
    for minute in minutes_:
        window = stream[(stamps > minute - width * MINUTE) & (stamps <= minute)]
        result[minute] = sorted((src, int(total)) for src, total in window.groupby("src")["loss"].sum().items())
    return result


# -- loss streams ------------------------------------------------------------------------------
def loss_rows(start: str, losses: list[int | None], src: str = "10.0.0.1", dest: str = "10.0.0.2",
              second: int = 0) -> pd.DataFrame:
    """One measurement per minute from ``start``; None leaves that minute without one."""
    stamps = pd.date_range(start, periods=len(losses), freq="min") + pd.Timedelta(seconds=second)
    frame = pd.DataFrame({"ts": stamps, "src": src, "dest": dest, "loss": losses})
    return frame.dropna(subset=["loss"]).astype({"loss": "int32"}).reset_index(drop=True)


# -- side effects ------------------------------------------------------------------------------
def local_root(warehouse) -> str:
    """The warehouse folder on the local disk."""
    root = warehouse.path
    return root[len("file:"):] if root.startswith("file:") else root


def data_folders(warehouse) -> set[str]:
    """Every folder below the warehouse's ``data/``, relative to the warehouse root."""
    root = local_root(warehouse)
    found = set()
    for folder, _, _ in os.walk(os.path.join(root, "data")):
        found.add(os.path.relpath(folder, root))
    return found


@contextmanager
def nothing_written(warehouse):
    """Assert the block neither commits a catalog version nor leaves a folder under ``data/``."""
    version, folders = warehouse.catalog.version, data_folders(warehouse)
    yield
    assert warehouse.catalog.version == version, "the catalog changed"
    assert data_folders(warehouse) == folders, "folders were written under data/"
