"""The event store contract: every backend runs this suite unchanged.

A backend's suite subclasses :class:`StoreContract` and provides the ``store_url`` fixture (a
fresh, empty log per test) plus raw access to its database through the backend's own driver,
so tests can try what the store itself would never do (UPDATE, DELETE, tampering).
"""

from __future__ import annotations

import abc
import asyncio
import datetime as dt
import sys
import threading
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from typing import Any, ClassVar

import anyio
import pytest

from leaderlog.errors import (
    ConcurrencyError,
    DuplicateEventError,
    RecordedAtRefused,
    StoreError,
    StoreUnavailable,
    UnreadableEvent,
)
from leaderlog.events import RecordedEvent, format_time
from leaderlog.projections import Projection, ProjectionRunner, ProjectionTransaction, verify_log
from leaderlog.store import AppendResult, EventStore, NewEvent, PendingBatch, open_store
from leaderlog.store import base as store_base
from leaderlog.store.base import (
    GENESIS_HASH,
    PROGRESS_STEP,
    StoredText,
    chain_hash,
    envelope_bytes,
    recorded_hash,
)

_counter = 0


class _Noting(Projection):
    """A projection that only keeps its checkpoint: what the log once reached."""

    name: ClassVar[str] = "noting"
    version: ClassVar[int] = 1

    def schema(self) -> tuple[str, ...]:
        return ()

    def tables(self) -> tuple[str, ...]:
        return ()

    async def apply(self, tx: ProjectionTransaction, events: object) -> None:
        return None


class _Recording(Projection):
    """A projection that keeps a row for every event it applied: what it was built from."""

    name: ClassVar[str] = "recording"
    version: ClassVar[int] = 1

    def schema(self) -> tuple[str, ...]:
        return (
            "CREATE TABLE IF NOT EXISTS p_recording_seen "
            "(position BIGINT PRIMARY KEY, event_id TEXT NOT NULL)",
        )

    def tables(self) -> tuple[str, ...]:
        return ("p_recording_seen",)

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await tx.executemany(
            "INSERT INTO p_recording_seen (position, event_id) VALUES (?, ?)",
            [(e.position, str(e.event_id)) for e in events],
        )


async def _recorded(store: EventStore) -> list[tuple[int, str]]:
    rows = await store.query("SELECT position, event_id FROM p_recording_seen ORDER BY position")
    return [(int(position), str(event_id)) for position, event_id in rows]


async def _as_rebuilt(store: EventStore) -> list[tuple[int, str]]:
    """What a fresh rebuild of :class:`_Recording` holds: one row per event of the log."""
    fresh = ProjectionRunner(store, [_Recording()])
    await fresh.rebuild()
    return await _recorded(store)


def event(
    stream: str = "person:ada",
    data: Mapping[str, Any] | None = None,
    *,
    event_id: uuid.UUID | None = None,
    type: str = "test.noted",
    meta: Mapping[str, Any] | None = None,
    recorded_at: dt.datetime | None = None,
    actor: str | None = None,
) -> NewEvent:
    """A new event; each call gets distinct data unless data is given."""
    global _counter
    _counter += 1
    return NewEvent(
        event_id=event_id or uuid.uuid4(),
        stream=stream,
        type=type,
        schema_version=1,
        data={"n": _counter} if data is None else data,
        meta=meta or {},
        recorded_at=recorded_at,
        actor=actor,
    )


def succeeded(outcome: AppendResult | StoreError) -> AppendResult:
    assert isinstance(outcome, AppendResult), outcome
    return outcome


class StoreContract(abc.ABC):
    """What every event store guarantees. Subclasses provide ``store_url`` and raw access."""

    #: The driver's error when a trigger refuses a raw UPDATE or DELETE.
    raw_error: ClassVar[type[Exception]]
    #: SQL for a new random value of the event_id column.
    new_event_id_sql: ClassVar[str]

    @abc.abstractmethod
    async def execute_raw(self, store_url: str, sql: str) -> None:
        """Run SQL on the store's database through the backend's driver, not the store."""

    @abc.abstractmethod
    async def drop_append_only_guard(self, store_url: str) -> None:
        """Remove the triggers that refuse UPDATE and DELETE on events."""

    @abc.abstractmethod
    async def drop_unique_versions(self, store_url: str, *, indexed: bool) -> None:
        """Remove the unique index on events' (stream, version), keeping every row; with
        ``indexed``, an index on those columns that lets a version repeat takes its place."""

    @pytest.fixture
    async def store(self, store_url: str) -> AsyncIterator[EventStore]:
        opened = await open_store(store_url)
        try:
            yield opened
        finally:
            await opened.close()

    @pytest.fixture
    async def other_store(self, store_url: str) -> AsyncIterator[EventStore]:
        """A second, independent store on the same database (another writer or reader)."""
        opened = await open_store(store_url)
        try:
            yield opened
        finally:
            await opened.close()

    async def test_a_closed_store_says_so_and_closes_twice_quietly(self, store_url: str) -> None:
        opened = await open_store(store_url)
        await opened.append([event("a")], actor="t")
        await opened.close()
        await opened.close()
        for use in (
            opened.read_all(),
            opened.head(),
            opened.verify(),
            opened.append([event("b")], actor="t"),
            opened.query("SELECT 1"),
        ):
            # in the same words on every backend: not an outage worth waiting out
            with pytest.raises(StoreUnavailable, match=r"^the store is closed"):
                await use

    # --- appending and reading back -------------------------------------------------------

    async def test_append_and_read_round_trip(self, store: EventStore) -> None:
        data = {
            "name": "Zoë 王 🙂",
            "big": 2**53 + 1,
            "ratio": 0.1,
            "nested": {"list": [1, None, True, "x"], "empty": {}},
        }
        first, second = event("org:ice", data), event("org:ice", meta={"source": "article"})
        before = dt.datetime.now(dt.UTC)
        result = await store.append([first, second], actor="alice")
        after = dt.datetime.now(dt.UTC)

        assert result == AppendResult((1, 2), 2)
        stored = await store.read_all()
        assert [e.event_id for e in stored] == [first.event_id, second.event_id]
        assert stored[0].data == data
        assert stored[1].meta == {"source": "article"}
        for recorded, new in zip(stored, [first, second], strict=True):
            assert recorded.stream == "org:ice"
            assert recorded.type == "test.noted"
            assert recorded.schema_version == 1
            assert recorded.actor == "alice"
            assert recorded.recorded_at.tzinfo is not None
            assert before - dt.timedelta(seconds=1) <= recorded.recorded_at <= after
            assert recorded.data == dict(new.data)
        assert stored[0].hash == recorded_hash(GENESIS_HASH, stored[0])
        assert stored[1].hash == recorded_hash(stored[0].hash, stored[1])

    async def test_the_longest_stream_id_of_a_range(self, store: EventStore) -> None:
        assert await store.longest_stream_id() == 0
        names = ["person-a", "person-" + "b" * 30, "org-c-" + "c" * 32, "person-" + "d-d" * 4]
        await store.append([event(name) for name in names], actor="t")
        assert await store.longest_stream_id() == 34
        assert await store.longest_stream_id(after=1, limit=1) == 30
        assert await store.longest_stream_id(after=3) == 12
        assert await store.longest_stream_id(after=0, limit=1) == 1
        assert await store.longest_stream_id(after=10**30, limit=10**30) == 0

    async def test_given_recorded_at_and_actor_are_kept_exactly(self, store: EventStore) -> None:
        moment = dt.datetime(
            2025, 5, 1, 14, 30, 5, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2))
        )
        moved = event("org:ice", recorded_at=moment, actor="importer")
        await store.append([moved], actor="someone-else")

        (stored,) = await store.read_all()
        assert stored.actor == "importer"
        assert stored.recorded_at == moment
        assert format_time(stored.recorded_at) == "2025-05-01T12:30:05.123456Z"
        assert stored.hash == recorded_hash(GENESIS_HASH, stored)

    async def test_a_past_time_from_an_export_line_is_kept_only_on_the_logs_own_chain(
        self, store: EventStore
    ) -> None:
        # into an empty log, an import is a move: its times are kept, whatever its hashes
        moved = event("org:dhs", recorded_at=dt.datetime(2025, 4, 1, tzinfo=dt.UTC), actor="m")
        await store.append([moved._replace(exported_hash="")], actor="t")
        (first,) = await store.read_all()
        moment = dt.datetime(2025, 5, 1, 12, tzinfo=dt.UTC)
        original = event("org:ice", recorded_at=moment, actor="importer")
        # the hash the log that recorded it gave it: what its export line carries
        own_hash = chain_hash(
            first.hash,
            envelope_bytes(
                position=2,
                stream=original.stream,
                version=1,
                event_id=original.event_id,
                type=original.type,
                schema_version=1,
                data=original.data,
                recorded_at=format_time(moment),
                actor="importer",
                meta={},
            ),
        )
        # an event recorded then elsewhere would make this log say it knew it then
        for given in ("", "0" * 64):
            with pytest.raises(RecordedAtRefused, match="is in the past"):
                await store.append([original._replace(exported_hash=given)], actor="t")
        assert await store.count() == 1
        # more of the same log (a mirror catching up) keeps its time
        assert (await store.append([original._replace(exported_hash=own_hash)], actor="t")) == (
            AppendResult((2,), 1)
        )
        stored = (await store.read_all())[-1]
        assert (stored.recorded_at, stored.hash) == (moment, own_hash)
        # one that brings no time is stamped now
        later = event("org:ice", actor="x")
        assert (await store.append([later._replace(exported_hash="")], actor="t")).appended == 1
        assert (await store.verify()).ok

    async def test_positions_are_gap_free_and_versions_count_per_stream(
        self, store: EventStore
    ) -> None:
        await store.append([event("a"), event("b")], actor="t")
        await store.append([event("a")], actor="t")
        await store.append([event("c"), event("a"), event("b")], actor="t")

        stored = await store.read_all()
        assert [e.position for e in stored] == [1, 2, 3, 4, 5, 6]
        assert [(e.stream, e.version) for e in stored] == [
            ("a", 1),
            ("b", 1),
            ("a", 2),
            ("c", 1),
            ("a", 3),
            ("b", 2),
        ]

    async def test_multi_stream_batch_is_atomic(self, store: EventStore) -> None:
        result = await store.append(
            [event("a"), event("b")], expected={"a": "no_stream", "b": "no_stream"}, actor="t"
        )
        assert result.positions == (1, 2)
        head = await store.head()

        with pytest.raises(ConcurrencyError) as refused:
            await store.append(
                [event("c"), event("a"), event("b")],
                expected={"c": "no_stream", "a": 1, "b": 7},
                actor="t",
            )
        assert refused.value.stream == "b"
        assert refused.value.actual == 1
        assert await store.head() == head
        assert await store.count() == 2
        assert await store.read_stream("c") == []

    # --- expected versions ----------------------------------------------------------------

    async def test_expected_version_exact(self, store: EventStore) -> None:
        await store.append([event("s")], expected={"s": "no_stream"}, actor="t")
        await store.append([event("s")], expected={"s": 1}, actor="t")

        with pytest.raises(ConcurrencyError) as stale:
            await store.append([event("s")], expected={"s": 1}, actor="t")
        assert (stale.value.expected, stale.value.actual) == (1, 2)
        with pytest.raises(ConcurrencyError):
            await store.append([event("s")], expected={"s": 3}, actor="t")
        assert [e.version for e in await store.read_stream("s")] == [1, 2]

    async def test_a_batch_fails_when_a_stream_it_depends_on_has_moved(
        self, store: EventStore
    ) -> None:
        await store.append([event("ancestor")], expected={"ancestor": "no_stream"}, actor="t")
        read_at_one = PendingBatch([event("child")], {"child": "no_stream"}, "t", {"ancestor": 1})
        assert succeeded((await store.append_batches([read_at_one]))[0]).positions == (2,)
        await store.append([event("ancestor")], expected={"ancestor": 1}, actor="t")
        stale = PendingBatch([event("child")], {"child": 1}, "t", {"ancestor": 1})
        (refused,) = await store.append_batches([stale])
        assert isinstance(refused, ConcurrencyError)
        assert (refused.stream, refused.expected, refused.actual) == ("ancestor", 1, 2)
        assert await store.count() == 3
        # A dependency on a stream that does not exist yet holds until it does.
        unborn = PendingBatch([event("child")], {"child": 1}, "t", {"later": "no_stream"})
        assert succeeded((await store.append_batches([unborn]))[0]).positions == (4,)

    async def test_expected_version_of_a_stream_the_batch_does_not_write(
        self, store: EventStore
    ) -> None:
        # A guard on a stream the batch only read: write to "b" only while "a" is at 1.
        await store.append([event("a")], actor="t")
        with pytest.raises(ConcurrencyError) as stale:
            await store.append([event("b")], expected={"a": 7}, actor="t")
        assert (stale.value.stream, stale.value.expected, stale.value.actual) == ("a", 7, 1)
        with pytest.raises(ConcurrencyError):
            await store.append([event("b")], expected={"a": "no_stream"}, actor="t")
        with pytest.raises(ConcurrencyError) as unborn:
            await store.append([event("b")], expected={"unborn": 1}, actor="t")
        assert unborn.value.actual is None
        assert await store.count() == 1
        guarded = event("b")
        kept = await store.append([guarded], expected={"a": 1, "unborn": "no_stream"}, actor="t")
        assert kept.positions == (2,)
        # Once written, a retry is answered with its positions, however far "a" has moved.
        await store.append([event("a")], actor="t")
        retry = await store.append([guarded], expected={"a": 1}, actor="t")
        assert retry == AppendResult((2,), 0)

    async def test_expected_no_stream(self, store: EventStore) -> None:
        await store.append([event("s")], expected={"s": "no_stream"}, actor="t")
        with pytest.raises(ConcurrencyError) as exists:
            await store.append([event("s")], expected={"s": "no_stream"}, actor="t")
        assert exists.value.actual == 1
        # Version 0 is the same promise as no_stream.
        await store.append([event("fresh")], expected={"fresh": 0}, actor="t")
        with pytest.raises(ConcurrencyError) as missing:
            await store.append([event("other")], expected={"other": 4}, actor="t")
        assert missing.value.actual is None
        assert await store.count() == 2

    async def test_expected_any(self, store: EventStore) -> None:
        await store.append([event("s")], expected={"s": "any"}, actor="t")
        await store.append([event("s")], expected={"s": "any"}, actor="t")
        await store.append([event("s")], actor="t")
        assert [e.version for e in await store.read_stream("s")] == [1, 2, 3]

    # --- idempotent event ids -------------------------------------------------------------

    async def test_same_id_and_content_returns_original_positions(self, store: EventStore) -> None:
        first, second = event("s"), event("s")
        original = await store.append([first, second], expected={"s": "no_stream"}, actor="t")
        await store.append([event("s")], actor="t")

        # A retry succeeds although its expected version is stale: nothing new is written.
        retry = await store.append([first, second], expected={"s": "no_stream"}, actor="t")
        assert retry == AppendResult(original.positions, 0)
        assert retry.already_present == 2
        assert await store.count() == 3

        partly_new = await store.append([second, event("s")], actor="t")
        assert partly_new == AppendResult((2, 4), 1)

    async def test_same_id_with_other_content_is_refused(self, store: EventStore) -> None:
        kept = event("s", {"title": "Director"})
        await store.append([event("s"), kept], actor="t")
        head = await store.head()

        for impostor in (
            event("s", {"title": "Deputy"}, event_id=kept.event_id),
            event("elsewhere", {"title": "Director"}, event_id=kept.event_id),
            event("s", {"title": "Director"}, event_id=kept.event_id, type="test.other"),
        ):
            with pytest.raises(DuplicateEventError) as refused:
                await store.append([event("s"), impostor], actor="t")
            assert refused.value.position == 2
            assert refused.value.event_id == kept.event_id
        assert await store.head() == head

    async def test_same_id_twice_in_one_batch_is_refused(self, store: EventStore) -> None:
        twice = event("s")
        with pytest.raises(DuplicateEventError):
            await store.append([twice, twice], actor="t")
        assert await store.count() == 0

    # --- group commit ---------------------------------------------------------------------

    async def test_group_commit_writes_the_good_batches_only(self, store: EventStore) -> None:
        taken = event("existing")
        await store.append([taken], actor="t")

        outcomes = await store.append_batches(
            [
                PendingBatch([event("a")], {"a": "no_stream"}, "t1"),
                # Refused: batch one already created "a"; its event for "b" must not appear.
                PendingBatch([event("b"), event("a")], {"a": "no_stream"}, "t2"),
                PendingBatch([event("b")], {"b": "no_stream"}, "t3"),
                PendingBatch([event("c", event_id=taken.event_id)], {}, "t4"),
                PendingBatch([event("a")], {"a": 1}, "t5"),
                PendingBatch([taken], {"existing": "no_stream"}, "t6"),
            ]
        )

        assert succeeded(outcomes[0]).positions == (2,)
        assert isinstance(outcomes[1], ConcurrencyError)
        assert succeeded(outcomes[2]).positions == (3,)
        assert isinstance(outcomes[3], DuplicateEventError)
        assert succeeded(outcomes[4]).positions == (4,)
        assert succeeded(outcomes[5]) == AppendResult((1,), 0)
        stored = await store.read_all()
        assert [(e.position, e.stream, e.version, e.actor) for e in stored] == [
            (1, "existing", 1, "t"),
            (2, "a", 1, "t1"),
            (3, "b", 1, "t3"),
            (4, "a", 2, "t5"),
        ]
        assert (await store.verify()).ok
        assert await store.append_batches([]) == []

    async def test_a_group_reports_its_progress_forward_on_the_loop_thread(
        self, store: EventStore
    ) -> None:
        # given a group larger than the store's reporting step, with a refused batch in it
        events = [event(f"stream-{n % 50}") for n in range(PROGRESS_STEP + 2_500)]
        reports: list[tuple[int, int, int]] = []

        def progress(done: int, total: int) -> None:
            reports.append((done, total, threading.get_ident()))

        # when it is appended with a progress callback
        outcomes = await store.append_batches(
            [
                PendingBatch(events, {}, "t"),
                PendingBatch([event("stream-0")], {"stream-0": "no_stream"}, "t"),
            ],
            progress,
        )

        # then every step is reported done at the end, two per event of the group (the
        # refused one's counted as done), only forward, and on this thread; the last step
        # only once the group is committed
        assert [done for done, _, _ in reports].count(2 * (len(events) + 1)) == 1
        assert succeeded(outcomes[0]).appended == len(events)
        assert isinstance(outcomes[1], ConcurrencyError)
        total = 2 * (len(events) + 1)
        assert reports[-1][:2] == (total, total)
        dones = [done for done, _, _ in reports]
        assert dones == sorted(set(dones))
        assert len(dones) >= 3  # during the layout, during the inserts, at the end
        assert {total_ for _, total_, _ in reports} == {total}
        assert {thread for _, _, thread in reports} == {threading.get_ident()}

    async def test_a_group_s_inserts_are_reported_as_they_end_before_its_commit(
        self, store: EventStore
    ) -> None:
        # given a group of two events: four steps, two to lay the rows out, two to insert them
        reports: list[tuple[int, int]] = []
        # when it is appended with a progress callback
        (outcome,) = await store.append_batches(
            [PendingBatch([event("a"), event("b")], {}, "t")],
            lambda done, total: reports.append((done, total)),
        )
        await asyncio.sleep(0.01)  # (a SQLite store reports from its thread, via the loop)
        # then the rows inserted are reported (one step short of the end) before the commit
        # is: a bar does not stand still through the inserts, then jump to the end
        assert succeeded(outcome).appended == 2
        assert reports == [(3, 4), (4, 4)]

    async def test_a_group_refused_whole_is_not_reported_done(self, store: EventStore) -> None:
        await store.append([event("a")], actor="t")
        reports: list[tuple[int, int]] = []
        (outcome,) = await store.append_batches(
            [PendingBatch([event("a")], {"a": "no_stream"}, "t")],
            lambda done, total: reports.append((done, total)),
        )
        await asyncio.sleep(0.01)  # (a SQLite store reports from its thread, via the loop)
        assert isinstance(outcome, ConcurrencyError)
        assert (2, 2) not in reports

    async def test_a_failing_progress_callback_does_not_fail_the_write(
        self, store: EventStore
    ) -> None:
        handled: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(lambda _, context: handled.append(context))
        calls: list[int] = []

        def broken(done: int, total: int) -> None:
            calls.append(done)
            raise RuntimeError("the bar broke")

        (outcome,) = await store.append_batches(
            [PendingBatch([event("a"), event("b")], {}, "t")], broken
        )
        await asyncio.sleep(0.01)  # (a SQLite store reports from its thread, via the loop)
        assert succeeded(outcome).appended == 2
        assert await store.count() == 2
        assert len(calls) == 1
        assert [str(context["exception"]) for context in handled] == ["the bar broke"]

    async def test_a_group_of_stored_events_reports_every_step_done(
        self, store: EventStore
    ) -> None:
        # given events already stored
        stored = [event("a"), event("b")]
        await store.append(stored, actor="t")
        reports: list[tuple[int, int]] = []
        # when they are appended again with a progress callback
        (outcome,) = await store.append_batches(
            [PendingBatch(stored, {}, "t")], lambda done, total: reports.append((done, total))
        )
        # then nothing is written, and the callback still hears that the group is done
        assert succeeded(outcome).appended == 0
        assert reports == [(4, 4)]

    # --- reading --------------------------------------------------------------------------

    async def test_read_stream_and_read_streams(self, store: EventStore) -> None:
        await store.append([event("a"), event("b"), event("a")], actor="t")
        await store.append([event("c"), event("a")], actor="t")

        assert [e.version for e in await store.read_stream("a")] == [1, 2, 3]
        assert await store.read_stream("missing") == []
        found = await store.read_streams(["b", "a", "missing", "a"])
        assert set(found) == {"a", "b"}
        assert [e.position for e in found["a"]] == [1, 3, 5]
        assert [e.position for e in found["b"]] == [2]
        assert await store.read_streams([]) == {}

    async def test_find_event_ids(self, store: EventStore) -> None:
        one, two = event("a"), event("b")
        await store.append([one, two, event("c")], actor="t")

        found = await store.find_event_ids([two.event_id, uuid.uuid4(), one.event_id])
        assert set(found) == {one.event_id, two.event_id}
        assert found[two.event_id].position == 2
        assert found[one.event_id] == (await store.read_all())[0]
        assert await store.find_event_ids([]) == {}

    async def test_get_head_and_count(self, store: EventStore) -> None:
        assert await store.head() == (0, GENESIS_HASH)
        assert await store.count() == 0
        assert await store.get(1) is None

        await store.append([event("a"), event("b"), event("c")], actor="t")
        stored = await store.read_all()
        assert await store.get(2) == stored[1]
        assert await store.get(0) is None
        assert await store.get(4) is None
        assert await store.head() == (3, stored[2].hash)
        assert await store.count() == 3

    async def test_read_all_after_and_limit(self, store: EventStore) -> None:
        await store.append([event(f"s{i}") for i in range(6)], actor="t")

        assert [e.position for e in await store.read_all(after=2, limit=2)] == [3, 4]
        assert [e.position for e in await store.read_all(after=4)] == [5, 6]
        assert await store.read_all(after=6) == []
        assert len(await store.read_all(limit=0)) == 0

    async def test_positions_beyond_what_storage_holds_ask_for_nothing_more(
        self, store: EventStore
    ) -> None:
        await store.append([event("a"), event("b")], actor="t")
        huge = 10**30  # beyond SQLite INTEGER and PostgreSQL BIGINT

        assert await store.read_all(after=huge) == []
        assert [e.position for e in await store.read_all(limit=huge)] == [1, 2]
        assert [e.position for e in await store.read_all(after=-huge)] == [1, 2]
        assert await store.read_all(limit=-1) == []
        assert await store.get(huge) is None
        assert await store.get(-huge) is None

    async def test_iterate_pages_through_everything(self, store: EventStore) -> None:
        await store.append([event(f"s{i % 3}") for i in range(10)], actor="t")

        assert [e.position async for e in store.iterate(page=3)] == list(range(1, 11))
        assert [e.position async for e in store.iterate(after=4, page=3)] == list(range(5, 11))
        assert [e.position async for e in store.iterate(after=1, page=9)] == list(range(2, 11))
        assert [e async for e in store.iterate(after=10)] == []

    # --- integrity ------------------------------------------------------------------------

    async def test_verify_clean_log(self, store: EventStore) -> None:
        empty = await store.verify()
        assert (empty.ok, empty.count, empty.head_position) == (True, 0, 0)
        assert empty.head_hash == GENESIS_HASH

        await store.append([event("a"), event("b")], actor="t")
        await store.append([event("a")], actor="t")
        report = await store.verify()
        assert (report.ok, report.count, report.first_bad_position) == (True, 3, None)
        assert (report.head_position, report.head_hash) == await store.head()

    async def test_update_and_delete_are_rejected(self, store: EventStore, store_url: str) -> None:
        await store.append([event("a"), event("b")], actor="alice")
        before = await store.read_all()

        with pytest.raises(self.raw_error, match="append-only"):
            await self.execute_raw(
                store_url, "UPDATE events SET actor = 'mallory' WHERE position = 1"
            )
        with pytest.raises(self.raw_error, match="append-only"):
            await self.execute_raw(store_url, "DELETE FROM events WHERE position = 2")
        with pytest.raises(self.raw_error, match="append-only"):
            await self.execute_raw(store_url, "DELETE FROM events")

        assert await store.read_all() == before
        assert (await store.verify()).ok

    async def test_verify_finds_a_tampered_row_at_its_position(
        self, store: EventStore, store_url: str
    ) -> None:
        await store.append([event(f"s{i % 2}") for i in range(5)], actor="t")
        await self.drop_append_only_guard(store_url)
        await self.execute_raw(
            store_url, """UPDATE events SET data = '{"n":-1}' WHERE position = 3"""
        )

        intact = (await store.read_all())[1]
        report = await store.verify()
        assert not report.ok
        assert report.first_bad_position == 3
        assert report.count == 2
        assert report.problem is not None
        # Its head is the last event verified, before the bad one: what still holds.
        assert (report.head_position, report.head_hash) == (2, intact.hash)

    async def test_verify_finds_a_rewritten_row_by_the_next_one_when_its_hash_is_redone(
        self, store: EventStore, store_url: str
    ) -> None:
        # given a row rewritten with its own hash recomputed, so that it checks out alone
        await store.append([event(f"s{i % 2}") for i in range(5)], actor="t")
        before, row = (await store.read_all())[1:3]
        forged = chain_hash(
            before.hash,
            envelope_bytes(
                position=3,
                stream=row.stream,
                version=row.version,
                event_id=row.event_id,
                type=row.type,
                schema_version=row.schema_version,
                data={"n": -1},
                recorded_at=format_time(row.recorded_at),
                actor=row.actor,
                meta=row.meta,
            ),
        )
        await self.drop_append_only_guard(store_url)
        await self.execute_raw(
            store_url,
            f"""UPDATE events SET data = '{{"n":-1}}', hash = '{forged}' WHERE position = 3""",
        )
        # when the chain is verified, then the next row gives it away: each hash chains
        # the one before it, which the rewrite changed
        report = await store.verify()
        assert not report.ok
        assert (report.first_bad_position, report.count) == (4, 3), report

    @pytest.mark.parametrize(
        "edit",
        [
            # Each reads back as the same values: only the stored text tells.
            """data = replace(data, ':', ': ')""",
            """data = '{"n":-1,' || substr(data, 2)""",  # a name twice: the last one counts
            "recorded_at = replace(recorded_at, 'Z', '+00:00')",
            "meta = ' {}'",
        ],
    )
    async def test_verify_checks_the_stored_text_not_what_it_reads_as(
        self, store: EventStore, store_url: str, edit: str
    ) -> None:
        await store.append([event(f"s{i % 2}") for i in range(5)], actor="t")
        before = [e.data for e in await store.read_all()]
        await self.drop_append_only_guard(store_url)
        await self.execute_raw(store_url, f"UPDATE events SET {edit} WHERE position = 3")

        assert [e.data for e in await store.read_all()] == before
        report = await store.verify()
        assert (report.ok, report.first_bad_position, report.count) == (False, 3, 2)
        assert report.problem == "hash does not match the event's content and the previous hash"

    async def test_a_year_stored_with_fewer_than_four_digits_still_reads_and_verifies(
        self, store: EventStore, store_url: str
    ) -> None:
        """Earlier versions wrote a recorded time before the year 1000 that way."""
        await store.append([event("s")], actor="t")
        (stored,) = await store.read_all()
        early = "999-01-01T00:00:00.000000Z"
        text = StoredText('{"n":0}', "{}", early)
        await self.drop_append_only_guard(store_url)
        await self.execute_raw(
            store_url,
            f"UPDATE events SET data = '{text.data}', recorded_at = '{early}', "
            f"hash = '{recorded_hash(GENESIS_HASH, stored, text)}' WHERE position = 1",
        )
        (read,) = await store.read_all()
        assert read.recorded_at == dt.datetime(999, 1, 1, tzinfo=dt.UTC)
        assert (await store.verify()).ok

    async def test_verify_finds_a_row_slipped_in_before_the_chain(
        self, store: EventStore, store_url: str
    ) -> None:
        await store.append([event("s")], actor="t")
        # Inserting needs no trigger dropped: only UPDATE and DELETE are refused.
        await self.execute_raw(
            store_url,
            "INSERT INTO events (position, event_id, stream, version, type, schema_version, "
            "data, recorded_at, actor, meta, hash) "
            f"SELECT 0, {self.new_event_id_sql}, 'x', 1, type, schema_version, data, "
            "recorded_at, actor, meta, hash FROM events WHERE position = 1",
        )
        report = await store.verify()
        assert (report.ok, report.first_bad_position) == (False, 0)
        assert report.problem == "a row at position 0 lies outside the chain (positions start at 1)"

    # A row edited into something that cannot be decoded at all (what each column type lets
    # through on both backends: event_id is a UUID column on PostgreSQL).
    UNREADABLE_EDITS: ClassVar[list[tuple[str, str]]] = [
        ("data = '{not json'", "data '{not json' is not valid JSON"),
        ("data = '[1, 2]'", "data '[1, 2]' is not a JSON object"),
        ("data = '\"text\"'", "is not a JSON object"),
        ("meta = 'null'", "meta 'null' is not a JSON object"),
        ("recorded_at = 'garbage'", "recorded_at 'garbage' is not a time with a UTC offset"),
        ("recorded_at = '2025-05-01T12:00:00'", "is not a time with a UTC offset"),
    ]

    @pytest.mark.parametrize(("edit", "reason"), UNREADABLE_EDITS)
    async def test_verify_reports_a_row_that_cannot_be_decoded_at_its_position(
        self, store: EventStore, store_url: str, edit: str, reason: str
    ) -> None:
        # given a log whose third row was edited into something no event decodes from
        await store.append([event(f"s{i % 2}") for i in range(5)], actor="t")
        await self.drop_append_only_guard(store_url)
        await self.execute_raw(store_url, f"UPDATE events SET {edit} WHERE position = 3")

        # when it is verified, then the chain is broken at exactly that row, with the reason
        report = await store.verify()
        assert (report.ok, report.first_bad_position, report.count) == (False, 3, 2)
        assert report.problem is not None
        assert report.problem.startswith("the stored row cannot be read: "), report.problem
        assert reason in report.problem

    @pytest.mark.parametrize(("edit", "reason"), UNREADABLE_EDITS[:1] + UNREADABLE_EDITS[4:5])
    async def test_reading_a_row_that_cannot_be_decoded_names_its_position(
        self, store: EventStore, store_url: str, edit: str, reason: str
    ) -> None:
        first, _, third = event("a"), event("b"), event("a")
        await store.append([first, _, third, event("c")], actor="t")
        await self.drop_append_only_guard(store_url)
        await self.execute_raw(store_url, f"UPDATE events SET {edit} WHERE position = 3")

        message = f"^event at position 3 cannot be read: {reason}"
        for read in (
            store.read_all(),
            store.read_all(after=2, limit=1),
            store.get(3),
            store.read_stream("a"),
            store.find_event_ids([third.event_id]),
        ):
            with pytest.raises(UnreadableEvent, match=message) as refused:
                await read
            assert refused.value.position == 3
        with pytest.raises(UnreadableEvent, match=message):
            _ = [e async for e in store.iterate()]
        # Every other row still reads.
        assert [e.position for e in await store.read_all(limit=2)] == [1, 2]
        assert [e.position for e in await store.read_all(after=3)] == [4]
        assert (await store.get(1)) is not None
        assert [e.position for e in await store.read_stream("b")] == [2]

    async def test_verify_reports_the_first_bad_row_before_an_unreadable_one(
        self, store: EventStore, store_url: str
    ) -> None:
        # given rows 2 (content edited) and 5 (undecodable) in the same page of reading
        await store.append([event(f"s{i % 3}") for i in range(8)], actor="t")
        await self.drop_append_only_guard(store_url)
        await self.execute_raw(
            store_url, """UPDATE events SET data = '{"n":-1}' WHERE position = 2"""
        )
        await self.execute_raw(store_url, "UPDATE events SET data = '{not json' WHERE position = 5")

        report = await store.verify()
        assert (report.ok, report.first_bad_position, report.count) == (False, 2, 1)
        assert report.problem == "hash does not match the event's content and the previous hash"

    async def test_verify_reports_a_gap_before_an_unreadable_row(
        self, store: EventStore, store_url: str
    ) -> None:
        await store.append([event(f"s{i % 3}") for i in range(8)], actor="t")
        await self.drop_append_only_guard(store_url)
        await self.execute_raw(store_url, "DELETE FROM events WHERE position = 4")
        await self.execute_raw(store_url, "UPDATE events SET data = '{not json' WHERE position = 6")

        report = await store.verify()
        assert (report.ok, report.first_bad_position, report.count) == (False, 4, 3)
        assert report.problem == "position 4 is missing"

    async def test_verify_log_finds_events_removed_from_the_end(
        self, store: EventStore, store_url: str
    ) -> None:
        # given a log of five events that a projection has applied
        await store.append([event(f"s{i % 2}") for i in range(5)], actor="t")
        assert (await verify_log(store)).ok  # no checkpoints yet: the chain alone
        await ProjectionRunner(store, [_Noting()]).catch_up()
        assert (await verify_log(store)).ok
        # when the last two are deleted behind the store's back
        await self.drop_append_only_guard(store_url)
        await self.execute_raw(store_url, "DELETE FROM events WHERE position > 3")
        # then the chain is whole, but the log is not: the projection had seen position 5
        assert (await store.verify()).ok
        report = await verify_log(store)
        assert (report.ok, report.first_bad_position, report.count) == (False, 4, 3)
        assert report.problem == (
            "the log ends at position 3, but projection 'noting' had applied it up to "
            "position 5: events were removed from its end, or it was replaced"
        )
        # and an event appended since does not hide it while the projection is ahead
        await store.append([event("s3")], actor="t")
        assert not (await verify_log(store)).ok

    async def test_two_runs_of_one_runner_at_once_do_not_take_the_log_for_another(
        self, store: EventStore, caplog: pytest.LogCaptureFixture
    ) -> None:
        # given a runner that has applied a log, whose head a first run reads and gets late
        await store.append([event("s0"), event("s1")], actor="t")
        runner = ProjectionRunner(store, [_Recording()])
        await runner.catch_up()
        read_head = store.head
        late = asyncio.Event()

        async def head_answered_late() -> tuple[int, str]:
            answer = await read_head()
            if not late.is_set():
                late.set()
                await asyncio.sleep(0.3)
            return answer

        store.head = head_answered_late  # type: ignore[method-assign]
        try:
            first = asyncio.create_task(runner.catch_up())
            await late.wait()
            # when an event is appended and a second run applies it meanwhile, as a writer
            # waiting for its own event does beside a server's follower
            await store.append([event("s2")], actor="t")
            with caplog.at_level("WARNING", logger="leaderlog.projections"):
                assert await runner.catch_up() == 3
                await first
        finally:
            del store.head
        # then neither run took the log for another one, and nothing was rebuilt
        assert not [r for r in caplog.records if "no longer holds" in r.getMessage()]
        assert [position for position, _ in await _recorded(store)] == [1, 2, 3]

    async def cut_short(self, store: EventStore, store_url: str, after: int) -> None:
        """Delete the events after position ``after`` behind the store's back."""
        await self.drop_append_only_guard(store_url)
        await self.execute_raw(store_url, f"DELETE FROM events WHERE position > {after}")

    @pytest.mark.parametrize("written_again", [2, 6], ids=["to-below-the-end", "beyond-the-end"])
    async def test_a_following_runner_rebuilds_a_log_cut_short_and_written_again(
        self,
        store: EventStore,
        store_url: str,
        written_again: int,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        # given a runner that has applied a log of five events, and goes on following it
        await store.append([event(f"s{i % 2}") for i in range(5)], actor="t")
        runner = ProjectionRunner(store, [_Recording()], page=2)
        await runner.catch_up()
        # when the last three are removed behind the store's back and others appended: at
        # positions the runner has applied (4, 5), or also beyond them
        await self.cut_short(store, store_url, after=2)
        await store.append([event(f"new{i}") for i in range(written_again)], actor="t")
        with caplog.at_level("WARNING", logger="leaderlog.projections"):
            head = await runner.catch_up()
        # then it rebuilt from this log instead of going on from its checkpoint
        assert head == 2 + written_again
        logged = [r.getMessage() for r in caplog.records if "no longer holds" in r.getMessage()]
        assert logged == [
            "the log no longer holds at position 5 the event the projections applied there "
            f"(it ends at {head} now): events were removed from its end, or it was replaced; "
            "rebuilding from this log what was built from another: recording (up to position 5)"
        ]
        # and its read model is a fresh rebuild's, no event skipped
        followed = await _recorded(store)
        assert [position for position, _ in followed] == list(range(1, head + 1))
        assert followed == await _as_rebuilt(store)

    async def test_a_runner_rebuilds_a_log_cut_short_between_two_of_its_pages(
        self, store: EventStore, store_url: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # given a runner catching up on six events two at a time
        await store.append([event(f"s{i % 2}") for i in range(6)], actor="t")
        runner = ProjectionRunner(store, [_Recording()], page=2)
        apply_page = runner._apply_page
        pages = 0

        async def cut_after_the_first_page(
            projections: Sequence[Projection], events: Sequence[RecordedEvent]
        ) -> Any:
            nonlocal pages
            failed = await apply_page(projections, events)
            pages += 1
            if pages == 1:
                # when, once it applied the first page, the log is cut back to its first
                # event behind the store's back and written again
                await self.cut_short(store, store_url, after=1)
                await store.append([event(f"new{i}") for i in range(5)], actor="t")
            return failed

        monkeypatch.setattr(runner, "_apply_page", cut_after_the_first_page)
        assert await runner.catch_up() == 6
        # then it started again from this log's first event, rather than apply the page read
        # from the other one or go on from position 2
        followed = await _recorded(store)
        assert [position for position, _ in followed] == [1, 2, 3, 4, 5, 6]
        assert followed == await _as_rebuilt(store)

    async def test_a_following_runner_goes_on_as_before_on_a_log_left_alone(
        self, store: EventStore
    ) -> None:
        # given a runner following a log that only grows
        await store.append([event("a"), event("b")], actor="t")
        runner = ProjectionRunner(store, [_Recording()], page=2)
        stop = asyncio.Event()
        following = asyncio.create_task(runner.follow(poll_interval=0.02, stop=stop))
        try:
            for batch in range(3):
                await store.append([event(f"more{batch}") for _ in range(3)], actor="t")
            with anyio.fail_after(10):
                while (await runner.status())[0].checkpoint < 11:
                    await asyncio.sleep(0.01)
        finally:
            stop.set()
            with anyio.fail_after(10):
                await following
        # then it applied every event once, and rebuilt nothing
        followed = await _recorded(store)
        assert [position for position, _ in followed] == list(range(1, 12))
        assert followed == await _as_rebuilt(store)
        assert (await verify_log(store)).ok

    async def test_a_runner_checks_the_log_it_follows_without_asking_again_what_it_read(
        self, store: EventStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # given a runner that has applied a log of three events
        await store.append([event(f"s{i}") for i in range(3)], actor="t")
        runner = ProjectionRunner(store, [_Recording()])
        await runner.catch_up()
        looked_up: list[object] = []
        get, query = store.get, store.query

        async def counted_get(position: int) -> RecordedEvent | None:
            looked_up.append(position)
            return await get(position)

        async def counted_query(sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
            if "FROM events WHERE" in sql:
                looked_up.append(sql)
            return await query(sql, parameters)

        monkeypatch.setattr(store, "get", counted_get)
        monkeypatch.setattr(store, "query", counted_query)
        # when it is woken with nothing new, as a follower is at each poll, then the head it
        # reads tells that the log is the one it applied, with no lookup
        assert await runner.catch_up() == 3
        assert looked_up == []
        # and when woken for new events, the event it last read is looked up once, and the
        # head it read then is in the page of new events, not looked up again
        await store.append([event("s3"), event("s4")], actor="t")
        assert await runner.catch_up() == 5
        assert looked_up == [3]
        assert [position for position, _ in await _recorded(store)] == [1, 2, 3, 4, 5]

    async def test_a_follower_rebuilds_a_log_cut_short_behind_its_back(
        self, store: EventStore, store_url: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # given a runner following a log of four events
        await store.append([event(f"s{i}") for i in range(4)], actor="t")
        runner = ProjectionRunner(store, [_Recording()], page=2)
        catch_up, runs = runner.catch_up, 0

        async def counted() -> int:
            nonlocal runs
            runs += 1
            return await catch_up()

        monkeypatch.setattr(runner, "catch_up", counted)
        stop = asyncio.Event()
        following = asyncio.create_task(runner.follow(poll_interval=0.05, stop=stop))
        try:
            with anyio.fail_after(10):
                while (await runner.status())[0].checkpoint < 4:
                    await asyncio.sleep(0.01)
            # when the log is cut back to two events behind the store's back, and one
            # other is appended
            await self.cut_short(store, store_url, after=2)
            await store.append([event("new")], actor="t")
            # then the follower brings its read model to this log's three events
            with anyio.fail_after(10):
                while [p for p, _ in await _recorded(store)] != [1, 2, 3]:
                    await asyncio.sleep(0.01)
            followed = await _recorded(store)
            # and waits for new events again, rather than run over and over while the log
            # is shorter than the one it had seen
            runs_before = runs
            await asyncio.sleep(0.5)
            assert runs - runs_before <= 12
        finally:
            stop.set()
            with anyio.fail_after(10):
                await following
        assert followed == await _as_rebuilt(store)

    async def test_verify_finds_a_deleted_row(self, store: EventStore, store_url: str) -> None:
        await store.append([event(f"s{i % 2}") for i in range(5)], actor="t")
        await self.drop_append_only_guard(store_url)
        await self.execute_raw(store_url, "DELETE FROM events WHERE position = 4")

        report = await store.verify()
        assert (report.ok, report.first_bad_position, report.count) == (False, 4, 3)

    # --- versions checked page by page ----------------------------------------------------

    # Pages of one event, of a few (so that each edit below falls at the start, in the middle
    # and at the end of one), and of the default size.
    VERIFY_PAGES: ClassVar[list[int]] = [1, 2, 3, 4, store_base._VERIFY_PAGE]

    async def forge_chain(self, store: EventStore, store_url: str) -> None:
        """Recompute every hash over the rows as they are now, as someone covering their
        tracks would: then only the versions can tell what was edited."""
        previous, updates = GENESIS_HASH, []
        for recorded, stored in await store.read_all_as_stored(after=0, limit=1000):
            previous = recorded_hash(previous, recorded, stored)
            updates.append(
                f"UPDATE events SET hash = '{previous}' WHERE position = {recorded.position};"
            )
        await self.execute_raw(store_url, " ".join(updates))

    @pytest.mark.parametrize("page", VERIFY_PAGES)
    async def test_verify_follows_each_stream_across_pages(
        self, store: EventStore, store_url: str, page: int, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # given streams that each run through several pages, interleaved
        await store.append([event(f"s{i % 3}") for i in range(7)], actor="t")
        await store.append([event(f"s{i % 5}") for i in range(11)], actor="t")
        monkeypatch.setattr(store_base, "_VERIFY_PAGE", page)

        # when it is verified, page by page, then every version follows the one before
        report = await store.verify()
        assert (report.ok, report.count, report.first_bad_position) == (True, 18, None)
        assert (report.head_position, report.head_hash) == await store.head()
        # and so it does after the chain is recomputed over unchanged rows
        await self.drop_append_only_guard(store_url)
        await self.forge_chain(store, store_url)
        assert (await store.verify()).ok

    async def test_verify_checks_the_versions_of_events_appended_as_it_reads(
        self, store: EventStore, other_store: EventStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # given a log of two streams, which another writer appends to as verify reads it
        await store.append([event(f"s{i % 2}") for i in range(4)], actor="t")
        read_all_as_stored = store.read_all_as_stored

        async def read_as_another_writer_appends(
            after: int, limit: int
        ) -> list[tuple[RecordedEvent, StoredText]]:
            monkeypatch.setattr(store, "read_all_as_stored", read_all_as_stored)
            await other_store.append([event("s0"), event("s1")], actor="t")
            return await read_all_as_stored(after, limit)

        monkeypatch.setattr(store, "read_all_as_stored", read_as_another_writer_appends)

        # when it is verified, then the versions of the events appended meanwhile are checked
        # against the log they were appended to, not one seen before
        report = await store.verify()
        assert (report.ok, report.count, report.first_bad_position) == (True, 6, None)
        assert (report.head_position, report.head_hash) == await store.head()

    # The log the edits below start from, by position: streams a b a c b c a b c, so versions
    # a1 b1 a2 c1 b2 c2 a3 b3 c3. Each edit gives the first bad position, the problem there,
    # and whether it repeats a version (which the unique index must be dropped for).
    VERSION_EDITS: ClassVar[list[Any]] = [
        pytest.param(
            "UPDATE events SET version = -4 WHERE position = 4; "
            "UPDATE events SET version = 1 WHERE position = 6; "
            "UPDATE events SET version = 2 WHERE position = 4;",
            4,
            "stream c version 2 is out of order",
            False,
            id="version-2-moved-before-version-1",
        ),
        pytest.param(
            "UPDATE events SET version = -3 WHERE position = 3; "
            "UPDATE events SET version = 2 WHERE position = 7; "
            "UPDATE events SET version = 3 WHERE position = 3;",
            3,
            "stream a version 3 is out of order",
            False,
            id="version-3-moved-before-version-2",
        ),
        pytest.param(
            "UPDATE events SET stream = 'd' WHERE position = 6",
            6,
            "stream d version 2 is out of order",
            False,
            id="a-stream-whose-first-row-is-version-2",
        ),
        pytest.param(
            "UPDATE events SET version = 4 WHERE position = 7",
            7,
            "stream a version 4 is out of order",
            False,
            id="a-version-skipped",
        ),
        pytest.param(
            "UPDATE events SET version = 0 WHERE position = 2",
            2,
            "stream b version 0 is out of order",
            False,
            id="a-version-below-1",
        ),
        pytest.param(
            f"UPDATE events SET version = {-(2**63)} WHERE position = 2",
            2,
            f"stream b version {-(2**63)} is out of order",
            False,
            id="the-lowest-version-a-column-holds",
        ),
        pytest.param(
            "UPDATE events SET stream = 'a', version = 2 WHERE position = 8",
            8,
            "stream a version 2 is out of order",
            True,
            id="a-version-repeated-pages-later",
        ),
        pytest.param(
            "UPDATE events SET stream = 'a', version = 2 WHERE position = 5",
            5,
            "stream a version 2 is out of order",
            True,
            id="a-version-repeated-soon-after",
        ),
        pytest.param(
            "UPDATE events SET stream = 'a', version = 1 WHERE position = 8",
            8,
            "stream a version 1 is out of order",
            True,
            id="version-1-again-after-the-stream-began",
        ),
        pytest.param(
            "UPDATE events SET stream = 'c', version = 1 WHERE position = 9",
            9,
            "stream c version 1 is out of order",
            True,
            id="version-1-again-in-a-later-page",
        ),
    ]

    @pytest.mark.parametrize("page", VERIFY_PAGES)
    @pytest.mark.parametrize(("edit", "bad", "problem", "repeats"), VERSION_EDITS)
    async def test_verify_finds_versions_out_of_order_whatever_the_page(
        self,
        store: EventStore,
        store_url: str,
        monkeypatch: pytest.MonkeyPatch,
        edit: str,
        bad: int,
        problem: str,
        repeats: bool,
        page: int,
    ) -> None:
        # given a log whose rows were edited so that a stream's versions no longer run 1, 2,
        # 3... in position order (a version repeated once nothing keeps them unique), with
        # every hash recomputed over the edited rows
        await store.append([event(stream) for stream in "abacbcabc"], actor="t")
        await self.drop_append_only_guard(store_url)
        if repeats:
            await self.drop_unique_versions(store_url, indexed=True)
        await self.execute_raw(store_url, edit)
        await self.forge_chain(store, store_url)
        monkeypatch.setattr(store_base, "_VERIFY_PAGE", page)

        # when it is verified, page by page
        report = await store.verify()

        # then the first row out of order is found, wherever the pages break
        assert (report.ok, report.first_bad_position, report.problem) == (False, bad, problem)
        intact = (await store.read_all())[bad - 2]
        assert (report.count, report.head_position, report.head_hash) == (
            bad - 1,
            bad - 1,
            intact.hash,
        )

    @pytest.mark.parametrize(("edit", "bad", "problem", "repeats"), VERSION_EDITS)
    async def test_verify_finds_versions_out_of_order_with_no_index_to_look_them_up_on(
        self,
        store: EventStore,
        store_url: str,
        monkeypatch: pytest.MonkeyPatch,
        edit: str,
        bad: int,
        problem: str,
        repeats: bool,
    ) -> None:
        # given an edited log, as above, whose index on (stream, version) was dropped
        await store.append([event(stream) for stream in "abacbcabc"], actor="t")
        await self.drop_append_only_guard(store_url)
        await self.drop_unique_versions(store_url, indexed=False)
        await self.execute_raw(store_url, edit)
        await self.forge_chain(store, store_url)
        monkeypatch.setattr(store_base, "_VERIFY_PAGE", 2)
        asked: list[str] = []
        query = store.query

        async def noted_query(sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
            asked.append(sql)
            return await query(sql, parameters)

        monkeypatch.setattr(store, "query", noted_query)

        # when it is verified
        report = await store.verify()

        # then the same row is found, without looking versions up in the log (each lookup
        # would read all of it)
        assert (report.ok, report.first_bad_position, report.problem) == (False, bad, problem)
        assert (report.count, report.head_position) == (bad - 1, bad - 1)
        assert store_base._PREVIOUS_VERSIONS not in asked

    # --- recorded times -------------------------------------------------------------------

    async def test_a_recorded_time_before_the_last_event_is_refused(
        self, store: EventStore
    ) -> None:
        # given a log whose last event was recorded now
        await store.append([event("a")], actor="t")
        head, count = await store.head(), await store.count()
        (last,) = await store.read_all()

        # when an import brings an event recorded in 1970, then it is refused, naming both times
        old = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        with pytest.raises(RecordedAtRefused) as refused:
            await store.append([event("b", recorded_at=old), event("c")], actor="t")
        message = str(refused.value)
        assert "recorded_at 1970-01-01T00:00:00.000000Z is before the log's last event" in message
        assert f"({format_time(last.recorded_at)})" in message
        assert "recorded times never go backwards" in message
        # and nothing of its batch is written
        assert (await store.head(), await store.count()) == (head, count)

    async def test_a_recorded_time_in_the_future_is_refused(self, store: EventStore) -> None:
        far = dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt.UTC)
        with pytest.raises(RecordedAtRefused, match="cannot be in the future") as refused:
            await store.append([event("a", recorded_at=far)], actor="t")
        assert "recorded_at 9999-12-31T23:59:59.000000Z is more than 5 minutes after" in str(
            refused.value
        )
        soon = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=10)
        with pytest.raises(RecordedAtRefused, match="cannot be in the future"):
            await store.append([event("a", recorded_at=soon)], actor="t")
        assert await store.count() == 0
        assert (await store.verify()).ok

    async def test_recorded_times_within_a_batch_never_go_backwards(
        self, store: EventStore
    ) -> None:
        later = dt.datetime(2025, 5, 2, tzinfo=dt.UTC)
        earlier = dt.datetime(2025, 5, 1, tzinfo=dt.UTC)
        with pytest.raises(RecordedAtRefused, match="is before the event before it"):
            await store.append(
                [event("a", recorded_at=later), event("b", recorded_at=earlier)], actor="t"
            )
        assert await store.count() == 0
        naive = dt.datetime(2025, 5, 1)
        with pytest.raises(RecordedAtRefused, match="has no UTC offset"):
            await store.append([event("a", recorded_at=naive)], actor="t")
        assert await store.count() == 0

    async def test_an_old_log_moves_into_an_empty_one_with_its_times(
        self, store: EventStore
    ) -> None:
        # given an export's events, recorded long ago, some in the same instant
        times = [dt.datetime(2001, 1, 1, tzinfo=dt.UTC) + dt.timedelta(days=d) for d in (0, 0, 3)]
        moved = [event(f"s{i}", recorded_at=t) for i, t in enumerate(times)]
        await store.append(moved[:2], actor="mover")
        await store.append(moved[2:], actor="mover")

        # then they are kept, and a second import of the same events is no conflict
        assert [e.recorded_at for e in await store.read_all()] == times
        assert await store.append(moved, actor="mover") == AppendResult((1, 2, 3), 0)
        # and a time equal to the last one's, or a little ahead of the clock, is accepted
        await store.append([event("same", recorded_at=times[-1])], actor="t")
        ahead = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=2)
        await store.append([event("ahead", recorded_at=ahead)], actor="t")
        assert (await store.verify()).ok

    async def test_a_refused_time_leaves_the_other_batches_of_a_group_commit(
        self, store: EventStore
    ) -> None:
        await store.append([event("a")], actor="t")
        old = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
        outcomes = await store.append_batches(
            [
                PendingBatch([event("b")], {}, "t1"),
                PendingBatch([event("c", recorded_at=old)], {}, "t2"),
                PendingBatch([event("d")], {}, "t3"),
            ]
        )
        assert succeeded(outcomes[0]).positions == (2,)
        assert isinstance(outcomes[1], RecordedAtRefused)
        assert succeeded(outcomes[2]).positions == (3,)
        assert [e.actor for e in await store.read_all()] == ["t", "t1", "t3"]

    async def test_stamped_times_do_not_go_backwards_when_the_clock_does(
        self, store: EventStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # given an event recorded a minute ahead of the clock (another server's, say)
        ahead = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1)
        await store.append([event("a", recorded_at=ahead)], actor="t")
        # when the next event brings no time, then it is stamped no earlier
        await store.append([event("b")], actor="t")
        # and when this clock then jumps two minutes back, still no earlier
        backend = sys.modules[type(store).__module__]
        behind = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=2)
        if hasattr(backend, "utc_now"):  # PostgreSQL stamps from the database's own clock
            monkeypatch.setattr(backend, "utc_now", lambda: behind)
        await store.append([event("c")], actor="t")

        stamps = [e.recorded_at for e in await store.read_all()]
        assert stamps == [ahead, ahead, ahead]
        assert (await store.verify()).ok

    # --- following ------------------------------------------------------------------------

    async def test_subscribe_yields_existing_then_new_events(self, store: EventStore) -> None:
        await store.append([event("a"), event("b")], actor="t")
        subscription = store.subscribe(after=0, poll_interval=0.05)
        assert isinstance(subscription, AsyncGenerator)

        async def next_event() -> RecordedEvent:
            return await anext(subscription)

        with anyio.fail_after(10):
            existing = [await next_event(), await next_event()]
            waiting = asyncio.create_task(next_event())
            await store.append([event("c")], actor="t")
            new = await waiting
        await subscription.aclose()
        assert [e.position for e in existing] == [1, 2]
        assert (new.position, new.stream) == (3, "c")

    async def test_subscribe_sees_another_writers_commits(
        self, store: EventStore, other_store: EventStore
    ) -> None:
        await store.append([event("a")], actor="t")
        subscription = store.subscribe(after=1, poll_interval=0.05)
        assert isinstance(subscription, AsyncGenerator)

        async def next_event() -> RecordedEvent:
            return await anext(subscription)

        with anyio.fail_after(10):
            waiting = asyncio.create_task(next_event())
            await other_store.append([event("b")], actor="elsewhere")
            new = await waiting
        await subscription.aclose()
        assert (new.position, new.actor) == (2, "elsewhere")

    async def test_a_cancelled_follower_stops_even_as_a_commit_wakes_it(
        self, store: EventStore
    ) -> None:
        """On Python 3.11, asyncio.wait_for drops a cancellation that arrives as its wait
        ends: the follower went on following."""
        for _ in range(10):
            head, _ = await store.head()

            async def follow(after: int = head) -> None:
                async for _ in store.subscribe(after=after, poll_interval=30):
                    pass

            following = asyncio.create_task(follow())
            await asyncio.sleep(0.02)
            await store.append([event("a")], actor="t")
            following.cancel()
            done, _ = await asyncio.wait({following}, timeout=5)
            assert following in done and following.cancelled()

    async def test_closing_the_store_ends_a_waiting_follower_at_once(self, store_url: str) -> None:
        closing = await open_store(store_url)

        async def follow() -> None:
            async for _ in closing.subscribe(after=0, poll_interval=30):
                pass

        following = asyncio.create_task(follow())
        await asyncio.sleep(0.05)
        await closing.close()
        with anyio.fail_after(5), pytest.raises(StoreUnavailable):
            await following

    # The follower last read the event (1), or read nothing yet of one it has heard of (0).
    @pytest.mark.parametrize("last_read", [1, 0])
    async def test_a_wait_on_a_closed_store_ends_at_once(
        self, store_url: str, last_read: int
    ) -> None:
        # given a store that committed an event, then was closed as its follower went from
        # reading to waiting (a server shutting down)
        closing = await open_store(store_url)
        await closing.append([event("a")], actor="t")
        await closing.close()
        # when the follower waits for events after the last it read, then the wait ends at
        # once, rather than at its next poll, and its next read says the store is closed
        with anyio.fail_after(5):
            await closing.wait_for_events(after=last_read, timeout=600)
        with pytest.raises(StoreUnavailable):
            await closing.read_all()

    async def test_a_follower_waits_out_a_moment_the_database_cannot_answer(
        self, store: EventStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        await store.append([event("a")], actor="t")
        read_all = store.read_all
        troubles = iter([StoreUnavailable("PostgreSQL is unavailable: a restart")])

        async def unavailable_once(after: int = 0, limit: int | None = None) -> Any:
            for trouble in troubles:
                raise trouble
            return await read_all(after, limit)

        monkeypatch.setattr(store, "read_all", unavailable_once)
        subscription = store.subscribe(after=0, poll_interval=0.01)
        with anyio.fail_after(5):
            first = await anext(subscription)
        await subscription.aclose()
        assert first.position == 1

    async def test_a_commit_heard_before_a_wait_ends_that_wait_at_once(
        self, store: EventStore
    ) -> None:
        # given a follower that has waited once (on PostgreSQL it listens from then on)
        await store.wait_for_events(after=0, timeout=0.01)
        # and a commit made while it was not waiting (reading what it had been woken for),
        # whose word has reached it (on PostgreSQL, the commit's notification)
        await store.append([event("a")], actor="t")
        await asyncio.sleep(0.3)
        # when it then waits for events after what it last read, then it returns at once,
        # rather than wait out its whole poll for a commit it has already heard of
        with anyio.fail_after(5):
            await store.wait_for_events(after=0, timeout=600)

    async def test_wait_for_events_returns_after_its_timeout(self, store: EventStore) -> None:
        with anyio.fail_after(10):
            await store.wait_for_events(after=0, timeout=0.01)
        assert await store.count() == 0

    # --- projections ----------------------------------------------------------------------

    async def test_projection_transaction_commits(self, store: EventStore) -> None:
        async with store.projection_transaction() as tx:
            await tx.execute(
                "CREATE TABLE IF NOT EXISTS p_contract_items "
                "(id BIGINT PRIMARY KEY, label TEXT NOT NULL, weight DOUBLE PRECISION)"
            )
            await tx.executemany(
                "INSERT INTO p_contract_items (id, label, weight) VALUES (?, ?, ?)",
                [(1, "one", 1.5), (2, "two", 2.0), (3, "?", 0.25)],
            )
            await tx.execute(
                "INSERT INTO p_contract_items (id, label, weight) VALUES (?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET label = excluded.label",
                (2, "deux", 2.0),
            )
            inside = await tx.fetchall("SELECT id, label FROM p_contract_items WHERE id <= ?", (2,))
        assert sorted(inside) == [(1, "one"), (2, "deux")]

        rows = await store.query(
            "SELECT id, label, weight FROM p_contract_items WHERE label <> '?' AND id >= ? "
            "ORDER BY id",
            (1,),
        )
        assert rows == [(1, "one", 1.5), (2, "deux", 2.0)]
        assert await store.query("SELECT COUNT(*) FROM p_contract_items") == [(3,)]

    async def test_projection_transaction_rolls_back_on_error(self, store: EventStore) -> None:
        async with store.projection_transaction() as tx:
            await tx.execute("CREATE TABLE IF NOT EXISTS p_contract_items (id BIGINT PRIMARY KEY)")
            await tx.execute("INSERT INTO p_contract_items (id) VALUES (?)", (1,))

        with pytest.raises(RuntimeError, match="projection failed"):
            async with store.projection_transaction() as tx:
                await tx.execute("INSERT INTO p_contract_items (id) VALUES (?)", (2,))
                await tx.execute("CREATE TABLE p_contract_more (id BIGINT)")
                raise RuntimeError("projection failed")

        assert await store.query("SELECT id FROM p_contract_items ORDER BY id") == [(1,)]
        async with store.projection_transaction() as tx:
            # The table created in the failed transaction is gone too.
            await tx.execute("CREATE TABLE p_contract_more (id BIGINT)")

    # --- a log created for an append that was refused ---------------------------------------

    async def test_a_log_the_store_created_is_removed_while_it_is_empty(
        self, store_url: str
    ) -> None:
        created = await open_store(store_url)
        try:
            assert created.created_log
            assert await created.discard_created_log()
        finally:
            await created.close()
        # the next store finds no log, and creates one again
        again = await open_store(store_url)
        try:
            assert again.created_log
            assert await again.count() == 0
        finally:
            await again.close()

    async def test_a_log_with_events_or_that_the_store_found_is_kept(
        self, store: EventStore, other_store: EventStore
    ) -> None:
        assert store.created_log
        assert not other_store.created_log
        assert not await other_store.discard_created_log()
        # another writer's event is in it
        await other_store.append([event("a")], actor="t")
        assert not await store.discard_created_log()
        assert await store.count() == 1
        assert (await other_store.verify()).ok

    # --- concurrency ----------------------------------------------------------------------

    async def test_concurrent_appends_get_distinct_gap_free_positions(
        self, store: EventStore
    ) -> None:
        results = await asyncio.gather(
            *(store.append([event(f"s{i % 4}"), event("shared")], actor="t") for i in range(40))
        )

        positions = sorted(p for result in results for p in result.positions)
        assert positions == list(range(1, 81))
        for result in results:
            assert result.positions[1] == result.positions[0] + 1
        assert [e.version for e in await store.read_stream("shared")] == list(range(1, 41))
        assert (await store.verify()).ok

    async def test_one_winner_per_expected_version_across_stores(
        self, store: EventStore, other_store: EventStore
    ) -> None:
        await store.append([event("contested")], actor="t")

        async def attempt(target: EventStore, index: int) -> bool:
            try:
                await target.append(
                    [event("contested")], expected={"contested": 1}, actor=f"w{index}"
                )
            except ConcurrencyError:
                return False
            return True

        outcomes = await asyncio.gather(
            *(attempt(store if i % 2 else other_store, i) for i in range(10))
        )
        assert outcomes.count(True) == 1
        assert [e.version for e in await store.read_stream("contested")] == [1, 2]
