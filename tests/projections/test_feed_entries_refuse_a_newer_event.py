"""The feed entries projection refuses an event a newer leaderlog wrote, naming its position, as
the other built-ins do, rather than fold what it recognises of it into an entry (which an
archive page could then freeze)."""

from __future__ import annotations

import uuid

import pytest

from leaderlog.errors import RecordError
from leaderlog.log import EventLog, load_seeds
from leaderlog.projections.feed_entries import FeedEntriesProjection
from leaderlog.store.base import NewEvent
from tests.conftest import SEEDS


async def test_applying_a_newer_schema_version_names_its_position(sqlite_url: str) -> None:
    async with await EventLog.open(sqlite_url) as log:
        await load_seeds(log, SEEDS)
        # a rename as a newer version wrote it, past today's rules (straight to the store)
        newer = NewEvent(uuid.uuid4(), "org-ice", "org.updated", 99, {"org": "ice", "name": "X"})
        (position,) = (await log.store.append([newer], actor="cli")).positions
        events = await log.store.read_all(after=0, limit=position)
        projection = FeedEntriesProjection()
        with pytest.raises(RecordError) as caught:
            async with log.store.projection_transaction() as tx:
                for statement in projection.schema():
                    await tx.execute(statement)
                await projection.apply(tx, events)
        assert str(caught.value).startswith(
            f"event at position {position}: org.updated schema_version 99 is newer than this "
            "leaderlog understands (1)"
        )
