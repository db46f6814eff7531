"""The known-at axis of an answer names the position asked for and when that very position
was recorded: the log up to and including it."""

from __future__ import annotations

from leaderlog.log import EventLog
from tests.projections.logs import append, at, current, record


async def test_known_at_a_position_is_recorded_through_that_position_s_own_time(
    sqlite_url: str,
) -> None:
    async with await EventLog.open(sqlite_url) as log:
        # given a person recorded on 1 June, then another on 10 June
        (first,) = await append(
            log,
            [record("person.registered", person="x", name="X")],
            recorded_at=at("2025-06-01T00:00:00Z"),
        )
        (second,) = await append(
            log,
            [record("person.registered", person="y", name="Y")],
            recorded_at=at("2025-06-10T09:00:00Z"),
        )
        queries = await current(log)
        # when asked as known at each position
        known = [await queries.resolve_known_at(position) for position in (first, second)]
        state = await queries.state(known_at=second)
    # then each is recorded through its own position's time, not the one before it
    assert known == [
        {"position": first, "recorded_through": "2025-06-01T00:00:00.000000Z"},
        {"position": second, "recorded_through": "2025-06-10T09:00:00.000000Z"},
    ]
    assert state["known_at"] == known[1]
