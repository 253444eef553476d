"""Scaling: how one maintenance step grows with the part size and with the history length, in
local mode (local[2]) and on a standalone cluster on localhost (2 workers x 1 core x 1g), with every
step broken into its Spark jobs and stages (Spark's status store: what the UI and its REST API show).

Workload: the paper's network stream (``common.network_part``: one row per (src, dest) pair per
part, 10% of losses above 10) in ten-minute parts, so ``[WINDOW 60 MINUTES]`` spans 6 parts and
every measured step is in steady state (window full) from 10 parts of history on. One warehouse
holds every view; each measured part is ingested with maintenance manual, then every ready view
part is stepped one at a time under its own Spark job group:

* pattern     — View1, ``PATTERN [a, b, c, d+]`` (benchmarks.patterns): View1__helper + View1;
* ViewDF SUM  — ``sum(loss), count(*) ... [WINDOW 60 MINUTES]``: pre-aggregate, running state, view;
* ViewDF MAX  — ``max(loss) ... [WINDOW 60 MINUTES]``: pre-aggregate, prefix and suffix helpers, view;
* naive       — a ViewDF recomputing sum and max over ``M[j-5 .. j]`` every part (benchmarks.windows);
* Direct      — the pattern's naive strategy, ``Warehouse.recompute("View1", t, scope=history)``,
                once per configuration.

Sweeps: (a) part size: ``--sizes`` rows per part, ``--history`` parts of that size first;
(b) history: ``--histories`` parts of ``--small`` rows, the views maintained through the first
``--maintained`` of them (beyond, only the stream grows: ingest and Direct are measured). Histories
are bulk-ingested (up to 100 parts per ingest, the cascade maintaining the views) once, in the first
mode, and copied for every measurement, so all modes step on the same stored history; ``--workdir``
keeps them for the next run.

    python -m benchmarks.scaling                       # the full run: see docs/benchmarks.md
    python -m benchmarks.scaling --quick               # a smoke test of a few minutes
    python -m benchmarks.scaling --replot RESULTS.json # tables and figures again from a run's results
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import tempfile
import time
from collections import defaultdict
from functools import reduce
from typing import Callable, Iterator

from pyspark.sql import DataFrame, SparkSession

from viewdf_magic import Warehouse
from viewdf_magic.deploy.processes import HOST
from viewdf_magic.deploy.standalone import StandaloneCluster
from viewdf_magic.notebook.replay import parts_read
from viewdf_magic.timeparts import part_start

from .common import FIRST_PART, bench_session, median, network_part
from .patterns import VIEW1
from .windows import strategy_of, strategy_views

LENGTH = 600                       # seconds per part
FIRST = FIRST_PART * 60 // LENGTH  # 2015-01-01 10:00 UTC, ten-minute parts
WINDOW_PARTS = 6                   # [WINDOW 60 MINUTES]
SELECTIVITY = 0.1
BULK = 100                         # parts per history ingest
STREAM = f"CREATE STREAM M (ts TIMESTAMP, src STRING, dest STRING, loss INT) TIMESTAMP ts PARTITION LENGTH {LENGTH}"
VIEWS = [VIEW1.split(";")[1],      # View1 (VIEW1 also creates a minute stream)
         "CREATE VIEW WinSum AS SELECT src, dest, sum(loss) AS total, count(*) AS n FROM M [WINDOW 60 MINUTES] "
         "GROUP BY src, dest",
         "CREATE VIEW WinMax AS SELECT src, dest, max(loss) AS peak FROM M [WINDOW 60 MINUTES] GROUP BY src, dest",
         strategy_views(WINDOW_PARTS)["naive"]]
FAMILIES = ["ingest", "pattern", "ViewDF SUM", "ViewDF MAX", "naive", "Direct"]
SCRATCH = f"{tempfile.gettempdir()}/viewdf-scaling"
QUICK = {"sizes": [1_000, 5_000], "history": 6, "histories": [6, 12], "maintained": 6, "small": 1_000, "steps": 2}


def family(view: str) -> str:
    return "pattern" if view.lower().startswith("view1") else strategy_of(view)


def stream_parts(spark: SparkSession, first: int, count: int, pairs: int) -> DataFrame:
    """Parts ``first .. first+count-1`` (counted from 10:00) of the network stream, in ten-minute parts,
    in as many Spark partitions as there are cores (not two per part)."""
    parts = [network_part(spark, (FIRST + k) * LENGTH // 60, pairs, SELECTIVITY, seed=k)
             for k in range(first, first + count)]
    return reduce(DataFrame.unionByName, parts).coalesce(spark.sparkContext.defaultParallelism)


def cluster_session(master_url: str, **config: str) -> SparkSession:
    """A driver on the standalone cluster (with ``config``); ``bench_session()`` then gives the existing
    session the benchmarks' SQL settings (UTC, 4 shuffle partitions)."""
    builder = (SparkSession.builder.master(master_url).appName("viewdf-bench-scaling")
               .config("spark.driver.host", HOST).config("spark.driver.bindAddress", HOST)
               .config("spark.executor.memory", "1g").config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false"))
    for key, value in config.items():
        builder = builder.config(key, value)
    builder.getOrCreate()
    return bench_session()


class StageMetrics:
    """The jobs and stages one job group ran, from Spark's status store."""

    def __init__(self, spark: SparkSession) -> None:
        self.sc = spark.sparkContext
        self.jvm_sc = self.sc._jsc.sc()

    @contextlib.contextmanager
    def group(self, name: str) -> Iterator[None]:
        """Spark jobs this thread starts inside the block belong to job group ``name``."""
        self.sc.setJobGroup(name, name)
        try:
            yield
        finally:
            self.sc.setLocalProperty("spark.jobGroup.id", None)

    def summary(self, name: str) -> dict:
        """Jobs, their wall seconds, stages run, shuffle (map) stages and bytes, executor seconds, ..."""
        self.jvm_sc.listenerBus().waitUntilEmpty(60_000)
        store, tracker = self.jvm_sc.statusStore(), self.sc.statusTracker()
        result = dict.fromkeys(["jobs", "job_seconds", "stages", "shuffles", "tasks", "shuffle_bytes",
                                "input_records", "executor_seconds"], 0)
        for job_id in tracker.getJobIdsForGroup(name):
            job = store.job(job_id)
            result["jobs"] += 1
            result["job_seconds"] += (job.completionTime().get().getTime()
                                      - job.submissionTime().get().getTime()) / 1000
            for stage_id in tracker.getJobInfo(job_id).stageIds:
                if tracker.getStageInfo(stage_id) is None:     # skipped, and already evicted from the store
                    continue
                stage = store.lastStageAttempt(stage_id)
                if stage.status().toString() == "SKIPPED":
                    continue
                result["stages"] += 1
                result["tasks"] += stage.numTasks()
                result["shuffles"] += stage.shuffleWriteBytes() > 0
                result["shuffle_bytes"] += stage.shuffleWriteBytes()
                result["input_records"] += stage.inputRecords()
                result["executor_seconds"] += stage.executorRunTime() / 1000
        return result


class Histories:
    """Warehouses built once and copied for each measurement; a longer history of the same part size
    continues the longest one built so far."""

    def __init__(self, root: str) -> None:
        self.root = root
        os.makedirs(f"{root}/snapshots", exist_ok=True)
        self.built = {tuple(map(int, name.split("x"))): f"{root}/snapshots/{name}"   # a kept --workdir's
                      for name in os.listdir(f"{root}/snapshots") if not name.endswith(".tmp")}
        self.copies = 0

    def snapshot(self, pairs: int, parts: int, views: int, build: Callable[[str, str | None, int], None]) -> str:
        """The warehouse with ``parts`` parts of ``pairs`` rows whose views are maintained through the first
        ``views`` parts; ``build(path, start_from, have)`` makes it from the longest one it can continue."""
        if (pairs, parts, views) not in self.built:
            have = max((p for q, p, v in self.built if q == pairs and p < parts and v == min(p, views)), default=0)
            path = f"{self.root}/snapshots/{pairs}x{parts}x{views}"
            shutil.rmtree(f"{path}.tmp", ignore_errors=True)
            build(f"{path}.tmp", self.built.get((pairs, have, min(have, views))), have)
            os.rename(f"{path}.tmp", path)          # complete, so a kept --workdir can reuse it
            self.built[(pairs, parts, views)] = path
        return self.built[(pairs, parts, views)]

    def copy(self, snapshot: str) -> str:
        self.copies += 1
        target = f"{self.root}/runs/{self.copies}"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(snapshot, target)
        return target


class Run:
    """One mode's measurements: a record per measured step, for ``report``."""

    def __init__(self, spark: SparkSession, mode: str, root: str, histories: Histories, args) -> None:
        self.spark, self.mode, self.root, self.histories = spark, mode, root, histories
        self.steps, self.maintained = args.steps, args.maintained
        self.metrics = StageMetrics(spark)
        self.records: list[dict] = []

    def build(self, path: str, start_from: str | None, have: int, parts: int, pairs: int) -> None:
        """A warehouse at ``path`` with ``parts`` parts of ``pairs`` rows (continuing ``start_from``, which
        has ``have``); the views are maintained up to ``maintained`` parts, after that only the stream grows."""
        started = time.perf_counter()
        if start_from is not None:
            shutil.copytree(start_from, path)
        wh = Warehouse(path, self.spark, progress=False)
        if start_from is None:
            wh.execute(";".join([STREAM, *VIEWS]))
        with self.metrics.group("build"):
            first = have
            while first < parts:
                if first >= self.maintained:
                    wh.set_maintenance("manual")
                end = min(first + BULK, parts, self.maintained if first < self.maintained else parts)
                wh.ingest("M", stream_parts(self.spark, first, end - first, pairs))
                first = end
        print(f"  [{self.mode}] built {parts} parts of {pairs:,} rows in {time.perf_counter() - started:.0f} s",
              flush=True)

    def measure(self, sweep: str, x: int, snapshot: str, history: int, pairs: int, direct: bool) -> None:
        """``steps`` more parts on a copy of ``snapshot`` (``history`` parts): each ingested, then every
        ready view part stepped (if the views were maintained this far); then Direct once."""
        path = self.histories.copy(snapshot)
        wh = Warehouse(path, self.spark, progress=False)
        wh.set_maintenance("manual")
        for k in range(history, history + self.steps):
            staged = f"{self.root}/staged/{pairs}x{k}"
            if not os.path.exists(f"{staged}/_SUCCESS"):
                stream_parts(self.spark, k, 1, pairs).write.mode("overwrite").parquet(staged)
            self._timed(sweep, x, k, "ingest", lambda: wh.ingest("M", self.spark.read.parquet(staged)))
            while history <= self.maintained and self._timed(sweep, x, k, None, wh.step):
                pass
        if direct:
            newest = part_start(FIRST + history + self.steps - 1, LENGTH)
            self._timed(sweep, x, history + self.steps, "Direct",
                        lambda: wh.recompute("View1", newest, scope=history), parts=history)
        shutil.rmtree(path, ignore_errors=True)

    def _timed(self, sweep: str, x: int, k: int, what: str | None, action: Callable[[], object], parts: int = 1):
        """Run ``action`` (an ingest, ``Warehouse.step`` when ``what`` is None, or Direct) in its own job
        group and record it with its jobs and stages; returns its result."""
        name = f"{self.mode}/{sweep}/{x}/{k}/{len(self.records)}"
        with self.metrics.group(name):
            started = time.perf_counter()
            result = action()
            wall = time.perf_counter() - started
        if what is None and not result:        # nothing was ready: not a step
            return result
        record = {"mode": self.mode, "sweep": sweep, "x": x, "k": k, "wall": wall, **self.metrics.summary(name)}
        if what is None:
            [report] = result
            record.update(view=report.view, family=family(report.view), seconds=report.seconds,
                          parts_read=parts_read(report.lineage))
        else:
            record.update(view=what, family=what, seconds=wall, parts_read=parts)
        self.records.append(record)
        return result


def run_mode(spark: SparkSession, mode: str, args, histories: Histories, root: str) -> list[dict]:
    run = Run(spark, mode, root, histories, args)

    def snapshot(pairs: int, parts: int) -> str:
        return histories.snapshot(pairs, parts, min(parts, args.maintained), lambda path, start_from, have:
                                  run.build(path, start_from, have, parts, pairs))

    # warm-up, not recorded: the driver's and the executors' JVMs compile the hot paths
    run.measure("warm-up", 0, snapshot(args.sizes[0], args.history), args.history, args.sizes[0], direct=False)
    run.records = []
    for pairs in args.sizes:
        run.measure("size", pairs, snapshot(pairs, args.history), args.history, pairs,
                    direct=pairs * args.history <= args.direct_rows)
        print(f"  [{mode}] part size {pairs:,}: {step_line(run.records, 'size', pairs)}", flush=True)
    for history in sorted(args.histories):
        run.measure("history", history, snapshot(args.small, history), history, args.small,
                    direct=args.small * history <= args.direct_rows)
        print(f"  [{mode}] history {history}: {step_line(run.records, 'history', history)}", flush=True)
    return run.records


# -- reporting -----------------------------------------------------------------------------------
def modes_of(records: list[dict]) -> list[str]:
    return list(dict.fromkeys(r["mode"] for r in records))


def per_part(records: list[dict], key: str = "seconds", by: str = "family") -> dict[tuple, dict[str, list[float]]]:
    """(mode, sweep, x) -> family (or view) -> one value per measured part (its views summed)."""
    summed: dict[tuple, float] = defaultdict(float)
    for r in records:
        summed[(r["mode"], r["sweep"], r["x"], r[by], r["k"])] += r[key]
    result: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (mode, sweep, x, name, _), value in summed.items():
        result[(mode, sweep, x)][name].append(value)
    return result


def step_line(records: list[dict], sweep: str, x: int) -> str:
    families = per_part(records)[(records[-1]["mode"], sweep, x)]
    return ", ".join(f"{name} {median(families[name]):.2f} s" for name in FAMILIES if families.get(name))


def medians_table(records: list[dict], sweep: str, title: str) -> list[str]:
    lines = [f"| mode | {title} | " + " | ".join(FAMILIES) + " |", "|---|---:|" + "---:|" * len(FAMILIES)]
    table = per_part(records)
    for mode in modes_of(records):
        for x in sorted(x for (m, kind, x) in table if (m, kind) == (mode, sweep)):
            families = table[(mode, sweep, x)]
            cells = [f"{median(families[f]):.2f}" if families.get(f) else "–" for f in FAMILIES]
            lines.append(f"| {mode} | {x:,} | " + " | ".join(cells) + " |")
    return lines


def ratios(records: list[dict]) -> list[str]:
    """Step time at the longest history against the shortest; seconds per million rows between the two
    largest part sizes; cluster against local."""
    table = per_part(records)
    lines = []
    modes = modes_of(records)
    for mode in modes:
        for sweep in ("history", "size"):
            xs = sorted(x for (m, s, x) in table if (m, s) == (mode, sweep))
            if len(xs) < 2:
                continue
            low, high = table[(mode, sweep, xs[0] if sweep == "history" else xs[-2])], table[(mode, sweep, xs[-1])]
            pairs = [(f, median(high[f]), median(low[f])) for f in FAMILIES if high.get(f) and low.get(f)]
            if sweep == "history":
                text = ", ".join(f"{f} {h / lo:.2f}x" for f, h, lo in pairs)
                lines.append(f"* {mode}: step at {xs[-1]:,} parts of history / at {xs[0]:,}: {text}")
            else:
                text = ", ".join(f"{f} {(h - lo) / (xs[-1] - xs[-2]) * 1e6:.2f} s" for f, h, lo in pairs)
                lines.append(f"* {mode}: added seconds per million rows, {xs[-2]:,} to {xs[-1]:,} rows per part: {text}")
    if len(modes) == 2:
        for (mode, sweep, x), families in sorted(table.items()):
            other = table.get((modes[1], sweep, x), {})
            if mode == modes[0] and other:
                text = ", ".join(f"{f} {median(other[f]) / median(families[f]):.2f}x" for f in FAMILIES
                                 if families.get(f) and other.get(f))
                lines.append(f"* {modes[1]} / {modes[0]}, {sweep} {x:,}: {text}")
    return lines


BREAKDOWN = [("seconds", "step s", "{:.2f}"), ("wall", "wall s", "{:.2f}"), ("job_seconds", "in jobs s", "{:.2f}"),
             ("jobs", "jobs", "{:.0f}"), ("stages", "stages", "{:.0f}"), ("tasks", "tasks", "{:.0f}"),
             ("shuffles", "shuffles", "{:.0f}"), ("shuffle_bytes", "shuffle MB", "{:.1f}"),
             ("input_records", "rows read", "{:,.0f}"), ("executor_seconds", "executor s", "{:.2f}"),
             ("parts_read", "parts read", "{:.0f}")]


def breakdown_table(records: list[dict], sweep: str, x: int) -> list[str]:
    """Per view step, medians over the measured parts of one configuration: where a step's time goes."""
    columns = {key: per_part(records, key, by="view") for key, _, _ in BREAKDOWN}
    lines = ["| mode | step | " + " | ".join(title for _, title, _ in BREAKDOWN) + " |",
             "|---|---|" + "---:|" * len(BREAKDOWN)]
    order = list(dict.fromkeys(r["view"] for r in records))
    for mode in modes_of(records):
        for view in order:
            values = [columns[key][(mode, sweep, x)].get(view) for key, _, _ in BREAKDOWN]
            if all(values):
                cells = [fmt.format(median(v) * (1e-6 if key == "shuffle_bytes" else 1))
                         for v, (key, _, fmt) in zip(values, BREAKDOWN)]
                lines.append(f"| {mode} | {view} | " + " | ".join(cells) + " |")
    return lines


def report(records: list[dict]) -> str:
    sizes = sorted({r["x"] for r in records if r["sweep"] == "size"})
    histories = sorted({r["x"] for r in records if r["sweep"] == "history"})
    parts = ["Median step seconds by part size (rows per part):", *medians_table(records, "size", "rows"), "",
             "Median step seconds by history (parts):", *medians_table(records, "history", "parts"), "",
             *ratios(records)]
    for sweep, x in [("size", x) for x in sizes] + [("history", x) for x in histories]:
        parts += ["", f"Breakdown, {sweep} {x:,} (medians over the measured parts):",
                  *breakdown_table(records, sweep, x)]
    return "\n".join(parts)


def plot(records: list[dict], folder: str) -> list[str]:
    """scaling-part-size.png (log-log), scaling-history.png, scaling-breakdown.png."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = per_part(records)
    modes = modes_of(records)
    written = []
    for sweep, name, xlabel in (("size", "part-size", "rows per part"), ("history", "history", "parts of history")):
        figure, axes = plt.subplots(1, len(modes), figsize=(5.5 * len(modes), 4), sharey=True, squeeze=False)
        for axis, mode in zip(axes[0], modes):
            xs = sorted(x for (m, s, x) in table if (m, s) == (mode, sweep))
            for f in FAMILIES:
                points = [(x, median(table[(mode, sweep, x)][f])) for x in xs if table[(mode, sweep, x)].get(f)]
                if points:
                    axis.plot(*zip(*points), marker="o", label=f)
            axis.set_xscale("log")
            axis.set_yscale("log")
            axis.set_title(f"{mode}: median step by {xlabel}")
            axis.set_xlabel(xlabel)
            axis.grid(True, which="both", alpha=0.3)
        axes[0][0].set_ylabel("seconds per part")
        axes[0][-1].legend(fontsize=8)
        figure.tight_layout()
        written.append(f"{folder}/scaling-{name}.png")
        figure.savefig(written[-1], dpi=110)
        plt.close(figure)
    written.append(plot_breakdown(records, folder, modes, plt))
    return written


def plot_breakdown(records: list[dict], folder: str, modes: list[str], plt) -> str:
    """Stacked bars per family at the largest part size: time in Spark jobs, the rest of the step on
    the driver (planning, binding, listing), and catalog commit and lock (wall - step)."""
    x = max(r["x"] for r in records if r["sweep"] == "size")
    step, wall, jobs = (per_part(records, key) for key in ("seconds", "wall", "job_seconds"))
    figure, axes = plt.subplots(1, len(modes), figsize=(5.5 * len(modes), 4), sharey=True, squeeze=False)
    for axis, mode in zip(axes[0], modes):
        names = [f for f in FAMILIES if step[(mode, "size", x)].get(f)]
        in_jobs = [median(jobs[(mode, "size", x)][f]) for f in names]
        driver = [max(0.0, median(step[(mode, "size", x)][f]) - j) for f, j in zip(names, in_jobs)]
        commit = [max(0.0, median(wall[(mode, "size", x)][f]) - median(step[(mode, "size", x)][f])) for f in names]
        axis.bar(names, in_jobs, label="Spark jobs")
        axis.bar(names, driver, bottom=in_jobs, label="driver, outside jobs")
        axis.bar(names, commit, bottom=[a + b for a, b in zip(in_jobs, driver)], label="commit, lock")
        axis.set_title(f"{mode}: one step at {x:,} rows per part")
        axis.tick_params(axis="x", rotation=30)
    axes[0][0].set_ylabel("seconds (medians)")
    axes[0][-1].legend(fontsize=8)
    figure.tight_layout()
    path = f"{folder}/scaling-breakdown.png"
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modes", nargs="+", default=["local", "cluster"], choices=["local", "cluster"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000], help="rows per part")
    parser.add_argument("--history", type=int, default=10, help="parts of history in the part-size sweep")
    parser.add_argument("--histories", type=int, nargs="+", default=[10, 100, 1000], help="parts of history")
    parser.add_argument("--small", type=int, default=1000, help="rows per part in the history sweep")
    parser.add_argument("--maintained", type=int, default=100,
                        help="views are maintained up to this many parts of history; beyond, ingest and Direct only")
    parser.add_argument("--steps", type=int, default=3, help="measured parts per configuration")
    parser.add_argument("--direct-rows", type=int, default=2_000_000,
                        help="run Direct only where it reads at most this many rows")
    parser.add_argument("--quick", action="store_true", help=f"a smoke test: {QUICK}")
    parser.add_argument("--results", help="where the measurements are written (default: in the temporary folder)")
    parser.add_argument("--figures", help="folder for scaling-*.png (default: docs/figures; with --quick, the "
                                          "temporary folder)")
    parser.add_argument("--workdir", help="keep the built histories here and reuse those it holds "
                                          "(default: a temporary folder, deleted at the end)")
    parser.add_argument("--replot", metavar="RESULTS", help="only print the tables and plot a run's results")
    args = parser.parse_args()
    if args.replot:
        with open(args.replot) as file:
            records = json.load(file)
    else:
        if args.quick:
            vars(args).update(QUICK)
        args.results = args.results or f"{SCRATCH}-{'quick' if args.quick else 'results'}.json"
        records = measure_all(args)
        with open(args.results, "w") as file:
            json.dump(records, file)
        print(f"measurements: {args.results}")
    print(report(records))
    figures = args.figures or (f"{SCRATCH}-quick-figures" if args.quick else "docs/figures")
    os.makedirs(figures, exist_ok=True)
    print("figures:", ", ".join(plot(records, figures)))


def measure_all(args) -> list[dict]:
    root = args.workdir or tempfile.mkdtemp(prefix="viewdf-scaling-")
    histories = Histories(root)
    records: list[dict] = []
    started = time.perf_counter()
    try:
        for mode in args.modes:
            with contextlib.ExitStack() as stack:
                if mode == "cluster":
                    cluster = stack.enter_context(StandaloneCluster(2, 1, "1g", log_dir=f"{root}/cluster-logs"))
                    spark = cluster_session(cluster.master_url)
                else:
                    spark = bench_session()
                stack.callback(spark.stop)
                print(f"[{mode}] {spark.sparkContext.master} at {time.perf_counter() - started:.0f} s", flush=True)
                records += run_mode(spark, mode, args, histories, root)
    finally:
        if not args.workdir:
            shutil.rmtree(root, ignore_errors=True)
    print(f"total {time.perf_counter() - started:.0f} s")
    return records


if __name__ == "__main__":
    main()
