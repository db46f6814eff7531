"""A PostgreSQL connection whose network stops carrying packets is given up on by the kernel
(keepalive probes while it waits for an answer), as libpq's keepalives do, where a command
waited for good.

Given a store on a TCP address, when its pooled and listening connections are opened, then
each socket has the probes set; on a Unix socket, which has none, opening still works.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from leaderlog.store import open_store
from leaderlog.store.postgres import (
    KEEPALIVE_IDLE_SECONDS,
    KEEPALIVE_INTERVAL_SECONDS,
    KEEPALIVE_PROBES,
    PostgresStore,
    _give_up_on_a_dead_network,
)

from . import postgres_schema

UNIX_SOCKET_FOLDER = Path("/var/run/postgresql")


@pytest.fixture
async def schema_url(postgres_url: str) -> AsyncIterator[str]:
    async with postgres_schema(postgres_url) as url:
        yield url


def _settings(connection: Any) -> dict[str, int]:
    sock = connection._transport.get_extra_info("socket")
    return {
        "keepalive": sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
        "idle": sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
        "interval": sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
        "probes": sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT),
    }


EXPECTED = {
    "keepalive": 1,
    "idle": KEEPALIVE_IDLE_SECONDS,
    "interval": KEEPALIVE_INTERVAL_SECONDS,
    "probes": KEEPALIVE_PROBES,
}


async def test_every_connection_of_the_store_gives_up_on_a_dead_network(schema_url: str) -> None:
    store = await open_store(schema_url)
    try:
        assert isinstance(store, PostgresStore)
        # the pooled connections, two held at once so that a second one is opened too
        async with store._pool.acquire() as first, store._pool.acquire() as second:
            assert _settings(first) == EXPECTED
            assert _settings(second) == EXPECTED
        # and the one that listens for new events
        assert await store._listen()
        assert _settings(store._listener) == EXPECTED
    finally:
        await store.close()


async def test_a_connection_over_a_unix_socket_is_left_as_it_is(postgres_url: str) -> None:
    if not (UNIX_SOCKET_FOLDER / ".s.PGSQL.5432").exists():
        pytest.skip("no PostgreSQL Unix socket on this machine")
    connection = await asyncpg.connect(
        host=str(UNIX_SOCKET_FOLDER), user="postgres", database="test"
    )
    try:
        await _give_up_on_a_dead_network(connection)
        assert await connection.fetchval("SELECT 1") == 1
    finally:
        await connection.close()
