"""How much memory a claim's answer holds: each stored version of a claim holds its whole state
so far (every source it was confirmed by), so the versions of a claim confirmed from article
after article add up to the square of its steps. Decoded all at once, a claim of 5,000 steps
took 1.2 GB to answer 3.6 MB; each is decoded in turn, only its step kept."""

from __future__ import annotations

import json
import tracemalloc

from leaderlog.events import ClaimConfirmed, Event, SourceRegistered
from leaderlog.log import EventLog
from tests.projections.logs import HAMMER_CAPTION, current

STEPS = 300
# About 8x the answer's JSON is measured, the answer's own objects most of it (47x when every
# version was decoded at once, and growing with the steps); the bound leaves room for other
# Python versions without letting the old cost back in.
TIMES_THE_ANSWER = 16


async def test_a_claim_confirmed_by_many_sources_is_answered_in_memory_of_its_steps(
    seeded_log: EventLog,
) -> None:
    # given the caption's claim, confirmed 300 times, each time by a new article
    events: list[Event] = []
    for number in range(STEPS):
        source = f"follow-up-{number}"
        events.append(
            SourceRegistered(
                source=source,
                url=f"https://wire.example/{number}",
                publisher="Wire",
                title=f"Follow-up article number {number} on the leadership",
            )
        )
        events.append(ClaimConfirmed(claim=HAMMER_CAPTION, source=source))
    await seeded_log.append_events(events, actor="test")
    queries = await current(seeded_log)
    # when its answer is worked out
    tracemalloc.start()
    try:
        answer = await queries.claim(HAMMER_CAPTION)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # then it has every step
    sources = [f"follow-up-{number}" for number in range(STEPS)]
    assert [step["source"] for step in answer["lifecycle"][-STEPS:]] == sources
    assert answer["current"]["sources"][-STEPS:] == sources
    # and took memory in proportion to them, not to the square of them
    assert peak < TIMES_THE_ANSWER * len(json.dumps(answer))
