"""Figures from the Nexmark runs: events per second per core and the latency of one part, as
medians over the view's parts; a table and a plot.

A view part of q5 spans slide / part stream parts, of q7 and q8 window / part; a *cycle* is as many
stream parts, ending with the one whose arrival makes the view part (the last of its span; for q7 the
first, the part after the window it holds), and its seconds are theirs added up. Per cycle,
throughput is its events over its seconds, divided by the cores the system used (2 for local[2],
Flink's parallelism); the latency of one part (the median, and the 99th percentile) is the seconds of the
cycle's last part: the ingest
of that part and the maintenance that makes the view part (ViewDF), the micro-batch (Structured
Streaming), the recomputation (naive). The first ``warmup`` cycles are left out. Flink runs one job
over all parts: its throughput is the events over the job's seconds less those of the same job over
no events (planning, deployment, start-up), and its latency of one part is derived from that (a
stream part's events at that rate), not measured. Its events per CPU-second are over the job's
CPU-seconds (its Python process and JVM) less the empty job's; ``input_table`` gives both figures
again with the reading and parsing of its CSV input also left out (a scan of the streams the query
reads), since the Spark systems read Parquet: Flink's figure comparable with theirs lies between.

Beside those, every Spark system (ViewDF, Structured Streaming, naive) gets the same whole-run figures:
all the events over the run's wall seconds, and over the CPU-seconds that the driver process and its JVM
used meanwhile. With ``--repeat``, each figure is the median over the rounds, and the spread of events per
second per core is its lowest and highest round.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Sequence

from .nexmark_runs import Run


@dataclass(frozen=True)
class Figures:
    """One system's figures for one query (None where it has none)."""

    system: str
    query: str
    cores: int
    events_per_core: float | None          # events per second per core, median over cycles
    part_seconds: float | None             # latency of one part, median over cycles
    ingest_seconds: float | None           # of which ingest (ViewDF)
    cycles: int
    equal: bool | None = None
    events_per_wall_second: float | None = None   # the whole run (Spark systems)
    events_per_cpu_second: float | None = None    # the whole run, over the driver's and its JVM's CPU-seconds (Flink: the job's)
    lowest: float | None = None            # events/s per core, lowest and highest over the rounds
    highest: float | None = None
    rounds: int = 1
    # Flink: the same two figures with its CSV input's reading and parsing left out (the Spark systems read Parquet)
    events_per_core_without_input: float | None = None
    events_per_cpu_second_without_input: float | None = None
    part_seconds_p99: float | None = None  # latency of one part, 99th percentile over cycles (Spark systems)


def _cycles(values: list[float], subscripts: tuple[int, ...], period: int, offset: int,
            warmup: int) -> list[list[float]]:
    grouped: dict[int, list[float]] = defaultdict(list)
    for subscript, value in zip(subscripts, values):
        grouped[(subscript - offset) // period].append(value)
    whole = [grouped[key] for key in sorted(grouped) if len(grouped[key]) == period]
    return whole[warmup:]


def figures(run: Run, events: list[int], subscripts: tuple[int, ...], period: int, offset: int,
            warmup: int) -> Figures:
    """``run``'s figures, given the events of each part, the parts per cycle and the offset of the
    part that closes a cycle."""
    if run.job_seconds is not None:
        return _flink_figures(run, events)
    seconds = _cycles(run.part_seconds, subscripts, period, offset, warmup)
    counts = _cycles([float(e) for e in events], subscripts, period, offset, warmup)
    if not seconds:
        return Figures(run.system, run.query, run.cores, None, None, None, 0)
    ingest = _cycles(run.ingest_seconds, subscripts, period, offset, warmup) if run.ingest_seconds else None
    per_core = statistics.median(sum(n) / sum(s) / run.cores for n, s in zip(counts, seconds))
    return Figures(run.system, run.query, run.cores, per_core, statistics.median(s[-1] for s in seconds),
                   statistics.median(s[-1] for s in ingest) if ingest else None, len(seconds),
                   events_per_wall_second=sum(events) / run.wall_seconds if run.wall_seconds else None,
                   events_per_cpu_second=sum(events) / run.cpu_seconds if run.cpu_seconds else None,
                   lowest=per_core, highest=per_core, part_seconds_p99=percentile([s[-1] for s in seconds], 99))


def percentile(values: list[float], rank: int) -> float:
    """The ``rank``-th percentile of ``values``, interpolated between the nearest two (numpy's default)."""
    return statistics.quantiles(values, n=100, method="inclusive")[rank - 1] if len(values) > 1 else values[0]


def combined(rounds: list[Figures]) -> Figures:
    """One system's figures for one query over several rounds: medians, and the lowest and highest round's
    events per second per core; equal when every round's rows were."""
    first = rounds[0]

    def median(name: str) -> float | None:
        values = [getattr(f, name) for f in rounds if getattr(f, name) is not None]
        return statistics.median(values) if values else None

    per_core = [f.events_per_core for f in rounds if f.events_per_core is not None]
    equal = None if all(f.equal is None for f in rounds) else all(f.equal is not False for f in rounds)
    return Figures(first.system, first.query, first.cores, median("events_per_core"), median("part_seconds"),
                   median("ingest_seconds"), first.cycles, equal, median("events_per_wall_second"),
                   median("events_per_cpu_second"), min(per_core, default=None), max(per_core, default=None),
                   len(rounds), median("events_per_core_without_input"), median("events_per_cpu_second_without_input"),
                   median("part_seconds_p99"))


def _flink_figures(run: Run, events: list[int]) -> Figures:
    """Throughput over the job's seconds less the empty job's, and over its CPU-seconds less the empty job's;
    none when a difference is under a quarter of the job (the input is too small to time against the fixed
    cost). The latency of one part: a stream part's events (the median) at that throughput. Beside them, the
    same with the input's reading and parsing (``input_seconds``) also left out."""
    assert run.job_seconds is not None and run.empty_job_seconds is not None

    def rate(whole: float | None, empty: float | None, reading: float | None, cores: int = 1) -> float | None:
        if whole is None or empty is None or whole - empty - (reading or 0) < whole / 4:
            return None
        return sum(events) / (whole - empty - (reading or 0)) / cores

    per_core = rate(run.job_seconds, run.empty_job_seconds, None, run.cores)
    if per_core is None:
        return Figures(run.system, run.query, run.cores, None, None, None, 1)
    return Figures(run.system, run.query, run.cores, per_core, statistics.median(events) / (per_core * run.cores),
                   None, 1, events_per_cpu_second=rate(run.cpu_seconds, run.empty_cpu_seconds, None),
                   lowest=per_core, highest=per_core,
                   events_per_core_without_input=rate(run.job_seconds, run.empty_job_seconds, run.input_seconds,
                                                      run.cores),
                   events_per_cpu_second_without_input=rate(run.cpu_seconds, run.empty_cpu_seconds,
                                                            run.input_cpu_seconds))


def _number(value: float | None, digits: int = 2) -> str:
    """Always with decimals and no thousands separator: a notebook's saved outputs mask decimal numbers."""
    return "-" if value is None else f"{value:.{digits}f}"


def aligned(lines: list[tuple[str, ...]], left: int) -> str:
    """Rows of cells as fixed-width text: the first ``left`` columns flush left, the rest flush right."""
    widths = [max(len(line[k]) for line in lines) for k in range(len(lines[0]))]
    return "\n".join("  ".join(cell.ljust(w) if k < left else cell.rjust(w) for k, (cell, w) in enumerate(zip(line, widths)))
                     for line in lines)


def table(rows: list[Figures]) -> str:
    """The figures as a fixed-width table (numbers always with decimals)."""
    header = ("query", "system", "cores", "events/s per core", "lowest-highest", "events per CPU-s", "one part (s)",
              "p99 (s)", "of which ingest (s)", "cycles", "rounds", "equal")
    lines = [header] + [(f.query, f.system, str(f.cores), _number(f.events_per_core, 1),
                         f"{_number(f.lowest, 1)}-{_number(f.highest, 1)}" if f.lowest is not None else "-",
                         _number(f.events_per_cpu_second, 1), _number(f.part_seconds), _number(f.part_seconds_p99),
                         _number(f.ingest_seconds),
                         str(f.cycles), str(f.rounds), {True: "yes", False: "NO", None: "-"}[f.equal]) for f in rows]
    return aligned(lines, 2)


def input_table(rows: list[Figures]) -> str:
    """Flink's figures with and without reading and parsing its CSV input (empty without Flink rows)."""
    flink = [f for f in rows if f.system == "flink"]
    if not flink:
        return ""
    header = ("query", "events/s per core", "without input", "events per CPU-s", "without input")
    lines = [header] + [(f.query, _number(f.events_per_core, 1), _number(f.events_per_core_without_input, 1),
                         _number(f.events_per_cpu_second, 1), _number(f.events_per_cpu_second_without_input, 1))
                        for f in flink]
    return "Flink, with and without reading and parsing its CSV input:\n" + aligned(lines, 1)


def plot(rows: list[Figures], path: str | None = None, title: str = ""):
    """Two panels, events per second per core and seconds per part, a bar per system and query."""
    systems = [s for s in ("viewdf", "streaming", "flink", "naive") if any(f.system == s for f in rows)]
    return bar_panels(rows, systems, (("events_per_core", "events/s per core"),
                                      ("part_seconds", "latency of one part (s)")), path, title,
                      "Flink: derived from its throughput" if "flink" in systems else "")


def bar_panels(rows: Sequence[Any], systems: list[str], panels: tuple[tuple[str, str], ...], path: str | None = None,
               title: str = "", note: str = ""):
    """A figure of log-scale panels, one per (attribute, label) of ``panels``: a bar per system (in the order of
    ``systems``) and query, the rows' values of that attribute; ``note`` over the second panel. Saved to ``path``
    if given."""
    import matplotlib

    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    queries = sorted({row.query for row in rows})
    figure, axes = plt.subplots(1, len(panels), figsize=(11, 3.8))
    width = 0.8 / max(len(systems), 1)
    for panel, (attribute, label) in zip(axes, panels):
        for k, system in enumerate(systems):
            values = {row.query: getattr(row, attribute) for row in rows if row.system == system}
            heights = [values.get(q) or 0 for q in queries]
            panel.bar([i + k * width for i in range(len(queries))], heights, width, label=system)
        panel.set_xticks([i + width * (len(systems) - 1) / 2 for i in range(len(queries))], queries)
        panel.set_yscale("log")
        panel.set_ylabel(label, fontsize=8)
    if note:
        axes[1].set_title(note, fontsize=8, loc="right")
    axes[0].legend(fontsize=8)
    if title:
        figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    if path is not None:
        figure.savefig(path, dpi=120)
    return figure
