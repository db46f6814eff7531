"""A new version of a user projection that renames a table: the old one is dropped."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from leaderlog.events import RecordedEvent
from leaderlog.log import EventLog
from leaderlog.projections import ProjectionRunner, ProjectionTransaction
from leaderlog.projections.base import Projection
from leaderlog.store.base import TABLES_QUERY


class Evolving(Projection):
    """Counts events in one table, named by its version."""

    name: ClassVar[str] = "evolving"
    version: ClassVar[int] = 1
    table: ClassVar[str] = "p_evolving_old"

    def schema(self) -> Sequence[str]:
        return (f"CREATE TABLE IF NOT EXISTS {self.table} (position BIGINT PRIMARY KEY)",)

    def tables(self) -> Sequence[str]:
        return (self.table,)

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await tx.executemany(
            f"INSERT INTO {self.table} (position) VALUES (?)",
            [(recorded.position,) for recorded in events],
        )


class EvolvedWithAnotherTable(Evolving):
    version: ClassVar[int] = 2
    table: ClassVar[str] = "p_evolving_new"


class Neighbour(Evolving):
    """Another projection whose name starts with the first one's: its tables are its own."""

    name: ClassVar[str] = "evolving_too"
    table: ClassVar[str] = "p_evolving_too_rows"


async def _tables(log: EventLog) -> set[str]:
    rows = await log.store.query(TABLES_QUERY[log.store.dialect])
    return {str(table) for (table,) in rows if str(table).startswith("p_evolving")}


async def test_a_table_the_new_version_no_longer_lists_is_dropped(seeded_log: EventLog) -> None:
    # given version 1 built beside another projection whose prefix is longer
    await ProjectionRunner(seeded_log.store, [Evolving(), Neighbour()]).catch_up()
    assert await _tables(seeded_log) == {"p_evolving_old", "p_evolving_too_rows"}
    # when version 2, which names its table otherwise, is built
    await ProjectionRunner(seeded_log.store, [EvolvedWithAnotherTable()]).catch_up()
    # then the table of version 1 is gone (its rows would stay behind, never updated), and
    # the other projection's is not touched
    assert await _tables(seeded_log) == {"p_evolving_new", "p_evolving_too_rows"}
    rows = await seeded_log.store.query("SELECT COUNT(*) FROM p_evolving_too_rows")
    assert rows[0][0] > 0


async def test_postgres_a_table_the_new_version_no_longer_lists_is_dropped(
    seeded_postgres_log: EventLog,
) -> None:
    await test_a_table_the_new_version_no_longer_lists_is_dropped(seeded_postgres_log)
