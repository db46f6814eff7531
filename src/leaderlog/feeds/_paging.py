"""Feed scopes, formats, addresses and RFC 5005 archive paging.

A scope's entries are ranked in the order they joined it. While a scope has at most 50
entries its subscription document holds them all and says so (``fh:complete``, a complete
feed). From the 51st on it is an archived feed: archive page ``n`` holds ranks
``50(n-1)+1 .. 50n`` and is *full* once the page after it has begun (rank ``50n + 1``
exists); from then on it is rendered as known at the position where that happened, so it
never changes again, its ``next-archive`` link included. The subscription
document holds the 50 entries changed most recently, newest first, and links to the newest
*full* archive page: the page after it is still filling up, and its entries are all in the
subscription document, so a reader that walks ``prev-archive`` links only ever meets pages
that never change. An entry that changes while on a full page is filed again at the end (see
:mod:`leaderlog.projections.feed_entries`), so the change shows in the subscription document
and, later, on a newer page.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

from leaderlog.projections.feed_entries import PAGE_SIZE

if TYPE_CHECKING:
    from leaderlog.projections.queries import EntityKind

__all__ = [
    "FORMATS",
    "MEDIA_TYPES",
    "PAGE_SIZE",
    "SUBJECT_KINDS",
    "FeedFormat",
    "Scope",
    "archive_links",
    "feed_url",
    "full_pages",
    "is_complete",
    "is_full",
    "page_count",
    "rank_range",
]

FeedFormat: TypeAlias = Literal["atom", "rss", "json"]
FORMATS: tuple[FeedFormat, ...] = ("atom", "rss", "json")
MEDIA_TYPES: dict[FeedFormat, str] = {
    "atom": "application/atom+xml",
    "rss": "application/rss+xml",
    "json": "application/feed+json",
}
ScopeKind: TypeAlias = Literal["all", "org", "person", "post"]
# What a scope other than ``all`` names, as the leadership queries call it.
SUBJECT_KINDS: dict[str, EntityKind] = {
    "org": "organisation",
    "person": "person",
    "post": "post",
}
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}\Z")


@dataclass(frozen=True, slots=True)
class Scope:
    """Which entries a feed holds: all of them, an organisation's subtree, a person or a post."""

    kind: ScopeKind
    id: str | None = None

    @classmethod
    def parse(cls, text: str) -> Scope:
        """``all``, ``org:ID``, ``person:ID`` or ``post:ID``; raises ValueError otherwise."""
        if text == "all":
            return cls("all")
        kind, _, identifier = text.partition(":")
        if kind in SUBJECT_KINDS and _SLUG.match(identifier):
            return cls(kind, identifier)  # type: ignore[arg-type]
        raise ValueError(
            f"scope {text!r} is not one of all, org:ID, person:ID, post:ID "
            "(IDs are lower-case slugs)"
        )

    @property
    def subject_kind(self) -> EntityKind | None:
        """What the scope names, as the leadership queries call it (None for ``all``)."""
        return SUBJECT_KINDS.get(self.kind)

    @property
    def key(self) -> str:
        return "all" if self.kind == "all" else f"{self.kind}:{self.id}"

    def path(self, fmt: FeedFormat) -> str:
        if self.kind == "all":
            return f"/feeds/all.{fmt}"
        return f"/feeds/{self.kind}/{self.id}.{fmt}"


def is_complete(entries: int) -> bool:
    """Whether the subscription document holds every entry (so there are no archives)."""
    return entries <= PAGE_SIZE


def page_count(entries: int) -> int:
    """How many archive pages a scope with this many entries has."""
    return 0 if is_complete(entries) else -(-entries // PAGE_SIZE)


def full_pages(entries: int) -> int:
    """How many archive pages are full (frozen): all but the one still filling up."""
    return 0 if is_complete(entries) else (entries - 1) // PAGE_SIZE


def rank_range(page: int) -> tuple[int, int]:
    return (page - 1) * PAGE_SIZE + 1, page * PAGE_SIZE


def is_full(page: int, entries: int) -> bool:
    """Whether a page is frozen for good: the page after it has begun, so even the link to
    it, which a page that has only just filled would gain later, is already there."""
    return entries > page * PAGE_SIZE


def feed_url(
    base_url: str,
    scope: Scope,
    fmt: FeedFormat,
    *,
    page: int | None = None,
    lang: str | None = None,
) -> str:
    """The address of a feed document; ``lang`` only when it was asked for explicitly."""
    query = [(name, value) for name, value in (("lang", lang), ("page", page)) if value]
    suffix = f"?{urllib.parse.urlencode(query)}" if query else ""
    return f"{base_url}{scope.path(fmt)}{suffix}"


def page_url(base_url: str, org: str | None = None, *, lang: str | None = None) -> str:
    """The address of the HTML overview, or of one organisation's leadership page."""
    query = [(name, value) for name, value in (("org", org), ("lang", lang)) if value]
    suffix = f"?{urllib.parse.urlencode(query)}" if query else ""
    return f"{base_url}/{suffix}"


@dataclass(frozen=True, slots=True)
class ArchiveLinks:
    prev_archive: str | None
    next_archive: str | None
    current: str | None


def archive_links(
    base_url: str,
    scope: Scope,
    fmt: FeedFormat,
    *,
    page: int | None,
    entries: int,
    lang: str | None,
) -> ArchiveLinks:
    """RFC 5005 links: older page, newer page, and the subscription document."""
    pages = page_count(entries)

    def url(number: int | None) -> str:
        return feed_url(base_url, scope, fmt, page=number, lang=lang)

    if page is None:
        newest_full = full_pages(entries)
        return ArchiveLinks(url(newest_full) if newest_full else None, None, None)
    return ArchiveLinks(
        url(page - 1) if page > 1 else None,
        url(page + 1) if page < pages else None,
        url(None),
    )
