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


def test_what_long_work_kept_is_left_to_the_oldest_generation() -> None:
    # given long work that keeps many containers (a large answer, a replay's caches)
    with few_collections(1_000_000):
        kept = [[n] for n in range(200_000)]
    # then they are not left in the young generations, whose next pass, due at once with
    # the usual thresholds, would go over every one of them while the event loop waits
    young = {id(item) for generation in (0, 1) for item in gc.get_objects(generation)}
    assert not any(id(item) in young for item in kept[::1000])
    # and nothing stays frozen out of the collector's reach
    assert gc.get_freeze_count() == 0


def test_work_of_exactly_the_bulk_holds_the_collector_back() -> None:
    # given work of exactly ``bulk`` items
    before = gc.get_threshold()
    # when it runs
    with few_collections(5, bulk=5):
        # then the collector is held back, as it is for more
        assert gc.get_threshold()[0] >= 100_000
    # and restored after it
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
