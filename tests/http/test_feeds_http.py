"""Feeds over real HTTP: media types, conditional GET, HEAD, gzip, languages, archives."""

from __future__ import annotations

import asyncio
import datetime as dt
import gzip
import html
import time
import xml.etree.ElementTree as ElementTree
from email.utils import format_datetime, parsedate_to_datetime
from html import escape
from pathlib import Path

import feedparser
import httpx
import pytest
from click.testing import CliRunner
from starlette.requests import Request

from leaderlog.cli import serve_commands
from leaderlog.cli._app import main
from leaderlog.feeds import FULL_ARCHIVE_CACHE, SUBSCRIPTION_CACHE
from leaderlog.feeds._service import Validators
from leaderlog.http import check_public_url, create_app
from leaderlog.http._conditional import caching_headers
from leaderlog.http._deps import base_url, redirect_root
from leaderlog.log import EventLog
from tests.conftest import SEEDS
from tests.feeds.atom_schema import atom_problems
from tests.feeds.logs import GENALO_RETIREMENT, add_claims, correct
from tests.http.server import running

IDENTITY = {"Accept-Encoding": "identity"}
FEEDS = (
    ("/feeds/all.atom", "application/atom+xml"),
    ("/feeds/all.rss", "application/rss+xml"),
    ("/feeds/all.json", "application/feed+json"),
    ("/feeds/org/ice.atom", "application/atom+xml"),
    ("/feeds/person/robert-hammer.rss", "application/rss+xml"),
    ("/feeds/post/ice-hsi-ead.json", "application/feed+json"),
)


def _wait_for_change(client: httpx.Client, url: str, etag: str) -> httpx.Response:
    """Poll until the server has applied what another writer appended (a wait, not a check)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        response = client.get(url, headers=IDENTITY)
        if response.headers["etag"] != etag:
            return response
        time.sleep(0.05)
    raise AssertionError(f"{url} never changed")


def test_feeds_have_media_types_with_charset_and_validators(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    for path, media_type in FEEDS:
        response = client.get(base + path, headers=IDENTITY)
        assert response.status_code == 200, path
        assert response.headers["content-type"] == f"{media_type}; charset=utf-8"
        assert response.headers["etag"].startswith('W/"')
        parsedate_to_datetime(response.headers["last-modified"])
        assert response.headers["cache-control"] == SUBSCRIPTION_CACHE
        assert response.headers["vary"] == "Accept-Encoding, Accept-Language"
        assert response.headers["content-language"] == "en"
        if media_type != "application/feed+json":
            parsed = feedparser.parse(response.content, response_headers=dict(response.headers))
            assert not parsed.bozo, (path, parsed.get("bozo_exception"))
            assert parsed.entries


def test_conditional_get_answers_304_with_the_caching_headers(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    url = f"{base}/feeds/org/ice.atom"
    first = client.get(url, headers=IDENTITY)
    etag, modified = first.headers["etag"], first.headers["last-modified"]
    stale = "Thu, 01 Jan 1970 00:00:00 GMT"
    cases = [
        ({"If-None-Match": etag}, 304),
        ({"If-None-Match": etag.removeprefix("W/")}, 304),  # weak comparison
        ({"If-None-Match": f'"other", {etag}'}, 304),
        ({"If-None-Match": "*"}, 304),
        ({"If-Modified-Since": modified}, 304),
        ({"If-None-Match": etag, "If-Modified-Since": stale}, 304),  # If-None-Match wins
        ({"If-None-Match": '"other"', "If-Modified-Since": modified}, 200),
        ({"If-None-Match": '"other"'}, 200),
        ({"If-Modified-Since": stale}, 200),
        ({"If-Modified-Since": "yesterday-ish"}, 200),
    ]
    for headers, status in cases:
        response = client.get(url, headers={**IDENTITY, **headers})
        assert response.status_code == status, headers
        if status == 304:
            assert response.content == b""
            for name in ("etag", "last-modified", "cache-control", "vary"):
                assert response.headers[name] == first.headers[name], name
        else:
            assert response.content == first.content
    later = format_datetime(parsedate_to_datetime(modified).replace(year=2999), usegmt=True)
    # A date yet to come is no copy's date (a client's clock running fast would miss changes).
    assert client.get(url, headers={"If-Modified-Since": later}).status_code == 200
    # Not one valid HTTP-date: ignored (RFC 9110 13.1.3), so the document is sent.
    day_name, _, without_day_name = modified.partition(", ")
    other_day = "Sun" if day_name != "Sun" else "Mon"
    for value in (
        f"{modified}, {later}",
        modified.removesuffix(" GMT"),
        without_day_name,
        f"{other_day}, {without_day_name}",
    ):
        assert client.get(url, headers={"If-Modified-Since": value}).status_code == 200, value
    for value in (modified, f"{day_name.upper()}, {without_day_name}"):
        assert client.get(url, headers={"If-Modified-Since": value}).status_code == 304, value
    twice = [("If-Modified-Since", later), ("If-Modified-Since", later)]
    assert client.get(url, headers=twice).status_code == 200
    # Repeated lines of a list header are one list.
    lines = [("If-None-Match", '"other"'), ("If-None-Match", etag)]
    assert client.get(url, headers=lines).status_code == 304
    languages = [("Accept-Language", "xx"), ("Accept-Language", "fr")]
    assert client.get(url, headers=languages).headers["content-language"] == "fr"


def test_head_answers_the_get_headers_without_a_body(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    for path, _ in (*FEEDS, ("/opml", ""), ("/", "")):
        for encoding in ("identity", "gzip"):
            headers = {"Accept-Encoding": encoding}
            got = client.get(base + path, headers=headers)
            head = client.head(base + path, headers=headers)
            assert head.status_code == 200 and head.content == b""
            assert head.headers["content-length"] == got.headers["content-length"], path
            for name in ("content-type", "etag", "last-modified", "cache-control", "vary"):
                assert head.headers.get(name) == got.headers.get(name), (path, name)


def test_gzip_when_accepted_and_identity_otherwise(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    url = f"{base}/feeds/all.rss"
    plain = client.get(url, headers=IDENTITY)
    assert "content-encoding" not in plain.headers
    with client.stream("GET", url, headers={"Accept-Encoding": "gzip"}) as response:
        raw = b"".join(response.iter_raw())
        assert response.headers["content-encoding"] == "gzip"
        assert "Accept-Encoding" in response.headers["vary"]
        assert int(response.headers["content-length"]) == len(raw) < len(plain.content)
    assert gzip.decompress(raw) == plain.content
    refused = client.get(url, headers={"Accept-Encoding": "gzip;q=0, identity"})
    assert "content-encoding" not in refused.headers
    # a q that is no qvalue (RFC 9110 12.4.2) leaves its coding out, wherever the q stands
    for header, gzipped in (
        ("gzip;q=2", False),
        ("gzip;q=1.5, identity", False),
        ("gzip;q=inf", False),
        ("*;q=2", False),
        ("gzip;q=0.5", True),
        ("GZIP ; Q=1.000", True),
        ("gzip;level=1;q=0", False),
        ("gzip;q=0.5;level=1", True),
        ("gzip;q=2, *;q=0.1", True),
    ):
        got = client.get(url, headers={"Accept-Encoding": header})
        assert ("content-encoding" in got.headers) is gzipped, header
    not_modified = client.get(
        url, headers={"Accept-Encoding": "gzip", "If-None-Match": plain.headers["etag"]}
    )
    assert not_modified.status_code == 304 and not_modified.headers["etag"] == plain.headers["etag"]


def test_language_from_the_address_or_accept_language(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    url = f"{base}/feeds/org/ice.atom"
    german = client.get(url, headers={"Accept-Language": "de-AT,de;q=0.9,en;q=0.5"})
    assert german.headers["content-language"] == "de"
    assert "Führungswechsel: Einwanderungs- und Zollbehörde" in german.text
    assert f'href="{url}" rel="self"' in german.text
    japanese = client.get(f"{url}?lang=ja", headers={"Accept-Language": "de"})
    assert japanese.headers["content-language"] == "ja"
    assert 'xml:lang="ja"' in japanese.text and f'href="{url}?lang=ja" rel="self"' in japanese.text
    assert german.headers["etag"] != japanese.headers["etag"]
    assert client.get(f"{url}?lang=klingon").status_code == 422
    english = client.get(url, headers={"Accept-Language": "tlh"})
    assert english.headers["content-language"] == "en"
    # A weight that is no qvalue does not make its language win: the entry is ignored.
    for weight in ("2", "1.5", "abc", "0.12345"):
        header = f"fr;q={weight}, de;q=0.5"
        assert (
            client.get(url, headers={"Accept-Language": header}).headers["content-language"] == "de"
        ), header


def test_a_feed_links_to_the_page_in_its_own_language(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    """Whether the language came from ?lang= or Accept-Language, the feed's home link opens
    the page in the feed's language, not one the browser would negotiate."""
    base, _ = seeded_server
    for path, page in (
        ("/feeds/all", "/?lang=fr"),
        ("/feeds/org/ice", "/?org=ice&lang=fr"),
        # a post's: its organisation's page, which lists its holders
        ("/feeds/post/ice-hsi-ead", "/?org=ice-hsi&lang=fr"),
    ):
        home = f"{base}{page}"
        for query, header in (("?lang=fr", "de"), ("", "fr")):
            asked = {"Accept-Language": header}
            atom = client.get(f"{base}{path}.atom{query}", headers=asked).text
            assert f'<link href="{escape(home)}" rel="alternate" type="text/html"/>' in atom
            rss = client.get(f"{base}{path}.rss{query}", headers=asked).text
            assert f"<link>{escape(home)}</link>" in rss
            json_feed = client.get(f"{base}{path}.json{query}", headers=asked).json()
            assert json_feed["home_page_url"] == home
        shown = client.get(home, headers={"Accept-Language": "de"}, follow_redirects=False)
        assert shown.status_code == 200 and '<html lang="fr"' in shown.text
    english = client.get(f"{base}/feeds/all.atom", headers={"Accept-Language": "en"})
    assert f'<link href="{base}/?lang=en" rel="alternate"' in english.text


def test_a_text_cut_short_ends_its_sentence_with_the_ellipsis_alone(
    hostile_server: tuple[str, str], client: httpx.Client
) -> None:
    """A name over the length shown ends in an ellipsis; no full stop follows it."""
    base, _ = hostile_server
    for path in ("/feeds/person/hostile-long.json", "/feeds/person/hostile-long.atom", "/"):
        text = html.unescape(client.get(base + path).text)
        assert "Name Very\u2026" in text, path
        assert "\u2026." not in text, path
    item = client.get(f"{base}/feeds/person/hostile-long.json").json()["items"][0]
    assert "\u2026." not in item["content_text"] and "\u2026." not in item["content_html"]


def test_a_language_asked_for_another_way_redirects_to_the_offered_tag(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    """The self link names ?lang=pt, so ?lang=pt-BR is sent there rather than served."""
    base, _ = seeded_server
    cases = {
        "/feeds/org/ice.atom?lang=pt-BR": "/feeds/org/ice.atom?lang=pt",
        "/feeds/all.rss?x=1&lang=EN&y=2": "/feeds/all.rss?x=1&y=2&lang=en",
        # the order of the self link: a page cached for a year has one cache key
        "/feeds/org/ice.atom?page=1&lang=fr": "/feeds/org/ice.atom?lang=fr&page=1",
        "/feeds/post/ice-hsi-ead.json?lang=zh": "/feeds/post/ice-hsi-ead.json?lang=zh-Hans",
        "/feeds/all.atom?lang=pt&lang=pt": "/feeds/all.atom?lang=pt",
        "/opml?format=rss&lang=de-AT": "/opml?format=rss&lang=de",
        # a tag with extensions, longer than a plain one
        "/feeds/all.atom?lang=de-DE-u-co-phonebk-ca-gregory-nu-latn": "/feeds/all.atom?lang=de",
    }
    for path, canonical in cases.items():
        for method in ("GET", "HEAD"):
            response = client.request(method, base + path, follow_redirects=False)
            assert response.status_code == 308, (method, path)
            assert response.headers["location"] == canonical
    followed = client.get(
        f"{base}/feeds/org/ice.atom?lang=pt-BR", headers=IDENTITY, follow_redirects=True
    )
    assert followed.status_code == 200 and followed.history[0].status_code == 308
    assert str(followed.url) == f"{base}/feeds/org/ice.atom?lang=pt"
    assert f'href="{followed.url}" rel="self"' in followed.text
    assert (
        client.get(f"{base}/feeds/org/ice.atom?lang=pt", follow_redirects=False).status_code == 200
    )
    assert client.get(f"{base}/feeds/org/ice.atom?lang=xx-YY").status_code == 422


def test_a_redirect_keeps_the_other_parameters_as_written_and_so_can_be_followed(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    """Thousands of parameters without a value ("x", as a reader's tracking may add) are
    sent on as they were, not as "x=": the address sent back is no longer than the one
    asked, so the server reads it when it is followed."""
    base, _ = seeded_server
    asked = "/feeds/all.atom?" + "x&" * 7000 + "utm=a%20b&lang=pt-BR"
    moved = client.get(base + asked, follow_redirects=False)
    assert moved.status_code == 308
    location = moved.headers["location"]
    assert location == "/feeds/all.atom?" + "x&" * 7000 + "utm=a%20b&lang=pt"
    followed = client.get(base + location, headers=IDENTITY, follow_redirects=False)
    assert followed.status_code == 200


def test_an_archive_page_written_another_way_redirects_to_its_one_address(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    """Pages are cached for a year: each is served at one address, not one per spelling."""
    base, _ = seeded_server
    for spelling in ("01", "001", "1&page=1"):
        response = client.get(f"{base}/feeds/all.atom?page={spelling}&x=y")
        assert response.status_code == 308, spelling
        assert response.headers["location"] == "/feeds/all.atom?x=y&page=1"
    # The seeds fill no archive page yet: the one address answers for itself.
    assert client.get(f"{base}/feeds/all.atom?page=1").status_code == 404


@pytest.mark.parametrize(
    "path",
    [
        "/feeds/all.atom?page=1&page=2",
        "/feeds/org/ice.atom?lang=fr&lang=de",
        "/opml?format=json&format=rss",
        "/?org=ice&org=dhs",
    ],
)
def test_a_parameter_given_twice_with_two_values_is_422(
    seeded_server: tuple[str, str], client: httpx.Client, path: str
) -> None:
    base, _ = seeded_server
    response = client.get(base + path)
    assert response.status_code == 422
    assert "is given 2 times: give it once" in response.text


def test_a_parameter_the_feed_does_not_take_is_ignored(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    """Readers and newsletters add tracking parameters to the addresses they subscribe to."""
    base, _ = seeded_server
    tracked = client.get(f"{base}/feeds/org/ice.atom?utm_source=reader", headers=IDENTITY)
    assert tracked.status_code == 200
    assert tracked.content == client.get(f"{base}/feeds/org/ice.atom", headers=IDENTITY).content


def test_errors_are_clear_json(seeded_server: tuple[str, str], client: httpx.Client) -> None:
    base, _ = seeded_server
    cases = {
        "/feeds/org/atlantis.atom": 404,
        "/feeds/person/nobody.rss": 404,
        "/feeds/all.xml": 404,
        "/feeds/everything.atom": 404,
        "/feeds/planet/earth.atom": 404,
        "/feeds/org/Bad_Slug.atom": 404,
        "/feeds/all.atom?page=1": 404,  # a complete feed has no archive pages
        "/feeds/all.atom?page=0": 422,
        "/feeds/all.atom?page=x": 422,
        "/feeds/all.atom?lang=" + "x" * 50: 422,
        "/opml?format=xml": 422,
    }
    for path, status in cases.items():
        response = client.get(base + path)
        assert response.status_code == status, path
        assert response.headers["content-type"] == "application/json"
        assert response.json()["detail"], path
    # an unknown subject's 404 names the ids probably meant
    meant = client.get(f"{base}/feeds/org/ero.rss").json()["detail"]
    assert meant.startswith("unknown organisation 'ero'; did you mean ice-ero (ERO,")
    assert client.get(f"{base}/feeds/post/nothing.json").json()["detail"] == (
        "unknown post 'nothing'"
    )
    # a name where the id goes gets the same help
    named = client.get(f"{base}/feeds/person/Robert%20J.%20Hammer.atom")
    assert named.status_code == 404
    assert "did you mean robert-hammer (Robert Hammer, Robert J. Hammer)" in named.json()["detail"]
    # and a 404 repeats only the first characters of what it was given
    long = "x" * 5000
    short = f"{'x' * 57}..."
    for path, said in (
        (f"/feeds/{long}.atom", f"no feed at /feeds/{short}; try /feeds/all.atom"),
        (f"/feeds/org/{long}.rss", f"unknown organisation '{short}'"),
        (f"/feeds/{long}/ice.json", f"no feed at /feeds/{short}/ice.json: use"),
        (f"/feeds/org/{long}", f"no feed at '{short}': feeds end in"),
    ):
        response = client.get(base + path)
        assert response.status_code == 404 and response.json()["detail"].startswith(said), path
        assert len(response.content) < 300, path


def test_opml_lists_every_feed(seeded_server: tuple[str, str], client: httpx.Client) -> None:
    base, _ = seeded_server
    response = client.get(f"{base}/opml?format=rss")
    assert response.headers["content-type"] == "text/x-opml; charset=utf-8"
    root = ElementTree.fromstring(response.content)
    urls = [str(o.get("xmlUrl")) for o in root.iter("outline") if o.get("xmlUrl")]
    # Everything, 5 organisations, 5 people and 5 posts.
    assert len(urls) == len(set(urls)) == 16
    assert f"{base}/feeds/all.rss" in urls and f"{base}/feeds/org/ice-hsi.rss" in urls
    for url in urls:
        assert client.get(url, headers=IDENTITY).status_code == 200
    # an organisation's feed links to its own page, which shows it, a post's to its
    # organisation's, the others to the overview
    pages = {o.get("xmlUrl"): o.get("htmlUrl") for o in root.iter("outline") if o.get("xmlUrl")}
    # in the language of the list, as the feed's own home link is
    assert pages[f"{base}/feeds/org/ice-hsi.rss"] == f"{base}/?org=ice-hsi&lang=en"
    assert pages[f"{base}/feeds/post/ice-hsi-ead.rss"] == f"{base}/?org=ice-hsi&lang=en"
    assert pages[f"{base}/feeds/person/derek-gordon.rss"] == f"{base}/?lang=en"
    page = client.get(pages[f"{base}/feeds/org/ice-hsi.rss"])
    assert page.status_code == 200 and f'href="{base}/feeds/org/ice-hsi.rss?lang=en"' in page.text
    feed = client.get(f"{base}/feeds/org/ice-hsi.rss", headers=IDENTITY).text
    assert f"<link>{base}/?org=ice-hsi&amp;lang=en</link>" in feed
    again = client.get(
        f"{base}/opml?format=rss", headers={"If-None-Match": response.headers["etag"]}
    )
    assert again.status_code == 304


def test_the_cli_writes_the_same_document_the_server_sends(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, database = seeded_server
    assert serve_commands.feed_command.name == "feed"
    for scope, path, extra in (
        ("org:ice", "/feeds/org/ice.rss", []),
        ("all", "/feeds/all.rss?lang=fr", ["--lang", "fr"]),
    ):
        result = CliRunner().invoke(
            main,
            [
                "--db",
                database,
                "feed",
                "--scope",
                scope,
                "--format",
                "rss",
                "--base-url",
                base,
                *extra,
            ],
        )
        assert result.exit_code == 0, result.output
        served = client.get(base + path, headers=IDENTITY)
        assert result.stdout_bytes == served.content


async def _append_more(database: str) -> None:
    log = await EventLog.open(database)
    try:
        await add_claims(log, 1000, 20)
        await correct(log, GENALO_RETIREMENT, capacity="permanent")
    finally:
        await log.close()


def test_full_archive_pages_are_immutable_while_the_feed_moves_on(
    archive_server: tuple[str, str], client: httpx.Client
) -> None:
    base, database = archive_server
    pages = {n: client.get(f"{base}/feeds/all.atom?page={n}", headers=IDENTITY) for n in (1, 2, 3)}
    for number, response in pages.items():
        assert response.status_code == 200
        assert atom_problems(response.content) == []
        expected = FULL_ARCHIVE_CACHE if number < 3 else SUBSCRIPTION_CACHE
        assert response.headers["cache-control"] == expected
    subscription = client.get(f"{base}/feeds/all.atom", headers=IDENTITY)
    assert f'href="{base}/feeds/all.atom?page=2" rel="prev-archive"' in subscription.text

    asyncio.run(_append_more(database))
    moved = _wait_for_change(client, f"{base}/feeds/all.atom", subscription.headers["etag"])
    assert "Changed capacity" in moved.text
    assert f'href="{base}/feeds/all.atom?page=2" rel="prev-archive"' in moved.text
    for number in (1, 2):
        again = client.get(f"{base}/feeds/all.atom?page={number}", headers=IDENTITY)
        assert again.content == pages[number].content
        assert again.headers["etag"] == pages[number].headers["etag"]
        assert again.headers["last-modified"] == pages[number].headers["last-modified"]
        cached = client.get(
            f"{base}/feeds/all.atom?page={number}",
            headers={"If-None-Match": pages[number].headers["etag"]},
        )
        assert cached.status_code == 304
    third = client.get(f"{base}/feeds/all.atom?page=3", headers=IDENTITY)
    assert third.headers["etag"] != pages[3].headers["etag"]


def test_last_modified_is_left_out_while_its_second_is_still_running() -> None:
    changed = dt.datetime(2025, 6, 1, 12, 0, 0, 250_000, tzinfo=dt.UTC)
    validators = Validators(7, 'W/"7-atom"', changed, SUBSCRIPTION_CACHE)
    during = caching_headers(validators, "en", now=changed + dt.timedelta(milliseconds=500))
    after = caching_headers(validators, "en", now=changed + dt.timedelta(seconds=1))
    assert "Last-Modified" not in during and during["ETag"] == 'W/"7-atom"'
    assert after["Last-Modified"] == "Sun, 01 Jun 2025 12:00:00 GMT"


async def _correct(database: str, capacity: str) -> None:
    async with await EventLog.open(database) as log:
        await correct(log, GENALO_RETIREMENT, capacity=capacity)


def test_if_modified_since_never_hides_a_change_made_in_the_same_second(
    tmp_path: Path, client: httpx.Client
) -> None:
    """Two changes in one second share an HTTP date; a reader sending only If-Modified-Since
    must still get the second one."""
    database = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    with running(create_app(database, seeds=SEEDS)) as base:
        url = f"{base}/feeds/org/ice.atom"
        etag = client.get(url, headers=IDENTITY).headers["etag"]
        for capacity in ("permanent", "interim", "acting", "permanent"):
            asyncio.run(_correct(database, capacity))
            first = _wait_for_change(client, url, etag)
            asyncio.run(
                _correct(database, "unspecified" if capacity != "unspecified" else "acting")
            )
            second = _wait_for_change(client, url, first.headers["etag"])
            etag = second.headers["etag"]
            if "last-modified" in first.headers:
                since = {"If-Modified-Since": first.headers["last-modified"], **IDENTITY}
                again = client.get(url, headers=since)
                assert again.status_code == 200
                assert again.content == second.content


def test_last_modified_appears_once_its_second_is_over_though_the_document_is_cached(
    tmp_path: Path, client: httpx.Client
) -> None:
    database = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    with running(create_app(database, seeds=SEEDS)) as base:
        url = f"{base}/feeds/org/ice.atom"
        etag = client.get(url, headers=IDENTITY).headers["etag"]
        asyncio.run(_correct(database, "permanent"))
        first = _wait_for_change(client, url, etag)
        # whether or not the first answer came within the change's second, a later one
        # (from the same rendered document) carries Last-Modified
        time.sleep(1.1)
        later = client.get(url, headers=IDENTITY)
        assert later.headers["etag"] == first.headers["etag"]
        assert "last-modified" in later.headers
        revalidated = client.get(url, headers={"If-None-Match": first.headers["etag"]})
        assert revalidated.status_code == 304
        assert revalidated.headers["last-modified"] == later.headers["last-modified"]


def test_a_full_page_sends_last_modified_at_once_as_it_never_changes() -> None:
    changed = dt.datetime(2025, 6, 1, 12, 0, 0, 250_000, tzinfo=dt.UTC)
    validators = Validators(7, 'W/"7-atom"', changed, FULL_ARCHIVE_CACHE)
    during = caching_headers(validators, "en", now=changed + dt.timedelta(milliseconds=500))
    assert during["Last-Modified"] == "Sun, 01 Jun 2025 12:00:00 GMT"


def test_a_public_url_is_used_for_links_whatever_the_host_header_says(
    tmp_path: Path, client: httpx.Client
) -> None:
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    public = "https://feeds.example.org/leaders"
    with running(create_app(url, seeds=SEEDS, public_url=public + "/")) as base:
        forged = {"Host": "evil.example", **IDENTITY}
        feed = client.get(f"{base}/feeds/all.atom", headers=forged)
        assert f'href="{public}/feeds/all.atom" rel="self"' in feed.text
        assert "evil.example" not in feed.text
        opml = client.get(f"{base}/opml", headers=forged)
        assert "evil.example" not in opml.text and public in opml.text
        page = client.get(f"{base}/", headers=forged)
        assert "evil.example" not in page.text
        moved = client.get(f"{base}/feeds/all.atom?lang=EN", headers=forged, follow_redirects=False)
        # Readers came through the public address (a proxy may strip its path): they are
        # sent back under it, not to the root of its host.
        assert moved.headers["location"] == f"{public}/feeds/all.atom?lang=en"
        slashed = client.get(f"{base}/feeds/all.atom/", headers=forged, follow_redirects=False)
        assert slashed.headers["location"] == f"{public}/feeds/all.atom"
        home = client.get(f"{base}/?lang=EN", headers=forged, follow_redirects=False)
        assert home.headers["location"] == f"{public}/?lang=en"


def test_redirects_under_a_public_url_with_an_international_host_lead_where_its_links_do(
    tmp_path: Path, client: httpx.Client
) -> None:
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    # The host as readers resolve it (IDNA), the path's letters escaped as UTF-8.
    public = "https://xn--bcher-kva.example/f%C3%BChrer"
    with running(
        create_app(url, seeds=SEEDS, public_url="https://b\u00fccher.example/f\u00fchrer")
    ) as base:
        feed = client.get(f"{base}/feeds/all.rss?lang=en", headers=IDENTITY)
        assert f'href="{public}/feeds/all.rss?lang=en" rel="self"' in feed.text
        moved = client.get(f"{base}/feeds/all.rss?lang=EN", follow_redirects=False)
        assert moved.status_code == 308
        # Where the document's own self link says it is, not to a host written
        # %C3%BC, which no resolver finds.
        assert moved.headers["location"] == f"{public}/feeds/all.rss?lang=en"
        slashed = client.get(f"{base}/feeds/all.rss/", follow_redirects=False)
        assert slashed.headers["location"] == f"{public}/feeds/all.rss"
        home = client.get(f"{base}/?lang=EN", follow_redirects=False)
        assert home.headers["location"] == f"{public}/?lang=en"


def test_every_link_under_a_public_url_with_an_international_host_is_a_uri(
    tmp_path: Path, client: httpx.Client
) -> None:
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    public = "https://xn--bcher-kva.example/f%C3%BChrer"
    given = "https://b\u00fccher.example/f\u00fchrer"
    with running(create_app(url, seeds=SEEDS, public_url=given)) as base:
        atom = client.get(f"{base}/feeds/org/ice.atom", headers=IDENTITY)
        assert f'href="{public}/feeds/org/ice.atom" rel="self"' in atom.text
        # An IRI whose path has a segment this long is what the W3C Feed Validator refuses.
        claim = "fox-ice-shakeup-2025-05-hammer-reassignment"
        assert f'href="{public}/api/claims/{claim}" rel="related"' in atom.text
        for path in ("/feeds/org/ice.atom", "/", "/opml"):
            document = client.get(base + path, headers=IDENTITY).text
            assert "b\u00fccher" not in document and "f\u00fchrer" not in document, path
    written = CliRunner().invoke(
        main, ["--db", url, "feed", "--scope", "org:ice", "--base-url", given]
    )
    assert written.exit_code == 0, written.output
    assert written.stdout_bytes == atom.content


@pytest.mark.parametrize(
    "public",
    [
        "feeds.example.org",
        "ftp://feeds.example.org",
        "https://x.org/?a=1",
        "https://",
        "https://:80",
        "https://exa mple.org",
        "https://x.org/a b",
        "https://x.org:99999",
        "https://x.org:0",
        "https://x.org/leaders?",
        "https://x.org/leaders#",
    ],
)
def test_a_public_url_that_is_not_an_http_address_is_refused(public: str) -> None:
    with pytest.raises(ValueError, match="public URL"):
        create_app("sqlite:///unused.db", public_url=public)


def test_a_public_url_s_scheme_is_taken_in_any_case_and_linked_in_lower_case() -> None:
    assert check_public_url("HTTPS://feeds.example.org/leaders/") == (
        "https://feeds.example.org/leaders"
    )
    assert check_public_url("Http://feeds.example.org") == "http://feeds.example.org"


@pytest.mark.parametrize("public", ["https://user:secret@feeds.example.org", "https://@x.org"])
def test_a_public_url_with_a_user_name_or_password_is_refused(public: str) -> None:
    with pytest.raises(ValueError, match="has a user name or password"):
        create_app("sqlite:///unused.db", public_url=public)


@pytest.mark.parametrize(
    ("server", "host", "expected"),
    [
        (("::1", 8000), "", "http://[::1]:8000"),
        (("127.0.0.1", 8000), "x.example:99999", "http://127.0.0.1:8000"),
        (("127.0.0.1", 8000), "x.example:8080", "http://x.example:8080"),
        # Bracketed like an IPv6 address, but none: no feed can carry it as a link.
        (("127.0.0.1", 8000), "[1:2]", "http://127.0.0.1:8000"),
        (("127.0.0.1", 8000), "[1.2.3.4]:8080", "http://127.0.0.1:8000"),
        (("127.0.0.1", 8000), "[::1::2]", "http://127.0.0.1:8000"),
        (("127.0.0.1", 8000), "[2001:db8::1]:8080", "http://[2001:db8::1]:8080"),
        (("127.0.0.1", 8000), "[::ffff:1.2.3.4]", "http://[::ffff:1.2.3.4]"),
    ],
)
def test_links_fall_back_to_the_server_s_own_address_written_as_a_url(
    server: tuple[str, int], host: str, expected: str
) -> None:
    """Without a usable Host header (none, or one with a port no URL can carry)."""
    app = create_app("sqlite:///unused.db")
    headers = [(b"host", host.encode())] if host else []
    scope = {"type": "http", "app": app, "server": server, "scheme": "http", "headers": headers}
    assert base_url(Request(scope)) == expected


@pytest.mark.parametrize(
    ("scheme", "expected"),
    [("http", "http"), ("https", "https"), ("ws", "http"), ("wss", "https"), ("WSS", "https")],
)
def test_links_are_http_or_https_whatever_scheme_a_proxy_forwarded(
    scheme: str, expected: str
) -> None:
    # given a request whose scheme a trusted proxy set (uvicorn's --proxy-headers takes
    # X-Forwarded-Proto ws and wss for plain HTTP requests too)
    app = create_app("sqlite:///unused.db")
    headers = [(b"host", b"x.example")]
    scope = {"type": "http", "app": app, "server": ("127.0.0.1", 8000), "headers": headers}
    # when links are written, then they are http(s) links, secure when the proxy's was
    assert base_url(Request({**scope, "scheme": scheme})) == f"{expected}://x.example"


@pytest.mark.parametrize("path", ["/feeds/all.atom", "/feeds/all.json", "/opml", "/"])
def test_a_host_header_in_brackets_that_is_no_ipv6_address_is_neither_linked_nor_a_500(
    seeded_server: tuple[str, str], client: httpx.Client, path: str
) -> None:
    base, _ = seeded_server
    # given a client sending a Host header shaped like an IPv6 literal that is none
    # when it asks for a document
    response = client.get(base + path, headers={"Host": "[1:2]"})
    # then it is served (Host only says where links point), its links naming the server's
    # own address, as for any other Host header that is no host and port
    assert response.status_code == 200, response.text[:300]
    assert "//[1:2]" not in response.text


def test_links_and_redirects_stay_under_the_root_path_the_app_is_mounted_at() -> None:
    # given the app mounted under /leaders (`uvicorn --root-path /leaders`, or another app
    # mounting it), with no public URL configured
    app = create_app("sqlite:///unused.db")
    headers = [(b"host", b"x.example:8080")]
    scope = {
        "type": "http",
        "app": app,
        "server": ("127.0.0.1", 8000),
        "scheme": "http",
        "headers": headers,
        "root_path": "/leaders/",
    }
    # when links and redirects are written
    # then they start under that path (without a doubled slash)
    assert base_url(Request(scope)) == "http://x.example:8080/leaders"
    assert redirect_root(Request(scope)) == "/leaders"


def test_a_language_parameter_whose_name_is_percent_encoded_is_sent_to_its_one_spelling(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    # given an address naming lang with an escaped letter (%6C is "l"), other parameters kept
    cases = {
        "/feeds/all.atom?%6Cang=pt-BR": "/feeds/all.atom?lang=pt",
        "/feeds/all.atom?x=1&l%61ng=EN&y=2": "/feeds/all.atom?x=1&y=2&lang=en",
    }
    for path, canonical in cases.items():
        # when it is asked for, then it is redirected to lang once, in its one spelling
        response = client.get(base + path, follow_redirects=False)
        assert response.status_code == 308, path
        assert response.headers["location"] == canonical
        # and that address is served
        assert client.get(base + canonical, follow_redirects=False).status_code == 200


@pytest.mark.parametrize(
    "path", ["/feeds/all.atom?lang=fr", "/feeds/org/ice.rss?lang=fr", "/opml?lang=fr"]
)
def test_a_304_for_a_document_in_another_language_says_that_language(
    seeded_server: tuple[str, str], client: httpx.Client, path: str
) -> None:
    base, _ = seeded_server
    # given a reader holding the French document
    first = client.get(base + path)
    assert first.headers["content-language"] == "fr"
    # when it asks whether its copy is current
    again = client.get(base + path, headers={"If-None-Match": first.headers["etag"]})
    # then the 304 says French, as the 200 did: a cache refreshes its stored headers from it
    assert again.status_code == 304
    assert again.headers["content-language"] == "fr"


def test_an_opml_asked_for_in_a_language_subscribes_to_the_feeds_in_it(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    # given the OPML list asked for in French in its address
    response = client.get(f"{base}/opml?lang=fr")
    root = ElementTree.fromstring(response.content)
    # when its feeds are read
    urls = [str(o.get("xmlUrl")) for o in root.iter("outline") if o.get("xmlUrl")]
    # then each is the French feed (in Atom, unless told), whatever a reader's client asks for
    assert f"{base}/feeds/all.atom?lang=fr" in urls
    assert all(url.endswith("?lang=fr") for url in urls), urls
    # while the list asked for by Accept-Language alone subscribes to feeds that negotiate
    negotiated = client.get(f"{base}/opml", headers={"Accept-Language": "fr"})
    assert negotiated.headers["content-language"] == "fr"
    outlines = ElementTree.fromstring(negotiated.content).iter("outline")
    assert not [o for o in outlines if "?lang=" in str(o.get("xmlUrl", ""))]
