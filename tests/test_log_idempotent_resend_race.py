"""A re-send of records with ids of their own, racing the writer that commits the same records
(a client retrying through another server after an answer it lost)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from leaderlog.events import parse_record
from leaderlog.log import EventLog


async def test_a_resend_racing_the_original_commit_is_answered_as_already_present(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given two writers (two processes' logs) sending the same records with ids of their own:
    # a person registered, then renamed (the second record's rule rests on the first)
    first = await EventLog.open(store_url)
    second = await EventLog.open(store_url)
    records = [
        parse_record(
            {
                "type": "person.registered",
                "event_id": str(uuid.uuid4()),
                "data": {"person": "p", "name": "P"},
            }
        ),
        parse_record(
            {
                "type": "person.updated",
                "event_id": str(uuid.uuid4()),
                "data": {"person": "p", "name": "P2"},
            }
        ),
    ]
    looked_up = second._stored
    committed: list[Any] = []

    async def the_first_commits_right_after_the_lookup(ids: Any) -> Any:
        found = await looked_up(ids)
        if not committed:
            committed.append(await first.append_records(records, actor="one"))
        return found

    monkeypatch.setattr(second, "_stored", the_first_commits_right_after_the_lookup)
    try:
        # when the second's ids are looked up just before the first commits them
        outcome = await second.append_records(records, actor="two")
        # then the second is answered as an idempotent re-send, not refused
        assert outcome.positions == committed[0].positions == (1, 2)
        assert outcome.appended == 0
        assert (await second.store.verify()).count == 2
    finally:
        await first.close()
        await second.close()
