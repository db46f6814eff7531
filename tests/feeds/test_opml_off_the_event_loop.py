"""The OPML of a log with thousands of feeds is written off the event loop, so that a server
goes on answering other requests while it writes one (at 100,000 organisations that takes
seconds, and only a few of its variants fit the cache of rendered documents); requests for the
same document meanwhile share that one writing."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from leaderlog._json import dumps
from leaderlog.feeds import _service
from leaderlog.feeds._service import FeedService
from leaderlog.log import EventLog
from leaderlog.projections import runner_for

ORGANISATIONS = 300


async def _flat_log(url: str) -> None:
    lines = [dumps({"type": "org.registered", "data": {"org": "root", "name": "Root"}})]
    lines += [
        dumps(
            {
                "type": "org.registered",
                "data": {"org": f"o{n}", "name": f"Org {n}", "parent": "root"},
            }
        )
        for n in range(1, ORGANISATIONS)
    ]
    async with await EventLog.open(url) as log:
        await log.import_lines(lines, actor="cli")
        await (await runner_for(log.store)).catch_up()


async def test_a_large_opml_is_written_off_the_event_loop_and_once_for_requests_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'log.db'}"
    await _flat_log(url)
    loop_thread = threading.get_ident()
    threads: list[tuple[str, int]] = []
    outlines, dated = FeedService._opml_parts, _service._dated_and_compressed

    def outlines_on(self: FeedService, *arguments: Any) -> tuple[bytes, bytes]:
        threads.append(("outlines", threading.get_ident()))
        return outlines(self, *arguments)

    def dated_on(*arguments: Any) -> tuple[bytes, bytes]:
        threads.append(("dated", threading.get_ident()))
        return dated(*arguments)

    monkeypatch.setattr(FeedService, "_opml_parts", outlines_on)
    monkeypatch.setattr(_service, "_dated_and_compressed", dated_on)
    async with await EventLog.open(url) as log:
        feeds = FeedService(log.store)
        first, second = await asyncio.gather(
            feeds.opml("fr", "http://h.example"), feeds.opml("fr", "http://h.example")
        )
    assert first is second
    assert first.body.count(b"<outline ") == ORGANISATIONS + 4  # and the groups' own
    # written once, and neither part of it on the event loop's thread
    assert [name for name, _ in threads] == ["outlines", "dated"]
    assert all(thread != loop_thread for _, thread in threads)
