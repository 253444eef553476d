"""An independent pandas oracle for sliding-window aggregate views (no ViewDF logic)."""

from __future__ import annotations

import math
import statistics
from decimal import ROUND_HALF_UP, Decimal, localcontext

import pandas as pd

from oracles import rows

EPSILON = 2.0 ** -52            # the gap between 1.0 and the next double (twice the unit roundoff)
AGGREGATE_COLUMNS = ["total", "n", "nn", "mean", "peak", "low", "nd", "pa", "med"]


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


def aggregate(window: pd.DataFrame, keys: list[str], value: str = "loss", mean_scale: int | None = None
              ) -> pd.DataFrame:
    """Per group, with SQL NULL semantics: sum (``total``), count(*) (``n``), count(value) (``nn``), avg
    (``mean``), max (``peak``), min (``low``), count(DISTINCT value) (``nd``), percentile_approx(value, 0.5)
    (``pa``) and median (``med``). Integer and Decimal sums are exact, float sums correctly rounded
    (math.fsum); with ``mean_scale`` a Decimal avg is rounded half up to that scale, as Spark's is."""
    def one(group: pd.DataFrame) -> dict:
        values = [v for v in group[value] if not pd.isna(v)]
        ordered = sorted(values)
        return {"total": _sum(values), "n": len(group), "nn": len(values), "mean": _mean(values, mean_scale),
                "peak": max(values, default=None), "low": min(values, default=None), "nd": len(set(values)),
                "pa": ordered[(len(values) + 1) // 2 - 1] if values else None,
                "med": statistics.median(values) if values else None}
    if not keys:
        return pd.DataFrame([one(window)])
    if window.empty:
        return pd.DataFrame(columns=keys + AGGREGATE_COLUMNS)
    found = [dict(zip(keys, key if isinstance(key, tuple) else (key,))) | one(group)
             for key, group in window.groupby(keys, dropna=False)]
    return pd.DataFrame(found)


def _sum(values: list):
    if not values:
        return None
    return math.fsum(values) if any(isinstance(v, float) for v in values) else sum(values)


def _mean(values: list, scale: int | None):
    if not values:
        return None
    if scale is None:
        return _sum(values) / len(values)
    with localcontext() as context:
        context.prec = 80
        return (_sum(values) / len(values)).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)


def sum_drift_bound(values: list[float]) -> float:
    """How far a floating-point running sum may be from the exact sum when every one of ``values`` was
    added and subtracted at most once since the sum was last computed from scratch: any summation of N
    terms errs by at most (N-1)·u·Σ|term| (u = EPSILON/2, Higham), with N ≤ 2·len(values) terms of
    absolute sum ≤ 2·Σ|v|; one more EPSILON·Σ|v| covers the oracle's own rounding and second-order terms."""
    return (2 * len(values) + 3) * EPSILON * math.fsum(abs(v) for v in values)


def close(left: list[tuple], right: list[tuple], tolerance: float = 1e-9) -> bool:
    """Equal rows, floats equal within ``tolerance`` relative to their size (NULL equals NaN)."""
    bounds = [tuple(tolerance * max(1.0, abs(x), abs(y)) if _number(x) and _number(y) else 0.0
                    for x, y in zip(a, b)) for a, b in zip(left, right)]
    return within(left, right, bounds)


def within(left: list[tuple], right: list[tuple], bounds: list[tuple]) -> bool:
    """Equal rows, except that each float may differ by the absolute bound at its place in ``bounds``."""
    if len(left) != len(right) or len(right) != len(bounds):
        return False
    return all(_equal(x, y, bound) for a, b, row in zip(left, right, bounds) for x, y, bound in zip(a, b, row))


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not _null(value)


def _null(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _equal(x, y, bound: float) -> bool:
    if _null(x) or _null(y):
        return _null(x) and _null(y)
    if isinstance(x, float) or isinstance(y, float):
        return abs(x - y) <= bound
    return x == y


__all__ = ["window_parts", "aggregate", "close", "within", "sum_drift_bound", "rows", "EPSILON",
           "AGGREGATE_COLUMNS"]
