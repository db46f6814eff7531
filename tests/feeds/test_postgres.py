"""The feed entries and documents on PostgreSQL: same SQL, same answers."""

from __future__ import annotations

from leaderlog.events import OrgUpdated
from leaderlog.feeds import FORMATS, FeedRequest, Scope
from leaderlog.log import EventLog
from leaderlog.projections.feed_entries import FeedEntriesProjection
from leaderlog.projections.runner import ProjectionRunner
from tests.feeds.atom_schema import atom_problems
from tests.feeds.logs import BASE, GENALO_RETIREMENT, add_claims, add_hostile, correct, project
from tests.feeds.test_projection import TABLES


async def test_feeds_on_postgresql(seeded_postgres_log: EventLog) -> None:
    await add_claims(seeded_postgres_log, 0, 60)
    await correct(seeded_postgres_log, GENALO_RETIREMENT, person="robert-hammer")
    await seeded_postgres_log.append_events([OrgUpdated(org="ice-ero", parent="dhs")], actor="test")
    await add_hostile(seeded_postgres_log)
    await ProjectionRunner(seeded_postgres_log.store, [FeedEntriesProjection()], page=7).catch_up()
    service = await project(seeded_postgres_log)
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
        table: sorted(await seeded_postgres_log.store.query(f"SELECT * FROM {table}"), key=repr)
        for table in TABLES
    }
    await ProjectionRunner(seeded_postgres_log.store, [FeedEntriesProjection()]).rebuild()
    for table in TABLES:
        rows = sorted(await seeded_postgres_log.store.query(f"SELECT * FROM {table}"), key=repr)
        assert rows == dump[table], table
