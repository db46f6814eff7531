"""A page that is not found says so in its title (WCAG 2.4.2).

A browser tab, a bookmark and a screen reader announcing the page have only the title to go
by: an unknown organisation, a language not offered or a page beyond the last of a list
answered 404 under the overview's own title, as if the overview had been found.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import httpx
import pytest
from lxml import html as lxml_html

from leaderlog.http import create_app
from tests.http.server import running, seeded_database

SITE = "Who leads what, as reported"
NOT_FOUND = f"Page not found \u2014 {SITE}"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running(create_app(seeded_database(tmp_path_factory.mktemp("titles")))) as address:
        yield address


def _title(page: str) -> str:
    found = re.search(r"<title>(.*?)</title>", page)
    assert found is not None
    return html.unescape(found.group(1))


@pytest.mark.parametrize(
    "query",
    [
        {"org": "nothing-here"},
        {"lang": "tlh"},
        {"page": "9"},
    ],
    ids=["unknown organisation", "language not offered", "page beyond the last"],
)
def test_a_page_not_found_is_titled_so(
    base: str, client: httpx.Client, query: dict[str, str]
) -> None:
    response = client.get(f"{base}/", params=query, headers={"Accept-Language": "en"})
    assert response.status_code == 404
    assert _title(response.text) == NOT_FOUND


def test_a_page_beyond_an_organisation_s_last_keeps_its_name_after_saying_so(
    base: str, client: httpx.Client
) -> None:
    response = client.get(f"{base}/", params={"org": "ice", "page": "9"})
    assert response.status_code == 404
    assert _title(response.text) == (
        f"Page not found \u2014 Immigration and Customs Enforcement \u2014 {SITE}"
    )


def test_the_title_says_so_in_the_page_s_language(base: str, client: httpx.Client) -> None:
    french = client.get(f"{base}/", params={"org": "nothing-here", "lang": "fr"})
    assert french.status_code == 404
    assert _title(french.text) == (
        "Page introuvable \u2014 Qui dirige quoi, d\u2019apr\u00e8s les m\u00e9dias"
    )
    japanese = client.get(f"{base}/", params={"lang": "tlh"}, headers={"Accept-Language": "ja"})
    assert japanese.status_code == 404
    assert _title(japanese.text).startswith("\u30da\u30fc\u30b8\u304c\u898b\u3064\u304b")


def test_a_page_found_is_not_titled_as_not_found(base: str, client: httpx.Client) -> None:
    for query in ({}, {"org": "ice"}, {"lang": "fr"}):
        response = client.get(f"{base}/", params=query)
        assert response.status_code == 200
        assert "not found" not in _title(response.text).lower()
        assert "introuvable" not in _title(response.text)


@pytest.mark.parametrize(
    "query",
    [
        {"org": "nothing-here"},
        {"lang": "tlh"},
        {"page": "9"},
        {"org": "nothing-here", "lang": "fr"},
    ],
)
def test_a_page_not_found_says_so_under_its_first_heading(
    base: str, client: httpx.Client, query: dict[str, str]
) -> None:
    # One moving through a page by its headings heard "Current leadership", then the day
    # and log position of a leadership the page does not show, before the message.
    response = client.get(f"{base}/", params=query, headers={"Accept-Language": "en"})
    assert response.status_code == 404
    section = lxml_html.document_fromstring(response.text).get_element_by_id("leadership")
    heading = section.find("h2")
    said = "Page introuvable" if query.get("lang") == "fr" else "Page not found"
    assert heading.text_content() == said
    assert "log position" not in section.text_content()
    assert "du journal" not in section.text_content()


def test_a_page_found_keeps_its_heading_and_situation(base: str, client: httpx.Client) -> None:
    page = client.get(f"{base}/", params={"org": "ice"}).text
    section = lxml_html.document_fromstring(page).get_element_by_id("leadership")
    assert section.find("h2").text_content() == "Current leadership"
    assert "as known at log position" in section.text_content()
