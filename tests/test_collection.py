"""Full garbage collections are deferred while views are maintained (maintainer/collection.py), and
Python's own setting comes back afterwards, also after an error and from nested blocks."""

from __future__ import annotations

import gc

import pytest

from viewdf_magic.maintainer.collection import FULL_COLLECTION_EVERY, fewer_full_collections


def test_full_collections_wait_inside_the_block_and_python_setting_comes_back():
    before = gc.get_threshold()
    assert before[2] < FULL_COLLECTION_EVERY
    with fewer_full_collections():
        assert gc.get_threshold() == (before[0], before[1], FULL_COLLECTION_EVERY)
        with fewer_full_collections():
            assert gc.get_threshold()[2] == FULL_COLLECTION_EVERY
        assert gc.get_threshold()[2] == FULL_COLLECTION_EVERY
    assert gc.get_threshold() == before
    with pytest.raises(ValueError), fewer_full_collections():
        raise ValueError
    assert gc.get_threshold() == before


def test_a_failing_step_gives_python_its_setting_back(warehouse):
    before = gc.get_threshold()
    warehouse.execute("CREATE STREAM M (ts TIMESTAMP, loss INT) TIMESTAMP ts PARTITION LENGTH 60;"
                      "CREATE VIEW R AS INITIALIZE R[i] AS SELECT 10 / loss AS r FROM M[i] "
                      "UPDATE R[j] AS SELECT 10 / loss AS r FROM M[j]; SET MAINTENANCE MANUAL")
    warehouse.execute("INSERT INTO M VALUES (TIMESTAMP '2015-01-01 10:00:00', 0)")
    with pytest.raises(Exception, match="Division by zero"):
        warehouse.execute("STEP ALL")
    assert gc.get_threshold() == before
