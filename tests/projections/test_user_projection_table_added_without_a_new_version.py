"""A user projection whose module comes to list a table the database lacks, at the same
version (a table added or renamed without bumping ``version``, or one dropped by hand): the
projection is built again from the log rather than filling that table from its checkpoint on."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import ClassVar

import pytest

from leaderlog.events import RecordedEvent
from leaderlog.log import EventLog
from leaderlog.projections import ProjectionRunner, ProjectionTransaction
from leaderlog.projections.base import Projection
from tests.projections.logs import ANOTHER_CLAIM, append


class Counting(Projection):
    """Keeps every position it applied, in each of its tables."""

    name: ClassVar[str] = "counting"
    version: ClassVar[int] = 1
    names: ClassVar[tuple[str, ...]] = ("p_counting_rows",)
    lazy: ClassVar[tuple[str, ...]] = ()

    def schema(self) -> Sequence[str]:
        return tuple(
            f"CREATE TABLE IF NOT EXISTS {table} (position BIGINT PRIMARY KEY)"
            for table in self.names
        )

    def tables(self) -> Sequence[str]:
        return (*self.names, *self.lazy)

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        for table in self.names:
            await tx.executemany(
                f"INSERT INTO {table} (position) VALUES (?)",
                [(recorded.position,) for recorded in events],
            )


class CountingInTwoTables(Counting):
    """The module edited: a second table, but the same version."""

    names: ClassVar[tuple[str, ...]] = ("p_counting_rows", "p_counting_more")


class CountingWithALazyTable(Counting):
    """Lists a table that apply() would create itself, later: not a reason to rebuild."""

    lazy: ClassVar[tuple[str, ...]] = ("p_counting_later",)


async def _positions(log: EventLog, table: str) -> list[int]:
    return [int(p) for (p,) in await log.store.query(f"SELECT position FROM {table} ORDER BY 1")]


async def a_table_added_without_a_new_version_is_filled_from_the_whole_log(
    seeded_log: EventLog,
) -> None:
    # given the projection built to the head of the seeds
    await ProjectionRunner(seeded_log.store, [Counting()]).catch_up()
    head = len(await _positions(seeded_log, "p_counting_rows"))
    # when its module comes to create a second table, at the same version, and an event follows
    (position,) = await append(seeded_log, [json.loads(ANOTHER_CLAIM)])
    await ProjectionRunner(seeded_log.store, [CountingInTwoTables()]).catch_up()
    # then the new table holds every event, as a rebuild would have it, not only the last one
    everything = list(range(1, position + 1))
    assert head == position - 1
    assert await _positions(seeded_log, "p_counting_more") == everything
    assert await _positions(seeded_log, "p_counting_rows") == everything


async def test_a_listed_table_that_schema_does_not_create_does_not_rebuild(
    seeded_log: EventLog, caplog: pytest.LogCaptureFixture
) -> None:
    # given a projection listing a table its apply() may create later, built to the head
    await ProjectionRunner(seeded_log.store, [CountingWithALazyTable()]).catch_up()
    (position,) = await append(seeded_log, [json.loads(ANOTHER_CLAIM)])
    # when it catches up again
    with caplog.at_level("WARNING", logger="leaderlog.projections"):
        await ProjectionRunner(seeded_log.store, [CountingWithALazyTable()]).catch_up()
    # then it goes on from its checkpoint, without a rebuild
    assert await _positions(seeded_log, "p_counting_rows") == list(range(1, position + 1))
    assert "is built again" not in caplog.text


async def test_a_table_added_without_a_new_version_is_filled_from_the_whole_log(
    seeded_log: EventLog,
) -> None:
    await a_table_added_without_a_new_version_is_filled_from_the_whole_log(seeded_log)


async def test_postgres_a_table_added_without_a_new_version_is_filled_from_the_whole_log(
    seeded_postgres_log: EventLog,
) -> None:
    await a_table_added_without_a_new_version_is_filled_from_the_whole_log(seeded_postgres_log)


class CountingInCapitals(Counting):
    """Its tables created in another case, with lower-case keywords after a line break."""

    name: ClassVar[str] = "capitals"
    names: ClassVar[tuple[str, ...]] = ("p_capitals_rows",)

    def schema(self) -> Sequence[str]:
        return tuple(
            f"\n  create table if not exists {table.upper()} (position BIGINT PRIMARY KEY)"
            for table in self.names
        )


class CountingInCapitalsInTwoTables(CountingInCapitals):
    names: ClassVar[tuple[str, ...]] = ("p_capitals_rows", "p_capitals_more")


async def a_table_named_in_another_case_rebuilds_only_when_it_is_missing(
    log: EventLog, caplog: pytest.LogCaptureFixture
) -> None:
    # given a projection whose schema() names its tables in capitals, built to the head
    with caplog.at_level("WARNING", logger="leaderlog.projections"):
        await ProjectionRunner(log.store, [CountingInCapitals()]).catch_up()
        (position,) = await append(log, [json.loads(ANOTHER_CLAIM)])
        # when it catches up again with its tables all there
        await ProjectionRunner(log.store, [CountingInCapitals()]).catch_up()
    # then it goes on from its checkpoint: the tables are found whatever their case
    assert "built again" not in caplog.text, caplog.text
    # and when its module comes to create another table, at the same version
    with caplog.at_level("WARNING", logger="leaderlog.projections"):
        await ProjectionRunner(log.store, [CountingInCapitalsInTwoTables()]).catch_up()
    # then that table is found missing, and filled from the whole log
    assert "p_capitals_more" in caplog.text and "built again" in caplog.text
    assert await _positions(log, "p_capitals_more") == list(range(1, position + 1))


async def test_a_table_named_in_another_case_rebuilds_only_when_it_is_missing(
    seeded_log: EventLog, caplog: pytest.LogCaptureFixture
) -> None:
    await a_table_named_in_another_case_rebuilds_only_when_it_is_missing(seeded_log, caplog)


async def test_postgres_a_table_named_in_another_case_rebuilds_only_when_it_is_missing(
    seeded_postgres_log: EventLog, caplog: pytest.LogCaptureFixture
) -> None:
    await a_table_named_in_another_case_rebuilds_only_when_it_is_missing(
        seeded_postgres_log, caplog
    )
