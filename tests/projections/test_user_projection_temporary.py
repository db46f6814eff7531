"""On SQLite a user projection may not make temporary tables, indexes, views or triggers:
they would stay on the connection leaderlog goes on using after the page. The refusal names
the statement, not the schema table SQLite writes first."""

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


class Scratching(Projection):
    """Counts events, then runs ``statement`` (a temporary table to work in, say)."""

    name: ClassVar[str] = "scratching"
    version: ClassVar[int] = 1
    statement = ""

    def schema(self) -> Sequence[str]:
        return ("CREATE TABLE IF NOT EXISTS p_scratching_seen (position BIGINT PRIMARY KEY)",)

    def tables(self) -> Sequence[str]:
        return ("p_scratching_seen",)

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await tx.executemany(
            "INSERT INTO p_scratching_seen (position) VALUES (?)",
            [(event.position,) for event in events],
        )
        await tx.execute(self.statement)


@pytest.mark.parametrize(
    ("statement", "named"),
    [
        ("CREATE TEMP TABLE p_scratching_work (a)", "CREATE TEMP TABLE p_scratching_work"),
        ("CREATE TEMPORARY TABLE p_leadership_posts (a)", "CREATE TEMP TABLE p_leadership_posts"),
        ("CREATE TEMP VIEW p_scratching_view AS SELECT 1", "CREATE TEMP VIEW p_scratching_view"),
    ],
)
async def test_sqlite_a_temporary_table_stops_its_projection_alone_named_as_such(
    seeded_log: EventLog, statement: str, named: str
) -> None:
    scratching = Scratching()
    scratching.statement = statement
    runner = ProjectionRunner(seeded_log.store, [LeadershipProjection(), scratching], page=10)
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    (failure,) = raised.value.failures
    said = str(failure)
    assert f"may not do this: {named} (on SQLite it would stay on the connection" in said
    assert "sqlite_temp_master" not in said
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses == {"leadership": SEED_COUNT, "scratching": 0}
    assert await seeded_log.store.query("SELECT COUNT(*) FROM p_scratching_seen") == [(0,)]
