"""Tokenizing with sqlglot's Spark tokenizer, and splitting input into statements."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot.dialects.spark import Spark
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from ..errors import ViewDFError
from .source import Fragment



class _Tokenizer(Spark.Tokenizer):
    """Spark's tokenizer, except that SHOW and friends do not swallow the rest of the statement."""

    COMMANDS: set = set()


IDENTIFIER_TYPES = {TokenType.VAR, TokenType.IDENTIFIER}


def tokenize(source: str) -> list[Token]:
    """All tokens of ``source``; token offsets are absolute positions in it."""
    try:
        return list(_Tokenizer(dialect="spark").tokenize(source))
    except TokenError as exc:
        raise ViewDFError(f"cannot read the input: {_unterminated(source) or exc}",
                          text=source, position=_unterminated_position(source)) from None


def _unterminated(source: str) -> str | None:
    return "unterminated string or quoted identifier" if _unterminated_position(source) is not None else None


def _unterminated_position(source: str) -> int | None:
    """Where an unterminated quote starts, found by a plain scan."""
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
                close = source.find("*/", index + 2)
                if close < 0:
                    return index
                index = close + 2
                continue
            if char in "'\"`":
                quote, start = char, index
        elif char == "\\" and quote != "`":
            index += 1
        elif char == quote:
            quote = None
        index += 1
    return start if quote is not None else None


@dataclass(frozen=True)
class TokenStatement:
    """One ``;``-separated statement: its tokens and the text they span."""

    tokens: list[Token]
    fragment: Fragment


def split_statements(source: str) -> list[TokenStatement]:
    """Split ``source`` at top-level semicolons; empty statements are dropped."""
    tokens = tokenize(source)
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


def token_span(token: Token) -> tuple[int, int]:
    """``[start, end)`` of a token; quoted identifiers include their quotes."""
    return token.start, token.end + 1


def identifier_name(token: Token) -> str:
    """The name an identifier token spells (quotes removed)."""
    return token.text


def quote_name(name: str) -> str:
    """``name`` as a Spark SQL identifier: bare when it is a plain identifier, else backquoted."""
    return name if name.isidentifier() else "`" + name.replace("`", "``") + "`"
