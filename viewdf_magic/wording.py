"""Counting words in messages: ``1 row``, ``2 rows``, ``1,024 parts``."""

from __future__ import annotations


def plural(count: int, noun: str) -> str:
    """``count`` and ``noun``, with an ``s`` unless it is one, thousands grouped."""
    return f"{count:,} {agreeing(count, noun, noun + 's')}"


def agreeing(count: int, one: str, many: str) -> str:
    """The word that agrees with ``count``: ``one`` for 1, else ``many`` (``has``/``have``)."""
    return one if count == 1 else many
