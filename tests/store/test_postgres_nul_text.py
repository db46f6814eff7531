"""Text PostgreSQL cannot hold: the NUL character (U+0000).

Records never carry one where it would be stored as text (names and ids refuse control
characters, and data and meta are stored as JSON, which escapes it), but the store's own
methods take streams, types and actors as given.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from leaderlog.errors import StoreError
from leaderlog.store import EventStore, open_store
from leaderlog.store.base import PendingBatch

from . import postgres_schema
from .contract import event


@pytest.fixture(params=["sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, sqlite_url: str) -> AsyncIterator[EventStore]:
    if request.param == "sqlite":
        async with await open_store(sqlite_url) as opened:
            yield opened
        return
    postgres_url = request.getfixturevalue("postgres_url")
    async with postgres_schema(postgres_url) as url, await open_store(url) as opened:
        yield opened


async def test_a_stream_named_with_a_nul_character_is_read_as_one_that_holds_nothing(
    store: EventStore,
) -> None:
    await store.append([event("person-ada")], actor="t")
    found = await store.read_streams(["person-ada", "person-\x00ada"])
    assert list(found) == ["person-ada"]
    assert await store.read_stream("person-\x00ada") == []


@pytest.fixture
async def postgres_store(postgres_url: str) -> AsyncIterator[EventStore]:
    async with postgres_schema(postgres_url) as url, await open_store(url) as opened:
        yield opened


@pytest.mark.parametrize(
    ("batch", "named"),
    [
        (PendingBatch([event("person-\x00ada")], {}, "t"), "stream 'person-\\x00ada'"),
        (PendingBatch([event("person-ada", type="x\x00")], {}, "t"), "type 'x\\x00'"),
        (PendingBatch([event("person-ada")], {}, "t\x00"), "actor 't\\x00'"),
        (
            PendingBatch([event("person-ada")], {"org-\x00x": "no_stream"}, "t"),
            "stream 'org-\\x00x'",
        ),
    ],
)
async def test_an_append_naming_a_nul_character_is_refused_alone_saying_why(
    postgres_store: EventStore, batch: PendingBatch, named: str
) -> None:
    # given a batch PostgreSQL could not store, appended with one it can
    fine = PendingBatch([event("person-bob")], {}, "t")
    # when both are appended at once
    outcomes = await postgres_store.append_batches([batch, fine])
    # then the one is refused with a store error naming what it cannot hold, and the other
    # is written all the same
    refused, written = outcomes
    assert isinstance(refused, StoreError)
    assert str(refused) == (
        f"PostgreSQL text cannot hold the NUL character (U+0000), and this batch's {named} has one"
    )
    assert not isinstance(written, StoreError)
    assert [stored.stream for stored in await postgres_store.read_all()] == ["person-bob"]
