"""A correction attributing a claim to another source (changes.source), in every read model."""

from __future__ import annotations

import datetime as dt

import feedparser
import pytest

from leaderlog.errors import BatchError
from leaderlog.events import ClaimCorrected
from leaderlog.feeds import FeedRequest, Scope
from leaderlog.log import EventLog
from leaderlog.projections.claim_versions import ClaimVersion, evolve_claim
from tests.feeds.logs import BASE, project
from tests.projections.logs import FOX, HAMMER_BODY, SEED_COUNT, append, current, record

WIRE = "wire-b"
CORRECTION = SEED_COUNT + 2


def _post(state: dict[str, object], post: str) -> dict[str, object]:
    posts = state["posts"]
    assert isinstance(posts, list)
    found: dict[str, object] = next(p for p in posts if p["post"]["post"] == post)
    return found


async def _misattributed(log: EventLog) -> None:
    """Given the seeds, then the body text's claim put right: the wire reported it, not Fox."""
    await append(
        log,
        [
            record(
                "source.registered",
                source=WIRE,
                url="https://example.com/wire-b",
                publisher="Example Wire",
                published={"date": "2025-06-10"},
            ),
            record(
                "claim.corrected",
                claim=HAMMER_BODY,
                changes={"source": WIRE},
                reason="Misattributed: the wire reported it.",
            ),
        ],
    )


async def test_state_and_history_show_the_new_source_as_known_after_the_correction(
    seeded_log: EventLog,
) -> None:
    await _misattributed(seeded_log)
    queries = await current(seeded_log)
    # as known before the correction, the claim rests on Fox and counts from its date
    before = await queries.state(org="ice-hsi", as_of="2025-06-05", known_at=SEED_COUNT)
    holders = _post(before, "ice-hsi-ead")["holders"]
    assert HAMMER_BODY in holders[0]["claims"]  # type: ignore[index]
    then = await queries.history(post="ice-hsi-ead", known_at=SEED_COUNT)
    (evidence,) = [e for e in then["tenures"][0]["evidence"] if e["claim"] == HAMMER_BODY]
    assert (evidence["source"], evidence["sources"]) == (FOX, [FOX])
    assert set(then["sources"]) == {FOX}
    # as known after it, the claim is the wire's, and counts from the wire's date (10 June)
    after = await queries.state(org="ice-hsi", as_of="2025-06-05")
    assert HAMMER_BODY not in _post(after, "ice-hsi-ead")["holders"][0]["claims"]  # type: ignore[index]
    later = await queries.state(org="ice-hsi", as_of="2025-06-10")
    assert HAMMER_BODY in _post(later, "ice-hsi-ead")["holders"][0]["claims"]  # type: ignore[index]
    now = await queries.history(post="ice-hsi-ead")
    (evidence,) = [e for e in now["tenures"][0]["evidence"] if e["claim"] == HAMMER_BODY]
    assert evidence["source"] == WIRE
    # the report that named Fox stays in the lifecycle, so Fox stays among its sources
    assert evidence["sources"] == [FOX, WIRE]
    assert now["sources"][WIRE]["publisher"] == "Example Wire"


async def test_the_claim_lifecycle_shows_the_source_as_known_at_each_position(
    seeded_log: EventLog,
) -> None:
    await _misattributed(seeded_log)
    queries = await current(seeded_log)
    early = await queries.claim(HAMMER_BODY, known_at=SEED_COUNT)
    assert early["current"]["source"] == FOX
    assert early["current"]["counts_from"]["date"] == "2025-05"
    assert WIRE not in early["sources"]
    answer = await queries.claim(HAMMER_BODY)
    assert answer["current"]["source"] == WIRE
    assert answer["current"]["counts_from"] == {
        "date": "2025-06-10",
        "qualifier": "on",
        "text": None,
        "basis": "published",
        "source": WIRE,
    }
    report, correction = answer["lifecycle"]
    assert (report["type"], report["source"]) == ("claim.reported", FOX)
    assert (correction["position"], correction["changes"]) == (CORRECTION, {"source": WIRE})
    assert correction["source"] is None  # the correction names no source of its own
    assert answer["sources"][WIRE]["url"] == "https://example.com/wire-b"


async def test_audit_finds_the_correction_and_later_events_under_the_new_source(
    seeded_log: EventLog,
) -> None:
    await _misattributed(seeded_log)
    await append(
        seeded_log, [record("claim.retracted", claim=HAMMER_BODY, reason="Withdrawn by the wire.")]
    )
    queries = await current(seeded_log)
    by_wire = await queries.audit(source=WIRE)
    assert [(e["position"], e["type"]) for e in by_wire["events"]] == [
        (CORRECTION - 1, "source.registered"),
        (CORRECTION, "claim.corrected"),
        (CORRECTION + 1, "claim.retracted"),
    ]
    by_publisher = await queries.audit(publisher="Example Wire", type="claim.corrected")
    assert [e["claim"] for e in by_publisher["events"]] == [HAMMER_BODY]
    # the report itself was recorded from Fox, and is listed under Fox still
    reports = await queries.audit(source=FOX, type="claim.reported", status="retracted")
    assert HAMMER_BODY in [e["claim"] for e in reports["events"]]
    claims = await seeded_log.store.query(
        "SELECT source, publisher FROM p_audit_claims WHERE claim = ?", (HAMMER_BODY,)
    )
    assert [tuple(row) for row in claims] == [(WIRE, "Example Wire")]


async def test_the_feed_entry_links_to_and_names_the_new_source(seeded_log: EventLog) -> None:
    service = await project(seeded_log)
    request = FeedRequest(Scope.parse("all"), "atom", "en", BASE, None, explicit_lang=True)
    first = feedparser.parse((await service.render(request)).body)
    await _misattributed(seeded_log)
    service = await project(seeded_log)
    second = feedparser.parse((await service.render(request)).body)

    def entry(parsed: feedparser.FeedParserDict) -> feedparser.FeedParserDict:
        return next(e for e in parsed.entries if "Robert Hammer, executive" in e.summary)

    before, after = entry(first), entry(second)
    assert before.id == after.id
    assert "foxnews.com" in before.link and "Source: Fox News" in before.summary
    assert after.link == "https://example.com/wire-b"
    assert "Source: Example Wire (June 10, 2025), https://example.com/wire-b." in after.summary
    assert "Source: Fox News" not in after.summary
    assert "Changed source: Fox News (about May 2025) \u2192 Example Wire (June 10, 2025)." in (
        after.summary
    )


async def test_an_unregistered_new_source_is_refused_and_nothing_is_written(
    seeded_log: EventLog,
) -> None:
    head, _ = await seeded_log.store.head()
    with pytest.raises(BatchError) as refused:
        await seeded_log.append_events(
            [
                ClaimCorrected(
                    claim=HAMMER_BODY, changes={"source": "nobody"}, reason="Misattributed."
                )
            ],
            actor="test",
        )
    (problem,) = refused.value.problems
    assert problem.rule == "reference"
    assert "source 'nobody', which does not exist" in str(problem)
    assert (await seeded_log.store.head())[0] == head


def test_an_effect_counted_from_a_confirmation_stays_when_the_claim_is_attributed_anew() -> None:
    published = {"wire-b": {"date": "2025-05-20"}}.get
    reported = {
        "claim": "c",
        "source": "fox",
        "kind": "appointment",
        "person": "p",
        "post": "q",
        "capacity": "acting",
        "modality": "announced",
        "attribution": {"kind": "outlet", "parties": []},
    }

    def evolve(previous: ClaimVersion | None, kind: str, data: dict[str, object]) -> ClaimVersion:
        return evolve_claim(
            previous,
            kind,
            data,
            position=1 if previous is None else previous.known_from + 1,
            recorded_at="2025-06-01T12:00:00Z",
            actor="a",
            published=published,
        )

    # given an announced claim, confirmed the day it was recorded by a source with no date of
    # its own (so its effect counts from that day, which is also the report's)
    claim = evolve(None, "claim.reported", reported)
    claim = evolve(claim, "claim.confirmed", {"claim": "c", "source": "cnn"})
    assert claim.effect_day() == dt.date(2025, 6, 1)
    # when a correction attributes the report to a source out since 20 May
    claim = evolve(
        claim, "claim.corrected", {"claim": "c", "changes": {"source": WIRE}, "reason": "r"}
    )
    # then the report counts from the wire's date, but the effect still from the confirmation
    assert claim.doc["reported_anchor"]["date"] == "2025-05-20"
    assert claim.effect_day() == dt.date(2025, 6, 1)
