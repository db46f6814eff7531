"""Last-Modified of a change made after the server's clock stepped back (NTP, say).

Once the clock is behind the log, the store stamps new events with the head's time, so a
change lands in the second of the last Last-Modified the server sent: dated by that
stamp, a reader sending that date as If-Modified-Since would be told ``304`` once the
clock caught up, and never see the change.
"""

from __future__ import annotations

import datetime as dt
import types

import pytest

from leaderlog.events import PersonRegistered, PersonUpdated
from leaderlog.feeds import FeedRequest, FeedService, Scope, _service
from leaderlog.log import EventLog
from leaderlog.projections.feed_entries import FeedEntriesProjection
from leaderlog.projections.runner import ProjectionRunner
from leaderlog.store import sqlite
from tests.feeds.logs import BASE

REQUEST = FeedRequest(Scope.parse("all"), "atom", "en", BASE, explicit_lang=True)


class _WallClock:
    """The time ``datetime.now`` gives the store and the feed service, set by the test."""

    def __init__(self) -> None:
        self.now = dt.datetime.now(dt.UTC)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        clock = self

        class _Datetime(dt.datetime):
            @classmethod
            def now(cls, tz: dt.tzinfo | None = None) -> _Datetime:
                return clock.now  # type: ignore[return-value]

        fake = types.SimpleNamespace(**{**vars(dt), "datetime": _Datetime})
        monkeypatch.setattr(_service, "dt", fake)
        monkeypatch.setattr(sqlite, "utc_now", lambda: clock.now)


async def _asked_once_its_second_was_over(
    log: EventLog, service: FeedService, clock: _WallClock
) -> tuple[ProjectionRunner, dt.datetime]:
    """A log of one event whose feed ``service`` dated, and was asked for five seconds
    later: the runner that keeps the feeds, and the Last-Modified it gave."""
    await log.append_events([PersonRegistered(person="x", name="X")], actor="t")
    runner = ProjectionRunner(log.store, [FeedEntriesProjection()])
    service.applied(await runner.catch_up())
    clock.now += dt.timedelta(seconds=5)
    sent = (await service.describe(REQUEST)).last_modified
    assert sent.replace(microsecond=0) < clock.now.replace(microsecond=0)
    return runner, sent


async def test_a_change_after_the_clock_stepped_back_is_dated_after_what_was_sent(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = _WallClock()
    clock.install(monkeypatch)
    async with await EventLog.open(sqlite_url) as log:
        # given a server that dated the feed by its one event and was asked for it once
        # that event's second was over (so it may have sent that second as Last-Modified)
        service = FeedService(log.store, poll_interval=0)
        runner, sent = await _asked_once_its_second_was_over(log, service, clock)
        # when the clock steps back an hour, and a change is appended and taken in
        clock.now -= dt.timedelta(hours=1)
        await log.append_events([PersonUpdated(person="x", name="Y")], actor="t")
        service.applied(await runner.catch_up())
        moved = await service.describe(REQUEST)
        # then the changed feed is dated in a later second than the one that may have been
        # sent: If-Modified-Since with that date does not match it
        assert moved.position == 2
        assert moved.last_modified.replace(microsecond=0) > sent.replace(microsecond=0)


async def test_a_change_after_a_restart_with_the_clock_stepped_back_is_dated_after_it(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = _WallClock()
    clock.install(monkeypatch)
    async with await EventLog.open(sqlite_url) as log:
        # given a feed dated by its one event, whose second may have been sent as
        # Last-Modified once it was over (by a server since stopped)
        stopped = FeedService(log.store, poll_interval=0)
        runner, sent = await _asked_once_its_second_was_over(log, stopped, clock)
        # when the clock steps back an hour, a server starts (taking the log in as it finds
        # it), and then a change is appended and taken in
        clock.now -= dt.timedelta(hours=1)
        restarted = FeedService(log.store, poll_interval=0)
        restarted.applied(await runner.catch_up())
        await log.append_events([PersonUpdated(person="x", name="Y")], actor="t")
        restarted.applied(await runner.catch_up())
        moved = await restarted.describe(REQUEST)
        # then the changed feed is dated in a later second than the one that may have been
        # sent before the restart
        assert moved.position == 2
        assert moved.last_modified.replace(microsecond=0) > sent.replace(microsecond=0)
