"""The partition-lineage viewer: streams and views against time, one cell per part.

Selecting a part highlights every part it was computed from, transitively, as the catalog
recorded when each part was computed (never re-derived from the definitions), and shows how the
part came to be and a preview of its rows. The grid shows a window of columns over the time
range (scroll with the slider, zoom with the buttons), so hundreds of parts stay light.
"""

from __future__ import annotations

import html
import math

import ipywidgets as widgets
import pandas as pd

from ..errors import ViewDFError
from ..timeparts import format_part
from ..warehouse import PART_TIMESTAMP, LineageRange, ObjectDef, PartMeta, Warehouse
from ..wording import plural

WIDTHS = (12, 24, 48, 96)          # zoom levels: columns shown
PREVIEW_ROWS = 20
COLORS = {"selected": "#ff7f0e", "upstream": "#ffd54f", "stream": "#9ecae1", "view": "#a1d99b",
          "empty": "#e0e0e0", "none": "#ffffff"}


def ranges(name: str, subscripts: set[int]) -> list[LineageRange]:
    """``subscripts`` as runs of consecutive parts."""
    runs: list[LineageRange] = []
    for s in sorted(subscripts):
        if runs and runs[-1].last == s - 1:
            runs[-1] = LineageRange(name, runs[-1].first, s)
        else:
            runs.append(LineageRange(name, s, s))
    return runs


class LineageViewer:
    """A grid of parts (rows: streams and views; columns: time) with part details and previews.

    With ``view``, the rows are that view and everything it reads, transitively; else every
    stream and view.
    """

    def __init__(self, warehouse: Warehouse, view: str | None = None, width: int = 48) -> None:
        self.warehouse = warehouse
        self.view = warehouse.reads.definition(view) if view is not None else None
        if view is not None and (self.view is None or self.view.kind != "view"):
            raise ViewDFError(f"no view named '{view}'")
        self.objects = self._objects()
        self.base = math.gcd(*(d.length for d in self.objects))      # seconds per column
        self.selected: tuple[str, int] | None = None
        self.highlighted: dict[str, set[int]] = {}
        self.preview_rows: pd.DataFrame | None = None
        self._width = min(WIDTHS, key=lambda w: abs(w - width))
        self._build()
        parts = self.warehouse.reads.state(self.view.name).parts if self.view is not None else {}
        if parts:
            assert self.view is not None      # only a view has parts here
            self.select(self.view.name, max(parts))
        else:
            self.redraw()

    # -- selection -----------------------------------------------------------------------
    def select(self, name: str, subscript: int) -> None:
        """Select part ``subscript`` of ``name``: highlight its lineage, describe it, preview its rows."""
        definition = self.warehouse.reads.definition(name)
        assert definition is not None      # a stream or view the viewer shows
        self.selected = (definition.name, subscript)
        self.highlighted = self.warehouse.reads.upstream_parts(definition.name, subscript)
        stamp = format_part(subscript, definition.length)
        self.preview_rows = self.warehouse.read_part(definition.name, stamp).drop(columns=PART_TIMESTAMP)
        self.details.value = self._details(definition, subscript)
        shown = self.preview_rows.head(PREVIEW_ROWS).to_html(index=False, border=0, classes="dataframe")
        self.preview.value = f"<div><b>Rows</b> (first {PREVIEW_ROWS})</div>{shown}"
        self._scroll_to(subscript * definition.length // self.base)
        self.redraw()

    def button(self, name: str, subscript: int) -> widgets.Button:
        """The grid cell of a part (its first column), scrolling it into view."""
        definition = self.warehouse.reads.definition(name)
        assert definition is not None      # a stream or view the viewer shows
        column = subscript * definition.length // self.base
        self._scroll_to(column)
        return self._cells[self.objects.index(definition)][column - self.scroll.value]

    # -- layout --------------------------------------------------------------------------
    def _objects(self) -> list[ObjectDef]:
        reads = self.warehouse.reads
        if self.view is None:
            chosen = reads.partitioned()
        else:
            chosen = [self.view]
            for item in chosen:
                chosen.extend(s for s in map(reads.definition, item.sources)
                              if s is not None and s.partitioned and s not in chosen)
        if not chosen:
            raise ViewDFError("the warehouse has no streams or views to show")
        return sorted(chosen, key=lambda d: (d.kind != "stream", d.created))

    def _span(self) -> tuple[int, int]:
        """The first and last column holding a part of any object shown."""
        ends = []
        for d in self.objects:
            state = self.warehouse.reads.state(d.name)
            subscripts = [s for s in (state.first, state.newest) if s is not None] + list(state.parts)
            if subscripts:
                factor = d.length // self.base
                ends += [min(subscripts) * factor, (max(subscripts) + 1) * factor - 1]
        return (min(ends), max(ends)) if ends else (0, 0)

    def _build(self) -> None:
        self.scroll = widgets.IntSlider(description="from", continuous_update=False, readout=False,
                                        layout=widgets.Layout(width="420px"))
        self.range_label = widgets.HTML()
        zoom_in = widgets.Button(description="+", tooltip="zoom in", layout=widgets.Layout(width="32px"))
        zoom_out = widgets.Button(description="−", tooltip="zoom out", layout=widgets.Layout(width="32px"))
        refresh = widgets.Button(description="Refresh", icon="refresh", layout=widgets.Layout(width="100px"))
        zoom_in.on_click(lambda _: self._zoom(-1))
        zoom_out.on_click(lambda _: self._zoom(+1))
        refresh.on_click(lambda _: self.redraw())
        self.scroll.observe(lambda _: self.redraw(), names="value")
        self.grid = widgets.GridBox()
        self.details = widgets.HTML("<i>Select a part.</i>")
        self.preview = widgets.HTML()
        self.widget = widgets.VBox([widgets.HBox([self.scroll, zoom_out, zoom_in, refresh, self.range_label]),
                                    self.grid, widgets.HBox([self.details, self.preview])])
        self._lay_out()

    def _lay_out(self) -> None:
        """(Re)create the cell buttons for the current zoom."""
        cell = widgets.Layout(width="14px", height="16px", padding="0", margin="0")
        self._cells = [[widgets.Button(layout=cell) for _ in range(self._width)] for _ in self.objects]
        children = []
        for row, definition in zip(self._cells, self.objects):
            children.append(widgets.Label(definition.name, layout=widgets.Layout(width="140px")))
            for offset, button in enumerate(row):
                button.on_click(lambda _, d=definition, k=offset: self._clicked(d, k))
                children.append(button)
        self.grid.layout = widgets.Layout(grid_template_columns=f"140px repeat({self._width}, 14px)",
                                          grid_gap="1px")
        self.grid.children = children

    def _zoom(self, direction: int) -> None:
        index = WIDTHS.index(self._width) + direction
        if 0 <= index < len(WIDTHS):
            middle = self.scroll.value + self._width // 2
            self._width = WIDTHS[index]
            self._lay_out()
            self._scroll_to(middle)
            self.redraw()

    def _scroll_to(self, column: int) -> None:
        """Make ``column`` visible, keeping the view where it is when it already is."""
        self._set_scroll_range()
        if not self.scroll.value <= column < self.scroll.value + self._width:
            self.scroll.value = max(self.scroll.min, min(self.scroll.max, column - self._width // 2))

    def _set_scroll_range(self) -> None:
        first, last = self._span()
        last = max(first, last - self._width + 1)
        if self.scroll.min > last:
            self.scroll.min = first
            self.scroll.max = last
        else:
            self.scroll.max = last
            self.scroll.min = first

    def _clicked(self, definition: ObjectDef, offset: int) -> None:
        column = self.scroll.value + offset
        self.select(definition.name, column * self.base // definition.partition_length)

    # -- drawing -------------------------------------------------------------------------
    def redraw(self) -> None:
        """Colour the visible cells from the catalog as it is now."""
        self._set_scroll_range()
        start = self.scroll.value
        for row, definition in zip(self._cells, self.objects):
            for offset, button in enumerate(row):
                subscript = (start + offset) * self.base // definition.partition_length
                kind, tip = self._cell(definition, subscript)
                button.style.button_color = COLORS[kind]
                button.tooltip = tip
        end = start + self._width - 1
        self.range_label.value = (f"{format_part(start, self.base)} .. {format_part(end, self.base)} "
                                  f"({self._width} × {self.base} s)")

    def _cell(self, definition: ObjectDef, subscript: int) -> tuple[str, str]:
        """The colour key and tooltip of one part."""
        state = self.warehouse.reads.state(definition.name)
        meta = state.parts.get(subscript)
        label = f"{definition.name}[{subscript}] {format_part(subscript, definition.length)}"
        if self.selected == (definition.name, subscript):
            kind = "selected"
        elif subscript in self.highlighted.get(definition.name, ()):
            kind = "upstream"
        elif meta is not None and meta.rows:
            kind = definition.kind
        elif meta is not None or (definition.kind == "stream" and state.first is not None and state.newest is not None
                                  and state.first <= subscript <= state.newest):
            kind = "empty"
        else:
            return "none", f"{label}: no part"
        rows = meta.rows if meta is not None else 0
        return kind, f"{label}: {plural(rows, 'row')}"

    def _details(self, definition: ObjectDef, subscript: int) -> str:
        meta = self.warehouse.reads.state(definition.name).parts.get(subscript)
        reads = [r for name, parts in self.highlighted.items() for r in ranges(name, parts)]
        facts = {
            "part": f"{definition.name}[{subscript}] ({format_part(subscript, definition.length)})",
            "how": meta.how if meta is not None else "sealed",
            "rows": meta.rows if meta is not None else 0,
            "compute seconds": f"{meta.seconds:.3f}" if meta is not None else "-",
            "last updated": (f"{pd.Timestamp(meta.updated, unit='s'):%Y-%m-%d %H:%M:%S} UTC"
                             if meta is not None else "-"),
            "recomputed after late data": _late_data_text(meta),
            "read directly": ", ".join(r.text for r in meta.lineage) if meta is not None and meta.lineage else "-",
            "computed from, transitively": ", ".join(r.text for r in reads) or "-",
        }
        table = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"
                        for k, v in facts.items())
        query = html.escape(self.warehouse.reads.producing_query(definition.name, subscript))
        return f"<table>{table}</table><pre>{query}</pre>"

    def _repr_mimebundle_(self, **kwargs) -> dict:
        return self.widget._repr_mimebundle_(**kwargs)


def _late_data_text(meta: PartMeta | None) -> str:
    """A view part's recomputations after late data, or a stream part's late arrivals."""
    if meta is None:
        return "no"
    if meta.repairs:
        return f"yes, {plural(meta.repairs, 'time')}"
    if meta.late_rows:
        arrivals = ", ".join(f"{pd.Timestamp(t, unit='s'):%Y-%m-%d %H:%M:%S}" for t in meta.arrivals)
        return f"it received late rows (batches arrived {arrivals} UTC)"
    return "no"
