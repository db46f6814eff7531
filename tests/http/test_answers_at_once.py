"""The server works out a few query answers at once, and has the others wait their turn:
each answer being worked out holds its claims decoded and its JSON until sent, so twenty
clients asking at once took a server's memory from 70 MB to 900 MB on a 20,000-event log."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from leaderlog.http import create_app
from leaderlog.http._deps import ANSWERS_AT_ONCE
from leaderlog.projections import Queries
from tests.http.server import running, seeded_database

CLIENTS = 3 * ANSWERS_AT_ONCE
# How long an answer waits for more to begin beside it: enough for every client's request
# to arrive when nothing holds them back; no test passes by being quick.
OVERLAP = 0.5


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running(create_app(seeded_database(tmp_path_factory.mktemp("at-once")))) as base:
        yield base


@dataclass
class Overlap:
    now: int = 0
    most: int = 0
    calls: int = 0


def _counted(monkeypatch: pytest.MonkeyPatch, name: str) -> Overlap:
    """Count the calls of the query ``name``, and how many run at once; each waits a
    moment for more."""
    overlap = Overlap()
    original = getattr(Queries, name)

    async def counted(self: Queries, *arguments: Any, **options: Any) -> Any:
        overlap.calls += 1
        overlap.now += 1
        overlap.most = max(overlap.most, overlap.now)
        try:
            for _ in range(int(OVERLAP / 0.01)):
                if overlap.now > ANSWERS_AT_ONCE:
                    break
                await asyncio.sleep(0.01)
            return await original(self, *arguments, **options)
        finally:
            overlap.now -= 1

    monkeypatch.setattr(Queries, name, counted)
    return overlap


def _asked_at_once(server: str, path: str) -> list[httpx.Response]:
    with ThreadPoolExecutor(CLIENTS) as pool, httpx.Client(timeout=60) as client:
        return list(pool.map(lambda _: client.get(f"{server}{path}"), range(CLIENTS)))


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("state", "/api/state"),
        ("history", "/api/history?org=dhs"),
        ("claim", "/api/claims/fox-ice-shakeup-2025-05-genalo-retirement"),
        ("audit", "/api/audit"),
    ],
)
def test_a_few_answers_are_worked_out_at_once_and_the_rest_wait_their_turn(
    server: str, monkeypatch: pytest.MonkeyPatch, name: str, path: str
) -> None:
    # Given a server, and a count of its answers being worked out at once
    overlap = _counted(monkeypatch, name)
    # When more clients than it works out at once ask at the same moment
    answers = _asked_at_once(server, path)
    # Then every one is answered, the same, and no more than the few were worked out at once
    assert [answer.status_code for answer in answers] == [200] * CLIENTS
    assert len({answer.content for answer in answers}) == 1
    assert overlap.most == ANSWERS_AT_ONCE


def test_a_request_given_up_while_it_waits_its_turn_is_not_worked_out(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a server, and a count of the state answers it works out
    overlap = _counted(monkeypatch, "state")
    # When more clients than it works out at once ask, and each gives up at once
    host, port = httpx.URL(server).host, httpx.URL(server).port
    for _ in range(CLIENTS):
        with socket.create_connection((host, port)) as connection:
            connection.sendall(b"GET /api/state HTTP/1.1\r\nHost: test\r\n\r\n")
    # Then those still waiting their turn are not worked out for no one, and a client that
    # stays is answered
    answer = httpx.get(f"{server}/api/state", timeout=60)
    assert answer.status_code == 200
    assert overlap.calls <= ANSWERS_AT_ONCE + 1, overlap.calls
    assert overlap.most <= ANSWERS_AT_ONCE
