"""An independent pandas oracle for sliding-window aggregate views (no ViewDF logic)."""

from __future__ import annotations

import math

import pandas as pd

from oracles import rows


def window_parts(stream: pd.DataFrame, length: int, width: int, slide: int, first_part: int | None = None,
                 newest_part: int | None = None):
    """(view part start, window rows) for every complete view part: ``width`` and ``slide`` in seconds."""
    parts = (pd.to_datetime(stream["ts"]).astype("int64") // 10**9) // length
    first = int(parts.min()) if first_part is None else first_part
    newest = int(parts.max()) if newest_part is None else newest_part
    W, r = width // length, slide // length
    for j in range(first * length // slide, 10**12):
        b = (j + 1) * r - 1
        if b > newest:
            break
        yield pd.Timestamp(j * slide, unit="s"), stream[(parts >= b - W + 1) & (parts <= b)]


def aggregate(window: pd.DataFrame, keys: list[str], value: str = "loss") -> pd.DataFrame:
    """sum, count(*), count(value), avg, max, min per group with SQL NULL semantics."""
    def one(group: pd.DataFrame) -> dict:
        values = group[value].dropna()
        return {"total": values.sum() if len(values) else None, "n": len(group), "nn": len(values),
                "mean": values.mean() if len(values) else None, "peak": values.max() if len(values) else None,
                "low": values.min() if len(values) else None}
    if not keys:
        return pd.DataFrame([one(window)])
    if window.empty:
        return pd.DataFrame(columns=keys + ["total", "n", "nn", "mean", "peak", "low"])
    found = [dict(zip(keys, key if isinstance(key, tuple) else (key,))) | one(group)
             for key, group in window.groupby(keys, dropna=False)]
    return pd.DataFrame(found)


def close(left: list[tuple], right: list[tuple], tolerance: float = 1e-9) -> bool:
    if len(left) != len(right):
        return False
    for a, b in zip(left, right):
        for x, y in zip(a, b):
            if isinstance(x, float) or isinstance(y, float):
                if x is None or y is None or (isinstance(x, float) and math.isnan(x)):
                    if not (x is None or (isinstance(x, float) and math.isnan(x))) or \
                            not (y is None or (isinstance(y, float) and math.isnan(y))):
                        return False
                elif abs(x - y) > tolerance * max(1.0, abs(x), abs(y)):
                    return False
            elif x != y:
                return False
    return True


__all__ = ["window_parts", "aggregate", "close", "rows"]
