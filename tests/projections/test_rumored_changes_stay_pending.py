"""Minimal cases where the leadership state disagreed with the reference model of
test_found_reference_state, decided by the design and the README."""

from __future__ import annotations

from typing import Any

import pytest

from leaderlog.log import EventLog
from tests.projections.logs import append, at, current, record


def _world() -> list[dict[str, Any]]:
    """Organisation a with post p, person y, and source s published on 10 March 2025."""
    return [
        record("org.registered", org="a", name="A"),
        record("post.defined", post="p", org="a", title="P"),
        record("person.registered", person="y", name="Y"),
        record(
            "source.registered",
            source="s",
            url="https://e.org/s",
            publisher="S",
            published={"date": "2025-03-10"},
        ),
    ]


def _claim(name: str, kind: str, **more: Any) -> dict[str, Any]:
    return record(
        "claim.reported",
        **{"claim": name, "source": "s", "kind": kind, "person": "y", "post": "p"},
        **{"capacity": "acting", "modality": "occurred", **more},
        attribution={"kind": "anonymous"},
    )


ON_10_MARCH = {"date": "2025-03-10", "qualifier": "on"}


async def _pending_on(sqlite_url: str, records: list[dict[str, Any]], as_of: str) -> list[str]:
    async with await EventLog.open(sqlite_url) as log:
        await append(log, records, recorded_at=at("2025-03-12T00:00:00Z"))
        queries = await current(log)
        state = await queries.state(org="a", as_of=as_of)
        history = await queries.history(post="p")
    (post,) = state["posts"]
    assert [item["claim"] for item in history["pending"]] == [
        item["claim"] for item in post["pending"]
    ]
    return [item["claim"] for item in post["pending"]]


@pytest.mark.parametrize("modality", ["expected", "announced"])
async def test_an_announced_or_expected_start_already_in_effect_is_not_pending(
    sqlite_url: str, modality: str
) -> None:
    # given y appointed acting on 10 March, and an undated report that y is to be appointed
    records = [
        *_world(),
        _claim("happened", "appointment", effective=ON_10_MARCH),
        _claim("to-come", "appointment", modality=modality),
    ]
    # when asked for the state on 20 March, then the report is that start reported again
    assert await _pending_on(sqlite_url, records, "2025-03-20") == []


async def test_a_rumored_appointment_stays_pending_even_when_its_start_is_in_effect(
    sqlite_url: str,
) -> None:
    # given y appointed acting on 10 March, and an undated rumour that y is to be appointed
    records = [
        *_world(),
        _claim("happened", "appointment", effective=ON_10_MARCH),
        _claim("rumour", "appointment", modality="rumored"),
    ]
    # when asked for the state on 20 March
    pending = await _pending_on(sqlite_url, records, "2025-03-20")
    # then the rumour stays pending until a confirmation: only an announced or expected
    # change is a start already known reported again
    assert pending == ["rumour"]


async def test_a_rumored_departure_stays_pending_even_when_the_end_is_in_effect(
    sqlite_url: str,
) -> None:
    # given y appointed acting in February and leaving on 10 March, and a rumour dated
    # 10 March that y is to leave
    records = [
        *_world(),
        _claim("start", "appointment", effective={"date": "2025-02-01", "qualifier": "on"}),
        _claim("left", "departure", effective=ON_10_MARCH),
        _claim("rumour", "departure", modality="rumored", effective=ON_10_MARCH),
    ]
    # when asked for the state on 20 March
    pending = await _pending_on(sqlite_url, records, "2025-03-20")
    # then the rumour stays pending until a confirmation
    assert pending == ["rumour"]
