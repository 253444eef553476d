"""Choosing a strategy per aggregate, and the chunked prefix/suffix cover used for MAX and MIN.

Window of view part j (partition length s = r*L over a source of length L, W = w/L parts):
base parts a .. b with b = (j+1)*r - 1 and a = b - W + 1.

* Subtractable (SUM, COUNT, COUNT(*), AVG = sum and count): ViewDF_Sum over a per-part
  pre-aggregate: state[j] = state[j-1] + pre[new parts] - pre[expired parts].
* Distributive, not subtractable (MAX, MIN): chunked prefix and suffix maxima, a two-stacks
  scheme written as one helper view, ``chunks``. Base parts are cut into chunks of C = W // 2
  parts. Its prefix side at j is the max over j's chunk up to j (the prefix at j-1, restarting at
  each chunk, and ``pre[j]``); its suffix side walks the previous chunk backwards, one part per
  step (the suffix at j-1 and one older ``pre`` part), so that the suffix a window needs is
  ready when the window ends there. A window is then one suffix, one whole chunk and one
  prefix: at most three reads per step of the view and three per step of the helper, whatever
  W is.
* Holistic (anything else, or DISTINCT): recomputation over the window's parts; mixed with
  other aggregates, of the holistic ones only, joined on the group keys.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

SUBTRACTABLE = {"sum", "count", "count_star", "avg"}
DISTRIBUTIVE = {"max", "min"}


@dataclass(frozen=True)
class Aggregate:
    """One aggregate call of the query: its kind and its argument's SQL (None for count(*))."""

    node: exp.AggFunc
    kind: str            # sum, count, count_star, avg, max, min or holistic
    argument: str | None

    @property
    def strategy(self) -> str:
        if self.kind in SUBTRACTABLE:
            return "subtractable"
        if self.kind in DISTRIBUTIVE:
            return "distributive"
        return "holistic"


def classify(node: exp.AggFunc) -> Aggregate:
    simple = {exp.Sum: "sum", exp.Avg: "avg", exp.Max: "max", exp.Min: "min", exp.Count: "count"}
    kind = simple.get(type(node))
    argument = node.this
    if kind is None or isinstance(argument, exp.Distinct) or len(list(node.iter_expressions())) != 1 \
            or node.args.get("expressions"):
        return Aggregate(node, "holistic", None)
    if kind == "count" and isinstance(argument, exp.Star):
        return Aggregate(node, "count_star", None)
    return Aggregate(node, kind, argument.sql(dialect="spark"))


# -- subscript expressions of the part variable --------------------------------------------------
def affine(mult: int, const: int, var: str = "j") -> str:
    """``var*mult + const`` as subscript text: ``j-59``, ``j*5+4``."""
    head = var if mult == 1 else f"{var}*{mult}"
    return head if const == 0 else f"{head}{const:+d}"


@dataclass(frozen=True)
class ExtremeRef:
    """One reference of the final view's max/min: ``side`` of the chunks helper (prefix or suffix), or
    the pre-aggregate (pre), at ``subscript``."""

    side: str
    subscript: str


def chunk_length(width: int) -> int:
    """C: the chunk length of the chunks helper (the largest with 2C <= W)."""
    return width // 2


def extreme_cover(slide: int, width: int) -> list[ExtremeRef]:
    """References whose union is exactly the window of view part j (``slide`` = r base parts per view
    part, ``width`` = W base parts per window), for max and min.

    With b = j*r + r - 1, a = b - W + 1, C = W // 2, W = 2C + e and s = a mod C: the window is the
    suffix of a's chunk from a (``suffix[b - e - 2s]``), the chunk after it (``prefix[b - e - s]``,
    the whole chunk) and the prefix of b's chunk (``prefix[b]``). Windows of at most 3 parts read
    the pre-aggregate's parts directly."""
    last = affine(slide, slide - 1)
    if width <= 3:
        return [ExtremeRef("pre", affine(slide, slide - width) + " .. " + last)]
    chunk, extra = chunk_length(width), width % 2
    start = f"(({affine(slide, slide - width)})%{chunk})"
    middle = f"{affine(slide, slide - 1 - extra)}-{start}"
    if not extra:      # s = 0: the whole chunk is prefix[b] itself, so the range is empty rather than read twice
        middle = f"{middle} .. {middle}-({chunk}-{start})/{chunk}"
    return [ExtremeRef("suffix", f"{affine(slide, slide - 1 - extra)}-2*{start}"),
            ExtremeRef("prefix", middle),
            ExtremeRef("prefix", last)]


def suffix_source(chunk: int, var: str = "j") -> str:
    """The pre-aggregate part that ``suffix[j]`` adds: suffix parts of chunk c+1 walk chunk c backwards
    from its last part, one part per step, so ``suffix[j]`` = max over parts 2C*(j/C) - 1 - j .. of
    chunk c's end."""
    return f"{var}/{chunk}*{2 * chunk}-1-{var}"


def chunk_previous(chunk: int, var: str = "j") -> str:
    """The chunks helper's previous part: ``j-1 .. j-1`` within a chunk, the empty range ``j-1 .. j-2`` at a
    chunk's first part (so nothing is read there, and lineage does not run back through earlier chunks)."""
    return f"{var}-1 .. {var}-1-({chunk}-{var}%{chunk})/{chunk}"
