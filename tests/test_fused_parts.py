"""Parts without a Spark job of their own (issue 17).

* A view whose part is a projection of another view's part (the paper's View2 over Helper, a pattern's
  or a SUM window's final view) is written in the job that writes that part: a struct column of it.
* A part declared UNCHANGED WHEN or EMPTY WHEN its inputs are empty is recorded from the catalog alone
  (a pattern Helper with CONTIGUITY EVENTS carries its runs through parts without events; a window's
  running sums through parts where nothing enters or leaves the window).

Either way, every stored part must be the part that computing each view on its own, with a Spark job per
part, stores: rows (each with its own PART_TIMESTAMP), row count, content hash and lineage.
"""

from __future__ import annotations

import random

import pandas as pd
import pytest
from test_range_steps import stored_parts

from viewdf_magic.errors import ViewDFError
from viewdf_magic.network_example import NETWORK_DDL, stream_ddl
from viewdf_magic.catalog.model import Slice

START = pd.Timestamp("2015-01-01 10:00:00")
VIEWS = [
    "CREATE VIEW Lossy AS INITIALIZE Lossy[i] AS SELECT src, 2 * loss AS twice FROM M[i] WHERE loss > 12 "
    "UPDATE Lossy[j] AS SELECT src, 2 * loss AS twice FROM M[j] WHERE loss > 12 PARTITION LENGTH 60",
    "CREATE VIEW Rising AS SELECT src, a.ts AS since, count(*) AS ct, max(loss) AS peak FROM M PATTERN (a, b+) "
    "WHERE b.loss > a.loss AND b[i].loss > b[i-1].loss GROUP BY src CONTIGUITY EVENTS",
    "CREATE VIEW Loss3 AS SELECT src, sum(loss) AS total, count(*) AS n FROM M [WINDOW 3 MINUTES] GROUP BY src",
]
NAMES = ["Lossy", "Helper", "View2", "Rising__helper", "Rising", "Loss3__pre", "Loss3__sum", "Loss3"]


QUIET = (5, 6, 7, 11, 14, 15)        # minutes without rows


def minutes(seed: int) -> list[pd.DataFrame | pd.Timestamp]:
    """Batches of a stream: its first four minutes at once, then a minute at a time, each quiet minute
    sealed on its own (a timestamp to SEAL through)."""
    rng = random.Random(seed)
    batches: list[pd.DataFrame | pd.Timestamp] = []
    for minute in range(18):
        start = START + pd.Timedelta(minutes=minute)
        if minute in QUIET:
            batches.append(start)
            continue
        rows = [(start + pd.Timedelta(seconds=rng.randint(0, 59)), rng.choice(["a", "b"]), "d",
                 rng.choice([11, 12, 14, 20, 31, 3])) for _ in range(rng.randint(1, 3))]
        batches.append(pd.DataFrame(rows, columns=["ts", "src", "dest", "loss"]))
    return [pd.concat(batches[:4], ignore_index=True)] + batches[4:]


def spark_jobs(spark, name: str, action) -> int:
    """How many Spark jobs ``action`` ran (under job group ``name``)."""
    spark.sparkContext.setJobGroup(name, name)
    try:
        action()
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(name))


def build(make_warehouse, name: str, shortcuts: bool, seed: int):
    warehouse = make_warehouse(name)
    warehouse.maintainer.fused_parts = warehouse.maintainer.jobless_empty_parts = shortcuts
    warehouse.execute(NETWORK_DDL)
    for view in VIEWS:
        warehouse.execute(view)
    for batch in minutes(seed):
        if isinstance(batch, pd.Timestamp):
            warehouse.execute(f"SEAL M THROUGH '{batch}'")
        else:
            warehouse.ingest("M", batch)
    return warehouse


@pytest.mark.parametrize("seed", [7])
def test_fused_and_declared_parts_equal_parts_computed_alone(spark, make_warehouse, seed):
    jobs, stores = {}, {}
    for shortcuts in (False, True):
        holder = {}
        jobs[shortcuts] = spark_jobs(spark, f"fused-{seed}-{shortcuts}", lambda: holder.update(
            warehouse=build(make_warehouse, f"shortcuts-{shortcuts}", shortcuts, seed)))
        warehouse = holder["warehouse"]
        stores[shortcuts] = {name: stored_parts(warehouse, name) for name in NAMES}
    for name in NAMES:
        assert stores[True][name] == stores[False][name], name
    assert jobs[True] < jobs[False]

    catalog = warehouse.catalog
    helper_id = catalog.get("Helper").id
    # after the first batch, whose Helper[i] (INITIALIZE, a projection of M[i]) was written with M's rows
    first_batch_end = START.value // 10**9 // 60 + 4
    view2 = [Slice.parse(f) for s, meta in catalog.state("View2").parts.items() if s >= first_batch_end
             for f in meta.folders]
    assert view2 and all(s.folder.startswith(f"data/{helper_id}/") and s.column for s in view2)   # fused
    lossy = [Slice.parse(f) for meta in catalog.state("Lossy").parts.values() for f in meta.folders]
    assert lossy and all(s.folder.startswith(f"data/{catalog.get('M').id}/") and s.column for s in lossy)  # with M's
    carried = [(s, Slice.parse(f).part) for s, meta in catalog.state("Rising__helper").parts.items()
               for f in meta.folders]
    assert any(part != s for s, part in carried)          # a quiet minute holds an earlier part's runs
    sums = catalog.state("Loss3__sum").parts      # minute 14: neither it nor minute 11 (leaving the window) has rows
    quiet = START.value // 10**9 // 60 + 14
    assert sums[quiet].folders == sums[quiet - 1].folders
    [verified] = warehouse.run("VERIFY VIEW Rising")
    assert verified.message.endswith("equal their recomputation.")


def test_an_empty_source_part_records_its_fused_views_part_with_it(warehouse):
    """A part known to be empty (no job) takes the parts fused into it along, empty, in the same entry."""
    warehouse.execute(NETWORK_DDL)
    warehouse.ingest("M", pd.DataFrame({"ts": [START], "src": ["a"], "dest": ["b"], "loss": [12]}))
    report = warehouse.ingest("M", pd.DataFrame({"ts": [START + pd.Timedelta(minutes=2)], "src": ["a"],
                                                 "dest": ["b"], "loss": [12]}))
    gap = {(s.view, s.subscript): s for s in report.steps}
    helper, view2 = gap[("Helper", 23668441)], gap[("View2", 23668441)]
    assert (helper.rows, view2.rows, view2.fused_into) == (0, 0, "Helper[23668441]")
    assert warehouse.catalog.state("View2").parts[23668441].folders == ()


def test_a_failing_projection_fails_its_own_view_and_not_its_source(warehouse):
    warehouse.execute(NETWORK_DDL)
    warehouse.execute("CREATE VIEW Bad AS INITIALIZE Bad[j] AS SELECT src, CAST(dest AS INT) AS d FROM Helper[j] "
                      "UPDATE Bad[j] AS SELECT src, CAST(dest AS INT) AS d FROM Helper[j] PARTITION LENGTH 60")
    warehouse.ingest("M", pd.DataFrame({"ts": [START], "src": ["a"], "dest": ["not a number"], "loss": [12]}))
    assert warehouse.catalog.state("Helper").parts and warehouse.catalog.state("View2").parts
    assert not warehouse.catalog.state("Bad").parts
    [failure] = warehouse.maintainer.failures
    assert failure.view == "Bad" and "CAST(dest AS INT)" in str(failure.error)


def test_stepping_one_part_computes_one_part(warehouse):
    warehouse.execute(NETWORK_DDL + "SET MAINTENANCE MANUAL")
    warehouse.ingest("M", pd.DataFrame({"ts": [START], "src": ["a"], "dest": ["b"], "loss": [12]}))
    assert [r.view for r in warehouse.step()] == ["Helper"]
    assert [r.view for r in warehouse.step()] == ["View2"]


@pytest.mark.parametrize("declaration, message", [
    ("UNCHANGED WHEN V[j-1] IS EMPTY", "UNCHANGED WHEN names inputs of V, not its own parts"),
    ("EMPTY WHEN M[j-1 .. j] IS EMPTY", "M[j-1 .. j] is a range; name single parts, e.g. M[j]"),
    ("EMPTY WHEN M[j+1] IS EMPTY", "EMPTY WHEN references a future part: M[j+1] starts after V[j] ends"),
    ("EMPTY WHEN N[j] IS EMPTY", "unknown stream or view 'N'"),
    ("EMPTY WHEN M[j] IS FULL", "expected EMPTY, found 'FULL'"),
])
def test_declaration_errors_point_at_the_declaration(warehouse, declaration, message):
    warehouse.execute(NETWORK_DDL)
    text = f"CREATE VIEW V AS INITIALIZE V[j] AS SELECT * FROM M[j] UPDATE V[j] AS SELECT * FROM M[j] {declaration}"
    with pytest.raises(ViewDFError) as caught:
        warehouse.execute(text)
    assert caught.value.message == message
    assert warehouse.catalog.get("V") is None


def test_explain_says_which_parts_need_no_job(warehouse):
    warehouse.execute(NETWORK_DDL)
    for view in VIEWS:
        warehouse.execute(view)
    view2 = warehouse.explain_view("View2").detail
    assert "View2's parts need no Spark job of their own: its UPDATE is a projection of Helper[j]" in view2
    helper = warehouse.explain_view("Helper").detail
    assert "Helper's parts run Spark jobs of their own: its UPDATE query is not a projection of one part of " \
           "another view or a stream (it reads more than one input)." in helper
    rising = warehouse.explain_view("Rising").detail
    assert "any part when M[j] IS EMPTY (declared EMPTY WHEN)" in rising
    assert "An UPDATE part is recorded as holding the previous part's rows, without a Spark job, when M[j] IS EMPTY " \
           "(declared UNCHANGED WHEN)." in rising


LOSSY = VIEWS[0]


def measurements(minute: int, losses: list[int]) -> pd.DataFrame:
    start = START + pd.Timedelta(minutes=minute)
    return pd.DataFrame({"ts": [start + pd.Timedelta(seconds=n) for n in range(len(losses))],
                         "src": [f"s{n}" for n in range(len(losses))], "dest": ["d"] * len(losses), "loss": losses})


def lossy_oracle(batches: list[pd.DataFrame]) -> dict[int, list[tuple[str, int]]]:
    """Lossy's parts, from every row M received (pandas)."""
    rows = pd.concat(batches, ignore_index=True)
    kept = rows[rows["loss"] > 12]
    parts: dict[int, list[tuple[str, int]]] = {}
    for ts, src, loss in zip(kept["ts"], kept["src"], kept["loss"]):
        parts.setdefault(ts.value // 10**9 // 60, []).append((src, 2 * int(loss)))
    return {s: sorted(r) for s, r in parts.items()}


def test_a_projection_of_a_stream_is_written_in_the_ingest_job_and_late_rows_repair_it(spark, warehouse):
    """Under AUTO maintenance, a view that projects the stream's part gets no job of its own: the batch's
    write holds its rows. A batch with late rows and a new part writes the new part with it, and the late
    part is repaired as usual."""
    warehouse.execute(stream_ddl("M"))
    warehouse.execute(LOSSY)
    batches = [measurements(0, [13, 5]), measurements(1, [20])]
    warehouse.ingest("M", pd.concat(batches[:2], ignore_index=True))     # two parts in one batch
    batches.append(measurements(2, [30, 1, 14]))
    jobs = spark_jobs(spark, "lossy-one-part", lambda: warehouse.ingest("M", batches[-1]))
    assert jobs == 1                     # the write of the batch, Lossy's part with it
    late = pd.concat([measurements(1, [99]).assign(src="late"), measurements(4, [50])], ignore_index=True)
    batches.append(late)
    report = warehouse.ingest("M", late)
    first = START.value // 10**9 // 60
    fused = {s.subscript - first: s.fused_into for s in report.steps if s.fused_into}
    assert fused == {3: f"M[{first + 3}]", 4: f"M[{first + 4}]"}     # minute 3 sealed empty on the way
    assert [(s.subscript - first, s.repair) for s in report.steps if s.repair] == [(1, "changed")]
    stored = {s: sorted(rows) for s, (rows, *_) in stored_parts(warehouse, "Lossy").items() if rows}
    assert stored == lossy_oracle(batches)
    assert warehouse.catalog.state("Lossy").parts[first + 3].rows == 0


def test_a_failing_projection_of_a_stream_fails_its_own_view_and_not_the_batch(warehouse):
    warehouse.execute(stream_ddl("M"))
    warehouse.execute(LOSSY)
    warehouse.execute("CREATE VIEW Bad AS INITIALIZE Bad[j] AS SELECT src, CAST(dest AS INT) AS d FROM M[j] "
                      "UPDATE Bad[j] AS SELECT src, CAST(dest AS INT) AS d FROM M[j] PARTITION LENGTH 60")
    warehouse.ingest("M", measurements(0, [13, 5]))
    assert warehouse.catalog.state("M").parts and warehouse.catalog.state("Lossy").parts
    assert not warehouse.catalog.state("Bad").parts
    [failure] = warehouse.maintainer.failures
    assert failure.view == "Bad" and "CAST(dest AS INT)" in str(failure.error)


def test_manual_maintenance_writes_no_view_with_the_batch(warehouse):
    warehouse.execute(stream_ddl("M") + "; SET MAINTENANCE MANUAL")
    warehouse.execute(LOSSY)
    report = warehouse.ingest("M", measurements(0, [13]))
    assert report.steps == [] and not warehouse.catalog.state("Lossy").parts
    assert [(r.view, r.rows) for r in warehouse.step()] == [("Lossy", 1)]
