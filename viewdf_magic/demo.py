"""``viewdf demo``: the paper's network-monitoring example, run headless in a terminal.

It says what each view asks, shows the pattern view's state machine as text, feeds ten minutes of
the stream one part at a time (the paper's pair 10.0.0.1 -> 10.0.0.2 reaches ct=4, sum_loss=71 at
10:04 and ct=5, sum_loss=87 at 10:05, and drops out at 10:06), and sets each incremental step of the
pattern view against recomputing the same part from the whole stream. Ten minutes are too few for
incremental to win; the demo ends where it does: the same view over a stream with a day of history
(loaded at once), then a few more minutes, each computed both ways.
"""

from __future__ import annotations

import contextlib
import random
import statistics
import tempfile

import pandas as pd

from .maintainer.reports import StepReport
from .network_example import (NETWORK_DDL, PAPER_LOSSES, PAPER_PAIR, SEED, START, minute_batch, network_stream,
                              stream_ddl)
from .warehouse import Warehouse
from .wording import plural

PATTERN_VIEW = """
CREATE VIEW {view} AS
  SELECT src, dest, a.ts AS since, count(*) AS ct, sum(loss) AS sum_loss
  FROM {stream} PATTERN [a, b, c, d+]
  WHERE a.loss > 10 AND b.loss > 10 AND c.loss > 10 AND d.loss > 10
  GROUP BY src, dest
"""
HISTORY_MINUTES = 1440          # a day of history before the last comparison
HISTORY_PAIRS = 100
COMPARED_MINUTES = 3
QUESTIONS = {
    "M": "the stream: packet losses per (src, dest) pair, stored in one-minute parts",
    "Helper": "per pair, how many minutes in a row up to now lost more than 10 packets, and their total "
              "(hand-written ViewDF: reads M[j] and its own previous part Helper[j-1])",
    "View2": "the pairs that lost more than 10 packets in each of the last four or more minutes "
             "(hand-written ViewDF: reads Helper[j])",
    "View1": "the same question as a pattern query, PATTERN [a, b, c, d+], translated automatically into "
             "the state machine below, a helper ViewDF and a final ViewDF",
}


def step_times(steps: list[StepReport]) -> str:
    """How long each view part took, e.g. ``Helper 0.41 s, View2 0.22 s``."""
    return ", ".join(f"{step.view} {step.seconds:.2f} s" for step in steps)


def run_demo(path: str | None = None, pairs: int = 4, history: int = HISTORY_MINUTES) -> None:
    """Create the stream and views in ``path`` (a fresh temporary warehouse if None), feed ten minutes,
    then compare the pattern view's incremental steps with recomputation, and again after ``history``
    minutes (none for 0)."""
    with contextlib.ExitStack() as cleanup:
        if path is None:
            path = cleanup.enter_context(tempfile.TemporaryDirectory(prefix="viewdf-demo-"))
        warehouse = Warehouse(path, progress=False)
        print(f"Warehouse: {warehouse.path}")
        for result in warehouse.run(NETWORK_DDL + ";" + PATTERN_VIEW.format(view="View1", stream="M")):
            print(result.message)
        print("\nWhat each one answers:")
        for name, question in QUESTIONS.items():
            print(f"  {name:<7} {question}")
        print(fsm_text(warehouse))
        rng = random.Random(SEED)
        steps: list[StepReport] = []
        for minute, paper_loss in enumerate(PAPER_LOSSES):
            stamp = START + pd.Timedelta(minutes=minute)
            batch = minute_batch(stamp, paper_loss, pairs, rng)
            report = warehouse.ingest("M", batch)
            steps += report.steps
            print(f"\n{stamp:%H:%M}  {len(batch)} rows into M; {step_times(report.steps)}")
            print(view2_part(warehouse, stamp, report.steps), flush=True)
        print(against_recomputation(warehouse, steps))
        print(summary(warehouse, steps))
        if history:
            print(after_history(warehouse, history), flush=True)


def fsm_text(warehouse: Warehouse) -> str:
    """View1's states and edges, as EXPLAIN VIEW lists them."""
    tables = dict(warehouse.explain_view("View1").tables)
    return "\n".join(["\nView1's state machine (one run per pair; d+ accepts):",
                      tables["States"].to_string(index=False), "", tables["Edges"].to_string(index=False)])


def against_recomputation(warehouse: Warehouse, steps: list[StepReport], view: str = "View1",
                          earlier_parts: int = 0) -> str:
    """Each minute's incremental step of the pattern ``view`` (its helper's step and its own) against
    recomputing the same part from every part of its stream so far (``earlier_parts`` before ``steps``),
    with whether the two parts are equal."""
    rows = []
    for minute, stamp in enumerate(dict.fromkeys(step.part_timestamp for step in steps)):
        incremental = [step for step in steps
                       if step.part_timestamp == stamp and step.view in (f"{view}__helper", view)]
        check = warehouse.verify_part(view, stamp)
        rows.append({"minute": f"{stamp:%H:%M}", "incremental_s": round(sum(s.seconds for s in incremental), 2),
                     "reads": plural(sum(r.last - r.first + 1 for s in incremental for r in s.lineage), "part"),
                     "recompute_s": round(check.recompute_seconds, 2),
                     "recompute_reads": plural(earlier_parts + minute + 1, "part"),
                     "equal": "yes" if check.comparison.equal else "NO"})
    table = pd.DataFrame(rows)
    incremental, recompute = table["incremental_s"].median(), table["recompute_s"].median()
    verdict = (f"incremental is {recompute / incremental:.1f}x faster" if incremental < recompute else
               "recomputing is cheaper here: a step's fixed cost (a few Spark jobs) outweighs rereading "
               f"{plural(earlier_parts + len(rows), 'part')}")
    return "\n".join([f"\n{view}, each part computed incrementally and recomputed from the whole stream so far:",
                      table.to_string(index=False),
                      f"Medians: incremental {incremental:.2f} s, recompute {recompute:.2f} s; {verdict}."])


def after_history(warehouse: Warehouse, minutes: int) -> str:
    """The same pattern view over a stream ``Day`` with ``minutes`` of history, loaded at once (range
    steps), then COMPARED_MINUTES more minutes, each computed incrementally and recomputed."""
    warehouse.run(stream_ddl("Day") + ";" + PATTERN_VIEW.format(view="DayView1", stream="Day"))
    stream = network_stream(minutes + COMPARED_MINUTES, HISTORY_PAIRS)
    cut = START + pd.Timedelta(minutes=minutes)
    loaded = warehouse.ingest("Day", stream[stream.ts < cut])
    lines = [f"\nAfter {plural(minutes, 'minute')} of history: stream Day, the same pattern view as DayView1, "
             f"{len(stream[stream.ts < cut]):,} rows loaded at once; {plural(len(loaded.steps), 'range step')} "
             f"computed its {plural(2 * minutes, 'view part')}."]
    steps: list[StepReport] = []
    for minute in range(COMPARED_MINUTES):
        stamp = cut + pd.Timedelta(minutes=minute)
        steps += warehouse.ingest("Day", stream[(stream.ts >= stamp) & (stream.ts < stamp + pd.Timedelta(minutes=1))]
                                  ).steps
    lines.append(against_recomputation(warehouse, steps, "DayView1", earlier_parts=minutes))
    lines.append("The incremental step reads 3 parts whatever the history; recomputing rereads every minute so "
                 "far, so it costs one minute more each minute. Incremental wins once rereading the history "
                 "costs more than the incremental step's fixed cost of a few Spark jobs; where that is depends "
                 "on the machine and the rows per minute (notebooks/05-benchmarking.ipynb finds it).")
    return "\n".join(lines)


def view2_part(warehouse: Warehouse, stamp: pd.Timestamp, steps: list[StepReport]) -> str:
    """The View2 part just maintained; it is read only when its step wrote rows."""
    rows = sum(step.rows for step in steps if step.view == "View2" and step.part_timestamp == stamp)
    title = f"View2 part {stamp:%Y-%m-%d %H:%M}: "
    if not rows:
        return title + "no rows"
    part = warehouse.read_part("View2", stamp).sort_values(["src", "dest"])
    lines = [f"  {row.src} -> {row.dest}  ct={row.ct} sum_loss={row.sum_loss}"
             + ("  (the paper's pair)" if (row.src, row.dest) == PAPER_PAIR else "")
             for row in part.itertuples(index=False)]
    return "\n".join([f"{title}{plural(len(part), 'row')}", *lines])


def summary(warehouse: Warehouse, steps: list[StepReport]) -> str:
    """View2's parts and rows, and the mean step time overall and per view."""
    parts = warehouse.parts("View2")
    means = ", ".join(f"{view} {statistics.mean(s.seconds for s in steps if s.view == view):.2f} s"
                      for view in dict.fromkeys(step.view for step in steps))
    return (f"\nDone: View2 has {len(parts)} parts holding {parts['rows'].sum()} rows; "
            f"{len(steps)} view parts computed, mean step time "
            f"{statistics.mean(step.seconds for step in steps):.2f} s ({means}).")
