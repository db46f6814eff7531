"""OPML 2.0: every feed in one document, so a reader can subscribe to all of them at once."""

from __future__ import annotations

import datetime as dt
import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from dataclasses import dataclass
from email.utils import format_datetime

__all__ = ["Outline", "render_opml"]


@dataclass(frozen=True, slots=True)
class Outline:
    """A group of feeds (``url`` None) or one feed."""

    text: str
    url: str | None = None
    html_url: str | None = None
    language: str | None = None
    children: Sequence[Outline] = ()


def _add(parent: ElementTree.Element, outline: Outline) -> None:
    attributes = {"text": outline.text, "title": outline.text}
    if outline.url is not None:
        attributes["type"] = "rss"
        attributes["xmlUrl"] = outline.url
        if outline.html_url:
            attributes["htmlUrl"] = outline.html_url
        if outline.language:
            attributes["language"] = outline.language
    element = ElementTree.SubElement(parent, "outline", attributes)
    for child in outline.children:
        _add(element, child)


def render_opml(title: str, updated: dt.datetime, outlines: Sequence[Outline]) -> bytes:
    root = ElementTree.Element("opml", {"version": "2.0"})
    head = ElementTree.SubElement(root, "head")
    ElementTree.SubElement(head, "title").text = title
    ElementTree.SubElement(head, "dateModified").text = format_datetime(
        updated.astimezone(dt.UTC).replace(microsecond=0), usegmt=True
    )
    body = ElementTree.SubElement(root, "body")
    for outline in outlines:
        _add(body, outline)
    ElementTree.indent(root)
    text: bytes = ElementTree.tostring(root, encoding="utf-8", xml_declaration=True)
    return text + b"\n"
