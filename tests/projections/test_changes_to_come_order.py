"""Changes to come are listed by the day they were reported, then by claim, in a history
whichever way it is asked for and in a post's state alike, whatever order the log holds them
in; so are the claims a history's tenure lists among its evidence without an effect of their
own."""

from __future__ import annotations

from typing import Any

from leaderlog.log import EventLog
from tests.projections.logs import append, current, published_source, record
from tests.projections.story import Story

ENTITIES = [
    record("org.registered", org="a", name="A"),
    record("post.defined", post="p", org="a", title="P"),
    record("person.registered", person="x", name="X"),
    record("person.registered", person="y", name="Y"),
    published_source("march", "2025-03-01"),
    published_source("february", "2025-02-01"),
]


def _expected(name: str, source: str, person: str, **more: Any) -> dict[str, Any]:
    return record(
        "claim.reported",
        claim=name,
        source=source,
        kind="appointment",
        person=person,
        post="p",
        capacity="permanent",
        modality="expected",
        attribution={"kind": "outlet"},
        **more,
    )


async def test_changes_to_come_are_listed_by_the_day_they_were_reported(
    sqlite_url: str,
) -> None:
    # given two expected appointments to post p: "aa", from a source published in March,
    # recorded before "bb", from one published in February (ids and log order both in the
    # other order than the days they were reported)
    records = [*ENTITIES, _expected("aa", "march", "x"), _expected("bb", "february", "y")]
    async with await EventLog.open(sqlite_url) as log:
        await append(log, records)
        queries = await current(log)
        # when the post's history, and its organisation's, are asked for
        of_post = await queries.history(post="p")
        of_org = await queries.history(org="a")
        _, in_parts, _ = await queries.history_in_parts(org="a")
        listed_in_parts = list(in_parts)
    # then the change reported in February comes first in each
    for pending in (of_post["pending"], of_org["pending"], listed_in_parts):
        assert [(item["claim"], item["reported"]["date"]) for item in pending] == [
            ("bb", "2025-02-01"),
            ("aa", "2025-03-01"),
        ]


async def _pending_in_state(url: str, claims: list[dict[str, Any]]) -> list[str]:
    async with await EventLog.open(url) as log:
        await append(log, [*ENTITIES, *claims])
        queries = await current(log)
        state = await queries.state(org="a", as_of="2025-06-01")
    return [item["claim"] for item in state["posts"][0]["pending"]]


async def test_state_lists_changes_to_come_by_the_day_they_were_reported(
    sqlite_url: str, tmp_path: Any
) -> None:
    # given two expected appointments to post p: "aa" from a source published in March and
    # "bb" from one published in February, recorded in one order in a log and in the other
    # order in another log
    aa, bb = _expected("aa", "march", "x"), _expected("bb", "february", "y")
    # when each log's state is asked for on a day both are still to come
    first = await _pending_in_state(sqlite_url, [aa, bb])
    second = await _pending_in_state(f"sqlite:///{tmp_path / 'other.db'}", [bb, aa])
    # then both list the change reported in February first, as history does
    assert first == second == ["bb", "aa"]


async def _evidence_in_history(url: str, claims: list[dict[str, Any]]) -> list[str]:
    async with await EventLog.open(url) as log:
        await append(log, [*ENTITIES, *claims])
        queries = await current(log)
        history = await queries.history(post="p")
    (tenure,) = history["tenures"]
    return [item["claim"] for item in tenure["evidence"]]


async def test_history_lists_evidence_without_effect_by_the_day_it_was_reported(
    sqlite_url: str, tmp_path: Any
) -> None:
    # given X appointed on 1 January 2025, and two expected appointments of X dated that
    # day (the start already known): "late" from the March source and "early" from the
    # February one, recorded in one order in a log and in the other order in another log
    held = record(
        "claim.reported",
        claim="held",
        source="february",
        kind="appointment",
        person="x",
        post="p",
        capacity="permanent",
        modality="occurred",
        attribution={"kind": "outlet"},
        effective={"date": "2025-01-01", "qualifier": "on"},
    )
    day = {"date": "2025-01-01", "qualifier": "on"}
    late = _expected("late", "march", "x", effective=day)
    early = _expected("early", "february", "x", effective=day)
    # when each log's history of the post is asked for
    first = await _evidence_in_history(sqlite_url, [held, late, early])
    second = await _evidence_in_history(f"sqlite:///{tmp_path / 'other.db'}", [held, early, late])
    # then both list the tenure's evidence in the same order: the claim that opened it, then
    # the reports of its start by the day they were reported
    assert first == second == ["held", "early", "late"]


def test_a_change_reported_by_a_source_out_after_a_month_comes_after_one_out_in_it() -> None:
    # given two expected appointments: "aa" from a source published "after 2025-05" (out
    # on 1 June at the soonest) and "bb" from one published on 20 May
    story = Story(published={"late": None, "early": "2025-05-20"})
    story.published["late"] = {"date": "2025-05", "qualifier": "after", "text": None}
    story.report("aa", modality="expected", source="late", person="x")
    story.report("bb", modality="expected", source="early", person="y")
    # when the post's state is asked for on a day both are still to come
    pending = story.pending("2025-06-15")
    # then the one reported on 20 May comes first, as it was out before the other
    assert pending == ["bb", "aa"]
