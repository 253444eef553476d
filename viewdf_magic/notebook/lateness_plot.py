"""What lateness cost, drawn: each late arrival's distance behind the stream's newest part against its
arrival time, and the seconds the views reading the stream spent recomputing parts after late data
(``SHOW LATENESS`` gives the same counts as a table)."""

from __future__ import annotations

import io

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..warehouse import Warehouse


class LatenessFigure(Figure):
    """A matplotlib figure that a notebook shows as a PNG, whichever matplotlib backend is active."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=100)
        return buffer.getvalue()


def lateness_figure(warehouse: Warehouse, stream: str) -> Figure:
    """Two panels: late arrivals (parts behind against arrival time, each dot's area its rows), and each
    view's repair seconds, labelled with its parts recomputed and changed."""
    arrivals = warehouse.reads.arrivals(stream)
    arrivals = arrivals[arrivals["parts_behind"].notna()]
    repairs = warehouse.reads.repairs(stream).iloc[::-1]      # listed bottom to top: the first name on top
    figure = LatenessFigure(figsize=(10, 3.4))
    left, right = figure.subplots(1, 2)
    if len(arrivals):
        left.scatter(arrivals["arrived"], arrivals["parts_behind"], s=20 + 30 * arrivals["rows"], alpha=0.7)
        left.set_ylim(-0.5, arrivals["parts_behind"].max() + 0.5)
    else:
        left.text(0.5, 0.5, "no late rows", ha="center", va="center", transform=left.transAxes)
    left.set(title=f"late rows into {stream}", xlabel="arrived (UTC)", ylabel="parts behind the newest")
    left.yaxis.set_major_locator(MaxNLocator(integer=True))
    left.tick_params(axis="x", labelrotation=30, labelsize=7)
    bars = right.barh(repairs["view"], repairs["seconds"])
    right.bar_label(bars, labels=[f"{r} parts, {c} changed" for r, c in zip(repairs["recomputed"], repairs["changed"])],
                    fontsize=7, padding=2)
    right.set_xlim(0, 1.45 * max(repairs["seconds"].max() if len(repairs) else 0, 0.1))    # room for the labels
    right.set(title="repairs after late data", xlabel="seconds")
    figure.tight_layout()
    return figure
