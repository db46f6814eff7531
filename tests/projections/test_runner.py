"""The runner: checkpoints commit with rows, versions rebuild, follow, rebuild = incremental."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

import leaderlog
from leaderlog.errors import (
    Interrupted,
    ProjectionError,
    ProjectionFailed,
    ProjectionFailure,
    StoreUnavailable,
)
from leaderlog.events import PersonRegistered, RecordedEvent
from leaderlog.log import EventLog
from leaderlog.projections import (
    BUILTIN,
    LeadershipProjection,
    Projection,
    ProjectionRunner,
    ProjectionTransaction,
    Queries,
    payload,
    runner_for,
)
from leaderlog.projections.runner import forget_projection
from leaderlog.store import open_store
from leaderlog.store.base import EventStore
from tests.projections.logs import (
    FOX,
    GORDON_ACTING,
    HAMMER_CAPTION,
    SEED_COUNT,
    append,
    current,
    failure_location,
    record,
    seed_records,
)


async def dump(store: EventStore, projections: Sequence[Projection]) -> dict[str, list[Any]]:
    """Every row of every table of the projections, in a stable order."""
    tables: dict[str, list[Any]] = {}
    for projection in projections:
        for table in projection.tables():
            tables[table] = sorted(await store.query(f"SELECT * FROM {table}"), key=repr)
    return tables


def builtins() -> list[Projection]:
    return [cls() for cls in BUILTIN.values()]


FOLLOW_UPS = [
    record(
        "source.registered",
        source="ice-release",
        url="https://www.ice.gov/news/release",
        publisher="ICE",
        published={"date": "2025-06-10"},
    ),
    record("claim.confirmed", claim=GORDON_ACTING, source="ice-release"),
    record(
        "claim.corrected",
        claim=HAMMER_CAPTION,
        changes={"capacity": "unspecified", "locator": "body"},
        reason="Caption fixed.",
    ),
    record("person.updated", person="derek-gordon", aliases=["D. Gordon"]),
    record("claim.retracted", claim=f"{FOX}-miller-wh-dcos", reason="Misattributed."),
]


class Exploding(Projection):
    """Writes a row for every event, and fails on the event at ``fail_at``."""

    name: ClassVar[str] = "exploding"
    version: ClassVar[int] = 1
    fail_at = 0
    tries = 0

    def schema(self) -> Sequence[str]:
        return (f"CREATE TABLE IF NOT EXISTS p_{self.name}_seen (position BIGINT PRIMARY KEY)",)

    def tables(self) -> Sequence[str]:
        return (f"p_{self.name}_seen",)

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        self.tries += 1
        await tx.executemany(
            f"INSERT INTO p_{self.name}_seen (position) VALUES (?)", [(e.position,) for e in events]
        )
        if any(event.position == self.fail_at for event in events):
            raise RuntimeError("boom")


async def a_failing_projection_stops_alone(log: EventLog) -> None:
    """Given/when/then shared with the PostgreSQL tests (savepoints behave alike on both)."""
    # given a projection that fails while applying position 15, in pages of 10
    exploding = Exploding()
    exploding.fail_at = 15
    leadership = LeadershipProjection()
    runner = ProjectionRunner(log.store, [leadership, exploding], page=10)
    # when catching up
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    # then the error names the projection, the events and where the cause was raised
    (failure,) = raised.value.failures
    assert (failure.name, failure.first, failure.last) == ("exploding", 11, 20)
    assert str(failure).startswith(
        "projection exploding could not apply events 11-20: RuntimeError: boom ("
    )
    assert f"{Path(__file__).name}, line " in str(failure)
    # and the failed page left nothing of it: neither rows nor its checkpoint moved past 10
    statuses = {status.name: status for status in await runner.status()}
    assert statuses["exploding"].checkpoint == 10
    seen = await log.store.query("SELECT MAX(position) FROM p_exploding_seen")
    assert seen == [(10,)]
    # while the projection that did not fail went on to the head
    assert statuses["leadership"].checkpoint == SEED_COUNT
    # and once the fault is gone, it carries on from its checkpoint
    exploding.fail_at = 0
    assert await runner.catch_up() == SEED_COUNT
    count = await log.store.query("SELECT COUNT(*) FROM p_exploding_seen")
    assert count == [(SEED_COUNT,)]


class BadStatement(Exploding):
    """Like :class:`Exploding`, but what fails is a statement the database refuses."""

    name: ClassVar[str] = "bad_statement"

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await super().apply(tx, events)
        await tx.execute("INSERT INTO p_bad_statement_no_such_table VALUES (1)")


async def a_refused_statement_stops_only_its_projection(log: EventLog) -> None:
    """After the database refused one projection's statement, the transaction still works
    for the others (PostgreSQL aborts a whole transaction unless a savepoint is rolled back)."""
    runner = ProjectionRunner(log.store, [BadStatement(), LeadershipProjection()], page=10)
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    assert raised.value.names == ("bad_statement",)
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses == {"bad_statement": 0, "leadership": SEED_COUNT}
    assert await log.store.query("SELECT COUNT(*) FROM p_bad_statement_seen") == [(0,)]


async def test_a_refused_statement_stops_only_its_projection(seeded_log: EventLog) -> None:
    await a_refused_statement_stops_only_its_projection(seeded_log)


async def test_rows_and_checkpoint_commit_together_and_a_failure_stops_only_its_projection(
    seeded_log: EventLog,
) -> None:
    await a_failing_projection_stops_alone(seeded_log)


async def test_a_changed_version_rebuilds_the_projection(seeded_log: EventLog) -> None:
    runner = ProjectionRunner(seeded_log.store, [LeadershipProjection()])
    await runner.catch_up()
    before = await dump(seeded_log.store, [LeadershipProjection()])
    await seeded_log.store.query("SELECT 1")

    class LeadershipNext(LeadershipProjection):
        version = LeadershipProjection.version + 1

    # given rows left by the current version that the next would never write
    async with seeded_log.store.projection_transaction() as tx:
        await tx.execute(
            "INSERT INTO p_leadership_persons (person, known_from, known_to, name, aliases) "
            "VALUES ('stale', 1, 2, 'Stale Row', '[]')"
        )
    upgraded = ProjectionRunner(seeded_log.store, [LeadershipNext()])
    await upgraded.catch_up()
    (status,) = await upgraded.status()
    assert (status.version, status.checkpoint, status.lag) == (
        LeadershipNext.version,
        SEED_COUNT,
        0,
    )
    assert await dump(seeded_log.store, [LeadershipProjection()]) == before


async def test_incremental_state_equals_a_rebuild(seeded_log: EventLog) -> None:
    # given projections caught up after the seeds, then after two more batches
    runner = await runner_for(seeded_log.store)
    await runner.catch_up()
    await append(seeded_log, FOLLOW_UPS[:2])
    await runner.catch_up()
    await append(seeded_log, FOLLOW_UPS[2:])
    await runner.catch_up()
    incremental = await dump(seeded_log.store, runner.projections)
    # when everything is rebuilt from the log, in small pages
    progress: list[tuple[int, int]] = []
    small_pages = ProjectionRunner(seeded_log.store, builtins(), page=7)
    head = await small_pages.rebuild(progress=lambda done, total: progress.append((done, total)))
    # then the tables are identical, and the progress reached the head
    assert head == SEED_COUNT + len(FOLLOW_UPS)
    assert await dump(seeded_log.store, runner.projections) == incremental
    assert progress[-1] == (head, head)
    assert [done for done, _ in progress] == sorted(done for done, _ in progress)


class Meddling(Projection):
    """A user projection that edits what it is given in place, as careless code may."""

    name: ClassVar[str] = "meddling"
    version: ClassVar[int] = 1

    def schema(self) -> Sequence[str]:
        return ("CREATE TABLE IF NOT EXISTS p_meddling_names (person TEXT PRIMARY KEY, name TEXT)",)

    def tables(self) -> Sequence[str]:
        return ("p_meddling_names",)

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        for event in events:
            data = payload(event)
            if event.type == "person.registered":
                data["name"] = data["name"].upper()
                await tx.execute(
                    "INSERT INTO p_meddling_names VALUES (?, ?)", (data["person"], data["name"])
                )
            if event.type == "claim.reported":
                data["post"] = "elsewhere"
                event.data["person"] = "nobody"
                event.data["attribution"]["kind"] = "rumour"
            event.meta["meddled"] = True
        events.clear()  # type: ignore[attr-defined]  # a Sequence here, a list in fact


async def test_a_user_projection_editing_its_events_changes_no_one_else_s(
    seeded_log: EventLog,
) -> None:
    # given the built-ins as a rebuild alone makes them
    alone = ProjectionRunner(seeded_log.store, builtins())
    await alone.rebuild()
    untouched = await dump(seeded_log.store, alone.projections)
    # when they are rebuilt after a user projection that edits each event it is given,
    # in the same pages
    runner = ProjectionRunner(seeded_log.store, [Meddling(), *builtins()])
    await runner.rebuild()
    # then the built-ins read the log as it is, and the user projection its own edits
    assert await dump(seeded_log.store, alone.projections) == untouched
    names = await seeded_log.store.query("SELECT name FROM p_meddling_names ORDER BY person")
    assert ("ROBERT HAMMER",) in names
    # and having emptied the list of events it was given, it is at the page's end all the same
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses["meddling"] == SEED_COUNT


async def test_rebuild_of_one_projection_leaves_the_others(seeded_log: EventLog) -> None:
    runner = await runner_for(seeded_log.store)
    await runner.catch_up()
    await append(seeded_log, FOLLOW_UPS)
    await runner.rebuild(["audit"])
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    rebuilt = SEED_COUNT + len(FOLLOW_UPS)
    assert statuses == {name: rebuilt if name == "audit" else SEED_COUNT for name in BUILTIN}
    with pytest.raises(ProjectionError, match="unknown projection"):
        await runner.rebuild(["nope"])


async def test_status_reports_lag(seeded_log: EventLog) -> None:
    runner = await runner_for(seeded_log.store)
    assert [tuple(status) for status in await runner.status()] == [
        (name, cls.version, 0, SEED_COUNT, SEED_COUNT) for name, cls in BUILTIN.items()
    ]
    await runner.catch_up()
    assert {status.lag for status in await runner.status()} == {0}


async def test_a_status_read_while_events_are_appended_and_applied_never_lags_below_zero(
    seeded_log: EventLog,
) -> None:
    # given a runner at the head, and events appended and applied while its status is read
    runner = await runner_for(seeded_log.store)
    await runner.catch_up()
    registered = runner.registered

    async def meanwhile_more_is_applied() -> dict[str, tuple[int, int]]:
        head_before = (await seeded_log.store.head())[0]
        await append(seeded_log, FOLLOW_UPS[:2])
        await runner.catch_up()
        assert (await seeded_log.store.head())[0] == head_before + 2
        return await registered()

    runner.registered = meanwhile_more_is_applied  # type: ignore[method-assign]
    # then the head reported is the one the checkpoints were read against: no negative lag
    statuses = await runner.status()
    assert {status.lag for status in statuses} == {0}
    assert {status.head for status in statuses} == {SEED_COUNT + 2}


async def test_a_runner_creates_the_query_indexes_a_rebuild_elsewhere_stopped_before(
    seeded_log: EventLog,
) -> None:
    # given a server's runner at the head, with every query index
    serving = ProjectionRunner(seeded_log.store, builtins())
    await serving.catch_up()
    indexes = (
        "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'p\\_%' ESCAPE '\\'"
    )
    every_index = set(await seeded_log.store.query(indexes))
    assert every_index
    # when another process's rebuild resets the projections and is stopped (Ctrl-C) before
    # the head, where it would have created the query indexes
    rebuilding = ProjectionRunner(seeded_log.store, builtins())
    async with seeded_log.store.projection_transaction() as tx:
        for projection in rebuilding.projections:
            await rebuilding._reset(tx, projection)
    assert set(await seeded_log.store.query(indexes)) < every_index
    # then the server's runner, replaying to the head, creates them
    await serving.catch_up()
    assert set(await seeded_log.store.query(indexes)) == every_index


async def a_foreign_key_an_earlier_version_let_in_does_not_block_a_rebuild(
    log: EventLog, caplog: pytest.LogCaptureFixture
) -> None:
    """Given/when/then shared with the PostgreSQL tests."""
    # given built projections, and a user projection's table with a foreign key to a
    # built-in's (as an earlier version let one in), holding a row that refers to one of it
    await ProjectionRunner(log.store, builtins()).catch_up()
    async with log.store.projection_transaction() as tx:
        await tx.execute(
            "CREATE TABLE p_pinning_sources (source TEXT PRIMARY KEY "
            "REFERENCES p_audit_sources (source))"
        )
        await tx.execute("INSERT INTO p_pinning_sources (source) VALUES (?)", (FOX,))
        await tx.execute(
            "INSERT INTO projection_checkpoints (name, version, position) VALUES (?, 1, ?)",
            ("pinning", SEED_COUNT),
        )
        # when the built-in is at an older version in the database (an upgrade)
        await tx.execute("UPDATE projection_checkpoints SET version = 0 WHERE name = 'audit'")
    # then it is rebuilt all the same, and answers again
    runner = ProjectionRunner(log.store, builtins())
    assert await runner.catch_up() == SEED_COUNT
    assert (await Queries(log.store).audit(source=FOX))["events"]
    # while the pinning table is dropped, its projection to be built again from the log
    assert "p_pinning_sources" not in await log.store.tables()
    assert "pinning" not in await runner.registered()
    assert "p_pinning_sources pinned its rows with foreign keys" in caplog.text


async def test_a_foreign_key_an_earlier_version_let_in_does_not_block_a_rebuild(
    seeded_log: EventLog, caplog: pytest.LogCaptureFixture
) -> None:
    await a_foreign_key_an_earlier_version_let_in_does_not_block_a_rebuild(seeded_log, caplog)


async def test_a_follower_ends_when_its_store_is_closed(sqlite_url: str) -> None:
    store = await open_store(sqlite_url)
    runner = await runner_for(store)
    following = asyncio.create_task(runner.follow(poll_interval=0.05))
    await asyncio.sleep(0.3)
    await store.close()
    with pytest.raises(StoreUnavailable, match="the store is closed"):
        await asyncio.wait_for(following, timeout=10)


async def test_a_failure_whose_cause_runs_over_lines_is_told_in_one(seeded_log: EventLog) -> None:
    class Multiline(Exploding):
        name: ClassVar[str] = "multiline"

        async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
            raise RuntimeError("boom\nsecond line\r\nthird")

    with pytest.raises(ProjectionFailed) as raised:
        await ProjectionRunner(seeded_log.store, [Multiline()]).catch_up()
    told = str(raised.value.failures[0])
    assert "\n" not in told and "\r" not in told
    assert "RuntimeError: boom second line third" in told


async def test_two_runners_never_apply_an_event_twice(seeded_log: EventLog) -> None:
    first = ProjectionRunner(seeded_log.store, builtins(), page=4)
    second = ProjectionRunner(seeded_log.store, builtins(), page=3)
    await asyncio.gather(first.catch_up(), second.catch_up(), first.catch_up())
    alone = await dump(seeded_log.store, builtins())
    await ProjectionRunner(seeded_log.store, builtins()).rebuild()
    assert await dump(seeded_log.store, builtins()) == alone


async def test_follow_applies_new_events_live(seeded_log: EventLog) -> None:
    runner = await runner_for(seeded_log.store)
    stop = asyncio.Event()
    follower = asyncio.create_task(runner.follow(poll_interval=0.05, stop=stop))
    try:
        positions = await append(seeded_log, FOLLOW_UPS[:2])
        for _ in range(400):
            statuses = await runner.status()
            if all(status.checkpoint == positions[-1] for status in statuses):
                break
            await asyncio.sleep(0.01)
        assert {status.checkpoint for status in await runner.status()} == {positions[-1]}
    finally:
        stop.set()
        await asyncio.wait_for(follower, timeout=10)
    answer = await current(seeded_log)
    claim = await answer.claim(GORDON_ACTING)
    assert claim["status"] == "confirmed"


async def test_follow_goes_on_with_the_others_when_a_projection_fails(
    seeded_log: EventLog, caplog: pytest.LogCaptureFixture
) -> None:
    # given a follower over a built-in and a projection that fails on the next event
    exploding = Exploding()
    exploding.fail_at = SEED_COUNT + 1
    runner = ProjectionRunner(seeded_log.store, [LeadershipProjection(), exploding])
    await runner.catch_up()
    stop = asyncio.Event()
    follower = asyncio.create_task(runner.follow(poll_interval=0.01, stop=stop))
    try:
        # when that event and another are appended
        positions = await append(seeded_log, FOLLOW_UPS[:1])
        positions += await append(seeded_log, FOLLOW_UPS[1:2])
        for _ in range(400):
            checkpoints = {status.name: status.checkpoint for status in await runner.status()}
            if follower.done() or checkpoints["leadership"] == positions[-1]:
                break
            await asyncio.sleep(0.01)
        # then the built-in follows them, while the failing one stays at its checkpoint,
        # and the follower goes on, having said why
        assert not follower.done(), follower.exception()
        checkpoints = {status.name: status.checkpoint for status in await runner.status()}
        assert checkpoints == {"leadership": positions[-1], "exploding": SEED_COUNT}
        assert "projection exploding could not apply event" in caplog.text
        # and with nothing more appended, it is not tried again at every poll: each try of
        # a failing page holds the write lock
        tried = exploding.tries
        await asyncio.sleep(0.3)
        assert exploding.tries == tried
    finally:
        stop.set()
        await asyncio.wait_for(follower, timeout=10)


async def head_read_one_event_short(
    log: EventLog, monkeypatch: pytest.MonkeyPatch, *, reads: int | None = None
) -> None:
    """The store's head read one event short of the log, as when an event is appended between
    reading the head and reading the page: the first ``reads`` times, or every time."""
    (one_short,) = await log.store.read_all(after=SEED_COUNT - 2, limit=1)
    real_head = log.store.head
    short = 0

    async def head() -> tuple[int, str]:
        nonlocal short
        if reads is not None and short >= reads:
            return await real_head()
        short += 1
        return one_short.position, one_short.hash

    monkeypatch.setattr(log.store, "head", head)


async def test_a_run_reading_events_appended_after_its_head_says_the_others_stand_past_it(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a projection failing on the last event, and the head read one event short of it,
    # as when an event is appended between reading the head and reading the page
    exploding = Exploding()
    exploding.fail_at = SEED_COUNT
    runner = ProjectionRunner(seeded_log.store, [LeadershipProjection(), exploding])
    await head_read_one_event_short(seeded_log, monkeypatch)
    # when it catches up, reading a page that holds that event too
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    # then it says the others stand at that event: a follower waiting for events past the
    # head it read would have tried the failing projection again at once, with nothing new
    assert raised.value.position == SEED_COUNT
    monkeypatch.undo()
    checkpoints = {status.name: status.checkpoint for status in await runner.status()}
    assert checkpoints["leadership"] == SEED_COUNT


class Trespassing(Exploding):
    """Declares the log's own table as one of its tables: a rebuild would drop it."""

    name: ClassVar[str] = "trespassing"

    def tables(self) -> Sequence[str]:
        return (*super().tables(), "events")


async def test_a_projection_naming_tables_it_does_not_own_is_left_out(seeded_log: EventLog) -> None:
    # given a runner over a built-in and a projection that declares the log's table
    runner = ProjectionRunner(seeded_log.store, [LeadershipProjection(), Trespassing()])
    # when rebuilding everything, then the trespasser alone is refused, naming what it claims
    with pytest.raises(ProjectionFailed) as raised:
        await runner.rebuild()
    (failure,) = raised.value.failures
    assert failure.name == "trespassing"
    assert str(failure).startswith("projection trespassing is left out: ")
    assert (
        f"{Path(__file__).name}: table 'events': it is not its own; its names start with "
        "p_trespassing_; it stays at position 0 until that is fixed"
    ) in str(failure)
    # and nothing of it ran: the log is whole, the built-in was rebuilt
    assert (await seeded_log.store.verify()).count == SEED_COUNT
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses == {"leadership": SEED_COUNT, "trespassing": 0}


async def test_a_builtin_s_own_clash_is_leaderlog_s_bug_and_raises(seeded_log: EventLog) -> None:
    class Greedy(LeadershipProjection):
        def tables(self) -> Sequence[str]:
            return (*super().tables(), "events")

    with pytest.raises(ProjectionError, match="table 'events': it is not its own"):
        ProjectionRunner(seeded_log.store, [Greedy()])


class BrokenSchema(Exploding):
    """Its DDL is well formed enough to pass the ownership check, but the database refuses it."""

    name: ClassVar[str] = "broken_schema"

    def schema(self) -> Sequence[str]:
        return (
            *super().schema(),
            "CREATE INDEX IF NOT EXISTS p_broken_schema_i ON p_broken_schema_seen (nope)",
        )


async def a_broken_schema_stops_only_its_projection(log: EventLog) -> None:
    """Given/when/then shared with the PostgreSQL tests."""
    # given a projection whose schema the database refuses, beside a built-in
    runner = ProjectionRunner(log.store, [BrokenSchema(), LeadershipProjection()])
    # when catching up
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    # then the failure names the projection and the statement
    (failure,) = raised.value.failures
    assert (failure.name, failure.first, failure.last) == ("broken_schema", None, None)
    assert str(failure).startswith(
        "projection broken_schema could not create its tables: "
        "'CREATE INDEX IF NOT EXISTS p_broken_schema_i ON p_broken_schema_seen (nope)' failed: "
    )
    # and the built-in beside it reached the head, while it has no checkpoint at all
    assert await runner.registered() == {"leadership": (LeadershipProjection.version, SEED_COUNT)}
    # and a rebuild of both reports it again without holding the built-in back
    with pytest.raises(ProjectionFailed, match="broken_schema could not create its tables"):
        await runner.rebuild()
    assert await runner.registered() == {"leadership": (LeadershipProjection.version, SEED_COUNT)}


async def test_a_broken_schema_stops_only_its_projection(seeded_log: EventLog) -> None:
    await a_broken_schema_stops_only_its_projection(seeded_log)


async def test_duplicate_projection_names_are_refused(seeded_log: EventLog) -> None:
    with pytest.raises(ProjectionError, match="unique"):
        ProjectionRunner(seeded_log.store, [LeadershipProjection(), LeadershipProjection()])


async def test_a_rebuild_replays_the_seed_file_identically_in_one_page(sqlite_url: str) -> None:
    async with await EventLog.open(sqlite_url) as log:
        await append(log, seed_records())
        one_page = ProjectionRunner(log.store, builtins(), page=10_000)
        await one_page.catch_up()
        whole = await dump(log.store, builtins())
        single = ProjectionRunner(log.store, builtins(), page=1)
        await single.rebuild()
        assert await dump(log.store, builtins()) == whole


class Busy(Exploding):
    """Finds the database busy while applying position ``fail_at``."""

    name: ClassVar[str] = "busy"

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        if any(event.position == self.fail_at for event in events):
            raise StoreUnavailable("the database is busy")
        await super().apply(tx, events)


async def test_a_busy_database_is_not_a_projection_failure(seeded_log: EventLog) -> None:
    # given a projection that meets a busy database on the page holding position 15
    busy = Busy()
    busy.fail_at = 15
    runner = ProjectionRunner(seeded_log.store, [busy], page=10)
    # when catching up, then the store's error comes out as it is, to be retried
    with pytest.raises(StoreUnavailable, match="busy"):
        await runner.catch_up()
    (status,) = await runner.status()
    assert status.checkpoint == 10
    # and once the database answers again, the same runner carries on
    busy.fail_at = 0
    await runner.catch_up()
    assert (await runner.status())[0].checkpoint == SEED_COUNT


async def test_a_database_busy_while_preparing_is_said_at_once_not_tried_again(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a preparation that finds the database busy (another process holding its lock
    # past the busy timeout)
    runner = ProjectionRunner(seeded_log.store, builtins())
    tries = 0

    async def busy(*, isolate: bool) -> dict[str, ProjectionFailure]:
        nonlocal tries
        tries += 1
        raise StoreUnavailable("database is busy: database is locked")

    monkeypatch.setattr(runner, "_prepare_once", busy)
    # when preparing, then it is busy after one wait for the lock, not after three
    with pytest.raises(StoreUnavailable, match="busy"):
        await runner.prepare()
    assert tries == 1


async def test_a_deadlock_while_preparing_is_tried_again(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a preparation that PostgreSQL fails once to break a deadlock, at once
    runner = ProjectionRunner(seeded_log.store, builtins())
    prepare_once = runner._prepare_once
    tries = 0

    async def deadlocked_once(*, isolate: bool) -> dict[str, ProjectionFailure]:
        nonlocal tries
        tries += 1
        if tries == 1:
            raise StoreUnavailable("database is busy: deadlock detected")
        return await prepare_once(isolate=isolate)

    monkeypatch.setattr(runner, "_prepare_once", deadlocked_once)
    # when preparing, then the second try gets through
    await runner.prepare()
    assert tries == 2


async def test_a_checkpoint_beyond_the_log_s_head_is_rebuilt(seeded_log: EventLog) -> None:
    # given projections caught up, then a checkpoint claiming more than the log holds (as
    # when the events table was replaced by a shorter log)
    runner = await runner_for(seeded_log.store)
    await runner.catch_up()
    expected = await dump(seeded_log.store, runner.projections)
    async with seeded_log.store.projection_transaction() as tx:
        await tx.execute("DELETE FROM p_leadership_clock")
        await tx.execute(
            "UPDATE projection_checkpoints SET position = ? WHERE name = 'leadership'",
            (SEED_COUNT + 5000,),
        )
    # when a runner starts, then that projection is rebuilt from this log
    again = await runner_for(seeded_log.store)
    await again.catch_up()
    assert {s.name: s.checkpoint for s in await again.status()}["leadership"] == SEED_COUNT
    assert await dump(seeded_log.store, again.projections) == expected


async def test_another_version_s_rebuild_is_reported_not_written_over(
    seeded_log: EventLog,
) -> None:
    # given a runner (a server's, say) that prepared its projections, and queries over them
    runner = await runner_for(seeded_log.store)
    await runner.catch_up()
    # when another leaderlog version rebuilds one of them at its own version
    async with seeded_log.store.projection_transaction() as tx:
        await tx.execute("UPDATE projection_checkpoints SET version = 99 WHERE name = 'leadership'")
    # then the runner says so instead of applying rows of one shape to tables of another
    await append(seeded_log, FOLLOW_UPS[:1])
    with pytest.raises(ProjectionError, match="rebuilt by another leaderlog version"):
        await runner.catch_up()
    # and queries say the projection is not theirs to read now, rather than fail on SQL
    with pytest.raises(StoreUnavailable, match="built by another leaderlog version"):
        await Queries(seeded_log.store).state()


class Counting(Exploding):
    """A user projection at version 1; :class:`CountingChanged` is its module, edited."""

    name: ClassVar[str] = "counting"


class CountingChanged(Counting):
    version: ClassVar[int] = 2


async def test_a_user_projection_rebuilt_from_a_changed_module_stops_alone(
    seeded_log: EventLog,
) -> None:
    # given a runner (a server's, say) that loaded a user projection at version 1
    runner = ProjectionRunner(seeded_log.store, [*builtins(), Counting()])
    await runner.catch_up()
    # when a command that loaded the changed module rebuilds it at version 2, and more is
    # appended
    await ProjectionRunner(seeded_log.store, [*builtins(), CountingChanged()]).catch_up()
    await append(seeded_log, FOLLOW_UPS[:2])
    # then the runner reports that projection alone, saying why and what to do
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    (failure,) = raised.value.failures
    assert failure.name == "counting"
    message = str(failure)
    assert "another leaderlog version" not in message
    assert message.startswith("projection counting is left out: this process loaded its module (")
    assert message.endswith(
        "at version 1, but the database holds version 2, rebuilt since from the module as "
        f"changed; it stays at position {SEED_COUNT} until the module is loaded again: "
        "restart the server to load it"
    )
    # while the built-ins went on to the head, and keep following
    statuses = {status.name: status for status in await runner.status()}
    assert {statuses[name].checkpoint for name in BUILTIN} == {SEED_COUNT + 2}
    await append(seeded_log, FOLLOW_UPS[2:3])
    with pytest.raises(ProjectionFailed, match="projection counting is left out"):
        await runner.catch_up()
    statuses = {status.name: status for status in await runner.status()}
    assert {statuses[name].checkpoint for name in BUILTIN} == {SEED_COUNT + 3}
    # and it is listed as it stands in the database, with its lag, versions agreeing
    own = {projection.name: projection.version for projection in runner.projections}
    assert (statuses["counting"].version, own["counting"]) == (2, 2)
    assert statuses["counting"].lag == 3
    claim = await Queries(seeded_log.store).claim(GORDON_ACTING)
    assert claim["status"] == "confirmed"


class Probe(Exploding):
    name: ClassVar[str] = "probe"

    def schema(self) -> Sequence[str]:
        return (*super().schema(), "CREATE TABLE IF NOT EXISTS p_probe_x_more (b TEXT)")


class ProbeX(Exploding):
    name: ClassVar[str] = "probe_x"


class LeadershipOrg(Exploding):
    """A user projection whose name makes the built-in's p_leadership_org_tree its own."""

    name: ClassVar[str] = "leadership_org"


@pytest.mark.parametrize(
    ("projections", "left", "reason"),
    [
        (
            [Probe(), ProbeX()],
            "probe",
            "table 'p_probe_x_more': it belongs to projection probe_x; its names start with "
            "p_probe_",
        ),
        (
            [LeadershipOrg()],
            "leadership_org",
            "the name 'leadership_org' would take p_leadership_org_tree, "
            "p_leadership_org_tree_org from the built-in projection leadership: choose another "
            "name",
        ),
    ],
)
async def test_a_user_projection_clashing_with_another_is_left_out_alone(
    seeded_log: EventLog, projections: list[Projection], left: str, reason: str
) -> None:
    # given user projections beside the built-ins, one declaring a table another owns
    runner = ProjectionRunner(seeded_log.store, [*builtins(), *projections])
    # when catching up, then only the one at fault is reported, with the clash
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    (failure,) = raised.value.failures
    assert failure.name == left
    assert f"{Path(__file__).name}: {reason}; it stays at position 0" in str(failure)
    # and every other projection reached the head, while it built nothing
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses.pop(left) == 0
    assert set(statuses.values()) == {SEED_COUNT}
    assert left not in await runner.registered()


class CountingChangedAndClashing(CountingChanged):
    def tables(self) -> Sequence[str]:
        return (*super().tables(), "p_probe_x_seen")


async def test_a_left_out_projection_is_listed_at_the_version_stored(
    seeded_log: EventLog,
) -> None:
    # given a user projection built at version 1, whose module then changed version and clashes
    await ProjectionRunner(seeded_log.store, [ProbeX(), Counting()]).catch_up()
    runner = ProjectionRunner(seeded_log.store, [ProbeX(), CountingChangedAndClashing()])
    # when a runner leaves it out
    with pytest.raises(
        ProjectionFailed, match=r"projection counting is left out: .*p_probe_x_seen"
    ):
        await runner.catch_up()
    # then its stored version is the one it is listed at: a lagging projection, not another
    # leaderlog's (a health check compares the two)
    own = {projection.name: projection.version for projection in runner.projections}
    statuses = {status.name: status.version for status in await runner.status()}
    assert own == statuses == {"probe_x": 1, "counting": 1}


class ProbeTakingX(Exploding):
    """Names the table of ``probe_x``, whose longer prefix makes it that projection's."""

    name: ClassVar[str] = "probe"

    def schema(self) -> Sequence[str]:
        return ("CREATE TABLE IF NOT EXISTS p_probe_x_seen (position BIGINT PRIMARY KEY)",)

    def tables(self) -> Sequence[str]:
        return ("p_probe_x_seen",)

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await tx.executemany(
            "INSERT INTO p_probe_x_seen (position) VALUES (?)", [(e.position,) for e in events]
        )


async def test_a_projection_built_by_another_process_keeps_its_tables(
    seeded_log: EventLog,
) -> None:
    # given probe_x built by one process, whose module this one does not load
    await ProjectionRunner(seeded_log.store, [ProbeX()]).catch_up()
    # when this one rebuilds a projection that names probe_x's table as its own
    runner = ProjectionRunner(seeded_log.store, [ProbeTakingX()])
    with pytest.raises(ProjectionFailed) as raised:
        await runner.rebuild(["probe"])
    # then it is refused, naming the owner, and probe_x's rows are as they were
    (failure,) = raised.value.failures
    assert "table 'p_probe_x_seen': it belongs to projection probe_x" in str(failure)
    assert await seeded_log.store.query("SELECT COUNT(*) FROM p_probe_x_seen") == [(SEED_COUNT,)]


async def test_a_rebuild_replays_the_projections_its_preparation_emptied(
    seeded_log: EventLog,
) -> None:
    # given a user projection built at version 1, whose module is now at version 2
    await ProjectionRunner(seeded_log.store, [*builtins(), Counting()]).catch_up()
    runner = ProjectionRunner(seeded_log.store, [*builtins(), CountingChanged()])
    # when only the audit projection is rebuilt
    head = await runner.rebuild(["audit"])
    # then the changed projection, emptied for its new version, is replayed with it
    assert runner.also_rebuilt == {"counting": (1, SEED_COUNT)}
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses["counting"] == statuses["audit"] == head == SEED_COUNT
    assert await seeded_log.store.query("SELECT COUNT(*) FROM p_counting_seen") == [(SEED_COUNT,)]


async def test_a_rebuild_leaves_a_projection_that_never_got_past_position_0_alone(
    seeded_log: EventLog,
) -> None:
    # given a projection that fails on the log's first page, so it stays at position 0
    exploding = Exploding()
    exploding.fail_at = 1
    with pytest.raises(ProjectionFailed):
        await ProjectionRunner(seeded_log.store, [*builtins(), exploding]).catch_up()
    # when another process rebuilds only the audit projection
    runner = ProjectionRunner(seeded_log.store, [*builtins(), exploding])
    head = await runner.rebuild(["audit"])
    # then the rebuild is the audit projection's alone: the failing one is not replayed with
    # it (its failure would be the rebuild's), and is still at 0 for the next run
    assert runner.also_rebuilt == {}
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses["audit"] == head == SEED_COUNT
    assert statuses["exploding"] == 0
    with pytest.raises(ProjectionFailed, match="exploding"):
        await runner.catch_up()


class Exiting(Exploding):
    name: ClassVar[str] = "exiting"

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await super().apply(tx, events)
        sys.exit(3)


async def test_a_projection_calling_sys_exit_stops_alone(seeded_log: EventLog) -> None:
    runner = ProjectionRunner(seeded_log.store, [Exiting(), LeadershipProjection()], page=10)
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    (failure,) = raised.value.failures
    assert str(failure).startswith(
        "projection exiting could not apply events 1-10: it called sys.exit(3) ("
    )
    assert f"{Path(__file__).name}, line " in str(failure)
    assert str(failure).endswith(
        ", which would have ended leaderlog itself; it stays at position 0 until that is fixed"
    )
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses == {"exiting": 0, "leadership": SEED_COUNT}
    assert await seeded_log.store.query("SELECT COUNT(*) FROM p_exiting_seen") == [(0,)]


class Interrupting(Exploding):
    name: ClassVar[str] = "interrupting"

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await super().apply(tx, events)
        raise KeyboardInterrupt


async def test_a_projection_raising_keyboard_interrupt_stops_alone(seeded_log: EventLog) -> None:
    runner = ProjectionRunner(seeded_log.store, [Interrupting(), LeadershipProjection()], page=10)
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    (failure,) = raised.value.failures
    assert str(failure).startswith(
        "projection interrupting could not apply events 1-10: it raised KeyboardInterrupt ("
    )
    assert ", which would have stopped leaderlog itself;" in str(failure)
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses == {"interrupting": 0, "leadership": SEED_COUNT}


class CtrlCLanding(Exploding):
    """As if Ctrl-C came while apply ran: the command line's handler raises Interrupted."""

    name: ClassVar[str] = "ctrl_c_landing"

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await super().apply(tx, events)
        raise Interrupted


async def test_ctrl_c_landing_in_apply_stops_the_catch_up_and_keeps_no_part_of_the_page(
    seeded_log: EventLog,
) -> None:
    # given a projection whose page is being applied when Ctrl-C comes
    runner = ProjectionRunner(seeded_log.store, [CtrlCLanding()], page=10)
    # when catching up, then the interruption stops the command, not the projection alone:
    # a query's catch-up said the projection failed, "until that is fixed", and exit 1
    with pytest.raises(Interrupted):
        await runner.catch_up()
    assert runner.failing == {}
    assert await seeded_log.store.query("SELECT COUNT(*) FROM p_ctrl_c_landing_seen") == [(0,)]
    # and the next run goes on from where it was
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses == {"ctrl_c_landing": 0}


class Aborting(Exploding):
    name: ClassVar[str] = "aborting"

    class Abort(BaseException):
        """Neither an Exception nor one of the BaseExceptions the runner names."""

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await super().apply(tx, events)
        raise self.Abort("stop")


async def test_a_projection_raising_another_base_exception_stops_alone(
    seeded_log: EventLog,
) -> None:
    runner = ProjectionRunner(seeded_log.store, [Aborting(), LeadershipProjection()], page=10)
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    (failure,) = raised.value.failures
    assert str(failure).startswith(
        "projection aborting could not apply events 1-10: it raised Abort, a BaseException ("
    )
    assert ", which would have stopped leaderlog;" in str(failure)
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses == {"aborting": 0, "leadership": SEED_COUNT}
    assert await seeded_log.store.query("SELECT COUNT(*) FROM p_aborting_seen") == [(0,)]


async def test_a_runner_lists_the_projections_that_failed_until_they_get_through(
    seeded_log: EventLog,
) -> None:
    # given a projection that fails on position 15
    exploding = Exploding()
    exploding.fail_at = 15
    runner = ProjectionRunner(seeded_log.store, [exploding, LeadershipProjection()], page=10)
    # when it runs, then the runner lists it as failing, with why, and not the other one
    with pytest.raises(ProjectionFailed):
        await runner.catch_up()
    assert list(runner.failing) == ["exploding"]
    assert "RuntimeError: boom" in str(runner.failing["exploding"])
    # and once it gets through, it is taken off the list
    exploding.fail_at = 0
    await runner.catch_up()
    assert runner.failing == {}


class Overreaching(Exploding):
    """Writes its own rows, then runs ``statement`` (set per test)."""

    name: ClassVar[str] = "overreaching"
    statement = ""

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await super().apply(tx, events)
        await tx.execute(self.statement)


async def _log_as_it_was(log: EventLog) -> tuple[object, ...]:
    store = log.store
    return (
        await store.read_all(),
        await store.query("SELECT * FROM p_leadership_orgs ORDER BY org, known_from"),
    )


async def an_overreaching_statement_stops_only_its_projection(log: EventLog, statement: str) -> str:
    """What the projection's failure says; the log, the built-ins and the checkpoints are
    as they would be without it."""
    overreaching = Overreaching()
    overreaching.statement = statement
    leadership = LeadershipProjection()
    await ProjectionRunner(log.store, [leadership]).catch_up()
    before = await _log_as_it_was(log)
    runner = ProjectionRunner(log.store, [leadership, overreaching], page=10)
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    (failure,) = raised.value.failures
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses == {"overreaching": 0, "leadership": SEED_COUNT}
    assert await log.store.query("SELECT COUNT(*) FROM p_overreaching_seen") == [(0,)]
    assert await _log_as_it_was(log) == before
    assert (await log.store.verify()).ok
    return str(failure)


ENDING_THE_TRANSACTION = [
    "COMMIT",
    "rollback",
    "  BEGIN",
    "END",
    "START TRANSACTION",
    "/* a comment first */ COMMIT",
    "-- a comment first\nCOMMIT",
    "SELECT 1; COMMIT",
    # the runner's savepoint, released, rolled back to, or shadowed by one of the same name
    "RELEASE SAVEPOINT one_projection",
    "ROLLBACK TO SAVEPOINT one_projection",
    'SAVEPOINT "ONE_PROJECTION"',
]


@pytest.mark.parametrize("statement", ENDING_THE_TRANSACTION)
async def test_a_statement_ending_the_transaction_stops_only_its_projection(
    seeded_log: EventLog, statement: str
) -> None:
    said = await an_overreaching_statement_stops_only_its_projection(seeded_log, statement)
    assert "a projection's statement may not do this: " in said
    assert "would end the runner's transaction or take its savepoint" in said


async def test_a_read_or_a_batch_may_not_end_the_transaction_either(seeded_log: EventLog) -> None:
    class Reading(Overreaching):
        async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
            await tx.fetchall("COMMIT")

    class Batching(Overreaching):
        async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
            await tx.executemany("COMMIT", [()])

    for projection in (Reading(), Batching()):
        runner = ProjectionRunner(seeded_log.store, [projection], page=10)
        with pytest.raises(ProjectionFailed, match="would end the runner's transaction"):
            await runner.catch_up()


@pytest.mark.parametrize(
    ("statement", "reason"),
    [
        ("DELETE FROM p_leadership_orgs", "changing rows of p_leadership_orgs, which is not"),
        ("UPDATE projection_checkpoints SET position = 0", "changing rows of projection_ch"),
        ("INSERT INTO events SELECT * FROM events WHERE 0", "changing rows of events"),
        ("DROP TRIGGER events_are_append_only_delete", "this kind of statement"),
        ("DROP TABLE p_leadership_orgs", "changing the table p_leadership_orgs, not its own"),
        ("CREATE TABLE p_leadership_more (x TEXT)", "changing the table p_leadership_more"),
        ("CREATE INDEX p_overreaching_i ON events (actor)", "changing an index of events"),
        ("ALTER TABLE p_overreaching_seen RENAME TO write_tokens", "ALTER TABLE p_overreach"),
        ("CREATE INDEX p_audit_events_type ON p_overreaching_seen (position)", "an index nam"),
        ("ANALYZE", "ANALYZE (only its own tables may change)"),
        ("CREATE VIEW p_overreaching_v AS SELECT 1", "CREATE VIEW"),
        ("REINDEX p_leadership_posts_org", "REINDEX p_leadership_posts_org"),
        ("ATTACH DATABASE ':memory:' AS other", "ATTACH"),
        ("PRAGMA foreign_keys = OFF", "PRAGMA foreign_keys"),
    ],
)
async def test_on_sqlite_a_user_projection_changes_only_its_own_tables(
    seeded_log: EventLog, statement: str, reason: str
) -> None:
    said = await an_overreaching_statement_stops_only_its_projection(seeded_log, statement)
    assert f"ProjectionError: a projection's statement may not do this: {reason}" in said
    assert f"{Path(__file__).name}, line " in said


class Dangling(Exploding):
    """Leaves a row whose deferred foreign key refers to nothing: only the page's COMMIT
    would notice, failing every projection's page."""

    name: ClassVar[str] = "dangling"

    def schema(self) -> Sequence[str]:
        return (
            *super().schema(),
            "CREATE TABLE IF NOT EXISTS p_dangling_parent (id TEXT PRIMARY KEY)",
            "CREATE TABLE IF NOT EXISTS p_dangling_child (id TEXT "
            "REFERENCES p_dangling_parent (id) DEFERRABLE INITIALLY DEFERRED)",
        )

    def tables(self) -> Sequence[str]:
        return (*super().tables(), "p_dangling_child", "p_dangling_parent")

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await super().apply(tx, events)
        await tx.execute("INSERT INTO p_dangling_child (id) VALUES ('nobody')")


async def a_dangling_deferred_key_stops_only_its_projection(log: EventLog) -> str:
    runner = ProjectionRunner(log.store, [LeadershipProjection(), Dangling()], page=10)
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses == {"dangling": 0, "leadership": SEED_COUNT}
    assert await log.store.query("SELECT COUNT(*) FROM p_dangling_child") == [(0,)]
    return str(raised.value.failures[0])


async def test_a_dangling_deferred_key_stops_only_its_projection(seeded_log: EventLog) -> None:
    said = await a_dangling_deferred_key_stops_only_its_projection(seeded_log)
    assert "a row of p_dangling_child refers to a row of p_dangling_parent that is not" in said


class Pinning(Exploding):
    """Declares a table whose foreign key points at a built-in's: its rows would pin the
    built-in's, which could then no longer be dropped and rebuilt."""

    name: ClassVar[str] = "pinning"

    def schema(self) -> Sequence[str]:
        return (
            *super().schema(),
            "CREATE TABLE IF NOT EXISTS p_pinning_sources "
            "(source TEXT REFERENCES p_leadership_sources (source))",
        )

    def tables(self) -> Sequence[str]:
        return (*super().tables(), "p_pinning_sources")


async def test_on_sqlite_a_foreign_key_to_another_s_table_leaves_the_projection_out(
    seeded_log: EventLog,
) -> None:
    runner = ProjectionRunner(seeded_log.store, [LeadershipProjection(), Pinning()])
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    (failure,) = raised.value.failures
    assert failure.name == "pinning"
    assert "a foreign key of p_pinning_sources refers to p_leadership_sources, not its own" in str(
        failure
    )
    # and the built-in it pointed at is rebuilt as ever
    rebuilt = ProjectionRunner(seeded_log.store, [LeadershipProjection()])
    assert await rebuilt.rebuild() == SEED_COUNT


class OwnTablesOnly(Exploding):
    """Everything a projection may do with what it owns, and reading what it does not."""

    name: ClassVar[str] = "own_tables_only"

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await super().apply(tx, events)
        await tx.execute("CREATE TABLE IF NOT EXISTS p_own_tables_only_extra (n BIGINT)")
        await tx.execute(
            "CREATE INDEX IF NOT EXISTS p_own_tables_only_n ON p_own_tables_only_extra (n)"
        )
        await tx.execute("INSERT INTO p_own_tables_only_extra SELECT COUNT(*) FROM events")
        await tx.execute("UPDATE p_own_tables_only_extra SET n = n + 1")
        await tx.execute("DELETE FROM p_own_tables_only_extra WHERE n < 0")
        await tx.execute("SAVEPOINT mine")
        await tx.execute("ROLLBACK TO SAVEPOINT mine")
        await tx.execute("RELEASE SAVEPOINT mine")
        await tx.fetchall("PRAGMA table_info(p_own_tables_only_extra)")
        await tx.fetchall("SELECT COUNT(*) FROM p_leadership_orgs")


async def test_a_user_projection_may_do_anything_with_its_own_tables(
    seeded_log: EventLog,
) -> None:
    projection = OwnTablesOnly()
    runner = ProjectionRunner(seeded_log.store, [LeadershipProjection(), projection], page=10)
    assert await runner.catch_up() == SEED_COUNT
    rows = await seeded_log.store.query("SELECT COUNT(*) FROM p_own_tables_only_extra")
    assert rows == [(3,)]


class IgnoringDuplicates(Exploding):
    """Inserts every position twice and catches the second insert's error: fine on SQLite
    alone, while on PostgreSQL the failed statement aborts the transaction."""

    name: ClassVar[str] = "ignoring_duplicates"

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        for event in events:
            for _ in range(2):
                with contextlib.suppress(Exception):
                    await tx.execute(
                        "INSERT INTO p_ignoring_duplicates_seen (position) VALUES (?)",
                        (event.position,),
                    )


class UndoingDuplicates(Exploding):
    """Catches a duplicate as PostgreSQL allows: rolling back to a savepoint of its own."""

    name: ClassVar[str] = "undoing_duplicates"

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        for event in events:
            for _ in range(2):
                await tx.execute("SAVEPOINT one_row")
                try:
                    await tx.execute(
                        f"INSERT INTO p_{self.name}_seen (position) VALUES (?)",
                        (event.position,),
                    )
                except Exception:
                    await tx.execute(self.rollback_to(event.position))
                await tx.execute("RELEASE SAVEPOINT one_row")

    def rollback_to(self, position: int) -> str:
        # the long form of ROLLBACK TO undoes the failure as well
        return (
            "ROLLBACK TO SAVEPOINT one_row"
            if position % 2
            else "ROLLBACK TRANSACTION TO SAVEPOINT one_row"
        )


async def a_caught_statement_error_stops_its_projection_alone(log: EventLog) -> None:
    """Given/when/then shared with the PostgreSQL tests: both databases behave alike."""
    # given a projection that catches its failed statements, before others alphabetically
    runner = ProjectionRunner(
        log.store, [IgnoringDuplicates(), LeadershipProjection(), UndoingDuplicates()], page=10
    )
    # when catching up
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    # then it alone stops, named by the statement's own error at its own line, with the way out
    (failure,) = raised.value.failures
    message = str(failure)
    assert message.startswith("projection ignoring_duplicates could not apply events 1-10: ")
    assert "current transaction is aborted" not in message
    assert f"{Path(__file__).name}, line " in message
    assert (
        "; apply() went on after this statement failed, but on PostgreSQL a failed statement "
        "aborts the projection's work on the page, so leaderlog stops the projection on every "
        "database: avoid the error in SQL instead (INSERT ... ON CONFLICT DO NOTHING rather "
        "than catching a duplicate key, say); it stays at position 0 until that is fixed"
    ) in message
    # and the others, after it too, went on: one that undid its failure itself among them
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses == {
        "ignoring_duplicates": 0,
        "leadership": SEED_COUNT,
        "undoing_duplicates": SEED_COUNT,
    }
    assert await log.store.query("SELECT COUNT(*) FROM p_ignoring_duplicates_seen") == [(0,)]
    assert await log.store.query("SELECT COUNT(*) FROM p_undoing_duplicates_seen") == [
        (SEED_COUNT,)
    ]


async def test_a_caught_statement_error_stops_its_projection_alone(seeded_log: EventLog) -> None:
    await a_caught_statement_error_stops_its_projection_alone(seeded_log)


class CatchingThenUpdating(Exploding):
    """Catches a duplicate key and goes on with an UPDATE, which PostgreSQL refuses because
    the duplicate aborted the transaction."""

    name: ClassVar[str] = "catching_then_updating"

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        table = "p_catching_then_updating_seen"
        for event in events:
            for _ in range(2):
                try:
                    await tx.execute(
                        f"INSERT INTO {table} (position) VALUES (?)", (event.position,)
                    )
                except Exception:
                    await tx.execute(
                        f"UPDATE {table} SET position = ? WHERE position = ?",
                        (event.position, event.position),
                    )


async def a_statement_refused_after_a_caught_one_names_the_caught_one(log: EventLog) -> None:
    """Given/when/then shared with the PostgreSQL tests: the same words on both databases."""
    runner = ProjectionRunner(log.store, [CatchingThenUpdating(), LeadershipProjection()], page=10)
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    message = str(raised.value.failures[0])
    assert "current transaction is aborted" not in message
    assert "; apply() went on after this statement failed" in message
    assert f"{Path(__file__).name}, line " in message


async def test_a_statement_refused_after_a_caught_one_names_the_caught_one(
    seeded_log: EventLog,
) -> None:
    await a_statement_refused_after_a_caught_one_names_the_caught_one(seeded_log)


class Sleeping(Exploding):
    """Takes ``seconds_per_event`` for each event of a page, or ``seconds_at`` on one."""

    name: ClassVar[str] = "sleeping"
    seconds_per_event = 0.0
    slow_at = 0
    seconds_at = 0.0

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await super().apply(tx, events)
        await asyncio.sleep(self.seconds_per_event * len(events))
        if any(event.position == self.slow_at for event in events):
            await asyncio.sleep(self.seconds_at)


async def a_slow_user_projection_holds_back_nobody_for_long(
    log: EventLog, caplog: pytest.LogCaptureFixture
) -> None:
    """Given/when/then shared with the PostgreSQL tests."""
    # given a user projection that takes far too long on position 12, beside a built-in
    sleeping = Sleeping()
    sleeping.slow_at, sleeping.seconds_at = 12, 60
    runner = ProjectionRunner(
        log.store, [sleeping, LeadershipProjection()], page=10, user_apply_seconds=0.3
    )
    # when catching up, then it is stopped at the time limit and goes on with smaller pages
    # until the one event it cannot apply in time
    with pytest.raises(ProjectionFailed) as raised:
        await asyncio.wait_for(runner.catch_up(), timeout=10)
    assert str(raised.value.failures[0]) == (
        "projection sleeping could not apply event 12: apply() took longer than 0.3 s and was "
        "stopped: it runs inside the database's write transaction, which holds back every "
        "writer meanwhile; keep slow work (network calls, sleeps) out of apply; it stays at "
        "position 11 until that is fixed"
    )
    # (a leaderlog error a library user can catch by its public name, with the limit it met)
    timed_out = raised.value.failures[0].cause
    assert isinstance(timed_out, leaderlog.ProjectionTimedOut)
    assert (timed_out.seconds, timed_out.next_page) == (0.3, None)
    going_on = [r.getMessage() for r in caplog.records if "it goes on with pages" in r.getMessage()]
    assert going_on[0].startswith("projection sleeping could not apply events 11-20: ")
    assert going_on[0].endswith("; it goes on with pages of 5 events")
    # (halved until one event is alone, and never grown back into the slow one meanwhile)
    assert [message.split(": ", 1)[0] for message in going_on] == [
        f"projection sleeping could not apply events {pages}"
        for pages in ("11-20", "11-15", "11-12")
    ]
    # while the built-in went on to the head, and the slow one kept what it could apply
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses == {"sleeping": 11, "leadership": SEED_COUNT}
    assert await log.store.query("SELECT MAX(position) FROM p_sleeping_seen") == [(11,)]


async def test_a_slow_user_projection_holds_back_nobody_for_long(
    seeded_log: EventLog, caplog: pytest.LogCaptureFixture
) -> None:
    await a_slow_user_projection_holds_back_nobody_for_long(seeded_log, caplog)


def page_sizes(projection: Projection) -> list[int]:
    """The number of events in each page ``projection`` applies from now on."""
    applied: list[int] = []
    apply = projection.apply

    async def counted(tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        applied.append(len(events))
        await apply(tx, events)

    projection.apply = counted  # type: ignore[method-assign]
    return applied


async def test_a_user_projection_slow_on_big_pages_goes_on_with_smaller_ones(
    seeded_log: EventLog,
) -> None:
    sleeping = Sleeping()
    sleeping.seconds_per_event = 0.03
    runner = ProjectionRunner(seeded_log.store, [sleeping], page=20, user_apply_seconds=0.35)
    assert await runner.catch_up() == SEED_COUNT
    assert await seeded_log.store.query("SELECT COUNT(*) FROM p_sleeping_seen") == [(SEED_COUNT,)]
    # and once it is quick again, its pages grow back to the runner's own
    sleeping.seconds_per_event = 0.0
    await add_persons(seeded_log, 45)
    applied = page_sizes(sleeping)
    await runner.catch_up()
    assert applied == [10, 20, 15]


class EndlessQuery(Exploding):
    """On position ``endless_at``, runs one SQL statement that never ends on its own."""

    name: ClassVar[str] = "endless_query"
    endless_at = 0

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await super().apply(tx, events)
        if any(event.position == self.endless_at for event in events):
            await tx.fetchall(
                "WITH RECURSIVE counting(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM counting) "
                "SELECT COUNT(*) FROM counting"
            )


async def a_user_projections_endless_statement_is_stopped(log: EventLog) -> None:
    """Given/when/then shared with the PostgreSQL tests."""
    # given a user projection whose statement on position 7 never ends, beside a built-in
    endless = EndlessQuery()
    endless.endless_at = 7
    runner = ProjectionRunner(
        log.store, [endless, LeadershipProjection()], page=10, user_apply_seconds=0.3
    )
    # when catching up, then the statement itself is stopped at the time limit (not only
    # the waiting for it), so the page rolls back and the runner goes on
    with pytest.raises(ProjectionFailed) as raised:
        await asyncio.wait_for(runner.catch_up(), timeout=20)
    assert str(raised.value.failures[0]).startswith(
        "projection endless_query could not apply event 7: apply() took longer than 0.3 s"
    )
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses == {"endless_query": 6, "leadership": SEED_COUNT}
    # and the database is free again: an append goes through at once
    appended = log.append_events(
        [PersonRegistered(person="after-endless", name="After Endless")], actor="test"
    )
    assert (await asyncio.wait_for(appended, timeout=5)).appended == 1


async def test_a_user_projections_endless_statement_is_stopped(seeded_log: EventLog) -> None:
    await a_user_projections_endless_statement_is_stopped(seeded_log)


async def add_persons(log: EventLog, count: int) -> None:
    await append(
        log, [record("person.registered", person=f"p-{n}", name=f"P {n}") for n in range(count)]
    )


async def test_builtins_have_no_time_limit(seeded_log: EventLog) -> None:
    class SlowLeadership(LeadershipProjection):
        async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
            await asyncio.sleep(0.2)
            await super().apply(tx, events)

    runner = ProjectionRunner(seeded_log.store, [SlowLeadership()], user_apply_seconds=0.05)
    assert await runner.catch_up() == SEED_COUNT


class CancellingItself(Exploding):
    name: ClassVar[str] = "cancelling_itself"

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await super().apply(tx, events)
        if any(event.position == 5 for event in events):
            raise asyncio.CancelledError


async def test_a_projection_raising_cancelled_error_stops_alone(seeded_log: EventLog) -> None:
    runner = ProjectionRunner(seeded_log.store, [CancellingItself(), LeadershipProjection()])
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    assert str(raised.value.failures[0]).startswith(
        "projection cancelling_itself could not apply events 1-29: it raised CancelledError ("
    )
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses == {"cancelling_itself": 0, "leadership": SEED_COUNT}


async def test_a_runner_cancelled_while_applying_is_still_cancelled(seeded_log: EventLog) -> None:
    sleeping = Sleeping()
    sleeping.slow_at, sleeping.seconds_at = 3, 60
    runner = ProjectionRunner(seeded_log.store, [sleeping], user_apply_seconds=30)
    catching_up = asyncio.create_task(runner.catch_up())
    await asyncio.sleep(0.3)
    catching_up.cancel()
    with pytest.raises(asyncio.CancelledError):
        await catching_up


class BadQueryIndex(Exploding):
    name: ClassVar[str] = "bad_query_index"

    def query_indexes(self) -> Sequence[str]:
        return ("CREATE INDEX IF NOT EXISTS p_bad_query_index_i ON p_bad_query_index_seen (nope)",)


async def test_a_query_index_the_database_refuses_names_its_projection(
    seeded_log: EventLog,
) -> None:
    runner = ProjectionRunner(seeded_log.store, [BadQueryIndex(), LeadershipProjection()])
    with pytest.raises(ProjectionFailed) as raised:
        await runner.rebuild()
    (failure,) = raised.value.failures
    assert str(failure).startswith(
        "projection bad_query_index could not create its tables: 'CREATE INDEX IF NOT EXISTS "
        "p_bad_query_index_i ON p_bad_query_index_seen (nope)' failed: "
    )
    # its rows and the built-in's were applied; the next run reports it again, the same way
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses == {"bad_query_index": SEED_COUNT, "leadership": SEED_COUNT}
    with pytest.raises(ProjectionFailed, match="projection bad_query_index could not create"):
        await runner.catch_up()


async def test_a_refused_statement_is_located_in_the_projection_s_code(
    seeded_log: EventLog,
) -> None:
    runner = ProjectionRunner(seeded_log.store, [BadStatement()])
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    located = failure_location(__file__, "INSERT INTO p_bad_statement_no_such_table")
    assert located in str(raised.value)


async def test_a_user_projection_is_forgotten_with_its_own_tables_only(
    seeded_log: EventLog,
) -> None:
    # given two user projections built, one whose name prefixes the other's
    await ProjectionRunner(seeded_log.store, [ProbeX(), Counting()]).catch_up()
    async with seeded_log.store.projection_transaction() as tx:
        await tx.execute("CREATE TABLE p_probe_more (a TEXT)")
    # when forgetting "probe" (no module needed), then only its own tables go
    tables, position = await forget_projection(
        seeded_log.store, "probe", ["probe_x", "counting", *BUILTIN]
    )
    assert (tables, position) == (["p_probe_more"], None)
    # and forgetting one with a checkpoint drops its tables and that checkpoint
    tables, position = await forget_projection(seeded_log.store, "probe_x", ["counting"])
    assert (tables, position) == (["p_probe_x_seen"], SEED_COUNT)
    assert set(await ProjectionRunner(seeded_log.store, []).registered()) == {"counting"}
    assert await seeded_log.store.query("SELECT COUNT(*) FROM p_counting_seen") == [(SEED_COUNT,)]


def test_a_failure_reads_as_one_line_whatever_the_database_said() -> None:
    """PostgreSQL's messages run over lines ("...\\nDETAIL: ..."): printed escaped, a literal
    \\n showed in the middle of the warning."""
    cause = ValueError('duplicate key value violates unique constraint "x"\nDETAIL:  Key (a)=(1)')
    for failure in (
        ProjectionFailure("probe", None, None, cause),
        ProjectionFailure("probe", 3, 5, cause),
    ):
        text = str(failure)
        assert "\n" not in text
        assert 'constraint "x" DETAIL: Key (a)=(1)' in text


class StoringTimes(Exploding):
    """Stores each event's recorded time as the datetime it is, not as text."""

    name: ClassVar[str] = "storing_times"

    def schema(self) -> Sequence[str]:
        return (f"CREATE TABLE IF NOT EXISTS p_{self.name}_seen (position BIGINT, at TEXT)",)

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await tx.executemany(
            f"INSERT INTO p_{self.name}_seen (position, at) VALUES (?, ?)",
            [(event.position, event.recorded_at) for event in events],
        )


async def test_a_parameter_only_one_database_takes_is_refused_on_both(
    seeded_log: EventLog,
) -> None:
    # given a user projection passing a datetime, which SQLite would store as str() gives
    # it and PostgreSQL refuses
    runner = ProjectionRunner(seeded_log.store, [LeadershipProjection(), StoringTimes()])
    # when catching up, then it stops alone, told what to pass instead
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    (failure,) = raised.value.failures
    assert failure.name == "storing_times"
    assert "parameter 2 of a projection's statement is a datetime: pass None" in str(failure)
    checkpoints = {status.name: status.checkpoint for status in await runner.status()}
    assert checkpoints == {"leadership": SEED_COUNT, "storing_times": 0}


class GeneratedRows(Exploding):
    """Hands executemany a generator of rows, as Python's DB-API lets it."""

    name: ClassVar[str] = "generated_rows"

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await tx.executemany(
            f"INSERT INTO p_{self.name}_seen (position) VALUES (?)",
            ((event.position,) for event in events),
        )


async def test_a_user_projection_s_rows_given_as_a_generator_are_all_written(
    seeded_log: EventLog,
) -> None:
    # given a user projection whose rows are checked before they are written
    runner = ProjectionRunner(seeded_log.store, [GeneratedRows()])
    # when it applies the log, then every row is written, not the spent generator
    await runner.catch_up()
    rows = await seeded_log.store.query("SELECT COUNT(*) FROM p_generated_rows_seen")
    assert rows == [(SEED_COUNT,)]


async def test_a_catch_up_the_database_refuses_says_why_until_one_gets_through(
    sqlite_url: str,
) -> None:
    # given projections built, then the database refusing to move their checkpoints (a
    # right revoked, say: here a trigger)
    async with await EventLog.open(sqlite_url) as log:
        await append(log, seed_records())
        runner = ProjectionRunner(log.store, [cls() for cls in BUILTIN.values()])
        await runner.catch_up()
        assert runner.stalled is None
        database = sqlite_url.removeprefix("sqlite:///")
        with contextlib.closing(sqlite3.connect(database)) as other:
            other.execute(
                "CREATE TRIGGER no_moves BEFORE UPDATE ON projection_checkpoints "
                "BEGIN SELECT RAISE(ABORT, 'checkpoints may not move'); END"
            )
            other.commit()
        await log.append_events([PersonRegistered(person="x1", name="X")], actor="t")
        # when a catch-up fails so, then the runner says it stalled (health lists it), in
        # words that name no file
        with pytest.raises(Exception, match="checkpoints may not move"):
            await runner.catch_up()
        assert runner.stalled == "IntegrityError (the server's log says more)"
        # and once the database lets it through, it no longer does
        with contextlib.closing(sqlite3.connect(database)) as other:
            other.execute("DROP TRIGGER no_moves")
            other.commit()
        await runner.catch_up()
        assert runner.stalled is None


class GoingOnSlowly(Exploding):
    """Never fails; the runner has found it slow and gives it smaller pages."""

    name: ClassVar[str] = "slowly"


def failing_last_beside_one_in_smaller_pages(log: EventLog) -> ProjectionRunner:
    """A runner over a projection failing on the seeds' last event and one the runner has
    found slow, given pages one event short of the seeds (as after it ran out of time)."""
    exploding = Exploding()
    exploding.fail_at = SEED_COUNT
    runner = ProjectionRunner(log.store, [exploding, GoingOnSlowly()])
    runner._smaller_pages[GoingOnSlowly.name] = SEED_COUNT - 1
    return runner


async def test_a_failure_never_says_the_others_stand_past_one_going_on_in_smaller_pages(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a projection failing on the last event, another going on in pages one event short
    # of the log (as after it ran out of time), and the head read one event short, as when an
    # event is appended between reading the head and reading the page
    runner = failing_last_beside_one_in_smaller_pages(seeded_log)
    await head_read_one_event_short(seeded_log, monkeypatch)
    # when it catches up, reading a page that holds that event too
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    monkeypatch.undo()
    # then the position it gives, which a follower waits to see passed before trying again,
    # is one the projection going on has reached: else it would stay behind, with the events
    # it lacks already in the log, until another event is appended
    checkpoints = {status.name: status.checkpoint for status in await runner.status()}
    assert checkpoints[GoingOnSlowly.name] >= raised.value.position


async def test_a_follower_brings_one_going_on_in_smaller_pages_to_the_head_beside_a_failure(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given the same, followed
    runner = failing_last_beside_one_in_smaller_pages(seeded_log)
    await head_read_one_event_short(seeded_log, monkeypatch, reads=1)
    stop = asyncio.Event()
    follower = asyncio.create_task(runner.follow(poll_interval=0.05, stop=stop))
    try:
        # when it follows, with no event appended
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            checkpoints = {s.name: s.checkpoint for s in await runner.status()}
            if checkpoints[GoingOnSlowly.name] == SEED_COUNT:
                break
        # then the projection that goes on has reached the head
        assert checkpoints[GoingOnSlowly.name] == SEED_COUNT
    finally:
        stop.set()
        await asyncio.wait_for(follower, timeout=10)


async def test_a_run_reading_events_appended_after_its_head_returns_where_they_stand(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given the head read one event short of the log, as when an event is appended between
    # reading the head and reading the page
    runner = ProjectionRunner(seeded_log.store, [GoingOnSlowly()])
    await head_read_one_event_short(seeded_log, monkeypatch)
    # when it catches up, reading a page that holds that event too, then it says it stands
    # there (a follower then waits for events after it, not after the head it read)
    assert await runner.catch_up() == SEED_COUNT
