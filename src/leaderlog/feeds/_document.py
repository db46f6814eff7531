"""Format-neutral feed documents: what the Atom, RSS and JSON Feed writers all render.

Every string in these documents is already clean (no characters XML cannot carry) and
every date comes from an event, so rendering them twice gives the same bytes.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

__all__ = ["Category", "Entry", "Feed", "Link", "looks_like_markup", "may_read_as_markup"]

# What readers take for markup in text, and so what the XML formats write as escaped HTML: a
# tag, a comment or a declaration, or a whole character reference (``&amp;``, ``&#38;``). A
# bare ``&`` ("Smith & Wesson", "AT&T") is text to every reader and validator.
_MARKUP = re.compile(r"<[A-Za-z/!?]|&(?:[A-Za-z][A-Za-z0-9]*|#[0-9]+|#[xX][0-9A-Fa-f]+);")


def looks_like_markup(text: str) -> bool:
    return _MARKUP.search(text) is not None


# Wider: what the W3C validator, reading an attribute as HTML, may take for markup: a tag,
# or an "&" right before a letter, digit or "#" ("AT&T" could begin a reference).
_READ_AS_MARKUP = re.compile(r"<[A-Za-z/!?]|&#?\w")


def may_read_as_markup(text: str) -> bool:
    return _READ_AS_MARKUP.search(text) is not None


@dataclass(frozen=True, slots=True)
class Link:
    href: str
    rel: str
    media_type: str | None = None
    hreflang: str | None = None
    title: str | None = None


@dataclass(frozen=True, slots=True)
class Category:
    term: str
    label: str


@dataclass(frozen=True, slots=True)
class Entry:
    id: str
    title: str
    summary: str
    content_html: str
    published: dt.datetime
    updated: dt.datetime
    links: tuple[Link, ...]
    categories: tuple[Category, ...]

    @property
    def url(self) -> str | None:
        """The entry's web address: its first alternate link."""
        return next((link.href for link in self.links if link.rel == "alternate"), None)

    @property
    def own_url(self) -> str | None:
        """The address of the claim itself (its JSON), which every entry has."""
        return next((link.href for link in self.links if link.rel == "related"), None)


@dataclass(frozen=True, slots=True)
class RecentChange:
    """A claim's newest version as a page lists it: HTML title and summary, names isolated."""

    title_html: str
    summary_html: str
    url: str | None
    updated: dt.datetime


@dataclass(frozen=True, slots=True)
class Feed:
    """One feed document: a subscription document or an RFC 5005 archive page."""

    id: str
    title: str
    subtitle: str
    language: str
    updated: dt.datetime
    self_url: str
    home_url: str
    author: str
    generator: str
    generator_version: str
    entries: tuple[Entry, ...]
    archive: bool = False
    # A full archive page: it never changes again.
    final: bool = False
    complete: bool = False
    prev_archive: str | None = None
    next_archive: str | None = None
    current: str | None = None
