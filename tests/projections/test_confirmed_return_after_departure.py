"""A change that was only expected takes effect once confirmed (design, "Projections": they
"stay pending until a confirmation (or a correction to occurred) makes them take effect"),
even when its person left the post before it was reported.

The report of an expected change says it had not happened yet when its source was out, so
the change cannot be the holding that an earlier departure ended: it is a return."""

from __future__ import annotations

from typing import Any

import pytest

from leaderlog.log import EventLog
from tests.projections.logs import append, at, current, published_source, record


def _claim(name: str, source: str, kind: str, **more: Any) -> dict[str, Any]:
    return record(
        "claim.reported",
        **{"claim": name, "source": source, "kind": kind, "person": "x", "post": "ceo"},
        **{"capacity": "permanent", "attribution": {"kind": "official"}, **more},
    )


def _left_then_expected_back(return_date: dict[str, Any]) -> list[dict[str, Any]]:
    """x appointed in January and resigning on 1 June (both reported on 2 June), then
    reported on 15 June as expected to come back, dated ``return_date``."""
    return [
        record("org.registered", org="acme", name="Acme"),
        record("post.defined", post="ceo", org="acme", title="CEO"),
        record("person.registered", person="x", name="X"),
        published_source("early", "2025-06-02"),
        published_source("rumour", "2025-06-15"),
        published_source("later", "2025-07-01"),
        _claim(
            "start", "early", "appointment", modality="occurred", effective={"date": "2025-01-10"}
        ),
        _claim(
            "left",
            "early",
            "departure",
            modality="occurred",
            cause="resignation",
            effective={"date": "2025-06-01"},
        ),
        _claim("back", "rumour", "appointment", modality="expected", effective=return_date),
    ]


SOON = {"date": None, "text": "soon"}
THIS_YEAR = {"date": "2025"}
CONFIRMED = record("claim.confirmed", claim="back", source="later")


async def _holders_and_history(
    sqlite_url: str, records: list[dict[str, Any]], as_of: str
) -> tuple[list[str], list[tuple[Any, Any]]]:
    async with await EventLog.open(sqlite_url) as log:
        await append(log, records, recorded_at=at("2025-07-02T00:00:00Z"))
        queries = await current(log)
        state = await queries.state(org="acme", as_of=as_of)
        history = await queries.history(post="ceo")
    (post,) = state["posts"]
    holders = [holder["person"] for holder in post["holders"]]
    spans = [
        (
            tenure["start"]["date"] if tenure["start"] else None,
            tenure["end"]["date"] if tenure["end"] else None,
        )
        for tenure in history["tenures"]
    ]
    return holders, spans


@pytest.mark.parametrize(
    ("return_date", "as_of"),
    # A date of 2025 counts from its last day: asked then, the return has taken effect.
    [(SOON, "2025-07-05"), (THIS_YEAR, "2025-12-31")],
    ids=["undated", "dated-2025"],
)
async def test_a_confirmed_return_after_a_departure_holds_the_post(
    sqlite_url: str, return_date: dict[str, Any], as_of: str
) -> None:
    # given x left on 1 June, and a report of 15 June that x is expected back, confirmed by
    # a source of 1 July
    records = [*_left_then_expected_back(return_date), CONFIRMED]
    # when asked who holds the post once the return counts
    holders, spans = await _holders_and_history(sqlite_url, records, as_of)
    # then x holds it again, in a tenure of its own after the one that ended on 1 June
    assert holders == ["x"]
    assert len(spans) == 2
    assert spans[0] == ("2025-01-10", "2025-06-01")
    assert spans[1][1] is None


async def test_a_confirmed_return_is_not_pending(sqlite_url: str) -> None:
    # given x left on 1 June, and a report of 15 June that x is expected back soon, confirmed
    records = [*_left_then_expected_back(SOON), CONFIRMED]
    async with await EventLog.open(sqlite_url) as log:
        await append(log, records, recorded_at=at("2025-07-02T00:00:00Z"))
        queries = await current(log)
        state = await queries.state(org="acme", as_of="2025-07-05")
    (post,) = state["posts"]
    # then nothing is left to come, and the post is filled
    assert post["pending"] == []
    assert post["vacancy"] == "filled"


async def test_an_undated_occurred_appointment_may_still_be_the_holding_that_ended(
    sqlite_url: str,
) -> None:
    # given x left on 1 June, and a report of 15 June, without a date, that x heads the
    # post: it may describe the holding before the departure (the rule is unchanged)
    records = _left_then_expected_back(SOON)
    records[-1] = _claim("back", "rumour", "incumbency", modality="occurred")
    holders, spans = await _holders_and_history(sqlite_url, records, "2025-07-05")
    # then it is evidence of the tenure that ended, not a return
    assert holders == []
    assert spans == [("2025-01-10", "2025-06-01")]


async def test_an_undated_incumbency_against_a_disputed_departure_holds_the_post(
    sqlite_url: str,
) -> None:
    # given x left on 1 June by one report, disputed by a source of 15 June saying, without
    # a date, that x heads the post ("she remains deputy director")
    records = _left_then_expected_back(SOON)
    records[-1] = _claim("back", "rumour", "incumbency", modality="occurred")
    records.append(
        record(
            "claim.disputed",
            claim="left",
            reason="x remains",
            source="rumour",
            conflicts_with=["back"],
        )
    )
    async with await EventLog.open(sqlite_url) as log:
        await append(log, records, recorded_at=at("2025-07-02T00:00:00Z"))
        queries = await current(log)
        state = await queries.state(org="acme", as_of="2025-07-05")
    (post,) = state["posts"]
    # then x holds the post when asked after that source was out, where it was vacant, and
    # the dispute stands as a conflict
    assert [holder["person"] for holder in post["holders"]] == ["x"]
    assert post["vacancy"] == "filled"
    assert [conflict["kind"] for conflict in post["conflicts"]] == ["disputed"]


async def test_once_the_disputed_departure_is_confirmed_the_undated_incumbency_is_its_past(
    sqlite_url: str,
) -> None:
    # given the same, then the departure confirmed by a source of 1 July
    records = _left_then_expected_back(SOON)
    records[-1] = _claim("back", "rumour", "incumbency", modality="occurred")
    records += [
        record("claim.disputed", claim="left", reason="x remains", conflicts_with=["back"]),
        record("claim.confirmed", claim="left", source="later"),
    ]
    holders, spans = await _holders_and_history(sqlite_url, records, "2025-07-05")
    # then the departure stands, and the incumbency describes the holding it ended
    assert holders == []
    assert spans == [("2025-01-10", "2025-06-01")]
