"""A user projection that catches the cancellation stopping it at the time limit."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import ClassVar

import pytest

from leaderlog.errors import ProjectionFailed
from leaderlog.events import RecordedEvent
from leaderlog.log import EventLog
from leaderlog.projections import LeadershipProjection, ProjectionRunner, ProjectionTransaction
from leaderlog.projections.base import Projection
from tests.projections.logs import SEED_COUNT

# Counts to this many before answering: far longer than the tests' time limit.
SLOW_CHECK = (
    "WITH RECURSIVE counting(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM counting "
    "WHERE n < 1000000000) SELECT COUNT(*) FROM counting"
)


class CatchingEverything(Projection):
    """Writes a row per event inside a bare ``except`` (as careless code does), so that the
    runner's stopping it at the limit is caught too: on ``slow_at`` it first runs a slow
    check, on ``sleeps_at`` it first sleeps."""

    name: ClassVar[str] = "catching"
    version: ClassVar[int] = 1
    slow_at = 0
    sleeps_at = 0

    def schema(self) -> Sequence[str]:
        return ("CREATE TABLE IF NOT EXISTS p_catching_seen (position BIGINT PRIMARY KEY)",)

    def tables(self) -> Sequence[str]:
        return ("p_catching_seen",)

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        for recorded in events:
            try:
                if recorded.position == self.slow_at:
                    await tx.fetchall(SLOW_CHECK)
                if recorded.position == self.sleeps_at:
                    await asyncio.sleep(60)
                await tx.execute(
                    "INSERT INTO p_catching_seen (position) VALUES (?)", (recorded.position,)
                )
            except BaseException:  # as careless code does, the stop at the limit included
                pass


async def test_a_page_stopped_at_the_time_limit_is_not_kept_when_apply_catches_it(
    seeded_log: EventLog,
) -> None:
    # given a user projection that catches whatever is raised inside it
    catching = CatchingEverything()
    catching.slow_at = 3
    runner = ProjectionRunner(
        seeded_log.store, [catching, LeadershipProjection()], page=10, user_apply_seconds=0.3
    )
    # when catching up, then the pages stopped at the limit are not committed as if applied:
    # the slow statement on event 3 was stopped, so event 3 is not counted as applied
    with pytest.raises(ProjectionFailed) as raised:
        await asyncio.wait_for(runner.catch_up(), timeout=30)
    (failure,) = raised.value.failures
    assert str(failure).startswith(
        "projection catching could not apply event 3: apply() took longer than 0.3 s"
    )
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses == {"catching": 2, "leadership": SEED_COUNT}
    rows = await seeded_log.store.query("SELECT position FROM p_catching_seen ORDER BY position")
    assert rows == [(1,), (2,)]


async def test_a_sleep_caught_at_the_time_limit_does_not_skip_its_event(
    seeded_log: EventLog,
) -> None:
    # given the same projection, slow on event 5 by sleeping
    catching = CatchingEverything()
    catching.sleeps_at = 5
    runner = ProjectionRunner(seeded_log.store, [catching], page=10, user_apply_seconds=0.3)
    # when catching up, then it stops before event 5 rather than go on past it
    with pytest.raises(ProjectionFailed, match="could not apply event 5: apply"):
        await asyncio.wait_for(runner.catch_up(), timeout=30)
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses == {"catching": 4}


async def test_postgres_a_page_stopped_at_the_time_limit_is_not_kept_when_apply_catches_it(
    seeded_postgres_log: EventLog,
) -> None:
    await test_a_page_stopped_at_the_time_limit_is_not_kept_when_apply_catches_it(
        seeded_postgres_log
    )


async def test_postgres_a_sleep_caught_at_the_time_limit_does_not_skip_its_event(
    seeded_postgres_log: EventLog,
) -> None:
    await test_a_sleep_caught_at_the_time_limit_does_not_skip_its_event(seeded_postgres_log)
