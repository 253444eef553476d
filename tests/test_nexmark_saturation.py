"""The saturation benchmark's rounds: the discarded rounds run (the first one's rows are checked) but are not
counted in the medians."""

from __future__ import annotations

from benchmarks.nexmark_saturation import run_saturation
from viewdf_magic.nexmark import NexmarkConfig
from viewdf_magic.nexmark.compare import Windows


def test_discarded_rounds_run_and_are_not_counted(spark, tmp_path):
    rows = run_saturation(spark, NexmarkConfig(events=4_000, rate=1_000), Windows(4, 2, 2), ["q1", "q2"], ["naive"],
                          str(tmp_path), repeat=2, discard=1)
    assert [(r.query, r.system, r.rounds, r.equal) for r in rows] == [("q1", "naive", 2, True),
                                                                        ("q2", "naive", 2, True)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["parts", "round1", "round2", "round3"]
