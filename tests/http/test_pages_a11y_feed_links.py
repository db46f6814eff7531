"""Every link of a page tells where it leads out of context.

A screen reader lists a page's links by name alone. The feeds section had dozens of links
named "Atom", "RSS" and "JSON Feed", one of each per organisation, person and post: a list of
identical names leading to different feeds. Each has an accessible name that says whose feed
it is and holds the words it shows, so that speech input still finds it by them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

import httpx
import pytest
from lxml import html as lxml_html

from leaderlog.events import (
    Attribution,
    ClaimReported,
    OrgRegistered,
    PersonRegistered,
    PostDefined,
)
from tests.http.server import running, seeded_database

LEVI = "\u05d3\u05d5\u05d3 \u05dc\u05d5\u05d9"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from leaderlog.http import create_app

    url = seeded_database(
        tmp_path_factory.mktemp("feed-links"),
        OrgRegistered(org="knesset-office", name="\u05dc\u05e9\u05db\u05ea", parent="dhs"),
        PostDefined(post="knesset-office-head", org="knesset-office", title="Head"),
        PersonRegistered(person="levi", name=LEVI),
        ClaimReported(
            claim="levi-head",
            source="fox-ice-shakeup-2025-05",
            kind="incumbency",
            person="levi",
            post="knesset-office-head",
            capacity="acting",
            modality="occurred",
            attribution=Attribution(kind="outlet"),
        ),
    )
    with running(create_app(url)) as address:
        yield address


def _links(page: str) -> list[tuple[str, str, str]]:
    """Each link's accessible name (its aria-label, else its text), visible text and href."""
    found = []
    for link in lxml_html.document_fromstring(page).iter("a"):
        shown = " ".join(link.text_content().split())
        found.append((link.get("aria-label") or shown, shown, link.get("href") or ""))
    return found


@pytest.mark.parametrize(
    "query", [{}, {"lang": "fr"}, {"lang": "ja"}, {"org": "ice"}, {"org": "dhs", "lang": "de"}]
)
def test_no_two_links_to_different_places_share_a_name(
    base: str, client: httpx.Client, query: dict[str, str]
) -> None:
    page = client.get(f"{base}/", params=query).text
    destinations: dict[str, set[str]] = defaultdict(set)
    for name, _, href in _links(page):
        destinations[name].add(href)
    shared = {name: hrefs for name, hrefs in destinations.items() if len(hrefs) > 1}
    assert shared == {}


def test_a_feed_link_is_named_after_whose_feed_it_is_and_keeps_the_words_it_shows(
    base: str, client: httpx.Client
) -> None:
    page = client.get(f"{base}/").text
    feeds = {href: (name, shown) for name, shown, href in _links(page) if "/feeds/" in href}
    assert feeds[f"{base}/feeds/all.atom"] == ("Atom: Everything", "Atom")
    assert feeds[f"{base}/feeds/org/dhs.json"] == (
        "JSON Feed: Department of Homeland Security",
        "JSON Feed",
    )
    # a right-to-left name isolated in its own direction, as the autodiscovery titles do
    assert feeds[f"{base}/feeds/person/levi.rss"] == (f"RSS: \u2068{LEVI}\u2069", "RSS")
    # Speech input follows a link by the words it shows, which the name begins with: a word
    # in brackets after the name is not taken for part of it (WCAG 2.5.3, as axe-core checks).
    assert all(name.startswith(shown) for name, shown in feeds.values())


def test_a_feed_link_is_named_in_the_page_s_language(base: str, client: httpx.Client) -> None:
    page = client.get(f"{base}/", params={"lang": "ja"}).text
    names = {href: name for name, _, href in _links(page)}
    assert names[f"{base}/feeds/all.atom?lang=ja"] == "Atom\uff1a\u3059\u3079\u3066"
    french = {href: name for name, _, href in _links(client.get(f"{base}/?lang=fr").text)}
    assert french[f"{base}/feeds/all.rss?lang=fr"].startswith("RSS\u00a0: ")
