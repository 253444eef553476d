"""Parse ViewDF statements: the clause structure around embedded Spark SQL queries.

The embedded queries are kept as fragments of the user's text; they are checked
with sqlglot later, once partition references are rewritten (see ``queries``).
"""

from __future__ import annotations

import difflib
from typing import Iterable

from sqlglot.tokens import Token, TokenType

from ..errors import ViewDFError
from ..timeparts import UNIT_SECONDS
from .source import Fragment
from .statements import (Alter, Assignment, ClauseKind, CreateQueryView, CreateStream, CreateTable, Creation,
                         CreateViewDF, Delete, DeltaQuery, Describe, Drop, ExplainChange, ExplainView, Extent, Insert,
                         Load, Name, Query, Seal, SetMaintenance,
                         ShowLateness, ShowParts, ShowPending, ShowStreams, ShowTables, ShowViews, Statement, Step,
                         UniqueGuard, Update, Vacuum, Verify)
from .tokens import IDENTIFIER_TYPES, TokenStatement, split_statements

_QUOTED = {TokenType.STRING, TokenType.IDENTIFIER}
VACUUM_RETAIN_SECONDS = 3600     # VACUUM without RETAIN: 1 hour
QUERY_STARTS = {"SELECT", "WITH", "VALUES", "FROM", "TABLE", "("}
# the clauses after a ViewDF's queries; each ends the query before it
_CLAUSE_HEADS = (("PARTITION", "LENGTH"), ("START", "AT", "LATEST"), ("REFRESH", "EVERY"))
# a ViewDF's query clauses by keyword
_DELTA_CLAUSES = {kind.label: kind for kind in (ClauseKind.INITIALIZE, ClauseKind.UPDATE, ClauseKind.RECOMPUTE,
                                                ClauseKind.RANGE)}


def _declaration_at(cursor: "_Cursor", index: int) -> bool:
    """``UNCHANGED WHEN X[`` or ``EMPTY WHEN X[`` at ``index`` (the reference keeps ``CASE empty WHEN ..`` a query)."""
    return (cursor.at("UNCHANGED", "WHEN", index=index) or cursor.at("EMPTY", "WHEN", index=index)) and \
        cursor.at("[", index=index + 3)


def parse(source: str) -> list[Statement]:
    """Parse every ``;``-separated statement of ``source``."""
    return [parse_statement(statement) for statement in split_statements(source)]


class _Cursor:
    def __init__(self, statement: TokenStatement) -> None:
        self.tokens = statement.tokens
        self.fragment = statement.fragment
        self.index = 0

    def peek(self, ahead: int = 0) -> Token | None:
        at = self.index + ahead
        return self.tokens[at] if at < len(self.tokens) else None

    def is_word(self, token: Token | None, word: str) -> bool:
        if token is None:
            return False
        if word in "()[],=":
            return token.text == word and token.token_type not in _QUOTED
        return token.token_type not in _QUOTED and token.text.upper() == word

    def at(self, *words: str, index: int | None = None) -> bool:
        base = self.index if index is None else index
        return all(self.is_word(self.tokens[base + k] if base + k < len(self.tokens) else None, word)
                   for k, word in enumerate(words))

    def accept(self, *words: str) -> bool:
        if self.at(*words):
            self.index += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        for word in words:
            if not self.accept(word):
                raise self.error(f"expected {word}", choices=(word,))

    def error(self, message: str, token: Token | None = None, choices: Iterable[str] = ()) -> ViewDFError:
        """``message``, naming the token found there; with ``choices`` (the keywords that would fit),
        a "did you mean" for a misspelt one."""
        token = token or self.peek()
        if token is None:
            return self.fragment.error(f"{message} at the end of the statement", self.fragment.end)
        found = f"'{token.text}'" if token.token_type != TokenType.STRING else f"'{token.text}' (a string)"
        return self.fragment.error(f"{message}, found {found}{suggestion(token, choices)}",
                                   token.start, token.end + 1)

    def name(self, what: str = "a name") -> Name:
        token = self.peek()
        if token is None or not (token.token_type in IDENTIFIER_TYPES or
                                 (token.token_type not in _QUOTED and token.text.isidentifier())):
            raise self.error(f"expected {what}")
        self.index += 1
        if not token.text:
            raise self.error("a name cannot be empty", token)
        return Name(token.text, token.start, token.end + 1)

    def string(self, what: str) -> tuple[str, int]:
        token = self.peek()
        if token is None or token.token_type != TokenType.STRING:
            raise self.error(f"expected {what} as a quoted string")
        self.index += 1
        return token.text, token.start

    def integer(self, what: str) -> tuple[int, int]:
        token = self.peek()
        if token is None or token.token_type != TokenType.NUMBER or not token.text.isdigit():
            raise self.error(f"expected {what} (a whole number)")
        self.index += 1
        return int(token.text), token.start

    def duration(self, what: str) -> tuple[int, int]:
        """A positive number of seconds, optionally with a unit: ``60``, ``1 MINUTE``."""
        value, at = self.integer(what)
        token = self.peek()
        if token is not None and token.token_type not in _QUOTED and token.text.upper() in UNIT_SECONDS:
            value *= UNIT_SECONDS[token.text.upper()]
            self.index += 1
        elif token is not None and suggestion(token, UNIT_SECONDS):       # 60 MINUTS: a unit, misspelt
            raise self.error(f"expected a time unit (SECONDS, MINUTES, HOURS, DAYS) after {what}",
                             choices=UNIT_SECONDS)
        if value <= 0:
            raise self.fragment.error(f"{what} must be positive", at)
        return value, at

    def extent(self, what: str, parts: bool = True) -> Extent:
        """``n PARTS`` (if ``parts``) or a duration ``n <unit>`` (n may be 0)."""
        value, at = self.integer(what)
        token = self.peek()
        word = token.text.upper() if token is not None and token.token_type not in _QUOTED else ""
        if word in ("PART", "PARTS"):
            assert token is not None      # word is empty without a token
            if not parts:
                raise self.fragment.error(f"{what} takes a duration (SECONDS, MINUTES, HOURS, DAYS), not parts",
                                          token.start)
            self.index += 1
            return Extent(value, "parts", at)
        if word in UNIT_SECONDS:
            self.index += 1
            return Extent(value * UNIT_SECONDS[word], "seconds", at)
        raise self.error(f"expected {'PARTS or ' if parts else ''}a time unit (SECONDS, MINUTES, HOURS, DAYS) "
                         f"after {what}", choices=[*UNIT_SECONDS, "PARTS"] if parts else UNIT_SECONDS)

    def rest(self) -> Fragment:
        if self.index >= len(self.tokens):
            raise self.error("expected a query")
        return Fragment(self.fragment.source, self.tokens[self.index].start, self.fragment.end)

    def done(self) -> None:
        if self.peek() is not None:
            raise self.error("unexpected text after the statement")

    def parenthesized(self, what: str) -> Fragment:
        """The text between a '(' at the cursor and its matching ')'."""
        if not self.at("("):
            raise self.error(f"expected '(' starting {what}")
        open_token = self.tokens[self.index]
        depth = 0
        for index in range(self.index, len(self.tokens)):
            token = self.tokens[index]
            if token.token_type == TokenType.L_PAREN:
                depth += 1
            elif token.token_type == TokenType.R_PAREN:
                depth -= 1
                if depth == 0:
                    self.index = index + 1
                    return Fragment(self.fragment.source, open_token.end + 1, token.start)
        raise self.error(f"unclosed '(' in {what}", open_token)


def suggestion(token: Token, choices: Iterable[str]) -> str:
    """``; did you mean CREATE?`` when ``token`` is a word close to one of ``choices``."""
    if token.token_type in _QUOTED or not token.text.isidentifier():
        return ""
    close = difflib.get_close_matches(token.text.upper(), list(choices), n=1, cutoff=0.75)
    return f"; did you mean {close[0]}?" if close and close[0] != token.text.upper() else ""


def signature(tokens: list[Token], skipped: Iterable[int] = ()) -> tuple[str, ...]:
    """A statement's tokens as comparable words: keywords and plain names in upper case, quoted text
    as written; the tokens at ``skipped`` left out."""
    left_out = set(skipped)
    return tuple(f"{token.token_type.name}:{token.text}" if token.token_type in _QUOTED else token.text.upper()
                 for index, token in enumerate(tokens) if index not in left_out)


def parse_statement(statement: TokenStatement) -> Statement:
    """Parse one statement's tokens."""
    cursor = _Cursor(statement)
    first = cursor.peek()
    assert first is not None
    word = first.text.upper() if first.token_type not in _QUOTED else ""
    handler = _HANDLERS.get(word)
    if handler is not None:
        return handler(cursor)
    if word in QUERY_STARTS:
        return Query(statement.fragment, statement.fragment)
    raise cursor.error("expected a statement (CREATE, INSERT, LOAD, DELETE, UPDATE, SELECT, SHOW, DESCRIBE, DROP, "
                       "VERIFY, SEAL, SET MAINTENANCE, STEP, EXPLAIN VIEW, ALTER, VACUUM)",
                       choices=[*_HANDLERS, *QUERY_STARTS])


def _create(cursor: _Cursor) -> Statement:
    """``CREATE [OR REPLACE] STREAM|TABLE|[MATERIALIZED] VIEW [IF NOT EXISTS] name [CASCADE] ...``."""
    cursor.expect("CREATE")
    modifiers: list[int] = []     # token indices of the words that are not part of the definition

    def accept_modifier(*words: str) -> bool:
        start = cursor.index
        if cursor.accept(*words):
            modifiers.extend(range(start, cursor.index))
            return True
        return False

    or_replace = accept_modifier("OR", "REPLACE")
    kind = next((k for k in ("STREAM", "TABLE", "VIEW") if cursor.accept(k)), None)
    if kind is None and accept_modifier("MATERIALIZED") and cursor.accept("VIEW"):
        kind = "VIEW"
    if kind is None:
        raise cursor.error("expected STREAM, TABLE or VIEW after CREATE", choices=("STREAM", "TABLE", "VIEW"))
    if or_replace and kind != "VIEW":
        raise cursor.fragment.error(f"OR REPLACE is for views: replacing a {kind.lower()} would lose its data; "
                                    f"drop it first (DROP {kind}), or use IF NOT EXISTS",
                                    cursor.tokens[modifiers[0]].start, cursor.tokens[modifiers[1]].end + 1)
    if_not_exists_at = cursor.index
    if_not_exists = accept_modifier("IF", "NOT", "EXISTS")
    if or_replace and if_not_exists:
        raise cursor.fragment.error("use either OR REPLACE or IF NOT EXISTS, not both",
                                    cursor.tokens[if_not_exists_at].start)
    name = cursor.name(f"a {kind.lower()} name")
    cascade = or_replace and accept_modifier("CASCADE")
    creation = Creation(if_not_exists, or_replace, cascade, signature(cursor.tokens, modifiers))
    if kind == "STREAM":
        return _create_stream(cursor, name, creation)
    if kind == "TABLE":
        return _create_table(cursor, name, creation)
    return _create_view(cursor, name, creation)


def _create_stream(cursor: _Cursor, name: Name, creation: Creation) -> CreateStream:
    columns = cursor.parenthesized("the column list")
    timestamp = None
    length = None
    lateness = retain = None
    late_into = None
    unique: tuple[Name, ...] = ()
    while cursor.peek() is not None:
        if cursor.accept("TIMESTAMP"):
            timestamp = cursor.name("the timestamp column")
        elif cursor.accept("PARTITION", "LENGTH"):
            length, _ = cursor.duration("PARTITION LENGTH")
        elif cursor.accept("ALLOWED", "LATENESS"):
            lateness = cursor.extent("ALLOWED LATENESS")
            late_into = _on_late(cursor)
        elif cursor.accept("RETAIN"):
            retain = _retain(cursor)
        elif cursor.accept("UNIQUE"):
            unique = _unique(cursor)
        else:
            raise cursor.error("expected TIMESTAMP <column>, PARTITION LENGTH <seconds>, ALLOWED LATENESS <n> "
                               "PARTS, RETAIN <n> PARTS or UNIQUE (<columns>) PER PART",
                               choices=("TIMESTAMP", "PARTITION", "ALLOWED", "RETAIN", "UNIQUE"))
    if length is None:
        raise cursor.fragment.error("a stream needs a PARTITION LENGTH (in seconds)", name.start, name.end)
    return CreateStream(cursor.fragment, name, columns, timestamp, length, lateness, retain, unique, creation, late_into)


def _on_late(cursor: _Cursor) -> Name | None:
    """After ALLOWED LATENESS: ``ON LATE REJECT`` (the default: a batch with such rows is refused) or ``ON LATE
    DIVERT INTO t`` (they go to table t, the rest of the batch is taken); the table, or None."""
    if not cursor.accept("ON", "LATE"):
        return None
    if cursor.accept("REJECT"):
        return None
    if not cursor.accept("DIVERT"):
        raise cursor.error("expected REJECT or DIVERT INTO <table> after ON LATE", choices=("REJECT", "DIVERT"))
    cursor.expect("INTO")
    cursor.accept("TABLE")
    return cursor.name("a table name")


def _unique(cursor: _Cursor) -> tuple[Name, ...]:
    """``(a, b) PER PART``: the columns no two rows of one part share."""
    cursor.expect("(")
    names = [cursor.name("a column name")]
    while cursor.accept(","):
        names.append(cursor.name("a column name"))
    cursor.expect(")")
    if not cursor.accept("PER", "PART"):
        raise cursor.error("expected PER PART after UNIQUE (...): uniqueness holds within each part")
    return tuple(names)


def _retain(cursor: _Cursor) -> Extent:
    extent = cursor.extent("RETAIN")
    if extent.value < 1:
        raise cursor.fragment.error("RETAIN must keep at least one part", extent.start)
    return extent


def _alter(cursor: _Cursor) -> Alter:
    cursor.expect("ALTER")
    kind = "STREAM" if cursor.accept("STREAM") else "VIEW" if cursor.accept("VIEW") else None
    if kind is None:
        raise cursor.error("expected STREAM or VIEW after ALTER")
    name = cursor.name(f"a {kind.lower()} name")
    if cursor.accept("RESET"):
        option = "lateness" if cursor.accept("ALLOWED", "LATENESS") else "retain" if cursor.accept("RETAIN") else None
        if option is None:
            raise cursor.error("expected ALLOWED LATENESS or RETAIN after RESET")
        cursor.done()
        return Alter(cursor.fragment, kind, name, option, None)
    cursor.expect("SET")
    if cursor.accept("ALLOWED", "LATENESS"):
        if kind != "STREAM":
            raise cursor.error("ALLOWED LATENESS is set on a stream")
        extent, option = cursor.extent("ALLOWED LATENESS"), "lateness"
        late_into = _on_late(cursor)
    elif cursor.accept("RETAIN"):
        extent, option, late_into = _retain(cursor), "retain", None
    else:
        raise cursor.error("expected ALLOWED LATENESS or RETAIN after SET")
    cursor.done()
    return Alter(cursor.fragment, kind, name, option, extent, late_into)


def _create_table(cursor: _Cursor, name: Name, creation: Creation) -> Statement:
    if cursor.accept("AS"):
        return CreateTable(cursor.fragment, name, None, cursor.rest(), creation)
    saved = cursor.index
    columns = cursor.parenthesized("the column list")
    if cursor.peek() is not None:
        # A table with a TIMESTAMP column and PARTITION LENGTH is a stream.
        cursor.index = saved
        return _create_stream(cursor, name, creation)
    return CreateTable(cursor.fragment, name, columns, None, creation)


def _create_view(cursor: _Cursor, name: Name, creation: Creation) -> Statement:
    cursor.expect("AS")
    if not cursor.at("INITIALIZE"):
        first = cursor.peek()
        if first is not None and first.text.upper() not in QUERY_STARTS and suggestion(first, ("INITIALIZE",)):
            raise cursor.error("expected INITIALIZE or a query", choices=("INITIALIZE",))
        return CreateQueryView(cursor.fragment, name, cursor.rest(), creation)
    clauses: dict[ClauseKind, DeltaQuery] = {}
    length = length_at = refresh = None
    start_at_latest = False
    declared: dict[str, Fragment] = {}
    while cursor.peek() is not None:
        token = cursor.peek()
        assert token is not None
        clause = token.text.upper() if token.token_type not in _QUOTED else ""
        if clause in _DELTA_CLAUSES:
            start = cursor.index
            delta = _delta_query(cursor, _DELTA_CLAUSES[clause], name)
            key = ClauseKind.UPDATE_WHEN_UNIQUE if delta.guard else delta.clause
            if key in clauses:
                cursor.index = start
                raise cursor.error(f"{'UPDATE ... WHEN ... IS UNIQUE' if delta.guard else clause} is given twice")
            clauses[key] = delta
        elif cursor.accept("PARTITION", "LENGTH"):
            length, length_at = cursor.duration("PARTITION LENGTH")
        elif cursor.accept("START", "AT", "LATEST"):
            start_at_latest = True
        elif cursor.accept("REFRESH", "EVERY"):
            refresh, at = cursor.integer("how many parts")
            cursor.expect("PARTS")
            if refresh < 1:
                raise cursor.fragment.error("REFRESH EVERY needs a positive number of parts", at)
        elif _declaration_at(cursor, cursor.index):
            fact = cursor.peek()
            assert fact is not None
            if fact.text.upper() in declared:
                raise cursor.error(f"{fact.text.upper()} WHEN is given twice")
            cursor.index += 2
            declared[fact.text.upper()] = _empty_parts(cursor)
        else:
            raise cursor.error("expected UPDATE, RECOMPUTE, RANGE, PARTITION LENGTH, REFRESH EVERY, UNCHANGED WHEN, "
                               "EMPTY WHEN or START AT LATEST",
                               choices=("INITIALIZE", "UPDATE", "RECOMPUTE", "RANGE", "PARTITION", "REFRESH", "START",
                                        "UNCHANGED", "EMPTY"))
    if ClauseKind.UPDATE not in clauses:
        raise cursor.fragment.error("a ViewDF needs an UPDATE clause", name.start, name.end)
    if refresh is not None and ClauseKind.RECOMPUTE not in clauses:
        raise cursor.fragment.error("REFRESH EVERY n PARTS needs a RECOMPUTE clause", name.start, name.end)
    return CreateViewDF(cursor.fragment, name, clauses[ClauseKind.INITIALIZE], clauses[ClauseKind.UPDATE],
                        clauses.get(ClauseKind.RECOMPUTE), length, length_at, start_at_latest, refresh, creation,
                        clauses.get(ClauseKind.RANGE), declared.get("UNCHANGED"), declared.get("EMPTY"),
                        clauses.get(ClauseKind.UPDATE_WHEN_UNIQUE))


def _empty_parts(cursor: _Cursor) -> Fragment:
    """``X[j] IS EMPTY [AND Y[j-1] IS EMPTY ...]`` after UNCHANGED WHEN or EMPTY WHEN: the text of the
    references and their conditions (compiled by ``queries.compile_references``)."""
    first = cursor.peek()
    while True:
        _part_reference(cursor)
        cursor.expect("IS", "EMPTY")
        if not cursor.accept("AND"):
            break
    last = cursor.tokens[cursor.index - 1]
    assert first is not None
    return Fragment(cursor.fragment.source, first.start, last.end + 1)


def _part_reference(cursor: _Cursor) -> Fragment:
    """``X[<subscript>]`` at the cursor."""
    first = cursor.peek()
    cursor.name("a stream or view")
    opening = cursor.peek()
    cursor.expect("[")
    depth = 1
    while depth:
        token = cursor.peek()
        if token is None:
            assert opening is not None
            raise cursor.fragment.error("unclosed '[' in a partition reference", opening.start, opening.end + 1)
        depth += cursor.is_word(token, "[") - cursor.is_word(token, "]")
        cursor.index += 1
    assert first is not None
    return Fragment(cursor.fragment.source, first.start, cursor.tokens[cursor.index - 1].end + 1)


def _unique_guard(cursor: _Cursor) -> UniqueGuard:
    """``X[j] IS UNIQUE (a, b)`` after ``UPDATE V[j] WHEN``."""
    part = _part_reference(cursor)
    cursor.expect("IS", "UNIQUE", "(")
    names = [cursor.name("a column name")]
    while cursor.accept(","):
        names.append(cursor.name("a column name"))
    cursor.expect(")")
    return UniqueGuard(part, tuple(names))


def _clause_end(cursor: _Cursor) -> int:
    """Index of the token that ends the query of a ViewDF clause."""
    depth = 0
    tokens = cursor.tokens
    for index in range(cursor.index, len(tokens)):
        token = tokens[index]
        if token.token_type in (TokenType.L_PAREN, TokenType.L_BRACKET):
            depth += 1
        elif token.token_type in (TokenType.R_PAREN, TokenType.R_BRACKET):
            depth -= 1
        elif depth == 0 and token.token_type not in _QUOTED:
            heads = ("UPDATE", "RECOMPUTE", "INITIALIZE", "RANGE")   # a misspelt head also ends it, to be reported
            if (token.text.upper() in heads or suggestion(token, heads)) and \
                    index + 2 < len(tokens) and tokens[index + 2].token_type == TokenType.L_BRACKET:
                return index
            if any(cursor.at(*words, index=index) for words in _CLAUSE_HEADS) or _declaration_at(cursor, index):
                return index
    return len(tokens)


def _delta_query(cursor: _Cursor, kind: ClauseKind, view: Name) -> DeltaQuery:
    clause = kind.label
    cursor.expect(clause)
    head = cursor.name("the view name")
    if head.key != view.key:
        raise cursor.fragment.error(f"{clause} must define parts of {view.text}, not {head.text}",
                                    head.start, head.end)
    cursor.expect("[")
    variable = cursor.name("the part variable, e.g. i or j")
    cursor.expect("]")
    guard = _unique_guard(cursor) if kind is ClauseKind.UPDATE and cursor.accept("WHEN") else None
    cursor.expect("AS")
    end = _clause_end(cursor)
    if end == cursor.index:
        raise cursor.error(f"expected the {clause} query")
    query = Fragment(cursor.fragment.source, cursor.tokens[cursor.index].start, cursor.tokens[end - 1].end + 1)
    cursor.index = end
    return DeltaQuery(kind, head, variable.text, query, guard)


def _insert(cursor: _Cursor) -> Insert:
    cursor.expect("INSERT")
    if not cursor.accept("INTO"):
        cursor.expect("INTO")
    cursor.accept("TABLE") or cursor.accept("STREAM")
    target = cursor.name("a stream or table name")
    columns = None
    if cursor.at("("):
        inner = cursor.peek(1)
        if inner is not None and inner.text.upper() not in ("SELECT", "WITH", "VALUES"):
            cursor.index += 1
            names = [cursor.name("a column name")]
            while cursor.accept(","):
                names.append(cursor.name("a column name"))
            cursor.expect(")")
            columns = tuple(names)
    return Insert(cursor.fragment, target, columns, cursor.rest())


def _load(cursor: _Cursor) -> Load:
    cursor.expect("LOAD")
    cursor.accept("DATA")
    path, path_at = cursor.string("the file path")
    cursor.expect("INTO")
    cursor.accept("TABLE") or cursor.accept("STREAM")
    target = cursor.name("a stream or table name")
    fmt = None
    options: dict[str, str] = {}
    force = move = False
    while cursor.peek() is not None:
        if cursor.accept("FORCE"):
            force = True
        elif cursor.accept("MOVE"):
            move = True
        elif cursor.accept("FORMAT"):
            fmt = cursor.name("a format (csv, parquet, json)").text.lower()
        elif cursor.accept("OPTIONS") or cursor.accept("WITH"):
            cursor.expect("(")
            while True:
                key = cursor.name("an option name").text
                cursor.accept("=")
                token = cursor.peek()
                if token is None or token.token_type == TokenType.R_PAREN:
                    raise cursor.error("expected an option value")
                options[key] = token.text
                cursor.index += 1
                if not cursor.accept(","):
                    break
            cursor.expect(")")
        else:
            raise cursor.error("expected FORMAT, OPTIONS, FORCE or MOVE")
    return Load(cursor.fragment, path, path_at, target, fmt, options, force, move)


SHOWS: dict[str, type[Statement]] = {"STREAMS": ShowStreams, "VIEWS": ShowViews, "TABLES": ShowTables,
                                     "PENDING": ShowPending}


def _show(cursor: _Cursor) -> Statement:
    cursor.expect("SHOW")
    for word, kind in SHOWS.items():
        if cursor.accept(word):
            cursor.done()
            return kind(cursor.fragment)
    if cursor.accept("LATENESS"):
        stream = cursor.name("a stream name") if cursor.accept("FOR") else None
        cursor.done()
        return ShowLateness(cursor.fragment, stream)
    if cursor.accept("PARTS"):
        cursor.accept("OF") or cursor.accept("FROM")
        name = cursor.name("a stream or view name")
        since, since_at = None, 0
        if cursor.accept("CHANGED", "SINCE"):
            since, since_at = cursor.string("a timestamp ('2024-01-01 10:00:00')")
        cursor.done()
        return ShowParts(cursor.fragment, name, since, since_at)
    raise cursor.error("expected STREAMS, VIEWS, TABLES, PARTS, PENDING or LATENESS after SHOW",
                       choices=[*SHOWS, "PARTS", "LATENESS"])


def _describe(cursor: _Cursor) -> Describe:
    if not cursor.accept("DESCRIBE"):
        cursor.expect("DESC")
    cursor.accept("VIEW") or cursor.accept("STREAM") or cursor.accept("TABLE")
    name = cursor.name("a stream, view or table name")
    cursor.done()
    return Describe(cursor.fragment, name)


def _drop(cursor: _Cursor) -> Drop:
    cursor.expect("DROP")
    for kind in ("VIEW", "STREAM", "TABLE"):
        if cursor.accept(kind):
            break
    else:
        raise cursor.error("expected VIEW, STREAM or TABLE after DROP")
    if_exists = cursor.accept("IF", "EXISTS")
    name = cursor.name(f"a {kind.lower()} name")
    cascade = cursor.accept("CASCADE")
    cursor.done()
    return Drop(cursor.fragment, kind, name, cascade, if_exists)


def _verify(cursor: _Cursor) -> Verify:
    cursor.expect("VERIFY")
    cursor.accept("VIEW")
    name = cursor.name("a view name")
    tolerance = None
    if cursor.accept("TOLERANCE"):
        token = cursor.peek()
        try:
            tolerance = float(token.text) if token is not None and token.token_type == TokenType.NUMBER else None
        except ValueError:
            tolerance = None
        if tolerance is None or not 0 <= tolerance < float("inf"):
            raise cursor.error("expected a relative tolerance after TOLERANCE (a number, 0 or more, e.g. 1e-6)")
        cursor.index += 1
    cursor.done()
    return Verify(cursor.fragment, name, tolerance)


def _seal(cursor: _Cursor) -> Seal:
    cursor.expect("SEAL")
    cursor.accept("STREAM")
    name = cursor.name("a stream name")
    cursor.expect("THROUGH")
    through, at = cursor.string("a timestamp")
    cursor.done()
    return Seal(cursor.fragment, name, through, at)


def _vacuum(cursor: _Cursor) -> Vacuum:
    cursor.expect("VACUUM")
    retain = VACUUM_RETAIN_SECONDS
    if cursor.accept("RETAIN"):
        retain = cursor.extent("VACUUM RETAIN", parts=False).value
    cursor.done()
    return Vacuum(cursor.fragment, retain)


def _explain(cursor: _Cursor) -> ExplainView | ExplainChange:
    cursor.expect("EXPLAIN")
    if cursor.at("DELETE") or cursor.at("UPDATE"):
        change = _delete(cursor) if cursor.at("DELETE") else _update(cursor)
        return ExplainChange(cursor.fragment, change)
    if not cursor.accept("VIEW"):
        raise cursor.error("expected VIEW, DELETE or UPDATE after EXPLAIN", choices=("VIEW", "DELETE", "UPDATE"))
    name = cursor.name("a view name")
    cursor.done()
    return ExplainView(cursor.fragment, name)


def _delete(cursor: _Cursor) -> Delete:
    cursor.expect("DELETE", "FROM")
    cursor.accept("STREAM")
    target = cursor.name("a stream name")
    return Delete(cursor.fragment, target, _condition(cursor))


def _update(cursor: _Cursor) -> Update:
    cursor.expect("UPDATE")
    cursor.accept("STREAM")
    target = cursor.name("a stream name")
    cursor.expect("SET")
    assignments = [_assignment(cursor)]
    while cursor.accept(","):
        assignments.append(_assignment(cursor))
    seen: set[str] = set()
    for assignment in assignments:
        if assignment.column.key in seen:
            raise cursor.fragment.error(f"column {assignment.column.text} is set twice",
                                        assignment.column.start, assignment.column.end)
        seen.add(assignment.column.key)
    return Update(cursor.fragment, target, tuple(assignments), _condition(cursor))


def _assignment(cursor: _Cursor) -> Assignment:
    """``column = value``: the value runs to a comma or WHERE outside parentheses."""
    column = cursor.name("a column name")
    cursor.expect("=")
    first = cursor.index
    depth = 0
    while (token := cursor.peek()) is not None:
        if token.token_type in (TokenType.L_PAREN, TokenType.L_BRACKET):
            depth += 1
        elif token.token_type in (TokenType.R_PAREN, TokenType.R_BRACKET):
            depth -= 1
        elif depth == 0 and (cursor.is_word(token, ",") or cursor.is_word(token, "WHERE")):
            break
        cursor.index += 1
    if cursor.index == first:
        raise cursor.error(f"expected a value for {column.text}")
    last = cursor.tokens[cursor.index - 1]
    return Assignment(column, Fragment(cursor.fragment.source, cursor.tokens[first].start, last.end + 1))


def _condition(cursor: _Cursor) -> Fragment | None:
    """An optional ``WHERE condition`` that ends the statement."""
    if cursor.peek() is None:
        return None
    where = cursor.peek()
    cursor.expect("WHERE")
    if cursor.peek() is None:
        assert where is not None       # expect found it
        raise cursor.fragment.error("expected a condition after WHERE", where.start, where.end + 1)
    return cursor.rest()


def _set(cursor: _Cursor) -> SetMaintenance:
    cursor.expect("SET", "MAINTENANCE")
    for mode in ("MANUAL", "AUTO"):
        if cursor.accept(mode):
            cursor.done()
            return SetMaintenance(cursor.fragment, mode.lower())
    raise cursor.error("expected MANUAL or AUTO after SET MAINTENANCE")


def _step(cursor: _Cursor) -> Step:
    cursor.expect("STEP")
    view = None
    count: int | None = 1
    if cursor.accept("ALL"):
        count = None
    elif (token := cursor.peek()) is not None and not cursor.at("WITH") and token.token_type != TokenType.NUMBER:
        view = cursor.name("a view name, a number of steps or ALL")
    if count is not None and (token := cursor.peek()) is not None and token.token_type == TokenType.NUMBER:
        count, at = cursor.integer("the number of steps")
        if count < 1:
            raise cursor.fragment.error("the number of steps must be at least 1", at)
    plan = cursor.accept("WITH", "PLAN")
    cursor.done()
    return Step(cursor.fragment, view, count, plan)


_HANDLERS = {
    "CREATE": _create, "INSERT": _insert, "LOAD": _load, "SHOW": _show,
    "DESCRIBE": _describe, "DESC": _describe, "DROP": _drop, "VERIFY": _verify, "SEAL": _seal,
    "SET": _set, "STEP": _step, "EXPLAIN": _explain, "ALTER": _alter, "VACUUM": _vacuum,
    "DELETE": _delete, "UPDATE": _update,
}
