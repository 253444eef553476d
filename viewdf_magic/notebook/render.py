"""Showing what statements did: render each Result as text or HTML.

Shared by the ``%%viewdf`` magics and the ``viewdf`` command line.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import pandas as pd

from ..errors import ViewDFError
from ..language.statements import Describe, Step, Verify
from ..engine.results import Result
from ..warehouse import StepReport
from ..wording import named_spans, plural

RED, RESET = "\x1b[31m", "\x1b[0m"
DETAILED_STEPS = 5    # a STEP computing at most this many parts shows each one's full report


def steps_summary(steps: list[StepReport], seconds: float | None) -> str | None:
    """One line naming the view parts a statement computed and the wall ``seconds`` its maintenance took (when
    known), e.g. ``Computed 2 view parts in 0.61 s: ...``. Not the sum of the steps' seconds: steps run together,
    a run of parts shares one job, and maintenance does more than jobs."""
    if not steps:
        return None
    named = named_spans((step.view, step.part_timestamp) for step in steps)
    took = f" in {seconds:.2f} s" if seconds is not None else ""
    return f"Computed {plural(len(steps), 'view part')}{took}: {named}"


def table_text(rows: pd.DataFrame) -> str:
    """Rows as a plain-text table; an empty result still names its columns."""
    if rows.empty:
        return "  ".join(map(str, rows.columns))
    return rows.to_string(index=False)


def error_text(error: ViewDFError, color: bool = False) -> str:
    """The error's message and caret block, in red when ``color``."""
    return f"{RED}{error}{RESET}" if color else str(error)


@dataclass
class ResultView:
    """A Result made ready to show: IPython displays it as HTML in notebooks and as text in terminals."""

    message: str | None
    detail: str | None
    rows: pd.DataFrame | None
    footer: str | None                # the row count, or the notice that rows were cut
    note: str | None                  # a query's line on the views it reads that are not up to date
    figure: str | None                # an SVG drawing
    tables: list[tuple[str, pd.DataFrame]]   # further titled tables
    steps: str | None                 # one line naming the view parts computed...
    reports: list[StepReport]         # ...or their full reports, for a STEP of a few parts
    sections: list[tuple[str, str]]   # titled long texts (ViewDFs, plans): folded in notebooks

    @classmethod
    def of(cls, result: Result, limit: int | None, hint: str) -> "ResultView":
        """Fetch what to show of ``result``; ``hint`` tells how to see every row when some were cut.

        DESCRIBE always lists every column.
        """
        rows, footer = None, None
        if result.has_rows:
            rows, cut = result.head(None if isinstance(result.statement, Describe) else limit)
            if isinstance(result.statement, Verify):    # a part compared exactly has no difference to show
                differences = rows["max_difference"]
                rows = rows.assign(max_difference=differences.astype(object).where(differences.notna(), ""))
            footer = (f"Showing the first {len(rows)} rows; more exist. {hint}" if cut else
                      f"({len(rows)} row{'' if len(rows) == 1 else 's'})")
        if isinstance(result.statement, Step) and len(result.steps) <= DETAILED_STEPS:
            return cls(result.message, result.detail, rows, footer, result.note, result.figure, result.tables,
                       None, result.steps, result.sections)
        return cls(result.message, result.detail, rows, footer, result.note, result.figure, result.tables,
                   steps_summary(result.steps, result.maintenance_seconds), [], result.sections)

    def text(self) -> str:
        """The plain-text form, as printed by ``viewdf run`` and shown in terminals."""
        extra = [f"{title}:\n{table_text(table)}" for title, table in self.tables]
        parts = [self.message, *extra, self.detail, None if self.rows is None else table_text(self.rows),
                 self.footer, self.note, self.steps, *(report.text() for report in self.reports),
                 *(f"\n--- {title} ---\n{text}" for title, text in self.sections)]
        return "\n".join(part for part in parts if part)

    def _repr_html_(self) -> str:
        parts = []
        if self.message:
            parts.append(f"<div>{html.escape(self.message)}</div>")
        if self.figure:
            parts.append(f"<div class='viewdf-figure'>{self.figure}</div>")
        for title, table in self.tables:
            parts.append(f"<div><strong>{html.escape(title)}</strong></div>"
                         + table.to_html(index=False, border=0, classes="dataframe viewdf"))
        if self.detail:
            parts.append(f"<pre>{html.escape(self.detail)}</pre>")
        if self.rows is not None:
            parts.append(self.rows.to_html(index=False, border=0, classes="dataframe viewdf"))
        if self.footer:
            parts.append(f"<div><em>{html.escape(self.footer)}</em></div>")
        if self.note:
            parts.append(f"<div class='viewdf-note' style='color: #b45309'>{html.escape(self.note)}</div>")
        if self.steps:
            parts.append(f"<div style='color: gray'>{html.escape(self.steps)}</div>")
        parts += [report._repr_html_() for report in self.reports]
        parts += [f"<details class='viewdf-section'><summary>{html.escape(title)}</summary>"
                  f"<pre>{html.escape(text)}</pre></details>" for title, text in self.sections]
        return "\n".join(parts)

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(self.text())
