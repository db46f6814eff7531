"""Atom and RSS writers: the only module that uses feedgen.

feedgen's defaults are unsafe for reproducible feeds, so this module always overrides them:

- ``updated``/``lastBuildDate`` default to ``now()``: both are always set from events;
- ``add_entry`` prepends: entries are added with ``order="append"`` in the order given;
- the RSS channel ``<link>`` is the *last* feed link added, so the web page link goes last;
- feedgen 1.0.0 dropped the attributes of an entry's links when it had more than one
  (issue #135); the ``feedgen2`` fork fixes it and ``tests/feeds`` checks it stays fixed;
- it knows nothing of RFC 5005, so archive elements come from an extension (below), which is
  also how the archive links reach RSS (feedgen only copies ``rel="self"`` there).
"""

from __future__ import annotations

from typing import Any

from feedgen.entry import FeedEntry  # type: ignore[import-untyped]
from feedgen.ext.base import BaseEntryExtension, BaseExtension  # type: ignore[import-untyped]
from feedgen.feed import FeedGenerator  # type: ignore[import-untyped]
from feedgen.util import xml_elem  # type: ignore[import-untyped]

from leaderlog.feeds._document import Entry, Feed, Link
from leaderlog.feeds._paging import MEDIA_TYPES, FeedFormat

__all__ = ["render_atom", "render_rss"]

ATOM_NS = "http://www.w3.org/2005/Atom"
HISTORY_NS = "http://purl.org/syndication/history/1.0"


def _attributes(link: Link) -> dict[str, str]:
    fields = {"href": link.href, "rel": link.rel}
    if link.media_type:
        fields["type"] = link.media_type
    if link.hreflang:
        fields["hreflang"] = link.hreflang
    if link.title:
        fields["title"] = link.title
    return fields


class ArchiveExtension(BaseExtension):  # type: ignore[misc]
    """RFC 5005: ``fh:complete``, ``fh:archive`` and prev-archive / next-archive / current."""

    def __init__(self) -> None:
        self.archive = False
        self.complete = False
        self.links: list[Link] = []

    def extend_ns(self) -> dict[str, str]:
        return {"fh": HISTORY_NS} if self.archive or self.complete else {}

    def _markers(self, parent: Any) -> None:
        if self.complete:
            xml_elem(f"{{{HISTORY_NS}}}complete", parent)
        if self.archive:
            xml_elem(f"{{{HISTORY_NS}}}archive", parent)

    def extend_atom(self, feed: Any) -> Any:
        # feedgen writes Atom elements without a namespace under a default xmlns attribute,
        # so these links are created the same way to serialise identically.
        for link in self.links:
            xml_elem("link", feed, **_attributes(link))
        self._markers(feed)
        return feed

    def extend_rss(self, feed: Any) -> Any:
        channel = feed[0]
        for link in self.links:
            xml_elem(f"{{{ATOM_NS}}}link", channel, **_attributes(link))
        self._markers(channel)
        return feed


class ArchiveEntryExtension(BaseEntryExtension):  # type: ignore[misc]
    """Entries carry nothing of RFC 5005; feedgen still wants a class per extension."""


def _add_entry(generator: FeedGenerator, entry: Entry) -> None:
    item: FeedEntry = generator.add_entry(order="append")
    item.id(entry.id)
    item.title(entry.title)
    item.summary(entry.summary)
    item.content(entry.content_html, type="html")
    item.link([_attributes(link) for link in entry.links])
    item.published(entry.published)
    item.updated(entry.updated)
    if entry.categories:
        item.category([{"term": c.term, "label": c.label} for c in entry.categories])


def _generator(feed: Feed, fmt: FeedFormat) -> FeedGenerator:
    generator = FeedGenerator()
    generator.register_extension("archive", ArchiveExtension, ArchiveEntryExtension)
    generator.id(feed.id)
    generator.title(feed.title)
    generator.subtitle(feed.subtitle)
    generator.language(feed.language)
    generator.updated(feed.updated)
    generator.author({"name": feed.author})
    generator.generator(feed.generator, version=feed.generator_version)
    generator.link(href=feed.self_url, rel="self", type=MEDIA_TYPES[fmt])
    # Last, because feedgen makes the last feed link the RSS channel's <link>.
    generator.link(href=feed.home_url, rel="alternate", type="text/html")
    extension: ArchiveExtension = generator.archive
    extension.archive = feed.archive
    extension.complete = feed.complete
    for rel, href in (
        ("current", feed.current),
        ("prev-archive", feed.prev_archive),
        ("next-archive", feed.next_archive),
    ):
        if href:
            extension.links.append(Link(href=href, rel=rel, media_type=MEDIA_TYPES[fmt]))
    for entry in feed.entries:
        _add_entry(generator, entry)
    return generator


def render_atom(feed: Feed) -> bytes:
    body: bytes = _generator(feed, "atom").atom_str(pretty=True, encoding="UTF-8")
    return body


def render_rss(feed: Feed) -> bytes:
    body: bytes = _generator(feed, "rss").rss_str(pretty=True, encoding="UTF-8")
    return body
