"""Generate the Helper and final ViewDFs of a pattern query from its FSM (Algorithm 2, corrected).

``<view>__helper`` keeps, per group, the runs alive after each part: one column ``s<k>`` per state.
A state where two runs can never both be worth keeping holds at most one run (a struct); a state
whose future depends on auxiliary values holds a list (an array of structs, deduplicated by
dominance). Each part's events are folded in order (fast path without a loop for one event):

* every run tries its self edge and its proceed edge; a new run starts at every event (the paper
  never restarts a broken run, and filters the new part by the first edge's predicate);
* among runs in the same state with the same future, the preferred one is kept: the longest
  (earliest start), then the greediest (earlier Kleene variables took more events);
* an event no variable can take ends every run (the *killer* prefilter): only the other events
  are grouped, and for groups that have some, the last killer is looked up;
* where a group has at most one event per part, the step neither groups the events nor folds them
  nor looks up killers: it is the event joined with the group's runs, like a hand-written step. Over
  a stream declared ``UNIQUE (..) PER PART`` on some of the group keys it is the only UPDATE; over
  others it is a second one, ``UPDATE .. WHEN S[j] IS UNIQUE (keys)``, which the maintainer runs for
  the parts that have no key twice, as the step's own job finds (the general one for the rest).

The final view selects, per group, the preferred run in the accepting state after the group's last
event of the part (``matched``; the final state's own column when that is the same thing). Joins
compare keys with ``<=>`` (not NATURAL JOIN, which would also join on the timestamp) and a new group
starts with no runs (not state 0 treated as a value).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .pattern_direct import direct_runs_sql, direct_sql
from .pattern_fsm import LENGTH, PatternFSM, render
from .range_segments import segments_sql
from ..language.tokens import quote_name

Field = Callable[[str], str]       # field name -> SQL reading it from a run
Slot = Callable[[int], str]        # state -> SQL of that state's runs



@dataclass
class PatternTranslation:
    """The ViewDF statements of a pattern query."""

    name: str
    fsm: PatternFSM
    stream: str
    partition_length: int
    timestamp: str                 # the stream's timestamp column
    columns: list[str]             # the stream's columns, in schema order
    type_of: Callable[[str], str]  # types SQL over the stream's columns (see pattern_fsm.TypeProbe)
    single_events: bool = False    # the stream is UNIQUE PER PART on some of the group keys: one event
                                   # per group per part, so no grouping, fold or killer lookup

    @property
    def helper(self) -> str:
        return f"{quote_name(self.name)}__helper"

    # -- run structs ---------------------------------------------------------------------------
    @property
    def run_fields(self) -> list[tuple[str, str]]:
        fields = [(LENGTH, "bigint")] + [(self.fsm.entry_field(v), "bigint") for v in self.fsm.entries]
        return fields + [(aux.name, aux.type) for aux in self.fsm.auxes]

    @property
    def run_type(self) -> str:
        return "struct<" + ",".join(f"{quote_name(n)}:{t}" for n, t in self.run_fields) + ">"

    def slot_type(self, state: int) -> str:
        return f"array<{self.run_type}>" if self.fsm.many(state) else self.run_type

    def _empty(self, state: int) -> str:
        return f"CAST(array() AS {self.slot_type(state)})" if self.fsm.many(state) else \
            f"CAST(NULL AS {self.run_type})"

    def _successor(self, target: int, kind: str, field: Field, event: str) -> str:
        """The run after ``event`` moves a run (its fields read by ``field``) into ``target``."""
        values = []
        for name, kind_ in self.run_fields:
            values.append(f"'{name}', CAST({self._updated(name, target, kind, field, event)} AS {kind_})")
        return f"named_struct({', '.join(values)})"

    def _updated(self, name: str, target: int, kind: str, field: Field, event: str) -> str:
        if name == LENGTH:
            return f"{field(LENGTH)} + 1"
        entering = kind == "proceed"
        for variable in self.fsm.entries:
            if name == self.fsm.entry_field(variable):
                return field(LENGTH) if entering and variable.index == target else field(name)
        aux = next(a for a in self.fsm.auxes if a.name == name)
        value = f"({render(aux.argument, event=event)})"
        mine = aux.variable is None or aux.variable.index == target
        if not mine:
            return field(name)
        old = field(name)
        if aux.kind in ("value", "first"):
            return value if entering or aux.variable is None else old
        return {"last": value,
                "sum": f"coalesce({old} + {value}, {old}, {value})",
                "count": f"coalesce({old}, 0) + IF({value} IS NULL, 0, 1)",
                "min": f"least({old}, {value})",
                "max": f"greatest({old}, {value})"}[aux.kind]

    def _condition(self, target: int, kind: str, run: str, event: str) -> str:
        edge = self.fsm.edge(target, kind)
        assert edge is not None      # every state has a proceed edge, and Kleene states a self edge
        tests = [f"coalesce({render(p.template, event=event, run=run)}, false)" for p in edge.predicates]
        return " AND ".join(tests) or "true"

    def _preference(self, field: Field, state: int, entering: bool = False) -> str:
        """Bigger is preferred: more events (an earlier start), then later entries into the
        variables after Kleene variables (earlier Kleene variables took more events). ``field``
        reads a run; with ``entering``, the preference it has once it enters ``state``."""
        parts = [field(LENGTH)]
        for variable in self.fsm.entries:
            if variable.index < state or (variable.index == state and not entering):
                parts.append(field(self.fsm.entry_field(variable)))
            elif variable.index == state:
                parts.append(field(LENGTH))
        return parts[0] if len(parts) == 1 else "struct(" + ", ".join(parts) + ")"

    def _key(self, run: str, state: int) -> str:
        return "struct(" + ", ".join(f"{run}.{quote_name(a.name)}" for a in self.fsm.live(state)) + ")"

    # -- one event -------------------------------------------------------------------------------
    def step(self, slot: Slot, event: str, depth: int = 0) -> str:
        """The struct of every state's runs after ``event``, given the runs before it (``slot(k)``
        is the SQL of state k's runs). ``depth`` keeps lambda variable names unique."""
        fields = [f"'s{v.index}', {self._state_after(v.index, slot, event, depth)}" for v in self.fsm.variables]
        return f"named_struct({', '.join(fields)})"

    def _zero(self, name: str) -> str:
        return "CAST(0 AS bigint)" if name == LENGTH else f"CAST(NULL AS {dict(self.run_fields)[name]})"

    def _field(self, run: str) -> Field:
        return lambda name: f"{run}.{quote_name(name)}"

    def _state_after(self, target: int, slot: Slot, event: str, depth: int) -> str:
        kleene = self.fsm.variables[target - 1].kleene
        source = target - 1
        if not self.fsm.many(target) and (source == 0 or not self.fsm.many(source)):
            return self._single(target, kleene, slot, event)
        r, x, y = f"r{depth}", f"x{depth}", f"y{depth}"
        parts = []
        if kleene:
            parts.append(self._moves(target, "self", slot(target), self.fsm.many(target), event, r))
        if source == 0:
            parts.append(f"array(IF({self._condition(target, 'proceed', '', event)}, "
                         f"{self._successor(target, 'proceed', self._zero, event)}, NULL))")
        else:
            parts.append(self._moves(target, "proceed", slot(source), self.fsm.many(source), event, r))
        px, py = self._preference(self._field(x), target), self._preference(self._field(y), target)
        ordered = (f"array_sort(filter(concat({', '.join(parts)}), {x} -> {x} IS NOT NULL), ({x}, {y}) -> "
                   f"CASE WHEN {px} > {py} THEN -1 WHEN {px} < {py} THEN 1 ELSE 0 END)")
        if not self.fsm.many(target):
            return f"try_element_at({ordered}, 1)"
        kept, c, k = f"kept{depth}", f"c{depth}", f"k{depth}"
        return (f"aggregate({ordered}, {self._empty(target)}, ({kept}, {c}) -> IF(exists({kept}, {k} -> "
                f"{self._key(k, target)} <=> {self._key(c, target)}), {kept}, concat({kept}, array({c}))))")

    def _moves(self, target: int, kind: str, runs: str, many: bool, event: str, r: str) -> str:
        """Successors in ``target`` of the runs ``runs`` by one edge, as an array."""
        if many:
            return (f"transform(filter({runs}, {r} -> {self._condition(target, kind, r, event)}), "
                    f"{r} -> {self._successor(target, kind, self._field(r), event)})")
        return (f"array(IF({runs} IS NOT NULL AND {self._condition(target, kind, runs, event)}, "
                f"{self._successor(target, kind, self._field(runs), event)}, NULL))")

    def _single(self, target: int, kleene: bool, slot: Slot, event: str) -> str:
        """At most one run per state: pick the preferred of (stay, enter) without arrays."""
        source = target - 1
        if source == 0:
            enter_ok = self._condition(target, "proceed", "", event)
            enter = self._successor(target, "proceed", self._zero, event)
        else:
            enter_ok = f"{slot(source)} IS NOT NULL AND {self._condition(target, 'proceed', slot(source), event)}"
            enter = self._successor(target, "proceed", self._field(slot(source)), event)
        if not kleene:
            return f"CASE WHEN {enter_ok} THEN {enter} END"
        own = slot(target)
        stay_ok = f"{own} IS NOT NULL AND {self._condition(target, 'self', own, event)}"
        stay = self._successor(target, "self", self._field(own), event)
        # a run that stays is older than a new one; otherwise compare where each would stand
        better = "true" if source == 0 else \
            (f"{self._preference(self._field(own), target)} >= "
             f"{self._preference(self._field(slot(source)), target, entering=True)}")
        return (f"CASE WHEN {stay_ok} AND (NOT ({enter_ok}) OR {better}) THEN {stay} "
                f"WHEN {enter_ok} THEN {enter} END")

    # -- parts ---------------------------------------------------------------------------------
    def matched(self, state: str) -> str:
        """The preferred accepting run, from the final state's runs ``state``."""
        return f"try_element_at({state}, 1)" if self.fsm.many(self.fsm.final.index) else state

    @property
    def carries(self) -> bool:
        """CONTIGUITY EVENTS: a group's runs are carried through parts where it has no event."""
        return self.fsm.query.clause.contiguity == "EVENTS"

    @property
    def match_column(self) -> str:
        """The Helper column holding ``matched``. Without CONTIGUITY EVENTS every group in Helper[j]
        has events in part j, so a single stored final state's run is the match: no copy is kept."""
        final = self.fsm.final.index
        if self.carries or self.fsm.many(final) or final not in self.fsm.stored_states():
            return "matched"
        return f"s{final}"

    def _event_struct(self) -> str:
        ordered = [self.timestamp] + [c for c in self.columns if c != self.timestamp]
        return "struct(" + ", ".join(quote_name(c) for c in ordered) + ")"

    def _keys(self, table: str) -> list[str]:
        return [f"{table}.{quote_name(k)}" for k in self.fsm.query.keys]

    def _same_key(self, left: str, right: str) -> str:
        return " AND ".join(f"{left}.{quote_name(k)} <=> {right}.{quote_name(k)}" for k in self.fsm.query.keys) or "true"

    def _filter(self) -> str:
        condition = self.fsm.query.filter_sql
        return f" WHERE {condition}" if condition is not None else ""

    def _previous(self, state: int, killed: str | None = None) -> str:
        """State ``state``'s runs in Helper[j-1] (``h``); a group new there has none (not NULL), nor
        does a group for which ``killed`` holds."""
        runs = f"coalesce(h.s{state}, {self._empty(state)})" if self.fsm.many(state) else f"h.s{state}"
        if killed is not None:
            runs = f"IF({killed}, {self._empty(state)}, {runs})"
        return f"{runs} AS s{state}"

    def helper_query(self, part: str, previous: str | None, single: bool | None = None) -> str:
        """Helper[part] from the stream's part and, for UPDATE, Helper[previous]; ``single``: the part has
        at most one event per group (the stream's declaration by default)."""
        single = self.single_events if single is None else single
        fsm = self.fsm
        keys = ", ".join(quote_name(k) for k in fsm.query.keys)
        key_list, group = (keys + ", ", f" GROUP BY {keys}") if keys else ("", "")
        stored = fsm.stored_states()
        carry = self.carries
        killer = render(fsm.killer, event="") if fsm.killer is not None else None
        stamp = ", PART_TIMESTAMP AS at" if carry else ""       # when a match is found (the final view's part)
        lines = [f"WITH events AS (SELECT {key_list}{self._event_struct()} AS e"
                 + (f", {killer} AS killer" if killer else "") + f"{stamp} FROM {quote_name(self.stream)}[{part}]"
                 f"{self._filter()})"]
        if single:
            # one event per group: it is the group's whole part (n = 1), and a killer ends its runs
            if carry and killer:
                lines.append(f", live AS (SELECT {key_list}IF(killer, 0, 1) AS n, e, killer{stamp and ', at'} FROM events)")
            else:
                lines.append(f", live AS (SELECT {key_list}1 AS n, e{stamp and ', at'} FROM events"
                             + (" WHERE NOT killer)" if killer else ")"))
            events = ["n", "e"]
        else:
            lines.append(f", live AS (SELECT {key_list}array_sort(collect_list(e)) AS evs{stamp and ', max(at) AS at'} "
                         f"FROM events" + (" WHERE NOT killer" if killer else "") + f"{group})")
            events = ["evs"]
        if previous is None:
            slots = "".join(f", {self._empty(k)} AS s{k}" for k in stored)
            unmatched = f", at, CAST(NULL AS {self.run_type}) AS h_matched, CAST(NULL AS timestamp) AS h_matched_at" \
                if carry else ""
            lines.append(f", joined AS (SELECT {key_list}{', '.join(events)}{slots}{unmatched} FROM live)")
        elif carry:
            merged = ", ".join(f"coalesce(live.{quote_name(k)}, h.{quote_name(k)}) AS {quote_name(k)}" for k in fsm.query.keys)
            cut = single and killer
            slots = "".join(f", {self._previous(k, 'coalesce(live.killer, false)' if cut else None)}" for k in stored)
            carried = "coalesce(live.n, 0) AS n, live.e" if single else "coalesce(live.evs, array()) AS evs"
            lines.append(f", joined AS (SELECT {merged + ', ' if merged else ''}{carried}"
                         f"{slots}, live.at, h.matched AS h_matched, h.matched_at AS h_matched_at "
                         f"FROM live FULL OUTER JOIN {quote_name(self.helper)}[{previous}] AS h "
                         f"ON {self._same_key('live', 'h')})")
        else:
            slot_columns = [self._previous(k) for k in stored]
            columns = self._keys("live") + [f"live.{c}" for c in events] + slot_columns
            lines.append(f", joined AS (SELECT {', '.join(columns)} FROM live "
                         f"LEFT JOIN {quote_name(self.helper)}[{previous}] AS h ON {self._same_key('live', 'h')})")
        if killer and not single:
            # only groups with other events (or runs) in this part need their last killer: a semi-join
            # on the events themselves (broadcast when small) keeps the other killers off the shuffle
            holders = "joined AS y WHERE" if carry and previous is not None else "events AS y WHERE NOT y.killer AND"
            lines.append(f", cut AS (SELECT {key_list}max(e) AS last_killer FROM events AS x WHERE killer AND "
                         f"EXISTS (SELECT 1 FROM {holders} {self._same_key('x', 'y')}){group})")
            slots = "".join(f", IF(cut.last_killer IS NULL, p.s{k}, {self._empty(k)}) AS s{k}" for k in stored)
            passed = ", p.at, p.h_matched, p.h_matched_at" if carry else ""
            lines.append(f", prior AS (SELECT {', '.join(self._keys('p'))}{', ' if keys else ''}"
                         f"IF(cut.last_killer IS NULL, p.evs, filter(p.evs, z -> z > cut.last_killer)) AS evs{slots}"
                         f"{passed} FROM joined AS p LEFT JOIN cut ON {self._same_key('p', 'cut')})")
        else:
            lines.append(", prior AS (SELECT * FROM joined)")
        before = {v.index: (f"s{v.index}" if v.index in stored else self._empty(v.index)) for v in fsm.variables}
        slots = f"named_struct({', '.join(repr(f's{k}') + ', ' + before[k] for k in before)})"
        empty = f"named_struct({', '.join(repr(f's{k}') + ', ' + self._empty(k) for k in before)})"
        # LATERAL VIEW binds the runs once: a filter on them is not pushed below it (which would
        # copy the whole step into the filter once per state)
        passed = ", at, h_matched, h_matched_at" if carry else ""
        if single:
            one = self.step(lambda k: before[k], "e")
            folded = f"CASE WHEN n = 0 THEN {slots} ELSE {one} END" if carry else one   # n = 0: runs carried
            lines.append(f", folded AS (SELECT {key_list}n, st{passed} FROM prior LATERAL VIEW explode(array(\n"
                         f"    {folded})) AS st)")
        else:
            one = self.step(lambda k: before[k], "evs[0]")
            several = self.step(lambda k: f"acc.s{k}", "ev", depth=1)
            lines.append(f", folded AS (SELECT {key_list}size(evs) AS n, st{passed} FROM prior LATERAL VIEW explode(array(\n"
                         f"    CASE WHEN size(evs) = 0 THEN {slots if carry else empty}\n"
                         f"    WHEN size(evs) = 1 THEN {one}\n"
                         f"    ELSE aggregate(evs, {slots}, (acc, ev) -> {several}) END)) AS st)")
        final = fsm.final.index
        alive = [f"size(st.s{k}) > 0" if fsm.many(k) else f"st.s{k} IS NOT NULL" for k in stored]
        outputs = [f"st.s{k} AS s{k}" for k in stored]
        if carry:
            # a group without events in the part keeps its row as it was, match included (UNCHANGED WHEN)
            match = self.matched(f"st.s{final}")
            lines.append(f", matching AS (SELECT *, IF(n > 0, {match}, h_matched) AS matched, "
                         f"IF(n > 0, IF({match} IS NULL, NULL, at), h_matched_at) AS matched_at FROM folded)")
            outputs += ["matched", "matched_at"]
            alive.append("matched IS NOT NULL")
            lines.append(f"SELECT {key_list}{', '.join(outputs)} FROM matching\nWHERE {' OR '.join(alive)}")
            return "\n".join(lines)
        if self.match_column == "matched":
            matched = f"IF(n > 0, {self.matched(f'st.s{final}')}, NULL)"
            outputs.append(f"{matched} AS matched")
            alive.append(f"{matched} IS NOT NULL")
        lines.append(f"SELECT {key_list}{', '.join(outputs)} FROM folded\nWHERE {' OR '.join(alive)}")
        return "\n".join(lines)

    def helper_range_query(self) -> str:
        """The Helper's RANGE clause (maintainer/ranges.py): every part of a run in one query. Each group's
        events are grouped by part and folded over the run's parts in order, starting from its runs in
        Helper[j-1] (the part before the run); the runs after each part with events are emitted, and
        with CONTIGUITY EVENTS carried unchanged through the parts without. Parts, killers and groups
        behave exactly as in the UPDATE clause, part after part."""
        fsm = self.fsm
        keys = ", ".join(quote_name(k) for k in fsm.query.keys)
        key_list, group = (keys + ", ", f" GROUP BY {keys}") if keys else ("", "")
        stored, carry = fsm.stored_states(), self.carries
        killer = render(fsm.killer, event="") if fsm.killer is not None else None
        lines = [f"WITH events AS (SELECT {key_list}{self._event_struct()} AS e" + (f", {killer} AS killer" if killer else "")
                 + f", __vdf_j AS p FROM {quote_name(self.stream)}[j]{self._filter()})"]
        if killer:
            lines.append(f", cuts AS (SELECT {key_list}p, max(e) AS last_killer FROM events WHERE killer "
                         f"GROUP BY {key_list}p)")
            lines.append(f", live AS (SELECT {key_list}p, array_sort(collect_list(e)) AS evs FROM events "
                         f"WHERE NOT killer GROUP BY {key_list}p)")
            merged = "".join(f"coalesce(l.{quote_name(k)}, c.{quote_name(k)}) AS {quote_name(k)}, " for k in fsm.query.keys)
            lines.append(f", parts AS (SELECT {merged}coalesce(l.p, c.p) AS p, IF(c.last_killer IS NULL, "
                         f"coalesce(l.evs, array()), filter(coalesce(l.evs, array()), z -> z > c.last_killer)) AS evs, "
                         f"c.last_killer IS NOT NULL AS wipe FROM live AS l {'FULL OUTER' if carry else 'LEFT'} JOIN "
                         f"cuts AS c ON {self._same_key('l', 'c')} AND l.p = c.p)")
        else:
            lines.append(f", parts AS (SELECT {key_list}p, array_sort(collect_list(e)) AS evs, false AS wipe "
                         f"FROM events GROUP BY {key_list}p)")
        lines.append(f", seqs AS (SELECT {key_list}array_sort(collect_list(struct(p, evs, wipe))) AS ps FROM parts{group})")
        merged = "".join(f"coalesce(seqs.{quote_name(k)}, h.{quote_name(k)}) AS {quote_name(k)}, " for k in fsm.query.keys)
        slots = "".join(f", {self._previous(k)}" for k in stored)
        matches = ", h.matched AS h_matched, h.matched_at AS h_matched_at" if carry else ""
        lines.append(f", joined AS (SELECT {merged}coalesce(seqs.ps, array()) AS ps{slots}{matches} FROM seqs FULL OUTER "
                     f"JOIN {quote_name(self.helper)}[j-1] AS h ON {self._same_key('seqs', 'h')})")
        before = {v.index: (f"s{v.index}" if v.index in stored else self._empty(v.index)) for v in fsm.variables}
        initial = f"named_struct({', '.join(repr(f's{k}') + ', ' + before[k] for k in before)})"
        empty = f"named_struct({', '.join(repr(f's{k}') + ', ' + self._empty(k) for k in before)})"
        state = "struct<" + ",".join(f"s{k}:{self.slot_type(k)}" for k in before) + ">"
        one = self.step(lambda k: f"pre.s{k}", "q.evs[0]")
        several = self.step(lambda k: f"acc.s{k}", "ev", depth=1)
        fold = (f"CASE WHEN size(q.evs) = 0 THEN pre WHEN size(q.evs) = 1 THEN {one} "
                f"ELSE aggregate(q.evs, pre, (acc, ev) -> {several}) END")
        # without CONTIGUITY EVENTS a part without events ends a group's runs
        prior = f"CASE WHEN q.wipe{'' if carry else ' OR q.p <> sc.last + 1'} THEN {empty} ELSE sc.st END"
        final = fsm.final.index
        # with CONTIGUITY EVENTS a group's match (and the part it was found in) stays until its next event
        kept = (f"named_struct('m', IF(size(q.evs) > 0, {self.matched(f'nx.s{final}')}, sc.kept.m), 'at', "
                f"IF(size(q.evs) > 0, IF({self.matched(f'nx.s{final}')} IS NULL, NULL, timestamp_seconds(q.p * "
                f"{self.partition_length})), sc.kept.at))") if carry else "sc.kept"
        kept_type = f"struct<m:{self.run_type},at:timestamp>"
        start = "named_struct('m', h_matched, 'at', h_matched_at)" if carry else \
            f"CAST(named_struct('m', NULL, 'at', NULL) AS {kept_type})"
        emitted = f"named_struct('p', q.p, 'n', size(q.evs), 'st', nx, 'kept', {kept})"
        scan = (f"aggregate(ps, named_struct('last', CAST(__vdf_first - 1 AS bigint), 'st', initial, 'kept', kept, "
                f"'out', CAST(array() AS array<struct<p:bigint,n:int,st:{state},kept:{kept_type}>>)), (sc, q) -> "
                f"transform(array({prior}), pre -> transform(array({fold}), nx -> transform(array({emitted}), "
                f"o -> named_struct('last', q.p, 'st', nx, 'kept', o.kept, 'out', concat(sc.out, array(o))))[0])[0])[0])")
        lines.append(f", starting AS (SELECT {key_list}{initial} AS initial, {start} AS kept, ps FROM joined)")
        lines.append(f", scanned AS (SELECT {key_list}initial, kept, {scan} AS sc FROM starting)")
        alive = lambda run: [f"size({run}.s{k}) > 0" if fsm.many(k) else f"{run}.s{k} IS NOT NULL"  # noqa: E731
                             for k in stored]
        if carry:
            # each CTE below reads the one before it once: Spark inlines a CTE at every reference, and would fold
            # the parts again for each
            entry_type = f"struct<p:bigint,n:int,st:{state},kept:{kept_type}>"
            from_helper = f"CAST(named_struct('p', __vdf_first - 1, 'n', 0, 'st', initial, 'kept', kept) AS {entry_type})"
            entries = (f"concat(IF({' OR '.join(alive('initial') + ['kept.m IS NOT NULL'])}, array({from_helper}), "
                       f"CAST(array() AS array<{entry_type}>)), sc.out)")
            lines.append(segments_sql(key_list, ("p", "n", "st", "kept"), entries))
            # a part of its own, then the parts without events up to the next (n = 0)
            own = "IF(p >= __vdf_first, array(named_struct('p', p, 'n', n)), CAST(array() AS array<struct<p:bigint,n:int>>))"
            after = ("transform(IF(next - 1 >= p + 1, sequence(p + 1, next - 1), CAST(array() AS array<bigint>)), "
                     "c -> named_struct('p', c, 'n', 0))")
            lines.append(f", steps AS (SELECT {key_list}c.p, c.n, st, kept FROM segments "
                         f"LATERAL VIEW explode(concat({own}, {after})) AS c)")
        else:
            lines.append(f", steps AS (SELECT {key_list}o.p AS p, o.n AS n, o.st AS st FROM scanned "
                         f"LATERAL VIEW explode(sc.out) AS o)")
        conditions = alive("st")
        outputs = [f"st.s{k} AS s{k}" for k in stored]
        if carry:
            outputs += ["kept.m AS matched", "kept.at AS matched_at"]
            conditions.append("kept.m IS NOT NULL")
        elif self.match_column == "matched":
            matched = f"IF(n > 0, {self.matched(f'st.s{final}')}, NULL)"
            outputs.append(f"{matched} AS matched")
            conditions.append(f"{matched} IS NOT NULL")
        lines.append(f"SELECT {key_list}{', '.join(outputs)}, p AS __vdf_part FROM steps\nWHERE {' OR '.join(conditions)}")
        return "\n".join(lines)

    def _unique_update(self) -> str:
        """Over a stream not declared UNIQUE on the group keys: the single-event UPDATE for the parts that have
        at most one event per group (the step's own job finds which)."""
        keys = self.fsm.query.keys
        if self.single_events or not keys:
            return ""
        helper = quote_name(self.helper)
        return (f"UPDATE {helper}[j] WHEN {quote_name(self.stream)}[j] IS UNIQUE ({', '.join(map(quote_name, keys))}) AS\n"
                f"{_indent(self.helper_query('j', 'j-1', single=True))}\n")

    def final_query(self, part: str) -> str:
        match = self.match_column
        outputs = [f"{render(t, run=match)} AS {quote_name(name)}" for name, t in self.fsm.outputs]
        found_here = " AND matched_at = PART_TIMESTAMP" if self.carries else ""     # not a match carried over
        return (f"SELECT {', '.join(outputs)}\nFROM {quote_name(self.helper)}[{part}]\n"
                f"WHERE {match} IS NOT NULL{found_here}")

    def _declared(self, fact: str) -> str:
        """With CONTIGUITY EVENTS, a part without events changes no group: the Helper's part is the one
        before it, and the final view's part is empty."""
        return f"{fact} WHEN {quote_name(self.stream)}[j] IS EMPTY\n" if self.carries else ""

    def helper_text(self) -> str:
        helper = quote_name(self.helper)
        return (f"CREATE VIEW {helper} AS\nINITIALIZE {helper}[i] AS\n{_indent(self.helper_query('i', None))}\n"
                f"UPDATE {helper}[j] AS\n{_indent(self.helper_query('j', 'j-1'))}\n{self._unique_update()}"
                f"RANGE {helper}[j] AS\n{_indent(self.helper_range_query())}\n"
                f"{self._declared('UNCHANGED')}PARTITION LENGTH {self.partition_length}")

    def direct_runs(self) -> str | None:
        """The final view's RECOMPUTE for a run of parts in one query (VERIFY VIEW; pattern_direct.direct_runs_sql)."""
        return direct_runs_sql(self.fsm.query, self.stream, self.partition_length, self.timestamp, self.columns,
                               self.type_of)

    def final_text(self) -> str:
        direct = direct_sql(self.fsm.query, self.stream, self.partition_length, self.timestamp, self.columns,
                            self.type_of)
        name = quote_name(self.name)
        return (f"CREATE VIEW {name} AS\nINITIALIZE {name}[i] AS\n{_indent(self.final_query('i'))}\n"
                f"UPDATE {name}[j] AS\n{_indent(self.final_query('j'))}\n"
                f"RECOMPUTE {name}[j] AS\n{_indent(direct)}\n"
                f"{self._declared('EMPTY')}PARTITION LENGTH {self.partition_length}")


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.split("\n"))


def aux_rows(fsm: PatternFSM) -> list[dict]:
    """The auxiliary values for EXPLAIN: name, type, what it holds, which states' futures need it."""
    rows = [{"value": LENGTH, "type": "bigint", "holds": "events in the run (count(*), longest-run order)",
             "decides future in states": ""}]
    for variable in fsm.entries:
        rows.append({"value": fsm.entry_field(variable), "type": "bigint",
                     "holds": f"events before the run entered {variable.name} (greedy order)",
                     "decides future in states": ""})
    for aux in fsm.auxes:
        states = sorted(s for s in range(1, len(fsm.variables) + 1) if aux in fsm.live(s))
        rows.append({"value": aux.name, "type": aux.type, "holds": aux.description,
                     "decides future in states": ", ".join(fsm.variables[s - 1].name for s in states)})
    return rows


