"""A built-in projection rebuilt under a running server by another leaderlog version: the
server's answers from it are 503s that say the server must be restarted, without a
``Retry-After`` inviting clients to poll it in vain (nothing mends it by itself); once the
projection is rebuilt by the server's version (what a restart does), it answers again."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import ClassVar

import httpx
import pytest

from leaderlog.http import create_app
from leaderlog.log import EventLog
from leaderlog.projections import ProjectionRunner
from leaderlog.projections.audit import AuditProjection
from leaderlog.projections.feed_entries import FeedEntriesProjection
from tests.conftest import invoke, ok
from tests.http.server import running, seeded_database


class _NewerAudit(AuditProjection):
    version: ClassVar[int] = AuditProjection.version + 1


class _NewerFeedEntries(FeedEntriesProjection):
    version: ClassVar[int] = FeedEntriesProjection.version + 1


def _rebuild_as_another_version(url: str) -> None:
    """What a newer leaderlog's ``rebuild`` does to the audit and feed entries projections."""

    async def rebuild() -> None:
        async with await EventLog.open(url) as log:
            await ProjectionRunner(log.store, [_NewerAudit(), _NewerFeedEntries()]).rebuild()

    asyncio.run(rebuild())


def test_its_503s_say_to_restart_it_and_do_not_invite_retries(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = seeded_database(tmp_path)
    with running(create_app(url)) as base, httpx.Client(base_url=base, timeout=30) as client:
        # (the feeds are not asked for yet: a feed served is kept a while without a check)
        assert client.get("/api/audit").status_code == 200
        # when another leaderlog version rebuilds projections under the running server
        _rebuild_as_another_version(url)
        # then its answers from them are 503s that say what ends them, with no Retry-After
        for path, what in (("/api/audit", "audit projection"), ("/feeds/all.atom", "feeds")):
            answer = client.get(path)
            assert answer.status_code == 503, answer.text
            assert "retry-after" not in answer.headers, path
            assert answer.json() == {
                "error": "unavailable",
                "detail": f"the {what} {'was' if what.endswith('projection') else 'were'} "
                "rebuilt by another version of leaderlog; this server cannot answer from "
                f"{'it' if what.endswith('projection') else 'them'} until it is restarted",
            }
        # the answers from a projection it still reads go on, and health says what to do,
        # also once the server's own catch-up has met the other version's tables
        assert client.get("/api/state").status_code == 200
        for _ in range(200):
            if "rebuilt by another leaderlog version; this one has version" in caplog.text:
                break
            time.sleep(0.05)
        health = client.get("/healthz").json()
        assert health["ok"] is False
        errors = {entry["name"]: entry.get("error", "") for entry in health["projections"]}
        assert errors["audit"].endswith(": restart it")
        assert errors["feed_entries"].endswith(": restart it")
        # when this version rebuilds them again (as its restart would)
        ok(invoke(url, "rebuild", "audit", "feed_entries"))
        # then it answers from them again
        assert client.get("/api/audit").status_code == 200
        assert client.get("/healthz").json()["ok"] is True


def test_the_server_logs_it_once_not_at_every_request(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = seeded_database(tmp_path)
    with running(create_app(url)) as base, httpx.Client(base_url=base, timeout=30) as client:
        assert client.get("/api/audit").status_code == 200
        _rebuild_as_another_version(url)
        with caplog.at_level(logging.WARNING, logger="leaderlog"):
            # when readers keep asking, then each gets the 503, and the server's log says it
            # once (a condition no retry ends is no news at the next request)
            for _ in range(3):
                assert client.get("/api/audit").status_code == 503
        # (the followers' own line, once they meet the other version's tables, is not one
        # of these: whether it falls in this window depends on how busy the machine is)
        said = [r for r in caplog.records if r.getMessage().startswith("GET /api/audit: ")]
        assert len(said) == 1, [r.getMessage() for r in said]
