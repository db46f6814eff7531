"""Feed documents: valid Atom, clean parses, stable ids, determinism, archives, hostile text."""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from collections.abc import Sequence
from email.utils import format_datetime
from typing import Any

import feedparser
import pytest
from lxml import etree

from leaderlog.errors import FeedError, LeaderlogError, ProjectionError, StoreBusy, StoreUnavailable
from leaderlog.events import (
    ClaimConfirmed,
    ClaimCorrected,
    ClaimDisputed,
    ClaimRetracted,
    Event,
    FuzzyDate,
    PersonRegistered,
    PersonUpdated,
    SourceRegistered,
)
from leaderlog.feeds import (
    FULL_ARCHIVE_CACHE,
    LANGUAGES,
    PAGE_SIZE,
    SUBSCRIPTION_CACHE,
    FeedFormat,
    FeedNotFound,
    FeedRequest,
    FeedService,
    Scope,
    UnknownLanguage,
)
from leaderlog.feeds._paging import page_count
from leaderlog.feeds._text import clean
from leaderlog.log import EventLog
from leaderlog.projections.feed_entries import ENTITIES, FeedEntriesProjection
from leaderlog.projections.runner import ProjectionRunner
from tests.feeds.atom_schema import atom_problems
from tests.feeds.logs import (
    BASE,
    CONTROL,
    FOX,
    GENALO_RETIREMENT,
    HAMMER_BODY,
    HAMMER_CAPTION,
    RTL,
    SCRIPT,
    SEED_CLAIMS,
    add_claims,
    add_hostile,
    add_sourced_claim,
    claim_event_id,
    confirm,
    correct,
    generated_claim,
    project,
    recent_read_as_a_claim_arrives,
    rendered,
    retract,
)
from tests.projections.logs import GORDON_ACTING, current

ATOM = "{http://www.w3.org/2005/Atom}"
HISTORY = "{http://purl.org/syndication/history/1.0}"
FEED = FeedEntriesProjection.name


def _parse(body: bytes, fmt: FeedFormat) -> feedparser.FeedParserDict:
    media = {"atom": "application/atom+xml", "rss": "application/rss+xml"}[fmt]
    parsed = feedparser.parse(body, response_headers={"content-type": f"{media}; charset=utf-8"})
    assert not parsed.bozo, parsed.get("bozo_exception")
    return parsed


def _check_json_feed(body: bytes) -> dict[str, object]:
    document = json.loads(body)
    assert document["version"] == "https://jsonfeed.org/version/1.1"
    assert document["title"] and document["feed_url"].startswith(BASE)
    for item in document["items"]:
        assert item["id"].startswith("urn:uuid:")
        assert item["content_html"] and item["content_text"]
        assert item["date_published"] <= item["date_modified"]
    return dict(document)


def _entry_ids(body: bytes) -> list[str]:
    root = etree.fromstring(body)
    return [str(entry.findtext(f"{ATOM}id")) for entry in root.iter(f"{ATOM}entry")]


async def test_every_seed_feed_is_valid_in_every_language_and_format(
    seeded_log: EventLog,
) -> None:
    service = await project(seeded_log)
    entities = await service.reader.entities(("org", "person", "post"))
    scopes = ["all", *(f"{row.kind}:{row.id}" for row in entities)]
    assert len(scopes) == 16
    for scope in scopes:
        for lang in LANGUAGES:
            atom = await rendered(service, scope, "atom", lang)
            assert atom_problems(atom) == [], (scope, lang)
            root = etree.fromstring(atom)
            assert root.get("{http://www.w3.org/XML/1998/namespace}lang") == lang
            parsed = _parse(atom, "atom")
            assert all(entry.get("id") and entry.get("updated_parsed") for entry in parsed.entries)
        for lang in ("en", "zh-Hans", "hi"):
            rss = _parse(await rendered(service, scope, "rss", lang), "rss")
            assert rss.feed.get("language") == lang
            _check_json_feed(await rendered(service, scope, "json", lang))


async def test_titles_and_summaries_are_translated_with_labels_and_local_dates(
    seeded_log: EventLog,
) -> None:
    service = await project(seeded_log)
    german = _parse(await rendered(service, "org:ice", "atom", "de"), "atom")
    assert german.feed.title == "Führungswechsel: Einwanderungs- und Zollbehörde"
    titles = [entry.title for entry in german.entries]
    assert (
        "Erwartet: Robert Hammer scheidet als Exekutiver stellvertretender Direktor "
        "(HSI) aus (Versetzung)" in titles
    )
    summaries = " ".join(entry.summary for entry in german.entries)
    assert "etwa Mai 2025" in summaries and "anonyme Quellen: White House und ICE" in summaries
    japanese = _parse(await rendered(service, "all", "atom", "ja"), "atom")
    assert japanese.feed.title == "指導部の交代"
    assert any("2025年5月頃" in entry.summary for entry in japanese.entries)


async def test_an_entry_says_who_which_post_what_change_status_source_and_quote(
    seeded_log: EventLog,
) -> None:
    service = await project(seeded_log)
    parsed = _parse(await rendered(service, "person:kenneth-genalo"), "atom")
    (entry,) = [e for e in parsed.entries if "retirement" in e.title]
    assert entry.title == (
        "Expected: Departure of Kenneth Genalo as Executive Associate Director (ERO) "
        "(acting, retirement)"
    )
    for words in (
        "Modality: Expected.",
        "Status: Reported.",
        "Attribution: anonymous sources: White House and ICE.",
        "Source: Fox News (about May 2025), https://www.foxnews.com/politics/",
        "Quote from the article text: \u201cThe changes include the retirement",
        "Effective: date unknown (\u201csoon\u201d).",
    ):
        assert words in entry.summary
    assert entry.link == "https://www.foxnews.com/politics/ice-leadership-shake-up"


async def test_text_follows_each_language_s_punctuation_and_marks_only_the_quote_s_language(
    seeded_log: EventLog,
) -> None:
    await confirm(seeded_log, GORDON_ACTING)
    service = await project(seeded_log)
    russian = _parse(await rendered(service, "person:derek-gordon", "atom", "ru"), "atom")
    # A Russian long date ends in the abbreviation for "year", the sentence's full stop too.
    assert any("\u0433. " in entry.summary for entry in russian.entries)
    assert all(".." not in entry.summary for entry in russian.entries)
    japanese = json.loads(await rendered(service, "all", "json", "ja"))
    assert all("\u3002 " not in item["content_text"] for item in japanese["items"])
    german = json.loads(await rendered(service, "person:kenneth-genalo", "json", "de"))
    quoted = [item["content_html"] for item in german["items"]]
    assert all("<blockquote><p>Zitat" in html for html in quoted)
    assert all('\u201e<span lang="en" dir="auto">' in html for html in quoted)
    assert all("</span>\u201c</p></blockquote>" in html for html in quoted)


async def test_entry_links_keep_their_attributes_feedgen_issue_135(seeded_log: EventLog) -> None:
    service = await project(seeded_log)
    root = etree.fromstring(await rendered(service, "all"))
    for entry in root.iter(f"{ATOM}entry"):
        links = {link.get("rel"): dict(link.attrib) for link in entry.iter(f"{ATOM}link")}
        assert links["alternate"]["type"] == "text/html"
        assert links["alternate"]["hreflang"] == "en"
        assert links["alternate"]["title"] == "Fox News"
        assert links["related"]["type"] == "application/json"
        assert links["related"]["href"].startswith(f"{BASE}/api/claims/")


@pytest.mark.parametrize(
    ("language", "hreflang"),
    [
        ("pt-BR", "pt-BR"),
        ("en", "en"),
        # Valid tags, but the W3C Feed Validator refuses them: Cantonese, Central Kurdish,
        # Mandarin, Min Nan; a code ISO 639-1 does not have, and one it withdrew.
        ("yue", None),
        ("ckb", None),
        ("cmn-Hans", None),
        ("nan", None),
        ("zz", None),
        ("iw", None),
    ],
)
async def test_a_source_s_language_is_the_link_s_hreflang_only_in_a_code_validators_know(
    seeded_log: EventLog, language: str, hreflang: str | None
) -> None:
    await add_sourced_claim(seeded_log, "lang", "https://example.org/news", language)
    service = await project(seeded_log)
    atom = await rendered(service, "person:lang")
    assert atom_problems(atom) == []
    (alternate,) = [
        link
        for link in etree.fromstring(atom).iter(f"{ATOM}link")
        if link.get("rel") == "alternate" and link.get("href") == "https://example.org/news"
    ]
    assert alternate.get("hreflang") == hreflang
    assert _parse(atom, "atom").entries[0].link == "https://example.org/news"


async def test_same_log_gives_identical_bytes_and_ids_survive_rebuilds(
    seeded_log: EventLog,
) -> None:
    await retract(seeded_log, GENALO_RETIREMENT)
    first = await project(seeded_log)
    formats: tuple[FeedFormat, ...] = ("atom", "rss", "json")
    renders = {
        (scope, fmt): await rendered(first, scope, fmt)
        for scope in ("all", "org:ice", "person:robert-hammer")
        for fmt in formats
    }
    await ProjectionRunner(seeded_log.store, [FeedEntriesProjection()]).rebuild()
    second = FeedService(seeded_log.store, poll_interval=0)
    for (scope, fmt), body in renders.items():
        assert await rendered(second, scope, fmt) == body
    ids = _entry_ids(renders[("all", "atom")])
    guids = [item.id for item in _parse(renders[("all", "rss")], "rss").entries]
    json_ids = [item["id"] for item in json.loads(renders[("all", "json")])["items"]]
    assert ids == guids == json_ids
    assert _entry_ids(await rendered(second, "all", "atom", "hi")) == ids


async def _rebuild_begun(log: EventLog) -> None:
    """The feed projection taken back to its first events, as a rebuild elsewhere does."""
    async with log.store.projection_transaction() as tx:
        await tx.execute("UPDATE projection_checkpoints SET position = 3 WHERE name = ?", (FEED,))


async def test_while_the_feeds_are_rebuilt_they_are_unavailable_not_partial(
    seeded_log: EventLog,
) -> None:
    # given a service that has served the feeds
    service = FeedService(seeded_log.store, poll_interval=0)
    await project(seeded_log)
    served = await rendered(service, "all")
    # when a rebuild elsewhere has taken the feed projection back to its first events
    await _rebuild_begun(seeded_log)
    # then the service says so instead of serving a partial feed
    with pytest.raises(StoreUnavailable, match="being rebuilt"):
        await rendered(service, "all")
    # and once the rebuild is through, it serves again
    await ProjectionRunner(seeded_log.store, [FeedEntriesProjection()]).rebuild()
    assert await rendered(service, "all") == served


async def test_feeds_that_have_taken_in_no_event_of_a_log_are_unavailable_not_empty(
    seeded_log: EventLog,
) -> None:
    # given feed tables made, but not one of the log's events applied to them (a projection
    # that cannot apply the log, say), and a service that has served nothing yet
    await ProjectionRunner(seeded_log.store, [FeedEntriesProjection()]).prepare()
    service = FeedService(seeded_log.store, poll_interval=0)
    # when a feed is asked for, then it is unavailable: empty and complete, it would tell
    # readers and caches that every entry is gone
    with pytest.raises(StoreUnavailable, match="catching up with the log"):
        await rendered(service, "all")
    # and once the events are applied, it is served
    await ProjectionRunner(seeded_log.store, [FeedEntriesProjection()]).catch_up()
    assert _entry_ids(await rendered(service, "all"))


async def test_documents_read_while_a_rebuild_begins_are_neither_sent_nor_kept(
    seeded_log: EventLog,
) -> None:
    # given a service that has served a feed and checks the projection only now and then
    await add_claims(seeded_log, 0, 2 * PAGE_SIZE)
    await project(seeded_log)
    service = FeedService(seeded_log.store, poll_interval=3600)
    served = await rendered(service, "all")
    # when a rebuild begins (tables emptied, checkpoint back to 0) before the next check
    async with seeded_log.store.projection_transaction() as tx:
        for table in FeedEntriesProjection().tables():
            await tx.execute(f"DELETE FROM {table}")
        await tx.execute("UPDATE projection_checkpoints SET position = 0 WHERE name = ?", (FEED,))
    # then documents it had not read yet are refused rather than read half-built
    for scope, page in (("all", 1), ("org:ice", None), ("all", None)):
        with pytest.raises(StoreUnavailable, match="being rebuilt"):
            await rendered(service, scope, "rss" if page is None else "atom", page=page)
    # and after the rebuild it serves what a new service serves, nothing kept from meanwhile
    await ProjectionRunner(seeded_log.store, [FeedEntriesProjection()]).rebuild()
    fresh = FeedService(seeded_log.store, poll_interval=0)
    assert await rendered(service, "all") == served
    for scope, page in (("all", 1), ("org:ice", None)):
        fmt: FeedFormat = "rss" if page is None else "atom"
        assert await rendered(service, scope, fmt, page=page) == await rendered(
            fresh, scope, fmt, page=page
        )


async def test_a_document_whose_scope_moves_while_it_is_read_is_sent_as_it_is_at_the_end(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a service whose validators are read, then a claim appended and projected while
    # the entries are being read (another server's write, say)
    service = await project(seeded_log)
    monkeypatch.setattr(
        service.reader, "recent", recent_read_as_a_claim_arrives(seeded_log, service)
    )
    request = FeedRequest(Scope.parse("all"), "atom", "en", BASE, None, explicit_lang=True)
    stale = await service.describe(request)
    # when the document is rendered
    rendered = await service.render(request)
    # then it is sent with the validators of what it holds: the new position, the new claim
    head = (await seeded_log.store.head())[0]
    assert stale.position < rendered.validators.position == head
    assert f'W/"{head}-' in rendered.validators.etag
    assert "Quote number 0." in rendered.body.decode()


async def test_a_feed_that_never_holds_still_is_unavailable_rather_than_mixed(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = await project(seeded_log)
    read_entries = service.reader.recent
    added = iter(range(100))

    async def recent_while_claims_keep_arriving(scope: str, limit: int) -> list[dict[str, Any]]:
        await add_claims(seeded_log, next(added), 1)
        await ProjectionRunner(seeded_log.store, [FeedEntriesProjection()]).catch_up()
        return await read_entries(scope, limit)

    monkeypatch.setattr(service.reader, "recent", recent_while_claims_keep_arriving)
    with pytest.raises(StoreUnavailable, match="changing too fast"):
        await rendered(service, "all")


async def test_the_opml_lists_the_feeds_known_at_the_position_its_etag_names(
    seeded_log: EventLog,
) -> None:
    # given an OPML served by a service that looks at the projection only now and then
    await project(seeded_log)
    service = FeedService(seeded_log.store, poll_interval=3600)
    first = await service.opml("en", BASE)
    # when a person is registered and projected before it looks again
    await seeded_log.append_events(
        [PersonRegistered(person="newcomer", name="Nova Newcomer")], actor="test"
    )
    await ProjectionRunner(seeded_log.store, [FeedEntriesProjection()]).catch_up()
    # then another rendering at the position it knows does not list what came after it
    other = await service.opml("fr", BASE)
    assert other.validators.position == first.validators.position
    assert b"Nova Newcomer" not in other.body
    fresh = await FeedService(seeded_log.store, poll_interval=0).opml("fr", BASE)
    assert fresh.validators.position > first.validators.position
    assert b"Nova Newcomer" in fresh.body


async def test_the_opml_after_a_claim_is_rendered_afresh_from_subjects_read_before(
    seeded_log: EventLog,
) -> None:
    # given the OPML and the subjects it lists, as read once
    service = await project(seeded_log)
    first = await service.opml("en", BASE)
    subjects = await service.directory()
    # when a claim is reported, which changes no organisation, person or post
    await seeded_log.append_events([generated_claim(1, person="robert-hammer")], actor="test")
    await ProjectionRunner(seeded_log.store, [FeedEntriesProjection()]).catch_up()
    # then the subjects are not read again, and the OPML is the same document under the same
    # validators, dated by the last change to what it lists: its readers fetch nothing anew
    assert await service.directory() is subjects
    dated = await service.opml("en", BASE)
    assert dated.validators == first.validators
    assert (dated.body, dated.gzipped) == (first.body, first.gzipped)
    fresh = await FeedService(seeded_log.store, poll_interval=0).opml("en", BASE)
    assert (fresh.validators, fresh.body) == (first.validators, first.body)
    # when a person is renamed, then they are read again and the OPML says the new name
    await seeded_log.append_events(
        [PersonUpdated(person="robert-hammer", name="Robert Renamed")], actor="test"
    )
    await ProjectionRunner(seeded_log.store, [FeedEntriesProjection()]).catch_up()
    renamed = await service.directory()
    assert renamed is not subjects and renamed.position > subjects.position
    assert ("robert-hammer", "Robert Renamed") in {
        (person, doc.get("name")) for person, doc in renamed.kinds["person"]
    }
    after = await service.opml("en", BASE)
    assert after.validators.etag != dated.validators.etag
    assert b"Robert Renamed" in after.body and b"Robert Renamed" not in dated.body
    fresh = await FeedService(seeded_log.store, poll_interval=0).opml("en", BASE)
    assert after.body == fresh.body


async def _begin_a_rebuild(log: EventLog) -> None:
    """What a rebuild elsewhere leaves in the database as it begins: tables emptied and the
    checkpoint back to 0."""
    async with log.store.projection_transaction() as tx:
        for table in FeedEntriesProjection().tables():
            await tx.execute(f"DELETE FROM {table}")
        await tx.execute("UPDATE projection_checkpoints SET position = 0 WHERE name = ?", (FEED,))


async def test_where_the_subjects_last_changed_is_looked_up_not_scanned_for(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given the statement a service asks where the organisations, people and posts last
    # changed with, before every overview and OPML
    service = await project(seeded_log)
    store = service.reader.store
    asked: list[tuple[str, Sequence[Any]]] = []
    query = store.query

    async def noted(sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        asked.append((sql, parameters))
        return await query(sql, parameters)

    monkeypatch.setattr(store, "query", noted)
    await service.reader.entities_moved(("org", "person", "post"))
    monkeypatch.undo()
    [(sql, parameters)] = asked
    # when SQLite, which plans without statistics, plans it
    plan = [str(row[-1]) for row in await store.query(f"EXPLAIN QUERY PLAN {sql}", parameters)]
    # then it finds the answer in an index bounded by position, rather than reading every
    # subject there is and sorting them (milliseconds a request on a log of many people)
    searches = [step for step in plan if step.startswith(("SCAN", "SEARCH")) and ENTITIES in step]
    assert searches and all("position<?" in step for step in searches), plan
    assert not any("TEMP B-TREE" in step for step in plan), plan


def _a_rebuild_begins_once_told_where_subjects_moved(
    service: FeedService, log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = service.reader.entities_moved
    begins = [1]

    async def then_a_rebuild_begins(kinds: Sequence[str], at: int | None = None) -> int:
        moved = await asked(kinds, at)
        if begins:
            begins.pop()
            await _begin_a_rebuild(log)
        return moved

    monkeypatch.setattr(service.reader, "entities_moved", then_a_rebuild_begins)


async def test_subjects_read_as_a_rebuild_begins_are_not_handed_out_once_it_is_through(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a service asking where the subjects last changed, and a rebuild beginning just
    # after it has been told (the overview reads them so, without looking for rebuilds)
    service = await project(seeded_log)
    complete = (await FeedService(seeded_log.store, poll_interval=0).directory()).kinds
    _a_rebuild_begins_once_told_where_subjects_moved(service, seeded_log, monkeypatch)
    meanwhile = await service.directory()
    # when the rebuild is through, the subjects last changed at the same position as before
    await ProjectionRunner(seeded_log.store, [FeedEntriesProjection()]).rebuild()
    # then the service lists every subject again, not the none it could read meanwhile
    assert not any(meanwhile.kinds.values())
    assert (await service.directory()).kinds == complete


async def test_an_opml_read_as_a_rebuild_begins_is_neither_sent_nor_kept(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a service that has served a feed, and a rebuild beginning once the OPML has
    # found where the subjects last changed
    service = await project(seeded_log)
    await rendered(service, "all")
    _a_rebuild_begins_once_told_where_subjects_moved(service, seeded_log, monkeypatch)
    # when the OPML is asked for, then it is not read half-built
    with pytest.raises(StoreUnavailable, match="being rebuilt"):
        await service.opml("en", BASE)
    # and once the rebuild is through, it lists every feed, as one a new service renders
    await ProjectionRunner(seeded_log.store, [FeedEntriesProjection()]).rebuild()
    fresh = await FeedService(seeded_log.store, poll_interval=0).opml("en", BASE)
    assert (await service.opml("en", BASE)).body == fresh.body


async def test_a_checkpoint_read_that_ends_late_is_not_taken_for_a_rebuild(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a service that has served the feeds at the projection's checkpoint
    service = await project(seeded_log)
    served = await rendered(service, "all")
    read_checkpoint = service.reader.checkpoint
    late = [True]

    async def one_read_from_before(*args: Any) -> int | None:
        checkpoint = await read_checkpoint(*args)
        if late and checkpoint is not None:
            late.pop()
            return checkpoint - 1  # begun before, ended after another request's read
        return checkpoint

    # when one read of the checkpoint answers from before the one that is served
    monkeypatch.setattr(service.reader, "checkpoint", one_read_from_before)
    # then the feed is still served, not refused as being rebuilt
    assert await rendered(service, "all", "rss") != served
    assert not late


async def test_feeds_built_by_another_version_are_unavailable_not_misread(
    seeded_log: EventLog,
) -> None:
    service = await project(seeded_log)
    async with seeded_log.store.projection_transaction() as tx:
        await tx.execute("UPDATE projection_checkpoints SET version = 99 WHERE name = ?", (FEED,))
    with pytest.raises(StoreUnavailable, match="another leaderlog version"):
        await rendered(service, "all")


async def test_a_page_not_taken_in_yet_is_unavailable_not_missing(seeded_log: EventLog) -> None:
    # given the feeds caught up with a complete log, then a page's worth of claims appended
    # that this service has not taken in yet (another server's writes, say)
    service = await project(seeded_log)
    await add_claims(seeded_log, 0, PAGE_SIZE)
    # then its first archive page is "not yet", not "does not exist"
    with pytest.raises(StoreUnavailable, match="catching up"):
        await rendered(service, "all", page=1)
    # while one further on than those events could fill does not exist, as it never will
    with pytest.raises(FeedNotFound, match="archive page 99 does not exist"):
        await rendered(service, "all", page=99)
    # and an unknown scope is still simply unknown
    with pytest.raises(FeedNotFound):
        await rendered(service, "person:nobody-at-all")
    await project(seeded_log)
    service.invalidate()
    assert await rendered(service, "all", page=1)


async def test_dates_come_from_events_not_the_clock(seeded_log: EventLog) -> None:
    service = await project(seeded_log)
    events = await seeded_log.events()
    root = etree.fromstring(await rendered(service, "all"))
    stamps = [e.recorded_at.isoformat() for e in events]
    updated = str(root.findtext(f"{ATOM}updated"))
    # The seeds were recorded in one batch: stamps are the recorded time plus microseconds.
    assert updated[:19] == stamps[-1][:19]
    written = [str(entry.findtext(f"{ATOM}updated")) for entry in root.iter(f"{ATOM}entry")]
    assert len(written) == 10 and written == sorted(written, reverse=True)


async def test_atom_entries_of_one_batch_have_distinct_updated_dates(
    seeded_log: EventLog,
) -> None:
    # Given the seeds, whose claims were all appended in one batch (one recorded instant)
    service = await project(seeded_log)
    # When the Atom feed (and RSS's atom:updated) is rendered, dates cut to milliseconds
    atom = etree.fromstring(await rendered(service, "all"))
    rss = etree.fromstring(await rendered(service, "all", fmt="rss"))
    # Then no two entries share an updated date (the W3C validator's DuplicateUpdated warning)
    for feed, entry_tag in ((atom, f"{ATOM}entry"), (rss, "item")):
        dates = [str(entry.findtext(f"{ATOM}updated")) for entry in feed.iter(entry_tag)]
        assert len(dates) == 10 and len(set(dates)) == len(dates), dates


async def test_atom_dates_have_milliseconds_as_rome_reads_them(seeded_log: EventLog) -> None:
    # ROME (CommaFeed's parser) reads the digits after the second as milliseconds, so
    # ".912837" put an entry 912 seconds later, and out of order with the others; cut to
    # milliseconds, never rounded up past a later date.
    service = await project(seeded_log)
    atom = etree.fromstring(await rendered(service, "all"))
    rss = etree.fromstring(await rendered(service, "all", fmt="rss"))
    dated = [
        *atom.iter(f"{ATOM}updated", f"{ATOM}published"),
        *rss.iter(f"{ATOM}updated"),
    ]
    assert len(dated) == 1 + 2 * 10 + 10
    for element in dated:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", element.text), (
            element.text
        )
    items = json.loads(await rendered(service, "all", fmt="json"))["items"]
    for entry, item in zip(atom.iter(f"{ATOM}entry"), items, strict=True):
        exact = dt.datetime.fromisoformat(item["date_modified"])
        assert entry.findtext(f"{ATOM}updated") == exact.isoformat(timespec="milliseconds")


async def test_corrections_and_retractions_update_the_same_entry_and_say_what_changed(
    seeded_log: EventLog,
) -> None:
    service = await project(seeded_log)
    before = {e.id: e for e in _parse(await rendered(service, "all"), "atom").entries}
    await correct(seeded_log, HAMMER_CAPTION, capacity="permanent")
    await retract(seeded_log, HAMMER_CAPTION)
    await confirm(seeded_log, GENALO_RETIREMENT)
    service = await project(seeded_log)
    parsed = _parse(await rendered(service, "all"), "atom")
    after = {e.id: e for e in parsed.entries}
    assert set(after) == set(before)
    changed = [e for e in parsed.entries if e.id in before and e.updated != before[e.id].updated]
    assert len(changed) == 2
    # The entries changed last come first.
    hammer, genalo = parsed.entries[1], parsed.entries[0]
    assert hammer.title.startswith("Retracted: ")
    assert "Changed capacity: acting \u2192 permanent." in hammer.summary
    # (by the seeds' source, dated only "about May 2025": dated by the source alone)
    assert "Retracted: " in hammer.summary and "withdrew the story" in hammer.summary
    assert hammer.published == before[hammer.id].published
    assert genalo.title.startswith("Confirmed: ")
    assert "Effective: June 2, 2025." in genalo.summary


async def test_a_confirmation_without_a_date_keeps_the_date_reported(
    seeded_log: EventLog,
) -> None:
    # given a claim whose date was corrected to 15 June, then confirmed without a date
    await seeded_log.append_events(
        [
            ClaimCorrected(
                claim=GENALO_RETIREMENT,
                changes={"effective": {"date": "2025-06-15"}},
                reason="The date was announced.",
            ),
            ClaimConfirmed(
                claim=GENALO_RETIREMENT,
                source=FOX,
                effective=FuzzyDate(date=None, text="in the coming weeks"),
            ),
        ],
        actor="test",
    )
    service = await project(seeded_log)
    (entry,) = [
        e
        for e in _parse(await rendered(service, "all"), "atom").entries
        if e.title.startswith("Confirmed: ")
    ]
    # then the entry still says the date, as the claim command does
    assert "Effective: June 15, 2025." in entry.summary
    claim = await (await current(seeded_log)).claim(GENALO_RETIREMENT)
    assert claim["current"]["effective"]["date"] == "2025-06-15"


async def _genalo_retirement_content(log: EventLog) -> str:
    """The Atom content (HTML) of the entry of Genalo's retirement."""
    service = await project(log)
    (entry,) = [
        e
        for e in _parse(await rendered(service, "all"), "atom").entries
        if "Departure of Kenneth Genalo" in e.title
    ]
    return str(entry.content[0].value)


async def _genalo_retirement_text(log: EventLog) -> tuple[str, str]:
    """The Atom content of the entry of Genalo's retirement, as text, and the day the log's
    last event was recorded, as the feed writes a day."""
    content = await _genalo_retirement_content(log)
    recorded = (await log.events())[-1].recorded_at
    day = f"{recorded:%B} {recorded.day}, {recorded.year}"
    return re.sub(r"<[^>]+>", "", content), day


def _ice_release(published: dict[str, str] | None) -> SourceRegistered:
    return SourceRegistered(
        source="ice-release", url="https://www.ice.gov/r", publisher="ICE", published=published
    )


async def _step_by(log: EventLog, step: Event, source: SourceRegistered) -> None:
    """``source`` registered, then ``step`` of a claim by it."""
    await log.append_events([source, step], actor="test")


@pytest.mark.parametrize(
    ("step", "said"),
    [
        (
            ClaimDisputed(claim=GENALO_RETIREMENT, reason="Not so.", source="chronicle"),
            "Disputed: Not so.",
        ),
        (
            ClaimCorrected(
                claim=GENALO_RETIREMENT,
                changes={"capacity": "permanent"},
                reason="Permanent.",
                source="chronicle",
            ),
            "Corrected: Permanent.",
        ),
        (
            ClaimRetracted(claim=GENALO_RETIREMENT, reason="Withdrawn.", source="chronicle"),
            "Retracted: Withdrawn.",
        ),
    ],
)
async def test_a_step_by_a_roughly_dated_source_is_dated_by_the_source_alone(
    seeded_log: EventLog, step: Event, said: str
) -> None:
    # "Disputed on December 6, 2026" beside a source of June 2016
    chronicle = SourceRegistered(
        source="chronicle",
        url="https://chronicle.example/a",
        publisher="The Chronicle",
        published={"date": "2016-06"},
    )
    await _step_by(seeded_log, step, chronicle)
    text, recorded = await _genalo_retirement_text(seeded_log)
    assert said in text and "The Chronicle (June 2016)" in text
    assert recorded not in text.split("History:")[1]


@pytest.mark.parametrize(
    ("effective", "said"),
    [
        (
            {"date": "2025-06", "text": "by early next month"},
            "June 2025 (\u201cby early next month\u201d)",
        ),
        ({"date": "2025-06", "qualifier": "before"}, "before June 2025."),
    ],
)
async def test_a_date_keeps_the_source_s_words_beside_it(
    seeded_log: EventLog, effective: dict[str, str], said: str
) -> None:
    # "April 2026" alone, for "by early next month", suggested any day of April
    await seeded_log.append_events(
        [ClaimCorrected(claim=GENALO_RETIREMENT, changes={"effective": effective}, reason="r")],
        actor="test",
    )
    text, _ = await _genalo_retirement_text(seeded_log)
    assert f"Effective: {said}" in text


@pytest.mark.parametrize(
    ("published", "said"),
    [
        # named without the day the step already says
        ({"date": "2025-06-13"}, "Confirmed on June 13, 2025 by ICE."),
        # a month, or a day only about, is no day it happened on: the source's name says
        # its date, where the step was said confirmed the day it was typed in
        ({"date": "2025-06"}, "Confirmed by ICE (June 2025)."),
        ({"date": "2025-06-13", "qualifier": "about"}, "Confirmed by ICE (about June 13, 2025)."),
        (
            {"date": None, "text": "last week"},
            "Confirmed by ICE (date unknown (\u201clast week\u201d)).",
        ),
        # the source's words stand beside a date, but not within the brackets of its name
        ({"date": "2025-06", "text": "mid-June"}, "Confirmed by ICE (June 2025)."),
        # a source that gives no date: the day it was recorded, for want of one
        (None, "Confirmed on {recorded} by ICE"),
    ],
)
async def test_a_step_is_dated_by_its_source_s_day_when_it_gives_one(
    seeded_log: EventLog, published: dict[str, str] | None, said: str
) -> None:
    # Reporting entered later (a back-filled story) said "Confirmed on" the day someone
    # typed it in, where its source had said so months before.
    await _step_by(
        seeded_log,
        ClaimConfirmed(claim=GENALO_RETIREMENT, source="ice-release"),
        _ice_release(published),
    )
    text, recorded = await _genalo_retirement_text(seeded_log)
    assert said.format(recorded=recorded) in text


@pytest.mark.parametrize(
    "step",
    [
        ClaimConfirmed(claim=GENALO_RETIREMENT, source="ice-release"),
        ClaimCorrected(
            claim=GENALO_RETIREMENT,
            changes={"cause": "resignation"},
            reason="Resigned.",
            source="ice-release",
        ),
        ClaimDisputed(claim=GENALO_RETIREMENT, reason="Not so.", source="ice-release"),
    ],
    ids=["confirmed", "corrected", "disputed"],
)
async def test_a_step_s_source_is_linked_as_the_report_s_is(
    seeded_log: EventLog, step: ClaimConfirmed | ClaimCorrected | ClaimDisputed
) -> None:
    # given a step after the report, by a source with an address
    await _step_by(seeded_log, step, _ice_release({"date": "2025-06-13"}))
    # then its history links that source (a reader could open the report's alone)
    history = (await _genalo_retirement_content(seeded_log)).partition("History:")[2]
    assert '<a href="https://www.ice.gov/r">' in history


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("en", "He resigned. Changed capacity: acting \u2192 permanent."),
        ("ja", "He resigned\u3002"),
        ("hi", "He resigned\u0964"),
    ],
)
async def test_a_reason_without_a_full_stop_does_not_run_into_the_next_sentence(
    seeded_log: EventLog, tag: str, expected: str
) -> None:
    await seeded_log.append_events(
        [
            ClaimCorrected(
                claim=HAMMER_CAPTION,
                # kind given again as it was: not a change to list
                changes={"capacity": "permanent", "kind": "incumbency"},
                reason="He resigned",
            )
        ],
        actor="test",
    )
    service = await project(seeded_log)
    (entry,) = [
        e
        for e in _parse(await rendered(service, "all", lang=tag), "atom").entries
        if "He resigned" in e.summary
    ]
    assert expected in entry.summary
    assert "\u2192 Incumbency" not in entry.summary and "Changed kind" not in entry.summary


async def test_an_entry_s_status_is_its_claim_s_latest_step_as_everywhere_else(
    seeded_log: EventLog,
) -> None:
    # given a confirmed claim, then disputed; and a disputed claim, then corrected
    await confirm(seeded_log, GENALO_RETIREMENT)
    await seeded_log.append_events(
        [ClaimDisputed(claim=GENALO_RETIREMENT, reason="ICE denies it")], actor="test"
    )
    await correct(seeded_log, HAMMER_BODY, quote="Robert Hammer, who leads HSI")
    service = await project(seeded_log)
    # then each entry shows the status the claim command shows
    queries = await current(seeded_log)
    titles = {e.id: e.title for e in _parse(await rendered(service, "all"), "atom").entries}
    events = await seeded_log.events()
    for claim, title in ((GENALO_RETIREMENT, "Disputed: "), (HAMMER_BODY, "Corrected: ")):
        assert title.lower().startswith((await queries.claim(claim))["status"])
        assert titles[f"urn:uuid:{claim_event_id(events, claim)}"].startswith(title)


async def test_archives_are_linked_and_never_change_once_full(seeded_log: EventLog) -> None:
    await add_claims(seeded_log, 0, 2 * PAGE_SIZE + 5)
    service = await project(seeded_log)
    total = SEED_CLAIMS + 2 * PAGE_SIZE + 5
    subscription = etree.fromstring(await rendered(service, "all"))
    assert len(list(subscription.iter(f"{ATOM}entry"))) == PAGE_SIZE
    assert subscription.find(f"{HISTORY}complete") is None
    links = {link.get("rel"): link.get("href") for link in subscription.iter(f"{ATOM}link")}
    # the newest full page: page 3 is still filling, and its entries are all listed here
    assert links["prev-archive"] == f"{BASE}/feeds/all.atom?lang=en&page=2"
    pages = [await rendered(service, "all", page=page) for page in (1, 2, 3)]
    for number, body in enumerate(pages, start=1):
        assert atom_problems(body) == []
        root = etree.fromstring(body)
        assert root.find(f"{HISTORY}archive") is not None
        rels = {link.get("rel"): link.get("href") for link in root.iter(f"{ATOM}link")}
        assert rels["current"] == f"{BASE}/feeds/all.atom?lang=en"
        assert ("prev-archive" in rels) == (number > 1)
        assert ("next-archive" in rels) == (number < 3)
    assert sum(len(_entry_ids(body)) for body in pages) == total
    first_ids = _entry_ids(pages[0])
    frozen = await service.describe(FeedRequest(Scope("all"), "atom", "en", BASE, 1, True))
    assert frozen.cache_control == FULL_ARCHIVE_CACHE

    # Correct an entry of the full first page and add more claims: page 1 stays the same.
    await add_claims(seeded_log, 500, PAGE_SIZE)
    await correct(seeded_log, GENALO_RETIREMENT, capacity="permanent")
    service = await project(seeded_log)
    assert await rendered(service, "all", page=1) == pages[0]
    assert await rendered(service, "all", page=2) == pages[1]
    again = await service.describe(FeedRequest(Scope("all"), "atom", "en", BASE, 1, True))
    assert again.etag == frozen.etag and again.last_modified == frozen.last_modified
    assert await rendered(service, "all", page=3) != pages[2]
    newest = _parse(await rendered(service, "all"), "atom").entries
    assert "Changed capacity" in newest[0].summary and newest[0].id in first_ids


async def _walk_as_an_rfc_5005_reader(service: FeedService) -> dict[str, tuple[str, str]]:
    """What a reader rebuilding the feed gets: the subscription document, then every page
    down the ``prev-archive`` links, keeping each entry's newest version (id -> updated,
    title)."""
    seen: dict[str, tuple[str, str]] = {}
    page: int | None = None
    while True:
        parsed = _parse(await rendered(service, "all", page=page), "atom")
        for entry in parsed.entries:
            if entry.id not in seen or seen[entry.id][0] < entry.updated:
                seen[entry.id] = (entry.updated, entry.title)
        older = [link.href for link in parsed.feed.links if link.rel == "prev-archive"]
        if not older:
            return seen
        page = int(older[0].rpartition("page=")[2])


async def test_a_reader_walking_the_archives_finds_every_entry_s_newest_version(
    seeded_log: EventLog,
) -> None:
    # given three pages, two of them full, and corrections to entries on the full ones
    await add_claims(seeded_log, 0, 2 * PAGE_SIZE + 5)
    await correct(seeded_log, GENALO_RETIREMENT, capacity="permanent")
    await correct(seeded_log, "gen-60", capacity="permanent")
    # when more than a page of later changes has pushed them out of the subscription document
    await add_claims(seeded_log, 500, 2 * PAGE_SIZE)
    await retract(seeded_log, "gen-61")
    service = await project(seeded_log)
    subscription = {e.id for e in _parse(await rendered(service, "all"), "atom").entries}
    events = await seeded_log.events()
    corrected = [f"urn:uuid:{claim_event_id(events, c)}" for c in (GENALO_RETIREMENT, "gen-60")]
    assert not subscription & set(corrected)
    # then walking down from the subscription document finds every entry, each as it is now
    found = await _walk_as_an_rfc_5005_reader(service)
    pages = page_count((await service.head(Scope("all"))).entries)
    newest: dict[str, tuple[str, str]] = {}
    for number in (None, *range(1, pages + 1)):
        for entry in _parse(await rendered(service, "all", page=number), "atom").entries:
            if entry.id not in newest or newest[entry.id][0] < entry.updated:
                newest[entry.id] = (entry.updated, entry.title)
    assert len(found) == SEED_CLAIMS + 4 * PAGE_SIZE + 5
    assert found == newest
    assert all(found[entry][1].startswith("Corrected: ") for entry in corrected)
    retracted = f"urn:uuid:{claim_event_id(events, 'gen-61')}"
    assert found[retracted][1].startswith("Retracted: ")
    # and every page it met on the way is full, so it never changes
    for number in range(1, pages):
        request = FeedRequest(Scope("all"), "atom", "en", BASE, number, True)
        assert (await service.describe(request)).cache_control == FULL_ARCHIVE_CACHE


async def test_a_page_that_has_just_filled_freezes_only_once_the_next_page_begins(
    seeded_log: EventLog,
) -> None:
    # given exactly two pages of entries: page 2 is full but nothing follows it yet
    await add_claims(seeded_log, 0, 2 * PAGE_SIZE - SEED_CLAIMS)
    service = await project(seeded_log)
    request = FeedRequest(Scope("all"), "atom", "en", BASE, 2, True)
    assert (await service.describe(request)).cache_control == SUBSCRIPTION_CACHE
    # when the next page begins, page 2 freezes, already linking to it
    await add_claims(seeded_log, 500, 1)
    service = await project(seeded_log)
    frozen = await service.describe(request)
    assert frozen.cache_control == FULL_ARCHIVE_CACHE
    page = await rendered(service, "all", page=2)
    rels = {link.get("rel") for link in etree.fromstring(page).iter(f"{ATOM}link")}
    assert "next-archive" in rels
    # then more pages and a correction leave its bytes and validators alone
    await add_claims(seeded_log, 600, 2 * PAGE_SIZE)
    await correct(seeded_log, "gen-60", capacity="permanent")
    service = await project(seeded_log)
    assert await rendered(service, "all", page=2) == page
    assert await service.describe(request) == frozen


async def test_small_feeds_are_complete_and_have_no_archive_pages(seeded_log: EventLog) -> None:
    service = await project(seeded_log)
    for fmt in ("atom", "rss"):
        root = etree.fromstring(await rendered(service, "all", fmt))
        assert root.find(f".//{HISTORY}complete") is not None
        assert root.find(f".//{HISTORY}archive") is None
    document = _check_json_feed(await rendered(service, "all", "json"))
    assert "next_url" not in document
    with pytest.raises(FeedNotFound):
        await rendered(service, "all", page=1)
    with pytest.raises(FeedNotFound):
        await rendered(service, "org:nowhere")


async def test_hostile_text_still_gives_valid_escaped_documents(seeded_log: EventLog) -> None:
    claims = await add_hostile(seeded_log)
    service = await project(seeded_log)
    scopes: Sequence[str] = ["all", "post:ice-hsi-ead", *(f"person:{c[6:]}" for c in claims)]
    for scope in scopes:
        for lang in ("en", "ru", "ja"):
            atom = await rendered(service, scope, "atom", lang)
            assert atom_problems(atom) == [], scope
            rss = await rendered(service, scope, "rss", lang)
            pairs: tuple[tuple[bytes, FeedFormat], ...] = ((atom, "atom"), (rss, "rss"))
            for body, fmt in pairs:
                parsed = _parse(body, fmt)
                assert b"<script>" not in body
                assert _validator_bad_characters(body) == [], (scope, lang, fmt)
                texts = " ".join(e.title + e.summary for e in parsed.entries)
                assert "\x00" not in texts and "\x07" not in texts
            _check_json_feed(await rendered(service, scope, "json", lang))
    parsed = _parse(await rendered(service, "all"), "atom")
    # A title holding "<" or "&" is type="html", escaped: it shows the characters as stored.
    titles = " ".join(
        html.unescape(entry.title) if entry.title_detail.type == "text/html" else entry.title
        for entry in parsed.entries
    )
    assert SCRIPT in titles and "\U0001f469\u200d\U0001f4bc" in titles and "\u05d3" in titles
    assert "Bad?Name?with" in titles
    assert "\u202e" not in titles and "\u05d3\u05d5\u05d3" in titles
    assert max(len(entry.title) for entry in parsed.entries) < 1000
    assert "javascript:" not in (await rendered(service, "all")).decode()
    summaries = " ".join(entry.summary for entry in parsed.entries)
    assert CONTROL not in summaries and "date unknown (\u201cBad?Name" in summaries
    contents = " ".join(entry.content[0].value for entry in parsed.entries)
    assert "Mis?read text" in html.unescape(contents)
    # a quote in a right-to-left script cannot reorder the quotation marks around it
    document = json.loads(await rendered(service, "person:hostile-rtl", "json"))
    quoted = f'\u201c<span lang="en" dir="auto">{html.escape(SCRIPT)} \u05d3\u05d5\u05d3'
    assert quoted in document["items"][0]["content_html"]
    # and so can a name in the change the entry opens with, isolated as the quote is
    first_line = document["items"][0]["content_html"].split("</p>")[0]
    assert 'Appointment of <span dir="auto">\u05d3\u05d5\u05d3 ' in first_line
    assert '<span dir="auto">Executive Associate Director (HSI)</span> (' in first_line
    # in plain text (the entry's title and summary, the feed's title) a right-to-left name is
    # isolated with the characters that do in text what dir="auto" does in HTML
    isolated = f"\u2068{clean(RTL)}\u2069"
    item = document["items"][0]
    assert f"Appointment of {isolated} as " in item["title"]
    assert f"Appointment of {isolated} as " in item["summary"]
    assert f", {isolated}, and " in item["summary"]  # among the attribution's parties
    assert document["title"] == f"Leadership changes: {isolated}"
    atom = _parse(await rendered(service, "person:hostile-rtl"), "atom")
    assert f"Appointment of {isolated} as " in atom.entries[0].title
    # while left-to-right names are left as they are
    plain = json.loads(await rendered(service, "person:hostile-script", "json"))
    assert "\u2068" not in plain["title"] + plain["items"][0]["title"]


def _validator_bad_characters(body: bytes) -> list[str]:
    """Text and attribute values holding what the W3C Feed Validator warns of as bad
    characters (BadCharacters): C1 controls, as a wrong encoding leaves them, and U+FFFD."""
    bad = re.compile("[\x80-\x9f\ufffd]")
    found = []
    for element in etree.fromstring(body).iter():
        values = [element.text or "", element.tail or "", *element.attrib.values()]
        found += [f"{element.tag}: {value!r}" for value in values if bad.search(value)]
    return found


def test_feed_errors_are_leaderlog_errors() -> None:
    assert issubclass(FeedNotFound, FeedError) and issubclass(FeedNotFound, LookupError)
    assert issubclass(UnknownLanguage, FeedError) and issubclass(UnknownLanguage, ValueError)
    assert issubclass(FeedError, LeaderlogError)
    with pytest.raises(FeedError, match="unknown feed format 'pdf'; known: atom, rss, json"):
        FeedRequest(Scope.parse("all"), "pdf", "en", BASE)  # type: ignore[arg-type]


async def test_a_feed_of_a_log_whose_feeds_were_never_built_says_so(sqlite_url: str) -> None:
    async with await EventLog.open(sqlite_url) as log:
        await log.append_events([PersonRegistered(person="x", name="X")], actor="t")
        service = FeedService(log.store, poll_interval=0)
        request = FeedRequest(Scope.parse("all"), "atom", "en", BASE)
        with pytest.raises(
            ProjectionError, match="has not been built; run `leaderlog rebuild`"
        ) as raised:
            await service.render(request)
        # and a library caller, who may have no command line, how to build them
        assert "(from Python: await (await runner_for(store)).catch_up())" in str(raised.value)


async def test_the_feed_of_everything_before_any_claim_is_dated_by_the_log_not_1970(
    sqlite_url: str,
) -> None:
    # Organisations and people are registered before the first claim about them: the feed
    # of every claim has no entry yet to be dated by, and 1970 is a date that validators
    # call implausible and that says nothing of the log.
    async with await EventLog.open(sqlite_url) as log:
        await log.append_events([PersonRegistered(person="x", name="X")], actor="t")
        service = await project(log)
        request = FeedRequest(Scope.parse("all"), "atom", "en", BASE, explicit_lang=True)
        (last,) = await log.events()
        validators = await service.describe(request)
        assert (validators.position, validators.last_modified) == (1, last.recorded_at)
        root = etree.fromstring(await rendered(service, "all"))
        assert root.findtext(f"{ATOM}updated") == last.recorded_at.isoformat(
            timespec="milliseconds"
        )
        assert root.find(f"{HISTORY}complete") is not None and not root.findall(f"{ATOM}entry")
        rss = etree.fromstring(await rendered(service, "all", "rss"))
        assert rss.findtext("channel/lastBuildDate") == format_datetime(last.recorded_at)

        # Each later event dates it anew, with a validator that moves with it.
        await log.append_events([PersonUpdated(person="x", name="Y")], actor="t")
        service = await project(log)
        moved = await service.describe(request)
        assert moved.position == 2 and moved.etag != validators.etag


async def test_an_rss_reader_finds_the_feed_s_author_as_in_atom(seeded_log: EventLog) -> None:
    # RSS's <author> takes an email address, which the feeds have none of: feedgen left it
    # out, and rss2email wrote "<author>" as the sender's name
    service = await project(seeded_log)
    atom = _parse(await rendered(service, "all"), "atom")
    rss = _parse(await rendered(service, "all", "rss"), "rss")
    assert rss.feed.author == atom.feed.author == "leaderlog"
    assert b"<dc:creator>leaderlog</dc:creator>" in await rendered(service, "all", "rss")


async def test_a_busy_database_at_the_checkpoint_is_said_busy_not_rebuilding(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a service that has served the feed of everything
    service = await project(seeded_log)
    served = await rendered(service, "all")
    # when the database is busy as the service reads the feeds' checkpoint
    store = service.reader.store
    query = store.query

    async def busy_at_the_checkpoint(sql: str, parameters: Any = ()) -> list[tuple[Any, ...]]:
        if "projection_checkpoints" in sql:
            raise StoreBusy("database is busy: database is locked")
        return await query(sql, parameters)

    monkeypatch.setattr(store, "query", busy_at_the_checkpoint)
    # then the request fails as busy (worth a retry), not as a rebuild or a missing build
    with pytest.raises(StoreBusy):
        await rendered(service, "all")
    # and once the database answers again, the same document is served at once
    monkeypatch.setattr(store, "query", query)
    assert await rendered(service, "all") == served


async def test_a_subject_s_feed_is_titled_by_its_latest_name(seeded_log: EventLog) -> None:
    # given a person whose feed has been served, then renamed
    service = await project(seeded_log)
    first = json.loads(await rendered(service, "person:robert-hammer", "json"))
    await seeded_log.append_events(
        [PersonUpdated(person="robert-hammer", name="Bob Renamed")], actor="test"
    )
    # when the feed is read again once the rename is taken in
    service = await project(seeded_log)
    again = json.loads(await rendered(service, "person:robert-hammer", "json"))
    # then its title names the person as now known, not as first registered
    assert "Robert Hammer" in first["title"]
    assert "Bob Renamed" in again["title"] and "Robert Hammer" not in again["title"]


async def test_an_entry_changed_on_a_full_page_is_listed_once_in_the_subscription_document(
    seeded_log: EventLog,
) -> None:
    # given the feed of everything with a full first archive page
    await add_claims(seeded_log, 0, PAGE_SIZE + 1)
    # when a claim filed on that full page changes (it is filed again under a new rank, its
    # old filing kept for the frozen page)
    await confirm(seeded_log, "gen-0")
    service = await project(seeded_log)
    # then the subscription document lists its entry once, every entry once
    ids = _entry_ids(await rendered(service, "all"))
    assert len(ids) == len(set(ids))
    items = json.loads(await rendered(service, "all", "json"))["items"]
    assert items[0]["title"].startswith("Confirmed: ")
    assert len({item["id"] for item in items}) == len(items)


async def test_an_archive_page_is_titled_as_the_feed_and_its_page_number(
    seeded_log: EventLog,
) -> None:
    # given the feed of everything with more than one page of entries
    await add_claims(seeded_log, 0, PAGE_SIZE + 1)
    service = await project(seeded_log)
    # when its first archive page is read, in Atom and JSON Feed
    atom = etree.fromstring(await rendered(service, "all", page=1))
    json_feed = json.loads(await rendered(service, "all", "json", page=1))
    # then it is titled as the feed, naming the page (a reader lists it beside the feed)
    assert atom.findtext(f"{ATOM}title") == "Leadership changes (archive page 1)"
    assert json_feed["title"] == "Leadership changes (archive page 1)"


async def test_a_replaced_log_s_feeds_are_unavailable_until_rebuilt_up_to_its_head(
    seeded_log: EventLog,
) -> None:
    # given a service that has served the feeds, told the log was replaced by one ending at
    # the head it has (a runner found so and rebuilds the projections from it)
    service = await project(seeded_log)
    served = await rendered(service, "all")
    head = (await seeded_log.store.head())[0]
    service.log_replaced(head)
    # when the rebuild has taken the feeds through part of the new log only
    await _rebuild_begun(seeded_log)
    # then the feeds say they are being rebuilt rather than serve what is there
    with pytest.raises(StoreUnavailable, match="being rebuilt"):
        await rendered(service, "all")
    # and once the rebuild reaches the new log's head, they are served again
    await ProjectionRunner(seeded_log.store, [FeedEntriesProjection()]).rebuild()
    assert await rendered(service, "all") == served


async def test_validators_read_while_a_rebuild_begins_are_neither_given_nor_kept(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a service whose read of a scope's head is overtaken by a rebuild's start
    service = await project(seeded_log)
    read_head = service.reader.head
    begun: list[bool] = []

    async def head_as_a_rebuild_begins(scope: str) -> Any:
        found = await read_head(scope)
        if not begun:
            begun.append(True)
            await _rebuild_begun(seeded_log)
        return found

    monkeypatch.setattr(service.reader, "head", head_as_a_rebuild_begins)
    request = FeedRequest(Scope.parse("all"), "atom", "en", BASE)
    # when the request is described, then it is refused as the feeds being rebuilt
    with pytest.raises(StoreUnavailable, match="being rebuilt"):
        await service.describe(request)
    # and the validators read meanwhile are not kept: once rebuilt, it is described afresh
    await ProjectionRunner(seeded_log.store, [FeedEntriesProjection()]).rebuild()
    fresh = FeedService(seeded_log.store, poll_interval=0)
    assert await service.describe(request) == await fresh.describe(request)


async def test_a_document_read_while_a_rebuild_begins_is_neither_sent_nor_kept(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a service whose read of a feed's entries is overtaken by a rebuild's start
    service = await project(seeded_log)
    served = await rendered(service, "org:ice")
    read_entries = service.reader.recent
    begun: list[bool] = []

    async def recent_as_a_rebuild_begins(scope: str, limit: int) -> list[dict[str, Any]]:
        found = await read_entries(scope, limit)
        if not begun:
            begun.append(True)
            await _rebuild_begun(seeded_log)
        return found

    monkeypatch.setattr(service.reader, "recent", recent_as_a_rebuild_begins)
    # when the feed of everything is rendered, then it is refused, not sent
    with pytest.raises(StoreUnavailable, match="being rebuilt"):
        await rendered(service, "all")
    # and nothing rendered before the rebuild is served from memory after it
    await ProjectionRunner(seeded_log.store, [FeedEntriesProjection()]).rebuild()
    assert await rendered(service, "org:ice") == served


async def test_the_recent_changes_a_page_lists_are_those_of_its_scope(
    seeded_log: EventLog,
) -> None:
    # given the seeds' claims, some about Robert Hammer, more about others
    service = await project(seeded_log)
    # when the recent changes of everything and of his feed's scope are read
    everything = await service.recent(PAGE_SIZE, "en")
    his = await service.recent(PAGE_SIZE, "en", "person:robert-hammer")
    # then his are his claims alone: each names him, and they are fewer than all of them
    assert 0 < len(his) < len(everything)
    assert all("Robert Hammer" in change.title_html for change in his)
