"""How a 503 tells a client whether trying again can help: ``Retry-After`` only when it can."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import httpx
import pytest

from leaderlog import EventLog, load_seeds
from leaderlog.errors import StoreBusy, StoreDamaged, StoreReadOnly, StoreUnavailable
from leaderlog.http import create_app
from leaderlog.http._errors import unavailable_response
from tests.conftest import SEEDS
from tests.http.server import running


@pytest.mark.parametrize(
    ("error", "retry_after"),
    [
        (StoreBusy("busy"), "1"),
        (StoreUnavailable("the disk is full", public="the database's disk is full"), "1"),
        (StoreReadOnly("read-only", public="the database cannot be written to"), None),
        (StoreDamaged("malformed", public="the database file is damaged"), None),
    ],
    ids=["busy", "disk full", "read-only", "damaged"],
)
def test_retry_after_is_sent_only_where_a_retry_can_help(
    error: StoreUnavailable, retry_after: str | None
) -> None:
    response = unavailable_response(error)
    assert response.status_code == 503
    assert response.headers.get("retry-after") == retry_after
    assert json.loads(bytes(response.body)) == {"error": "unavailable", "detail": error.public}


async def test_a_damaged_file_under_a_server_is_answered_as_its_condition_said_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # given a log whose events table and indexes a failing disk overwrote in part, under a
    # server that had not built its projections yet
    path = tmp_path / "leaderlog.db"
    url = f"sqlite:///{path}"
    async with await EventLog.open(url) as log:
        await load_seeds(log, SEEDS)
        people = [
            json.dumps({"type": "person.registered", "data": {"person": f"p-{n}", "name": "P"}})
            for n in range(3000)
        ]
        await log.import_lines(people, actor="cli")
    with sqlite3.connect(path) as connection:
        page_size = int(connection.execute("PRAGMA page_size").fetchone()[0])
    with path.open("r+b") as file:
        file.seek(2 * page_size)
        file.write(bytes(4 * page_size))
    caplog.set_level(logging.WARNING)
    with running(create_app(url, seeds=None)) as base_url:
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
            # when the log is asked for twice, and the server's health
            answers = [await client.get("/api/events?limit=2") for _ in range(2)]
            health = (await client.get("/healthz")).json()
    # then each answer is the database's lasting condition: a 503 without Retry-After
    for answer in answers:
        assert answer.status_code == 503, answer.text
        assert answer.json() == {
            "error": "unavailable",
            "detail": "the database file is damaged; the server's log says what to do",
        }
        assert "retry-after" not in answer.headers
    # and health says what stops the projections
    assert not health["ok"]
    assert {projection["error"] for projection in health["projections"]} == {
        "cannot apply the log: the database file is damaged; the server's log says what to do"
    }
    # and the server's log says what to do once, without a trace or a failure of its own
    said = [record.getMessage() for record in caplog.records]
    assert sum(message.startswith("GET /api/events: the SQLite database") for message in said) == 1
    assert any("`leaderlog export` may still read every event" in message for message in said)
    assert "Traceback" not in caplog.text
    assert "the server failed to answer" not in caplog.text
