"""The feed entries and documents on PostgreSQL: same SQL, same answers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from leaderlog.events import OrgUpdated, PersonRegistered
from leaderlog.feeds import FORMATS, FeedRequest, Scope
from leaderlog.feeds._read import FeedReader
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


async def test_a_scope_s_latest_entries_and_pages_are_read_through_its_index(
    seeded_postgres_log: EventLog,
) -> None:
    """PostgreSQL took the join of an entry to its current version for one row, joined
    first, and so read every current version of the log to keep a page of them (half a
    second for the whole log's feed at 200,000 events, on every overview and feed): the
    entries are picked in a subquery with a LIMIT, then joined."""
    # given a few hundred claims, some corrected (so with versions beyond their current one)
    await add_claims(seeded_postgres_log, 0, 400, batch=200)
    for index in range(0, 400, 40):
        await correct(seeded_postgres_log, f"gen-{index}", capacity="permanent")
    store = seeded_postgres_log.store
    await ProjectionRunner(store, [FeedEntriesProjection()]).catch_up()
    for table in TABLES:
        await store.query(f"ANALYZE {table}")
    statements: list[tuple[str, Sequence[Any]]] = []
    read = store.query

    async def recorded(sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        statements.append((sql, parameters))
        return await read(sql, parameters)

    store.query = recorded  # type: ignore[method-assign]
    reader = FeedReader(store)
    for scope in ("all", "org:ice-hsi"):
        assert len(await reader.recent(scope, 20)) == 20
        assert len(await reader.page(scope, 51, 100, None)) == 50
        assert len(await reader.page(scope, 51, 100, 300)) == 50
    store.query = read  # type: ignore[method-assign]
    # then no plan reads a whole table
    for sql, parameters in statements:
        plan = "\n".join(str(row[0]) for row in await store.query(f"EXPLAIN {sql}", parameters))
        assert "Seq Scan" not in plan, (sql, plan)


async def test_every_feed_is_listed_in_id_order_whatever_order_they_were_registered_in(
    seeded_postgres_log: EventLog,
) -> None:
    # given people registered after the seeds, their ids sorting before and between theirs
    # (PostgreSQL hands rows back in no particular order without ORDER BY)
    await seeded_postgres_log.append_events(
        [
            PersonRegistered(person="zz-last-registered-first", name="Zed"),
            PersonRegistered(person="aa-first-registered-last", name="Aa"),
            PersonRegistered(person="m-middle", name="Em"),
        ],
        actor="test",
    )
    service = await project(seeded_postgres_log)
    # when the list of every feed is read
    directory = await service.directory()
    # then each kind's subjects come in id order, as on SQLite
    for kind in ("org", "person", "post"):
        ids = [entity_id for entity_id, _ in directory.kinds[kind]]
        assert ids == sorted(ids), kind
    assert directory.kinds["person"][0][0] == "aa-first-registered-last"
