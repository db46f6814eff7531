"""The HTML pages over a log of many organisations: each page stays the size of a page.

The log holds, besides the seeds, 450 towns at the top of their own trees, an agency with
two posts of its own and 250 offices below it, and a ministry with 210 posts of its own and
one unit below it: more than a page's worth of each.
"""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from lxml import html as lxml_html

from leaderlog.events import (
    Attribution,
    ClaimReported,
    Event,
    OrgRegistered,
    PersonRegistered,
    PostDefined,
)
from leaderlog.http import _pages as pages
from leaderlog.http import create_app
from leaderlog.log import EventLog, load_seeds
from tests.conftest import SEEDS

BASE = "http://pages.test"
TOWNS = [f"town-{index:03d}" for index in range(450)]
OFFICES = [f"agency-office-{index:03d}" for index in range(250)]
MINISTRY_POSTS = [f"ministry-post-{index:03d}" for index in range(210)]
# The seeds' trees, the agency's, the ministry's and the towns'.
TOP = {"dhs", "white-house", "agency", "ministry", *TOWNS}


def _events() -> list[Event]:
    events: list[Event] = [
        OrgRegistered(org="agency", name="Federal Agency"),
        PostDefined(post="agency-director", org="agency", title="Agency Director"),
        PostDefined(post="agency-deputy", org="agency", title="Deputy Agency Director"),
        PersonRegistered(person="ada", name="Ada Lovelace"),
        ClaimReported(
            claim="ada-director",
            source="fox-ice-shakeup-2025-05",
            kind="incumbency",
            person="ada",
            post="agency-director",
            capacity="permanent",
            modality="occurred",
            attribution=Attribution(kind="outlet"),
        ),
        OrgRegistered(org="ministry", name="Ministry of Everything"),
        OrgRegistered(org="ministry-unit", name="Ministry Unit", parent="ministry"),
        PostDefined(post="ministry-unit-head", org="ministry-unit", title="Unit Head"),
    ]
    for town in TOWNS:
        events.append(OrgRegistered(org=town, name=f"Town {town}"))
        events.append(PostDefined(post=f"{town}-mayor", org=town, title="Mayor"))
    for office in OFFICES:
        events.append(OrgRegistered(org=office, name=f"Office {office}", parent="agency"))
        events.append(PostDefined(post=f"{office}-head", org=office, title="Head of Office"))
    events += [PostDefined(post=post, org="ministry", title=post) for post in MINISTRY_POSTS]
    return events


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('large-trees') / 'leaderlog.db'}"

    async def write() -> None:
        async with await EventLog.open(url) as log:
            await load_seeds(log, SEEDS)
            await log.append_events(_events(), actor="test")
        # Projections brought up to date once, by a first server.
        async with _client(url):
            pass

    asyncio.run(write())
    return url


@asynccontextmanager
async def _client(url: str) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(url)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
            yield client


def _section(page: str, name: str) -> str:
    return page.split(f'<section id="{name}">', 1)[1].split("</section>", 1)[0]


def _text(part: str) -> str:
    """What a reader reads of ``part``; the no-break spaces of French punctuation kept."""
    return re.sub(r"[ \t\r\n]+", " ", html.unescape(re.sub(r"<[^>]+>", "", part)))


def _linked_orgs(page: str) -> list[str]:
    """The organisations the leadership section lists, in order."""
    lists = re.findall(r'<ul class="orgs">(.*?)</ul>', _section(page, "leadership"), re.S)
    return re.findall(r'href="http://pages\.test/\?org=([a-z0-9-]+)[&"]', "".join(lists))


def _org_feeds(page: str) -> set[str]:
    return set(re.findall(r'/feeds/org/([a-z0-9-]+)\.atom"', _section(page, "feeds")))


def _next(page: str) -> str | None:
    found = re.search(r'<a href="http://pages\.test(/[^"]*)" rel="next"', page)
    return html.unescape(found.group(1)) if found else None


async def test_the_overview_of_many_organisations_lists_their_trees_a_page_at_a_time(
    database: str,
) -> None:
    async with _client(database) as client:
        # given an overview of over a thousand organisations in 454 trees
        first = await client.get("/")
        assert first.status_code == 200
        # then it lists the organisations at the top of each tree, a page's worth
        linked = _linked_orgs(first.text)
        assert len(linked) == pages.ORGS_PER_PAGE
        assert set(linked) <= TOP
        assert "Organisations 1 to 200 of 454." in _text(_section(first.text, "leadership"))
        # and the feeds of those it lists, no more
        assert _org_feeds(first.text) == set(linked)
        # and the next pages list the others, each once, until the last
        seen = list(linked)
        address = _next(first.text)
        while address is not None:
            response = await client.get(address)
            assert response.status_code == 200, address
            assert len(_linked_orgs(response.text)) <= pages.ORGS_PER_PAGE
            seen += _linked_orgs(response.text)
            address = _next(response.text)
        assert sorted(seen) == sorted(TOP)
        assert "Organisations 401 to 454 of 454." in _text(_section(response.text, "leadership"))
        # and each organisation's page lists the level below it: the agency's, its offices
        agency = await client.get("/?org=agency")
        assert set(_linked_orgs(agency.text)) <= set(OFFICES)


async def test_an_organisation_with_many_below_it_shows_its_own_leadership_and_level(
    database: str,
) -> None:
    async with _client(database) as client:
        # given an agency with 252 posts in its tree, two of them its own
        first = await client.get("/?org=agency")
        second = await client.get("/?org=agency&page=2")
    assert (first.status_code, second.status_code) == (200, 200)
    # then its page says who holds its own posts
    leadership = _text(_section(first.text, "leadership"))
    assert "Agency Director" in leadership and "Ada Lovelace" in leadership
    assert "Deputy Agency Director" in leadership
    # and lists its offices, a page at a time
    assert _linked_orgs(first.text) == OFFICES[:200]
    assert _linked_orgs(second.text) == OFFICES[200:]
    assert "Organisations 201 to 250 of 250." in _text(_section(second.text, "leadership"))
    # with the feeds of what it shows: the agency, the offices listed, its posts and holder
    feeds = _section(first.text, "feeds")
    assert _org_feeds(first.text) == {"agency", *OFFICES[:200]}
    assert "/feeds/post/agency-director.atom" in feeds and "/feeds/person/ada.atom" in feeds


async def test_an_organisation_with_many_posts_of_its_own_shows_them_a_page_at_a_time(
    database: str,
) -> None:
    async with _client(database) as client:
        first = await client.get("/?org=ministry")
        second = await client.get("/?org=ministry&page=2")
    assert (first.status_code, second.status_code) == (200, 200)
    rows = [
        re.findall(r'<tr><th scope="row"><bdi>(ministry-post-\d+)</bdi>', r.text)
        for r in (first, second)
    ]
    assert rows == [MINISTRY_POSTS[:200], MINISTRY_POSTS[200:]]
    assert "Posts 1 to 200 of 210." in _text(_section(first.text, "leadership"))
    assert "Posts 201 to 210 of 210." in _text(_section(second.text, "leadership"))
    # and its unit, the one organisation below it, is linked
    assert "ministry-unit" in _linked_orgs(first.text)


@pytest.mark.parametrize("page", ["0", "-1", "two", "1.5", "1e3"])
async def test_a_page_number_that_is_no_page_number_is_refused(database: str, page: str) -> None:
    async with _client(database) as client:
        for address in ("/", "/?org=agency"):
            response = await client.get(address, params={"page": page})
            assert response.status_code == 422, (address, page)
            (problem,) = response.json()["problems"]
            assert problem["where"] == "query parameter page"


async def test_a_page_beyond_the_last_says_which_is_the_last(database: str) -> None:
    async with _client(database) as client:
        beyond = await client.get("/?lang=fr&page=4")
        agency = await client.get("/?org=agency&page=3")
        small = await client.get("/?org=ice&page=2")
        # (and none is ever said to be unchanged)
        again = await client.get("/?lang=fr&page=4", headers={"If-None-Match": "*"})
    assert (beyond.status_code, agency.status_code, small.status_code) == (404, 404, 404)
    assert again.status_code == 404 and "etag" not in again.headers
    assert "Il n\u2019y a pas de page 4 ici\u00a0: la derni\u00e8re est la page 3." in _text(
        beyond.text
    )
    assert 'href="http://pages.test/?lang=fr&amp;page=3"' in beyond.text
    assert "There is no page 3 here: the last is page 2." in _text(agency.text)
    assert "There is no page 2 here: the last is page 1." in _text(small.text)


async def test_each_page_of_a_list_is_validated_as_a_page_of_its_own(database: str) -> None:
    async with _client(database) as client:
        first = await client.get("/")
        # the first page is the one page, however it is asked for
        spelled = await client.get("/?page=1", headers={"If-None-Match": first.headers["etag"]})
        assert spelled.status_code == 304
        # another is not the first: a reader holding the first gets the second
        second = await client.get("/?page=2", headers={"If-None-Match": first.headers["etag"]})
        assert second.status_code == 200 and second.headers["etag"] != first.headers["etag"]
        # a page number written another way is sent to the one spelling the links use
        other = await client.get("/?page=02&org=agency")
        assert other.status_code == 308
        assert other.headers["location"] == "/?org=agency&page=2"
        # and the other languages of a page link to the same page in them
        assert 'href="?lang=de&amp;page=2"' in second.text


def _title(page: str) -> str:
    found = re.search(r"<title>(.*?)</title>", page)
    assert found is not None
    return html.unescape(found.group(1))


async def test_each_page_of_a_list_says_which_in_its_title(database: str) -> None:
    # Tabs, bookmarks and a browser's history have only the title to tell the pages of the
    # overview apart: all were titled alike.
    async with _client(database) as client:
        first = await client.get("/")
        third = await client.get("/?page=3")
        agency = await client.get("/?org=agency&page=2")
        german = await client.get("/?lang=de&page=2")
        small = await client.get("/?org=ice")
    assert _title(first.text) == "Page 1 of 3 \u2014 Who leads what, as reported"
    assert _title(third.text) == "Page 3 of 3 \u2014 Who leads what, as reported"
    assert _title(agency.text) == (
        "Federal Agency \u2014 Page 2 of 2 \u2014 Who leads what, as reported"
    )
    assert _title(german.text).startswith("Seite 2 von 3 \u2014 ")
    # a page that is not one of several is titled as before
    assert _title(small.text) == (
        "Immigration and Customs Enforcement \u2014 Who leads what, as reported"
    )


def _pager(page: str) -> tuple[str | None, dict[str | None, tuple[str, str | None]]]:
    """A page's pager: its name, and each of its links' words and address by their rel."""
    (pager,) = lxml_html.document_fromstring(page).find_class("pager")
    assert pager.tag == "nav"
    links = {link.get("rel"): (link.text_content(), link.get("href")) for link in pager.iter("a")}
    return pager.get("aria-label"), links


async def test_a_page_of_a_list_links_the_page_before_and_after_it_in_a_named_pager(
    database: str,
) -> None:
    async with _client(database) as client:
        # given the overview's three pages of organisations, and the agency's two
        # when a reader opens the middle one in German, and the agency's last
        middle = await client.get("/?lang=de&page=2")
        last = await client.get("/?org=agency&page=2")
    # then its pager is a landmark named after the page it is on, linking the page before
    # (the first, without a number) and the one after, each in the language asked for
    assert _pager(middle.text) == (
        "Seite 2 von 3",
        {
            "prev": ("Vorherige Seite", f"{BASE}/?lang=de"),
            "next": ("N\u00e4chste Seite", f"{BASE}/?lang=de&page=3"),
        },
    )
    # and the last page links back only, to the same organisation's page before
    assert _pager(last.text) == (
        "Page 2 of 2",
        {"prev": ("Previous page", f"{BASE}/?org=agency")},
    )
