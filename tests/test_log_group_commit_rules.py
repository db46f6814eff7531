"""Domain rules across the requests of one group commit: each caller's batch is decided on
what the batches committed before it in the same transaction leave, not on the log as the
cache last saw it."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest

from leaderlog.errors import BatchError
from leaderlog.log import EventLog
from leaderlog.store.sqlite import path_from_url
from tests.test_log import HAMMER_BODY, claim, confirm, retract


async def test_a_retraction_is_final_for_a_confirmation_committed_in_the_same_group(
    seeded_log: EventLog,
) -> None:
    # Rule: retraction is final, also for a batch decided in the same group commit as the
    # retraction (it rests on the group's state of the claim, not the cache's older one).
    # given a claim this log holds in its cache (the seeds report it)
    before = await seeded_log.store.count()

    # when a retraction and a confirmation of it are appended at once (one group)
    retracted, confirmed = await asyncio.gather(
        seeded_log.append_events([retract(HAMMER_BODY)], actor="test"),
        seeded_log.append_events([confirm(HAMMER_BODY)], actor="test"),
        return_exceptions=True,
    )

    # then the retraction is written and the confirmation refused for the claim's retraction
    assert not isinstance(retracted, BaseException), retracted
    assert retracted.appended == 1
    assert isinstance(confirmed, BatchError), confirmed
    assert [p.rule for p in confirmed.problems] == ["claim_live"]
    stream = await seeded_log.store.read_stream(f"claim-{HAMMER_BODY}")
    assert stream[-1].type == "claim.retracted"
    assert await seeded_log.store.count() == before + 1


def _org(name: str) -> str:
    return json.dumps({"type": "org.registered", "data": {"org": name, "name": name.upper()}})


def _cut_to_nothing(url: str) -> None:
    """Empty the log behind every store's back (a backup of an empty log put in place)."""
    connection = sqlite3.connect(path_from_url(url), isolation_level=None)
    try:
        connection.executescript(
            "DROP TRIGGER events_are_append_only_update; "
            "DROP TRIGGER events_are_append_only_delete; DELETE FROM events;"
        )
    finally:
        connection.close()


async def test_a_log_cut_short_behind_its_back_is_not_decided_on_from_what_it_held(
    seeded_log: EventLog, sqlite_url: str
) -> None:
    # Rule: a log found shorter than the head this EventLog last caught up to is taken as
    # new: what it cached of the events that are gone (a person, a post, a source) is not
    # taken to exist any more.
    # given a log that appended an event of its own after another writer's
    async with await EventLog.open(sqlite_url) as other:
        await other.import_lines([_org("o1")], actor="t")
    await seeded_log.import_lines([_org("o2")], actor="t")
    # and every event of the log removed behind its back
    await asyncio.to_thread(_cut_to_nothing, sqlite_url)

    # when it appends a claim about a person, post and source the seeds had registered
    with pytest.raises(BatchError) as refused:
        await seeded_log.append_events([claim("after-the-cut")], actor="test")

    # then the claim is refused for its references, and nothing is written
    assert {p.rule for p in refused.value.problems} == {"reference"}
    assert await seeded_log.store.count() == 0
