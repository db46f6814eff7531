"""The write API over PostgreSQL, and moving a log between SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from leaderlog._json import dumps
from leaderlog.log import EventLog, load_seeds
from leaderlog.store import EventStore

from . import postgres_schema

SEEDS = Path(__file__).resolve().parents[2] / "seeds"


@pytest.fixture
async def schema_url(postgres_url: str) -> AsyncIterator[str]:
    async with postgres_schema(postgres_url) as url:
        yield url


async def export_lines(store: EventStore) -> list[str]:
    return [dumps(event.envelope()) async for event in store.iterate()]


async def test_seeds_import_idempotently(schema_url: str) -> None:
    async with await EventLog.open(schema_url) as log:
        first = await load_seeds(log, SEEDS)
        assert first.appended > 0
        head = await log.store.head()
        again = await load_seeds(log, SEEDS)
        assert (again.positions, again.appended) == (first.positions, 0)
        assert await log.store.head() == head

    # A new process knows nothing of the first one's cache and still appends nothing.
    async with await EventLog.open(schema_url) as log:
        third = await load_seeds(log, SEEDS)
        assert (third.positions, third.appended) == (first.positions, 0)
        report = await log.store.verify()
        assert report.ok
        assert (report.head_position, report.head_hash) == head


async def test_export_from_sqlite_imports_into_postgres_unchanged(
    seeded_log: EventLog, schema_url: str, tmp_path: Path
) -> None:
    lines = await export_lines(seeded_log.store)
    original = [event.envelope() async for event in seeded_log.store.iterate()]
    assert lines

    async with await EventLog.open(schema_url) as postgres:
        outcome = await postgres.import_lines(lines, actor="mover")
        assert outcome.appended == len(lines)
        moved = [event.envelope() async for event in postgres.store.iterate()]
        assert [(e["event_id"], e["hash"]) for e in moved] == [
            (e["event_id"], e["hash"]) for e in original
        ]
        assert moved == original
        assert await postgres.store.head() == await seeded_log.store.head()
        assert (await postgres.store.verify()).ok

        retry = await postgres.import_lines(lines, actor="mover")
        assert retry.appended == 0
        back_lines = await export_lines(postgres.store)
    assert back_lines == lines

    # And back again into an empty SQLite file.
    async with await EventLog.open(f"sqlite:///{tmp_path / 'back.db'}") as sqlite:
        await sqlite.import_lines(back_lines, actor="mover")
        assert await export_lines(sqlite.store) == lines
