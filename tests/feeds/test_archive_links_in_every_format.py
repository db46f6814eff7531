"""Archive links (RFC 5005) as RSS and JSON Feed readers are given them, as Atom ones are."""

from __future__ import annotations

import json

from lxml import etree

from leaderlog.feeds import PAGE_SIZE
from leaderlog.log import EventLog
from tests.feeds.logs import BASE, add_claims, project, rendered

ATOM = "{http://www.w3.org/2005/Atom}"
HISTORY = "{http://purl.org/syndication/history/1.0}"


def _archive_links(body: bytes) -> dict[str | None, tuple[str | None, str | None]]:
    """rel -> (href, type) of every Atom link in the document (in RSS: atom:link)."""
    root = etree.fromstring(body)
    return {
        link.get("rel"): (link.get("href"), link.get("type"))
        for link in root.iter(f"{ATOM}link")
        if link.get("rel") in ("prev-archive", "next-archive", "current")
    }


async def test_rss_and_json_feed_readers_are_given_the_same_archive_links_as_atom(
    seeded_log: EventLog,
) -> None:
    # given three archive pages, two of them full
    await add_claims(seeded_log, 0, 2 * PAGE_SIZE + 5)
    service = await project(seeded_log)
    # when each document is rendered as RSS
    subscription = await rendered(service, "all", "rss")
    pages = {page: await rendered(service, "all", "rss", page=page) for page in (1, 2, 3)}
    # then the subscription document links to the newest full page, as an RSS document
    rss = "application/rss+xml"
    assert _archive_links(subscription) == {
        "prev-archive": (f"{BASE}/feeds/all.rss?lang=en&page=2", rss)
    }
    # and each page links to its neighbours and to the subscription document
    for page, body in pages.items():
        links = _archive_links(body)
        assert links["current"] == (f"{BASE}/feeds/all.rss?lang=en", rss)
        older = (f"{BASE}/feeds/all.rss?lang=en&page={page - 1}", rss) if page > 1 else None
        newer = (f"{BASE}/feeds/all.rss?lang=en&page={page + 1}", rss) if page < 3 else None
        assert links.get("prev-archive") == older and links.get("next-archive") == newer
        assert etree.fromstring(body).find(f"channel/{HISTORY}archive") is not None
    # and the Atom documents type their archive links as Atom
    atom = _archive_links(await rendered(service, "all", "atom", page=2))
    assert {media for _, media in atom.values()} == {"application/atom+xml"}
    # and JSON Feed pages go the same way down, by next_url
    document = json.loads(await rendered(service, "all", "json"))
    assert document["next_url"] == f"{BASE}/feeds/all.json?lang=en&page=2"
    page_2 = json.loads(await rendered(service, "all", "json", page=2))
    assert page_2["next_url"] == f"{BASE}/feeds/all.json?lang=en&page=1"
    assert "next_url" not in json.loads(await rendered(service, "all", "json", page=1))
    assert page_2["_archive"]["next_archive"] == f"{BASE}/feeds/all.json?lang=en&page=3"
