"""A claim's answer: the disputes of other claims that name it, and its own sources'
requests for comment, each as the rule for them says, at the edges of the rule."""

from __future__ import annotations

from typing import Any

from leaderlog.log import EventLog
from tests.projections.logs import HAMMER_CAPTION, append, current, record


def _claim(name: str, source: str, person: str, post: str) -> dict[str, Any]:
    return record(
        "claim.reported",
        claim=name,
        source=source,
        kind="incumbency",
        person=person,
        post=post,
        capacity="unspecified",
        modality="occurred",
        effective={"date": "2025-01-01"},
        attribution={"kind": "outlet"},
    )


def _source(name: str, publisher: str) -> dict[str, Any]:
    return record(
        "source.registered", source=name, url=f"https://e.org/{name}", publisher=publisher
    )


def _log() -> list[dict[str, Any]]:
    """Organisation a with post p; people x, y and z; source s (of the claim "ca" about x)
    and source t (of the claims "cb" and "cz", about y and z, that dispute it)."""
    return [
        record("org.registered", org="a", name="A"),
        record("post.defined", post="p", org="a", title="P"),
        record("person.registered", person="x", name="X"),
        record("person.registered", person="y", name="Y"),
        record("person.registered", person="z", name="Z"),
        _source("s", "S"),
        _source("t", "T"),
        _claim("ca", "s", "x", "p"),
        _claim("cb", "t", "y", "p"),
        _claim("cz", "t", "z", "p"),
    ]


async def test_disputes_naming_a_claim_are_listed_in_the_order_they_were_made(
    sqlite_url: str,
) -> None:
    # given "cz" disputing "ca" first, then "cb" (ids in the other order)
    async with await EventLog.open(sqlite_url) as log:
        await append(log, _log())
        await append(
            log, [record("claim.disputed", claim="cz", reason="first", conflicts_with=["ca"])]
        )
        await append(
            log, [record("claim.disputed", claim="cb", reason="second", conflicts_with=["ca"])]
        )
        queries = await current(log)
        # when the disputed claim is asked for
        disputed_by = (await queries.claim("ca"))["disputed_by"]
    # then its disputes are listed in the order they were made, not by claim id
    assert [(item["claim"], item["reason"]) for item in disputed_by] == [
        ("cz", "first"),
        ("cb", "second"),
    ]
    assert disputed_by[0]["position"] < disputed_by[1]["position"]


async def test_a_claim_disputed_twice_lists_only_its_latest_dispute(sqlite_url: str) -> None:
    # given "cz" disputing "ca", then disputing it again for another reason
    async with await EventLog.open(sqlite_url) as log:
        await append(log, _log())
        await append(
            log, [record("claim.disputed", claim="cz", reason="old", conflicts_with=["ca"])]
        )
        (latest,) = await append(
            log, [record("claim.disputed", claim="cz", reason="new", conflicts_with=["ca"])]
        )
        queries = await current(log)
        # when the disputed claim is asked for
        disputed_by = (await queries.claim("ca"))["disputed_by"]
    # then the disputing claim is listed once, with its latest dispute (the rest is in its
    # own lifecycle)
    assert [(item["claim"], item["position"], item["reason"]) for item in disputed_by] == [
        ("cz", latest, "new")
    ]


async def test_a_claim_lists_the_requests_for_comment_of_its_own_sources_only(
    sqlite_url: str,
) -> None:
    # given "ca" (from s) disputed by "cb" (from t), and a request for comment each source
    # recorded
    async with await EventLog.open(sqlite_url) as log:
        await append(log, _log())
        await append(
            log,
            [
                record("claim.disputed", claim="cb", source="t", reason="r", conflicts_with=["ca"]),
                record("comment.requested", source="t", org="a", outcome="declined"),
                record("comment.requested", source="s", org="a", outcome="no_response"),
            ],
        )
        queries = await current(log)
        # when the disputed claim is asked for
        answer = await queries.claim("ca")
    # then the disputing claim's source is among its sources, but only its own source's
    # request for comment is listed: the other is the disputing claim's story
    assert set(answer["sources"]) == {"s", "t"}
    assert [(item["source"], item["outcome"]) for item in answer["comments"]] == [
        ("s", "no_response")
    ]


# What Queries.claim documents of a claim's current version: its internal anchors (the
# days a history is ordered and counted by) are worked out, never shown.
CURRENT_MEMBERS = {
    "source",
    "kind",
    "person",
    "name",
    "post",
    "post_title",
    "org",
    "capacity",
    "cause",
    "effective",
    "modality",
    "attribution",
    "quote",
    "locator",
    "confirmed",
    "confirmed_effective",
    "sources",
    "disputes",
    "reported_position",
    "counts_from",
}


async def test_a_claim_s_current_version_shows_the_documented_members_only(
    seeded_log: EventLog,
) -> None:
    # given the seeds, when a claim is asked for
    answer = await (await current(seeded_log)).claim(HAMMER_CAPTION)
    # then its current version holds the members documented, and no internal anchor
    assert set(answer["current"]) == CURRENT_MEMBERS
