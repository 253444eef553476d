"""Words in messages: counts (``1 row``, ``2 rows``, ``1,024 parts``) and spans of parts."""

from __future__ import annotations

from typing import Iterable

import pandas as pd


def plural(count: int, noun: str) -> str:
    """``count`` and ``noun``, with an ``s`` unless it is one, thousands grouped."""
    return f"{count:,} {agreeing(count, noun, noun + 's')}"


def agreeing(count: int, one: str, many: str) -> str:
    """The word that agrees with ``count``: ``one`` for 1, else ``many`` (``has``/``have``)."""
    return one if count == 1 else many


def named_spans(parts: Iterable[tuple[str, pd.Timestamp]]) -> str:
    """Parts (name and start) named by object and time span, in order of first appearance, e.g.
    ``Helper[2015-01-01 10:00:00 .. 10:11:00], View2[2015-01-01 10:03:00]``."""
    spans: dict[str, list[pd.Timestamp]] = {}
    for name, stamp in parts:
        spans.setdefault(name, []).append(stamp)
    return ", ".join(f"{name}[{_span(min(stamps), max(stamps))}]" for name, stamps in spans.items())


def _span(first: pd.Timestamp, last: pd.Timestamp) -> str:
    if first == last:
        return f"{first:%Y-%m-%d %H:%M:%S}"
    tail = "%H:%M:%S" if first.date() == last.date() else "%Y-%m-%d %H:%M:%S"
    return f"{first:%Y-%m-%d %H:%M:%S} .. {last.strftime(tail)}"
