"""Draw a window view's helper chain as SVG (Graphviz when ``dot`` is installed, else our own drawing),
and EXPLAIN's table of the strategy each aggregate gets and why.

The chain: the source stream, the pre-aggregate (``__pre``), the chunked max/min (``__chunks``), the
running sums (``__sum``) and the final view, with an arrow for each thing a view reads (a self arrow
for its own previous part). Both drawings mark views with class ``node`` and arrows with class
``edge`` (Graphviz's convention), like the pattern FSM's (fsm_diagram).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from .fsm_diagram import dot_string, dot_svg, svg_open
from .window_plan import chunk_length
from .window_sql import WindowTranslation

BOX_HEIGHT, GAP, TOP, CHAR_WIDTH = 36, 150, 70, 7


@dataclass(frozen=True)
class ChainEdge:
    """``target`` reads ``source``: ``label`` says which of its parts."""

    source: str
    target: str
    label: str


def chain_nodes(translation: WindowTranslation) -> list[str]:
    """The source, then the generated views in definition order (the final view last)."""
    return [translation.source.name] + [view.name for view in translation.views()]


def chain_edges(translation: WindowTranslation) -> list[ChainEdge]:
    """What each generated view reads, per step."""
    t, source = translation, translation.source.name
    r, W = t.slide, t.width
    whole = f"the window's {W} parts"
    if t.mode != "incremental":
        return [ChainEdge(source, t.name, whole)]
    pre = t.helper("pre")
    edges = [ChainEdge(source, pre, "its part")]
    if t.chunked:
        chunks = t.helper("chunks")
        edges += [ChainEdge(pre, chunks, "its part and one older"), ChainEdge(chunks, chunks, "the part before")]
    if t.subtractable:
        new = "its part" if r == 1 else f"its {r} parts"
        edges += [ChainEdge(pre, t.helper("sum"), f"{new}, the expired {'one' if r == 1 else r}"),
                  ChainEdge(t.helper("sum"), t.helper("sum"), "the part before"),
                  ChainEdge(t.helper("sum"), t.name, "its part")]
    if t.chunked:
        edges.append(ChainEdge(t.helper("chunks"), t.name, "suffix, chunk, prefix"))
    elif t.distributive:
        edges.append(ChainEdge(pre, t.name, whole))
    if t.holistic:
        edges.append(ChainEdge(source, t.name, f"{whole} (holistic)"))
    return edges


def window_dot(translation: WindowTranslation) -> str:
    """The chain in Graphviz's DOT language."""
    nodes = chain_nodes(translation)
    lines = ["digraph window {", "  rankdir=LR; node [shape=box, style=rounded, fontname=Helvetica]; "
             "edge [fontname=Helvetica, fontsize=10];"]
    for index, name in enumerate(nodes):
        shape = ", shape=cylinder" if index == 0 else ", penwidth=2" if index == len(nodes) - 1 else ""
        lines.append(f"  n{index} [label={dot_string(name)}{shape}];")
    for edge in chain_edges(translation):
        lines.append(f"  n{nodes.index(edge.source)} -> n{nodes.index(edge.target)} "
                     f"[label={dot_string(edge.label)}];")
    lines.append("}")
    return "\n".join(lines)


def window_svg(translation: WindowTranslation) -> str:
    """An SVG document of the chain (Graphviz if available)."""
    drawn = dot_svg(window_dot(translation))
    return drawn if drawn is not None else own_svg(translation)


def own_svg(translation: WindowTranslation) -> str:
    """Our own drawing: boxes in a row, arrows between neighbours, arcs below for farther reads and
    loops above for a view's own previous part."""
    nodes = chain_nodes(translation)
    widths = [CHAR_WIDTH * len(name) + 24 for name in nodes]
    left = [40 + sum(widths[:i]) + GAP * i for i in range(len(nodes))]
    edges = chain_edges(translation)
    depth = max([_depth(nodes, e) for e in edges] + [0])
    parts = [svg_open(left[-1] + widths[-1] + 40, TOP + BOX_HEIGHT + depth + 40)]
    for edge in edges:
        parts.append(_edge(edge, nodes, left, widths))
    for index, name in enumerate(nodes):
        stroke = ' stroke-width="2"' if index == len(nodes) - 1 else ""
        parts.append(f'<g class="node"><title>{html.escape(name)}</title>'
                     f'<rect x="{left[index]}" y="{TOP}" width="{widths[index]}" height="{BOX_HEIGHT}" rx="8" '
                     f'fill="white" stroke="black"{stroke}/><text x="{left[index] + widths[index] // 2}" '
                     f'y="{TOP + BOX_HEIGHT // 2 + 4}" text-anchor="middle">{html.escape(name)}</text></g>')
    parts.append("</svg>")
    return "\n".join(parts)


def _depth(nodes: list[str], edge: ChainEdge) -> int:
    """How far below the boxes an arc between non-neighbours runs (0 for neighbours and loops)."""
    span = nodes.index(edge.target) - nodes.index(edge.source)
    return 0 if span <= 1 else 20 + 25 * span


def _edge(edge: ChainEdge, nodes: list[str], left: list[int], widths: list[int]) -> str:
    source, target = nodes.index(edge.source), nodes.index(edge.target)
    title, label = f"<title>{html.escape(edge.source + ' -> ' + edge.target)}</title>", html.escape(edge.label)
    if source == target:
        cx = left[source] + widths[source] // 2
        path = f"M {cx - 12} {TOP} C {cx - 40} {TOP - 50}, {cx + 40} {TOP - 50}, {cx + 12} {TOP}"
        text = f'<text x="{cx}" y="{TOP - 42}" text-anchor="middle">{label}</text>'
    elif target == source + 1:
        start, end, y = left[source] + widths[source], left[target], TOP + BOX_HEIGHT // 2
        path = f"M {start} {y} L {end} {y}"
        text = f'<text x="{(start + end) // 2}" y="{y - 6}" text-anchor="middle">{label}</text>'
    else:
        start, end = left[source] + widths[source] // 2, left[target] + widths[target] // 2
        bottom, low = TOP + BOX_HEIGHT, TOP + BOX_HEIGHT + _depth(nodes, edge)
        path = f"M {start} {bottom} C {start} {low}, {end} {low}, {end} {bottom}"
        text = f'<text x="{(start + end) // 2}" y="{bottom + (low - bottom) * 3 // 4 + 12}" ' \
               f'text-anchor="middle">{label}</text>'
    return (f'<g class="edge">{title}<path d="{path}" fill="none" stroke="black" marker-end="url(#arrow)"/>'
            f'{text}</g>')


def strategy_rows(translation: WindowTranslation) -> list[dict[str, str]]:
    """Per aggregate: its strategy, why, and where its window value is kept."""
    t, W = translation, translation.width
    rows = []
    for aggregate in t.aggregates:
        call = aggregate.node.sql(dialect="spark")
        if t.mode != "incremental":
            why = ("windows do not overlap (WINDOW = SLIDE), so each part reads its own parts"
                   if t.mode == "tumbling" else "no aggregate of the query can be kept from per-part summaries")
            kept = f"recomputed over {W} parts of {t.source.name}"
        elif aggregate.strategy == "subtractable":
            why = "a window's value is the previous window's plus the new parts' minus the expired parts'"
            kept = f"running sums in {t.helper('sum')}"
        elif aggregate.strategy == "distributive":
            why = "parts' values combine, but an expired part's value cannot be taken out"
            kept = (f"prefix and suffix maxima/minima over chunks of {chunk_length(W)} parts in "
                    f"{t.helper('chunks')}" if t.chunked else f"{W} parts of {t.helper('pre')}, read directly")
        else:
            why = "not computable from per-part summaries (DISTINCT, or not a sum, count, max or min)"
            kept = f"recomputed over {W} parts of {t.source.name}"
        rows.append({"aggregate": call, "strategy": aggregate.strategy, "why": why, "kept as": kept})
    return rows
