"""The replay widget: feed a stream into a warehouse one part at a time and watch its views.

Each batch is one part of the stream, ingested with ``Warehouse.ingest`` (which runs incremental
maintenance). With naive on, every view part the batch computed is also recomputed from scratch
(its RECOMPUTE clause) and compared with the stored part as VERIFY VIEW compares them
(``Warehouse.verify_part``). Batches run on a worker thread, so the kernel keeps handling the
controls while a replay plays.
"""

from __future__ import annotations

import html
import threading
import time
from typing import Iterable, cast

import ipywidgets as widgets
import pandas as pd

from ..errors import ViewDFError
from ..timeparts import format_part
from ..warehouse import PART_TIMESTAMP, LineageRange, ObjectDef, StepReport, Warehouse
from .batches import Batches, NetworkStream, Source
from .render import ResultView
from .timing_plot import TIMING_COLUMNS, TimingPlot

__all__ = ["NetworkStream", "Replay", "replay"]

DISPLAY_ROWS = 10


def replay(warehouse: Warehouse, stream: str, source: Source, views: Iterable[str] | None = None,
           naive: bool = False, speed: float = 2.0) -> "Replay":
    """A replay widget feeding ``source`` into ``stream`` part by part (see ``Replay``)."""
    return Replay(warehouse, stream, source, views, naive, speed)


def parts_read(lineage: Iterable[LineageRange]) -> int:
    """How many parts a lineage names."""
    return sum(r.last - r.first + 1 for r in lineage)


class Replay:
    """Replays ``source`` into ``stream`` batch by batch, one stream part per batch.

    ``views`` (default: every view reading the stream, generated helpers left out) are shown and
    timed; a view's incremental time includes its generated helper views' steps. ``speed`` is at
    most how many batches per second Play ingests. Batches already in the stream are skipped.
    """

    def __init__(self, warehouse: Warehouse, stream: str, source: Source, views: Iterable[str] | None = None,
                 naive: bool = False, speed: float = 2.0) -> None:
        self.warehouse = warehouse
        self.batches = Batches(warehouse, stream, source)
        self.stream = self.batches.definition.name
        self.views = self._views(views)
        self.position = self.batches.ingested(warehouse.reads.state(self.stream).newest)
        self.error: str | None = None
        self._rows: list[dict] = []
        self._status: dict[str, str] = {}
        self._tables: dict[str, str] = {}
        self._target = self.position
        self._stop = threading.Event()
        self._worker: threading.Thread | None = None
        self._control = threading.Lock()      # starting and stopping the worker
        self.plot = TimingPlot()
        missing = self._without_recompute() if naive else []
        if missing:
            raise ViewDFError(f"naive recomputation needs a RECOMPUTE clause; {', '.join(missing)} has none")
        self._build(naive, speed)

    # -- controls ------------------------------------------------------------------------
    @property
    def naive(self) -> bool:
        return self.naive_box.value

    @property
    def playing(self) -> bool:
        return self._worker is not None

    def play(self, until: int | None = None) -> None:
        """Ingest batches on the worker thread until ``until`` batches are in (default: all)."""
        self._start(len(self.batches) if until is None else min(until, len(self.batches)))

    def step(self) -> None:
        """Ingest the next batch on the worker thread (nothing while playing)."""
        if not self.playing:
            self._start(min(self.position + 1, len(self.batches)))

    def pause(self) -> None:
        """Stop after the batch being ingested; ``play`` resumes with the next one."""
        self._stop.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the worker to stop; False if it still runs after ``timeout`` seconds.

        An interrupt (Interrupt kernel, Ctrl-C) while waiting pauses the replay: the batch being
        ingested is finished and published whole, the worker stops, and the interrupt goes on."""
        worker = self._worker
        if worker is None:
            return True
        try:
            worker.join(timeout)
        except KeyboardInterrupt:
            self.pause()
            while self._worker is worker:     # an interrupted join marks the thread finished: poll instead
                time.sleep(0.05)
            raise
        return not worker.is_alive()

    def reset(self) -> None:
        """Pause, then drop the stream and the views reading it and create them again, empty,
        from their definitions; the replay starts over at batch 0."""
        self.pause()
        self.wait()
        reads = self.warehouse.reads
        doomed = sorted(reads.downstream(self.stream), key=lambda d: d.created)
        statements = [d.origin or d.definition for d in doomed if d.owner is None]
        self.warehouse.drop(self.stream, "stream", cascade=True)
        for statement in statements:
            self.warehouse.run(statement)
        self.views = [cast(ObjectDef, reads.definition(v.name)) for v in self.views]     # each defined again above
        self.position = self._target = 0
        self.error = None
        self._rows, self._status, self._tables = [], {}, {}
        self._show()

    @property
    def status_lines(self) -> list[str]:
        """Each view's status line: its newest part, rows, times and the naive check."""
        return list(self._status.values())

    @property
    def timings(self) -> pd.DataFrame:
        """One row per batch and view that computed a view part: the view part, its rows, the
        incremental and naive seconds and the parts each read, whether they were equal, and the batch's late
        rows (into parts the stream had already: the plot marks such batches)."""
        return pd.DataFrame(list(self._rows), columns=TIMING_COLUMNS)

    def _start(self, target: int) -> None:
        """Run the worker up to ``target`` batches; a running worker just takes the new target."""
        with self._control:
            self._target = target
            self._stop.clear()
            if self._worker is not None or self.position >= target:
                return
            self.error = None
            self._worker = threading.Thread(target=self._run, name="viewdf-replay", daemon=True)
            self._worker.start()
        self._show_controls()

    def _run(self) -> None:
        try:
            while self._next_wanted():
                started = time.perf_counter()
                self._ingest_next()
                if self.position < self._target:
                    self._stop.wait(max(0.0, 1 / self.speed.value - (time.perf_counter() - started)))
        except Exception as error:      # a worker's exception would be lost: show it, and stop
            self.error = str(error) if isinstance(error, ViewDFError) else f"{type(error).__name__}: {error}"
            with self._control:
                self._worker = None
                self._show_controls()

    def _next_wanted(self) -> bool:
        """Whether the worker goes on; deciding to stop and saying so is one step, so a Play
        arriving meanwhile either keeps this worker going or starts a new one."""
        with self._control:
            if self._stop.is_set() or self.position >= self._target:
                self._worker = None
                self._show_controls()
                return False
            return True

    # -- one batch -----------------------------------------------------------------------
    def _ingest_next(self) -> None:
        index = self.position
        report = self.warehouse.ingest(self.stream, self.batches.frame(index))
        self.position += 1
        for view in self.views:
            row = self._measure(index, view, report.steps, report.late_rows)
            if row is not None:
                self._rows.append(row)
        if report.failures:
            self.error = "; ".join(report.failures)
        self._show()

    def _measure(self, batch: int, view: ObjectDef, steps: list[StepReport], late_rows: int) -> dict | None:
        """Time and check the parts of ``view`` that a batch's ``steps`` computed (``late_rows``: the batch's rows
        into parts the stream had already, whose repairs are among the steps)."""
        own = [s for s in steps if s.view == view.name]
        if not own:
            return None
        helpers = [s for s in steps if self._owner(s.view) == view.key]
        # a part fused into another view's step was computed by that step's Spark job: count its time once; one
        # written with the stream's batch (fused into M[5], say) adds only its column to the ingest, uncounted
        named = {f"{s.view}[{s.subscript}]": s for s in steps}
        jobs = list({id(s): s for s in own + helpers + [named[f.fused_into] for f in own if f.fused_into in named]}
                    .values())
        row = {"batch": batch, "view": view.name, "part": own[-1].subscript,
               "part_timestamp": own[-1].part_timestamp, "rows": own[-1].rows,
               "incremental_seconds": sum(s.seconds for s in jobs),
               "incremental_parts_read": sum(parts_read(s.lineage) for s in own + helpers),
               "naive_seconds": None, "naive_parts_read": None, "equal": None, "late_rows": late_rows}
        if self.naive:
            row.update(naive_seconds=0.0, naive_parts_read=0, equal=True)
            for step in own:            # as VERIFY VIEW does: FLOAT/DOUBLE within its default tolerance
                check = self.warehouse.verify_part(view.name, step.part_timestamp)
                row["naive_seconds"] += check.recompute_seconds
                row["naive_parts_read"] += parts_read(self.warehouse.reads.recompute_lineage(view, step.subscript))
                row["equal"] = row["equal"] and check.comparison.equal
        stored = self.warehouse.read_part(view.name, own[-1].part_timestamp).drop(columns=PART_TIMESTAMP)
        self._status[view.name] = _status_line(row)
        self._tables[view.name] = stored.head(DISPLAY_ROWS).to_html(index=False, border=0, classes="dataframe")
        return row

    def _owner(self, name: str) -> str | None:
        definition = self.warehouse.reads.definition(name)
        return definition.owner.lower() if definition is not None and definition.owner else None

    # -- setup ---------------------------------------------------------------------------
    def _views(self, names: Iterable[str] | None) -> list[ObjectDef]:
        reads = self.warehouse.reads
        if names is None:
            readers = [d for d in reads.downstream(self.stream)[1:] if d.owner is None]
            return sorted(readers, key=lambda d: d.created)
        views = []
        for name in names:
            definition = reads.definition(name)
            if definition is None or definition.kind != "view":
                raise ViewDFError(f"no view named '{name}'")
            views.append(definition)
        return views

    def _without_recompute(self) -> list[str]:
        """The views shown that have no RECOMPUTE clause, so no naive baseline."""
        return [v.name for v in self.views if not self.warehouse.reads.has_recompute(v)]

    def _naive_toggled(self, change: dict) -> None:
        missing = self._without_recompute() if change["new"] else []
        if missing:
            self.naive_box.value = False
            self.error = f"naive recomputation needs a RECOMPUTE clause; {', '.join(missing)} has none"
            self._show_controls()

    # -- the widget ----------------------------------------------------------------------
    def _build(self, naive: bool, speed: float) -> None:
        self.play_button = widgets.Button(description="Play", icon="play", layout=widgets.Layout(width="90px"))
        self.step_button = widgets.Button(description="Step", icon="step-forward", layout=widgets.Layout(width="90px"))
        self.reset_button = widgets.Button(description="Reset", icon="undo", layout=widgets.Layout(width="90px"),
                                           tooltip="drop the stream and its views, create them again empty")
        self.speed = widgets.FloatLogSlider(value=speed, base=10, min=-1, max=2, step=0.1,
                                            description="parts/s", readout_format=".2g")
        self.naive_box = widgets.Checkbox(value=naive, description="naive", indent=False,
                                          layout=widgets.Layout(width="80px"))
        self.slider = widgets.IntSlider(value=self.position, min=0, max=len(self.batches), description="batches in",
                                        continuous_update=False, layout=widgets.Layout(width="420px"))
        self.position_label = widgets.HTML()
        self.status = widgets.HTML()
        self.tables = widgets.HTML()
        self.explain_choice = widgets.ToggleButtons(options=["hide"] + [v.name for v in self.views], value="hide",
                                                    description="EXPLAIN", style={"button_width": "auto"},
                                                    tooltips=["hide the explanation"] + [
                                                        f"EXPLAIN VIEW {v.name}: its FSM or strategy, ViewDFs and "
                                                        f"the next step's Spark plans" for v in self.views])
        self.explanation = widgets.HTML()
        self.explain_choice.observe(lambda change: self.explain(change["new"]), names="value")
        self.play_button.on_click(lambda _: self.pause() if self.playing else self.play())
        self.step_button.on_click(lambda _: self.step())
        self.reset_button.on_click(lambda _: self.reset())
        self.slider.observe(self._slide, names="value")
        self.naive_box.observe(self._naive_toggled, names="value")
        self.widget = widgets.VBox([
            widgets.HBox([self.play_button, self.step_button, self.reset_button, self.speed, self.naive_box]),
            widgets.HBox([self.slider, self.position_label]), self.status, self.tables, self.plot.widget,
            self.explain_choice, self.explanation])
        self._show()

    def explain(self, view: str) -> None:
        """Show EXPLAIN VIEW of one of the replayed views below the plot (``"hide"`` clears it): the FSM
        diagram and tables of a pattern view, a window view's strategies, and the next step's plans."""
        if view == "hide":
            self.explanation.value = ""
            return
        try:
            result = self.warehouse.explain_view(view)
        except ViewDFError as error:
            self.explanation.value = f"<pre style='color: #b00'>{html.escape(str(error))}</pre>"
            return
        self.explanation.value = ResultView.of(result, DISPLAY_ROWS, "")._repr_html_()

    def _slide(self, change: dict) -> None:
        """Dragging forward ingests up to there; dragging back resets and replays up to there."""
        target = change["new"]
        if target == self.position:       # the worker moving the slider along
            return
        if target < self.position:
            self.reset()
        self.play(until=target)

    def _show_controls(self) -> None:
        playing = self.playing
        self.play_button.description, self.play_button.icon = ("Pause", "pause") if playing else ("Play", "play")
        self.step_button.disabled = playing or self.position >= len(self.batches)
        self.slider.value = self.position
        done, total = self.position, len(self.batches)
        text = (f"next part {format_part(self.batches.subscripts[done], self.batches.definition.length)}"
                if done < total else "all parts ingested")
        note = f" <span style='color: #b00'>{html.escape(self.error)}</span>" if self.error else ""
        self.position_label.value = f"batch {done} of {total} into {html.escape(self.stream)}, {text}.{note}"

    def _show(self) -> None:
        self._show_controls()
        self.status.value = "<br>".join(html.escape(line) for line in self.status_lines)
        self.tables.value = "".join(f"<div><b>{html.escape(name)}</b>, newest part</div>{table}"
                                    for name, table in self._tables.items())
        self.plot.update(self.timings)

    def _repr_mimebundle_(self, **kwargs) -> dict:
        return self.widget._repr_mimebundle_(**kwargs)


def _status_line(row: dict) -> str:
    """``View2: part 2015-01-01 10:04:00, 1 rows, incremental 0.210 s (1 part read), naive ... ✓ equal``."""
    line = (f"{row['view']}: part {row['part_timestamp']:%Y-%m-%d %H:%M:%S}, {_count(row['rows'], 'row')}, "
            f"incremental {row['incremental_seconds']:.3f} s ({_count(row['incremental_parts_read'], 'part')} read)")
    if row["equal"] is None:
        return line
    return (line + f", naive {row['naive_seconds']:.3f} s ({_count(row['naive_parts_read'], 'part')} read) "
            + ("✓ equal" if row["equal"] else "✗ differs"))


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
