"""The feed service's caches, validators and archive pages as the log moves on or is replaced."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from leaderlog.errors import StoreUnavailable
from leaderlog.events import PersonRegistered
from leaderlog.feeds import (
    FULL_ARCHIVE_CACHE,
    PAGE_SIZE,
    FeedNotFound,
    FeedRequest,
    FeedService,
    Scope,
)
from leaderlog.feeds._paging import page_count
from leaderlog.log import EventLog, load_seeds
from leaderlog.projections.feed_entries import FeedEntriesProjection
from leaderlog.projections.runner import ProjectionRunner
from tests.conftest import SEEDS
from tests.feeds.logs import (
    BASE,
    SEED_CLAIMS,
    a_claim_arrives,
    add_claims,
    correct,
    project,
    recent_read_as_a_claim_arrives,
    rendered,
)

ATOM = "{http://www.w3.org/2005/Atom}"


async def test_documents_whose_links_differ_have_different_etags(seeded_log: EventLog) -> None:
    # given one feed asked for with its language in the address, without it, and under
    # another base address
    service = await project(seeded_log)
    scope = Scope.parse("all")
    requests = [
        FeedRequest(scope, "atom", "en", BASE, None, explicit_lang=True),
        FeedRequest(scope, "atom", "en", BASE, None, explicit_lang=False),
        FeedRequest(scope, "atom", "en", "https://mirror.example.org", None, explicit_lang=True),
    ]
    # when each is rendered
    documents = [await service.render(request) for request in requests]
    # then their links make them different documents, each with an ETag of its own: a cache
    # holding one must not be told it holds another
    assert len({document.body for document in documents}) == 3
    assert len({document.validators.etag for document in documents}) == 3


async def test_a_log_replaced_by_another_of_the_same_length_is_described_afresh(
    seeded_log: EventLog, sqlite_url: str, tmp_path: Path
) -> None:
    # given a service that has described the feed and its full first archive page, on a
    # log of the seeds, two pages of claims, a person registered, then one more claim
    person = PersonRegistered(person="zz-replaced", name="Zed Replaced")
    await add_claims(seeded_log, 0, 2 * PAGE_SIZE)
    await seeded_log.append_events([person], actor="test")
    await add_claims(seeded_log, 2 * PAGE_SIZE, 1)
    service = await project(seeded_log)
    requests = [
        FeedRequest(Scope("all"), "atom", "en", BASE, page, explicit_lang=True)
        for page in (None, 1)
    ]
    for request in requests:
        await service.describe(request)
    # when another log exactly as long, ending with the same claim at the same position, is
    # restored in its place (the person registered first: the chain's hash at the end
    # differs, and page 1 froze one position further on), the service is told, and the
    # feeds are rebuilt from it
    other_url = f"sqlite:///{tmp_path / 'other.db'}"
    async with await EventLog.open(other_url) as other:
        await load_seeds(other, SEEDS)
        await other.append_events([person], actor="test")
        await add_claims(other, 0, 2 * PAGE_SIZE + 1)
    source = sqlite3.connect(other_url.removeprefix("sqlite:///"))
    target = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"))
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()
    head = (await seeded_log.store.head())[0]
    service.log_replaced(head)
    await ProjectionRunner(seeded_log.store, [FeedEntriesProjection()]).rebuild()
    # then each is described as a service new to this log describes it: nothing read from
    # the other log (the chain's hash at a position, where a page froze) is used again
    fresh = FeedService(seeded_log.store, poll_interval=0)
    for request in requests:
        assert await service.describe(request) == await fresh.describe(request)


async def test_the_furthest_page_events_not_taken_in_could_fill_is_catching_up_not_missing(
    seeded_log: EventLog,
) -> None:
    # given feeds caught up with the log, then a page's worth of claims appended that this
    # service has not taken in yet (another server's writes, say)
    service = await project(seeded_log)
    entries = (await service.head(Scope("all"))).entries
    before = (await seeded_log.store.head())[0]
    await add_claims(seeded_log, 0, PAGE_SIZE)
    backlog = (await seeded_log.store.head())[0] - before
    furthest = page_count(entries + backlog)
    # when the furthest archive page those events could fill is asked for, then it is
    # "not yet" (another server may already link to it)
    with pytest.raises(StoreUnavailable, match="catching up"):
        await rendered(service, "all", page=furthest)
    # while the page after it could never be there
    with pytest.raises(FeedNotFound, match=f"archive page {furthest + 1} does not exist"):
        await rendered(service, "all", page=furthest + 1)


async def test_archive_pages_are_numbered_from_one(seeded_log: EventLog) -> None:
    # given a feed with archive pages
    await add_claims(seeded_log, 0, 2 * PAGE_SIZE)
    service = await project(seeded_log)
    # when page 0 is asked for, then it does not exist, as page 1 is the oldest
    with pytest.raises(FeedNotFound, match="archive page 0 does not exist"):
        await rendered(service, "all", page=0)
    assert await rendered(service, "all", page=1)


async def test_an_archive_page_of_a_complete_feed_says_the_feed_is_complete(
    seeded_log: EventLog,
) -> None:
    # given a feed small enough to be complete, without archive pages
    service = await project(seeded_log)
    # when its first archive page is asked for, then the answer says why there is none
    with pytest.raises(FeedNotFound) as missing:
        await rendered(service, "all", page=1)
    assert str(missing.value).endswith("archive page 1 does not exist (the feed is complete)")


async def test_a_full_page_is_read_as_it_was_when_the_next_page_began(
    seeded_log: EventLog,
) -> None:
    # given exactly two pages of entries, then an entry of page 2 corrected while it is
    # full but nothing follows it yet
    await add_claims(seeded_log, 0, 2 * PAGE_SIZE - SEED_CLAIMS)
    last_of_page_2 = f"gen-{2 * PAGE_SIZE - SEED_CLAIMS - 1}"
    await correct(seeded_log, last_of_page_2, capacity="permanent")
    # when the next page begins, freezing page 2
    await add_claims(seeded_log, 500, 1)
    service = await project(seeded_log)
    request = FeedRequest(Scope("all"), "atom", "en", BASE, 2, explicit_lang=True)
    frozen = await service.describe(request)
    # then it is dated by the event that began the next page, and holds the correction
    assert frozen.cache_control == FULL_ARCHIVE_CACHE
    assert frozen.position == (await seeded_log.store.head())[0]
    assert "Corrected: " in (await service.render(request)).body.decode()


async def test_a_document_whose_scope_moves_while_it_is_read_is_read_again_between_polls(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a service that looks at the projection only now and then, whose entries are
    # read while a claim is appended and projected (another server's write, say)
    await project(seeded_log)
    service = FeedService(seeded_log.store, poll_interval=3600)
    monkeypatch.setattr(
        service.reader, "recent", recent_read_as_a_claim_arrives(seeded_log, service)
    )
    request = FeedRequest(Scope.parse("all"), "atom", "en", BASE, None, explicit_lang=True)
    # when the document is rendered
    document = await service.render(request)
    # then it is read again at the new position, not refused as changing too fast
    head = (await seeded_log.store.head())[0]
    assert document.validators.position == head
    assert "Quote number 0." in document.body.decode()


async def test_a_head_read_while_the_log_moves_on_is_not_kept(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a service whose read of a scope's head is overtaken by a claim appended and
    # projected, which another request notices meanwhile
    service = await project(seeded_log)
    read_head = service.reader.head
    moves = [1]

    async def head_while_a_claim_arrives(scope: str) -> Any:
        found = await read_head(scope)
        if moves:
            moves.pop()
            await a_claim_arrives(seeded_log)
            other = FeedRequest(Scope.parse("org:ice"), "atom", "en", BASE, explicit_lang=True)
            await service.describe(other)
        return found

    monkeypatch.setattr(service.reader, "head", head_while_a_claim_arrives)
    request = FeedRequest(Scope.parse("all"), "atom", "en", BASE, explicit_lang=True)
    await service.describe(request)
    # when the feed is described again
    again = await service.describe(request)
    # then it is described at the log's new head, not from the head read before it moved
    assert again.position == (await seeded_log.store.head())[0]


async def test_a_document_too_large_for_the_cache_leaves_the_cached_ones_alone(
    seeded_log: EventLog,
) -> None:
    # given a service whose cache holds a small feed but not the feed of everything
    await add_claims(seeded_log, 0, PAGE_SIZE)
    measuring = await project(seeded_log)
    small = FeedRequest(Scope.parse("person:robert-hammer"), "atom", "en", BASE, explicit_lang=True)
    large = FeedRequest(Scope.parse("all"), "atom", "en", BASE, explicit_lang=True)
    sizes: dict[FeedRequest, int] = {}
    for request in (small, large):
        document = await measuring.render(request)
        sizes[request] = len(document.body) + len(document.gzipped)
    assert sizes[small] < sizes[large]
    service = FeedService(seeded_log.store, poll_interval=0, cache_bytes=sizes[small])
    await service.render(small)
    # when the larger document is rendered
    await service.render(large)
    # then the small one is still served from the cache, and the large one is not kept
    assert (await service.lookup(small))[1] is not None
    assert (await service.lookup(large))[1] is None


async def test_each_language_of_a_feed_has_its_own_feed_id(seeded_log: EventLog) -> None:
    # given the feed of everything
    service = await project(seeded_log)
    # when it is read in two languages
    ids = [
        etree.fromstring(await rendered(service, "all", "atom", lang)).findtext(f"{ATOM}id")
        for lang in ("en", "fr")
    ]
    # then each is a feed of its own to a reader: the ids differ
    assert len(set(ids)) == 2


async def test_a_subscription_document_says_its_last_event_s_stamp_whenever_it_arrived(
    seeded_log: EventLog,
) -> None:
    # given a service that has served the feed, then took in a claim some time after it was
    # stamped (its Last-Modified then says when it arrived)
    service = await project(seeded_log)
    await rendered(service, "all")
    await add_claims(seeded_log, 0, 1)
    await asyncio.sleep(0.01)
    await ProjectionRunner(seeded_log.store, [FeedEntriesProjection()]).catch_up()
    await rendered(service, "all")
    # when the feed is rendered, then it is the document any server writes at that
    # position, dated by the stamp, as a service new to the log renders it
    fresh = FeedService(seeded_log.store, poll_interval=0)
    for fmt in ("atom", "rss", "json"):
        assert await rendered(service, "all", fmt) == await rendered(fresh, "all", fmt)


async def test_a_missing_page_of_twenty_digits_is_named_whole(seeded_log: EventLog) -> None:
    # given a feed, and a page number of 20 digits (the most named whole)
    service = await project(seeded_log)
    page = 10**19
    # when it is asked for, then the answer names it whole, digit for digit
    with pytest.raises(FeedNotFound, match=f"archive page {page} does not exist \\("):
        await rendered(service, "all", page=page)
