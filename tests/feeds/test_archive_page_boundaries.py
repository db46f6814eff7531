"""RFC 5005 paging at the edges of a page: a feed of exactly one page's worth of entries is
complete, and a subscription document links only to archive pages that are full."""

from __future__ import annotations

import pytest
from lxml import etree

from leaderlog.feeds import PAGE_SIZE, SUBSCRIPTION_CACHE, FeedNotFound, FeedRequest, Scope
from leaderlog.log import EventLog
from tests.feeds.logs import BASE, SEED_CLAIMS, add_claims, project

ATOM = "{http://www.w3.org/2005/Atom}"
HISTORY = "{http://purl.org/syndication/history/1.0}"


def _links(body: bytes) -> dict[str | None, str | None]:
    root = etree.fromstring(body)
    return {link.get("rel"): link.get("href") for link in root.iter(f"{ATOM}link")}


async def test_a_feed_of_exactly_one_page_of_entries_is_complete(seeded_log: EventLog) -> None:
    # given exactly PAGE_SIZE entries in the feed of everything
    await add_claims(seeded_log, 0, PAGE_SIZE - SEED_CLAIMS)
    service = await project(seeded_log)
    assert (await service.head(Scope("all"))).entries == PAGE_SIZE
    # when its subscription document is rendered
    request = FeedRequest(Scope("all"), "atom", "en", BASE, None, True)
    root = etree.fromstring((await service.render(request)).body)
    # then it holds them all and says so, with no archive to link to
    assert len(list(root.iter(f"{ATOM}entry"))) == PAGE_SIZE
    assert root.find(f"{HISTORY}complete") is not None
    assert "prev-archive" not in _links(etree.tostring(root))
    # and there is no archive page at all
    with pytest.raises(FeedNotFound):
        await service.render(FeedRequest(Scope("all"), "atom", "en", BASE, 1, True))


async def test_a_subscription_links_to_the_newest_full_page_not_one_just_filled(
    seeded_log: EventLog,
) -> None:
    # given exactly two pages of entries: page 2 has filled, but nothing follows it yet, so
    # it is not frozen (it gains its next-archive link when page 3 begins)
    await add_claims(seeded_log, 0, 2 * PAGE_SIZE - SEED_CLAIMS)
    service = await project(seeded_log)
    page_2 = FeedRequest(Scope("all"), "atom", "en", BASE, 2, True)
    assert (await service.describe(page_2)).cache_control == SUBSCRIPTION_CACHE
    # when the subscription document is rendered
    request = FeedRequest(Scope("all"), "atom", "en", BASE, None, True)
    links = _links((await service.render(request)).body)
    # then its prev-archive link is to page 1, the newest page that never changes
    assert links["prev-archive"] == f"{BASE}/feeds/all.atom?lang=en&page=1"
