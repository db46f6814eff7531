"""A user projection that blocks the event loop past the time limit, where no timer can
stop it: its page is rolled back once it returns, as one stopped at the limit."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import ClassVar

import pytest

from leaderlog.errors import ProjectionFailed
from leaderlog.events import RecordedEvent
from leaderlog.log import EventLog
from leaderlog.projections import ProjectionRunner, ProjectionTransaction
from leaderlog.projections.base import Projection
from tests.projections.logs import SEED_COUNT


class Blocking(Projection):
    """Writes a row per event, and on ``blocks_at`` blocks after writing it (a
    ``time.sleep``, or a long loop in Python) with no await left for a timer to stop."""

    name: ClassVar[str] = "blocking"
    version: ClassVar[int] = 1
    blocks_at = 0
    blocks_for = 0.0

    def schema(self) -> Sequence[str]:
        return ("CREATE TABLE IF NOT EXISTS p_blocking_seen (position BIGINT PRIMARY KEY)",)

    def tables(self) -> Sequence[str]:
        return ("p_blocking_seen",)

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        for recorded in events:
            await tx.execute(
                "INSERT INTO p_blocking_seen (position) VALUES (?)", (recorded.position,)
            )
            if recorded.position == self.blocks_at:
                time.sleep(self.blocks_for)


async def test_a_page_that_blocked_past_the_time_limit_is_not_kept(
    seeded_log: EventLog,
) -> None:
    # given a user projection that blocks past the limit on event 5, after its last await
    blocking = Blocking()
    blocking.blocks_at, blocking.blocks_for = 5, 0.5
    runner = ProjectionRunner(seeded_log.store, [blocking], page=10, user_apply_seconds=0.3)
    # when catching up, then the page is rolled back and the projection stops before event 5,
    # as when a timer stops it at the limit
    with pytest.raises(ProjectionFailed, match="could not apply event 5: apply"):
        await asyncio.wait_for(runner.catch_up(), timeout=30)
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses == {"blocking": 4}
    rows = await seeded_log.store.query("SELECT position FROM p_blocking_seen ORDER BY position")
    assert rows == [(1,), (2,), (3,), (4,)]


async def test_a_page_that_blocked_within_the_time_limit_is_kept(seeded_log: EventLog) -> None:
    # given the same projection, blocking well within the limit
    blocking = Blocking()
    blocking.blocks_at, blocking.blocks_for = 5, 0.01
    runner = ProjectionRunner(seeded_log.store, [blocking], page=10, user_apply_seconds=2)
    # when catching up, then every event is applied
    await asyncio.wait_for(runner.catch_up(), timeout=30)
    rows = await seeded_log.store.query("SELECT COUNT(*) FROM p_blocking_seen")
    assert rows[0][0] == SEED_COUNT


async def test_postgres_a_page_that_blocked_past_the_time_limit_is_not_kept(
    seeded_postgres_log: EventLog,
) -> None:
    await test_a_page_that_blocked_past_the_time_limit_is_not_kept(seeded_postgres_log)
