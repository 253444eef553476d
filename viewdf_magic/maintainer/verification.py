"""VERIFY VIEW in a constant number of Spark jobs per run of parts: where a view's RECOMPUTE query can be
lifted to many parts (each reference ``X[j+c]`` or ``X[j+a .. j+b]``, as range steps lift an UPDATE), a run
of stored parts is recomputed in one query and compared with the stored rows part by part in one
comparison (``compare_parts``), instead of one recomputation and one comparison per part.

A run is bounded as a range step is (RANGE_ROWS input rows, RANGE_PARTS parts); a run whose first part
needs input parts that retention dropped is refused as the per-part check refuses it. Views whose
RECOMPUTE reads every part up to the computed one (a pattern's or MATCH_RECOGNIZE's Direct search,
``X[.. j]``) are verified part by part (``lifted_plan`` says why).
"""

from __future__ import annotations

from pyspark.sql import functions as F

from ..catalog.catalog import Catalog
from ..catalog.model import PART_TIMESTAMP, ObjectDef
from ..storage.parts import PartStore
from ..storage.slices import PART_COLUMN
from ..timeparts import subscript_sql
from .compare import Comparison, compare_parts
from .ranges import RANGE_PARTS, RANGE_ROWS, RangePlan, RangeRunner, input_rows, plan_query
from .timeline import Timeline, check_retained
from .views import CompiledView


def lifted_plan(view: CompiledView, catalog: Catalog) -> RangePlan:
    """The range plan of ``view``'s RECOMPUTE query (``reason`` says why there is none)."""
    if view.recompute is None:
        return RangePlan(reason="it has no RECOMPUTE clause")
    return plan_query(view, view.recompute, "recompute", catalog)


def verify_runs(catalog: Catalog, store: PartStore, timeline: Timeline, ranges: RangeRunner, view: CompiledView,
                plan: RangePlan, subscripts: list[int], tolerance: float) -> dict[int, Comparison]:
    """Each stored part of ``subscripts`` against its recomputation by ``plan`` (lifted), run by run."""
    definition = view.definition
    assert plan.query is not None
    compared: dict[int, Comparison] = {}
    for run in _runs(catalog, timeline, plan, definition, subscripts):
        with ranges.frame(definition, plan, run[0], run[-1]) as fresh:
            fresh = fresh.filter(F.col(PART_COLUMN).isin(run)).drop(PART_TIMESTAMP)
            stored = store.read_parts(definition, catalog.state(definition.name), run)
            stored = stored.withColumn(PART_COLUMN, F.expr(subscript_sql(PART_TIMESTAMP, definition.length)))
            found = compare_parts(stored.select(*fresh.columns), fresh, PART_COLUMN, tolerance)
            compared.update({s: found[s] for s in run})
    return compared


def _runs(catalog: Catalog, timeline: Timeline, plan: RangePlan, definition: ObjectDef, subscripts: list[int]
          ) -> list[list[int]]:
    """``subscripts`` cut into runs of consecutive parts, each within a range step's bounds; a run whose
    first part reads dropped parts raises that part's positioned error (check_retained)."""
    assert plan.query is not None
    runs: list[list[int]] = []
    rows = 0
    for subscript in subscripts:
        refs = timeline.resolve(plan.query, definition, subscript)
        read = input_rows(catalog, refs)
        current = runs[-1] if runs else None
        if current is None or subscript != current[-1] + 1 or len(current) >= RANGE_PARTS or rows + read > RANGE_ROWS:
            check_retained(catalog, plan.query, refs)
            runs.append([subscript])
            rows = read
        else:
            current.append(subscript)
            rows += read
    return runs
