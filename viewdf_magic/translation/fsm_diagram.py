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
        lines.append(f"  s{index} [label={_dot_string(name)}{shape}];")
    for edge in fsm.edges:
        lines.append(f"  s{edge.source} -> s{edge.target} [label={_dot_string(_short(edge.label))}, "
                     f"tooltip={_dot_string(edge.kind + ': ' + edge.label)}];")
    lines.append("}")
    return "\n".join(lines)


def fsm_svg(fsm: PatternFSM) -> str:
    """An SVG document of the FSM (Graphviz if available)."""
    dot = shutil.which("dot")
    if dot is not None:
        try:
            done = subprocess.run([dot, "-Tsvg"], input=fsm_dot(fsm), capture_output=True, text=True, timeout=30,
                                  check=True)
            return done.stdout[done.stdout.index("<svg"):]
        except (subprocess.SubprocessError, OSError, ValueError):
            pass
    return own_svg(fsm)


def own_svg(fsm: PatternFSM) -> str:
    """Our own drawing: states in a row, proceed arrows between them, loops above Kleene states."""
    names = state_names(fsm)
    width = GAP * (len(names) - 1) + 2 * RADIUS + 80
    height = TOP + RADIUS + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="11">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
             'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z"/></marker></defs>']
    x = [40 + RADIUS + GAP * i for i in range(len(names))]
    for edge in fsm.edges:
        parts.append(_edge(edge, x))
    for index, name in enumerate(names):
        ring = (f'<circle cx="{x[index]}" cy="{TOP}" r="{RADIUS - 4}" fill="none" stroke="black"/>'
                if index == len(names) - 1 else "")
        parts.append(f'<g class="node" id="state{index}"><title>{html.escape(name)}</title>'
                     f'<circle cx="{x[index]}" cy="{TOP}" r="{RADIUS}" fill="white" stroke="black"/>{ring}'
                     f'<text x="{x[index]}" y="{TOP + 4}" text-anchor="middle">{html.escape(name)}</text></g>')
    parts.append("</svg>")
    return "\n".join(parts)


def _edge(edge: Edge, x: list[int]) -> str:
    title = f"<title>{html.escape(edge.kind + ': ' + edge.label)}</title>"
    label = html.escape(_short(edge.label))
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


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…"


def _dot_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
