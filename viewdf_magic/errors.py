"""The one error type users see, with an optional position in their own text."""

from __future__ import annotations

import copy


class ViewDFError(Exception):
    """A user-facing error: one clear message, and where in the input it happened.

    ``text`` is the whole input the user gave (a cell, a file, a statement) and
    ``position`` a 0-based character offset into it. ``end`` (exclusive) widens
    the caret to cover a whole token. ``first_line`` is the number the user's editor
    gives the first line of ``text`` (2 for a ``%%viewdf`` cell's body). ``reason`` is the message
    without the context it was raised in (what failed, not which step: ``Division by zero``).
    """

    def __init__(self, message: str, *, text: str | None = None,
                 position: int | None = None, end: int | None = None, first_line: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.reason = message
        self.text = text
        self.position = position
        self.end = end
        self.first_line = first_line

    @property
    def line(self) -> int | None:
        """Line of the error as the user's editor numbers it, when a position is known."""
        if self.text is None or self.position is None:
            return None
        return self.text.count("\n", 0, self.position) + self.first_line

    @property
    def column(self) -> int | None:
        """1-based column of the error, when a position is known."""
        if self.text is None or self.position is None:
            return None
        return self.position - (self.text.rfind("\n", 0, self.position) + 1) + 1

    def located(self, text: str, offset: int) -> "ViewDFError":
        """The same error (same type), re-anchored from a piece of ``text`` starting at ``offset`` into
        ``text`` itself."""
        if self.position is None or self.text is None:
            return self
        moved = copy.copy(self)
        moved.text, moved.position = text, self.position + offset
        moved.end = None if self.end is None else self.end + offset
        return moved

    def __str__(self) -> str:
        if self.line is None:
            return self.message
        assert self.text is not None and self.position is not None
        column = self.column
        assert column is not None
        start = self.text.rfind("\n", 0, self.position) + 1
        stop = self.text.find("\n", self.position)
        source_line = self.text[start: stop if stop >= 0 else len(self.text)]
        width = 1
        if self.end is not None and self.end > self.position:
            width = max(1, min(self.end, start + len(source_line)) - self.position)
        caret = " " * (column - 1) + "^" * width
        return (f"{self.message}\n  at line {self.line}, column {self.column}:\n"
                f"    {source_line}\n    {caret}")


class Interrupted(ViewDFError):
    """A statement stopped by the user (Ctrl-C, Jupyter's Interrupt kernel): its Spark jobs were
    cancelled and the message names the parts it had published, which stay."""


class RowsRefused(ViewDFError):
    """A batch was refused because ``rows`` of its rows were later than ALLOWED LATENESS of ``stream`` (its
    key): the engine counts them once the batch's own writes are undone."""

    def __init__(self, error: ViewDFError, stream: str, rows: int) -> None:
        super().__init__(error.message, text=error.text, position=error.position, end=error.end,
                         first_line=error.first_line)
        self.stream, self.rows = stream, rows
