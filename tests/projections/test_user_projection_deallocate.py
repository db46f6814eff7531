"""A user projection's statement that would outlive its page on the database connection."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import pytest

from leaderlog.errors import ProjectionFailed
from leaderlog.events import RecordedEvent
from leaderlog.log import EventLog
from leaderlog.projections import LeadershipProjection, ProjectionRunner, ProjectionTransaction
from leaderlog.projections.base import Projection
from tests.projections.logs import SEED_COUNT


class Deallocating(Projection):
    """Counts events, then drops the connection's prepared statements (``statement``)."""

    name: ClassVar[str] = "deallocating"
    version: ClassVar[int] = 1
    statement = "DEALLOCATE ALL"

    def schema(self) -> Sequence[str]:
        return ("CREATE TABLE IF NOT EXISTS p_deallocating_seen (position BIGINT PRIMARY KEY)",)

    def tables(self) -> Sequence[str]:
        return ("p_deallocating_seen",)

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await tx.executemany(
            "INSERT INTO p_deallocating_seen (position) VALUES (?)",
            [(event.position,) for event in events],
        )
        await tx.execute(self.statement)


DEALLOCATING = ["DEALLOCATE ALL", "deallocate prepare all", "SELECT 1; DEALLOCATE ALL"]


async def _stops_alone_and_the_store_still_answers(log: EventLog, statement: str) -> str:
    deallocating = Deallocating()
    deallocating.statement = statement
    runner = ProjectionRunner(log.store, [LeadershipProjection(), deallocating], page=10)
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    (failure,) = raised.value.failures
    # Every later statement on the connections the page used still runs, the built-ins' too.
    for _ in range(3):
        statuses = {status.name: status.checkpoint for status in await runner.status()}
        assert statuses == {"leadership": SEED_COUNT, "deallocating": 0}
        assert len(await log.store.read_all()) == SEED_COUNT
        with pytest.raises(ProjectionFailed):
            await runner.catch_up()
    assert await log.store.query("SELECT COUNT(*) FROM p_deallocating_seen") == [(0,)]
    return str(failure)


@pytest.mark.parametrize("statement", DEALLOCATING)
async def test_postgres_deallocating_prepared_statements_stops_only_its_projection(
    seeded_postgres_log: EventLog, statement: str
) -> None:
    said = await _stops_alone_and_the_store_still_answers(seeded_postgres_log, statement)
    assert said.startswith("projection deallocating could not apply events 1-10: ")
    assert "may not do this: " in said
    assert "prepared statements" in said


@pytest.mark.parametrize("statement", DEALLOCATING)
async def test_sqlite_refuses_deallocating_in_the_same_words(
    seeded_log: EventLog, statement: str
) -> None:
    said = await _stops_alone_and_the_store_still_answers(seeded_log, statement)
    assert "may not do this: " in said
    assert "prepared statements" in said
