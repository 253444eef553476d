"""SHOW, DESCRIBE and the part-metadata catalog view, as pandas tables."""

from __future__ import annotations

from typing import Mapping

import pandas as pd

from ..catalog.catalog import Catalog
from ..catalog.model import ObjectDef, PartMeta
from ..maintainer.maintainer import Lag
from ..maintainer.timeline import Timeline
from ..timeparts import part_start

PART_COLUMNS = ["name", "part", "part_timestamp", "rows", "compute_seconds", "how", "lineage",
                "last_updated"]


def _lineage_text(meta: PartMeta) -> str:
    return ", ".join(r.text for r in meta.lineage)


def _stamp(epoch: float) -> pd.Timestamp:
    return pd.Timestamp(epoch, unit="s").floor("us")     # Spark timestamps have microsecond precision


def part_rows(catalog: Catalog, definition: ObjectDef) -> list[dict]:
    """One row per part of a stream or view, sealed empty stream parts included."""
    state = catalog.state(definition.name)
    length = definition.length
    rows = []
    for meta in state.parts.values():
        rows.append({"name": definition.name, "part": meta.subscript,
                     "part_timestamp": part_start(meta.subscript, length), "rows": meta.rows,
                     "compute_seconds": meta.seconds, "how": meta.how, "lineage": _lineage_text(meta),
                     "last_updated": _stamp(meta.updated)})
    for first, last, when in state.sealed:
        for subscript in range(first, last + 1):
            if subscript in state.parts:      # sealed empty, then late rows arrived
                continue
            rows.append({"name": definition.name, "part": subscript,
                         "part_timestamp": part_start(subscript, length), "rows": 0, "compute_seconds": 0.0,
                         "how": "sealed", "lineage": "", "last_updated": _stamp(when)})
    return sorted(rows, key=lambda row: row["part"])


def parts_table(catalog: Catalog, definition: ObjectDef | None = None) -> pd.DataFrame:
    """SHOW PARTS for one object, or the ``viewdf_parts`` catalog view for all of them."""
    objects = [definition] if definition else [d for d in catalog.objects.values() if d.partitioned]
    rows = [row for d in objects for row in part_rows(catalog, d)]
    frame = pd.DataFrame(rows, columns=PART_COLUMNS)
    return frame.astype({"part": "int64", "rows": "int64", "compute_seconds": "float64"})


def streams_table(catalog: Catalog) -> pd.DataFrame:
    rows = []
    for d in catalog.objects.values():
        if d.kind != "stream":
            continue
        state = catalog.state(d.name)
        rows.append({"name": d.name, "partition_length": d.partition_length, "timestamp": d.timestamp_column,
                     "parts": 0 if state.newest is None or state.first is None else state.newest - state.first + 1,
                     "rows": sum(p.rows for p in state.parts.values()),
                     "first_part": None if state.first is None else part_start(state.first, d.length),
                     "newest_part": None if state.newest is None else part_start(state.newest, d.length)})
    return pd.DataFrame(rows, columns=["name", "partition_length", "timestamp", "parts", "rows", "first_part",
                                       "newest_part"])


LATENESS_COLUMNS = ["stream", "parts", "rows", "on_time_rows", "late_rows", "late_arrivals", "late_rows_by_parts_behind",
                    "most_parts_behind", "refused_rows", "diverted_rows", "diverted_into", "views",
                    "view_parts_recomputed", "changed", "unchanged", "repair_seconds"]


def arrivals_table(catalog: Catalog, stream: ObjectDef) -> pd.DataFrame:
    """One row per arrival of rows into a part of ``stream``, in arrival order: ``arrived`` (UTC), ``part``,
    ``rows`` and ``parts_behind`` (how far behind the newest part it was, 0: into the newest part itself;
    None: on time, into a new part)."""
    rows = [{"arrived": pd.Timestamp(arrived, unit="s"), "part": subscript, "rows": n, "parts_behind": behind}
            for subscript, part in catalog.state(stream.name).parts.items()
            for arrived, n, behind in zip(part.arrivals, *part.arrival_counts())]
    return pd.DataFrame(rows, columns=["arrived", "part", "rows", "parts_behind"]).sort_values(
        ["arrived", "part"], ignore_index=True)


def repairs_table(catalog: Catalog, stream: ObjectDef) -> pd.DataFrame:
    """Per view reading ``stream`` (directly or through views), by name: its parts recomputed after late data
    or a change, how many of those changed, and the seconds the recomputations took."""
    views = sorted((v for v in catalog.downstream(stream.name) if v.kind == "view"), key=lambda v: v.name.lower())
    rows = []
    for view in views:
        parts = catalog.state(view.name).parts.values()
        rows.append({"view": view.name, "recomputed": sum(p.repairs for p in parts),
                     "changed": sum(p.repairs_changed for p in parts), "seconds": sum(p.repair_seconds for p in parts)})
    return pd.DataFrame(rows, columns=["view", "recomputed", "changed", "seconds"]).astype({"seconds": "float64"})


def lateness_table(catalog: Catalog, stream: ObjectDef | None = None) -> pd.DataFrame:
    """SHOW LATENESS: per stream (or for ``stream``), its rows on time and late, the late rows by how many
    parts they were behind the stream's newest part when they arrived (0: into the newest part itself), and
    the recomputations of the parts of the views that read it (directly or through views), changed or not,
    with their seconds; the rows later than ALLOWED LATENESS that were refused (their batches wrote nothing)
    or went to the stream's divert table (ON LATE DIVERT INTO)."""
    streams = [stream] if stream else [d for d in catalog.objects.values() if d.kind == "stream"]
    rows = []
    for d in streams:
        state = catalog.state(d.name)
        arrivals, repairs = arrivals_table(catalog, d), repairs_table(catalog, d)
        late = arrivals[arrivals["parts_behind"].notna()]
        behind = {int(k): int(n) for k, n in late.groupby("parts_behind")["rows"].sum().items()}
        recomputed, changed = int(repairs["recomputed"].sum()), int(repairs["changed"].sum())
        rows.append({"stream": d.name, "parts": len(state.parts), "rows": sum(p.rows for p in state.parts.values()),
                     "on_time_rows": int(arrivals["rows"].sum()) - int(late["rows"].sum()),
                     "late_rows": sum(behind.values()), "late_arrivals": len(late),
                     "late_rows_by_parts_behind": dict(sorted(behind.items())),
                     "most_parts_behind": max(behind, default=None), "refused_rows": state.refused_rows,
                     "diverted_rows": state.diverted_rows,
                     "diverted_into": state.late_into, "views": ", ".join(repairs["view"]),
                     "view_parts_recomputed": recomputed, "changed": changed, "unchanged": recomputed - changed,
                     "repair_seconds": float(repairs["seconds"].sum())})
    return pd.DataFrame(rows, columns=LATENESS_COLUMNS).astype({"repair_seconds": "float64"})


def views_table(catalog: Catalog, timeline: Timeline, lags: Mapping[str, Lag]) -> pd.DataFrame:
    """SHOW VIEWS: one row per view; ``state`` is ``up to date`` or why it lags (``Maintainer.lags``)."""
    rows = []
    for d in catalog.views():
        state = catalog.state(d.name)
        newest, next_part = state.newest_part(), timeline.next_part(d)
        lag = lags.get(d.key)
        rows.append({"name": d.name, "partition_length": d.partition_length, "sources": ", ".join(d.sources),
                     "parts": len(state.parts), "rows": sum(p.rows for p in state.parts.values()),
                     "newest_part": None if newest is None else part_start(newest, d.length),
                     "next_part": None if next_part is None else part_start(next_part, d.length),
                     "state": "up to date" if lag is None else lag.state})
    return pd.DataFrame(rows, columns=["name", "partition_length", "sources", "parts", "rows", "newest_part",
                                       "next_part", "state"])


def tables_table(catalog: Catalog) -> pd.DataFrame:
    rows = [{"name": d.name, "rows": catalog.state(d.name).table_rows,
             "columns": ", ".join(d.schema.fieldNames()),
             "last_updated": _stamp(catalog.state(d.name).table_updated) if catalog.state(d.name).table_folders
             else None}
            for d in catalog.objects.values() if d.kind == "table"]
    return pd.DataFrame(rows, columns=["name", "rows", "columns", "last_updated"])


def describe_table(definition: ObjectDef) -> pd.DataFrame:
    """The columns of an object (PART_TIMESTAMP shown for partitioned ones)."""
    rows = [{"column": f.name, "type": f.dataType.simpleString()} for f in definition.schema.fields]
    if definition.partitioned:
        rows.append({"column": "PART_TIMESTAMP", "type": "timestamp"})
    return pd.DataFrame(rows, columns=["column", "type"])


def describe_text(definition: ObjectDef) -> str:
    header = f"{definition.kind} {definition.name}"
    if definition.partitioned:
        header += f", PARTITION LENGTH {definition.partition_length}"
    if definition.kind == "stream":
        header += f", TIMESTAMP {definition.timestamp_column}"
    if definition.sources:
        header += f", reads {', '.join(definition.sources)}"
    return f"{header}\n\n{definition.definition.strip()}"
