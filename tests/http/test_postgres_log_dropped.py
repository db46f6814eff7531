"""A PostgreSQL log dropped (its schema, by hand) under a running server: every route says
the log was removed, as a 503 without Retry-After (it does not come back by itself), and the
server's log says what to do; none is a 500."""

from __future__ import annotations

import asyncio
import time

import asyncpg
import httpx
import pytest

from leaderlog.errors import LogRemoved
from leaderlog.http import create_app
from leaderlog.log import EventLog, load_seeds
from leaderlog.projections import Queries, runner_for
from leaderlog.tokens import Tokens
from tests.conftest import SEEDS
from tests.http.server import running
from tests.store import postgres_schema

ROUTES = [
    "/",
    "/healthz",
    "/api/state",
    "/api/state?org=ice",
    "/api/history?post=ice-hsi-ead",
    "/api/claims/anything",
    "/api/audit",
    "/api/verify",
    "/api/events",
    "/feeds/all.atom",
    "/feeds/all.json",
]


async def _drop(postgres_url: str, store_url: str, what: str = "SCHEMA {schema}") -> None:
    """Drop the store's schema by hand, or ``what`` in it (``TABLE {schema}.events``)."""
    schema = f'"{store_url.rsplit("schema=", 1)[1]}"'
    connection = await asyncpg.connect(postgres_url)
    try:
        await connection.execute(f"DROP {what.format(schema=schema)} CASCADE")
    finally:
        await connection.close()


async def test_a_dropped_postgres_log_is_a_503_on_every_route(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with postgres_schema(postgres_url) as url:
        with running(create_app(url, seeds=SEEDS)) as base_url:
            async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
                assert (await client.get("/api/state")).status_code == 200
                await _drop(postgres_url, url)
                for route in ROUTES:
                    response = await client.get(route)
                    assert response.status_code == 503, (route, response.text)
                    assert "the log was removed from the database" in response.text, route
                    # Trying again in a second would not help: the log is restored by hand.
                    assert "retry-after" not in response.headers, route
    assert "the log is gone" in caplog.text
    assert "restore it from a backup or an export, then restart" in caplog.text


@pytest.mark.parametrize("dropped", ["TABLE {schema}.events", "SCHEMA {schema}"])
async def test_a_write_to_a_dropped_log_is_a_503_without_retry(
    postgres_url: str, dropped: str
) -> None:
    # With the schema go the tokens: the write is still told the log is gone, not that its
    # token is unknown.
    async with postgres_schema(postgres_url) as url:
        async with await EventLog.open(url) as log:
            token = await Tokens(log.store).create("alice")
        with running(create_app(url, seeds=SEEDS)) as base_url:
            async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
                await _drop(postgres_url, url, dropped)
                response = await client.post(
                    "/api/events",
                    json={"type": "person.registered", "data": {"person": "x-y", "name": "X Y"}},
                    headers={"Authorization": f"Bearer {token}"},
                )
    assert response.status_code == 503, response.text
    assert "the log was removed from the database" in response.text
    assert "retry-after" not in response.headers


async def test_the_library_says_a_dropped_postgres_log_is_gone(postgres_url: str) -> None:
    async with postgres_schema(postgres_url) as url, await EventLog.open(url) as log:
        await load_seeds(log, SEEDS)
        runner = await runner_for(log.store)
        await runner.catch_up()
        await _drop(postgres_url, url)
        queries = Queries(log.store)
        with pytest.raises(LogRemoved, match="its events table or schema was dropped"):
            await queries.state()
        with pytest.raises(LogRemoved):
            await log.store.head()
        with pytest.raises(LogRemoved):
            await runner.status()
        with pytest.raises(LogRemoved):
            await runner.catch_up()


async def test_a_dropped_log_is_said_on_routes_answered_from_projections_once_followed(
    postgres_url: str,
) -> None:
    async with postgres_schema(postgres_url) as url:
        with running(create_app(url, seeds=SEEDS)) as base_url:
            async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
                assert (await client.get("/api/state")).status_code == 200
                # given the log's events table dropped by hand, its projections left in place
                await _drop(postgres_url, url, "TABLE {schema}.events")
                # when only routes answered from the projections are asked for, then, once
                # the server's follower has met the missing log, they say it was removed too
                deadline = time.monotonic() + 20
                while (response := await client.get("/api/state")).status_code == 200:
                    assert time.monotonic() < deadline, "the state was still answered"
                    await asyncio.sleep(0.1)
                assert response.status_code == 503, response.text
                assert "the log was removed from the database" in response.text


async def test_a_dropped_log_is_said_once_in_the_server_log_not_at_every_request(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with postgres_schema(postgres_url) as url:
        with running(create_app(url, seeds=SEEDS)) as base_url:
            async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
                # given a server whose log was dropped by hand
                await _drop(postgres_url, url)
                # when it is asked for the same answer again and again
                for _ in range(3):
                    assert (await client.get("/api/events")).status_code == 503
    # then its log says so once: the log does not come back by itself, nor does the line
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("GET /api/")]
    assert len(said) == 1, said
    assert "the log is gone" in said[0]
