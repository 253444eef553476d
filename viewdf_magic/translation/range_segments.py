"""A range step's folded parts, one row each: the CTE shared by the fold-based Helpers (MATCH_RECOGNIZE's and the
pattern Helpers that carry a partition's state across parts)."""

from __future__ import annotations

from collections.abc import Sequence


def segments_sql(key_list: str, fields: Sequence[str], entries: str) -> str:
    """The CTE ``segments``, from ``scanned``: each element of a partition's array ``entries`` (the Helper's row
    before the run first, when it has one, then each part its fold produced, in part order), as a row with its
    ``fields`` and ``next``, the part of the element after it (the run's last part + 1 after the last element).
    The array is exploded once: Spark inlines a CTE at every reference, and would run the fold again for each."""
    values = "".join(f"e.{field}, " for field in fields)
    return (f", segments AS (SELECT {key_list}{values}coalesce(try_element_at(es, pos + 2).p, "
            f"CAST(__vdf_last + 1 AS bigint)) AS next FROM (SELECT {key_list}{entries} AS es FROM scanned) AS s "
            f"LATERAL VIEW posexplode(es) AS pos, e)")
