"""RECOMPUTE of a MATCH_RECOGNIZE view: the standard's batch search, run from scratch over the history.

Written independently of the Helper's automaton and values: the pattern is compiled into backtracking
instructions (VAR, SPLIT, JMP, MARK, CHECK, MATCH; bounded quantifiers unrolled, MARK/CHECK ending an
iteration that takes no row), and each partition's rows up to part j are searched depth first, start row
after start row, as the standard describes: the first match found from a start row is its most preferred
one, AFTER MATCH SKIP picks the next start row. DEFINE conditions and measures are evaluated over the
match's path (its rows and their variables), never from running values.

A search that needs a row past the end stops the partition's search (that match, and those after it,
may still change). Each match records the furthest row the search had examined when it was found: the
match became final in that row's part, so part j's RECOMPUTE keeps the matches whose furthest row is in
part j. The search runs inside ``aggregate`` loops with a step budget of 64 steps per instruction per
row; a search that needs more (exponential backtracking) fails with an error naming the view.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import count

from ..language.lifting import INPUT_PART, lift
from ..language.tokens import quote_name
from ..timeparts import subscript_sql
from .match_pattern import Alternation, Node, Repeat, Concat, Variable
from .match_terms import Agg, Nav, Output, Special, Template, Term, render_row

VAR, SPLIT, JMP, MARK, CHECK, MATCH = range(1, 7)
STEPS_PER_INSTRUCTION = 64


def program(pattern: Node, names: list[str]) -> list[list[int]]:
    """Backtracking instructions ``[op, x, y]``; jump targets are 1-based instruction numbers."""
    code: list[list[int]] = []
    registers = count(1)

    def emit(op: int, x: int = 0, y: int = 0) -> int:
        code.append([op, x, y])
        return len(code)

    def split(preferred: int, other: int, at: int, reluctant: bool = False) -> None:
        code[at - 1][1:] = [other, preferred] if reluctant else [preferred, other]

    def iteration(body: Node) -> int:
        """One iteration that must take a row; returns its register."""
        register = next(registers)
        emit(MARK, register)
        generate(body)
        emit(CHECK, register)
        return register

    def optional(quant: Repeat, left: int) -> None:
        if left == 0:
            return
        at = emit(SPLIT)
        iteration(quant.body)
        optional(quant, left - 1)
        split(at + 1, len(code) + 1, at, quant.reluctant)

    def generate(node: Node) -> None:
        if isinstance(node, Variable):
            emit(VAR, names.index(node.name) + 1)
        elif isinstance(node, Concat):
            for item in node.parts:
                generate(item)
        elif isinstance(node, Alternation):
            ends = []
            for option in node.branches[:-1]:
                at = emit(SPLIT)
                generate(option)
                ends.append(emit(JMP))
                split(at + 1, len(code) + 1, at)
            generate(node.branches[-1])
            for end in ends:
                code[end - 1][1] = len(code) + 1
        else:
            for _ in range(node.low):
                generate(node.body)
            if node.high is not None:
                optional(node, node.high - node.low)
                return
            top = emit(SPLIT)
            iteration(node.body)
            emit(JMP, top)
            split(top + 1, len(code) + 1, top, node.reluctant)

    generate(pattern)
    emit(MATCH)
    return code


class Search:
    """The SQL of one partition's batch search over its rows ``R`` (structs of the event ``e`` and its part
    ``p``), and of the measures over a match's path."""

    def __init__(self, pattern: Node, names: list[str], defines: dict[str, Template], skip: tuple[str, str | None],
                 within: int | None, timestamp: str, type_of: Callable[[Term], str]) -> None:
        self.code = program(pattern, names)
        self.names, self.defines, self.skip, self.within = names, defines, skip, within
        self.timestamp, self.type_of = quote_name(timestamp), type_of
        self.registers = sum(1 for op, _, _ in self.code if op == MARK)

    # -- terms over a path ---------------------------------------------------------------------------------
    def _rows_of(self, variable: str | None, path: str) -> str:
        if variable is None:
            return path
        return f"filter({path}, x -> x.v = {self.names.index(variable) + 1})"

    def term(self, term: Term, path: str, number: str) -> str:
        """A term's value over the rows of ``path`` (an array of (row index ``i``, variable ``v``))."""
        if isinstance(term, Special):
            if term.name == "MATCH_NUMBER":
                return number
            # CASE, not element_at(array(names), v): inside a lambda Spark 4.3 returns a one-name array's element
            # for a NULL index (an empty match's CLASSIFIER())
            names = " ".join(f"WHEN {i} THEN '{name}'" for i, name in enumerate(self.names, 1))
            return f"CASE try_element_at({path}, -1).v {names} END"
        rows = self._rows_of(term.variable, path)
        if isinstance(term, Nav):
            which = f"-{term.offset + 1}" if term.kind == "last" else str(term.offset + 1)
            row = f"(try_element_at({rows}, {which}).i - {term.back})"
            return f"IF({row} >= 1, {render_row(term.argument, f'element_at(R, {row}).e')}, NULL)"
        if term.argument is None:
            return f"CAST(size({rows}) AS bigint)"
        values = (f"filter(transform({rows}, x -> {render_row(term.argument, 'element_at(R, x.i).e')}), "
                  f"w -> w IS NOT NULL)")
        kind = self.type_of(term)
        if term.function == "count":
            return f"CAST(size({values}) AS bigint)"
        if term.function in ("min", "max"):
            return f"array_{term.function}({values})"
        total_kind = self.type_of(Agg("sum", term.variable, term.key, term.argument))
        total = f"aggregate({values}, CAST(NULL AS {total_kind}), (acc, w) -> coalesce(acc + w, w))"
        if term.function == "sum":
            return total
        numerator = total if kind.startswith("decimal") else f"CAST({total} AS double)"
        return f"CAST(try_divide({numerator}, size({values})) AS {kind})"

    def value(self, template: Template, path: str, number: str) -> str:
        """An expression's value over the rows of ``path``, MATCH_NUMBER() being ``number``."""
        return template.render(lambda term: self.term(term, path, number))

    def output_value(self, output: Output, all_rows: bool, number: str) -> str:
        """An output column's value for the match ``o`` (its ``path`` over the rows ``R``): with ALL ROWS PER MATCH
        at its mapped row ``x``, the ``k``-th from 0, RUNNING measures over the path up to it."""
        if output.template is None:
            return f"element_at(R, x.i).e.{quote_name(output.name)}"
        path = "o.path" if output.final or not all_rows else "slice(o.path, 1, k + 1)"
        return self.value(output.template, path, number)

    # -- the search --------------------------------------------------------------------------------------------
    def _condition(self, variable: str, path: str) -> str:
        template = self.defines.get(variable)
        if template is None:
            return "true"
        return f"coalesce({self.value(template, path, 'NULL')}, false)"

    def _next_start(self) -> str:
        kind, variable = self.skip
        if kind == "TO NEXT ROW":
            return "s.cur + 1"
        if kind == "PAST LAST ROW":
            return "greatest(s.pos, s.cur + 1)"
        rows = self._rows_of(variable, "s.path")
        target = f"try_element_at({rows}, {'1' if kind == 'TO FIRST' else '-1'}).i"
        words = f"AFTER MATCH SKIP {kind} {variable}"
        return (f"CASE WHEN {target} IS NULL THEN raise_error('{words}: no row of the match is mapped to {variable}') "
                f"WHEN {target} = s.cur THEN raise_error('{words} would resume at the match''s first row') "
                f"ELSE {target} END")

    def _with(self, **changed: str) -> str:
        fields = ["cur", "num", "seen", "stop", "on", "pc", "pos", "path", "regs", "stack", "out"]
        return "named_struct(" + ", ".join(f"'{f}', {changed.get(f, f's.{f}')}" for f in fields) + ")"

    def _fail(self, seen: str = "s.seen") -> str:
        top = "element_at(s.stack, -1)"
        popped = self._with(pc=f"{top}.pc", pos=f"{top}.pos", path=f"slice(s.path, 1, {top}.n)", regs=f"{top}.regs",
                            seen=seen, stack="slice(s.stack, 1, size(s.stack) - 1)")
        return f"IF(size(s.stack) = 0, {self._with(on='false', cur='s.cur + 1', seen=seen)}, {popped})"

    def _take(self) -> str:
        """VAR: map row ``pos`` to the instruction's variable if its DEFINE holds."""
        seen = "greatest(s.seen, s.pos)"
        taken = "concat(s.path, array(named_struct('i', s.pos, 'v', ins.x)))"
        tests = " ".join(f"WHEN {i} THEN {self._condition(name, 'p2')}" for i, name in enumerate(self.names, 1))
        outside = "false"
        if self.within is not None:
            first = f"element_at(R, s.path[0].i).e.{self.timestamp}"
            outside = (f"size(s.path) > 0 AND unix_micros(element_at(R, s.pos).e.{self.timestamp}) - "
                       f"unix_micros({first}) >= {self.within}")
        moved = self._with(pc="s.pc + 1", pos="s.pos + 1", path="p2", seen=seen)
        return (f"CASE WHEN s.pos > size(R) THEN {self._with(stop='true')} WHEN {outside} THEN {self._fail(seen)} "
                f"ELSE transform(array({taken}), p2 -> IF(CASE ins.x {tests} END, {moved}, {self._fail(seen)}))[0] END")

    def _step(self) -> str:
        """One step of the depth-first search (``s`` the state, ``ins`` the instruction at ``s.pc``)."""
        marked = "transform(s.regs, (r, k) -> IF(k = ins.x - 1, s.pos, r))"
        pushed = "concat(s.stack, array(named_struct('pc', ins.y, 'pos', s.pos, 'n', size(s.path), 'regs', s.regs)))"
        found = ("concat(s.out, array(named_struct('num', s.num + 1, 'seen', s.seen, 'start', s.cur, "
                 "'path', s.path)))")
        execute = (f"CASE ins.op WHEN {VAR} THEN {self._take()} "
                   f"WHEN {SPLIT} THEN {self._with(pc='ins.x', stack=pushed)} "
                   f"WHEN {JMP} THEN {self._with(pc='ins.x')} "
                   f"WHEN {MARK} THEN {self._with(pc='s.pc + 1', regs=marked)} "
                   f"WHEN {CHECK} THEN IF(element_at(s.regs, ins.x) = s.pos, {self._fail()}, {self._with(pc='s.pc + 1')}) "
                   f"ELSE {self._with(on='false', num='s.num + 1', out=found, cur=self._next_start())} END")
        instructions = "array(" + ", ".join(f"named_struct('op', {op}, 'x', {x}, 'y', {y})"
                                            for op, x, y in self.code) + ")"
        start = self._with(on="true", pc="1", pos="s.cur", path="CAST(array() AS array<struct<i:int,v:int>>)",
                           regs=f"array_repeat(0, {self.registers})", stack="array()", seen="greatest(s.seen, s.cur)")
        return (f"CASE WHEN NOT s.on THEN {start} "
                f"ELSE transform(array(element_at({instructions}, s.pc)), ins -> {execute})[0] END")

    def matches(self) -> str:
        """The matches of the partition's rows ``R``: (num, seen, start, path) each."""
        done = "(t.stop OR (NOT t.on AND t.cur > size(R)))"
        initial = ("CAST(named_struct('cur', 1, 'num', 0, 'seen', 0, 'stop', false, 'on', false, 'pc', 0, 'pos', 0, "
                   "'path', array(), 'regs', array(), 'stack', array(), 'out', array()) AS struct<cur:int,num:int,"
                   "seen:int,stop:boolean,on:boolean,pc:int,pos:int,path:array<struct<i:int,v:int>>,regs:array<int>,"
                   "stack:array<struct<pc:int,pos:int,n:int,regs:array<int>>>,out:array<struct<num:int,seen:int,"
                   "start:int,path:array<struct<i:int,v:int>>>>>)")
        budget = STEPS_PER_INSTRUCTION * len(self.code)
        inner = f"aggregate(sequence(1, {budget}), u, (t, w) -> IF({done}, t, transform(array(t), s -> {self._step()})[0]))"
        loop = f"aggregate(sequence(0, size(R)), {initial}, (u, z) -> IF({done.replace('t.', 'u.')}, u, {inner}))"
        return (f"transform(array({loop}), f -> IF({done.replace('t.', 'f.')}, f.out, raise_error("
                f"'the batch search needs more than {budget} steps per row; simplify the pattern')))[0]")


def recompute_sql(search: Search, outputs: list[Output], all_rows: bool, stream: str, partition_length: int,
                  timestamp: str, columns: list[str], keys: list[str], outer: Callable[[str], str]) -> str:
    """RECOMPUTE V[j]: the matches that became final in part j, from the stream's history ``S[.. j]``; with
    ALL ROWS PER MATCH a row per mapped row (the start row for an empty match), RUNNING measures over the
    path up to it."""
    ending = f"SELECT DISTINCT {_key_list(keys)}1 AS one FROM {quote_name(stream)}[j]"
    return "\n".join([*_search_sql(search, outputs, all_rows, stream, partition_length, timestamp, columns, keys,
                                    ending, "= element_at(R, -1).p", ""),
                      outer("(SELECT * FROM final)")])


def recompute_runs_sql(search: Search, outputs: list[Output], all_rows: bool, stream: str, partition_length: int,
                       timestamp: str, columns: list[str], keys: list[str], outer: Callable[[str], str]) -> str | None:
    """RECOMPUTE of every part from ``__vdf_first`` to ``j`` in one query (VERIFY VIEW), each row's part its last
    column: one search over each partition's history ``S[.. j]``, each match in the part of the furthest row it
    examined. The search up to part k stops where it needs a row after part k, and matches after that stop
    have examined a later row, so the matches it keeps for part k are the whole history's. None when the
    query around MATCH_RECOGNIZE cannot be lifted to many parts (language/lifting.py)."""
    lifted = lift(outer("final"), frozenset({"final"}))
    if lifted.sql is None:
        return None
    ending = f"SELECT DISTINCT {_key_list(keys)}1 AS one FROM events WHERE r.p >= __vdf_first"
    return "\n".join([*_search_sql(search, outputs, all_rows, stream, partition_length, timestamp, columns, keys,
                                    ending, ">= __vdf_first", f", element_at(R, o.seen).p AS {INPUT_PART}"),
                      lifted.sql])


def _key_list(keys: list[str]) -> str:
    return "".join(f"{quote_name(k)}, " for k in keys)


def _search_sql(search: Search, outputs: list[Output], all_rows: bool, stream: str, partition_length: int,
                timestamp: str, columns: list[str], keys: list[str], ending: str, seen: str, part: str) -> list[str]:
    """The CTEs up to ``final``: the matches of the partitions that have rows in ``ending`` whose furthest row's
    part is ``seen``, with ``part`` after their columns."""
    key_names = [quote_name(k) for k in keys]
    key_list = _key_list(keys)
    group = f" GROUP BY {', '.join(key_names)}" if keys else ""
    same = " AND ".join(f"c.{k} <=> s.{k}" for k in key_names) or "true"
    event = "struct(" + ", ".join(quote_name(c) for c in columns) + ")"
    number = "CAST(o.num AS bigint)"

    values = [f"{search.output_value(output, all_rows, number)} AS {quote_name(output.name)}" for output in outputs]
    rows = (" LATERAL VIEW posexplode(IF(size(o.path) = 0, array(named_struct('i', o.start, 'v', 0)), o.path)) "
            "AS k, x" if all_rows else "")
    return [
        f"WITH events AS (SELECT {key_list}named_struct('e', {event}, 'p', "
        f"{subscript_sql(quote_name(timestamp), partition_length)}) AS r FROM {quote_name(stream)}[.. j])",
        f", seqs AS (SELECT {key_list}array_sort(collect_list(r)) AS R FROM events{group})",
        f", ending AS ({ending})",
        f", searched AS (SELECT {key_list}R, o FROM (SELECT * FROM seqs AS s WHERE EXISTS (SELECT 1 FROM ending AS c "
        f"WHERE {same})) AS t LATERAL VIEW explode({search.matches()}) AS o)",
        f", final AS (SELECT {key_list}{', '.join(values)}{part} FROM searched{rows} "
        f"WHERE element_at(R, o.seen).p {seen})",
    ]
