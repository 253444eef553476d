"""Tokenizing with sqlglot's Spark tokenizer, and splitting input into statements."""

from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass
from typing import ClassVar

from sqlglot.dialects.spark import Spark
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from ..errors import ViewDFError
from .source import Fragment



class ViewDFSpark(Spark):
    """Spark SQL as Spark itself reads string literals: inside a string, a doubled quote of its own kind
    is one quote (``'it''s'`` is it's, as with ``'it\\'s'``). sqlglot's Spark dialect reads ``'it''s'`` as
    the two literals ``'it' 's'`` (``CONCAT('it', 's')``), so translated views, which re-render the
    user's conditions, would compare with another value than the user's query."""

    class Tokenizer(Spark.Tokenizer):
        STRING_ESCAPES = [*Spark.Tokenizer.STRING_ESCAPES, "'", '"']


class _Tokenizer(ViewDFSpark.Tokenizer):
    """Spark's tokenizer, except that SHOW and friends do not swallow the rest of the statement."""

    COMMANDS: ClassVar[set[TokenType]] = set()


IDENTIFIER_TYPES = {TokenType.VAR, TokenType.IDENTIFIER}


def fragment_tokens(fragment: Fragment) -> list[Token]:
    """The tokens of ``fragment``, with absolute offsets, cut from the one tokenization of its whole
    source (each statement's text is tokenized once, however many steps read it). Do not change them."""
    tokens = _source_tokens(fragment.source)
    starts = [token.start for token in tokens]
    return tokens[bisect.bisect_left(starts, fragment.start):bisect.bisect_left(starts, fragment.end)]


@functools.lru_cache(maxsize=32)
def _source_tokens(source: str) -> list[Token]:
    return tokenize(source)


def tokenize(source: str) -> list[Token]:
    """All tokens of ``source``; token offsets are absolute positions in it."""
    try:
        return list(_Tokenizer(dialect=ViewDFSpark).tokenize(source))
    except TokenError as exc:
        found = _unterminated(source)
        if found is not None:
            position, what = found
            raise ViewDFError(f"cannot read the input: {what}", text=source, position=position) from None
        # Not a quote or comment left open: sqlglot names the text around where it stopped reading.
        stopped = getattr(exc, "start", 0) or 0
        position = min(len(source), stopped + 50) if stopped else 0
        raise ViewDFError(f"cannot read the input: {exc}", text=source, position=position) from None


def _unterminated(source: str) -> tuple[int, str] | None:
    """Where a string, quoted name or comment left open starts, and which, found by a plain scan
    (bracketed comments nest, as in Spark)."""
    quote = None
    start = 0
    index = 0
    while index < len(source):
        char = source[index]
        if quote is None:
            if source.startswith("--", index):
                newline = source.find("\n", index)
                index = len(source) if newline < 0 else newline
                continue
            if source.startswith("/*", index):
                depth, at = 1, index + 2
                while depth and at < len(source):
                    if source.startswith("/*", at):
                        depth, at = depth + 1, at + 2
                    elif source.startswith("*/", at):
                        depth, at = depth - 1, at + 2
                    else:
                        at += 1
                if depth:
                    return index, "unterminated comment"
                index = at
                continue
            if char in "'\"`":
                quote, start = char, index
        elif char == "\\" and quote != "`":
            index += 1
        elif char == quote and source.startswith(quote * 2, index):
            index += 1          # a doubled quote inside a string or name is one quote
        elif char == quote:
            quote = None
        index += 1
    if quote is None:
        return None
    return start, "unterminated quoted name" if quote == "`" else "unterminated string"


@dataclass(frozen=True)
class TokenStatement:
    """One ``;``-separated statement: its tokens and the text they span."""

    tokens: list[Token]
    fragment: Fragment


def split_statements(source: str) -> list[TokenStatement]:
    """Split ``source`` at top-level semicolons; empty statements are dropped."""
    tokens = _source_tokens(source)
    statements: list[TokenStatement] = []
    current: list[Token] = []
    for token in tokens + [None]:
        if token is None or token.token_type == TokenType.SEMICOLON:
            if current:
                fragment = Fragment(source, current[0].start, current[-1].end + 1)
                statements.append(TokenStatement(current, fragment))
            current = []
        else:
            current.append(token)
    return statements


def backquote(name: str) -> str:
    """``name`` as a backquoted Spark SQL identifier (safe for any name, keywords included)."""
    return "`" + name.replace("`", "``") + "`"


def quote_name(name: str) -> str:
    """``name`` as a Spark SQL identifier: bare when it is a plain identifier, else backquoted."""
    return name if name.isidentifier() else backquote(name)
