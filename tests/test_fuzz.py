"""Fuzzing the statement language (issue #6, hostile and bad input).

Statements are generated from the grammar (every statement kind, ViewDF clauses with partition
subscripts, pattern and sliding-window queries) and mutated (tokens deleted, duplicated and swapped,
punctuation and unicode inserted, truncation, huge numbers, deep parentheses, unbalanced brackets and
quotes, absurd subscripts). Every statement must either work or raise a ViewDFError positioned in the
user's own text; never another exception, never a hang, and a failing statement changes nothing.

* The fast tier runs thousands of statements through the layers that need no Spark, the same entry
  points the warehouse calls: ``parse``, ``compile_query`` (what ``ViewDefiner`` and ad hoc queries
  do), ``find_pattern``/``analyze_pattern``/``build_fsm`` and the Helper and final ViewDF texts
  (``plan_pattern_view``, with a stand-in for Spark's type probe), ``find_window``/``analyze_window``.
* The full tier runs a few hundred through ``Warehouse.run_iter`` on a copy of a warehouse with a
  stream M (with parts), an empty stream E, a view and a table, and compares the catalog version and
  every file below the warehouse before and after each failing statement.

``EXAMPLES`` is how many statements each test runs; each test asserts it ran at least that many.
Examples are derandomized (the same statements every run) unless VIEWDF_FUZZ_RANDOM=1.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import time
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from oracles import local_root, loss_rows
from test_paper_example import PAPER_DDL
from viewdf_magic import ViewDFError, Warehouse
from viewdf_magic.language import statements as stm
from viewdf_magic.language.parser import parse
from viewdf_magic.language.queries import ObjectKind, Scope, compile_query
from viewdf_magic.translation.pattern_fsm import build_fsm
from viewdf_magic.translation.pattern_query import analyze_pattern, find_pattern
from viewdf_magic.translation.pattern_sql import PatternTranslation
from viewdf_magic.translation.window_query import analyze_window, find_window

EXAMPLES = {"fast, generated": 1500, "fast, mutated": 2000, "full": 150}
assert sum(EXAMPLES.values()) >= 3000
FAST_SECONDS = 30          # one statement through the pure-Python layers (a loaded machine)
FULL_SECONDS = 120         # one statement on the warehouse (Spark, a loaded 2-core machine)
RANDOM = os.environ.get("VIEWDF_FUZZ_RANDOM") == "1"

# -- the grammar ------------------------------------------------------------------------------------------
COLUMNS = ["ts", "src", "dest", "loss"]
EXISTING = ["M", "E", "Helper", "owners", "m", "HELPER", "viewdf_parts"]
UNKNOWN = ["nosuch", "`no such`"]
NEW_NAMES = ["V", "V2", "Loss60", "runs_1", "Überblick", "`my view`", "`a``b`", "`x; DROP`", "`../up`", "`p'q`",
             "`select`", "`a.b`"]
STREAMS = ["M", "E", "M", "E", "Helper", "owners", "nosuch"]
HUGE = ["99999999999999999999", "-99999999999999999999", "9223372036854775808", "1" + "0" * 40, "0", "-1",
        "1e309", "0x7fffffffffffffff", "1" * 400]
STAMPS = ["TIMESTAMP '2015-01-01 10:03:00'", "TIMESTAMP '2015-01-01 10:04:30'", "'2015-01-01 10:03:10'",
          "TIMESTAMP '2015-01-01 10:00:30'", "NULL", "'2024-13-45'", "TIMESTAMP '2024-13-45'",
          "TIMESTAMP '9999-12-31 23:59:59'", "TIMESTAMP '2200-01-01 00:00:00'", "1420106700000", "1420106580",
          "'soon'", "TIMESTAMP '1970-01-01 00:00:00'"]
STRINGS = ["'10.0.0.1'", "'a'", "''", "'it''s'", "'`x`'", "'x''; DROP TABLE owners; --'", "'\\''",
           "\"dq\"", "'../../etc'", "'ümlaut ☃'", "NULL"]
LOSSES = ["1", "12", "-5", "0", "NULL", "'many'", "1.5", "true", "99999999999999999999", "array(1)"]
FILTERS = ["loss > 10", "src = 'a'", "loss IS NOT NULL", "dest <> src", "loss / 0 > 1", "lossy > 1",
           "loss > 'x'", "ts > TIMESTAMP '2015-01-01 10:01:00'"]


def pick(values):
    return st.sampled_from(values)


@st.composite
def subscript(draw, variable: str) -> str:
    """A partition subscript over ``variable``, sometimes absurd, sometimes a range."""
    k = draw(st.integers(0, 3))
    single = draw(pick([variable, f"{variable}-{k}", f"{variable}+{k}", f"{variable}*60", f"{variable}*60+59",
                        f"({variable} - 1)", f"{variable}-99999999999999999999", f"{variable}/0",
                        f"{variable} % 2", "23668441", "-1", "LATEST", "i", "x", "1.5", "'1'"]))
    shape = draw(st.integers(0, 5))
    if shape == 0:
        return f"{draw(pick([variable + '-2', variable + '-1', '']))} .. {single}"
    if shape == 1:
        return f"{single} .. {draw(pick([variable, '', variable + '-1 .. ' + variable]))}"
    return single


@st.composite
def select_query(draw, variable: str | None, source: str | None = None) -> str:
    """``SELECT ... FROM S[sub] ...`` (no subscript when ``variable`` is None and the draw says so)."""
    source = source or draw(pick(STREAMS[:4] + ["Helper", "owners", "viewdf_parts", "nosuch"]))
    reference = source
    if variable is not None or draw(st.booleans()):
        reference = f"{source}[{draw(subscript(variable or 'LATEST'))}]"
    items = draw(pick(["*", "src", "src, dest", "src, loss", "src, loss * 2 AS twice", "count(*) AS n",
                       "src, count(*) AS n", "src, sum(loss) AS total", "name, part, rows", "lossy",
                       "src, (((((loss))))) AS l"]))
    text = f"SELECT {items} FROM {reference}"
    if draw(st.booleans()):
        text += f" WHERE {draw(pick(FILTERS))}"
    if "count" in items or "sum" in items:
        text += draw(pick(["", " GROUP BY src", " GROUP BY 1"]))
    if draw(st.integers(0, 5)) == 0:
        text = draw(pick([f"SELECT * FROM ({text}) AS t", f"WITH t AS ({text}) SELECT * FROM t",
                          f"{text} UNION ALL {text}"]))
    return text


@st.composite
def create_viewdf(draw) -> str:
    name = draw(pick(NEW_NAMES + ["Helper"]))
    items = draw(pick(["src, loss", "src, dest, loss", "src, count(*) AS n", "*"]))
    group = " GROUP BY src" if "count" in items else ""
    source = draw(pick(["M", "M", "E", "Helper", "owners", "nosuch"]))
    init = f"SELECT {items} FROM {source}[{draw(subscript('i'))}]{group}"
    update = draw(pick([
        f"SELECT {items} FROM {source}[{draw(subscript('j'))}]{group}",
        f"SELECT p.* FROM {name}[{draw(subscript('j'))}] AS p",
        f"SELECT {items} FROM {source}[j] UNION ALL SELECT * FROM {name}[j-1]",
        draw(select_query("j"))]))
    head = draw(pick([name] * 7 + ["W"]))
    text = f"CREATE VIEW {name} AS\nINITIALIZE {name}[i] AS {init}\nUPDATE {head}[j] AS {update}"
    if draw(st.booleans()):
        text += f"\nRECOMPUTE {name}[j] AS SELECT {items} FROM {source}[.. j]{group}"
    if draw(st.booleans()):
        text += f"\nPARTITION LENGTH {draw(pick(['60', '120', '90', '0', '1 MINUTE', '1 HOUR'] + HUGE[:3]))}"
    if draw(st.integers(0, 3)) == 0:
        text += f"\nREFRESH EVERY {draw(pick(['1', '4', '0', '-1', HUGE[0]]))} PARTS"
    if draw(st.integers(0, 3)) == 0:
        text += "\nSTART AT LATEST"
    return text


@st.composite
def pattern_view(draw) -> str:
    names = draw(st.lists(pick(["a", "b", "c", "d", "x"]), min_size=1, max_size=4, unique=True))
    if draw(st.integers(0, 9)) == 0:
        names.append(names[0])
    variables = [(v, draw(st.booleans())) for v in names]
    pattern = ", ".join(v + ("+" if kleene else "") for v, kleene in variables)
    brackets = draw(pick(["[]", "[]", "()"]))
    conditions = []
    for index, (v, kleene) in enumerate(variables):
        for _ in range(draw(st.integers(0, 2))):
            shapes = [f"{v}.loss > {draw(st.integers(-1, 20))}", f"{v}.src = 'a'", f"{v}.loss IS NOT NULL",
                      f"{v}.lossy > 1", "loss > 1", f"abs({v}.loss) < 5"]
            if kleene:
                shapes += [f"{v}[i].loss > {v}[i-1].loss", f"{v}[i].loss >= {v}[1].loss",
                           f"{v}.loss > avg({v}[..i-1].loss)", f"{v}[i-2].loss > 1", f"last({v}.loss) > 1"]
            if index:
                earlier, earlier_kleene = variables[draw(st.integers(0, index - 1))]
                shapes += [f"{v}.loss > {earlier}.loss", f"{v}.loss > {earlier}[1].loss",
                           f"{v}.loss < last({earlier}.loss)", f"{v}.loss > sum({earlier}.loss)",
                           f"({v}.loss > 1 OR {earlier}.loss > 1)"]
            conditions.append(draw(pick(shapes)))
    keys = draw(pick(["src", "src, dest", "", "loss", "a.src", "nosuch"]))
    first, first_kleene = variables[0]
    items = [k.strip() for k in keys.split(",") if k.strip()] + draw(st.lists(pick([
        "count(*) AS ct", "sum(loss) AS total", "max(loss) AS peak", f"{first}.ts AS since",
        f"last({variables[-1][0]}.loss) AS last_loss", f"{first}[1].loss AS first_loss", "avg(loss) AS mean",
        "*", "loss", f"sum({first}.loss) AS s", "count(DISTINCT loss) AS d", "percentile(loss, 0.5) AS p"]),
        min_size=1, max_size=3, unique=True))
    source = draw(pick(STREAMS))
    text = f"CREATE VIEW {draw(pick(NEW_NAMES))} AS SELECT {', '.join(items)} FROM {source}"
    if draw(st.integers(0, 3)) == 0:
        text += f" WHERE {draw(pick(FILTERS))}"
    text += f" PATTERN {brackets[0]}{pattern}{brackets[1]}"
    if conditions:
        text += " WHERE " + " AND ".join(conditions)
    if keys:
        text += f" GROUP BY {keys}"
    if draw(st.integers(0, 3)) == 0:
        text += f" CONTIGUITY {draw(pick(['EVENTS', 'PARTS', 'ROWS']))}"
    return text


@st.composite
def window_view(draw) -> str:
    width = draw(pick(["1 MINUTES", "2 MINUTES", "3 MINUTES", "120 SECONDS", "90 SECONDS", "0 MINUTES",
                       "1 HOURS", "60", f"{HUGE[0]} MINUTES", "2 FORTNIGHTS"]))
    window = f"WINDOW {width}"
    if draw(st.booleans()):
        window += f" SLIDE {draw(pick(['1 MINUTES', '2 MINUTES', '5 MINUTES', '30 SECONDS', '0 MINUTES']))}"
    keys = draw(pick(["src", "src, dest", "", "upper(src)", "1"]))
    aggregates = draw(st.lists(pick(["sum(loss) AS total", "count(*) AS n", "avg(loss) AS mean", "max(loss) AS peak",
                                     "min(loss) AS low", "count(DISTINCT dest) AS d", "sum(sum(loss)) AS bad",
                                     "loss", "sum(loss) OVER () AS w", "percentile_approx(loss, 0.5) AS p"]),
                           min_size=1, max_size=3, unique=True))
    items = ([keys] if keys and keys != "1" else []) + aggregates
    text = (f"CREATE VIEW {draw(pick(NEW_NAMES))} AS SELECT {', '.join(items)} "
            f"FROM {draw(pick(STREAMS))} [{window}]")
    if draw(st.booleans()):
        text += f" WHERE {draw(pick(FILTERS))}"
    if keys:
        text += f" GROUP BY {keys}"
    if draw(st.integers(0, 3)) == 0:
        text += f" HAVING {draw(pick(['count(*) >= 2', 'sum(loss) > 10', 'mean > 1', 'loss > 1']))}"
    return text


@st.composite
def insert(draw) -> str:
    target = draw(pick(["M", "M", "M", "owners", "Helper", "E", "nosuch"]))
    rows = []
    for _ in range(draw(st.integers(1, 3))):
        values = [draw(pick(STAMPS)), draw(pick(STRINGS)), draw(pick(STRINGS)), draw(pick(LOSSES))]
        if target == "owners":
            values = values[1:3]
        if draw(st.integers(0, 5)) == 0:       # a wrong number of values
            values = values[:draw(st.integers(0, len(values)))] + [draw(pick(LOSSES))] * draw(st.integers(0, 2))
        rows.append(f"({', '.join(values)})")
    columns = draw(pick(["", "", " (ts, src, dest, loss)", " (ts, loss)", " (ts, lost)", " (src, owner)"]))
    if draw(st.integers(0, 4)) == 0:
        return f"INSERT INTO {target}{columns} {draw(select_query(None, 'M'))}"
    return f"INSERT INTO {target}{columns} VALUES {', '.join(rows)}"


SEAL_AT = ["2015-01-01 10:01:00", "2015-01-01 10:03:00", "soon", "9999-12-31", "2200-01-01 00:00:00", "",
           "2015-13-45"]
LOAD_PATHS = ["absent.csv", "../../etc/passwd", "rows.txt", "", "x.parquet", "/"]
LOAD_OPTIONS = ["", " FORMAT csv", " FORMAT xml", " OPTIONS (header false)", " OPTIONS (header ", " WITH (sep = ;)"]
COLUMN_LISTS = ["ts TIMESTAMP, v INT", "v INT", "ts TIMESTAMP, PART_TIMESTAMP INT", "ts TIMESTAMP, ts2 TIMESTAMP",
                "ts TIMESTAMP, `a``b` INT", "ts TIMESTAMPZ", ""]
TABLE_BODIES = ["(a STRING, b INT)", "(a STRINGY)", "AS SELECT DISTINCT src FROM M", "AS SELECT 1/0 AS x", ""]


@st.composite
def other(draw) -> str:
    name = draw(pick(EXISTING + UNKNOWN + NEW_NAMES[:3]))
    kind = draw(st.integers(0, 10))
    if kind == 0:
        what = draw(pick(["STREAMS", "VIEWS", "TABLES", "PENDING", "PARTS", "PARTS OF", "PARTZ"]))
        return f"SHOW {what} {draw(pick(['', name]))}"
    if kind == 1:
        return f"DESCRIBE {draw(pick(['', 'VIEW ', 'STREAM ']))}{name}"
    if kind == 2:
        return (f"DROP {draw(pick(['VIEW', 'STREAM', 'TABLE']))} {draw(pick(['', 'IF EXISTS ']))}{name}"
                f"{draw(pick(['', ' CASCADE']))}")
    if kind == 3:
        return f"VERIFY {draw(pick(['', 'VIEW ']))}{name}"
    if kind == 4:
        return f"SEAL {name} THROUGH '{draw(pick(SEAL_AT))}'"
    if kind == 5:
        return f"EXPLAIN VIEW {name}"
    if kind == 6:
        return f"SET MAINTENANCE {draw(pick(['MANUAL', 'AUTO', 'SOMETIMES', '']))}"
    if kind == 7:
        return (f"STEP {draw(pick(['', 'ALL', name, 'Helper']))} {draw(pick(['', '1', '2', '0', HUGE[0]]))} "
                f"{draw(pick(['', 'WITH PLAN', 'WITH']))}")
    if kind == 8:
        return (f"LOAD '{draw(pick(LOAD_PATHS))}' INTO {draw(pick(['M', 'owners', 'Helper', 'nosuch']))}"
                f"{draw(pick(LOAD_OPTIONS))}")
    if kind == 9:
        return (f"CREATE STREAM {draw(pick(NEW_NAMES + ['M']))} ({draw(pick(COLUMN_LISTS))}) "
                f"{draw(pick(['', 'TIMESTAMP ts ', 'TIMESTAMP v ']))}"
                f"PARTITION LENGTH {draw(pick(['60', '1 MINUTE', '0', 'x'] + HUGE[:2]))}")
    return f"CREATE TABLE {draw(pick(NEW_NAMES + ['owners']))} {draw(pick(TABLE_BODIES))}"


@st.composite
def statement(draw) -> str:
    return draw(st.one_of(create_viewdf(), pattern_view(), window_view(), insert(), other(),
                          select_query(None)))


@st.composite
def cell(draw) -> str:
    """One statement, or a few separated by ';' (with comments and blank lines sometimes)."""
    parts = draw(st.lists(statement(), min_size=1, max_size=draw(pick([1, 1, 1, 2, 3]))))
    glue = draw(pick([";\n", "; ", ";\n-- a comment; with a semicolon\n", ";\n\n"]))
    return glue.join(parts) + draw(pick(["", ";", " ;\n", "\n-- done", " /* ; */"]))


# -- mutations ------------------------------------------------------------------------------------------
TOKEN = re.compile(r"`(?:[^`]|``)*`|'(?:[^'\\]|\\.|'')*'|\d+|\w+|\s+|\.\.|.", re.S)
ABSURD_SUBSCRIPTS = ["j-99999999999999999999", "LATEST-99999999999999999999 .. LATEST", "i*" + "9" * 30, "j/(j-j)",
                     "-" * 50 + "1", "(" * 300 + "j" + ")" * 300, "j" + "+1" * 500, "]", "", "..", "j ..", "WINDOW",
                     "a, b+"]
PUNCTUATION = list("()[],;.'`\"+-*/%<>=!|&^~#$@:?{}\\") + ["..", "/*", "*/", "--", "\n", "\x00"]


@st.composite
def mutated(draw, base=None) -> str:
    """A generated statement with one to four random edits."""
    text = draw(base if base is not None else cell())
    tokens = TOKEN.findall(text)
    for _ in range(draw(st.integers(1, 4))):
        if not tokens:
            tokens = [""]
        # Mostly edit the words and symbols after the statement's first word, not the white space.
        solid = [k for k, t in enumerate(tokens) if not t.isspace()]
        later = [k for k in solid if k > solid[0]] if solid else []
        at = draw(pick(later)) if later and draw(st.integers(0, 3)) else draw(st.integers(0, len(tokens) - 1))
        other_at = draw(pick(later)) if later and draw(st.booleans()) else draw(st.integers(0, len(tokens) - 1))
        edit = draw(st.integers(0, 12))
        if edit == 0:
            del tokens[at]
        elif edit == 1:
            tokens.insert(at, tokens[at])
        elif edit == 2:
            tokens[at], tokens[other_at] = tokens[other_at], tokens[at]
        elif edit == 3:
            tokens.insert(at, draw(pick(PUNCTUATION)))
        elif edit == 4:
            joined = "".join(tokens)
            tokens = TOKEN.findall(joined[:draw(st.integers(0, len(joined)))])
        elif edit == 5:
            tokens.insert(at, draw(st.text(min_size=1, max_size=6)))
        elif edit == 6:
            numbers = [k for k, t in enumerate(tokens) if t.isdigit()] or [at]
            tokens[draw(pick(numbers))] = draw(pick(HUGE))
        elif edit == 7:
            depth = draw(pick([1, 3, 30, 60, 300]))
            first, last = sorted((at, other_at))
            tokens[first:last + 1] = ["(" * depth, *tokens[first:last + 1], ")" * depth]
        elif edit == 8:
            tokens.insert(at, draw(pick(["(", ")", "[", "]", "'", "`", '"', "/*", "--", "[[", "]]"])))
        elif edit == 9:
            brackets = [k for k, t in enumerate(tokens) if t == "["]
            if brackets:
                start = draw(pick(brackets))
                end = next((k for k in range(start, len(tokens)) if tokens[k] == "]"), len(tokens))
                tokens[start + 1:end] = [draw(pick(ABSURD_SUBSCRIPTS))]
            else:
                tokens.insert(at, draw(pick(["M[j-99999999999999999999]", "M[LATEST/0]", "[WINDOW 5 MINUTES]",
                                             "PATTERN [a, b+]", "[", "M[]"])))
        elif edit == 10:
            words = [k for k, t in enumerate(tokens) if t[:1].isalpha() or t[:1] == "`"] or [at]
            tokens[draw(pick(words))] = draw(pick(NEW_NAMES + EXISTING + [
                "SELECT", "FROM", "WHERE", "AS", "INITIALIZE", "UPDATE", "RECOMPUTE", "PATTERN", "WINDOW", "SLIDE",
                "PARTITION", "LENGTH", "CONTIGUITY", "GROUP", "BY", "LATEST", "NULL", "j", "i"]))
        elif edit == 11:
            tokens.insert(at, draw(st.text(alphabet=st.characters(min_codepoint=0x80, max_codepoint=0x2FFFF),
                                           min_size=1, max_size=4)))
        else:
            tokens.insert(at, " ".join(["AND a.loss > 1"] * draw(pick([2, 50, 300]))))
    return "".join(tokens)


# -- checks -----------------------------------------------------------------------------------------------
class Hang(Exception):
    """A statement ran longer than its time limit."""


@contextmanager
def time_limit(seconds: float, text: str):
    """Fail with Hang when the block runs longer than ``seconds`` (SIGALRM; pytest runs tests on the main
    thread)."""
    def expired(signum, frame):
        raise Hang(f"no answer after {seconds} s (a hang?) for statement:\n{text[:2000]}")
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def assert_positioned(error: ViewDFError, text: str) -> None:
    """A ViewDFError with a message and a line/column in the user's own text."""
    assert error.message, repr(text)
    assert error.text == text, (f"the error is positioned in another text than the statement: {error!s}\n"
                                f"statement: {text!r}")
    assert error.position is not None and 0 <= error.position <= len(text), (error.position, str(error), text)
    assert error.line is not None and error.line >= 1 and error.column is not None and error.column >= 1
    assert (error.line, error.column) == (text.count("\n", 0, error.position) + 1,
                                          error.position - text.rfind("\n", 0, error.position))
    assert str(error).startswith(error.message)


OBJECTS = {"m": ("M", ObjectKind.STREAM), "e": ("E", ObjectKind.STREAM), "helper": ("Helper", ObjectKind.VIEW),
           "owners": ("owners", ObjectKind.TABLE), "viewdf_parts": ("viewdf_parts", ObjectKind.CATALOG)}


def lookup_with(*views: str):
    extra = {name.lower(): (name, ObjectKind.VIEW) for name in views}
    return lambda name: OBJECTS.get(name.lower()) or extra.get(name.lower())


def type_probe(sql: str) -> str:
    """A stand-in for Spark's analysis of an expression over M's columns (the fast tier has no Spark)."""
    lowered = sql.lower()
    if lowered.startswith(("count(", "sum(")):
        return "bigint"
    if lowered.startswith("avg("):
        return "double"
    return "boolean"


def translate_pattern(statement: stm.CreateQueryView, clause) -> None:
    """What ``plan_pattern_view`` and ``PatternViewPlan.statements`` do, with a stand-in type probe:
    analyze, build the FSM, generate the Helper's and the final view's texts, parse and compile them."""
    found = OBJECTS.get(clause.source.text.lower())
    if found is None or found[1] is not ObjectKind.STREAM:
        return               # the warehouse refuses it with a positioned error before translating
    query = analyze_pattern(statement.query, clause)
    fsm = build_fsm(query, {c: c for c in COLUMNS}, type_probe)
    translation = PatternTranslation(statement.name.text, fsm, found[0], 60, "ts", COLUMNS, type_probe)
    lookup = lookup_with(translation.helper)
    for generated in (translation.helper_text(), translation.final_text()):
        [definition] = parse(generated)
        assert isinstance(definition, stm.CreateViewDF), generated
        assert definition.name.key in (translation.helper.lower(), statement.name.key), generated
        for delta in (definition.initialize, definition.update, definition.recompute):
            if delta is not None:
                scope = Scope.RECOMPUTE if delta.clause is stm.ClauseKind.RECOMPUTE else Scope.DELTA
                compile_query(delta.query, lookup, scope, delta.variable, definition.name.text)


def analyze(text: str) -> None:
    """Everything the warehouse does with ``text`` before it needs Spark or the catalog."""
    lookup = lookup_with()
    for statement in parse(text):
        if isinstance(statement, stm.CreateViewDF):
            for delta in (statement.initialize, statement.update, statement.recompute):
                if delta is not None:
                    scope = Scope.RECOMPUTE if delta.clause is stm.ClauseKind.RECOMPUTE else Scope.DELTA
                    compile_query(delta.query, lookup, scope, delta.variable, statement.name.text)
        elif isinstance(statement, stm.CreateQueryView):
            clause = find_pattern(statement.query)
            if clause is not None:
                translate_pattern(statement, clause)
            else:
                window = find_window(statement.query)
                if window is not None:
                    analyze_window(statement.query, window)
        elif isinstance(statement, (stm.Query, stm.Insert)):
            compile_query(statement.query, lookup, Scope.ADHOC)
        elif isinstance(statement, stm.CreateTable) and statement.query is not None:
            compile_query(statement.query, lookup, Scope.ADHOC)


def fast_check(text: str) -> None:
    with time_limit(FAST_SECONDS, text):
        try:
            analyze(text)
        except ViewDFError as error:
            assert_positioned(error, text)


def fast_settings(examples: int):
    return settings(max_examples=examples, deadline=None, database=None, derandomize=not RANDOM,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much, HealthCheck.large_base_example])


# -- fast tier --------------------------------------------------------------------------------------------
def test_generated_statements_work_or_fail_with_a_position():
    seen: list[str] = []

    @fast_settings(EXAMPLES["fast, generated"])
    @given(text=cell())
    def check(text):
        seen.append(text)
        fast_check(text)
    started = time.perf_counter()
    check()
    assert len(seen) >= EXAMPLES["fast, generated"], (len(seen), time.perf_counter() - started)


def test_mutated_statements_work_or_fail_with_a_position():
    seen: list[str] = []

    @fast_settings(EXAMPLES["fast, mutated"])
    @given(text=mutated())
    def check(text):
        seen.append(text)
        fast_check(text)
    check()
    assert len(seen) >= EXAMPLES["fast, mutated"]


HOSTILE = [
    "SELECT * FROM M[j-99999999999999999999]",
    "SELECT * FROM M[LATEST-99999999999999999999 .. LATEST]",
    "SELECT * FROM M[LATEST/0]",
    "SELECT * FROM M[LATEST % (1 - 1)]",
    "SELECT * FROM M[" + "(" * 300 + "LATEST" + ")" * 300 + "]",
    "SELECT * FROM M[LATEST" + "+1" * 3000 + "]",
    "SELECT * FROM M[" + "- " * 3000 + "1]",
    "SELECT * FROM M[LATEST" + "*LATEST" * 700 + "]",
    "SELECT * FROM M[" + "9" * 5000 + "]",
    "SELECT * FROM M[é+LATEST/0]",
    "SELECT " + "(" * 60 + "1" + ")" * 60 + " FROM M",
    "SELECT " + "(" * 3000 + "1" + ")" * 3000,
    "SELECT " + "NOT " * 3000 + "true",
    "SELECT x" + "[0]" * 3000 + " FROM t",
    "SELECT a FROM (" * 300 + "SELECT 1 AS a" + ") t" * 300,
    "CREATE VIEW V AS INITIALIZE V[i] AS SELECT " + "(" * 80 + "loss" + ")" * 80 + " FROM M[i]\n"
    "UPDATE V[j] AS SELECT loss FROM M[j]",
    "CREATE VIEW V AS SELECT src, count(*) AS c FROM M PATTERN [a, b+] WHERE " +
    " AND ".join(["a.loss > 1"] * 1000) + " GROUP BY src",
    "CREATE VIEW V AS SELECT src, count(*) AS c FROM M PATTERN [a, b+] WHERE a.loss > " + "(" * 80 + "1" +
    ")" * 80 + " GROUP BY src",
    "CREATE VIEW V AS SELECT src, sum(loss) AS s FROM M [WINDOW 5 MINUTES] WHERE " + "(" * 80 + "loss > 1" +
    ")" * 80 + " GROUP BY src",
    "CREATE VIEW V AS SELECT src, sum(loss) AS s FROM M [WINDOW 99999999999999999999 MINUTES] GROUP BY src",
    "'", "`", "\"", "/*", "--", "\x00", "\ufeffSELECT 1", ";;;", "", "SELECT '\\'", "SELECT 1 /* ; */",
    "/* a /* b */ SELECT 1", "SELECT 1 /* /* ; */ */", "SELECT 'it''s'; SELECT 'x''", "LOAD 'a''; b.csv' INTO M",
]


@pytest.mark.parametrize("text", HOSTILE, ids=[repr(t[:40]) for t in HOSTILE])
def test_hostile_statements_work_or_fail_with_a_position(text):
    fast_check(text)


def test_hostile_statements_give_the_expected_errors():
    """A few of them precisely: message and where the caret goes."""
    cases = {
        "SELECT * FROM M[LATEST/0]": ("division by zero in a partition subscript", "0]"),
        "SELECT * FROM M[LATEST % (1 - 1)]": ("division by zero in a partition subscript", "1 - 1"),
        "SELECT * FROM M[é+LATEST/0]": ("unknown name 'é'", "é"),
        "SELECT * FROM M[LATEST" + "+1" * 3000 + "]": ("partition subscript too long", "LATEST+"),
        "SELECT " + "(" * 3000 + "1" + ")" * 3000: ("nested too deeply", "(1)"),
        "SELECT * FROM M[" + "9" * 5000 + "]": ("bad partition subscript", "9999"),
        "/* a /* b */ SELECT 1": ("cannot read the input: unterminated comment", "/* a"),
        "SELECT 'it''s'; SELECT 'x''": ("cannot read the input: unterminated string", "'x''"),
    }
    for text, (phrase, needle) in cases.items():
        with pytest.raises(ViewDFError) as caught:
            analyze(text)
        assert phrase in caught.value.message, caught.value.message
        assert_positioned(caught.value, text)
        assert caught.value.position == text.index(needle), (text[:60], str(caught.value)[:300])


def test_long_chains_of_conditions_are_split_in_order():
    text = ("CREATE VIEW V AS SELECT src, count(*) AS c FROM M PATTERN [a, b+] WHERE " +
            " AND ".join(f"a.loss > {k}" for k in range(2000)) + " AND b.loss > 1 GROUP BY src")
    [statement] = parse(text)
    query = analyze_pattern(statement.query, find_pattern(statement.query))
    assert [c.sql() for c in query.conditions] == [f"a.loss > {k}" for k in range(2000)] + ["b.loss > 1"]


# -- full tier --------------------------------------------------------------------------------------------
def files_below(root: str) -> frozenset[str]:
    found = set()
    for folder, folders, names in os.walk(root):
        for name in folders + names:
            found.add(os.path.relpath(os.path.join(folder, name), root))
    return frozenset(found)


def snapshot(warehouse: Warehouse) -> tuple:
    """The catalog's version and objects, and every file and folder below the warehouse."""
    catalog = warehouse.catalog
    return catalog.version, tuple(sorted(catalog.objects)), files_below(local_root(warehouse))


@pytest.fixture(scope="module")
def template(spark, tmp_path_factory):
    """A warehouse to copy for each example: M with minutes 10:00 .. 10:02, the paper's Helper view, an
    empty stream E, a table owners; and input files for LOAD."""
    base = tmp_path_factory.mktemp("fuzz")
    inputs = base / "inputs"
    inputs.mkdir()
    (inputs / "rows.csv").write_text("ts,src,dest,loss\n2015-01-01 10:03:05,a,b,12\n")
    (inputs / "bad.csv").write_text("ts,src,dest,loss\n2024-13-45 10:03:05,a,b,12\n2015-01-01 10:03:00,a,b,x\n")
    (inputs / "rows.json").write_text('{"ts": "2015-01-01 10:03:05", "src": "a", "dest": "b", "loss": 3}\n')
    warehouse = Warehouse(str(base / "template"), spark=spark, progress=False)
    warehouse.execute(PAPER_DDL.split(";")[0] + ";" + PAPER_DDL.split(";")[1])
    warehouse.execute("CREATE STREAM E (ts TIMESTAMP, src STRING, dest STRING, loss INT) PARTITION LENGTH 60;\n"
                      "CREATE TABLE owners (src STRING, owner STRING)")
    warehouse.ingest("M", loss_rows("2015-01-01 10:00", [12, 13, 14]))
    return base, local_root(warehouse), inputs


@st.composite
def load_statement(draw, inputs) -> str:
    name = draw(pick(["rows.csv", "bad.csv", "rows.json", "absent.csv", "../inputs/rows.csv"]))
    options = draw(pick(["", " FORMAT json", " OPTIONS (header 'false')", " FORMAT parquet"]))
    return f"LOAD '{inputs}/{name}' INTO {draw(pick(['M', 'M', 'owners', 'E']))}{options}"


def test_statements_on_a_warehouse_work_or_change_nothing(spark, template):
    base, root, inputs = template
    seen: list[str] = []
    outside = set(os.listdir(base))

    @settings(max_examples=EXAMPLES["full"], deadline=None, database=None, derandomize=not RANDOM,
              phases=[Phase.explicit, Phase.reuse, Phase.generate],      # no shrinking: Spark is slow
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much, HealthCheck.large_base_example])
    @given(text=st.one_of(cell(), cell(), cell(), mutated(), mutated(), mutated(), load_statement(inputs),
                          mutated(load_statement(inputs))))
    def check(text):
        seen.append(text)
        copy = os.path.join(base, f"example{len(seen)}")
        shutil.copytree(root, copy)
        try:
            warehouse = Warehouse(copy, spark=spark, progress=False)
            results = warehouse.run_iter(text)
            while True:
                before = snapshot(warehouse)
                try:
                    with time_limit(FULL_SECONDS, text):
                        result = next(results)
                        if result.has_rows:
                            result.head(5)
                except StopIteration:
                    break
                except ViewDFError as error:
                    assert_positioned(error, text)
                    assert snapshot(warehouse) == before, f"a failing statement changed the warehouse: {text!r}"
                    break
        finally:
            shutil.rmtree(copy, ignore_errors=True)
        assert set(os.listdir(base)) == outside, f"files appeared outside the warehouse: {text!r}"
    check()
    assert len(seen) >= EXAMPLES["full"]


# -- what the fuzzer found, as plain cases ----------------------------------------------------------------
FOUND_SECONDS = 30         # each of these takes a few seconds when it works


@contextmanager
def copy_of(spark, template, name: str):
    """A fresh copy of the template warehouse, removed afterwards."""
    base, root, _ = template
    copy = os.path.join(base, name)
    shutil.copytree(root, copy)
    try:
        yield Warehouse(copy, spark=spark, progress=False)
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def sorted_rows(frame, columns: list[str]) -> list[tuple]:
    return sorted(tuple(v.item() if hasattr(v, "item") else v for v in row)
                  for row in frame[columns].itertuples(index=False, name=None))


WORKS = {
    "a pattern of one variable": ("CREATE VIEW P AS SELECT src, count(*) AS ct, max(loss) AS peak FROM M PATTERN [a]\n"
                                  "  GROUP BY src", "SELECT * FROM P", ["src", "ct", "peak"],
                                  [("10.0.0.1", 1, 12), ("10.0.0.1", 1, 13), ("10.0.0.1", 1, 14)]),
    "a pattern of one variable with a condition": ("CREATE VIEW P AS SELECT src, count(*) AS ct, max(loss) AS peak\n"
                                                   "  FROM M PATTERN [a] WHERE a.loss > 12 GROUP BY src",
                                                   "SELECT * FROM P", ["src", "ct", "peak"],
                                                   [("10.0.0.1", 1, 13), ("10.0.0.1", 1, 14)]),
    "a range from far in the past": ("SELECT 1", "SELECT src, loss FROM M[-99999999999999999999 .. LATEST]",
                                     ["src", "loss"], [("10.0.0.1", 12), ("10.0.0.1", 13), ("10.0.0.1", 14)]),
    "a range far into the future": ("SELECT 1", "SELECT count(*) AS n FROM Helper[LATEST-2 .. LATEST*60+59]", ["n"],
                                    [(3,)]),
}


@pytest.mark.parametrize("text,query,columns,expected", WORKS.values(), ids=WORKS.keys())
def test_statements_the_fuzzer_found_that_must_work(spark, template, text, query, columns, expected):
    with copy_of(spark, template, "found") as warehouse, time_limit(FOUND_SECONDS, text + ";\n" + query):
        warehouse.execute(text)
        assert sorted_rows(warehouse.execute(query), columns) == expected


REFUSED = {
    "a division by zero at LATEST": ("SELECT * FROM M[LATEST / (LATEST - 23668442)]", "M[LATEST /",
                                     "division by zero in a partition subscript"),
    "STEP a view that is not ready": ("STEP Helper 5", "Helper", "Helper is not ready"),
}


@pytest.mark.parametrize("text,needle,phrase", REFUSED.values(), ids=REFUSED.keys())
def test_statements_the_fuzzer_found_that_must_be_refused(spark, template, text, needle, phrase):
    with copy_of(spark, template, "found") as warehouse:
        before = snapshot(warehouse)
        with time_limit(FOUND_SECONDS, text), pytest.raises(ViewDFError) as caught:
            warehouse.execute(text)
        assert phrase in caught.value.message, caught.value.message
        assert_positioned(caught.value, text)
        assert caught.value.position == text.index(needle), str(caught.value)
        assert snapshot(warehouse) == before


EITHER = {
    "a part far in the past": ("CREATE VIEW V AS INITIALIZE V[i] AS SELECT src, loss FROM M[i]\n"
                               "UPDATE V[j] AS SELECT src, loss FROM M[j-99999999999999999999]",
                               [("10.0.0.1", 12)]),
    "a range from far in the past": ("CREATE VIEW V AS INITIALIZE V[i] AS SELECT src, loss FROM M[i]\n"
                                     "UPDATE V[j] AS SELECT src, loss FROM M[j-99999999999999999999 .. j]",
                                     [("10.0.0.1", 12), ("10.0.0.1", 12), ("10.0.0.1", 12), ("10.0.0.1", 13),
                                      ("10.0.0.1", 13), ("10.0.0.1", 14)]),
    "a window of 99999999999999999999 minutes": ("CREATE VIEW V AS SELECT src, sum(loss) AS loss\n"
                                                 "  FROM M [WINDOW 99999999999999999999 MINUTES] GROUP BY src",
                                                 [("10.0.0.1", 12), ("10.0.0.1", 25), ("10.0.0.1", 39)]),
}


@pytest.mark.parametrize("text,expected", EITHER.values(), ids=EITHER.keys())
def test_absurd_views_the_fuzzer_found_work_or_are_refused(spark, template, text, expected):
    """Either a positioned ViewDFError that changes nothing, or the view, with exactly the expected rows."""
    with copy_of(spark, template, "found") as warehouse:
        before = snapshot(warehouse)
        try:
            with time_limit(FOUND_SECONDS, text):
                warehouse.execute(text)
        except ViewDFError as error:
            assert_positioned(error, text)
            assert snapshot(warehouse) == before
            return
        with time_limit(FOUND_SECONDS, text):
            assert sorted_rows(warehouse.execute("SELECT * FROM V"), ["src", "loss"]) == expected
