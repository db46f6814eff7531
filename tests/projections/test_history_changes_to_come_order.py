"""A history's changes to come are listed by the day they were reported, then by claim,
whichever way the history is asked for and whatever order the log holds them in."""

from __future__ import annotations

from typing import Any

from leaderlog.log import EventLog
from tests.projections.logs import append, current, published_source, record


def _expected(name: str, source: str, person: str) -> dict[str, Any]:
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
    )


async def test_changes_to_come_are_listed_by_the_day_they_were_reported(
    sqlite_url: str,
) -> None:
    # given two expected appointments to post p: "aa", from a source published in March,
    # recorded before "bb", from one published in February (ids and log order both in the
    # other order than the days they were reported)
    records = [
        record("org.registered", org="a", name="A"),
        record("post.defined", post="p", org="a", title="P"),
        record("person.registered", person="x", name="X"),
        record("person.registered", person="y", name="Y"),
        published_source("march", "2025-03-01"),
        published_source("february", "2025-02-01"),
        _expected("aa", "march", "x"),
        _expected("bb", "february", "y"),
    ]
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
