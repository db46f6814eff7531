"""The HTML overview, including with hostile stored text; hostile feeds over HTTP."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import feedparser
import httpx

from tests.feeds.atom_schema import atom_problems
from tests.feeds.logs import EMOJI, SCRIPT


class _Collector(HTMLParser):
    """Tags, link elements and text of a page, as a browser would see them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.links: list[dict[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "link":
            self.links.append(dict(attrs))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _collect(html: str) -> _Collector:
    collector = _Collector()
    collector.feed(html)
    return collector


def test_overview_shows_leadership_changes_and_every_feed(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    response = client.get(f"{base}/")
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    page = _collect(response.text)
    discovery = {(link["rel"], link["type"], link["href"]) for link in page.links}
    assert ("alternate", "application/atom+xml", f"{base}/feeds/all.atom") in discovery
    assert ("alternate", "application/rss+xml", f"{base}/feeds/all.rss") in discovery
    assert ("alternate", "application/feed+json", f"{base}/feeds/all.json") in discovery
    text = " ".join(page.text)
    for words in (
        "Current leadership",
        "Homeland Security Investigations",
        "Robert Hammer",
        "Recent changes",
        "Expected: Departure of Kenneth Genalo",
        "Fox News",
    ):
        assert words in text, words
    for path in (
        "/feeds/org/ice.atom",
        "/feeds/person/derek-gordon.rss",
        "/feeds/post/ice-hsi-ead.json",
        "/opml",
    ):
        assert f'href="{base}{path}"' in response.text, path


def test_overview_speaks_the_asked_language(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    russian = client.get(f"{base}/", headers={"Accept-Language": "ru"})
    assert russian.headers["content-language"] == "ru" and '<html lang="ru"' in russian.text
    assert "Текущее руководство" in russian.text
    chinese = client.get(f"{base}/?lang=zh-Hans")
    assert "现任领导层" in chinese.text
    assert f'href="{base}/feeds/all.atom?lang=zh-Hans"' in chinese.text


def test_hostile_text_is_escaped_in_pages_and_feeds(
    hostile_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = hostile_server
    response = client.get(f"{base}/")
    assert response.status_code == 200
    page = _collect(response.text)
    assert "script" not in page.tags and "b" not in page.tags
    text = " ".join(page.text)
    assert SCRIPT in text and EMOJI in text
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f]", response.text)
    assert "javascript:" not in response.text
    for path in (
        "/feeds/all.atom",
        "/feeds/all.rss",
        "/feeds/person/hostile-control.atom",
        "/feeds/person/hostile-long.rss",
        "/feeds/person/hostile-rtl.atom",
    ):
        feed = client.get(base + path)
        assert feed.status_code == 200
        parsed = feedparser.parse(feed.content, response_headers=dict(feed.headers))
        assert not parsed.bozo, (path, parsed.get("bozo_exception"))
        if path.endswith(".atom"):
            assert atom_problems(feed.content) == [], path
    assert client.get(f"{base}/feeds/all.json").json()["items"]
    assert client.get(f"{base}/opml").status_code == 200
