"""The structure a keyboard or screen reader user moves through on the HTML pages.

- A link to the main content comes before the ten links of the language menu, so that a
  keyboard user reaches the leadership without tabbing through them on every page.
- Each organisation's leadership table is named after the organisation whose heading it
  follows (a screen reader moving from table to table heard five alike, "Post, Held by...")
  and its header cells say they head columns; each row is headed by its post, so a screen
  reader moving down a column says whose holder or vacancy each cell is.
- Lists of links keep their items far enough apart to be hit with a finger: a 24 px circle
  centred on each link (WCAG 2.2 target size) must not reach the next one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from lxml import html as lxml_html

from leaderlog.feeds import LANGUAGES
from leaderlog.http import _pages as pages
from tests.http.server import running, seeded_database


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from leaderlog.http import create_app

    with running(create_app(seeded_database(tmp_path_factory.mktemp("structure")))) as address:
        yield address


def _rules() -> dict[str, str]:
    """The pages' style sheet: each selector's declarations."""
    style = pages.PAGE.template.split("<style>", 1)[1].split("</style>", 1)[0]
    return {
        selector.strip(): body
        for selectors, body in re.findall(r"([^{}]+)\{([^}]*)\}", style)
        for selector in selectors.split(",")
    }


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ({}, "Skip to the main content"),
        ({"lang": "fr"}, "Aller au contenu principal"),
        ({"org": "ice", "lang": "ja"}, "\u672c\u6587\u3078\u30b9\u30ad\u30c3\u30d7"),
        ({"org": "no-such-org"}, "Skip to the main content"),
    ],
)
def test_a_link_to_the_main_content_comes_before_the_language_menu(
    base: str, client: httpx.Client, query: dict[str, str], words: str
) -> None:
    document = lxml_html.document_fromstring(client.get(f"{base}/", params=query).text)
    links = list(document.iter("a"))
    first = links[0]
    assert " ".join(first.text_content().split()) == words
    target = (first.get("href") or "").removeprefix("#")
    assert [element.tag for element in document.iter() if element.get("id") == target] == ["main"]
    menu = document.find(".//nav")
    assert menu is not None and links.index(next(menu.iter("a"))) > 0


def test_the_link_to_the_main_content_shows_when_it_has_the_focus() -> None:
    # Out of sight until a keyboard reaches it, then shown where it stands, not left clipped
    # to nothing while it has the focus.
    rules = _rules()
    hidden = [selector for selector in rules if selector.strip().startswith(".skip")]
    assert hidden == [".skip:not(:focus)"]
    assert "clip" in rules[".skip:not(:focus)"]


@pytest.mark.parametrize("query", [{}, {"org": "ice", "lang": "de"}])
def test_each_leadership_table_is_named_after_its_organisation_and_heads_its_columns(
    base: str, client: httpx.Client, query: dict[str, str]
) -> None:
    document = lxml_html.document_fromstring(client.get(f"{base}/", params=query).text)
    tables = list(document.iter("table"))
    assert len(tables) >= 2
    for table in tables:
        heading = document.get_element_by_id(table.get("aria-labelledby"))
        assert heading.tag == "h3"
        region = table.getparent()
        assert heading.getnext() is region
        cells = list(table.find("thead").iter("th"))
        assert len(cells) == 5 and {cell.get("scope") for cell in cells} == {"col"}


def test_each_row_of_a_leadership_table_is_headed_by_its_post(
    base: str, client: httpx.Client
) -> None:
    document = lxml_html.document_fromstring(client.get(f"{base}/", params={"org": "ice"}).text)
    rows = [row for table in document.iter("table") for row in table.find("tbody")]
    assert len(rows) >= 3
    for row in rows:
        first, *others = list(row)
        assert first.tag == "th" and first.get("scope") == "row"
        assert first.text_content().strip()
        assert len(others) == 4 and {cell.tag for cell in others} == {"td"}
    titles = {row[0].text_content() for row in rows}
    assert "Director (HSI)" in titles or any("HSI" in title for title in titles)


def test_lists_of_links_keep_their_items_apart() -> None:
    # One line of text is 23.2 px (1.45 x 16 px): without a margin between them, a list's
    # links stand closer than the 24 px target size allows.
    rules = _rules()
    for items in (".feeds li", ".orgs li"):
        assert re.search(r"margin:\.2rem 0", rules.get(items, "")), items


def test_a_wide_table_scrolls_in_a_region_of_its_own_not_the_whole_page(
    base: str, client: httpx.Client
) -> None:
    # At 320 CSS px (a phone, or a page zoomed to 400%) five columns with long words in
    # German or Russian need 550-800 px: the page itself scrolled sideways, headings, menus
    # and lists with it (WCAG 1.4.10). Each table scrolls within its own region instead,
    # named as the table is, which the keyboard can focus to scroll.
    document = lxml_html.document_fromstring(
        client.get(f"{base}/", params={"org": "ice", "lang": "de"}).text
    )
    tables = list(document.iter("table"))
    assert tables
    for table in tables:
        region = table.getparent()
        assert region.tag == "div" and region.get("class") == "table"
        assert region.get("role") == "region" and region.get("tabindex") == "0"
        assert region.get("aria-labelledby") == table.get("aria-labelledby")
    assert "overflow-x:auto" in _rules()[".table"]
    # and a heading's long word ("Ermittlungsbehörde" at 32 px) breaks rather than overflow,
    # as all text does
    assert "overflow-wrap:break-word" in _rules()["body"]


@pytest.mark.parametrize(
    ("query", "current", "label"),
    [({}, "en", "Languages"), ({"org": "ice", "lang": "de"}, "de", "Sprachen")],
)
def test_the_language_menu_is_named_says_each_language_in_itself_and_marks_the_current_one(
    base: str, client: httpx.Client, query: dict[str, str], current: str, label: str
) -> None:
    # given the seeds, when a reader opens a page in a language
    document = lxml_html.document_fromstring(client.get(f"{base}/", params=query).text)
    # then the menu of languages is a navigation landmark named in the page's language
    menu = document.find(".//header/nav")
    assert menu is not None and menu.get("aria-label") == label
    # and each link's name is marked as in its own language, so that a screen reader says
    # "Deutsch" as German and "日本語" as Japanese, not in the page's voice
    links = list(menu.iter("a"))
    assert [(link.get("hreflang"), link.get("lang")) for link in links] == [
        (tag, tag) for tag in LANGUAGES
    ]
    # and the page's own language, and only it, is marked as the current one
    assert [link.get("hreflang") for link in links if link.get("aria-current")] == [current]
    assert all(link.get("aria-current") == "true" for link in links if link.get("aria-current"))


@pytest.mark.parametrize("query", [{}, {"org": "ice", "lang": "ja"}, {"org": "no-such-org"}])
def test_a_page_is_laid_out_for_the_width_of_the_screen_it_is_read_on(
    base: str, client: httpx.Client, query: dict[str, str]
) -> None:
    # Without it a phone lays the page out 980 px wide and shrinks it: the tables' own
    # scrolling regions and the text's reflow (WCAG 1.4.10) never come into play.
    document = lxml_html.document_fromstring(client.get(f"{base}/", params=query).text)
    viewport = document.find(".//head/meta[@name='viewport']")
    assert viewport is not None
    settings = {
        key.strip(): value.strip()
        for key, value in (part.split("=", 1) for part in viewport.get("content", "").split(","))
    }
    assert settings.get("width") == "device-width"
    assert settings.get("initial-scale") == "1"
    # and nothing keeps a reader from zooming in (WCAG 1.4.4)
    assert "user-scalable" not in settings and "maximum-scale" not in settings
