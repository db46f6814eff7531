"""JSON Feed 1.1 writer (https://jsonfeed.org/version/1.1).

JSON Feed pages with ``next_url`` (the next, older, set of items), so the subscription
document points at the newest archive page and each archive page at the one before it. The
RFC 5005 facts are repeated in an ``_archive`` extension object for clients that want them.

``title``, ``summary`` and ``content_text`` are plain text (JSON carries them as they are),
``content_html`` is HTML; addresses are URIs (:func:`._address.uri`), as the spec's ``url``
fields ask.

Members are written in the spec's order, not sorted: ``version`` "should appear at the very
top" (readers that sniff a document's first bytes look for it there), and the items come after
what describes the feed. Insertion order is as fixed as sorting, so the bytes stay the same.
"""

from __future__ import annotations

from typing import Any

from leaderlog._json import dumps
from leaderlog.events import format_time
from leaderlog.feeds._address import uri
from leaderlog.feeds._document import Entry, Feed

__all__ = ["render_json"]

VERSION = "https://jsonfeed.org/version/1.1"


def _item(entry: Entry) -> dict[str, Any]:
    item: dict[str, Any] = {"id": entry.id}
    # The source's page; for a source whose address cannot be linked, the claim's own, since
    # the spec wants a url "regardless" and readers (Feedbin's) refuse a feed with an item
    # without one.
    url = entry.url or entry.own_url
    if url:
        item["url"] = uri(url)
    item.update(
        title=entry.title,
        summary=entry.summary,
        content_text=entry.summary,
        content_html=entry.content_html,
        date_published=format_time(entry.published),
        date_modified=format_time(entry.updated),
        tags=[category.label for category in entry.categories],
    )
    return item


def _address(address: str | None) -> str | None:
    return uri(address) if address else None


def render_json(feed: Feed) -> bytes:
    document: dict[str, Any] = {
        "version": VERSION,
        "title": feed.title,
        "description": feed.subtitle,
        "home_page_url": uri(feed.home_url),
        "feed_url": uri(feed.self_url),
    }
    older = feed.prev_archive
    if older:
        document["next_url"] = uri(older)
    if feed.final:
        # A full archive page never changes again: nothing to poll for.
        document["expired"] = True
    document.update(
        {
            "language": feed.language,
            "authors": [{"name": feed.author}],
            # JSON Feed 1.0's member too: readers of 1.0 (feedparser's, Feedbin's) read only it.
            "author": {"name": feed.author},
            "_archive": {
                "about": "https://www.rfc-editor.org/rfc/rfc5005",
                "archive": feed.archive,
                "complete": feed.complete,
                "current": _address(feed.current),
                "prev_archive": _address(feed.prev_archive),
                "next_archive": _address(feed.next_archive),
                "updated": format_time(feed.updated),
            },
            "items": [_item(entry) for entry in feed.entries],
        }
    )
    return (dumps(document, indent=True, sort_keys=False) + "\n").encode()
