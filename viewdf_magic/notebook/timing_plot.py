"""Incremental against naive maintenance time per batch and cumulative, with the parts each read.

Drawn with matplotlib: on an ipympl canvas when ipympl is installed, else as a PNG redrawn into
an ``ipywidgets.Image``. Works on a replay's live timings or on any timings DataFrame. Its display also
carries a static PNG of the current drawing, which a saved notebook shows where widgets do not render
(GitHub, nbviewer, a notebook saved without widget state).
"""

from __future__ import annotations

import base64
import io
import threading
from pathlib import Path

import ipywidgets as widgets
import pandas as pd
from matplotlib.figure import Figure

TIMING_COLUMNS = ["batch", "view", "part", "part_timestamp", "rows", "incremental_seconds",
                  "incremental_parts_read", "naive_seconds", "naive_parts_read", "equal", "late_rows"]
LATE_MARK = "batch with late rows"
METHODS = ("incremental", "naive")
PANELS = (("seconds per batch", "{}_seconds", False), ("cumulative seconds", "{}_seconds", True),
          ("parts read per batch", "{}_parts_read", False))


def empty_timings() -> pd.DataFrame:
    """A timings table with no rows."""
    return pd.DataFrame(columns=TIMING_COLUMNS)


def _ipympl_canvas(figure: Figure) -> widgets.DOMWidget | None:
    """An interactive ipympl canvas showing ``figure``, or None without ipympl."""
    try:
        from ipympl.backend_nbagg import Canvas, FigureManager
    except ImportError:
        return None
    canvas = Canvas(figure)
    FigureManager(canvas, 0)
    return canvas


class TimingPlot:
    """Three panels over the batch index: seconds per batch, cumulative seconds and parts read,
    one line per view and method (incremental, naive); a shaded band marks each batch that carried late
    rows (its repairs are in its seconds)."""

    def __init__(self, timings: pd.DataFrame | None = None) -> None:
        self.figure = Figure(figsize=(8, 6.5), layout="constrained")
        self.axes = self.figure.subplots(len(PANELS), 1, sharex=True)
        self._lock = threading.Lock()        # a replay redraws from its worker thread
        canvas = _ipympl_canvas(self.figure)
        self._image = None if canvas is not None else widgets.Image(format="png")
        self.widget: widgets.DOMWidget = canvas if canvas is not None else self._image
        self.late_batches: list[int] = []       # the batches marked as carrying late rows
        self.update(empty_timings() if timings is None else timings)

    def update(self, timings: pd.DataFrame) -> None:
        """Redraw from ``timings`` (columns as in ``TIMING_COLUMNS``)."""
        with self._lock:
            late = timings["late_rows"].fillna(0).astype(int) > 0 if "late_rows" in timings else None
            self.late_batches = [] if late is None else sorted(set(timings.loc[late, "batch"].astype(int)))
            for axis, (title, column, cumulative) in zip(self.axes, PANELS):
                axis.clear()
                axis.set_title(title, fontsize=10, loc="left")
                for k, batch in enumerate(self.late_batches):
                    axis.axvspan(batch - 0.4, batch + 0.4, color="0.85", zorder=0, label=LATE_MARK if k == 0 else None)
                for color, (view, rows) in enumerate(timings.groupby("view", sort=False)):
                    for method in METHODS:
                        values = rows[column.format(method)].astype(float)
                        if values.isna().all():
                            continue
                        axis.plot(rows["batch"].astype(int), values.cumsum() if cumulative else values,
                                  marker="o", markersize=3, label=f"{view} {method}", color=f"C{color}",
                                  linestyle="-" if method == "incremental" else "--")
                if axis.lines or axis.patches:
                    axis.legend(fontsize=8, loc="upper left")
            self.axes[-1].set_xlabel("batch")
            if self._image is None:
                self.widget.draw_idle()
            else:
                self._image.value = self._png()

    def series(self) -> dict[tuple[str, str], tuple[list[int], list[float]]]:
        """What is drawn: ``(panel title, line label) -> (batches, values)``."""
        with self._lock:
            return {(axis.get_title(loc="left"), line.get_label()):
                    (list(line.get_xdata()), list(line.get_ydata()))
                    for axis in self.axes for line in axis.lines}

    def save(self, path: str | Path) -> None:
        """Write the plot to ``path``; the format follows the suffix (png, svg, pdf)."""
        with self._lock:
            self.figure.savefig(path)

    def _png(self) -> bytes:
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=80)
        return buffer.getvalue()

    def _repr_mimebundle_(self, **kwargs) -> dict:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        with self._lock:
            bundle["image/png"] = base64.b64encode(self._png()).decode("ascii")
        return bundle
