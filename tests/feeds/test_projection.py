"""The feed entries read model: one entry per claim, versions, scopes, stamps, rebuilds."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from leaderlog._json import loads
from leaderlog.events import OrgRegistered, OrgUpdated, PersonRegistered, PostDefined
from leaderlog.feeds import FeedRequest, Scope
from leaderlog.log import EventLog, load_seeds
from leaderlog.projections.feed_entries import (
    CURRENT_DOC,
    ENTRIES,
    HEADS,
    PAGE_SIZE,
    SCOPES,
    VERSIONS,
    FeedEntriesProjection,
)
from leaderlog.projections.runner import ProjectionRunner
from tests.conftest import SEEDS
from tests.feeds.logs import (
    BASE,
    GENALO_RETIREMENT,
    HAMMER_CAPTION,
    SEED_CLAIMS,
    _raw,
    add_claims,
    add_hostile,
    claim_event_id,
    correct,
    generated_claim,
    project,
    retract,
)

TABLES = (
    "p_feed_entries_entities",
    ENTRIES,
    VERSIONS,
    SCOPES,
    HEADS,
    "p_feed_entries_clock",
)


async def _dump(log: EventLog) -> dict[str, list[tuple[Any, ...]]]:
    return {
        table: sorted(await log.store.query(f"SELECT * FROM {table}"), key=repr) for table in TABLES
    }


async def test_one_entry_per_claim_with_the_reported_event_id(seeded_log: EventLog) -> None:
    await project(seeded_log)
    rows = await seeded_log.store.query(
        f"SELECT c.claim, c.seq, v.doc FROM {ENTRIES} c {CURRENT_DOC} ORDER BY c.seq"
    )
    assert len(rows) == SEED_CLAIMS
    assert [row[1] for row in rows] == list(range(1, SEED_CLAIMS + 1))
    events = await seeded_log.events()
    for claim, _, doc in rows:
        assert loads(doc)["id"] == f"urn:uuid:{claim_event_id(events, claim)}"


async def test_lifecycle_events_update_the_same_entry_with_a_new_version(
    seeded_log: EventLog,
) -> None:
    await retract(seeded_log, GENALO_RETIREMENT)
    await project(seeded_log)
    versions = await seeded_log.store.query(
        f"SELECT position, doc FROM {VERSIONS} WHERE claim = ? ORDER BY position",
        (GENALO_RETIREMENT,),
    )
    assert len(versions) == 2
    first, last = loads(versions[0][1]), loads(versions[1][1])
    assert first["id"] == last["id"]
    assert (first["status"], last["status"]) == ("reported", "retracted")
    assert last["published"] == first["published"]
    assert last["updated"] > first["updated"]
    assert last["events"][-1]["reason"] == "The outlet withdrew the story."


async def test_stamps_are_strictly_increasing_even_within_one_batch(
    seeded_log: EventLog,
) -> None:
    await add_claims(seeded_log, 0, 30)
    await project(seeded_log)
    rows = await seeded_log.store.query(
        f"SELECT c.reported_position, v.doc FROM {ENTRIES} c {CURRENT_DOC} "
        "ORDER BY c.reported_position"
    )
    published = [loads(doc)["published"] for _, doc in rows]
    assert published == sorted(set(published))
    events = {event.position: event for event in await seeded_log.events()}
    for position, doc in rows:
        stamp = dt.datetime.fromisoformat(loads(doc)["published"].replace("Z", "+00:00"))
        recorded = events[position].recorded_at
        # Never earlier than recorded, and only nudged by a millisecond an event within a batch.
        assert recorded <= stamp < recorded + dt.timedelta(milliseconds=len(events))


async def test_a_burst_of_people_does_not_date_the_claim_after_it_ahead_of_the_clock(
    seeded_log: EventLog,
) -> None:
    # Given 3,000 people registered in one batch with a claim after them (only entries need
    # a millisecond of their own, for Atom's dates; the rest a microsecond)
    people = [PersonRegistered(person=f"many-{n}", name=f"Many {n}") for n in range(3000)]
    await seeded_log.append_events([*people, generated_claim(0, person="many-0")], actor="t")
    # When the feed entries are projected
    await project(seeded_log)
    # Then the claim is stamped within milliseconds of when it was recorded, not seconds
    rows = await seeded_log.store.query(
        f"SELECT c.reported_position, v.doc FROM {ENTRIES} c {CURRENT_DOC} WHERE c.claim = ?",
        ["gen-0"],
    )
    ((position, doc),) = rows
    (recorded,) = [e.recorded_at for e in await seeded_log.events() if e.position == position]
    stamp = dt.datetime.fromisoformat(loads(doc)["published"].replace("Z", "+00:00"))
    assert recorded <= stamp < recorded + dt.timedelta(milliseconds=100)


async def test_a_correction_moves_the_entry_but_it_stays_in_the_first_persons_feed(
    seeded_log: EventLog,
) -> None:
    await correct(seeded_log, HAMMER_CAPTION, person="derek-gordon", capacity="permanent")
    await project(seeded_log)
    scopes = {
        row[0]
        for row in await seeded_log.store.query(
            f"SELECT scope FROM {SCOPES} WHERE claim = ?", (HAMMER_CAPTION,)
        )
    }
    assert {"person:robert-hammer", "person:derek-gordon", "all", "org:ice"} <= scopes
    (doc,) = await seeded_log.store.query(
        f"SELECT v.doc FROM {ENTRIES} c {CURRENT_DOC} WHERE c.claim = ?", (HAMMER_CAPTION,)
    )
    entry = loads(doc[0])
    changes = {change["field"]: change for change in entry["events"][-1]["changes"]}
    assert changes["person"]["before"]["name"] == "Robert Hammer"
    assert changes["person"]["after"]["name"] == "Derek Gordon"
    assert changes["capacity"] == {"field": "capacity", "before": "acting", "after": "permanent"}
    heads = dict(
        (row[0], row[1])
        for row in await seeded_log.store.query(f"SELECT scope, entries FROM {HEADS}")
    )
    assert heads["person:derek-gordon"] == 3


async def test_moving_an_organisation_adds_its_entries_to_the_new_ancestors(
    seeded_log: EventLog,
) -> None:
    await seeded_log.append_events(
        [
            OrgRegistered(org="new-parent", name="New Parent"),
            OrgRegistered(org="bureau", name="Bureau", parent="ice-hsi"),
            PostDefined(post="bureau-chief", org="bureau", title="Bureau Chief"),
        ],
        actor="test",
    )
    await project(seeded_log)
    await seeded_log.append_events([OrgUpdated(org="ice", parent="new-parent")], actor="test")
    await project(seeded_log)
    members = await seeded_log.store.query(
        f"SELECT COUNT(*) FROM {SCOPES} WHERE scope = 'org:new-parent'"
    )
    ice_members = await seeded_log.store.query(
        f"SELECT COUNT(*) FROM {SCOPES} WHERE scope = 'org:ice'"
    )
    assert members[0][0] == ice_members[0][0] > 0
    (path,) = await seeded_log.store.query(
        "SELECT doc FROM p_feed_entries_entities WHERE kind = 'org' AND id = 'bureau' "
        "ORDER BY position DESC LIMIT 1"
    )
    assert loads(path[0])["path"] == ["new-parent", "ice", "ice-hsi", "bureau"]
    # Still in the old ancestor's feed: membership is never withdrawn.
    dhs = await seeded_log.store.query(f"SELECT COUNT(*) FROM {SCOPES} WHERE scope = 'org:dhs'")
    assert dhs[0][0] > 0


async def test_an_org_moved_away_earlier_does_not_move_back_with_its_old_ancestor(
    seeded_log: EventLog,
) -> None:
    # given a > b > c > y and a top-level x, where y then moves under x
    await seeded_log.append_events(
        [
            OrgRegistered(org="a", name="A"),
            OrgRegistered(org="b", name="B", parent="a"),
            OrgRegistered(org="c", name="C", parent="b"),
            OrgRegistered(org="y", name="Y", parent="c"),
            OrgRegistered(org="x", name="X"),
            PostDefined(post="y-head", org="y", title="Head"),
        ],
        actor="test",
    )
    await seeded_log.append_events([OrgUpdated(org="y", parent="x")], actor="test")
    # when y's old ancestor c moves, and then a claim about y's post is reported
    await seeded_log.append_events([OrgUpdated(org="c", parent="a")], actor="test")
    claim = generated_claim(0).model_copy(update={"post": "y-head"})
    await seeded_log.append_events(
        [PersonRegistered(person="person-0", name="Person 0"), claim], actor="test"
    )
    await project(seeded_log)
    # then y stays under x: the claim is in x's feed, not in a's or c's
    (doc,) = await seeded_log.store.query(
        "SELECT doc FROM p_feed_entries_entities WHERE kind = 'org' AND id = 'y' "
        "ORDER BY position DESC LIMIT 1"
    )
    assert loads(doc[0])["path"] == ["x", "y"]
    scopes = {
        row[0]
        for row in await seeded_log.store.query(f"SELECT scope FROM {SCOPES} WHERE claim = 'gen-0'")
    }
    assert {"org:x", "org:y"} <= scopes
    assert not scopes & {"org:a", "org:b", "org:c"}


async def test_rebuilding_equals_applying_one_event_at_a_time(seeded_log: EventLog) -> None:
    await add_claims(seeded_log, 0, 60)
    await correct(seeded_log, "gen-3", person="person-4")
    await retract(seeded_log, "gen-5")
    await seeded_log.append_events([OrgUpdated(org="ice-ero", parent="dhs")], actor="test")
    await add_hostile(seeded_log)
    await ProjectionRunner(seeded_log.store, [FeedEntriesProjection()], page=1).catch_up()
    incremental = await _dump(seeded_log)
    await ProjectionRunner(seeded_log.store, [FeedEntriesProjection()]).rebuild()
    assert await _dump(seeded_log) == incremental


async def test_every_feed_an_entry_joined_moves_when_it_changes(seeded_log: EventLog) -> None:
    await correct(seeded_log, HAMMER_CAPTION, person="derek-gordon")
    await project(seeded_log)
    before = dict(await seeded_log.store.query(f"SELECT scope, last_position FROM {HEADS}"))
    await retract(seeded_log, HAMMER_CAPTION)
    await project(seeded_log)
    after = dict(await seeded_log.store.query(f"SELECT scope, last_position FROM {HEADS}"))
    head, _ = await seeded_log.store.head()
    moved = {scope for scope in after if after[scope] != before.get(scope)}
    assert {"person:robert-hammer", "person:derek-gordon", "all", "org:ice"} <= moved
    assert all(after[scope] == head for scope in moved)
    assert "person:kenneth-genalo" not in moved


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(  # entries numbered by the count of filings: it depended on where pages began
    steps=[
        ("add", 19),
        ("add", 22),
        ("correct", 91),
        ("correct", 54),
        ("correct", 116),
        ("correct", 38),
        ("add", 32),
        ("correct", 64),
    ],
    page=26,
)
@example(  # changes before a re-filing, in other pages or the same one: its last position
    steps=[
        ("add", 1),
        ("add", 33),
        ("correct", 0),
        ("add", 17),
        ("correct", 0),
        ("correct", 0),
        ("correct", 78),
    ],
    page=1,
)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("add"), st.integers(min_value=1, max_value=40)),
            st.tuples(st.just("correct"), st.integers(min_value=0, max_value=119)),
        ),
        min_size=3,
        max_size=10,
    ),
    page=st.integers(min_value=1, max_value=60),
)
def test_refiling_is_the_same_whatever_the_pages_it_is_applied_in(
    steps: list[tuple[str, int]], page: int
) -> None:
    """Claims added, and claims corrected (so re-filed once their page is full), applied in
    pages of any size as they come: the same tables as one rebuild."""

    async def check(url: str) -> None:
        async with await EventLog.open(url) as log:
            await load_seeds(log, SEEDS)
            added = 0
            for action, number in steps:
                if action == "add" and added < 120:
                    count = min(number, 120 - added)
                    await add_claims(log, added, count)
                    added += count
                elif action == "correct" and added:
                    await correct(log, f"gen-{number % added}", quote=f"Corrected at {added}.")
                runner = ProjectionRunner(log.store, [FeedEntriesProjection()], page=page)
                await runner.catch_up()
            incremental = await _dump(log)
            await ProjectionRunner(log.store, [FeedEntriesProjection()]).rebuild()
            assert await _dump(log) == incremental

    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(check(f"sqlite:///{Path(folder) / 'leaderlog.db'}"))


async def test_an_organisation_moved_under_a_nested_parent_joins_every_new_ancestor(
    seeded_log: EventLog,
) -> None:
    # given a parent that has a parent of its own
    await seeded_log.append_events(
        [OrgRegistered(org="top", name="Top"), OrgRegistered(org="mid", name="Mid", parent="top")],
        actor="test",
    )
    await project(seeded_log)
    # when an organisation with entries moves under it
    await seeded_log.append_events([OrgUpdated(org="ice", parent="mid")], actor="test")
    await project(seeded_log)
    # then its path runs from the top, and its entries are in the grandparent's feed too
    (doc,) = await seeded_log.store.query(
        "SELECT doc FROM p_feed_entries_entities WHERE kind = 'org' AND id = 'ice' "
        "ORDER BY position DESC LIMIT 1"
    )
    assert loads(doc[0])["path"] == ["top", "mid", "ice"]
    ice = await seeded_log.store.query(f"SELECT COUNT(*) FROM {SCOPES} WHERE scope = 'org:ice'")
    top = await seeded_log.store.query(f"SELECT COUNT(*) FROM {SCOPES} WHERE scope = 'org:top'")
    assert top[0][0] == ice[0][0] > 0


async def test_a_changed_entry_leads_the_recent_changes_of_its_feeds(
    seeded_log: EventLog,
) -> None:
    # given three new entries, gen-0 the oldest
    await add_claims(seeded_log, 0, 3)
    await project(seeded_log)
    # when the oldest is retracted
    await retract(seeded_log, "gen-0")
    service = await project(seeded_log)
    # then it is the most recent change of the feeds it is in
    for scope in ("all", "person:person-0"):
        (latest,) = await service.recent(1, "en", scope)
        assert "withdrew the story" in latest.summary_html, scope


async def test_a_change_to_the_last_entry_of_a_full_open_page_is_not_filed_again(
    seeded_log: EventLog,
) -> None:
    # given "all" holding exactly one page of entries, gen-39 the last on it
    await add_claims(seeded_log, 0, 40)
    await project(seeded_log)
    (rank,) = await seeded_log.store.query(
        f"SELECT rank FROM {SCOPES} WHERE scope = 'all' AND claim = 'gen-39'"
    )
    assert rank[0] == PAGE_SIZE
    # when it changes while no later entry has frozen its page
    await correct(seeded_log, "gen-39", capacity="permanent")
    await project(seeded_log)
    # then it keeps its one filing, and the page is still not full past its end
    filings = await seeded_log.store.query(
        f"SELECT rank, superseded FROM {SCOPES} WHERE scope = 'all' AND claim = 'gen-39'"
    )
    assert filings == [(PAGE_SIZE, 0)]
    (entries,) = await seeded_log.store.query(f"SELECT entries FROM {HEADS} WHERE scope = 'all'")
    assert entries[0] == PAGE_SIZE


async def test_moving_an_organisation_leaves_one_whose_id_only_matches_as_a_pattern(
    seeded_log: EventLog,
) -> None:
    # given, in a log written past the write path, an org whose id holds "_" (a LIKE
    # wildcard), another whose id that pattern matches, and a child under each
    await seeded_log.store.append(
        [
            _raw("org-a_b", "org.registered", {"org": "a_b", "name": "A B"}),
            _raw("org-axb", "org.registered", {"org": "axb", "name": "AXB"}),
            _raw("org-c", "org.registered", {"org": "c", "name": "C", "parent": "a_b"}),
            _raw("org-d", "org.registered", {"org": "d", "name": "D", "parent": "axb"}),
        ],
        actor="test",
    )
    await seeded_log.append_events(
        [
            OrgRegistered(org="new-parent", name="New"),
            PostDefined(post="d-head", org="d", title="Head"),
            PersonRegistered(person="person-0", name="Person 0"),
            generated_claim(0, post="d-head"),
        ],
        actor="test",
    )
    await project(seeded_log)
    # when a_b moves
    await seeded_log.store.append(
        [_raw("org-a_b", "org.updated", {"org": "a_b", "parent": "new-parent"})], actor="test"
    )
    await project(seeded_log)
    # then its child moves with it, and the other org's child stays where it was
    paths = {
        org: loads(doc)["path"]
        for org, doc in await seeded_log.store.query(
            "SELECT e.id, e.doc FROM p_feed_entries_entities e WHERE e.kind = 'org' "
            "AND e.id IN ('c', 'd') AND e.position = (SELECT MAX(n.position) FROM "
            "p_feed_entries_entities n WHERE n.kind = 'org' AND n.id = e.id)"
        )
    }
    assert paths == {"c": ["new-parent", "a_b", "c"], "d": ["axb", "d"]}
    # and the entry under the other org joins none of the moved org's new ancestors
    scopes = {
        row[0]
        for row in await seeded_log.store.query(f"SELECT scope FROM {SCOPES} WHERE claim = 'gen-0'")
    }
    assert "org:new-parent" not in scopes


async def test_an_entry_changed_on_a_frozen_page_is_filed_again_in_the_subscription_document(
    seeded_log: EventLog,
) -> None:
    # given "all" past one full page, so that its first page is frozen
    await add_claims(seeded_log, 0, 60)
    await project(seeded_log)
    (rank,) = await seeded_log.store.query(
        f"SELECT rank FROM {SCOPES} WHERE scope = 'all' AND claim = 'gen-0'"
    )
    assert rank[0] <= PAGE_SIZE
    # when an entry on the frozen page is corrected
    await correct(seeded_log, "gen-0", capacity="permanent")
    service = await project(seeded_log)
    # then its old filing is kept, superseded, for the frozen page, and it is filed again
    filings = await seeded_log.store.query(
        f"SELECT rank, superseded FROM {SCOPES} WHERE scope = 'all' AND claim = 'gen-0' "
        "ORDER BY rank"
    )
    assert [superseded for _, superseded in filings] == [1, 0]
    (newest,) = await seeded_log.store.query(f"SELECT MAX(rank) FROM {SCOPES} WHERE scope = 'all'")
    assert filings[1][0] == newest[0] > PAGE_SIZE
    # and a reader of the subscription document sees the correction
    request = FeedRequest(Scope.parse("all"), "json", "en", BASE, None, explicit_lang=True)
    items = json.loads((await service.render(request)).body)["items"]
    assert any("misread" in item["content_html"] for item in items)


async def test_an_update_that_keeps_an_organisation_s_parent_still_renames_it(
    seeded_log: EventLog,
) -> None:
    # given an organisation under a parent
    await project(seeded_log)
    (doc,) = await seeded_log.store.query(
        "SELECT doc FROM p_feed_entries_entities WHERE kind = 'org' AND id = 'ice-hsi' "
        "ORDER BY position DESC LIMIT 1"
    )
    parent = loads(doc[0])["parent"]
    assert parent
    # when an update names its parent again, with a new name
    await seeded_log.append_events(
        [OrgUpdated(org="ice-hsi", parent=parent, name="Renamed Investigations")], actor="test"
    )
    await project(seeded_log)
    # then the new name is what later entries will copy
    (doc,) = await seeded_log.store.query(
        "SELECT doc FROM p_feed_entries_entities WHERE kind = 'org' AND id = 'ice-hsi' "
        "ORDER BY position DESC LIMIT 1"
    )
    assert loads(doc[0])["name"] == "Renamed Investigations"
