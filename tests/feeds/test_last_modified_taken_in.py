"""Last-Modified of a change that reaches a server after the second it was stamped in.

Another process's write reaches a server only when it polls the projection, so it can show
up after its stamp's second is over, when that second has already been sent as some
feed's Last-Modified: dated by its stamp alone, the changed feed would be answered `304`
to a reader sending that date as If-Modified-Since.
"""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from leaderlog.events import PersonRegistered, PersonUpdated, SourceRegistered
from leaderlog.feeds import FeedRequest, FeedService, Scope, _service
from leaderlog.log import EventLog
from leaderlog.projections.feed_entries import FeedEntriesProjection
from leaderlog.projections.runner import ProjectionRunner
from tests.feeds.logs import BASE

REQUEST = FeedRequest(Scope.parse("all"), "atom", "en", BASE, explicit_lang=True)


async def _serving(log: EventLog) -> tuple[FeedService, ProjectionRunner]:
    """A server that has answered for the feed and the OPML of a log of one event."""
    await log.append_events([PersonRegistered(person="x", name="X")], actor="t")
    runner = ProjectionRunner(log.store, [FeedEntriesProjection()])
    await runner.catch_up()
    service = FeedService(log.store, poll_interval=0)
    (first,) = await log.events()
    assert (await service.describe(REQUEST)).last_modified == first.recorded_at
    assert (await service.opml("en", BASE)).validators.last_modified == first.recorded_at
    return service, runner


async def _a_change_taken_in_late(log: EventLog, runner: ProjectionRunner) -> None:
    """A change stamped a moment before the server's projection takes it in."""
    await log.append_events([PersonUpdated(person="x", name="Y")], actor="t")
    await asyncio.sleep(0.05)
    await runner.catch_up()


async def test_a_change_is_dated_no_earlier_than_when_the_server_took_it_in(
    sqlite_url: str,
) -> None:
    async with await EventLog.open(sqlite_url) as log:
        # given a server that has answered for a feed
        service, runner = await _serving(log)
        # when a change stamped a moment ago reaches it only now
        await _a_change_taken_in_late(log, runner)
        taken_in = dt.datetime.now(dt.UTC)
        moved = await service.describe(REQUEST)
        # then the feed and the OPML are dated when it took the change in, not earlier
        (_, last) = await log.events()
        assert moved.position == 2
        assert last.recorded_at < taken_in <= moved.last_modified
        opml = await service.opml("en", BASE)
        assert taken_in <= opml.validators.last_modified


async def test_a_new_server_dates_what_it_finds_by_the_events_stamps(sqlite_url: str) -> None:
    # given a log whose feeds are built, when a server starts on it, then it dates each
    # feed by its last event's stamp, as every server does (restarts change no date)
    async with await EventLog.open(sqlite_url) as log:
        await _serving(log)
        await asyncio.sleep(0.05)
        (first,) = await log.events()
        started = FeedService(log.store, poll_interval=0)
        assert (await started.describe(REQUEST)).last_modified == first.recorded_at


async def test_a_document_says_its_event_s_stamp_whenever_the_server_took_it_in(
    sqlite_url: str,
) -> None:
    async with await EventLog.open(sqlite_url) as log:
        # given a server that took a change in after its stamp
        service, runner = await _serving(log)
        await _a_change_taken_in_late(log, runner)
        # when it and a server started since write the feed and the OPML
        started_since = FeedService(log.store, poll_interval=0)
        # then both write the same documents, dated by the stamp (only Last-Modified moves)
        for one, other in (
            (await service.render(REQUEST), await started_since.render(REQUEST)),
            (await service.opml("en", BASE), await started_since.opml("en", BASE)),
        ):
            assert one.body == other.body
            assert one.validators.etag == other.validators.etag
            assert one.validators.last_modified > other.validators.last_modified


async def test_a_change_the_follower_applied_is_dated_then_not_when_a_reader_first_asks(
    sqlite_url: str,
) -> None:
    # given a server that has answered, and a change its follower applied at once
    async with await EventLog.open(sqlite_url) as log:
        service, runner = await _serving(log)
        await log.append_events([PersonUpdated(person="x", name="Y")], actor="t")
        applied = await runner.catch_up()
        service.applied(applied)
        taken_in = dt.datetime.now(dt.UTC)
        # when the first reader asks well after that
        await asyncio.sleep(0.3)
        modified = (await service.describe(REQUEST)).last_modified
    # then the document is dated by when the change arrived, not by that first request
    # (which also held Last-Modified back until its own second was over)
    assert modified <= taken_in


async def test_a_document_the_late_change_left_alone_keeps_its_date(sqlite_url: str) -> None:
    async with await EventLog.open(sqlite_url) as log:
        # given a server that has answered for the OPML (the list of every feed)
        service, runner = await _serving(log)
        (first,) = await log.events()
        # when an event that changes no organisation, person or post (a source registered)
        # reaches it after its stamp
        await log.append_events(
            [
                SourceRegistered(
                    source="late-source", url="https://late.example/news", publisher="Late"
                )
            ],
            actor="t",
        )
        await asyncio.sleep(0.05)
        await runner.catch_up()
        # then the OPML, still at the position it was at, keeps its event's stamp: only a
        # document the change moved is dated by when the server took it in
        opml = await service.opml("fr", BASE)  # not rendered before: dated afresh
        assert opml.validators.position == first.position
        assert opml.validators.last_modified == first.recorded_at


PERSON = FeedRequest(Scope.parse("person:x"), "atom", "en", BASE, explicit_lang=True)


async def _many_arrivals_after(
    log: EventLog, runner: ProjectionRunner, service: FeedService, count: int
) -> None:
    """Arrivals of events that change no person: each source registered, taken in at once."""
    for number in range(count):
        await log.append_events(
            [
                SourceRegistered(
                    source=f"s{number}", url=f"https://e.example/{number}", publisher="P"
                )
            ],
            actor="t",
        )
        service.applied(await runner.catch_up())


async def test_a_late_change_s_date_never_moves_back_however_many_arrivals_follow(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (a server keeps this many arrivals apart before merging the older ones)
    monkeypatch.setattr(_service, "_ARRIVALS_KEPT", 4)
    async with await EventLog.open(sqlite_url) as log:
        # given a server that dated a person's feed by when it took a change in, after the
        # change's stamp (a reader holds that date)
        service, runner = await _serving(log)
        await _a_change_taken_in_late(log, runner)
        first = await service.describe(PERSON)
        copy = await service.render(PERSON)
        (_, change) = await log.events()
        assert change.recorded_at < first.last_modified == copy.validators.last_modified
        # when many later arrivals, none of them about that person, are taken in
        await _many_arrivals_after(log, runner, service, 20)
        # then the feed, unchanged, is dated no earlier than before: its stamp again (as
        # when older arrivals were forgotten) could share a second with an earlier
        # version's date, and answer 304 to a reader that never saw the change
        later = await service.describe(PERSON)
        assert later.position == first.position
        assert later.last_modified >= first.last_modified
        # and the document kept from before is sent with that date, its bytes unchanged, as
        # a 304 would give it: a reader holding the earlier date gets it once, not every time
        validators, kept = await service.lookup(PERSON)
        assert kept is not None
        assert kept.validators == validators == later
        assert kept.body == copy.body
        assert (await service.render(PERSON)).validators == later
