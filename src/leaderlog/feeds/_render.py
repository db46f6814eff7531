"""Atom and RSS writers: the only module that uses feedgen.

feedgen's defaults are unsafe for reproducible feeds, so this module always overrides them:

- ``updated``/``lastBuildDate`` default to ``now()``: both are always set from events;
- ``add_entry`` prepends: entries are added with ``order="append"`` in the order given;
- the RSS channel ``<link>`` is the *last* feed link added, so the web page link goes last
  there (first in Atom, where some readers take the first link for it);
- feedgen 1.0.0 dropped the attributes of an entry's links when it had more than one
  (issue #135); the ``feedgen2`` fork fixes it and ``tests/feeds`` checks it stays fixed;
- it knows nothing of RFC 5005, so archive elements come from an extension (below), which is
  also how the archive links reach RSS (feedgen only copies ``rel="self"`` there);
- it has no ``type`` for a feed's Atom title and no modification time for RSS items, so both
  come from a second extension (below), as do the RSS titles written for readers that guess;
- it writes RSS dates with ``strftime``, whose ``%Y`` gives year 999 as ``999`` and year 1 as
  ``1``: not an RFC 822 date at all, or one readers take for 2001. A log may hold events
  recorded in any year (an imported export keeps its recorded times), so the second extension
  writes every RSS date again with the four-digit year RFC 2822 gives it;
- it writes Atom dates with ``isoformat()``, six digits after the second when there are
  microseconds: valid RFC 3339, but ROME (the Java library behind CommaFeed and others) reads
  the digits as milliseconds, so ``.912837`` put an entry 15 minutes later and out of order.
  Atom dates, ``atom:updated`` in RSS included, are written with milliseconds, cut (not
  rounded) so that no date moves past a later one.

Text is never passed as markup, and each format says so in its own way:

- Atom: a title or summary that looks like markup (a tag or a character reference: see
  :func:`looks_like_markup`) is ``type="html"`` with the text HTML-escaped (otherwise the W3C
  validator, and readers, take ``Tom <b>Tag</b>`` for undeclared markup); other text stays
  ``type="text"`` (no attribute), a bare ``&`` included, since readers that ignore ``type``
  would show ``Smith &amp; Wesson``. Content is always ``type="html"``.
- RSS: a description is HTML by convention, so the summary is HTML-escaped into it
  (``<script>`` arrives as text). A title is read as HTML by readers that see a tag or a
  reference in it (feedparser does), so one that looks like markup is HTML-escaped too; in
  every title each ``&`` is written ``&#x26;``: the RSS Profile's hexadecimal references, which
  the validator takes as the sign of deliberate character data, and every reader as one
  ``&``. Addresses are URIs (:func:`._address.uri`; sources' addresses already are, in every
  format), and items carry ``atom:updated``.
"""

from __future__ import annotations

import datetime as dt
import html
import re
from dataclasses import replace
from email.utils import format_datetime
from typing import Any
from urllib.parse import urlsplit

from feedgen.entry import FeedEntry  # type: ignore[import-untyped]
from feedgen.ext.base import BaseEntryExtension, BaseExtension  # type: ignore[import-untyped]
from feedgen.feed import FeedGenerator  # type: ignore[import-untyped]
from feedgen.util import xml_elem  # type: ignore[import-untyped]
from lxml import etree  # type: ignore[import-untyped]  # feedgen's XML library

from leaderlog.feeds._address import uri
from leaderlog.feeds._document import Entry, Feed, Link, looks_like_markup
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


def _atom_text(text: str) -> tuple[str, str | None]:
    """An Atom text construct's value and ``type``: plain text, or escaped HTML (see above)."""
    if looks_like_markup(text):
        return html.escape(text, quote=False), "html"
    return text, None


def _rss_title(element: Any) -> None:
    """Rewrite an RSS ``<title>``: HTML-escaped first when it looks like markup, then with
    every ``&`` a ``&#x26;`` reference (see above); a title without one is left as it is."""
    if element is None or not element.text:
        return
    text = element.text
    if looks_like_markup(text):
        text = html.escape(text, quote=False)
    if "&" not in text:
        return
    first, *rest = text.split("&")
    element.text = first
    for piece in rest:
        reference = etree.Entity("#x26")
        reference.tail = piece
        element.append(reference)


def _atom_date(element: Any, moment: dt.datetime | None) -> None:
    """Write an Atom date again with milliseconds, as ROME reads it (see above)."""
    if element is not None and moment is not None:
        element.text = _atom_time(moment)


def _atom_time(moment: dt.datetime) -> str:
    return moment.isoformat(timespec="milliseconds")


def _redate(element: Any, moment: dt.datetime | None) -> None:
    """Write an RSS date again as RFC 2822 writes RFC 822's, with a four-digit year (see
    above); every other date is written exactly as feedgen wrote it."""
    if element is not None and moment is not None:
        element.text = format_datetime(moment)


class TextExtension(BaseExtension):  # type: ignore[misc]
    """The feed's title: ``type="html"`` in Atom when it holds ``<`` or ``&``, escaped in RSS;
    and the RSS channel's ``lastBuildDate`` with a four-digit year."""

    def __init__(self) -> None:
        self.updated: dt.datetime | None = None

    def extend_atom(self, feed: Any) -> Any:
        # feedgen writes Atom elements without a namespace (see ArchiveExtension.extend_atom).
        title = feed.find("title")
        if title is not None and title.text:
            text, kind = _atom_text(title.text)
            title.text = text
            if kind:
                title.set("type", kind)
        _atom_date(feed.find("updated"), self.updated)
        return feed

    def extend_rss(self, feed: Any) -> Any:
        _rss_title(feed[0].find("title"))
        _redate(feed[0].find("lastBuildDate"), self.updated)
        return feed


class ItemExtension(BaseEntryExtension):  # type: ignore[misc]
    """An RSS item's title (escaped as the channel's), its ``pubDate`` with a four-digit year,
    and ``atom:updated``: RSS has only ``pubDate``, so without it readers show a corrected or
    confirmed entry's first date. An Atom entry's dates with milliseconds."""

    def __init__(self) -> None:
        self.published: dt.datetime | None = None
        self.updated: dt.datetime | None = None

    def extend_atom(self, entry: Any) -> Any:
        # feedgen writes Atom elements without a namespace (see ArchiveExtension.extend_atom).
        _atom_date(entry.find("published"), self.published)
        _atom_date(entry.find("updated"), self.updated)
        return entry

    def extend_rss(self, item: Any) -> Any:
        _rss_title(item.find("title"))
        _redate(item.find("pubDate"), self.published)
        if self.updated is not None:
            xml_elem(f"{{{ATOM_NS}}}updated", item).text = _atom_time(self.updated)
        return item


def _ip_literal(href: str) -> bool:
    """Whether an address names its host as an IPv6 literal (``http://[::1]/``). Valid, but
    the W3C Feed Validator's check of RSS ``<link>`` refuses it; such an item goes without
    one in RSS (its summary still gives the address; JSON Feed keeps the link, and Atom
    unless :func:`_atom_refuses` it)."""
    return "[" in urlsplit(href).netloc


# The one IPv6 form the W3C Feed Validator's check of an Atom link takes: hexadecimal digits
# and colons, right after "//", then an optional port.
_PLAIN_IPV6_AUTHORITY = re.compile(r"\[[0-9A-Fa-f:]+\](:[0-9]*)?")


def _atom_refuses(href: str) -> bool:
    """Whether the W3C Feed Validator refuses an address with an IPv6 literal as an Atom link
    (an invalid character): an IPv4-mapped address (``[::ffff:192.0.2.1]``), IPvFuture, a zone
    id, or a user before the bracket. Such an address is valid, so JSON Feed still links it;
    the Atom entry goes without the link, its summary and content giving the address."""
    return _ip_literal(href) and not _PLAIN_IPV6_AUTHORITY.fullmatch(urlsplit(href).netloc)


def _add_entry(generator: FeedGenerator, entry: Entry, fmt: FeedFormat) -> None:
    item: FeedEntry = generator.add_entry(order="append")
    item.id(entry.id)
    links = entry.links
    if fmt == "atom":
        title, title_type = _atom_text(entry.title)
        item.title(title, ttype=title_type)
        summary, summary_type = _atom_text(entry.summary)
        item.summary(summary, type=summary_type)
        links = tuple(link for link in links if not _atom_refuses(link.href))
    else:
        item.title(entry.title)
        item.summary(html.escape(entry.summary, quote=False))
        links = tuple(
            replace(link, href=uri(link.href)) for link in links if not _ip_literal(link.href)
        )
    item.content(entry.content_html, type="html")
    item.link([_attributes(link) for link in links])
    item.published(entry.published)
    item.updated(entry.updated)
    item.text.published = entry.published
    item.text.updated = entry.updated
    if entry.categories:
        item.category([{"term": c.term, "label": c.label} for c in entry.categories])


def _generator(feed: Feed, fmt: FeedFormat) -> FeedGenerator:
    address = uri if fmt == "rss" else str
    generator = FeedGenerator()
    generator.register_extension("archive", ArchiveExtension, ArchiveEntryExtension)
    generator.register_extension("text", TextExtension, ItemExtension)
    generator.id(feed.id)
    generator.title(feed.title)
    generator.subtitle(feed.subtitle)
    generator.language(feed.language)
    generator.updated(feed.updated)
    generator.author({"name": feed.author})
    if fmt == "rss":
        # RSS's own <author> and <managingEditor> take an email address, which the feeds do
        # not have (feedgen leaves them out): readers find the name in dc:creator.
        generator.load_extension("dc", atom=False, rss=True)
        generator.dc.dc_creator(feed.author)
    generator.generator(feed.generator, version=feed.generator_version)
    self_link = {"href": address(feed.self_url), "rel": "self", "type": MEDIA_TYPES[fmt]}
    home_link = {"href": address(feed.home_url), "rel": "alternate", "type": "text/html"}
    # feedgen makes the last feed link the RSS channel's <link>, so the web page goes last
    # there; in Atom it goes first, for readers that take the first link for it (Node's
    # feed-extractor showed the feed's own address as its web page).
    for link in (self_link, home_link) if fmt == "rss" else (home_link, self_link):
        generator.link(**link)
    text: TextExtension = generator.text
    text.updated = feed.updated
    extension: ArchiveExtension = generator.archive
    extension.archive = feed.archive
    extension.complete = feed.complete
    for rel, href in (
        ("current", feed.current),
        ("prev-archive", feed.prev_archive),
        ("next-archive", feed.next_archive),
    ):
        if href:
            extension.links.append(Link(href=address(href), rel=rel, media_type=MEDIA_TYPES[fmt]))
    for entry in feed.entries:
        _add_entry(generator, entry, fmt)
    return generator


def render_atom(feed: Feed) -> bytes:
    body: bytes = _generator(feed, "atom").atom_str(pretty=True, encoding="UTF-8")
    return body


def render_rss(feed: Feed) -> bytes:
    body: bytes = _generator(feed, "rss").rss_str(pretty=True, encoding="UTF-8")
    return body
