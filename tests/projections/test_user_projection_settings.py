"""A user projection may not change its connection's settings, which would stay for the
statements after it: refused alone, even a statement timeout of 1 ms, which cut short the
very check that finds such a change."""

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


class Impatient(Projection):
    """Counts events, then sets a setting of the session (``setting``)."""

    name: ClassVar[str] = "impatient"
    version: ClassVar[int] = 1
    setting = ""

    def schema(self) -> Sequence[str]:
        return ("CREATE TABLE IF NOT EXISTS p_impatient_seen (position BIGINT PRIMARY KEY)",)

    def tables(self) -> Sequence[str]:
        return ("p_impatient_seen",)

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await tx.executemany(
            "INSERT INTO p_impatient_seen (position) VALUES (?)",
            [(event.position,) for event in events],
        )
        await tx.execute(self.setting)


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ("SELECT set_config('statement_timeout', '1', false)", "statement_timeout"),
        ("SET statement_timeout = 1", "statement_timeout"),
        ("SET lock_timeout = 1", "lock_timeout"),
    ],
)
async def test_postgres_a_projection_changing_a_setting_stops_alone(
    seeded_postgres_log: EventLog, setting: str, named: str
) -> None:
    store = seeded_postgres_log.store
    impatient = Impatient()
    impatient.setting = setting
    runner = ProjectionRunner(store, [LeadershipProjection(), impatient], page=10)
    # when it catches up, then it stops alone, named with the setting (not "database is
    # busy", which tried the page again and failed every command after)
    with pytest.raises(ProjectionFailed) as raised:
        await runner.catch_up()
    (failure,) = raised.value.failures
    assert str(failure).startswith("projection impatient could not apply events 1-10: ")
    assert f"may not do this: changing the setting {named}" in str(failure)
    # and nothing of its page is kept, while the built-ins and later statements go on
    assert await store.query("SELECT COUNT(*) FROM p_impatient_seen") == [(0,)]
    statuses = {status.name: status.checkpoint for status in await runner.status()}
    assert statuses == {"leadership": SEED_COUNT, "impatient": 0}
    assert (await store.query("SHOW statement_timeout"))[0][0] == "0"
