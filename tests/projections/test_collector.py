"""The collector held back during long work, and restored after it."""

from __future__ import annotations

import gc

from leaderlog.projections._collector import few_collections


def test_long_work_holds_the_collector_back_and_restores_it() -> None:
    before = gc.get_threshold()
    with few_collections(10):
        assert gc.get_threshold() == before
    with few_collections(10, bulk=5):
        assert gc.get_threshold()[0] >= 100_000
    assert gc.get_threshold() == before
    with few_collections(1_000_000):
        assert gc.get_threshold()[0] >= 100_000
        assert gc.get_freeze_count() > 0
        with few_collections(1_000_000):
            pass
        assert gc.get_threshold()[0] >= 100_000
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
