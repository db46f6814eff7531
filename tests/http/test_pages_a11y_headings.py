"""An organisation's page is headed and titled with its name in the name's own direction.

Everywhere else a page names an organisation it isolates the name (``<bdi>``, or FIRST STRONG
ISOLATE in an attribute), so that a Hebrew or Arabic name keeps its own reading order; the
page's main heading and its title must too. Unisolated, a Hebrew name beginning with a number
and followed by " — Who leads what" is laid out left to right: the number shows at the left
end, where a right-to-left reader finishes, and a "!" ending a name shows at its start.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import httpx
import pytest

from leaderlog.events import OrgRegistered
from tests.http.server import running, seeded_database

UNIT = "8200 \u05d9\u05d7\u05d9\u05d3\u05d4"
SHOUTED = "\u05de\u05e9\u05e8\u05d3!"
SITE = "Who leads what, as reported"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from leaderlog.http import create_app

    url = seeded_database(
        tmp_path_factory.mktemp("headings"),
        OrgRegistered(org="unit-8200", name=UNIT, parent="dhs"),
        OrgRegistered(org="shouted", name=SHOUTED),
    )
    with running(create_app(url)) as address:
        yield address


def _element(page: str, tag: str) -> str:
    found = re.search(rf"<{tag}>(.*?)</{tag}>", page, re.S)
    assert found is not None, tag
    return found.group(1)


@pytest.mark.parametrize(("org", "name"), [("unit-8200", UNIT), ("shouted", SHOUTED)])
def test_the_main_heading_isolates_a_right_to_left_name(
    base: str, client: httpx.Client, org: str, name: str
) -> None:
    page = client.get(f"{base}/", params={"org": org}).text
    # as the organisation's own heading in the leadership section already does
    assert f"<bdi>{html.escape(name)}</bdi>" in page.split('<section id="leadership">', 1)[1]
    assert _element(page, "h1") == f"<bdi>{html.escape(name)}</bdi> \u2014 {SITE}"


@pytest.mark.parametrize(("org", "name"), [("unit-8200", UNIT), ("shouted", SHOUTED)])
def test_the_title_isolates_a_right_to_left_name_as_the_feed_titles_do(
    base: str, client: httpx.Client, org: str, name: str
) -> None:
    page = client.get(f"{base}/", params={"org": org, "lang": "fr"}).text
    title = html.unescape(_element(page, "title"))
    assert title == f"\u2068{name}\u2069 \u2014 Qui dirige quoi, d\u2019apr\u00e8s les m\u00e9dias"
    # the page's autodiscovery titles isolate it the same way
    assert f"\u2068{name}\u2069" in html.unescape(page.split("<link", 2)[1])


def test_a_name_read_left_to_right_is_headed_and_titled_as_it_was(
    base: str, client: httpx.Client
) -> None:
    page = client.get(f"{base}/", params={"org": "ice"}).text
    name = "Immigration and Customs Enforcement"
    assert html.unescape(_element(page, "title")) == f"{name} \u2014 {SITE}"
    assert _element(page, "h1") == f"<bdi>{name}</bdi> \u2014 {SITE}"
    overview = client.get(f"{base}/").text
    assert _element(overview, "h1") == SITE and _element(overview, "title") == SITE
