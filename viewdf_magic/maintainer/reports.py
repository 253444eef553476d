"""Step reports: what one maintenance step read, ran and wrote, as text and as HTML."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

import pandas as pd

from ..catalog.model import LineageRange
from ..language.statements import ClauseKind
from ..timeparts import part_start
from ..wording import plural


@dataclass(frozen=True)
class ReferenceReport:
    """One partition reference of a step's query, resolved to concrete parts."""

    written: str                  # as the user wrote it, e.g. Helper[j-1]
    resolved: str                 # e.g. Helper[23668444]
    first_timestamp: pd.Timestamp | None
    last_timestamp: pd.Timestamp | None
    rows: int | None              # rows in the parts read (None for tables)

    def describe(self) -> str:
        if self.first_timestamp is None:
            return f"{self.written} = {self.resolved}"
        when = f"{self.first_timestamp:%Y-%m-%d %H:%M:%S}"
        if self.last_timestamp is not None and self.last_timestamp != self.first_timestamp:
            when += f" .. {self.last_timestamp:%Y-%m-%d %H:%M:%S}"
        return f"{self.written} = {self.resolved} ({when}, {plural(self.rows or 0, 'row')})"


@dataclass(frozen=True)
class StepReport:
    """What one maintenance step did. What it read (``sql``, ``references``) is resolved when first asked
    for, from the catalog as it is then: a range step records thousands of parts, of which a user sees few
    (a STEP's reports of a few parts, the history's last HISTORY_SIZE)."""

    view: str
    subscript: int
    length: int                   # the view's partition length, seconds
    how: ClauseKind               # the clause that computed the part
    rows: int
    seconds: float
    lineage: tuple[LineageRange, ...]
    reads: Callable[[], tuple[str, tuple[ReferenceReport, ...]]] = field(compare=False, repr=False)
    plan: str | None = None       # Spark physical plan, when asked for
    loader: Callable[[int], pd.DataFrame] | None = field(default=None, compare=False, repr=False)
    repair: str = ""              # after late data: "changed" or "unchanged" (the same rows as the stored part)
    span: tuple[int, int] | None = None   # a range step: the first and last part it computed together
    fused_into: str = ""          # a fused part: the source part whose Spark job wrote it, e.g. Helper[5]
    discarded: str = ""           # why the guarded UPDATE's attempt at the part was discarded, e.g. M[5] repeats (k)

    @property
    def part_timestamp(self) -> pd.Timestamp:
        return part_start(self.subscript, self.length)

    @cached_property
    def _resolved(self) -> tuple[str, tuple[ReferenceReport, ...]]:
        return self.reads()

    @property
    def sql(self) -> str:
        """The query with partition references resolved."""
        return self._resolved[0]

    @property
    def references(self) -> tuple[ReferenceReport, ...]:
        """Each partition reference of the query, resolved to the parts it read."""
        return self._resolved[1]

    def preview(self, limit: int = 5) -> pd.DataFrame | None:
        """The first rows of the part this step produced (read on demand)."""
        return self.loader(limit) if self.loader is not None else None

    @property
    def title(self) -> str:
        repair = f" after late data ({self.repair})" if self.repair else ""
        took = f"in {self.fused_into}'s Spark job" if self.fused_into else f"in {self.seconds:.3f}s"
        discarded = f", after a discarded {ClauseKind.UPDATE_WHEN_UNIQUE.label} ({self.discarded})" \
            if self.discarded else ""
        return (f"{self.view}[{self.subscript}] ({self.part_timestamp:%Y-%m-%d %H:%M:%S}) "
                f"{self.how.label}{repair}: {plural(self.rows, 'row')} {took}{discarded}")

    def __str__(self) -> str:
        read = ", ".join(r.text for r in self.lineage) or "nothing"
        return f"{self.title}, read {read}"

    def text(self, preview_rows: int = 5) -> str:
        """A full, readable report for a terminal."""
        lines = [self.title]
        lines += ["  reads:"] + [f"    {r.describe()}" for r in self.references]
        lines += ["  query:"] + [f"    {line}" for line in self.sql.strip().splitlines()]
        preview = self.preview(preview_rows)
        if preview is not None:
            lines += ["  rows:"] + [f"    {line}" for line in
                                    (preview.to_string(index=False) if len(preview) else "(none)").splitlines()]
        if self.plan:
            lines += ["  physical plan:"] + [f"    {line}" for line in self.plan.strip().splitlines()]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        references = "".join(f"<li><code>{html.escape(r.describe())}</code></li>" for r in self.references)
        preview = self.preview()
        rows = preview.to_html(index=False) if preview is not None and len(preview) else "<i>no rows</i>"
        plan = (f"<details><summary>Spark physical plan</summary><pre>{html.escape(self.plan)}</pre></details>"
                if self.plan else "")
        return (f"<div class='viewdf-step'><b>{html.escape(self.title)}</b>"
                f"<div>Reads:</div><ul>{references}</ul>"
                f"<details open><summary>Query with references resolved</summary>"
                f"<pre>{html.escape(self.sql.strip())}</pre></details>"
                f"<div>New part:</div>{rows}{plan}</div>")

