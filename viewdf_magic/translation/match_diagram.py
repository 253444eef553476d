"""Draw a MATCH_RECOGNIZE view's automaton (``match_pattern.Automaton``) for EXPLAIN VIEW: a start, one state
per place of a variable in the pattern, and an accepting end. An edge into a state is labelled with its
preference among the edges leaving the same state (1 is tried first) and its variable's DEFINE condition,
which the row must meet. With Graphviz when ``dot`` is installed, else states in a row and edges as arcs
(forward above, backward below); both mark states with class ``node`` and edges with class ``edge``."""

from __future__ import annotations

import html

import pandas as pd

from .fsm_diagram import dot_string, dot_svg, short_label, svg_document
from .match_pattern import ACCEPT, Automaton

RADIUS, GAP = 24, 120


def state_names(automaton: Automaton) -> list[str]:
    """``start``, each state's variable (numbered when a variable has several states), then ``end``."""
    variables = automaton.state_variables
    states = [f"{v}{variables[:i + 1].count(v)}" if variables.count(v) > 1 else v for i, v in enumerate(variables)]
    return ["start", *states, "end"]


def edges(automaton: Automaton) -> list[tuple[int, int, int]]:
    """(from, to, preference) over drawn states: 0 start, 1..n the states, n + 1 the end."""
    end = len(automaton.after) + 1
    rows = [(0, automaton.start)] + [(i + 1, after) for i, after in enumerate(automaton.after)]
    return [(source, end if target == ACCEPT else target, k)
            for source, targets in rows for k, target in enumerate(targets, 1)]


def _label(automaton: Automaton, target: int, preference: int, conditions: dict[str, str]) -> str:
    if target > len(automaton.state_variables):
        return f"{preference}"
    variable = automaton.state_variables[target - 1]
    return f"{preference}: {variable} if {conditions.get(variable, 'TRUE')}"


def automaton_dot(automaton: Automaton, conditions: dict[str, str]) -> str:
    """The automaton in Graphviz's DOT language; ``conditions``: each variable's DEFINE, as text."""
    names = state_names(automaton)
    lines = ["digraph automaton {", "  rankdir=LR; node [shape=circle, fontname=Helvetica]; "
             "edge [fontname=Helvetica, fontsize=10];"]
    for index, name in enumerate(names):
        shape = ", shape=doublecircle" if index == len(names) - 1 else ", shape=box" if index == 0 else ""
        lines.append(f"  s{index} [label={dot_string(name)}{shape}];")
    for source, target, preference in edges(automaton):
        label = _label(automaton, target, preference, conditions)
        lines.append(f"  s{source} -> s{target} [label={dot_string(short_label(label))}, "
                     f"tooltip={dot_string(label)}];")
    lines.append("}")
    return "\n".join(lines)


def automaton_svg(automaton: Automaton, conditions: dict[str, str]) -> str:
    """An SVG document of the automaton (Graphviz if available)."""
    drawn = dot_svg(automaton_dot(automaton, conditions))
    return drawn if drawn is not None else own_svg(automaton, conditions)


def own_svg(automaton: Automaton, conditions: dict[str, str]) -> str:
    """Our own drawing: states in a row, forward edges arc above, backward edges and loops below."""
    names = state_names(automaton)
    x = [40 + RADIUS + GAP * i for i in range(len(names))]
    middle = RADIUS + 50 + 12 * len(names)          # room for the widest arc above and below
    drawn = []
    for source, target, preference in edges(automaton):
        label = _label(automaton, target, preference, conditions)
        above = target > source
        rise = (-1 if above else 1) * (30 + 12 * abs(target - source))
        y = middle + (-RADIUS if above else RADIUS)
        x1, x2 = (x[source] - 10, x[source] + 10) if source == target else (x[source], x[target])
        path = f"M {x1} {y} Q {(x1 + x2) // 2} {y + 2 * rise} {x2} {y}"
        drawn.append(f'<g class="edge"><title>{html.escape(label)}</title><path d="{path}" fill="none" '
                     f'stroke="black" marker-end="url(#arrow)"/><text x="{(x1 + x2) // 2}" y="{y + rise}" '
                     f'text-anchor="middle">{html.escape(short_label(label))}</text></g>')
    return svg_document(x, middle, RADIUS, 2 * middle, names, drawn)


def automaton_table(automaton: Automaton, conditions: dict[str, str]) -> pd.DataFrame:
    """EXPLAIN's table of states: each one's variable, DEFINE, and the states that may follow, preferred first."""
    names = state_names(automaton)
    rows = [{"state": name, "variable": automaton.state_variables[i - 1] if 0 < i < len(names) - 1 else "",
             "DEFINE": conditions.get(automaton.state_variables[i - 1], "TRUE") if 0 < i < len(names) - 1 else "",
             "next (preferred first)": ", ".join(names[t] for s, t, _ in edges(automaton) if s == i)}
            for i, name in enumerate(names)]
    return pd.DataFrame(rows)
