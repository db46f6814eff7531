"""``POST /api/events`` takes org.updated clearing a parent or a short name.

Given a real server over the seeds, when such a record is posted, then it is appended with its
null stored, the state answers the organisation as top-level, and the same record posted again
is already present; a null the vocabulary does not allow is refused, nothing written.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from leaderlog.http import create_app
from leaderlog.log import EventLog
from leaderlog.tokens import Tokens
from tests.http.server import running, seeded_database


async def create_token(url: str) -> str:
    async with await EventLog.open(url) as log:
        return await Tokens(log.store).create("writer")


def test_the_api_appends_a_clearing_and_answers_with_it(tmp_path: Path) -> None:
    url = seeded_database(tmp_path)
    token = asyncio.run(create_token(url))
    record = {"type": "org.updated", "data": {"org": "ice-hsi", "parent": None}}
    refused = {"type": "org.updated", "data": {"org": "ice-hsi", "name": None}}
    headers = {"Authorization": f"Bearer {token}"}
    with running(create_app(url)) as base, httpx.Client(base_url=base, timeout=30) as client:
        appended = client.post("/api/events", json=record, headers=headers)
        again = client.post("/api/events", json=record, headers=headers)
        invalid = client.post("/api/events", json=refused, headers=headers)
        (position,) = appended.json()["positions"]
        stored = client.get(f"/api/events/{position}").json()
        state = client.get("/api/state", params={"org": "ice-hsi"}).json()
        head = client.get("/api/verify").json()["head_position"]
    assert (appended.status_code, again.status_code) == (201, 200)
    assert stored["data"] == {"org": "ice-hsi", "parent": None}
    assert state["org"]["parent"] is None
    assert invalid.status_code == 422
    assert "name cannot be null" in invalid.text
    assert head == position
