"""Counting words in messages: ``1 row``, ``2 rows``, ``1,024 parts``."""

from __future__ import annotations


def plural(count: int, noun: str) -> str:
    """``count`` and ``noun``, with an ``s`` unless it is one, thousands grouped."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"
