"""Closing an EventLog while callers go on appending, on every backend."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from leaderlog.errors import StoreUnavailable
from leaderlog.events import PersonRegistered
from leaderlog.log import AppendOutcome, EventLog


def person(name: str) -> PersonRegistered:
    return PersonRegistered(person=name, name=name.title())


async def test_an_append_made_once_close_has_begun_is_refused_and_the_earlier_one_answered(
    store_url: str,
) -> None:
    log = await EventLog.open(store_url)
    # given an append under way, and a close begun after it
    earlier = asyncio.create_task(log.append_events([person("earlier")], actor="t"))
    await asyncio.sleep(0)
    closing = asyncio.create_task(log.close())
    await asyncio.sleep(0)
    # when another append is made meanwhile
    with pytest.raises(StoreUnavailable, match="closed"):
        await log.append_events([person("later")], actor="t")
    # then the one under way is answered and written, the later one is not
    assert (await earlier).appended == 1
    await closing
    async with await EventLog.open(store_url) as reopened:
        assert [event.stream for event in await reopened.events()] == ["person-earlier"]


async def test_close_returns_while_other_callers_go_on_appending(store_url: str) -> None:
    log = await EventLog.open(store_url)
    answered: list[AppendOutcome] = []

    async def append_until_refused(caller: int) -> StoreUnavailable:
        for turn in itertools.count():
            try:
                answered.append(
                    await log.append_events([person(f"caller{caller}-{turn}")], actor="t")
                )
            except StoreUnavailable as refused:
                return refused
        raise AssertionError("unreachable")

    # given callers that append again as soon as they are answered
    callers = [asyncio.create_task(append_until_refused(caller)) for caller in range(3)]
    while len(answered) < 6:
        await asyncio.sleep(0)
    # when the log is closed meanwhile
    async with asyncio.timeout(30):  # a close that never returns would hold the run
        await log.close()
        refusals = await asyncio.gather(*callers)
    # then close returns, each caller is told the log is closed, and every append answered
    # before is stored
    assert all("closed" in str(refused) for refused in refusals)
    async with await EventLog.open(store_url) as reopened:
        stored = [event.position for event in await reopened.events()]
        assert (await reopened.store.verify()).ok
    assert sorted(outcome.positions[0] for outcome in answered) == stored


async def test_close_twice_and_appends_after_it_say_the_log_is_closed(store_url: str) -> None:
    log = await EventLog.open(store_url)
    await log.append_events([person("only")], actor="t")
    await asyncio.gather(log.close(), log.close())
    await log.close()
    with pytest.raises(StoreUnavailable, match="closed"):
        await log.append_events([person("after")], actor="t")
    with pytest.raises(StoreUnavailable, match="closed"):
        await log.events()
