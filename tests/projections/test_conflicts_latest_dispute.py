"""Conflicts in a post's state (design, "Projections": "conflicts: ... claims that dispute
each other"): a claim's disputes link it to the claims its latest dispute names, as the
conflict itself lists them. A dispute superseded by a later one of the same claim does not
bring the claim into the state of a day on which it bears on nothing."""

from __future__ import annotations

from typing import Any

from leaderlog.log import EventLog
from tests.projections.logs import append, at, current, published_source, record


def held(name: str, source: str, post: str = "p") -> dict[str, Any]:
    return record(
        "claim.reported",
        claim=name,
        source=source,
        kind="incumbency",
        person="x",
        post=post,
        capacity="acting",
        modality="occurred",
        attribution={"kind": "outlet"},
    )


def _world() -> list[dict[str, Any]]:
    """x holds p from 10 March (source early); a source of 1 June says so again (late)."""
    return [
        record("org.registered", org="a", name="A"),
        record("post.defined", post="p", org="a", title="P"),
        record("person.registered", person="x", name="X"),
        published_source("early", "2025-03-10"),
        published_source("late", "2025-06-01"),
        held("holding", "early"),
        held("later-report", "late"),
    ]


async def _conflicts_on(sqlite_url: str, records: list[dict[str, Any]], as_of: str) -> Any:
    async with await EventLog.open(sqlite_url) as log:
        await append(log, records, recorded_at=at("2025-07-01T00:00:00Z"))
        queries = await current(log)
        state = await queries.state(org="a", as_of=as_of)
    (post,) = state["posts"]
    return post["conflicts"]


async def test_a_dispute_superseded_by_a_later_one_does_not_bear_on_an_earlier_day(
    sqlite_url: str,
) -> None:
    # given the later report disputed first as conflicting with the holding, then disputed
    # again, naming no other claim
    records = [
        *_world(),
        record(
            "claim.disputed",
            claim="later-report",
            reason="first doubt",
            conflicts_with=["holding"],
        ),
        record("claim.disputed", claim="later-report", reason="second doubt"),
    ]
    # when asked for 1 April, before the later report was out
    conflicts = await _conflicts_on(sqlite_url, records, "2025-04-01")
    # then no conflict is listed: the later report says nothing about that day, and its
    # latest dispute names no claim that does
    assert conflicts == []


async def test_the_latest_dispute_naming_the_holding_bears_on_an_earlier_day(
    sqlite_url: str,
) -> None:
    # given the later report disputed, its latest dispute naming the holding
    records = [
        *_world(),
        record("claim.disputed", claim="later-report", reason="first doubt"),
        record(
            "claim.disputed",
            claim="later-report",
            reason="second doubt",
            conflicts_with=["holding"],
        ),
    ]
    # when asked for 1 April
    conflicts = await _conflicts_on(sqlite_url, records, "2025-04-01")
    # then the conflict is listed, with both claims and the latest reason
    assert conflicts == [
        {
            "kind": "disputed",
            "claims": ["later-report", "holding"],
            "persons": ["x"],
            "reason": "second doubt",
        }
    ]
