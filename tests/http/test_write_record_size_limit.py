"""The 63 KiB record limit over HTTP, at its boundary: the write API accepts what ``import``
accepts (a record whose data is exactly the limit) and refuses one byte more, writing
nothing, with the same words."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from leaderlog._json import canonical_bytes, dumps
from leaderlog.http import create_app
from leaderlog.log import MAX_RECORD_BYTES, EventLog
from leaderlog.tokens import Tokens
from tests.http.server import running, seeded_database

EMOJI = "\U0001f600"


def post_of_size(post: str, size: int) -> dict[str, Any]:
    """A ``post.defined`` record whose data is ``size`` bytes of canonical JSON: 300-character
    aliases and labels of four-byte characters, then a title making up the rest."""
    data: dict[str, Any] = {"post": post, "org": "ice", "title": "T", "aliases": [], "labels": {}}
    while len(canonical_bytes(data)) + 1210 < size and len(data["aliases"]) < 50:
        data["aliases"].append(EMOJI * 299 + chr(0x1F601 + len(data["aliases"])))
    languages = iter(("en", "es", "fr", "de", "it", "pt", "ru", "hi", "ja"))
    while len(canonical_bytes(data)) + 1220 < size:
        data["labels"][next(languages)] = EMOJI * 300
    missing = size - len(canonical_bytes(data)) + 1
    wide = max(0, (missing - 280) // 3 + 1) if missing > 300 else 0
    data["title"] = EMOJI * wide + "T" * (missing - 4 * wide)
    assert len(canonical_bytes(data)) == size
    return {"type": "post.defined", "data": data}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    """(base URL, database URL, token) of a server on a seeded log."""
    url = seeded_database(tmp_path_factory.mktemp("size"))

    async def token() -> str:
        async with await EventLog.open(url) as log:
            return await Tokens(log.store).create("sizer")

    secret = asyncio.run(token())
    with running(create_app(url)) as base:
        yield base, url, secret


def head(url: str) -> tuple[int, str]:
    async def read() -> tuple[int, str]:
        async with await EventLog.open(url) as log:
            position, digest = await log.store.head()
            return position, str(digest)

    return asyncio.run(read())


def send(base: str, token: str, record: dict[str, Any]) -> httpx.Response:
    return httpx.post(
        f"{base}/api/events",
        content=dumps(record).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        timeout=30,
    )


def test_a_record_exactly_at_the_limit_is_appended_over_http(
    server: tuple[str, str, str],
) -> None:
    base, url, token = server
    before = head(url)
    answer = send(base, token, post_of_size("at-the-limit", MAX_RECORD_BYTES))
    assert answer.status_code == 201, answer.text
    assert answer.json()["positions"] == [before[0] + 1]


def test_a_record_one_byte_over_the_limit_is_refused_as_import_refuses_it(
    server: tuple[str, str, str], tmp_path: Path
) -> None:
    base, url, token = server
    before = head(url)
    answer = send(base, token, post_of_size("over-the-limit", MAX_RECORD_BYTES + 1))
    assert answer.status_code == 422, answer.text
    (problem,) = answer.json()["problems"]
    assert (problem["where"], problem["rule"]) == ("record 0", "size")
    assert (
        problem["message"] == f"record is {MAX_RECORD_BYTES + 1} bytes; at most {MAX_RECORD_BYTES}"
    )
    assert head(url) == before
