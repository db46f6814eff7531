"""What a correction does to a claim's feed entry: the fields it clears, those it cannot, and
the feeds an entry corrected onto another post joins."""

from __future__ import annotations

import json
from typing import Any

from leaderlog._json import loads
from leaderlog.events import ClaimCorrected, OrgRegistered, PostDefined, new_event_id
from leaderlog.feeds import FeedRequest, FeedService, Scope
from leaderlog.log import EventLog
from leaderlog.projections.feed_entries import CURRENT_DOC, ENTRIES, SCOPES
from leaderlog.store import NewEvent
from tests.feeds.logs import BASE, GENALO_RETIREMENT, HAMMER_CAPTION, correct, project


async def _entry(log: EventLog, claim: str) -> dict[str, Any]:
    (doc,) = await log.store.query(
        f"SELECT v.doc FROM {ENTRIES} c {CURRENT_DOC} WHERE c.claim = ?", (claim,)
    )
    entry: dict[str, Any] = loads(doc[0])
    return entry


async def _json_items(service: FeedService, scope: str) -> list[dict[str, Any]]:
    request = FeedRequest(Scope.parse(scope), "json", "en", BASE, None, explicit_lang=True)
    items: list[dict[str, Any]] = json.loads((await service.render(request)).body)["items"]
    return items


async def test_a_correction_clearing_an_optional_field_removes_it_from_the_entry(
    seeded_log: EventLog,
) -> None:
    # given Genalo's retirement, reported as effective "soon"
    # when a correction clears its effective date
    await seeded_log.append_events(
        [ClaimCorrected(claim=GENALO_RETIREMENT, changes={"effective": None}, reason="Unsure.")],
        actor="test",
    )
    service = await project(seeded_log)
    # then the entry has no effective date any more (not one that is null), and says what
    # it was before
    entry = await _entry(seeded_log, GENALO_RETIREMENT)
    assert "effective" not in entry["fields"]
    (change,) = entry["events"][-1]["changes"]
    assert (change["field"], change["after"]) == ("effective", None)
    assert change["before"]["text"] == "soon"
    # and the feed shows no "Effective" line for it
    (item,) = [
        item
        for item in await _json_items(service, "person:kenneth-genalo")
        if item["id"] == entry["id"]
    ]
    assert "Effective:" not in item["content_text"]


async def test_an_older_log_s_correction_clearing_a_field_every_claim_has_changes_nothing(
    seeded_log: EventLog,
) -> None:
    # given a correction clearing the capacity of the caption's claim (acting), as versions
    # before the rule accepted it (written straight to the store, past today's rules)
    cleared = NewEvent(
        event_id=new_event_id(),
        stream=f"claim-{HAMMER_CAPTION}",
        type="claim.corrected",
        schema_version=1,
        data={"claim": HAMMER_CAPTION, "changes": {"capacity": None}, "reason": "old rules"},
    )
    await seeded_log.store.append([cleared], actor="test")
    await project(seeded_log)
    # then the entry keeps its capacity, and the correction lists no change to it
    entry = await _entry(seeded_log, HAMMER_CAPTION)
    assert entry["fields"]["capacity"] == "acting"
    assert entry["events"][-1]["type"] == "claim.corrected"
    assert entry["events"][-1]["changes"] == []


async def test_a_correction_onto_a_post_elsewhere_joins_the_feeds_of_its_organisations(
    seeded_log: EventLog,
) -> None:
    # given an organisation outside ICE's tree, with a unit and a post in the unit
    await seeded_log.append_events(
        [
            OrgRegistered(org="oversight", name="Oversight Board"),
            OrgRegistered(org="oversight-unit", name="Unit", parent="oversight"),
            PostDefined(post="unit-head", org="oversight-unit", title="Head of Unit"),
        ],
        actor="test",
    )
    # when the caption's claim (about ICE's HSI) is corrected onto the unit's post
    await correct(seeded_log, HAMMER_CAPTION, post="unit-head")
    await project(seeded_log)
    scopes = {
        row[0]
        for row in await seeded_log.store.query(
            f"SELECT scope FROM {SCOPES} WHERE claim = ?", (HAMMER_CAPTION,)
        )
    }
    # then the entry joins the feeds of the new post, its organisation and every ancestor,
    # and stays in those it was in (membership is never withdrawn)
    assert {"post:unit-head", "org:oversight-unit", "org:oversight"} <= scopes
    assert {"post:ice-hsi-ead", "org:ice-hsi", "org:ice", "org:dhs"} <= scopes
    entry = await _entry(seeded_log, HAMMER_CAPTION)
    assert entry["org"]["path"] == ["oversight", "oversight-unit"]
