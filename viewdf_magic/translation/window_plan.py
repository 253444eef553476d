"""Choosing a strategy per aggregate, and the dyadic interval cover used for MAX and MIN.

Window of view part j (partition length s = r*L over a source of length L, W = w/L parts):
base parts a .. b with b = (j+1)*r - 1 and a = b - W + 1.

* Subtractable (SUM, COUNT, COUNT(*), AVG = sum and count): ViewDF_Sum over a per-part
  pre-aggregate: state[j] = state[j-1] + pre[new parts] - pre[expired parts].
* Distributive, not subtractable (MAX, MIN): dyadic blocks. ``B_0`` is the pre-aggregate and
  ``B_k[p]`` (partition length 2^k*L) covers base parts p*2^k .. p*2^k + 2^k - 1. With K the
  largest k with 2^(k+1) - 1 <= W, every window contains a complete K-block, and the union of
  all complete K-blocks in the window and, for every k < K, the first and the last complete
  k-block in it covers the window exactly (blocks overlap, which max and min do not mind):
  at most 3 + 2K block reads, i.e. about 2*log2(W).
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
class Bound:
    """The subscript ``(j*mult + const) / div - minus`` (floor division)."""

    mult: int
    const: int
    div: int = 1
    minus: int = 0

    def evaluate(self, j: int) -> int:
        return (j * self.mult + self.const) // self.div - self.minus

    def text(self, var: str = "j") -> str:
        if self.div == 1:
            return affine(self.mult, self.const - self.minus, var)
        return f"({affine(self.mult, self.const, var)})/{self.div}" + (f"-{self.minus}" if self.minus else "")


@dataclass(frozen=True)
class BlockRef:
    """Blocks ``first .. last`` of level ``level`` (level 0: the pre-aggregate's parts)."""

    level: int
    first: Bound
    last: Bound

    def subscript(self, var: str = "j") -> str:
        first, last = self.first.text(var), self.last.text(var)
        return first if first == last else f"{first} .. {last}"

    def base_parts(self, j: int) -> set[int]:
        size = 2 ** self.level
        return {p * size + k for p in range(self.first.evaluate(j), self.last.evaluate(j) + 1) for k in range(size)}


def dyadic_level(width: int) -> int:
    """K: the largest k with 2^(k+1) - 1 <= width (every window of ``width`` parts holds a K-block)."""
    level = 0
    while 2 ** (level + 2) - 1 <= width:
        level += 1
    return level


def dyadic_cover(slide: int, width: int) -> list[BlockRef]:
    """Block references whose union is exactly the window of view part j (``slide`` = r base parts
    per view part, ``width`` = W base parts per window)."""
    level = dyadic_level(width)
    end = slide                      # b + 1 = j*r + r
    begin = slide - width            # a = j*r + r - W
    if level == 0:
        return [BlockRef(0, Bound(slide, begin), Bound(slide, end - 1))]
    size = 2 ** level
    refs = [BlockRef(level, Bound(slide, begin + size - 1, size), Bound(slide, end, size, 1))]
    for k in range(level):
        size = 2 ** k
        first = Bound(slide, begin + size - 1, size)
        last = Bound(slide, end, size, 1)
        refs.append(BlockRef(k, first, first))
        refs.append(BlockRef(k, last, last))
    return refs


def max_block_reads(width: int) -> int:
    """The most block parts one step of the final view reads for MAX/MIN."""
    level = dyadic_level(width)
    return width if level == 0 else width // 2 ** level + 2 * level
