"""Two servers on one PostgreSQL log, as behind a load balancer: what one appends, the other
serves (feeds, conditional GET, queries) without being told, since each follows the shared log.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from leaderlog.http import create_app
from leaderlog.log import EventLog
from leaderlog.tokens import Tokens
from tests.conftest import SEEDS
from tests.http.server import running
from tests.store import postgres_schema

CLAIM = "gordon-named-permanent"
NEW_CLAIM = {
    "type": "claim.reported",
    "data": {
        "claim": CLAIM,
        "source": "fox-ice-shakeup-2025-05",
        "kind": "appointment",
        "person": "derek-gordon",
        "post": "ice-hsi-ead",
        "capacity": "permanent",
        "modality": "rumored",
        "attribution": {"kind": "anonymous", "parties": ["ICE"]},
    },
}


async def _changed(
    client: httpx.AsyncClient, path: str, etag: str, within: float = 20.0
) -> httpx.Response:
    """Poll ``path`` as a feed reader does until it is no longer ``etag``."""
    deadline = time.monotonic() + within
    while True:
        response = await client.get(path, headers={"If-None-Match": etag})
        if response.status_code != 304 or time.monotonic() > deadline:
            return response
        await asyncio.sleep(0.1)


def _items(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["items"]
    return found


async def test_what_one_server_appends_the_other_serves(postgres_url: str) -> None:
    async with postgres_schema(postgres_url) as url:
        with (
            running(create_app(url, seeds=SEEDS)) as writer_url,
            running(create_app(url, seeds=SEEDS)) as reader_url,
        ):
            async with await EventLog.open(url) as log:
                token = await Tokens(log.store).create("desk")
                assert await log.store.count() == 29  # seeded once, by the first server
            async with (
                httpx.AsyncClient(base_url=writer_url, timeout=30) as writer,
                httpx.AsyncClient(base_url=reader_url, timeout=30) as reader,
            ):
                before = await reader.get("/feeds/all.json")
                assert len(_items(before)) == 10
                unchanged = await reader.get(
                    "/feeds/all.json", headers={"If-None-Match": before.headers["etag"]}
                )
                assert unchanged.status_code == 304

                appended = await writer.post(
                    "/api/events", json=NEW_CLAIM, headers={"Authorization": f"Bearer {token}"}
                )
                assert appended.status_code == 201, appended.text
                position = appended.json()["positions"][0]

                after = await _changed(reader, "/feeds/all.json", before.headers["etag"])
                assert after.headers["etag"] != before.headers["etag"]
                items = _items(after)
                assert len(items) == 11
                assert items[0]["title"].startswith("Rumored: ")
                assert "Derek Gordon" in items[0]["title"]

                health = (await reader.get("/healthz")).json()
                assert health["head"] == position
                claim = await reader.get(f"/api/claims/{CLAIM}")
                assert claim.status_code == 200, claim.text
                assert claim.json()["lifecycle"][0]["actor"] == "desk"
                state = (await reader.get("/api/state", params={"org": "ice-hsi"})).json()
                pending = [
                    change["claim"]
                    for post in state["posts"]
                    if post["post"]["post"] == "ice-hsi-ead"
                    for change in post["pending"]
                ]
                assert CLAIM in pending
