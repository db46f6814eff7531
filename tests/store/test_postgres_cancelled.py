"""The PostgreSQL store cancelled (a timeout, a Ctrl-C) while it opens, and while its driver
is still sending a projection page's rows."""

from __future__ import annotations

import asyncio
import gc

import asyncpg

from leaderlog.store import open_store
from leaderlog.store.postgres import PostgresStore
from tests.store import postgres_schema


async def test_given_a_large_executemany_when_cancelled_then_it_returns_and_the_store_closes(
    postgres_url: str,
) -> None:
    # Given a projection transaction writing many large rows (more than the socket takes at
    # once, so the driver waits to send the rest)
    async with postgres_schema(postgres_url) as url:
        store = await open_store(url)
        try:

            async def page() -> None:
                async with store.projection_transaction() as tx:
                    await tx.execute("CREATE TABLE p_cancelled_page (k int, v text)")
                    text = "x" * 2000
                    await tx.executemany(
                        "INSERT INTO p_cancelled_page (k, v) VALUES (?, ?)",
                        [(i, text) for i in range(50_000)],
                    )

            # When it is cancelled (a timeout, a Ctrl-C) while the rows are sent
            cut = asyncio.ensure_future(asyncio.wait_for(page(), 0.05))
            done, _ = await asyncio.wait([cut], timeout=10)

            # Then the cancellation ends it at once, nothing of the page is committed, and
            # the store goes on working
            assert done, "the cancelled executemany never returned"
            assert isinstance(cut.exception(), TimeoutError)
            rows = await store.query(
                "SELECT count(*) FROM information_schema.tables WHERE table_name = ?",
                ["p_cancelled_page"],
            )
            assert rows == [(0,)]
        finally:
            await asyncio.wait_for(store.close(), 10)


async def _others_connected(url: str) -> int:
    connection = await asyncpg.connect(url)
    try:
        count = await connection.fetchval(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return int(count)
    finally:
        await connection.close()


async def test_given_an_open_cancelled_at_any_point_then_it_leaves_no_connection_open(
    postgres_url: str,
) -> None:
    # Given a database without ?schema= (opening it finds the log's schema on one pool of
    # connections, closes that pool and opens another)
    before = await _others_connected(postgres_url)
    # When opening is cancelled a little later each time, until it finishes (the garbage
    # collector held off, which would otherwise close what was left open, with a warning)
    gc.disable()
    try:
        delay = 0.0
        while True:
            try:
                store = await asyncio.wait_for(PostgresStore.open(postgres_url), delay)
            except TimeoutError:
                delay += 0.002
                continue
            await store.close()
            break
        # Then no connection of a cancelled open is left behind
        for _ in range(50):
            left = await _others_connected(postgres_url)
            if left <= before:
                break
            await asyncio.sleep(0.05)
        assert left <= before, f"{left - before} connections left open"
    finally:
        gc.enable()
        gc.collect()
