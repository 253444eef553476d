"""Pattern views against an independent backtracking oracle (tests/pattern_oracle.py): random patterns
and streams (hypothesis), a corpus of tricky cases with hand-computed rows, and the Helper's state
staying bounded on a long run. For every part: stored incremental rows == oracle == RECOMPUTE (Direct).
Each random test draws 4 examples a run in ``./run test`` (each run draws new ones) and 30 in ``./run stress``;
VIEWDF_PATTERN_EXAMPLES sets the first number."""

from __future__ import annotations

import itertools
import os
from dataclasses import replace

import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from oracles import rows, rows_by_part
from pattern_oracle import Agg, Arith, Cmp, Const, Pattern, Ref, expected

T0 = pd.Timestamp("2015-01-01 10:00")
STREAM = "CREATE STREAM M (ts TIMESTAMP, src STRING, x INT, y INT) TIMESTAMP ts PARTITION LENGTH 60"
OPS = st.sampled_from([">=", "<=", "<>", ">", "<", "="])
FUNCTIONS = st.sampled_from(["avg", "sum", "count", "min", "max"])
_names = itertools.count()
EXAMPLES = int(os.environ.get("VIEWDF_PATTERN_EXAMPLES", "4"))
STRESS_EXAMPLES = 30


def stream(events: list[tuple]) -> pd.DataFrame:
    """(minute, second, src, x, y) events as a frame of M."""
    frame = pd.DataFrame([(T0 + pd.Timedelta(minutes=m, seconds=s), src, x, y) for m, s, src, x, y in events],
                         columns=["ts", "src", "x", "y"])
    return frame.astype({"x": "Int32", "y": "Int32"})


def check(wh, data: pd.DataFrame, *patterns: Pattern, schema: str = STREAM, recompute: bool = True,
          by_part: bool = False) -> list[dict]:
    """Create a view V0, V1, ... for each pattern, ingest ``data`` (``by_part``: one batch per minute, so
    each part is a step of its own), and assert for every part of the stream's range: stored rows ==
    oracle rows (== recomputed rows, unless ``recompute`` is False, then at the last part only). Returns
    the oracle's rows by part, for each pattern."""
    wh.execute(schema)
    for number, pattern in enumerate(patterns):
        wh.execute(pattern.sql(f"V{number}"))
    minutes = pd.to_datetime(data["ts"]).dt.floor("min")
    for _, batch in (data.groupby(minutes, sort=True) if by_part else [(None, data)]):
        wh.ingest("M", batch)
    stamps = list(pd.date_range(minutes.min(), minutes.max(), freq="min"))
    found = []
    for number, pattern in enumerate(patterns):
        want = expected(data, pattern)
        columns = [alias for alias, _ in pattern.select]
        stored = rows_by_part(wh.execute(f"SELECT * FROM V{number}"), columns)
        assert stored.keys() <= set(stamps), stored
        for stamp in stamps:
            assert stored.get(stamp, []) == want.get(stamp, []), (f"V{number}", stamp, "stored",
                                                                  stored.get(stamp), "oracle", want.get(stamp))
        for stamp in stamps if recompute else stamps[-1:]:
            again = rows(wh.recompute(f"V{number}", stamp), columns)
            assert again == want.get(stamp, []), (f"V{number}", stamp, "recomputed", again, "oracle", want.get(stamp))
        found.append(want)
    return found


# -- random patterns ---------------------------------------------------------------------------------
@st.composite
def conjunct(draw, variables: tuple, index: int) -> Cmp:
    """One WHERE conjunct owned by variable ``index``, from the grammar's shapes."""
    var, kleene = variables[index]
    singles = [w for w, k in variables[:index] if not k]
    kleenes = [w for w, k in variables[:index] if k]

    def current(col: str) -> Ref:
        return Ref(var, draw(st.sampled_from(["cur", "i"])) if kleene else "cur", col)

    shapes = ["const"] + ["single"] * bool(singles) + ["earlier kleene"] * bool(kleenes) + \
        ["prev", "first", "running"] * kleene
    shape = draw(st.sampled_from(shapes))
    if shape == "const":
        return Cmp(draw(OPS), current(draw(st.sampled_from(["x", "x", "y"]))), Const(draw(st.integers(0, 4))))
    if shape == "single":
        right = Ref(draw(st.sampled_from(singles)), "cur", draw(st.sampled_from(["x", "x", "y"])))
        shift = draw(st.integers(-1, 1))
        return Cmp(draw(OPS), current("x"), Arith("+", right, Const(shift)) if shift else right)
    if shape == "earlier kleene":
        other = draw(st.sampled_from(kleenes))
        right = draw(st.sampled_from([Ref(other, "first", "x"), Ref(other, "last", "x"),
                                      Agg(draw(FUNCTIONS), other, draw(st.sampled_from(["x", "y"])))]))
        return Cmp(draw(OPS), current("x"), right)
    if shape == "prev":
        return Cmp(draw(OPS), current("x"), Ref(var, "prev", "x"))
    if shape == "first":
        return Cmp(draw(OPS), current("x"), Ref(var, "first", "x"))
    return Cmp(draw(OPS), current("x"), Agg(draw(FUNCTIONS), var, draw(st.sampled_from(["x", "y"])), earlier=True))


@st.composite
def patterns(draw) -> Pattern:
    """2-4 variables (random Kleene flags), 0-2 conjuncts each, a random SELECT list, filter and contiguity."""
    kleene = draw(st.lists(st.booleans(), min_size=2, max_size=4))
    variables = tuple(zip("abcd", kleene))
    where = tuple(c for index in range(len(variables))
                  for c in draw(st.lists(conjunct(variables, index), max_size=1 + (index > 0))))
    optional = [("sx", Agg("sum", None, "x")), ("ay", Agg("avg", None, "y")), ("hx", Agg("max", None, "x")),
                ("cy", Agg("count", None, "y"))]
    for var, k in variables:
        if not k:
            optional += [(f"{var}_x", Ref(var, "cur", "x")), (f"{var}_ts", Ref(var, "cur", "ts"))]
            continue
        optional += [(f"{var}_last", Ref(var, "last", "x")), (f"{var}_cy", Agg("count", var, "y")),
                     (f"{var}_lx", Agg("min", var, "x")), (f"{var}_up", Arith("+", Ref(var, "last", "x"), Const(1)))]
        optional += [(f"{var}_first", Ref(var, "first", "x")),
                     (f"{var}_span", Arith("-", Ref(var, "last", "x"), Ref(var, "first", "x")))]
    picked = draw(st.sets(st.sampled_from(range(len(optional))), max_size=5))
    select = (("src", Ref(None, "cur", "src")), ("n", Agg("count*", None, "")),
              *(optional[i] for i in sorted(picked)))
    filter_ = Cmp("<>", Ref(None, "cur", "x"), Const(draw(st.integers(0, 4)))) if draw(st.booleans()) and \
        draw(st.booleans()) else None
    return Pattern(variables, where, select, ("src",), draw(st.sampled_from([None, "PARTS", "EVENTS"])), filter_)


@st.composite
def streams(draw) -> pd.DataFrame:
    """Several groups (NULL sometimes), 0-2 events per group and part, ties on the timestamp."""
    groups = ["p", "q"] + [None] * draw(st.booleans())
    events = [(minute, draw(st.sampled_from([0, 30])), src, draw(st.integers(0, 4)),
               draw(st.one_of(st.integers(0, 4), st.integers(0, 4), st.none())))
              for minute in range(draw(st.integers(3, 5))) for src in groups
              for _ in range(draw(st.sampled_from([1, 2, 1, 0, 2])))]
    return stream(events or [(0, 0, "p", 1, 1)])


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(pattern=patterns(), data=streams())
def test_random_patterns_match_oracle_and_recompute(make_warehouse, pattern, data):
    check(make_warehouse(f"random{next(_names)}"), data, pattern)


@pytest.mark.stress
@settings(max_examples=STRESS_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(pattern=patterns(), data=streams())
def test_random_patterns_match_oracle_and_recompute_at_length(make_warehouse, pattern, data):
    check(make_warehouse(f"random{next(_names)}"), data, pattern)


RISING = Pattern((("a", False), ("b", True)), (Cmp(">", Ref("b", "cur", "x"), Ref("a", "cur", "x")),),
                 (("src", Ref(None, "cur", "src")), ("n", Agg("count*", None, ""))), ("src",))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(pattern=patterns(), data=streams())
@example(pattern=RISING, data=stream([(0, 0, "p", 1, 1), (1, 0, "p", 2, 2), (1, 0, "q", 0, 0), (2, 0, "p", 3, 3),
                                      (2, 30, "p", 4, 4), (2, 0, None, 1, 1), (2, 30, None, 2, 2), (3, 0, "p", 5, 5)]))
@example(pattern=RISING, data=stream([(0, 0, "q", 0, 0), (2, 0, "q", 0, 0)]))           # a gap: minute 1 sealed
def test_each_part_gets_the_plan_its_keys_allow_and_matches_oracle(make_warehouse, pattern, data):
    """A stream without UNIQUE, ingested part by part, mixing parts where each group has one event with
    parts where some group has two (ties and NULL groups included): the Helper's single-event UPDATE runs
    exactly for the former, the general one for the latter, and every part equals the oracle and Direct.
    (Range steps are off: a batch that seals a gap makes a run of parts, which one range step computes with
    the RANGE clause, whatever the parts hold.)"""
    wh = make_warehouse(f"mixed{next(_names)}")
    wh.maintainer.range_steps = False
    check(wh, data, pattern, by_part=True)
    minutes = pd.to_datetime(data["ts"]).dt.floor("min")
    repeats = data.assign(minute=minutes, key=data["src"].fillna("<null>")).groupby("minute")["key"] \
        .agg(lambda keys: keys.duplicated().any())
    parts = wh.catalog.state("V0__helper").parts
    for minute, repeated in repeats.items():
        if minute == minutes.min():
            continue        # INITIALIZE
        subscript = int(minute.timestamp()) // 60
        assert parts[subscript].how == ("update" if repeated else "update when unique"), (minute, parts[subscript])


UNIQUE_STREAM = STREAM + " UNIQUE (src) PER PART"


@st.composite
def single_event_streams(draw) -> pd.DataFrame:
    """At most one event per group and part (UNIQUE (src) PER PART holds), missing parts, NULL groups."""
    groups = ["p", "q"] + [None] * draw(st.booleans())
    events = [(minute, draw(st.sampled_from([0, 30])), src, draw(st.integers(0, 4)),
               draw(st.one_of(st.integers(0, 4), st.none())))
              for minute in range(draw(st.integers(3, 6))) for src in groups if draw(st.sampled_from([1, 1, 0]))]
    return stream(events or [(0, 0, "p", 1, 1)])


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(pattern=patterns(), data=single_event_streams())
def test_single_event_plan_matches_oracle(make_warehouse, pattern, data):
    """Over a UNIQUE (src) PER PART stream the Helper takes the plan without grouping, folding or
    killer lookup; it must give the oracle's rows all the same."""
    wh = make_warehouse(f"single{next(_names)}")
    check(wh, data, pattern, schema=UNIQUE_STREAM)
    definition = wh.catalog.get("V0__helper").definition
    update = definition.split("\nUPDATE ", 1)[1].split("\nRANGE ", 1)[0]      # the RANGE clause folds runs of parts
    assert "collect_list" not in update and "aggregate(evs" not in update and "last_killer" not in update


def test_single_event_plan_needs_unique_group_keys(make_warehouse):
    """UNIQUE on columns outside GROUP BY does not make a group's events single: the general plan stays."""
    wh = make_warehouse("unique_not_keys")
    pattern = Pattern((("a", False), ("b", True)), (Cmp(">", Ref("b", "cur", "x"), Ref("a", "cur", "x")),),
                      (("src", Ref(None, "cur", "src")), ("n", Agg("count*", None, ""))), ("src",))
    data = stream([(0, 0, "p", 1, 1), (0, 30, "p", 2, 2), (1, 0, "p", 3, 3), (1, 0, "q", 0, 0)])
    check(wh, data, pattern, schema=STREAM + " UNIQUE (src, y) PER PART")
    assert "collect_list" in wh.catalog.get("V0__helper").definition


# -- a corpus of tricky cases ------------------------------------------------------------------------
PAPER = "CREATE STREAM M (ts TIMESTAMP, src STRING, dest STRING, loss INT) TIMESTAMP ts PARTITION LENGTH 60"
SRC, DEST = "10.0.0.1", "10.0.0.2"
COUNT = Agg("count*", None, "")
PAIR = (("src", Ref(None, "cur", "src")), ("dest", Ref(None, "cur", "dest")))


def at(minute: int) -> pd.Timestamp:
    return T0 + pd.Timedelta(minutes=minute)


def losses(events: list[tuple]) -> pd.DataFrame:
    """(minute, second, src, dest, loss) events as a frame of the paper's stream M."""
    frame = pd.DataFrame([(at(m) + pd.Timedelta(seconds=s), src, dest, loss) for m, s, src, dest, loss in events],
                         columns=["ts", "src", "dest", "loss"])
    return frame.astype({"loss": "Int32"})


def over(threshold: int, names: str, kleene: str = "") -> tuple[tuple, tuple]:
    """Variables ``names`` (those in ``kleene`` with +) and ``v.loss > threshold`` for each."""
    return (tuple((v, v in kleene) for v in names),
            tuple(Cmp(">", Ref(v, "cur", "loss"), Const(threshold)) for v in names))


def view1(contiguity: str | None = None, filter_: Cmp | None = None) -> Pattern:
    """The paper's View1: PATTERN [a, b, c, d+] with every loss > 10, by (src, dest)."""
    return Pattern(*over(10, "abcd", "d"), (*PAIR, ("since", Ref("a", "cur", "ts")), ("ct", COUNT),
                                           ("sum_loss", Agg("sum", None, "loss")), ("peak", Agg("max", None, "loss"))),
                   ("src", "dest"), contiguity, filter_)


def test_paper_example(make_warehouse):
    """Losses 6, 12, 15, 24, 20, 16, 7: (ct, sum_loss) = (4, 71) at 10:04, (5, 87) at 10:05, none at 10:06."""
    data = losses([(m, 0, SRC, DEST, loss) for m, loss in enumerate([6, 12, 15, 24, 20, 16, 7])])
    assert check(make_warehouse(), data, view1(), schema=PAPER) == [
        {at(4): [(SRC, DEST, at(1), 4, 71, 24)], at(5): [(SRC, DEST, at(1), 5, 87, 24)]}]



# IBM's run starts at 12, after a 9 that starts none, so the group has no live run before it
# (a regression: such a fresh run once never took the edge into b).
def test_sase_rising_prices_by_company(make_warehouse):
    """The thesis's SASE example: (a, b+) with a.price > 10 AND b[i].price > b[i-1].price, by company."""
    schema = "CREATE STREAM M (ts TIMESTAMP, company STRING, price INT) TIMESTAMP ts PARTITION LENGTH 60"
    prices = {"IBM": [9, 12, 14, 17, 13, 15], "SUN": [11, 10, 10, 12]}
    data = pd.DataFrame([(at(m), company, price) for company, series in prices.items()
                         for m, price in enumerate(series)], columns=["ts", "company", "price"])
    rising = Pattern((("a", False), ("b", True)),
                     (Cmp(">", Ref("a", "cur", "price"), Const(10)), Cmp(">", Ref("b", "i", "price"), Ref("b", "prev", "price"))),
                     (("company", Ref(None, "cur", "company")), ("start_price", Ref("a", "cur", "price")),
                      ("end_price", Ref("b", "last", "price")), ("n", COUNT)), ("company",))
    assert check(make_warehouse(), data, rising, schema=schema) == [{
        at(1): [("SUN", 11, 10, 2)], at(2): [("IBM", 12, 14, 2)], at(3): [("IBM", 12, 17, 3)],
        at(4): [("IBM", 17, 13, 2)], at(5): [("IBM", 17, 15, 3)]}]


def test_broken_run_restarts(make_warehouse):
    """[a, b] with a.loss > 10 AND b.loss > a.loss over 12, 11, 13: the run broken at 11 restarts there,
    so 13 matches with a = 11 (the paper resets without restarting)."""
    pattern = Pattern((("a", False), ("b", False)),
                      (Cmp(">", Ref("a", "cur", "loss"), Const(10)), Cmp(">", Ref("b", "cur", "loss"), Ref("a", "cur", "loss"))),
                      (*PAIR, ("a_loss", Ref("a", "cur", "loss")), ("b_loss", Ref("b", "cur", "loss"))), ("src", "dest"))
    data = losses([(m, 0, SRC, DEST, loss) for m, loss in enumerate([12, 11, 13])])
    assert check(make_warehouse(), data, pattern, schema=PAPER) == [{at(2): [(SRC, DEST, 11, 13)]}]


def test_two_runs_alive(make_warehouse):
    """[a, b+, c] with b.loss > a.loss AND c.loss < a.loss over 5, 8, 9, 7, 4: the run from 8 matches at 7
    while the run from 5 is still alive, and the run from 5 (the longest) matches at 4."""
    pattern = Pattern((("a", False), ("b", True), ("c", False)),
                      (Cmp(">", Ref("b", "cur", "loss"), Ref("a", "cur", "loss")),
                       Cmp("<", Ref("c", "cur", "loss"), Ref("a", "cur", "loss"))),
                      (*PAIR, ("a_loss", Ref("a", "cur", "loss")), ("n", COUNT), ("c_loss", Ref("c", "cur", "loss"))),
                      ("src", "dest"))
    data = losses([(m, 0, SRC, DEST, loss) for m, loss in enumerate([5, 8, 9, 7, 4])])
    assert check(make_warehouse(), data, pattern, schema=PAPER) == [
        {at(3): [(SRC, DEST, 8, 3, 7)], at(4): [(SRC, DEST, 5, 5, 4)]}]


def test_timestamp_ties(make_warehouse):
    """Events with equal timestamps are ordered by the other columns in schema order (dest before loss),
    NULLs first: [a, b] with b.loss > 3, by src."""
    pattern = Pattern((("a", False), ("b", False)), (Cmp(">", Ref("b", "cur", "loss"), Const(3)),),
                      (("src", Ref(None, "cur", "src")), ("a_loss", Ref("a", "cur", "loss")),
                       ("b_loss", Ref("b", "cur", "loss"))), ("src",))
    data = losses([(0, 0, "s", "x", 20), (0, 0, "s", "x", 15),           # 15, 20
                   (1, 30, "s", "x", 9),
                   (2, 0, "s", "x", None), (2, 0, "s", "x", 7),          # NULL, 7
                   (3, 0, "s", "y", 1), (3, 0, "s", "x", 8)])            # dest x (8) before y (1)
    assert check(make_warehouse(), data, pattern, schema=PAPER) == [
        {at(0): [("s", 15, 20)], at(1): [("s", 20, 9)], at(2): [("s", None, 7)]}]


def test_several_events_per_part(make_warehouse):
    """Only the group's last event in a part can give a row: in part 3, 15 ends a match but 5 does not."""
    data = losses([(0, 0, SRC, DEST, 12), (1, 0, SRC, DEST, 13), (2, 0, SRC, DEST, 14), (2, 30, SRC, DEST, 16),
                   (3, 0, SRC, DEST, 15), (3, 30, SRC, DEST, 5),
                   *((4, second, SRC, DEST, loss) for second, loss in zip((0, 10, 20, 30), (11, 12, 13, 14)))])
    assert check(make_warehouse(), data, view1(), schema=PAPER) == [
        {at(2): [(SRC, DEST, at(0), 4, 55, 16)], at(4): [(SRC, DEST, at(4), 4, 50, 14)]}]


def test_contiguity_events_and_parts(make_warehouse):
    """A part without an event of the group breaks a run by default (PARTS), not with CONTIGUITY EVENTS."""
    pattern = Pattern(*over(10, "abc", "c"), (*PAIR, ("ct", COUNT), ("sum_loss", Agg("sum", None, "loss"))),
                      ("src", "dest"))
    data = losses([(0, 0, SRC, DEST, 12), (1, 0, SRC, DEST, 13), (2, 0, "other", DEST, 1),
                   (3, 0, SRC, DEST, 14), (4, 0, SRC, DEST, 15)])
    assert check(make_warehouse(), data, pattern, replace(pattern, contiguity="EVENTS"), schema=PAPER) == [
        {}, {at(3): [(SRC, DEST, 3, 39)], at(4): [(SRC, DEST, 4, 54)]}]


def test_group_starting_mid_stream(make_warehouse):
    """A group whose first event is in part 2 starts from no state (not a state 0 run)."""
    data = losses([*((m, 0, SRC, DEST, 20) for m in range(6)), *((m, 0, "new", DEST, 10 + m) for m in range(2, 6))])
    assert check(make_warehouse(), data, view1(), schema=PAPER) == [{
        at(3): [(SRC, DEST, at(0), 4, 80, 20)], at(4): [(SRC, DEST, at(0), 5, 100, 20)],
        at(5): [(SRC, DEST, at(0), 6, 120, 20), ("new", DEST, at(2), 4, 54, 15)]}]


def test_null_group_key(make_warehouse):
    """A NULL src is a group of its own."""
    data = losses([*((m, 0, None, DEST, 11 + m) for m in range(4)), *((m, 0, "h", DEST, loss)
                                                                      for m, loss in enumerate([20, 5, 20, 20]))])
    assert check(make_warehouse(), data, view1(), schema=PAPER) == [{at(3): [(None, DEST, at(0), 4, 50, 14)]}]


def test_input_filter(make_warehouse):
    """FROM M WHERE src = 'x' PATTERN ...: the filter applies before matching, so y's events neither break
    a run nor count as a part's event for contiguity, by dest."""
    pattern = Pattern(*over(10, "abcd", "d"), (("dest", Ref(None, "cur", "dest")), ("ct", COUNT),
                                              ("sum_loss", Agg("sum", None, "loss"))), ("dest",),
                      filter=Cmp("=", Ref(None, "cur", "src"), Const("x")))
    data = losses([(0, 0, "x", DEST, 11), (1, 0, "y", DEST, 3), (1, 30, "x", DEST, 12), (2, 0, "x", DEST, 13),
                   (3, 0, "x", DEST, 14), (4, 0, "y", DEST, 20), (5, 0, "x", DEST, 15)])
    assert check(make_warehouse(), data, pattern, schema=PAPER) == [{at(3): [(DEST, 4, 50)]}]


# Regression: in a pattern with a Kleene variable whose WHERE reads other events (b[i-1], a[1], ...),
# a run started while the group had no live run (a new group, or after a part without its events)
# never advanced: the Helper's NULL run list of a new group was not read as an empty one.
@pytest.mark.parametrize("variables, condition", [
    ((("a", False), ("b", True)), Cmp(">", Ref("b", "i", "loss"), Ref("b", "prev", "loss"))),
    ((("a", True), ("b", False)), Cmp(">", Ref("a", "i", "loss"), Ref("a", "first", "loss")))])
def test_fresh_run_with_kleene_values(make_warehouse, variables, condition):
    pattern = Pattern(variables, (condition,), (*PAIR, ("n", COUNT)), ("src", "dest"))
    data = losses([(0, 0, "init", DEST, 1), (1, 0, "init", DEST, 2), (1, 0, "new", DEST, 1), (2, 0, "new", DEST, 2),
                   (2, 0, "same", DEST, 1), (2, 30, "same", DEST, 2)])
    assert check(make_warehouse(), data, pattern, schema=PAPER) == [
        {at(1): [("init", DEST, 2)], at(2): [("new", DEST, 2), ("same", DEST, 2)]}]


# Regression: occurrence references were only recognized after PATTERN, so d[1].x in SELECT failed
# with "M has no column 'd'".
def test_select_first_occurrence(make_warehouse):
    pattern = Pattern(*over(10, "ad", "d"), (*PAIR, ("first_d", Ref("d", "first", "loss")),
                                             ("last_d", Ref("d", "last", "loss"))), ("src", "dest"))
    data = losses([(m, 0, SRC, DEST, loss) for m, loss in enumerate([12, 13, 14])])
    assert check(make_warehouse(), data, pattern, schema=PAPER) == [
        {at(1): [(SRC, DEST, 13, 13)], at(2): [(SRC, DEST, 13, 14)]}]


def runs(state) -> int:
    """How many runs a Helper state column holds: NULL, one struct, or an array of structs."""
    if state is None:
        return 0
    return 1 if isinstance(state, dict) else len(state)


def test_helper_state_stays_bounded(make_warehouse):
    """40 parts of View1 (two events per part, every loss > 10 in one group, a dip every 7th part in the
    other): at every part, each group's Helper row holds at most one run per state (s1..s4)."""
    parts = 40
    data = losses([event for m in range(parts) for event in (
        (m, 0, "long", DEST, 11 + m % 5), (m, 30, "long", DEST, 12), (m, 0, "dip", DEST, 5 if m % 7 == 6 else 20))])
    wh = make_warehouse()
    [want] = check(wh, data, view1(), schema=PAPER, recompute=False)
    assert want[at(parts - 1)][1][3:5] == (2 * parts, sum(11 + m % 5 + 12 for m in range(parts)))
    helper = wh.execute("SELECT * FROM V0__helper")
    assert sorted(set(helper.loc[helper["src"] == "long", "PART_TIMESTAMP"])) == [at(m) for m in range(parts)]
    sizes = [sum(runs(state[f"s{k}"]) for k in range(1, 5)) for state in helper.to_dict("records")]
    assert max(sizes) <= 4, sizes
