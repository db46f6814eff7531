"""A PostgreSQL log removed under a running server stays removed for it: once the server has
found it gone, every route says so (503, no Retry-After), including the routes it could still
answer from what it projected or rendered before (the projections' tables outlive a dropped
``events`` table, and rendered feeds are kept in memory)."""

from __future__ import annotations

import asyncio
import time

import asyncpg
import httpx

from leaderlog.http import create_app
from tests.conftest import SEEDS
from tests.http.server import create_token, running
from tests.store import postgres_schema

REMOVED = "the log was removed from the database"
ROUTES = [
    "/",
    "/?org=ice",
    "/opml",
    "/feeds/all.atom",
    "/feeds/org/ice.json",
    "/api/state",
    "/api/history?post=ice-hsi-ead",
    "/api/claims/fox-ice-shakeup-2025-05-noem-dhs-secretary",
    "/api/audit",
    "/healthz",
]


async def _drop(postgres_url: str, store_url: str, what: str) -> None:
    schema = f'"{store_url.rsplit("schema=", 1)[1]}"'
    connection = await asyncpg.connect(postgres_url)
    try:
        await connection.execute(f"DROP {what.format(schema=schema)} CASCADE")
    finally:
        await connection.close()


def _says_removed(response: httpx.Response, *where: object) -> None:
    """The 503 of a log that is gone: no Retry-After, since it does not come back by itself."""
    assert response.status_code == 503, (*where, response.text)
    assert REMOVED in response.text, where
    assert "retry-after" not in response.headers, where


async def _first_removed(client: httpx.AsyncClient, route: str) -> None:
    """Ask ``route`` until the server says the log was removed (its followers look at the
    log at least twice a second)."""
    deadline = time.monotonic() + 10
    while True:
        response = await client.get(route)
        if response.status_code == 503 or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    assert response.status_code == 503, response.text
    assert REMOVED in response.text


async def test_a_dropped_events_table_is_a_503_on_routes_that_read_projections(
    postgres_url: str,
) -> None:
    # The projections' tables stay: the answers they hold are not the log's any more.
    async with postgres_schema(postgres_url) as url:
        with running(create_app(url, seeds=SEEDS)) as base_url:
            async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
                for route in ROUTES:
                    assert (await client.get(route)).status_code == 200, route
                await _drop(postgres_url, url, "TABLE {schema}.events")
                await _first_removed(client, "/api/state")
                for route in ROUTES:
                    _says_removed(await client.get(route), route)


async def test_feeds_kept_in_memory_are_not_served_once_the_log_is_found_removed(
    postgres_url: str,
) -> None:
    async with postgres_schema(postgres_url) as url:
        with running(create_app(url, seeds=SEEDS)) as base_url:
            async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
                feed = await client.get("/feeds/all.json")
                opml = await client.get("/opml")
                await _drop(postgres_url, url, "SCHEMA {schema}")
                await _first_removed(client, "/api/state")
                # Each asked many times in a row, faster than the feeds look at the log
                # again: a rendered document is not handed out between two looks.
                for _ in range(20):
                    for route, etag in (
                        ("/feeds/all.json", feed.headers["etag"]),
                        ("/opml", opml.headers["etag"]),
                    ):
                        for headers in ({}, {"If-None-Match": etag}):
                            response = await client.get(route, headers=headers)
                            _says_removed(response, route, headers)


async def test_a_log_restored_under_the_server_is_a_503_until_it_restarts(
    postgres_url: str,
) -> None:
    # The README says: restore it, then restart. Until the restart, every route still says
    # the log was removed, rather than a 500 from projection tables the drop took along.
    async with postgres_schema(postgres_url) as url:
        with running(create_app(url, seeds=SEEDS)) as base_url:
            async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
                for route in ROUTES:
                    assert (await client.get(route)).status_code == 200, route
                await _drop(postgres_url, url, "SCHEMA {schema}")
                await _first_removed(client, "/api/state")
                with running(create_app(url, seeds=SEEDS)):
                    pass  # another server creates the log again, and stops
                for route in ROUTES:
                    _says_removed(await client.get(route), route)


async def test_a_write_that_finds_the_log_replaced_has_every_route_say_so(
    postgres_url: str,
) -> None:
    # given a server, and its events table replaced by a copy (a restore under it)
    async with postgres_schema(postgres_url) as url:
        token = await create_token(url, "alice")
        with running(create_app(url, seeds=SEEDS)) as base_url:
            async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
                assert (await client.get("/api/state")).status_code == 200
                schema = f'"{url.rsplit("schema=", 1)[1]}"'
                connection = await asyncpg.connect(postgres_url)
                try:
                    await connection.execute(
                        f"ALTER TABLE {schema}.events RENAME TO events_before;"
                        f"CREATE TABLE {schema}.events (LIKE {schema}.events_before "
                        "INCLUDING ALL);"
                        f"INSERT INTO {schema}.events SELECT * FROM {schema}.events_before"
                    )
                finally:
                    await connection.close()
                # when a write is the first to find it
                written = await client.post(
                    "/api/events",
                    json={"type": "person.registered", "data": {"person": "p1", "name": "P"}},
                    headers={"Authorization": f"Bearer {token}"},
                )
                _says_removed(written, "POST")
                # then every route says so, as when a read finds it first
                for route in ROUTES:
                    _says_removed(await client.get(route), route)
