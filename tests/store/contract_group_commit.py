"""The event store contract, continued: how a store lays out the rows of a group commit
(batches refused half way, the ids and versions a batch leaves to the ones after it, recorded
times across batches, the versions an idempotent retry is not held to). Every backend's suite
runs it beside :class:`StoreContract`.
"""

from __future__ import annotations

import datetime as dt
import time

import pytest

from leaderlog.errors import RecordedAtRefused
from leaderlog.store import AppendResult, EventStore, NewEvent, PendingBatch

from .contract import event, succeeded

_LONG_AGO = dt.datetime(2025, 4, 1, tzinfo=dt.UTC)


async def _a_log_moved_in_long_ago(store: EventStore) -> None:
    """One event, moved in with a time long past: later events may bring times after it
    that are still before the store's clock."""
    moved = event("org:moved", recorded_at=_LONG_AGO, actor="mover")
    await store.append([moved._replace(exported_hash="")], actor="t")


def _refused_at_its_second_event(first: NewEvent) -> list[NewEvent]:
    """``first`` (kept: a program moving a log vouches for its time), then an export line
    whose past time does not continue this log's chain (refused as it is chained)."""
    past = dt.datetime(2025, 5, 1, tzinfo=dt.UTC)
    stray = event("s", recorded_at=past + dt.timedelta(days=1))._replace(exported_hash="")
    return [first._replace(recorded_at=past), stray]


class GroupCommitContract:
    """Each test takes the ``store`` fixture of the :class:`StoreContract` beside it."""

    async def test_a_batch_refused_half_way_writes_none_of_its_events(
        self, store: EventStore
    ) -> None:
        # Rule: a batch is atomic even when its refusal comes after some of its rows were laid
        # out (a recorded time checked as the event is chained).
        # given a log whose last event was recorded long ago
        await _a_log_moved_in_long_ago(store)

        # when a batch whose second event is refused as it is chained is appended
        with pytest.raises(RecordedAtRefused, match="is in the past"):
            await store.append(_refused_at_its_second_event(event("s")), actor="t")

        # then nothing of it is written, its first event included
        assert await store.count() == 1
        assert (await store.verify()).ok

    async def test_a_batch_refused_half_way_leaves_no_trace_for_the_batch_after_it(
        self, store: EventStore
    ) -> None:
        # Rule: a refused batch leaves nothing behind in a group commit: the batch after it sees
        # neither the stream versions nor the event ids it would have written.
        # given a log whose last event, of stream "org:moved", was recorded long ago
        await _a_log_moved_in_long_ago(store)
        first = event("org:moved")

        # when a group holds a batch refused half way (its first event of "org:moved" laid
        # out, its second, of a new stream "s", refused), then a batch that expects both
        # streams where the log has them and carries the refused batch's first event again
        outcomes = await store.append_batches(
            [
                PendingBatch(_refused_at_its_second_event(first), {}, "refused"),
                PendingBatch(
                    [first._replace(recorded_at=None), event("s")],
                    {"org:moved": 1, "s": "no_stream"},
                    "second",
                ),
            ]
        )

        # then the first is refused and the second written as if it had never been there
        assert isinstance(outcomes[0], RecordedAtRefused)
        assert succeeded(outcomes[1]) == AppendResult((2, 3), 2)
        stored = await store.read_all()
        assert [(e.position, e.stream, e.version, e.actor) for e in stored] == [
            (1, "org:moved", 1, "mover"),
            (2, "org:moved", 2, "second"),
            (3, "s", 1, "second"),
        ]
        assert (await store.verify()).ok

    async def test_an_id_repeated_by_a_later_batch_of_a_group_is_answered_with_its_position(
        self, store: EventStore
    ) -> None:
        # Rule: within one group commit, a batch repeating an event an earlier batch writes is
        # an idempotent retry of it (whatever batch it sits in), not a second copy.
        # given one event carried by both batches of a group
        twice = event("a")

        # when the group is appended
        outcomes = await store.append_batches(
            [
                PendingBatch([twice], {"a": "no_stream"}, "t"),
                PendingBatch([twice, event("b")], {"a": "no_stream"}, "t"),
            ]
        )

        # then it is written once, and the second batch is answered with its position
        assert succeeded(outcomes[0]) == AppendResult((1,), 1)
        assert succeeded(outcomes[1]) == AppendResult((1, 2), 1)
        assert await store.count() == 2

    async def test_a_retry_whose_events_are_stored_is_not_held_to_what_it_depended_on(
        self, store: EventStore
    ) -> None:
        # Rule: an idempotent retry (every event stored already) succeeds however far the
        # streams it depended on have moved since; only a batch that writes is held to them.
        # given a batch written while its ancestor was at version 1
        await store.append([event("ancestor")], actor="t")
        child = event("child")
        written = PendingBatch([child], {"child": "no_stream"}, "t", {"ancestor": 1})
        assert succeeded((await store.append_batches([written]))[0]).positions == (2,)
        # and the ancestor moved on since
        await store.append([event("ancestor")], expected={"ancestor": 1}, actor="t")

        # when the same batch is appended again
        (retry,) = await store.append_batches([written])

        # then it is answered with its positions, nothing written
        assert retry == AppendResult((2,), 0)
        assert await store.count() == 3

    async def test_an_event_without_a_time_after_one_ahead_of_the_clock_is_stamped_no_earlier(
        self, store: EventStore
    ) -> None:
        # Rule: recorded times never go backwards within a batch: an event that brings no time,
        # after one that brings a time ahead of the store's clock (another server's), gets that
        # time, not the clock's.
        # given a batch whose first event is recorded a minute ahead of the clock
        ahead = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1)

        # when it is appended with an event that brings no time after it
        await store.append([event("a", recorded_at=ahead), event("b")], actor="t")

        # then both are recorded at that time
        assert [e.recorded_at for e in await store.read_all()] == [ahead, ahead]
        assert (await store.verify()).ok

    async def test_recorded_times_never_go_backwards_across_the_batches_of_a_group(
        self, store: EventStore
    ) -> None:
        # Rule: the batches of one group commit follow one another in time as in position: a
        # later batch is stamped no earlier than the time an earlier one brought, and may not
        # bring an earlier time itself.
        # given a group whose first batch brings a time a minute ahead of the clock
        ahead = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1)
        outcomes = await store.append_batches(
            [
                PendingBatch([event("a", recorded_at=ahead)], {}, "t"),
                # when the next batch brings no time, and the one after an earlier time
                PendingBatch([event("b")], {}, "t"),
                PendingBatch([event("c", recorded_at=ahead - dt.timedelta(seconds=30))], {}, "t"),
            ]
        )

        # then the second is stamped at the first's time, and the third is refused
        assert succeeded(outcomes[0]).positions == (1,)
        assert succeeded(outcomes[1]).positions == (2,)
        assert isinstance(outcomes[2], RecordedAtRefused)
        assert "recorded times never go backwards" in str(outcomes[2])
        assert [e.recorded_at for e in await store.read_all()] == [ahead, ahead]

    async def test_an_empty_log_takes_a_move_of_events_recorded_however_long_ago(
        self, store: EventStore
    ) -> None:
        # Rule: into an empty log, an import is a move: its times are kept with no lower bound
        # (only "no earlier than the last event" applies, and there is none).
        # given events recorded in 1900 and 1901
        times = [dt.datetime(1900, 1, 1, tzinfo=dt.UTC), dt.datetime(1901, 6, 1, tzinfo=dt.UTC)]

        # when they are appended to an empty log
        await store.append([event(f"s{i}", recorded_at=t) for i, t in enumerate(times)], actor="m")

        # then they are kept as they were
        assert [e.recorded_at for e in await store.read_all()] == times
        assert (await store.verify()).ok

    async def test_a_follower_after_an_earlier_batch_of_a_group_is_woken_by_its_commit(
        self, store: EventStore
    ) -> None:
        # Rule: a commit tells waiting followers the group's last position: one waiting for
        # events after any position the group wrote returns at once, not at its timeout.
        # given a group commit of two batches, at positions 1 and 2
        await store.append_batches(
            [PendingBatch([event("a")], {}, "t"), PendingBatch([event("b")], {}, "t")]
        )

        # when a follower waits for events after position 1
        started = time.monotonic()
        await store.wait_for_events(after=1, timeout=10)

        # then it returns at once: position 2 is committed
        assert time.monotonic() - started < 5
