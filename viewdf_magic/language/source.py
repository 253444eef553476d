"""Pieces of the user's text, and rewrites of them that remember where each character came from."""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from ..errors import ViewDFError


@dataclass(frozen=True)
class Fragment:
    """The slice ``source[start:end]`` of the user's whole input."""

    source: str
    start: int
    end: int

    @property
    def text(self) -> str:
        return self.source[self.start:self.end]

    def error(self, message: str, position: int | None = None, end: int | None = None) -> ViewDFError:
        """An error at absolute ``position`` (defaults to this fragment's start)."""
        at = self.start if position is None else position
        return ViewDFError(message, text=self.source, position=at, end=end)

    def strip(self) -> "Fragment":
        text = self.text
        left = len(text) - len(text.lstrip())
        right = len(text.rstrip())
        return Fragment(self.source, self.start + left, self.start + max(left, right))


@dataclass(frozen=True)
class Replacement:
    """Replace the absolute span ``[start, end)`` of the source with ``text``."""

    start: int
    end: int
    text: str


class RewrittenText:
    """A fragment with some spans replaced, able to map output offsets back to the source."""

    def __init__(self, fragment: Fragment, replacements: list[Replacement]) -> None:
        self.fragment = fragment
        pieces: list[str] = []
        self._new_starts: list[int] = []
        self._spans: list[tuple[int, int, int, int]] = []  # new_start, new_end, old_start, old_end
        cursor = fragment.start
        length = 0
        for rep in sorted(replacements, key=lambda r: r.start):
            if rep.start < cursor:
                raise ValueError("overlapping replacements")
            pieces.append(fragment.source[cursor:rep.start])
            length += rep.start - cursor
            self._new_starts.append(length)
            self._spans.append((length, length + len(rep.text), rep.start, rep.end))
            pieces.append(rep.text)
            length += len(rep.text)
            cursor = rep.end
        pieces.append(fragment.source[cursor:fragment.end])
        self.text = "".join(pieces)

    def source_position(self, offset: int) -> int:
        """The absolute source offset of character ``offset`` of the rewritten text."""
        index = bisect.bisect_right(self._new_starts, offset) - 1
        if index < 0:
            return self.fragment.start + offset
        new_start, new_end, old_start, old_end = self._spans[index]
        if offset < new_end:
            return old_start
        return old_end + (offset - new_end)

    def error(self, message: str, offset: int | None = None, end: int | None = None) -> ViewDFError:
        """An error at an offset of the rewritten text, reported against the source."""
        if offset is None:
            return self.fragment.error(message)
        start = self.source_position(offset)
        stop = None if end is None else max(start + 1, self.source_position(max(offset, end - 1)) + 1)
        return self.fragment.error(message, start, stop)
