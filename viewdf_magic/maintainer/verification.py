"""VERIFY VIEW in a constant number of Spark jobs per run of parts: where a view's RECOMPUTE query can be
lifted to many parts (each reference ``X[j+c]`` or ``X[j+a .. j+b]``, as range steps lift an UPDATE), a run
of stored parts is recomputed in one query and compared with the stored rows part by part in one
comparison (``compare_parts``), instead of one recomputation and one comparison per part.

A run is bounded as a range step is (``RunBudget``: RANGE_ROWS input rows, RANGE_PARTS parts); a run whose
first part needs input parts that retention dropped is refused as the per-part check refuses it.

A pattern's or MATCH_RECOGNIZE's RECOMPUTE is a search over the whole history ``X[.. j]``, which no
lifting can copy into every part. Its translation lifts the search instead (``verify_history``): the
history is read and grouped once, a MATCH_RECOGNIZE partition is searched once (each match belongs to the
part of the furthest row it examined, which the search up to any part agrees with), and a pattern group
is searched up to each part it has events in. This was chosen over comparing with a rebuild by range steps
(the Helper's RANGE clause): that would check the Helper against itself, while this still checks every
part against the independent Direct search, as the part-by-part check does, in one Spark job instead of
one per part. The engine checks each part found to differ again with RECOMPUTE itself before reporting it.
"""

from __future__ import annotations

from typing import Mapping

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..catalog.catalog import Catalog
from ..catalog.model import PART_TIMESTAMP, ObjectDef
from ..language.queries import Scope, compile_query
from ..language.source import Fragment
from ..language.statements import ClauseKind
from ..storage.parts import PartStore
from ..storage.slices import PART_COLUMN
from ..timeparts import subscript_sql
from .compare import Comparison, compare_parts
from .ranges import RangePlan, RangeRunner, RunBudget, plan_query
from .timeline import Timeline, check_retained
from .views import CompiledView, catalog_lookup


def lifted_plan(view: CompiledView, catalog: Catalog) -> RangePlan:
    """The range plan of ``view``'s RECOMPUTE query (``reason`` says why there is none)."""
    if view.recompute is None:
        return RangePlan(reason="it has no RECOMPUTE clause")
    return plan_query(view, view.recompute, ClauseKind.RECOMPUTE, catalog)


def verify_runs(catalog: Catalog, store: PartStore, timeline: Timeline, ranges: RangeRunner, view: CompiledView,
                plan: RangePlan, subscripts: list[int], tolerance: float) -> dict[int, Comparison]:
    """Each stored part of ``subscripts`` against its recomputation by ``plan`` (lifted), run by run."""
    compared: dict[int, Comparison] = {}
    for run in _runs(catalog, timeline, plan, view.definition, subscripts):
        compared.update(_compare_run(catalog, store, ranges, view.definition, plan, run, tolerance))
    return compared


def verify_history(catalog: Catalog, store: PartStore, timeline: Timeline, ranges: RangeRunner, view: CompiledView,
                   sql: str, subscripts: list[int], tolerance: float) -> dict[int, Comparison]:
    """Each stored part of ``subscripts`` (ascending) against ``sql``, the view's RECOMPUTE search over the
    history ``X[.. j]`` lifted by its translation to parts ``__vdf_first .. j`` (each row's part last), in one
    run: the history is read and searched once. Parts whose history retention dropped are refused at the
    first part, by the view's RECOMPUTE query, as the part-by-part check refuses them."""
    definition = view.definition
    assert view.recompute is not None
    check_retained(catalog, view.recompute, timeline.resolve(view.recompute, definition, subscripts[0]))
    query = compile_query(Fragment(sql, 0, len(sql)), catalog_lookup(catalog), Scope.RECOMPUTE, "j", definition.name)
    plan = RangePlan(ClauseKind.RECOMPUTE, ClauseKind.RECOMPUTE, query, query.sql)
    given = {ref.binding.placeholder: ranges.runner.frame(ref)
             for ref in timeline.resolve(query, definition, subscripts[-1])}
    return _compare_run(catalog, store, ranges, definition, plan, subscripts, tolerance, given)


def _compare_run(catalog: Catalog, store: PartStore, ranges: RangeRunner, definition: ObjectDef, plan: RangePlan,
                 run: list[int], tolerance: float, given: Mapping[str, DataFrame] | None = None
                 ) -> dict[int, Comparison]:
    """The stored parts ``run`` against parts ``run[0] .. run[-1]`` computed by ``plan``, in one comparison."""
    with ranges.frame(definition, plan, run[0], run[-1], given) as fresh:
        fresh = fresh.filter(F.col(PART_COLUMN).isin(run)).drop(PART_TIMESTAMP)
        stored = store.read_parts(definition, catalog.state(definition.name), run)
        stored = stored.withColumn(PART_COLUMN, F.expr(subscript_sql(PART_TIMESTAMP, definition.length)))
        found = compare_parts(stored.select(*fresh.columns), fresh, PART_COLUMN, tolerance)
        return {s: found[s] for s in run}


def _runs(catalog: Catalog, timeline: Timeline, plan: RangePlan, definition: ObjectDef, subscripts: list[int]
          ) -> list[list[int]]:
    """``subscripts`` cut into runs of consecutive parts, each within a range step's bounds; a run whose
    first part reads dropped parts raises that part's positioned error (check_retained)."""
    assert plan.query is not None
    runs: list[list[int]] = []
    budget = RunBudget(catalog, plan)
    for subscript in subscripts:
        refs = timeline.resolve(plan.query, definition, subscript)
        if runs and subscript == runs[-1][-1] + 1 and budget.admits(refs):
            runs[-1].append(subscript)
            continue
        check_retained(catalog, plan.query, refs)
        runs.append([subscript])
        budget = RunBudget(catalog, plan)
        budget.admits(refs)
    return runs
