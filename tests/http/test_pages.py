"""The HTML overview, including with hostile stored text; hostile feeds over HTTP."""

from __future__ import annotations

import asyncio
import datetime as dt
import html
import re
import time
from collections.abc import Iterator, Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import feedparser
import httpx
import pytest

from leaderlog.events import (
    Attribution,
    ClaimReported,
    FuzzyDate,
    OrgRegistered,
    PersonRegistered,
    PersonUpdated,
)
from leaderlog.feeds import _text, clean
from leaderlog.feeds._address import web_uri
from leaderlog.feeds._document import RecentChange
from leaderlog.feeds._i18n import language
from leaderlog.feeds._read import FeedReader
from leaderlog.http import _pages as pages
from leaderlog.http import _pages as pages_module
from leaderlog.http import create_app
from leaderlog.log import EventLog
from leaderlog.projections import ProjectionRunner
from leaderlog.projections.feed_entries import FeedEntriesProjection
from tests.feeds.atom_schema import atom_problems
from tests.feeds.logs import EMOJI, RTL, SCRIPT
from tests.http.server import (
    confirm_as_another_writer,
    running,
    seeded_database,
    wait_for_claim_status,
)
from tests.projections.logs import FOX, GORDON_ACTING


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


def _section(html: str, name: str) -> str:
    return html.split(f'<section id="{name}">', 1)[1].split("</section>", 1)[0]


@pytest.fixture
def server_keeping_no_page(tmp_path: Path) -> Iterator[str]:
    """A server over the seeds that writes every page anew, for a test that changes how
    pages are written (servers keep the pages they wrote until the log moves on)."""
    app = create_app(seeded_database(tmp_path))
    with running(app) as base:
        app.state.services.pages.limit = 0
        yield base


def _leadership_text(html: str) -> str:
    """The text of the page's leadership section only."""
    return re.sub(r"\s+", " ", "".join(_collect(_section(html, "leadership")).text))


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
    # As a reader sees it: names sit in elements of their own within sentences.
    text = re.sub(r"\s+", " ", "".join(page.text))
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
    # A valid HTML date and time: at most three digits after the second.
    stamps = re.findall(r'<time datetime="([^"]+)"', response.text)
    assert stamps and all(re.fullmatch(r"[-0-9]+T[0-9:]+\.[0-9]{3}\+00:00", s) for s in stamps)


def test_a_long_leadership_section_is_written_off_the_server_loop_to_the_same_page(
    server_keeping_no_page: str, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = server_keeping_no_page
    # given the overview written on the server's event loop
    on_the_loop = client.get(f"{base}/?lang=en").text
    written: list[str] = []
    write = pages_module._leadership

    def leadership(*arguments: Any) -> str:
        try:
            asyncio.get_running_loop()
            written.append("on the event loop")
        except RuntimeError:
            written.append("on a worker thread")
        return write(*arguments)

    monkeypatch.setattr(pages_module, "_leadership", leadership)
    # when it shows more posts than the loop should write out
    monkeypatch.setattr(pages_module, "_OFF_LOOP_POSTS", 0)
    off_the_loop = client.get(f"{base}/?lang=en").text
    # then a worker thread wrote the same page
    assert written == ["on a worker thread"]
    assert off_the_loop == on_the_loop


def test_overview_is_kept_until_the_log_moves_on_and_answers_if_none_match(
    tmp_path: Path, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[str] = []
    write = pages_module._overview_page

    async def overview_page(request: Any, chosen: str, *arguments: Any) -> Any:
        written.append(chosen)
        return await write(request, chosen, *arguments)

    monkeypatch.setattr(pages_module, "_overview_page", overview_page)
    url = seeded_database(tmp_path)
    with running(create_app(url)) as base:
        # given the overview, once written
        first = client.get(f"{base}/", headers={"Accept-Encoding": "gzip"})
        etag = first.headers["etag"]
        assert (first.status_code, first.headers["cache-control"]) == (200, "no-cache")
        assert etag.startswith('W/"')
        # when it is asked for again, then it is answered as kept, not written again
        again = client.get(f"{base}/")
        assert (again.status_code, again.text, again.headers["etag"]) == (200, first.text, etag)
        assert written == ["en"]
        head = client.head(f"{base}/")
        assert (head.status_code, head.headers["etag"], head.content) == (200, etag, b"")
        # and a reader holding it is told it has not changed, with its headers
        for method in ("GET", "HEAD"):
            unchanged = client.request(method, f"{base}/", headers={"If-None-Match": etag})
            assert (unchanged.status_code, unchanged.content) == (304, b""), method
            assert unchanged.headers["etag"] == etag
            assert unchanged.headers["vary"] == "Accept-Encoding, Accept-Language"
            assert unchanged.headers["content-language"] == "en"
        assert written == ["en"]
        # (each language and organisation is a page of its own)
        french = client.get(f"{base}/", headers={"Accept-Language": "fr", "If-None-Match": etag})
        assert french.status_code == 200 and french.headers["etag"] != etag
        ice = client.get(f"{base}/?org=ice", headers={"If-None-Match": etag})
        assert ice.status_code == 200 and ice.headers["etag"] not in (etag, french.headers["etag"])
        # and an organisation that is not there is neither kept nor ever "not modified"
        for _ in range(2):
            unknown = client.get(f"{base}/?org=atlantis", headers={"If-None-Match": "*"})
            assert unknown.status_code == 404 and "etag" not in unknown.headers
        assert written == ["en", "fr", "en", "en", "en"]
        # when another writer confirms a claim, then the page is written anew, with a new tag
        confirm_as_another_writer(url, GORDON_ACTING)
        wait_for_claim_status(client, base, GORDON_ACTING, "confirmed")
        changed = client.get(f"{base}/", headers={"If-None-Match": etag})
        assert changed.status_code == 200 and changed.headers["etag"] != etag
        assert changed.text != first.text
        assert written[-1:] == ["en"] and len(written) == 6


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
    # a tag naming an offered language another way goes to the address the links use
    for asked, offered in (("zh", "zh-Hans"), ("pt-BR", "pt"), ("EN", "en")):
        moved = client.get(f"{base}/?org=ice&lang={asked}")
        assert (moved.status_code, moved.headers["location"]) == (308, f"/?org=ice&lang={offered}")
    long_tag = client.get(f"{base}/?lang=de-DE-u-co-phonebk-ca-gregory-nu-latn")
    assert (long_tag.status_code, long_tag.headers["location"]) == (308, "/?lang=de")
    too_long = client.get(f"{base}/?lang=" + "x" * 300, headers={"Accept-Language": "fr"})
    assert too_long.status_code == 404
    assert too_long.headers["content-type"].startswith("text/html")
    reordered = client.get(f"{base}/?lang=fr&org=ice")
    assert (reordered.status_code, reordered.headers["location"]) == (308, "/?org=ice&lang=fr")


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


def test_right_to_left_names_keep_their_own_direction_in_every_part_of_the_overview(
    hostile_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = hostile_server
    page = client.get(f"{base}/").text
    isolated = f'<span dir="auto">{html.escape(clean(RTL))}</span>'
    changes = _section(page, "changes")
    # In each recent change's headline (the person) and summary (the parties named).
    headlines = re.findall(r"<li><p>(.*?)<time", changes)
    assert any(isolated in line for line in headlines), headlines
    summaries = re.findall(r"<small>(.*?)</small>", changes)
    assert any(f'<span dir="auto">{html.escape(clean(SCRIPT))}' in s for s in summaries)
    assert any(isolated in line for line in summaries)
    # In the pending changes of the post's row, too.
    pending = re.findall(r"<ul>(<li>.*?)</ul>", _section(page, "leadership"))
    assert any(isolated in items for items in pending), pending
    # Each party of a list on its own: one in a right-to-left script would otherwise lay out
    # the words after it, and the other names, inside its own run.
    parties = {"kind": "named", "parties": ["\u0627\u0644\u0628\u064a\u062a", "ICE"]}
    assert _text._attribution(parties, language("en"), markup=True) == (
        'named sources: <span dir="auto">\u0627\u0644\u0628\u064a\u062a</span> and '
        '<span dir="auto">ICE</span>'
    )
    # A dispute's reason is the writer's words: isolated too.
    reason = pages._conflicts({"conflicts": [{"kind": "dispute", "reason": RTL}]}, language("en"))
    assert reason == f"<bdi>{html.escape(clean(RTL))}</bdi>"


def test_overview_of_one_organisation_shows_its_subtree_only(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    response = client.get(f"{base}/?org=ice")
    assert response.status_code == 200
    text = _leadership_text(response.text)
    assert "Robert Hammer" in text and "Enforcement and Removal Operations" in text
    assert "Secretary of Homeland Security" not in text
    assert "White House Deputy Chief of Staff" not in text
    # The feeds listed are those of what the page shows.
    feeds = _section(response.text, "feeds")
    for path in (
        "/feeds/org/ice-hsi.atom",
        "/feeds/post/ice-hsi-ead.atom",
        "/feeds/person/robert-hammer.atom",
    ):
        assert f'href="{base}{path}"' in feeds, path
    for path in ("/feeds/org/white-house.atom", "/feeds/post/dhs-secretary.atom"):
        assert f'href="{base}{path}"' not in feeds, path
    assert f'href="{base}/"' in response.text and "All organisations" in text
    # and so are the recent changes: the subtree's, as in its feed
    changes = " ".join(_collect(_section(response.text, "changes")).text)
    everyone = " ".join(_collect(_section(client.get(f"{base}/").text, "changes")).text)
    assert "Robert Hammer" in changes
    for elsewhere in ("Kristi Noem", "Stephen Miller"):
        assert elsewhere in everyone and elsewhere not in changes, elsewhere
    french = client.get(f"{base}/?org=ice&lang=fr")
    assert "Toutes les organisations" in french.text
    assert f'href="{base}/?lang=fr"' in french.text


def test_overview_refuses_unknown_or_malformed_organisations(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    unknown = client.get(f"{base}/?org=no-such-org")
    assert unknown.status_code == 404 and "no-such-org" in _leadership_text(unknown.text)
    assert unknown.headers["content-type"] == "text/html; charset=utf-8"
    assert "Did you mean" not in unknown.text
    # anything else typed as an org is looked up like an id, and suggests what it may mean
    by_name = client.get(f"{base}/?org=ICE")
    assert by_name.status_code == 404 and by_name.headers["content-type"].startswith("text/html")
    assert f'href="{base}/?org=ice"' in _section(by_name.text, "leadership")
    control = client.get(f"{base}/?org=ice%00")
    assert control.status_code == 404 and "No organisation has the id" in control.text
    # one too long to be an id is as unknown, on the same page
    long = client.get(f"{base}/?org={'a' * 301}")
    assert long.status_code == 404 and long.headers["content-type"].startswith("text/html")
    # and only its first characters are repeated, as error messages shorten what they quote
    for given, shown in (
        ("b" * 20_000, f"{'b' * 59}\u2026"),
        ("%E2%80%AE" + "c" * 20_000, "'\\u202e" + "c" * 59 + "'\u2026"),
    ):
        huge = client.get(f"{base}/?org={given}")
        text = _leadership_text(huge.text)
        # the ellipsis ending the sentence, with no full stop after it
        assert huge.status_code == 404 and f"No organisation has the id {shown}" in text, text
        assert f"{shown}." not in text, text
        assert len(huge.text) < len(client.get(f"{base}/?org=zzz").text) + 200
        assert 'href="?lang=de"' in huge.text  # the page in German: the overview's
    # what was asked keeps its own direction: Hebrew cannot pull the digits after it, or
    # the rest of the sentence, into its right-to-left run
    hebrew = client.get(f"{base}/", params={"org": "\u05e9\u05dc\u05d5\u05dd 123"}).text
    assert "has the id <bdi>\u05e9\u05dc\u05d5\u05dd 123</bdi>." in hebrew
    arabic = client.get(f"{base}/", params={"lang": "\u0639\u0631\u0628\u064a 2"}).text
    assert "not offered in \u201c<bdi>\u0639\u0631\u0628\u064a 2</bdi>\u201d:" in arabic
    assert 'href="?org=zzz&amp;lang=de"' in client.get(f"{base}/?org=zzz").text
    language = client.get(f"{base}/?lang={'x' * 20_000}")
    said = _leadership_text(language.text)
    assert language.status_code == 404 and f"not offered in \u201c{'x' * 59}\u2026\u201d" in said
    assert len(language.text) < len(client.get(f"{base}/?lang=xx").text) + 200
    # and one holding what cannot be seen is written out, not shown as a real id
    for hidden, written in (("%E2%80%AEice", "\\u202eice"), ("%E2%80%8Bice", "\\u200bice")):
        unseen = _leadership_text(client.get(f"{base}/?org={hidden}").text)
        assert f"No organisation has the id '{written}'." in unseen, unseen
    assert client.get(f"{base}/?org=").status_code == 200  # an empty field: the overview
    # the language links keep the organisation shown
    page = client.get(f"{base}/?org=ice&lang=fr").text
    assert 'href="?org=ice&amp;lang=de"' in page


def test_unknown_organisation_page_links_what_was_meant(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    # ERO is the short name of ice-ero; the page is a 404 that still works as a page
    response = client.get(f"{base}/?org=ero&lang=fr")
    assert response.status_code == 404
    assert response.headers["content-language"] == "fr"
    text = _leadership_text(response.text)
    assert "Aucune organisation n\u2019a l\u2019identifiant ero." in text
    assert "Vouliez-vous dire" in text
    leadership = _section(response.text, "leadership")
    assert f'href="{base}/?org=ice-ero&amp;lang=fr"' in leadership
    assert f'href="{base}/?org=ice&amp;lang=fr"' not in leadership
    assert f'href="{base}/?lang=fr"' in response.text  # back to all organisations
    assert "Robert Hammer" not in text


def test_overview_of_a_large_log_lists_organisations_instead_of_every_post(
    server_keeping_no_page: str, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = server_keeping_no_page
    # The seeds define five posts; a limit below that makes them "many".
    monkeypatch.setattr(pages, "OVERVIEW_POSTS", 2)
    response = client.get(f"{base}/?lang=de")
    assert response.status_code == 200
    text = _leadership_text(response.text)
    assert "Wählen Sie eine Organisation" in text
    assert "Robert Hammer" not in text  # no holders listed: the whole state is not computed
    for org in ("dhs", "ice", "ice-hsi", "ice-ero", "white-house"):
        assert f'href="{base}/?org={org}&amp;lang=de"' in response.text, org
    feeds = _section(response.text, "feeds")
    assert f'href="{base}/feeds/org/white-house.atom?lang=de"' in feeds
    assert "/feeds/person/" not in feeds and "/feeds/post/" not in feeds
    assert "Robert Hammer" in _leadership_text(client.get(f"{base}/?org=ice-hsi").text)


def test_an_organisation_with_many_posts_below_it_lists_its_organisations_instead(
    server_keeping_no_page: str, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = server_keeping_no_page
    # ICE's subtree holds three posts, in ICE, HSI and ERO; a limit below that makes them many
    monkeypatch.setattr(pages, "OVERVIEW_POSTS", 2)
    response = client.get(f"{base}/?org=ice")
    assert response.status_code == 200
    text = _leadership_text(response.text)
    # then its page lists the organisations of its subtree rather than every post's holders
    assert "Choose an organisation" in text
    assert "Robert Hammer" not in text and "Kenneth Genalo" not in text
    leadership = _section(response.text, "leadership")
    listed = leadership.split('<ul class="orgs">', 1)[1]
    for org in ("ice", "ice-hsi", "ice-ero"):
        assert f'href="{base}/?org={org}"' in listed, org
    # (DHS, above it, is linked before the list, not in it)
    assert f'href="{base}/?org=dhs"' not in listed
    # and it is still ICE's page: its situation, its feeds, its recent changes
    assert f'href="{base}/feeds/org/ice.atom"' in response.text
    # an organisation with nothing below it shows its own posts whole, however many
    monkeypatch.setattr(pages, "OVERVIEW_POSTS", 0)
    assert "Robert Hammer" in _leadership_text(client.get(f"{base}/?org=ice-hsi").text)
    # and one that is not there is still a 404
    assert client.get(f"{base}/?org=nope").status_code == 404


def _alternates(html: str) -> dict[str, tuple[str | None, str | None]]:
    """The page's autodiscovery feeds: type -> (href, title)."""
    return {
        str(link["type"]): (link["href"], link["title"])
        for link in _collect(html).links
        if link["rel"] == "alternate"
    }


def test_organisation_page_autodiscovers_that_organisations_feeds(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    english = _alternates(client.get(f"{base}/?org=ice").text)
    assert english == {
        "application/atom+xml": (
            f"{base}/feeds/org/ice.atom",
            "Leadership changes: Immigration and Customs Enforcement (Atom)",
        ),
        "application/rss+xml": (
            f"{base}/feeds/org/ice.rss",
            "Leadership changes: Immigration and Customs Enforcement (RSS)",
        ),
        "application/feed+json": (
            f"{base}/feeds/org/ice.json",
            "Leadership changes: Immigration and Customs Enforcement (JSON Feed)",
        ),
    }
    # each one is that organisation's feed, titled as the feed itself is
    atom = feedparser.parse(client.get(f"{base}/feeds/org/ice.atom").content)
    assert f"{atom.feed.title} (Atom)" == english["application/atom+xml"][1]
    # a language asked for in the address is kept, as in the page's other feed links
    french = _alternates(client.get(f"{base}/?org=ice-hsi&lang=fr").text)
    assert {href for href, _ in french.values()} == {
        f"{base}/feeds/org/ice-hsi.{ext}?lang=fr" for ext in ("atom", "rss", "json")
    }
    by_header = client.get(f"{base}/?org=ice-hsi", headers={"Accept-Language": "fr"})
    assert {href for href, _ in _alternates(by_header.text).values()} == {
        f"{base}/feeds/org/ice-hsi.{ext}" for ext in ("atom", "rss", "json")
    }
    # the format in the language's own brackets, after the feed's own title
    japanese = _alternates(client.get(f"{base}/?org=ice&lang=ja").text)
    title = feedparser.parse(client.get(f"{base}/feeds/org/ice.atom?lang=ja").content).feed.title
    assert japanese["application/atom+xml"][1] == f"{title}\uff08Atom\uff09"
    assert french["application/rss+xml"][1].endswith(" (RSS)")
    # the OPML outline stays every feed; an unknown organisation has no feeds of its own
    outline = {"rel": "outline", "type": "text/x-opml", "title": "OPML", "href": f"{base}/opml"}
    assert outline in _collect(client.get(f"{base}/?org=ice").text).links
    unknown = _alternates(client.get(f"{base}/?org=ero").text)
    assert unknown["application/atom+xml"][0] == f"{base}/feeds/all.atom"
    assert _alternates(client.get(f"{base}/").text)["application/rss+xml"] == (
        f"{base}/feeds/all.rss",
        "Leadership changes (RSS)",
    )


def test_overview_lists_the_feeds_of_what_it_shows_and_leaves_the_rest_to_the_opml(
    tmp_path: Path, client: httpx.Client
) -> None:
    # given the seeds and a person no claim is about (one of thousands, say)
    url = seeded_database(tmp_path, PersonRegistered(person="bystander", name="Bystander"))
    with running(create_app(url)) as base:
        overview = client.get(f"{base}/").text
        feeds = _section(overview, "feeds")
        # then the page lists the feeds of the people it shows, not every person's
        assert f'href="{base}/feeds/person/robert-hammer.atom"' in feeds
        assert "/feeds/person/bystander." not in overview
        assert "/feeds/person/bystander.atom" in client.get(f"{base}/opml").text


def test_overview_lists_the_feed_of_a_person_it_names_only_in_a_pending_change(
    tmp_path: Path, client: httpx.Client
) -> None:
    # given a person who holds no post, expected to be appointed to HSI's deputy special
    # agent in charge
    url = seeded_database(
        tmp_path,
        PersonRegistered(person="sam-nominee", name="Sam Nominee"),
        ClaimReported(
            claim="sam-nominee-expected",
            source=FOX,
            kind="appointment",
            person="sam-nominee",
            post="ice-hsi-dsac",
            capacity="permanent",
            modality="expected",
            effective=FuzzyDate(text="next month"),
            attribution=Attribution(kind="outlet"),
        ),
    )
    with running(create_app(url)) as base:
        # when a reader opens HSI's page, which names them among its pending changes
        page = client.get(f"{base}/?org=ice-hsi").text
    assert "Sam Nominee" in _leadership_text(page)
    # then its feeds include theirs, as they include each holder's
    feeds = _section(page, "feeds")
    assert f'href="{base}/feeds/person/sam-nominee.atom"' in feeds
    assert f'href="{base}/feeds/person/derek-gordon.atom"' in feeds


def test_an_overview_after_a_person_is_renamed_names_them_anew_under_a_new_tag(
    tmp_path: Path, client: httpx.Client
) -> None:
    url = seeded_database(tmp_path)
    with running(create_app(url)) as base:
        # given an organisation's page, which links to the feed of a person it shows
        first = client.get(f"{base}/?org=ice")
        assert "Robert Renamed" not in first.text
        # when another writer renames that person
        asyncio.run(_rename_as_another_writer(url, "robert-hammer", "Robert Renamed"))
        deadline = time.monotonic() + 20
        changed = client.get(f"{base}/?org=ice")
        while "Robert Renamed" not in _section(changed.text, "feeds"):
            assert time.monotonic() < deadline, "the page never named the person anew"
            time.sleep(0.1)
            changed = client.get(f"{base}/?org=ice")
        # then the page's list of feeds says the new name, under a tag of its own
        assert changed.headers["etag"] != first.headers["etag"]
        again = client.get(f"{base}/?org=ice", headers={"If-None-Match": first.headers["etag"]})
        assert again.status_code == 200 and again.text == changed.text


def test_an_overview_read_as_a_rebuild_begins_is_not_kept_for_once_it_is_through(
    tmp_path: Path, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = seeded_database(tmp_path)
    asked = FeedReader.entities_moved
    begins = [1]

    async def then_a_rebuild_begins(
        reader: FeedReader, kinds: Sequence[str], at: int | None = None
    ) -> int:
        moved = await asked(reader, kinds, at)
        if begins:
            begins.pop()
            # What a rebuild elsewhere leaves as it begins: tables emptied, checkpoint at 0.
            async with reader.store.projection_transaction() as tx:
                for table in FeedEntriesProjection().tables():
                    await tx.execute(f"DELETE FROM {table}")
                await tx.execute(
                    "UPDATE projection_checkpoints SET position = 0 WHERE name = ?",
                    (FeedEntriesProjection.name,),
                )
        return moved

    with running(create_app(url)) as base:
        # given an overview whose tag was worked out before a rebuild began, and whose
        # lists were read once it had
        monkeypatch.setattr(FeedReader, "entities_moved", then_a_rebuild_begins)
        meanwhile = client.get(f"{base}/")
        assert "/feeds/person/robert-hammer.atom" not in meanwhile.text
        # when the rebuild is through, at the position the tag named
        asyncio.run(_rebuild_feed_entries(url))
        # then the page is read again, not handed out as it was read meanwhile
        assert "etag" not in meanwhile.headers
        after = client.get(f"{base}/")
        assert f'href="{base}/feeds/person/robert-hammer.atom"' in _section(after.text, "feeds")


async def _rebuild_feed_entries(url: str) -> None:
    async with await EventLog.open(url) as log:
        await ProjectionRunner(log.store, [FeedEntriesProjection()]).rebuild()


async def _rename_as_another_writer(url: str, person: str, name: str) -> None:
    async with await EventLog.open(url) as log:
        await log.append_events([PersonUpdated(person=person, name=name)], actor="test")


@pytest.mark.parametrize(
    ("tag", "words"),
    [
        ("en", "more than one permanent holder at once"),
        ("fr", "plus d\u2019un titulaire permanent à la fois"),
        ("ja", "正式な在任者が同時に複数いる"),
    ],
)
def test_a_conflict_the_rules_find_is_said_in_the_page_language(tag: str, words: str) -> None:
    acting = pages_module._conflicts(
        {"conflicts": [{"kind": "overlapping_acting", "reason": "more than one acting..."}]},
        language(tag),
    )
    assert (
        acting
        == {
            "en": "more than one acting or interim holder at once",
            "fr": "plus d\u2019un titulaire par intérim à la fois",
            "ja": "代行または暫定の在任者が同時に複数いる",
        }[tag]
    )
    answer = {
        "conflicts": [
            {"kind": "overlapping_permanent", "reason": "more than one permanent holder at once"},
            {"kind": "disputed", "reason": "The <caption> disagrees"},
        ]
    }
    assert pages_module._conflicts(answer, language(tag)) == (
        f"{words}<br><bdi>The &lt;caption&gt; disagrees</bdi>"
    )


def test_a_language_not_offered_gets_a_page_saying_so_in_the_reader_s_language(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    response = client.get(f"{base}/?lang=xx-YY", headers={"Accept-Language": "fr"})
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["content-language"] == "fr"
    # in French quotation marks, with the spaces French sets inside them
    assert (
        "Ces pages ne sont pas proposées dans la langue \u00ab\u00a0<bdi>xx-YY</bdi>\u00a0\u00bb"
        in response.text
    )
    assert 'href="?lang=de" hreflang="de"' in response.text  # the languages to choose from


def test_several_holders_of_a_post_are_listed_in_the_page_s_language(
    archive_server: tuple[str, str], client: httpx.Client
) -> None:
    """A post held by several people at once lists them as the language lists things, each
    one's capacity in the language's own brackets."""
    base, _ = archive_server
    cells = {
        tag: [
            cell
            for cell in re.findall(r"<tr>.*?<th scope=\"row\">.*?</th><td>(.*?)</td>", page, re.S)
            if cell.count("<bdi>") > 2
        ]
        for tag, page in (
            (tag, client.get(f"{base}/", params={"lang": tag}).text) for tag in ("en", "ja", "de")
        )
    }
    assert cells["en"] and cells["ja"] and cells["de"]
    assert re.search(
        r"<bdi>Robert Hammer</bdi> \(disputed\), <bdi>.*</bdi> \(acting\), and <bdi>",
        cells["en"][0],
    )
    assert re.search(r"</bdi>\uff08\u4ee3\u884c\uff09\u3001<bdi>", cells["ja"][0])
    assert ", <bdi>" not in cells["ja"][0] and " (" not in cells["ja"][0]
    assert re.search(r"\) und <bdi>", cells["de"][0])


def test_each_feed_line_uses_the_colon_of_the_page_s_language(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    """ "Everything: Atom · RSS · JSON Feed", with the colon as each language writes it."""
    base, _ = seeded_server
    for tag, colon in (("en", ": "), ("fr", "\xa0: "), ("ja", "\uff1a"), ("zh-Hans", "\uff1a")):
        feeds = _section(client.get(f"{base}/", params={"lang": tag}).text, "feeds")
        lines = re.findall(r"<li><bdi>[^<]*</bdi>([^<]*)<a ", feeds)
        assert lines and set(lines) == {colon}, (tag, set(lines))


def test_each_language_is_offered_under_its_own_name(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    """The links to the page in each language name it as its readers do."""
    base, _ = seeded_server
    nav = client.get(f"{base}/").text.split("<nav", 1)[1].split("</nav>", 1)[0]
    names = dict(re.findall(r'hreflang="([^"]+)"[^>]*>([^<]+)</a>', nav))
    assert names["zh-Hans"] == "\u7b80\u4f53\u4e2d\u6587"
    assert names["fr"] == "fran\u00e7ais" and names["ja"] == "\u65e5\u672c\u8a9e"
    assert len(names) == 10 and not any("(" in name for name in names.values())


def test_an_organisation_named_right_to_left_is_autodiscovered_titled_as_its_feed(
    tmp_path: Path, client: httpx.Client
) -> None:
    """The feed's title isolates a Hebrew name, so that "(Atom)" after it, or a number in
    it, keeps its place; the page's autodiscovery title is that title too."""
    hebrew = OrgRegistered(org="unit-8200", name="\u05d9\u05d7\u05d9\u05d3\u05d4 8200")
    with running(create_app(seeded_database(tmp_path, hebrew))) as base:
        found = _alternates(client.get(f"{base}/?org=unit-8200").text)
        feed = feedparser.parse(client.get(f"{base}/feeds/org/unit-8200.atom").content)
    assert "\u2068" in feed.feed.title
    assert found["application/atom+xml"][1] == f"{feed.feed.title} (Atom)"


def test_an_empty_language_field_leaves_the_language_to_the_reader(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    """ "?lang=" as a form with no language chosen sends it: the page in the reader's language,
    as "?org=" left empty is the whole overview."""
    base, _ = seeded_server
    for query in ("?lang=", "?lang=%20", "?org=ice&lang="):
        response = client.get(
            f"{base}/{query}", headers={"Accept-Language": "fr"}, follow_redirects=False
        )
        assert response.status_code == 200, query
        assert response.headers["content-language"] == "fr" and '<html lang="fr"' in response.text
        assert "Toutes les organisations" in response.text or query != "?org=ice&lang="


def test_a_long_source_address_outside_ascii_is_linked_in_recent_changes() -> None:
    # given an entry whose source address (684 characters) grows past 2,000 when encoded
    address = "https://jp.example/wiki/" + "指導者の交代について_" * 60
    href = web_uri(address) or ""
    assert len(href) > 2000
    moment = dt.datetime(2025, 6, 1, tzinfo=dt.UTC)
    change = RecentChange("A change", "", href, moment)
    # then the page links its title to the address, as the feeds do
    assert f'<a href="{href}">A change</a>' in pages_module._changes([change], language("en"))


def test_the_footer_links_the_api_documentation_and_the_opml_of_every_feed(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    # when a reader opens the overview in French, as asked in the address
    page = client.get(f"{base}/?lang=fr").text
    footer = page.split("<footer>", 1)[1].split("</footer>", 1)[0]
    links = [html.unescape(link) for link in re.findall(r'<a href="([^"]+)">', footer)]
    # then its footer links the API's documentation, and the OPML of every feed in French
    assert links == [f"{base}/docs", f"{base}/opml?lang=fr"]
    # and both are there to follow
    for link in links:
        assert client.get(link).status_code == 200, link


@pytest.mark.parametrize(
    ("address", "headers", "opml"),
    [
        ("/?org=ice&lang=fr", {}, "/opml?lang=fr"),
        ("/?lang=ja", {}, "/opml?lang=ja"),
        # a language the reader's browser chose is left for it to choose again
        ("/?org=ice", {"Accept-Language": "fr"}, "/opml"),
    ],
)
def test_every_link_to_the_opml_keeps_the_language_asked_for_in_the_address(
    seeded_server: tuple[str, str],
    client: httpx.Client,
    address: str,
    headers: dict[str, str],
    opml: str,
) -> None:
    base, _ = seeded_server
    # when a reader opens a page
    page = client.get(f"{base}{address}", headers=headers).text
    # then its autodiscovery link, its feeds section and its footer each link the OPML of
    # every feed in the language the address asked for (the feeds section in each format)
    links = [html.unescape(link) for link in re.findall(r'href="([^"]*/opml[^"]*)"', page)]
    in_formats = [
        opml.replace("/opml", f"/opml?format={fmt}", 1).replace("?lang", "&lang")
        for fmt in ("rss", "json")
    ]
    assert sorted(links) == sorted([f"{base}{opml}"] * 3 + [f"{base}{url}" for url in in_formats])
    assert f'href="{html.escape(base + opml)}"' in _section(page, "feeds")
    for url in in_formats:
        assert f'href="{html.escape(base + url)}"' in _section(page, "feeds")
        # each in the form the server keeps, answered without a redirect
        assert client.get(f"{base}{url}", follow_redirects=False).status_code == 200, url


def test_the_feeds_of_a_person_on_no_page_are_linked_in_every_format(tmp_path: Path) -> None:
    # given a person who holds no post and is named in no change (on no page's table)
    app = create_app(seeded_database(tmp_path, PersonRegistered(person="new-person", name="N")))
    with running(app) as base, httpx.Client(timeout=30) as client:
        # when a reader follows the links of the overview, the OPML documents they lead to
        # included
        page = client.get(f"{base}/").text
        opml_links = {html.unescape(link) for link in re.findall(r'href="([^"]*/opml[^"]*)"', page)}
        reached = {
            html.unescape(link)
            for opml in opml_links
            for link in re.findall(r'xmlUrl="([^"]*)"', client.get(opml).text)
        }
    # then that person's feed is reached in each format, not in Atom alone
    for fmt in ("atom", "rss", "json"):
        assert f"{base}/feeds/person/new-person.{fmt}" in reached, fmt
