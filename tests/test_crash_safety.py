"""Crash safety: a process SIGKILLed at any point of an ingest or a maintenance cascade leaves a
warehouse that, reopened, shows no partially written part, has every acknowledged batch, and
finishes or redoes the interrupted maintenance; in the end every view equals a rebuild.

``crash_worker.crash_loop`` kills a worker process (and its JVM) at random moments and checks the
warehouse after each kill: 7 times in CI (two while views are created, then one round of the five
aims), 30 in ``./run stress`` (VIEWDF_KILLS sets either;
``benchmarks/crash_stress.py`` runs more).
The counts go to test-artifacts/crash-safety.json.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from crash_worker import crash_loop, write_counts

ARTIFACT = Path(__file__).resolve().parent.parent / "test-artifacts" / "crash-safety.json"


@pytest.mark.parametrize("kills", [7, pytest.param(30, marks=pytest.mark.stress)], ids=["ci", "stress"])
def test_sigkill_at_random_points_loses_nothing_and_recovery_finishes_maintenance(spark, tmp_path, kills):
    kills = int(os.environ.get("VIEWDF_KILLS", kills))
    counts = crash_loop(spark, tmp_path, kills=kills, seed=int(os.environ.get("VIEWDF_CRASH_SEED", "7")))
    write_counts(counts, ARTIFACT)
    print(counts.summary())
    assert counts.kills == kills
    # The kills landed where they matter: while views were created, inside ingests before and after
    # the batch's commit, and in maintenance that the reopen then finished.
    phases = counts.phases
    assert phases.get("creating views", 0) > 0
    assert sum(n for phase, n in phases.items() if phase.startswith("ingest")) > 0
    assert sum(n for phase, n in phases.items() if phase.startswith("maintenance")) > 0
    assert counts.in_flight_committed > 0 and counts.recoveries > 0 and counts.recovered_steps > 0
    assert counts.acked > 0
