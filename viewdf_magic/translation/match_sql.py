"""The Helper and final ViewDFs of a MATCH_RECOGNIZE view.

``<view>__helper`` keeps, per partition key, the matcher's state after the key's last part with rows
(``st``), the output rows of the matches that became final during that part (``out``) and that part's
``PART_TIMESTAMP`` (``at``); the final view explodes the ``out`` found in its own part. A key without rows in
a part keeps its row as it was, so the Helper is UNCHANGED WHEN the stream's part is empty, and the final
view is then EMPTY.
A part's rows are folded in order (``aggregate``) with this state:

* ``searches``: one per start row whose search is not decided yet, in start order, each a list of
  threads in preference order (Pike's VM over ``match_pattern.automaton``), each thread a state and its
  values (``match_state.Values``); ``found`` is the best match found so far from that start. A thread
  that accepts drops every thread after it; threads with the same state and the same values the DEFINE
  conditions read are merged (the first is preferred); WITHIN ends a search's threads at the first row
  outside its window.
* ``cursor``: the next start row the standard's search would try. A decided search at the cursor is
  emitted (its match numbered ``matches + 1``) and the cursor moves by AFTER MATCH SKIP; searches that
  start before the cursor are dropped. ``n`` counts the partition's rows, ``recent`` keeps the rows
  PREV reaches back to.

A match is emitted as soon as no later row can change it or a match before it, so the union of the
parts is the standard's result over the whole stream minus what is still open at its end.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..language.emptiness import MATCH_SEARCH
from ..language.tokens import quote_name
from .match_compact import CompactPlan
from .match_pattern import ACCEPT, Automaton
from .match_query import MatchQuery
from .match_state import Current, Slot, Values
from .match_terms import Output, Template, numbered
from .range_segments import segments_sql
from .viewdf_text import viewdf_text


STATE = ("n", "cursor", "matches", "recent", "searches")     # the fields of a partition's state (general plan)
COMPACT_STATE = ("cursor", "matches", "rows")                # (automaton plan)
HELPER_COLUMNS = ("st", "out", "at")                         # the Helper's columns after the partition keys


def _let(value: str, name: str, body: str) -> str:
    """``body`` with ``name`` bound to ``value`` (evaluated once)."""
    return f"transform(array({value}), {name} -> {body})[0]"


def _struct(fields: list[tuple[str, str]]) -> str:
    return "named_struct(" + ", ".join(f"'{name}', {value}" for name, value in fields) + ")"


@dataclass
class MatchTranslation:
    """A checked MATCH_RECOGNIZE query and everything its ViewDFs are generated from."""

    name: str
    query: MatchQuery
    automaton: Automaton
    stream: str
    partition_length: int
    columns: list[tuple[str, str]]           # the stream's columns (name, type), ORDER BY columns first
    keys: list[str]                          # PARTITION BY columns
    order: list[str]                         # ORDER BY columns
    defines: dict[str, Template]
    values: Values
    outputs: list[Output]                    # the view's columns after the keys
    recompute: str                           # the final view's RECOMPUTE query
    recompute_runs: str | None               # RECOMPUTE of a run of parts in one query (VERIFY VIEW), if liftable
    plan: CompactPlan | str                  # the automaton plan, or why the view gets the general plan

    @property
    def compact(self) -> CompactPlan | None:
        return self.plan if isinstance(self.plan, CompactPlan) else None

    @property
    def plan_description(self) -> str:
        """Which plan the Helper runs, and why."""
        if self.compact is not None:
            return self.compact.describe()
        return f"general plan (each partition's rows folded in Spark SQL), because {self.plan}"

    @property
    def helper(self) -> str:
        return f"{quote_name(self.name)}__helper"

    # -- types --------------------------------------------------------------------------------------------
    @property
    def event_type(self) -> str:
        return "struct<" + ",".join(f"{quote_name(name)}:{kind}" for name, kind in self.columns) + ">"

    @property
    def all_rows(self) -> bool:
        return self.query.all_rows

    @property
    def record_type(self) -> str:
        """A mapped row, as ALL ROWS PER MATCH threads keep it: the row, its variable (index), position and
        PREV values."""
        pv = f",pv:{self.values.pv_type()}" if self.values.previous else ""
        return f"struct<e:{self.event_type},v:int,pos:bigint{pv}>"

    @property
    def thread_type(self) -> str:
        records = f",recs:array<{self.record_type}>" if self.all_rows else ""
        return f"struct<q:int,a:{self.values.struct_type()}{records}>"

    @property
    def search_type(self) -> str:
        first = f",e0:{self.event_type}" if self.all_rows else ""     # the start row, shown by an empty match
        return f"struct<start:bigint,t0:bigint{first},th:array<{self.thread_type}>,found:{self.thread_type}>"

    @property
    def out_type(self) -> str:
        return "array<struct<" + ",".join(f"{quote_name(o.name)}:{o.type}" for o in self.outputs) + ">>"

    def _empty(self, kind: str) -> str:
        return f"CAST(array() AS array<{kind}>)"

    # -- one row ------------------------------------------------------------------------------------------
    def _define(self, variable: str, values: str, current: Current) -> str:
        template = self.defines.get(variable)
        if template is None:
            return "true"
        return f"coalesce({template.render(lambda term: self.values.read(term, values, current))}, false)"

    def _moves(self, thread: str, row: str, pv: str, position: str) -> str:
        """The threads ``thread`` becomes when ``row`` arrives: none if its variable's DEFINE is false."""
        names = self.automaton.names
        states = range(1, len(self.automaton.after) + 1)
        index = f"element_at(array({', '.join(str(self.automaton.variable_index(q)) for q in states)}), {thread}.q)"
        updates = " ".join(f"WHEN {i} THEN {self.values.update(f'{thread}.a', name, row, pv, position)}"
                           for i, name in enumerate(names, 1))
        tests = " ".join(f"WHEN {i} THEN {self._define(name, 'a2', Current(name, row, pv))}"
                         for i, name in enumerate(names, 1))
        successors = "array(" + ", ".join("array(" + ", ".join(map(str, after)) + ")"
                                          for after in self.automaton.after) + ")"
        fields = [("q", "c"), ("a", "a2")]
        if self.all_rows:
            record = _struct([("e", row), ("v", index), ("pos", position)] + ([("pv", pv)] if self.values.previous else []))
            fields.append(("recs", f"concat({thread}.recs, array({record}))"))
        moved = (f"IF(CASE {index} {tests} END, transform(element_at({successors}, {thread}.q), "
                 f"c -> {_struct(fields)}), {self._empty(self.thread_type)})")
        return _let(f"CASE {index} {updates} END", "a2", moved)

    def _key(self, thread: str) -> str:
        slots = [f"{thread}.a.{self.values.field(slot)}" for slot in self.values.future]
        return f"{thread}.q" if not slots else f"struct({thread}.q, {', '.join(slots)})"

    def _advance(self, search: str, row: str, pv: str, position: str) -> str:
        """A search after ``row``: its threads moved, in order; the first ACCEPT becomes its match and cuts the
        threads after it, and a thread whose state and DEFINE-read values an earlier thread has is dropped."""
        threads = f"{search}.th"
        if self.query.within is not None:
            timestamp = quote_name(self.order[0])
            threads = (f"IF(unix_micros({row}.{timestamp}) - {search}.t0 >= {self.query.within}, "
                       f"{self._empty(self.thread_type)}, {threads})")
        moved = f"flatten(transform({threads}, t -> {self._moves('t', row, pv, position)}))"
        begin = _struct([("th", self._empty(self.thread_type)), ("found", f"{search}.found"), ("cut", "false")])
        same = f"{self._key('y')} <=> {self._key('x')}"
        merge = (f"(c, x) -> CASE WHEN c.cut OR exists(c.th, y -> {same}) THEN c "
                 f"WHEN x.q = 0 THEN named_struct('th', c.th, 'found', x, 'cut', true) "
                 f"ELSE named_struct('th', concat(c.th, array(x)), 'found', c.found, 'cut', false) END")
        kept = [("start", f"{search}.start"), ("t0", f"{search}.t0")] + \
            ([("e0", f"{search}.e0")] if self.all_rows else []) + [("th", "c.th"), ("found", "c.found")]
        finish = "c -> " + _struct(kept)
        return f"aggregate({moved}, {begin}, {merge}, {finish})"

    def _fresh(self, row: str, position: str) -> str:
        """The search starting at ``row``, before it takes the row."""
        zero = self.values.zero()
        records = [("recs", self._empty(self.record_type))] if self.all_rows else []
        starts = [q for q in self.automaton.start if q != ACCEPT]
        threads = ("array(" + ", ".join(_struct([("q", str(q)), ("a", zero), *records]) for q in starts) + ")"
                   if starts else self._empty(self.thread_type))
        found = _struct([("q", "0"), ("a", zero), *records]) if ACCEPT in self.automaton.start else \
            f"CAST(NULL AS {self.thread_type})"
        timestamp = quote_name(self.order[0])
        first = [("e0", row)] if self.all_rows else []
        return _struct([("start", position), ("t0", f"unix_micros({row}.{timestamp})"), *first, ("th", threads),
                        ("found", found)])

    def _next_start(self, search: str) -> str:
        """Where the search after a match from ``search`` starts (AFTER MATCH SKIP)."""
        skip = self.query.skip
        start = f"{search}.start"
        if skip.kind == "TO NEXT ROW":
            return f"{start} + 1"
        if skip.kind == "PAST LAST ROW":
            last = self.values.field(position_slot("lpos", None))
            return f"coalesce({search}.found.a.{last} + 1, {start} + 1)"
        slot = position_slot("fpos" if skip.kind == "TO FIRST" else "lpos", skip.variable)
        target = f"{search}.found.a.{self.values.field(slot)}"
        words = f"AFTER MATCH SKIP {skip.kind} {skip.variable}"
        return (f"CASE WHEN {target} IS NULL THEN raise_error('{words}: no row of the match is mapped to "
                f"{skip.variable}') WHEN {target} = {start} THEN raise_error('{words} would resume at the match''s "
                f"first row') ELSE {target} END")

    def _row(self, running: str, final: str, event: str | None, number: str) -> str:
        """One output row: measures over the values ``running`` or (FINAL) ``final``, columns of ``event``."""
        def value(output: Output) -> str:
            if output.template is None:
                return f"{event}.{quote_name(output.name)}"
            values = final if output.final else running
            return output.template.render(lambda term: self.values.read(term, values, match_number=number))
        return _struct([(output.name, value(output)) for output in self.outputs])

    def _emitted(self, search: str, number: str) -> str:
        """The output rows of the match found by ``search``, numbered ``number``: one, or (ALL ROWS PER MATCH)
        one per mapped row, its RUNNING measures over the values up to it, found again by folding its rows."""
        found = f"{search}.found"
        if not self.all_rows:
            return f"array({self._row(f'{found}.a', f'{found}.a', None, number)})"
        updates = " ".join(f"WHEN {i} THEN {self.values.update('r.a', name, 'x.e', 'x.pv', 'x.pos')}"
                           for i, name in enumerate(self.automaton.names, 1))
        row = self._row("a2", f"{found}.a", "x.e", number)
        step = _let(f"CASE x.v {updates} END", "a2", _struct([("a", "a2"), ("rows", f"concat(r.rows, array({row}))")]))
        begin = _struct([("a", self.values.zero()), ("rows", f"CAST(array() AS {self.out_type})")])
        zero = f"({self.values.zero()})"
        empty = f"array({self._row(zero, zero, f'{search}.e0', number)})"
        return f"IF(size({found}.recs) = 0, {empty}, aggregate({found}.recs, {begin}, (r, x) -> {step}, r -> r.rows))"

    def _pass(self, scan: str, search: str) -> str:
        """One search of the decision pass: emit decided searches from the cursor on, in start order."""
        kept = f"concat({scan}.kept, array({search}))"
        fields = ["cursor", "blocked", "matches", "kept", "out"]

        def moved(**changed: str) -> str:
            return _struct([(f, changed.get(f, f"{scan}.{f}")) for f in fields])
        number = f"{scan}.matches + 1"
        emitted = moved(cursor=self._next_start(search), matches=number,
                        out=f"concat({scan}.out, {self._emitted(search, number)})")
        return (f"CASE WHEN {scan}.blocked THEN IF(size({search}.th) > 0 OR {search}.found IS NOT NULL, "
                f"{moved(kept=kept)}, {scan}) "
                f"WHEN {search}.start < {scan}.cursor THEN {scan} "
                f"WHEN size({search}.th) > 0 THEN {moved(cursor=f'{search}.start', blocked='true', kept=kept)} "
                f"WHEN {search}.found IS NULL THEN {scan} "
                f"ELSE {emitted} END")

    def step(self, acc: str, row: str) -> str:
        """The fold's state after ``row``: every search advanced (a new one starting at the row last), then the
        decision pass (``ps``); a row that neither continues a search nor starts one only moves the cursor."""
        position = f"{acc}.n"
        depth = self.values.depth
        searches = (f"transform(concat({acc}.searches, array({self._fresh(row, position)})), "
                    f"s -> {self._advance('s', row, 'pv', position)})")
        start = _struct([("cursor", f"{acc}.cursor"), ("blocked", "false"), ("matches", f"{acc}.matches"),
                         ("kept", self._empty(self.search_type)), ("out", f"{acc}.out")])
        recent = f"{acc}.recent" if depth == 0 else \
            f"slice(concat({acc}.recent, array({row})), IF(size({acc}.recent) >= {depth}, 2, 1), {depth})"
        after = _struct([("n", f"{position} + 1"),
                         ("cursor", f"IF(ps.blocked, ps.cursor, greatest(ps.cursor, {position} + 1))"),
                         ("matches", "ps.matches"), ("recent", recent), ("searches", "ps.kept"), ("out", "ps.out")])
        decided = f"aggregate({searches}, {start}, (sc, sr) -> {self._pass('sc', 'sr')}, ps -> {after})"
        idle = _struct([("n", f"{position} + 1"), ("cursor", f"{position} + 1"), ("matches", f"{acc}.matches"),
                        ("recent", recent), ("searches", f"{acc}.searches"), ("out", f"{acc}.out")])
        step = f"IF(size({acc}.searches) = 0 AND NOT ({self._can_start(row, 'pv', position)}), {idle}, {decided})"
        return _let(self.values.pv_sql(f"{acc}.recent"), "pv", step) if self.values.previous else step

    def _can_start(self, row: str, pv: str, position: str) -> str:
        """Whether a search from ``row`` outlives the row: some variable a match can start with takes it."""
        if ACCEPT in self.automaton.start:
            return "true"
        starting = dict.fromkeys(self.automaton.state_variables[q - 1] for q in self.automaton.start)
        zero = self.values.zero()
        return " OR ".join(
            self._define(name, f"({self.values.update(zero, name, row, pv, position)})", Current(name, row, pv))
            for name in starting)

    # -- the automaton plan ----------------------------------------------------------------------------------
    def _searched(self, plan: CompactPlan, events: str, counts: str, carried: str) -> list[str]:
        """The CTEs ``prepared`` (each partition's rows ``R``: its state's rows, then ``events`` with their masks)
        and ``searched`` (``S``: the search's snapshot after each part of ``counts`` rows), from ``joined``."""
        def row_at(back: int) -> str:
            if back == 0:
                return "x"
            at = f"size(st.rows) + k + 1 - {back}"
            return f"IF({at} >= 1, element_at(va, {at}), NULL)"
        columns = f", 'v', {plan.columns_sql(row_at)}" if plan.columns else ""
        masked = f"transform({events}, (x, k) -> named_struct('e', x, 'm', {plan.mask_sql(row_at)}{columns}))"
        rows = _let(f"concat(transform(st.rows, r -> r.e), {events})", "va", f"concat(st.rows, {masked})")
        timestamp = quote_name(self.order[0])
        times = (f"transform(R, r -> unix_micros(r.e.{timestamp}))" if self.query.within is not None
                 else "CAST(NULL AS array<bigint>)")
        # a partition without new rows takes no step: its masks need not cross into Python
        read, kind = (("named_struct('m', r.m, 'v', r.v)", f"struct<m:bigint,v:{plan.columns_type}>") if plan.columns
                      else ("r.m", "bigint"))
        masks = f"IF(size(R) > size(st.rows), transform(R, r -> {read}), CAST(array() AS array<{kind}>))"
        program = plan.program.replace("\\", "\\\\").replace("'", "''")
        return [f", prepared AS (SELECT {self._key_list}{carried}, st, {rows} AS R FROM joined)",
                f", searched AS (SELECT *, {MATCH_SEARCH}({masks}, {times}, {counts}, size(st.rows), "
                f"st.cursor, st.matches, '{program}') AS S FROM prepared)"]

    def _snapshot(self, plan: CompactPlan, snapshot: str) -> str:
        """A partition's state and output at a snapshot of its search: the rows from ``plan.reach`` rows before
        the cursor on, and the output rows of the matches emitted since the snapshot before."""
        keep = f"greatest(0, {snapshot}.cursor - {plan.reach})"
        number = "o.num"
        values = [(o.name, plan.output_value(o, self.all_rows, number)) for o in self.outputs]
        if self.all_rows:
            mapped = "IF(size(o.path) = 0, array(named_struct('i', o.start, 'v', 0)), o.path)"
            out = f"flatten(transform({snapshot}.out, o -> transform({mapped}, (x, k) -> {_struct(values)})))"
        else:
            out = f"transform({snapshot}.out, o -> {_struct(values)})"
        return _struct([("cursor", f"{snapshot}.cursor - {keep}"), ("matches", f"{snapshot}.matches"),
                        ("rows", f"slice(R, {keep} + 1, {snapshot}.end - {keep})"),
                        ("out", f"CAST({out} AS {self.out_type})")])

    @staticmethod
    def _checked(value: str) -> str:
        """``value``, unless a snapshot in ``S`` reports that AFTER MATCH SKIP cannot resume."""
        return (f"IF(exists(S, s -> s.error IS NOT NULL), raise_error(filter(S, s -> s.error IS NOT NULL)[0].error), "
                f"{value})")

    # -- parts ----------------------------------------------------------------------------------------------
    @property
    def state_type(self) -> str:
        if self.compact is not None:
            columns = f",v:{self.compact.columns_type}" if self.compact.columns else ""
            return f"struct<cursor:int,matches:bigint,rows:array<struct<e:{self.event_type},m:bigint{columns}>>>"
        return (f"struct<n:bigint,cursor:bigint,matches:bigint,recent:array<{self.event_type}>,"
                f"searches:array<{self.search_type}>>")

    @property
    def state_fields(self) -> tuple[str, ...]:
        return COMPACT_STATE if self.compact is not None else STATE

    def _initial(self) -> str:
        if self.compact is not None:
            return f"CAST(named_struct('cursor', 0, 'matches', 0, 'rows', array()) AS {self.state_type})"
        return (f"CAST(named_struct('n', 0, 'cursor', 0, 'matches', 0, 'recent', array(), 'searches', array()) "
                f"AS {self.state_type})")

    def _same_keys(self, left: str, right: str) -> str:
        return " AND ".join(f"{left}.{quote_name(k)} <=> {right}.{quote_name(k)}" for k in self.keys) or "true"

    @property
    def keeps_every_partition(self) -> bool:
        """Whether a partition's state matters without live searches: MATCH_NUMBER() counts every match,
        PREV reaches back across them."""
        if self.compact is not None:
            return self.compact.every
        return self.numbered or self.values.depth > 0

    @property
    def numbered(self) -> bool:
        """Whether an output reads MATCH_NUMBER()."""
        return numbered(self.outputs)

    def _fold(self, events: str, state: str) -> str:
        """The state and ``out`` after the rows ``events`` (an array), from ``state``."""
        begin = _struct([(f, f"{state}.{f}") for f in STATE] + [("out", f"CAST(array() AS {self.out_type})")])
        return f"aggregate({events}, {begin}, (acc, ev) -> {self.step('acc', 'ev')})"

    def _kept(self, state: str, out: str) -> str:
        """Whether a partition's row is stored: it has undecided searches or output, or every one is kept."""
        if self.keeps_every_partition:
            return "true"
        pending = "rows" if self.compact is not None else "searches"
        return f"size({state}.{pending}) > 0 OR size({out}) > 0"

    def _events(self, part: str, extra: str) -> list[str]:
        """The CTE of the stream's rows as structs (``e``), sorted by ORDER BY, then the other columns."""
        event = "struct(" + ", ".join(quote_name(name) for name, _ in self.columns) + ")"
        return [f"WITH events AS (SELECT {self._key_list}{event} AS e, {extra} FROM {quote_name(self.stream)}[{part}])"]

    @property
    def _key_list(self) -> str:
        return "".join(f"{quote_name(k)}, " for k in self.keys)

    def _joined(self, rows: str, columns: str) -> str:
        """The CTE of each partition's ``columns`` from ``rows`` (NULL for a partition without rows) joined with its
        row in Helper[j-1] (``known``, ``st``, ``h_out``, ``h_at``)."""
        merged = "".join(f"coalesce(l.{quote_name(k)}, h.{quote_name(k)}) AS {quote_name(k)}, " for k in self.keys)
        return (f", joined AS (SELECT {merged}{columns}, h.st IS NOT NULL AS known, coalesce(h.st, {self._initial()}) "
                f"AS st, h.out AS h_out, h.at AS h_at FROM {rows} AS l FULL OUTER JOIN {self.helper}[j-1] AS h "
                f"ON {self._same_keys('l', 'h')})")

    def helper_query(self, part: str, previous: bool) -> str:
        """Helper[part] from the stream's part and, when ``previous``, Helper[j-1] (UPDATE)."""
        key_list = self._key_list
        group = f" GROUP BY {', '.join(quote_name(k) for k in self.keys)}" if self.keys else ""
        lines = self._events(part, "PART_TIMESTAMP AS at")
        lines.append(f", live AS (SELECT {key_list}array_sort(collect_list(e)) AS evs, max(at) AS at FROM events{group})")
        if previous:
            lines.append(self._joined("live", "l.evs, l.at"))
        else:
            lines.append(f", joined AS (SELECT {key_list}evs, at, {self._initial()} AS st FROM live)")
        # a partition without rows in the part (evs NULL) keeps its row as it was
        events = f"coalesce(evs, CAST(array() AS array<{self.event_type}>))"
        carried = f"{'h_out, h_at, ' if previous else ''}at"
        if self.compact is not None:
            lines += self._searched(self.compact, events, "array(size(R) - size(st.rows))", f"{carried}, evs")
            step = _let("element_at(S, 1)", "sn", self._snapshot(self.compact, "sn"))
            lines.append(f", folded AS (SELECT {key_list}evs IS NULL AS idle, {carried}, {self._checked(step)} AS f "
                         f"FROM searched)")
        else:
            fold = self._fold(events, "st")
            # LATERAL VIEW binds the fold once: a filter on it is not pushed below it as a copy
            lines.append(f", folded AS (SELECT {key_list}evs IS NULL AS idle, {carried}, f "
                         f"FROM joined LATERAL VIEW explode(array({fold})) AS f)")
        state = _struct([(f, f"f.{f}") for f in self.state_fields])
        out, at = ("IF(idle, h_out, f.out)", "IF(idle, h_at, at)") if previous else ("f.out", "at")
        lines.append(f", stored AS (SELECT {key_list}{state} AS st, {out} AS out, {at} AS at FROM folded)")
        lines.append(f"SELECT {key_list}st, out, at FROM stored WHERE {self._kept('st', 'out')}")
        return "\n".join(lines)

    def helper_range_query(self) -> str:
        """The Helper's RANGE clause (maintainer/ranges.py): a run of parts in one query. Each partition's rows are
        grouped by part and folded part after part from its state in Helper[j-1] (the part before the run); the
        state after each part with rows is stored with that part's output, and carried unchanged through the
        parts without rows (output and ``at`` included), exactly as UPDATE stores them one part at a time (a
        state UPDATE would drop is dropped here too, so the next part starts from the initial state)."""
        key_list = self._key_list
        keys = [quote_name(k) for k in self.keys]
        group = f" GROUP BY {', '.join(keys)}" if keys else ""
        part_type = f"struct<p:bigint,st:{self.state_type},out:{self.out_type},at:timestamp>"
        lines = self._events("j", "__vdf_j AS p")
        lines.append(f", parts AS (SELECT {key_list}p, array_sort(collect_list(e)) AS evs FROM events GROUP BY {key_list}p)")
        lines.append(f", seqs AS (SELECT {key_list}array_sort(collect_list(named_struct('p', p, 'evs', evs))) AS ps "
                     f"FROM parts{group})")
        lines.append(self._joined("seqs", f"coalesce(l.ps, CAST(array() AS array<struct<p:bigint,evs:array<"
                                          f"{self.event_type}>>>)) AS ps"))
        at = f"timestamp_seconds(q.p * {self.partition_length})"
        if self.compact is not None:
            lines += self._searched(self.compact, "flatten(transform(ps, q -> q.evs))",
                                    "transform(ps, q -> size(q.evs))", "known, h_out, h_at, ps")
            snapshot = self._snapshot(self.compact, "sn")
            part = _let("element_at(S, i + 1)", "sn", _let(snapshot, "f", _struct(
                [("p", "q.p"), ("st", _struct([(f, f"f.{f}") for f in COMPACT_STATE])), ("out", "f.out"), ("at", at)])))
            done = self._checked(f"transform(ps, (q, i) -> {part})")
            lines.append(f", scanned AS (SELECT {key_list}known, st AS initial, h_out, h_at, {done} AS done "
                         f"FROM searched)")
        else:
            after = _struct([(f, f"f.{f}") for f in STATE])
            done = _struct([("p", "q.p"), ("st", after), ("out", "f.out"), ("at", at)])
            # a state that UPDATE would not have stored (no search, no output) is gone by the next part with rows:
            # the fold starts that part from the initial state, as UPDATE does, so both store the same rows
            entering = f"(IF(sc.live, sc.st, {self._initial()}))"
            folded = _let(self._fold("q.evs", entering), "f", _struct([
                ("st", after), ("out", f"concat(sc.out, array({done}))"), ("live", self._kept("f", "f.out"))]))
            scan = (f"aggregate(ps, named_struct('st', st, 'out', CAST(array() AS array<{part_type}>), 'live', true), "
                    f"(sc, q) -> {folded})")
            lines.append(f", scanned AS (SELECT {key_list}known, st AS initial, h_out, h_at, sc.out AS done FROM joined "
                         f"LATERAL VIEW explode(array({scan})) AS sc)")
        # each CTE below reads the one before it once: Spark inlines a CTE at every reference, and would run the
        # search again for each
        initial = _struct([("p", "CAST(__vdf_first - 1 AS bigint)"), ("st", "initial"), ("out", "h_out"),
                           ("at", "h_at")])
        entries = f"concat(IF(known, array({initial}), CAST(array() AS array<{part_type}>)), done)"
        lines.append(segments_sql(key_list, ("p", "st", "out", "at"), entries))
        # a part without rows keeps the row of the part before it, when that row is stored
        carried = (f"IF(next - 1 >= p + 1 AND ({self._kept('st', 'out')}), sequence(p + 1, next - 1), "
                   f"CAST(array() AS array<bigint>))")
        lines.append(f", steps AS (SELECT {key_list}c AS p, st, out, at FROM segments LATERAL VIEW "
                     f"explode(concat(IF(p >= __vdf_first, array(p), CAST(array() AS array<bigint>)), {carried})) AS c)")
        lines.append(f"SELECT {key_list}st, out, at, p AS __vdf_part FROM steps WHERE {self._kept('st', 'out')}")
        return "\n".join(lines)

    def final_query(self, part: str) -> str:
        """The final view's part: the user's query over the rows of the matches emitted in the part (not those a
        partition without rows in the part carries over)."""
        keys = [f"{quote_name(k)}" for k in self.keys]
        columns = keys + [f"o.{quote_name(o.name)} AS {quote_name(o.name)}" for o in self.outputs]
        rows = (f"(SELECT {', '.join(columns)} FROM {self.helper}[{part}] LATERAL VIEW explode(out) AS o "
                f"WHERE at = PART_TIMESTAMP)")
        return self.query.around(rows)

    def helper_text(self) -> str:
        helper = self.helper
        return viewdf_text(helper, [(f"INITIALIZE {helper}[i]", self.helper_query("i", False)),
                                    (f"UPDATE {helper}[j]", self.helper_query("j", True)),
                                    (f"RANGE {helper}[j]", self.helper_range_query())], self.partition_length,
                           f"UNCHANGED WHEN {quote_name(self.stream)}[j] IS EMPTY")

    def final_text(self) -> str:
        name = quote_name(self.name)
        return viewdf_text(name, [(f"INITIALIZE {name}[i]", self.final_query("i")),
                                  (f"UPDATE {name}[j]", self.final_query("j")),
                                  (f"RECOMPUTE {name}[j]", self.recompute)], self.partition_length,
                           f"EMPTY WHEN {quote_name(self.stream)}[j] IS EMPTY")


def position_slot(kind: str, variable: str | None) -> Slot:
    """The slot of a variable's first (``fpos``) or last (``lpos``) row position (None: any variable)."""
    return Slot(kind, variable, None, 0)
