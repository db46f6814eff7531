"""Answers asked of a log whose built-in projections stopped before an event a newer
leaderlog wrote: they name that event, which no wait gets past, rather than say that new
events are applied within moments (a server's clients retried for good), and an audit says
so rather than end early as if the log did."""

from __future__ import annotations

import pytest

from leaderlog.errors import ProjectionFailed, UnreadableEvent
from leaderlog.log import EventLog
from leaderlog.projections import BUILTIN, ProjectionRunner, Queries
from tests.projections.test_runner_stops_before_a_newer_event import (
    NEWER,
    UNKNOWN,
    Newer,
    _seeds_then,
)

STOPPED = "cannot be read: org.updated schema_version 99 is newer than this leaderlog"


async def _stopped(url: str, newer: Newer) -> tuple[EventLog, int]:
    position = await _seeds_then(url, newer)
    log = await EventLog.open(url)
    with pytest.raises(ProjectionFailed):
        await ProjectionRunner(log.store, [cls() for cls in BUILTIN.values()]).catch_up()
    return log, position


async def test_a_position_past_the_newer_event_names_it(sqlite_url: str) -> None:
    log, position = await _stopped(sqlite_url, NEWER)
    async with log:
        with pytest.raises(UnreadableEvent) as raised:
            await Queries(log.store).state(known_at=position + 1)
    assert raised.value.position == position
    assert STOPPED in str(raised.value)
    assert "run the leaderlog version that wrote it" in str(raised.value)
    assert "within moments" not in str(raised.value)


async def test_an_id_registered_after_it_names_it(sqlite_url: str) -> None:
    log, position = await _stopped(sqlite_url, UNKNOWN)
    async with log:
        with pytest.raises(UnreadableEvent, match=f"event at position {position} cannot be read"):
            await Queries(log.store).history(person="nobody-yet")


async def test_an_audit_that_would_end_before_it_names_it(sqlite_url: str) -> None:
    log, position = await _stopped(sqlite_url, NEWER)
    async with log:
        with pytest.raises(UnreadableEvent) as raised:
            await Queries(log.store).audit()
    assert raised.value.position == position


async def test_an_audit_page_that_ends_before_it_is_answered(sqlite_url: str) -> None:
    # given the events before the newer one, paged through
    log, position = await _stopped(sqlite_url, NEWER)
    async with log:
        answered = await Queries(log.store).audit(limit=5)
    # then a page with more after it is answered as ever
    assert [event["position"] for event in answered["events"]] == [1, 2, 3, 4, 5]
    assert answered["next_after"] == 5 < position
