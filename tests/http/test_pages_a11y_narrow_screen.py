"""A page read 320 CSS px wide (a phone, or a page zoomed to 400%).

- It does not scroll sideways. Recent changes show a source's address as text, and an
  address joined by underscores (a Wikipedia article's, a slug in Cyrillic) holds no place
  a line may break: 60 characters of small text need some 400 px where 288 px are left
  between the page's margins, and the whole page scrolled sideways with it (WCAG 1.4.10).
  Every text breaks such a word at the edge of the screen instead, as headings already did;
  tables keep their own region that scrolls.
- The language menu, ten links and nothing else, wraps onto three lines: lines of text
  23.2 px apart (1.45 x 16 px) put its links closer than the 24 px target size allows (WCAG
  2.5.8), as lists of links were before their items were spaced.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from lxml import html as lxml_html

from leaderlog.events import Attribution, ClaimReported, SourceRegistered
from tests.http.server import running, seeded_database
from tests.http.test_pages_a11y_structure import _rules

ARTICLE = "Immigration_and_Customs_Enforcement_leadership_changes_in_2025"
ADDRESS = f"https://en.wikipedia.org/wiki/{ARTICLE}"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from leaderlog.http import create_app

    url = seeded_database(
        tmp_path_factory.mktemp("reflow"),
        SourceRegistered(source="wiki-ice", url=ADDRESS, publisher="Wikipedia", language="en"),
        ClaimReported(
            claim="wiki-noem",
            source="wiki-ice",
            kind="incumbency",
            person="kristi-noem",
            post="dhs-secretary",
            capacity="permanent",
            modality="occurred",
            attribution=Attribution(kind="outlet"),
        ),
    )
    with running(create_app(url)) as address:
        yield address


@pytest.mark.parametrize("query", [{}, {"org": "dhs", "lang": "ru"}])
def test_a_long_word_in_the_text_breaks_at_the_edge_of_a_narrow_screen(
    base: str, client: httpx.Client, query: dict[str, str]
) -> None:
    # given a source whose address has a word longer than a narrow screen is wide
    # when a reader opens a page listing its claim among the recent changes
    document = lxml_html.document_fromstring(client.get(f"{base}/", params=query).text)
    changes = document.get_element_by_id("changes").text_content()
    # then the address is there as text, with no space or hyphen to break it at
    assert ADDRESS in changes
    assert not re.search(r"[\s\-]", ARTICLE) and len(ARTICLE) > 40
    # and the page's text breaks a word too long for its line rather than overflow it
    rules = _rules()
    assert "overflow-wrap:break-word" in rules["body"]
    # everywhere: no element takes it back
    assert [s for s, body in rules.items() if "overflow-wrap" in body] == ["body"]


def _line_height(declarations: str) -> float | None:
    found = re.search(r"line-height:([\d.]+)(?:;|$)", declarations)
    return float(found.group(1)) if found else None


def test_the_language_menu_wrapping_on_a_narrow_screen_keeps_its_links_a_target_apart(
    base: str, client: httpx.Client
) -> None:
    # given the language menu: links with only spaces between them, no text of a sentence
    # whose lines would set their spacing
    document = lxml_html.document_fromstring(client.get(f"{base}/").text)
    menu = document.find(".//header/nav")
    assert menu is not None
    links = list(menu.iter("a"))
    assert len(links) == 10
    assert not (menu.text or "").strip() and all(not (a.tail or "").strip() for a in links)
    # when it wraps, one line of links above another: the menu's line height, at 16 px
    rules = _rules()
    height = _line_height(rules.get("nav", "")) or _line_height(rules["body"])
    assert height is not None
    # then circles of 24 px centred on a link and the one below it do not meet
    assert height * 16 >= 24
