"""The runner's edges: a name given twice, pages growing back after a rebuild, a schema
refused once, pages and checkpoints moved by another process, a busy database a projection
swallowed, rests, stalls, progress, lag, what a follower says, and left-out projections."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import pytest

from leaderlog.errors import (
    ProjectionError,
    ProjectionFailed,
    ProjectionFailure,
    StoreUnavailable,
    UnreadableEvent,
)
from leaderlog.events import RecordedEvent
from leaderlog.log import EventLog, load_seeds
from leaderlog.projections import (
    BUILTIN,
    LeadershipProjection,
    Projection,
    ProjectionRunner,
    ProjectionTransaction,
)
from leaderlog.projections import runner as runner_module
from leaderlog.projections.runner import forget_projection
from leaderlog.store import sqlite
from tests.conftest import SEEDS
from tests.feeds.logs import confirm
from tests.projections.logs import GORDON_ACTING, SEED_COUNT, append
from tests.projections.test_runner import (
    FOLLOW_UPS,
    Counting,
    CountingChangedAndClashing,
    Exploding,
    Probe,
    ProbeX,
    Sleeping,
    dump,
    page_sizes,
)


async def test_a_rebuild_naming_a_projection_twice_replays_it_once(seeded_log: EventLog) -> None:
    # given the leadership projection as one rebuild makes it
    once = ProjectionRunner(seeded_log.store, [LeadershipProjection()])
    await once.rebuild(["leadership"])
    expected = await dump(seeded_log.store, once.projections)
    # when a library caller names it twice in one rebuild, in pages smaller than the log
    twice = ProjectionRunner(seeded_log.store, [LeadershipProjection()], page=7)
    head = await twice.rebuild(["leadership", "leadership"])
    # then it is replayed once, to the same rows and the head
    assert head == SEED_COUNT
    assert await dump(seeded_log.store, twice.projections) == expected
    assert [(s.name, s.checkpoint) for s in await twice.status()] == [("leadership", SEED_COUNT)]


async def test_a_rebuild_lets_pages_grow_back_from_the_start_not_past_the_old_slow_event(
    seeded_log: EventLog,
) -> None:
    # given a user projection that ran out of time on position 28 and was halved down to
    # pages of one event there
    sleeping = Sleeping()
    sleeping.slow_at, sleeping.seconds_at = 28, 0.6
    runner = ProjectionRunner(seeded_log.store, [sleeping], page=20, user_apply_seconds=0.3)
    with pytest.raises(ProjectionFailed):
        await runner.catch_up()
    # when its module is fixed and it is rebuilt from the log
    sleeping.seconds_at = 0.0
    applied = page_sizes(sleeping)
    assert await runner.rebuild(["sleeping"]) == SEED_COUNT
    # then its pages grow back from the first event on, not only past where it was slow
    assert applied == [1, 2, 4, 8, 14]


async def test_a_schema_failing_once_while_preparing_is_tried_again_not_left_out(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    class CreatedElsewhereAtOnce(Exploding):
        """Its CREATE fails while ``racing``, as when another process creates the same table at
        the same moment on PostgreSQL; the next attempt finds the table there."""

        name: ClassVar[str] = "created_at_once"
        racing = False

        def schema(self) -> Sequence[str]:
            if self.racing:
                # (a statement the database refuses, as the race makes it)
                return ("CREATE TABLE IF NOT EXISTS p_created_at_once_seen (position BIGINT) x",)
            return super().schema()

    # given a user projection whose schema fails at the first attempt to prepare only
    racer = CreatedElsewhereAtOnce()
    runner = ProjectionRunner(seeded_log.store, [racer, LeadershipProjection()])
    prepare_once = runner._prepare_once
    tries = 0

    async def raced_once(*, isolate: bool) -> dict[str, ProjectionFailure]:
        nonlocal tries
        tries += 1
        racer.racing = tries == 1
        return await prepare_once(isolate=isolate)

    monkeypatch.setattr(runner, "_prepare_once", raced_once)
    # when catching up, then preparing is tried again, and both reach the head
    assert await runner.catch_up() == SEED_COUNT
    assert (tries, runner.unprepared) == (2, {})
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses == {"created_at_once": SEED_COUNT, "leadership": SEED_COUNT}


def rewound_before_page(runner: ProjectionRunner, name: str, at: int, to: tuple[int, int]) -> None:
    """Wrap ``runner._checkpoints`` so that, in the page transaction that finds ``name`` at
    ``at``, another process is seen to have moved it to ``to`` (version, position) just before
    (its rows past that position gone, as a rebuild elsewhere that got there would leave them)."""
    checkpoints = runner._checkpoints
    done = False

    async def moved(tx: ProjectionTransaction) -> dict[str, tuple[int, int]]:
        nonlocal done
        stored = await checkpoints(tx)
        if not done and stored.get(name, (0, 0))[1] == at:
            done = True
            await tx.execute(f"DELETE FROM p_{name}_seen WHERE position > ?", (to[1],))
            await tx.execute(
                "UPDATE projection_checkpoints SET version = ?, position = ? WHERE name = ?",
                (*to, name),
            )
            stored = await checkpoints(tx)
        return stored

    runner._checkpoints = moved  # type: ignore[method-assign]


async def test_a_page_is_not_applied_over_a_gap_a_rebuild_elsewhere_left(
    seeded_log: EventLog,
) -> None:
    # given a runner applying pages of 10, and another process that, while it read the
    # page 21-29, rebuilt its projection up to position 19
    exploding = Exploding()
    runner = ProjectionRunner(seeded_log.store, [exploding], page=10)
    rewound_before_page(runner, "exploding", at=20, to=(exploding.version, 19))
    # when catching up
    assert await runner.catch_up() == SEED_COUNT
    # then no event is skipped: position 20 is applied before the page after it
    seen = await seeded_log.store.query("SELECT position FROM p_exploding_seen ORDER BY position")
    assert [position for (position,) in seen] == list(range(1, SEED_COUNT + 1))


async def test_a_catch_up_ends_when_a_rebuild_elsewhere_at_another_version_stops_part_way(
    sqlite_url: str,
) -> None:
    class Turnover(Exploding):
        name: ClassVar[str] = "turnover"

    class TurnoverEdited(Turnover):
        """Its module edited since: version 2, with a bug on position 15."""

        version: ClassVar[int] = 2
        fail_at = 15

    # given a server's runner catching up a backlog in pages of 5, beside a built-in
    log = await EventLog.open(sqlite_url)
    elsewhere = await EventLog.open(sqlite_url)
    try:
        await load_seeds(log, SEEDS)
        server = ProjectionRunner(log.store, [Turnover(), LeadershipProjection()], page=5)
        apply_page = server._apply_page
        pages = 0

        async def rebuilt_elsewhere_after_two_pages(
            projections: Sequence[Projection], events: Sequence[RecordedEvent]
        ) -> list[ProjectionFailure]:
            nonlocal pages
            pages += 1
            if pages == 3:
                # when, between two of its pages, `leaderlog rebuild turnover` with the edited
                # module rebuilds it at version 2, in pages of 10, and fails on position 15
                with pytest.raises(ProjectionFailed):
                    await ProjectionRunner(elsewhere.store, [TurnoverEdited()], page=10).rebuild(
                        ["turnover"]
                    )
            return await apply_page(projections, events)

        server._apply_page = rebuilt_elsewhere_after_two_pages  # type: ignore[method-assign]
        # then the catch-up ends, naming the projection it may no longer write
        with pytest.raises(ProjectionFailed) as raised:
            await asyncio.wait_for(server.catch_up(), timeout=20)
        assert raised.value.names == ("turnover",)
        # and the built-in reached the head, while the other version's rows are left as it made them
        assert await log.store.query(
            "SELECT name, version, position FROM projection_checkpoints ORDER BY name"
        ) == [("leadership", LeadershipProjection.version, SEED_COUNT), ("turnover", 2, 10)]
        assert await log.store.query("SELECT MAX(position) FROM p_turnover_seen") == [(10,)]
    finally:
        await elsewhere.close()
        await log.close()


async def test_a_busy_database_a_user_projection_swallowed_is_still_not_its_failure(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Swallowing(Exploding):
        """Catches whatever its statements raise, as careless code may, and returns."""

        name: ClassVar[str] = "swallowing"

        async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
            with contextlib.suppress(Exception):
                await super().apply(tx, events)

    # given a database that is busy for the user projection's rows of position 15
    executemany = sqlite._SQLiteProjectionTransaction.executemany
    busy = True

    async def busy_on_15(self: Any, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        rows = list(rows)
        if busy and "p_swallowing_seen" in sql and (15,) in rows:
            raise StoreUnavailable("the database is busy")
        await executemany(self, sql, rows)

    monkeypatch.setattr(sqlite._SQLiteProjectionTransaction, "executemany", busy_on_15)
    runner = ProjectionRunner(seeded_log.store, [Swallowing()], page=10)
    # when catching up, then the store's error comes out as it is, to be retried, and is
    # neither the projection's failure nor kept as one
    with pytest.raises(StoreUnavailable, match="busy"):
        await runner.catch_up()
    assert runner.stalled is not None and "busy" in runner.stalled
    assert runner.failing == {}
    assert [(s.name, s.checkpoint) for s in await runner.status()] == [("swallowing", 10)]
    # and once the database answers again, the same runner carries on
    busy = False
    assert await runner.catch_up() == SEED_COUNT


class _Clock:
    """Stands for ``time`` in the runner's module: a monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


async def _failed_once(
    log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> tuple[_Clock, Exploding, ProjectionRunner]:
    """A follower's runner over a user projection that fails at every try, on a clock the
    test moves, after its first failure."""
    clock = _Clock()
    monkeypatch.setattr(runner_module, "time", clock)
    exploding = Exploding()
    exploding.fail_at = 1
    runner = ProjectionRunner(log.store, [exploding], rest_after_failure=True)
    with pytest.raises(ProjectionFailed):
        await runner.catch_up()
    return clock, exploding, runner


async def test_a_failing_user_projection_rests_twice_as_long_each_time_up_to_a_minute(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a follower's runner over a user projection that fails at every try
    clock, exploding, runner = await _failed_once(seeded_log, monkeypatch)
    # when the clock moves on a second at a time, a catch-up at each
    rests = []
    for _ in range(8):
        tried, rest = exploding.tries, 0.0
        while exploding.tries == tried:
            clock.now += 1.0
            rest += 1.0
            with pytest.raises(ProjectionFailed):
                await runner.catch_up()
        rests.append(rest)
    # then its rests double from 2 s, up to a minute
    assert rests == [2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0, 60.0]


async def test_a_user_projection_that_got_through_rests_from_the_start_when_it_fails_again(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a follower's runner over a user projection that failed twice, then got through
    clock, exploding, runner = await _failed_once(seeded_log, monkeypatch)
    clock.now += 2.0
    with pytest.raises(ProjectionFailed):
        await runner.catch_up()
    exploding.fail_at = 0
    clock.now += 4.0
    assert await runner.catch_up() == SEED_COUNT
    # when it fails again on the next event
    exploding.fail_at = SEED_COUNT + 1
    await confirm(seeded_log, GORDON_ACTING)
    with pytest.raises(ProjectionFailed):
        await runner.catch_up()
    # then it is tried again after the first rest, 2 s, not after a longer one
    tried = exploding.tries
    clock.now += 2.0
    with pytest.raises(ProjectionFailed):
        await runner.catch_up()
    assert exploding.tries == tried + 1


async def test_a_rebuild_by_name_tries_a_resting_projection_at_once(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a follower's runner whose user projection failed and rests
    _, exploding, runner = await _failed_once(seeded_log, monkeypatch)
    # when it is fixed and rebuilt by name during its rest
    exploding.fail_at = 0
    assert await runner.rebuild(["exploding"]) == SEED_COUNT
    # then it was replayed at once, to the head
    assert [(s.name, s.checkpoint) for s in await runner.status()] == [("exploding", SEED_COUNT)]
    assert runner.failing == {}


async def test_the_progress_of_a_catch_up_never_passes_its_total(seeded_log: EventLog) -> None:
    # given a runner whose log grows after it read the head it catches up to
    runner = ProjectionRunner(seeded_log.store, [Exploding()])
    read_all = seeded_log.store.read_all
    grown = False

    async def grows_first(*args: Any, **kwargs: Any) -> list[RecordedEvent]:
        nonlocal grown
        if not grown:
            grown = True
            await append(seeded_log, FOLLOW_UPS[:2])
        return await read_all(*args, **kwargs)

    seeded_log.store.read_all = grows_first  # type: ignore[method-assign]
    progress: list[tuple[int, int]] = []
    try:
        # when catching up
        await runner.catch_up(lambda done, total: progress.append((done, total)))
    finally:
        del seeded_log.store.read_all
    # then its progress ends at its total, never past it (a bar would read 31/29)
    assert progress[-1] == (SEED_COUNT, SEED_COUNT)
    assert all(done <= total for done, total in progress)


async def test_a_projection_past_an_edited_row_is_not_listed_as_failing_for_it(
    sqlite_url: str,
) -> None:
    # given a user projection that applied up to position 20 (it failed on the page after)
    async with await EventLog.open(sqlite_url) as log:
        await load_seeds(log, SEEDS)
        exploding = Exploding()
        exploding.fail_at = 21
        with pytest.raises(ProjectionFailed):
            await ProjectionRunner(log.store, [exploding], page=20).catch_up()
    # when the row at position 20 is edited behind the store's back
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as connection:
        connection.execute("DROP TRIGGER events_are_append_only_update")
        connection.execute("UPDATE events SET data = '{not json' WHERE position = 20")
    async with await EventLog.open(sqlite_url) as log:
        exploding.fail_at = 0
        runner = ProjectionRunner(log.store, [exploding, LeadershipProjection()])
        with pytest.raises(UnreadableEvent):
            await runner.catch_up()
        # then the built-in, which needs it, is listed as failing on it; the projection
        # past it is not
        assert {name: (f.first, f.last) for name, f in runner.failing.items()} == {
            "leadership": (20, 20)
        }


async def test_a_projection_forgotten_elsewhere_while_failing_is_no_longer_listed_as_failing(
    seeded_log: EventLog,
) -> None:
    # given a runner whose user projection fails on the next event
    counting = Counting()
    runner = ProjectionRunner(seeded_log.store, [LeadershipProjection(), counting])
    assert await runner.catch_up() == SEED_COUNT
    counting.fail_at = SEED_COUNT + 1
    await confirm(seeded_log, GORDON_ACTING)
    with pytest.raises(ProjectionFailed):
        await runner.catch_up()
    assert set(runner.failing) == {"counting"}
    # when another command forgets it
    await forget_projection(seeded_log.store, "counting", list(BUILTIN))
    # then the runner lets it go, and no longer lists it as failing (a health check would)
    assert await runner.catch_up() == SEED_COUNT + 1
    assert runner.failing == {}


async def _stalled_once(runner: ProjectionRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """``runner`` stalled by a database that could not be reached for one catch-up."""
    store = runner.store

    async def unreachable() -> tuple[int, str]:
        raise StoreUnavailable("the database cannot be reached")

    with monkeypatch.context() as patched:
        patched.setattr(store, "head", unreachable)
        with pytest.raises(StoreUnavailable):
            await runner.catch_up()
    assert runner.stalled is not None


async def test_a_projection_failure_after_a_stall_clears_the_stall(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a runner that stalled on a database that could not be reached
    exploding = Exploding()
    exploding.fail_at = 1
    runner = ProjectionRunner(seeded_log.store, [exploding, LeadershipProjection()])
    await _stalled_once(runner, monkeypatch)
    # when it answers again, and a projection of its own fails
    with pytest.raises(ProjectionFailed):
        await runner.catch_up()
    # then the runner no longer says it stalled: the database answered
    assert runner.stalled is None


async def test_another_version_s_rebuild_after_a_stall_clears_the_stall(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a runner at the head, that then stalled on a database that could not be reached
    runner = ProjectionRunner(seeded_log.store, [LeadershipProjection()])
    await runner.catch_up()
    await _stalled_once(runner, monkeypatch)
    # when it answers again, with the projection rebuilt by another leaderlog version
    async with seeded_log.store.projection_transaction() as tx:
        await tx.execute("UPDATE projection_checkpoints SET version = 99 WHERE name = 'leadership'")
    with pytest.raises(ProjectionError, match="rebuilt by another leaderlog version"):
        await runner.catch_up()
    # then the runner no longer says the database stalled it: health says what ends it
    assert runner.stalled is None


async def test_a_lag_is_never_below_zero_for_a_checkpoint_beyond_the_head(
    seeded_log: EventLog,
) -> None:
    # given a projection whose checkpoint is beyond the log's head (the log was replaced by
    # a shorter one)
    runner = ProjectionRunner(seeded_log.store, [LeadershipProjection()])
    await runner.catch_up()
    async with seeded_log.store.projection_transaction() as tx:
        await tx.execute(
            "UPDATE projection_checkpoints SET position = ? WHERE name = 'leadership'",
            (SEED_COUNT + 10,),
        )
    # when its status is read before a catch-up, then its lag is 0, not negative
    (status,) = await runner.status()
    assert (status.checkpoint, status.head, status.lag) == (SEED_COUNT + 10, SEED_COUNT, 0)


async def test_a_rebuild_of_everything_leaves_a_left_out_projection_s_rows_alone(
    seeded_log: EventLog,
) -> None:
    # given a user projection built at version 1, which a runner leaves out (its module
    # changed and clashes with another's)
    await ProjectionRunner(seeded_log.store, [ProbeX(), Counting()]).catch_up()
    runner = ProjectionRunner(seeded_log.store, [ProbeX(), CountingChangedAndClashing()])
    with pytest.raises(ProjectionFailed):
        await runner.catch_up()
    # when that runner rebuilds everything
    with pytest.raises(ProjectionFailed, match="projection counting is left out"):
        await runner.rebuild()
    # then the left-out projection's rows and checkpoint are as it built them
    assert (await runner.registered())["counting"] == (1, SEED_COUNT)
    assert await seeded_log.store.query("SELECT COUNT(*) FROM p_counting_seen") == [(SEED_COUNT,)]


async def _until(condition: Callable[[], bool]) -> None:
    """Wait until ``condition`` holds (a follower in this loop got that far), for up to 10 s:
    however slowly a busy machine runs it, not for a fixed time it may need longer than."""
    async with asyncio.timeout(10):
        while not condition():
            await asyncio.sleep(0.005)


async def test_follow_says_a_failure_once_while_it_lasts_and_again_after_it_ended(
    seeded_log: EventLog, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a follower at the head, whose database then cannot be reached for a while
    runner = ProjectionRunner(seeded_log.store, [LeadershipProjection()])
    await runner.catch_up()
    head = seeded_log.store.head
    failed = 0  # polls that found the database unreachable
    waited = 0  # polls that went through: the follower then waits for new events
    wait_for_events = seeded_log.store.wait_for_events

    async def unreachable() -> tuple[int, str]:
        nonlocal failed
        failed += 1
        raise StoreUnavailable("the database cannot be reached")

    async def waiting(after: int, timeout: float) -> None:
        nonlocal waited
        waited += 1
        await wait_for_events(after, timeout)

    monkeypatch.setattr(seeded_log.store, "wait_for_events", waiting)
    said = "projections cannot catch up now: the database cannot be reached; retrying"

    def times_said() -> int:
        return sum(record.getMessage() == said for record in caplog.records)

    stop = asyncio.Event()
    with caplog.at_level(logging.WARNING, logger="leaderlog.projections"):
        follower = asyncio.create_task(runner.follow(poll_interval=0.01, stop=stop))
        try:
            await _until(lambda: waited > 0)
            monkeypatch.setattr(seeded_log.store, "head", unreachable)
            # when it stays unreachable over many polls, then it is said once
            await _until(lambda: failed >= 5)
            assert times_said() == 1
            # and when it answers again (a poll goes through), then fails the same way
            # again, it is said again
            monkeypatch.setattr(seeded_log.store, "head", head)
            went_through = waited
            await _until(lambda: waited > went_through)
            monkeypatch.setattr(seeded_log.store, "head", unreachable)
            await _until(lambda: times_said() == 2)
            failing_again = failed
            await _until(lambda: failed >= failing_again + 5)
            assert times_said() == 2
        finally:
            monkeypatch.setattr(seeded_log.store, "head", head)
            stop.set()
            await asyncio.wait_for(follower, timeout=10)


async def test_follow_says_a_left_out_projection_once_while_events_keep_coming(
    seeded_log: EventLog, caplog: pytest.LogCaptureFixture
) -> None:
    # given a follower over a built-in and a user projection it leaves out (a clash)
    runner = ProjectionRunner(seeded_log.store, [LeadershipProjection(), Probe(), ProbeX()])
    stop = asyncio.Event()
    with caplog.at_level(logging.WARNING, logger="leaderlog.projections"):
        follower = asyncio.create_task(runner.follow(poll_interval=0.01, stop=stop))
        try:
            # when events keep being appended, each caught up by the others
            for follow_up in FOLLOW_UPS[:3]:
                await append(seeded_log, [follow_up])
                await asyncio.sleep(0.1)
        finally:
            stop.set()
            await asyncio.wait_for(follower, timeout=10)
    assert {s.name: s.checkpoint for s in await runner.status()}["leadership"] == SEED_COUNT + 3
    # then why it is left out is said once, not at every event
    said = [r.getMessage() for r in caplog.records if "probe is left out" in r.getMessage()]
    assert len(said) == 1, said


async def test_a_rebuild_names_as_also_rebuilt_only_what_its_preparation_emptied(
    seeded_log: EventLog,
) -> None:
    # given a runner whose new user projection stopped part-way through its first replay
    exploding = Exploding()
    exploding.fail_at = 15
    runner = ProjectionRunner(seeded_log.store, [LeadershipProjection(), exploding], page=10)
    with pytest.raises(ProjectionFailed):
        await runner.catch_up()
    # when the same runner rebuilds the built-in alone
    assert await runner.rebuild(["leadership"]) == SEED_COUNT
    # then only the built-in was replayed: the other was not emptied, and is not named
    assert runner.also_rebuilt == {}
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses == {"leadership": SEED_COUNT, "exploding": 10}
