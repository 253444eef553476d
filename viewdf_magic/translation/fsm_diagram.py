"""Draw a pattern's FSM as SVG: with Graphviz when ``dot`` is installed, else with our own layout.

Pattern FSMs are chains: state 0 (begin), one state per variable, a proceed edge between
neighbours and a self loop on each Kleene state; the last state accepts. Both drawings mark
states with class ``node`` and edges with class ``edge`` (Graphviz's convention).
"""

from __future__ import annotations

import html
import shutil
import subprocess

from .pattern_fsm import Edge, PatternFSM

RADIUS, GAP, TOP = 28, 200, 110
LABEL_CHARS = 30


def state_names(fsm: PatternFSM) -> list[str]:
    return ["begin"] + [v.label for v in fsm.variables]


def fsm_dot(fsm: PatternFSM) -> str:
    """The FSM in Graphviz's DOT language."""
    names = state_names(fsm)
    lines = ["digraph fsm {", "  rankdir=LR; node [shape=circle, fontname=Helvetica]; "
             "edge [fontname=Helvetica, fontsize=10];"]
    for index, name in enumerate(names):
        shape = ", shape=doublecircle" if index == len(names) - 1 else ""
        lines.append(f"  s{index} [label={dot_string(name)}{shape}];")
    for edge in fsm.edges:
        lines.append(f"  s{edge.source} -> s{edge.target} [label={dot_string(short_label(edge.label))}, "
                     f"tooltip={dot_string(edge.kind + ': ' + edge.label)}];")
    lines.append("}")
    return "\n".join(lines)


def fsm_svg(fsm: PatternFSM) -> str:
    """An SVG document of the FSM (Graphviz if available)."""
    drawn = dot_svg(fsm_dot(fsm))
    return drawn if drawn is not None else own_svg(fsm)


def dot_svg(dot_text: str) -> str | None:
    """Graphviz's SVG drawing of a DOT graph, or None when ``dot`` is not installed or fails."""
    dot = shutil.which("dot")
    if dot is None:
        return None
    try:
        done = subprocess.run([dot, "-Tsvg"], input=dot_text, capture_output=True, text=True, timeout=30, check=True)
        return done.stdout[done.stdout.index("<svg"):]
    except (subprocess.SubprocessError, OSError, ValueError):
        return None


def own_svg(fsm: PatternFSM) -> str:
    """Our own drawing: states in a row, proceed arrows between them, loops above Kleene states."""
    names = state_names(fsm)
    x = [40 + RADIUS + GAP * i for i in range(len(names))]
    return svg_document(x, TOP, RADIUS, TOP + RADIUS + 40, names, [_edge(edge, x) for edge in fsm.edges])


def svg_document(x: list[int], y: int, radius: int, height: int, names: list[str], edges: list[str]) -> str:
    """An SVG document of states in a row (state i named ``names[i]`` at ``(x[i], y)``; the last one accepts)
    over the drawn ``edges``, whose arrows are ``url(#arrow)``."""
    parts = [svg_open(x[-1] + radius + 40, height), *edges]
    for index, name in enumerate(names):
        ring = (f'<circle cx="{x[index]}" cy="{y}" r="{radius - 4}" fill="none" stroke="black"/>'
                if index == len(names) - 1 else "")
        parts.append(f'<g class="node" id="state{index}"><title>{html.escape(name)}</title>'
                     f'<circle cx="{x[index]}" cy="{y}" r="{radius}" fill="white" stroke="black"/>{ring}'
                     f'<text x="{x[index]}" y="{y + 4}" text-anchor="middle">{html.escape(name)}</text></g>')
    parts.append("</svg>")
    return "\n".join(parts)


def svg_open(width: int, height: int) -> str:
    """The opening of our own SVG drawings: the ``<svg>`` element and the arrowhead ``url(#arrow)``."""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="11">\n'
            '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
            'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z"/></marker></defs>')


def _edge(edge: Edge, x: list[int]) -> str:
    title = f"<title>{html.escape(edge.kind + ': ' + edge.label)}</title>"
    label = html.escape(short_label(edge.label))
    if edge.kind == "self":
        cx = x[edge.target]
        path = (f"M {cx - 12} {TOP - RADIUS + 2} C {cx - 40} {TOP - RADIUS - 55}, {cx + 40} {TOP - RADIUS - 55}, "
                f"{cx + 12} {TOP - RADIUS + 2}")
        text_y = TOP - RADIUS - 48
        return (f'<g class="edge">{title}<path d="{path}" fill="none" stroke="black" marker-end="url(#arrow)"/>'
                f'<text x="{cx}" y="{text_y}" text-anchor="middle">{label}</text></g>')
    start, end = x[edge.source] + RADIUS, x[edge.target] - RADIUS
    return (f'<g class="edge">{title}<line x1="{start}" y1="{TOP}" x2="{end}" y2="{TOP}" stroke="black" '
            f'marker-end="url(#arrow)"/><text x="{(start + end) // 2}" y="{TOP + 22}" '
            f'text-anchor="middle">{label}</text></g>')


def short_label(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…"


def dot_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
