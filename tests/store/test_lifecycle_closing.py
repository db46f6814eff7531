"""A store being closed, on every backend: what is begun once close() has been called."""

from __future__ import annotations

import asyncio

import pytest

from leaderlog.errors import StoreUnavailable
from leaderlog.store import open_store

from .contract import event


async def test_an_append_begun_while_the_store_closes_is_refused_and_not_written(
    store_url: str,
) -> None:
    store = await open_store(store_url)
    await store.append([event("before")], actor="t")
    # given a close that has begun (it waits for its connections)
    closing = asyncio.create_task(store.close())
    await asyncio.sleep(0)
    # when an append is begun meanwhile
    with pytest.raises(StoreUnavailable, match=r"closed|closing"):
        await store.append([event("while-closing")], actor="t")
    await closing
    # then it is refused as a read would be, and nothing of it is written
    reopened = await open_store(store_url)
    try:
        assert [stored.stream for stored in await reopened.read_all()] == ["before"]
    finally:
        await reopened.close()


async def test_projection_work_begun_while_the_store_closes_is_refused(store_url: str) -> None:
    store = await open_store(store_url)
    closing = asyncio.create_task(store.close())
    await asyncio.sleep(0)
    with pytest.raises(StoreUnavailable, match=r"closed|closing"):
        async with store.projection_transaction() as tx:
            await tx.execute("CREATE TABLE p_late_rows (n INTEGER)")
    await closing
    reopened = await open_store(store_url)
    try:
        assert "p_late_rows" not in await reopened.tables()
    finally:
        await reopened.close()
