"""OPML 2.0: every feed in one document, so a reader can subscribe to all of them at once.

A group outline (Organisations, People, Posts) has only its ``text``: any other attribute
would call for a ``type``. Outline texts and titles are read as HTML (the W3C validator checks
them so), so a name that looks like markup (a tag or a character reference), or holds an
``&`` right before a letter or digit, is HTML-escaped and shows as it was written; another
``&`` is left as it is, as importers that read the attribute as text would show its escape.
"""

from __future__ import annotations

import datetime as dt
import html
import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from dataclasses import dataclass
from email.utils import format_datetime

from leaderlog.feeds._address import uri
from leaderlog.feeds._document import may_read_as_markup

__all__ = ["Outline", "dated_opml", "opml_parts"]

_DATE_OPENS = b"<dateModified>"
_DATE_CLOSES = b"</dateModified>"


@dataclass(frozen=True, slots=True)
class Outline:
    """A group of feeds (``url`` None) or one feed."""

    text: str
    url: str | None = None
    html_url: str | None = None
    language: str | None = None
    children: Sequence[Outline] = ()


def _text(value: str) -> str:
    # Escaped HTML only where the validator may read markup: OPML importers show the
    # attribute as it is, so an escaped "Smith & Wesson" showed as "Smith &amp; Wesson".
    return html.escape(value, quote=False) if may_read_as_markup(value) else value


def _add(parent: ElementTree.Element, outline: Outline) -> None:
    attributes = {"text": _text(outline.text)}
    if outline.url is not None:
        attributes["title"] = attributes["text"]
        attributes["type"] = "rss"
        attributes["xmlUrl"] = uri(outline.url)
        if outline.html_url:
            attributes["htmlUrl"] = uri(outline.html_url)
        if outline.language:
            attributes["language"] = outline.language
    element = ElementTree.SubElement(parent, "outline", attributes)
    for child in outline.children:
        _add(element, child)


def opml_parts(title: str, outlines: Sequence[Outline]) -> tuple[bytes, bytes]:
    """The document without its date: what comes before it and what comes after, to be
    joined by :func:`dated_opml` (the outlines outlive many dates)."""
    root = ElementTree.Element("opml", {"version": "2.0"})
    head = ElementTree.SubElement(root, "head")
    ElementTree.SubElement(head, "title").text = _text(title)
    ElementTree.SubElement(head, "dateModified").text = "-"
    body = ElementTree.SubElement(root, "body")
    for outline in outlines:
        _add(body, outline)
    ElementTree.indent(root)
    text: bytes = ElementTree.tostring(root, encoding="utf-8", xml_declaration=True)
    # The first one: the title before it is escaped text, which holds no "<".
    before, _, rest = text.partition(_DATE_OPENS)
    _, _, after = rest.partition(_DATE_CLOSES)
    return before + _DATE_OPENS, _DATE_CLOSES + after + b"\n"


def dated_opml(parts: tuple[bytes, bytes], updated: dt.datetime) -> bytes:
    date = format_datetime(updated.astimezone(dt.UTC).replace(microsecond=0), usegmt=True)
    return parts[0] + date.encode("ascii") + parts[1]
