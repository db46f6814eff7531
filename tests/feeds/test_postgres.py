"""The feed entries and documents on PostgreSQL: same SQL, same answers."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from leaderlog.events import OrgUpdated
from leaderlog.feeds import FORMATS, FeedRequest, Scope
from leaderlog.log import EventLog, load_seeds
from leaderlog.projections.feed_entries import FeedEntriesProjection
from leaderlog.projections.runner import ProjectionRunner
from tests.conftest import SEEDS
from tests.feeds.atom_schema import atom_problems
from tests.feeds.logs import BASE, GENALO_RETIREMENT, add_claims, add_hostile, correct, project
from tests.feeds.test_projection import TABLES
from tests.store import postgres_schema


@pytest.fixture
async def postgres_log(postgres_url: str) -> AsyncIterator[EventLog]:
    async with postgres_schema(postgres_url) as url:
        log = await EventLog.open(url)
        try:
            await load_seeds(log, SEEDS)
            yield log
        finally:
            await log.close()


async def test_feeds_on_postgresql(postgres_log: EventLog) -> None:
    await add_claims(postgres_log, 0, 60)
    await correct(postgres_log, GENALO_RETIREMENT, person="robert-hammer")
    await postgres_log.append_events([OrgUpdated(org="ice-ero", parent="dhs")], actor="test")
    await add_hostile(postgres_log)
    await ProjectionRunner(postgres_log.store, [FeedEntriesProjection()], page=7).catch_up()
    service = await project(postgres_log)
    for scope, page in (
        ("all", None),
        ("all", 1),
        ("org:ice", None),
        ("person:robert-hammer", None),
    ):
        for fmt in FORMATS:
            request = FeedRequest(Scope.parse(scope), fmt, "fr", BASE, page)
            rendered = await service.render(request)
            if fmt == "atom":
                assert atom_problems(rendered.body) == [], scope
    dump = {
        table: sorted(await postgres_log.store.query(f"SELECT * FROM {table}"), key=repr)
        for table in TABLES
    }
    await ProjectionRunner(postgres_log.store, [FeedEntriesProjection()]).rebuild()
    for table in TABLES:
        rows = sorted(await postgres_log.store.query(f"SELECT * FROM {table}"), key=repr)
        assert rows == dump[table], table
