"""A server whose public address has a path (``--public-url https://example.org/leaders``)
answers under that path as at its root: a reverse proxy that passes the path on (nginx's
``proxy_pass`` without a trailing ``/``, Caddy's ``handle``, Traefik without StripPrefix)
got a 404 for every address, while one that strips it must keep working."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from leaderlog.http import create_app
from leaderlog.http._public_path import OWN_SEGMENTS
from tests.http.server import running, seeded_database

PUBLIC = "https://example.org/leaders"
IDENTITY = {"Accept-Encoding": "identity"}


@pytest.fixture(scope="module")
def under_leaders(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server told it is reached at PUBLIC: its base URL."""
    url = seeded_database(tmp_path_factory.mktemp("under-leaders"))
    with running(create_app(url, public_url=PUBLIC)) as base:
        yield base


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30, headers=IDENTITY) as session:
        yield session


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/", 200),
        ("/feeds/all.atom", 200),
        ("/feeds/org/ice.rss?lang=fr", 200),
        ("/opml", 200),
        ("/api/state", 200),
        ("/docs", 200),
        ("/redoc", 200),
        ("/openapi.json", 200),
        ("/static-offline-docs/swagger-ui.css", 200),
        ("/?org=nope", 404),  # the overview's own 404 page
        ("/feeds/nope.atom", 404),
        ("/nothing-here", 404),
        ("/api/claims/ab%E9", 422),  # a path parameter read from the path as sent
    ],
)
def test_a_proxy_that_keeps_the_public_url_s_path_gets_what_one_that_strips_it_gets(
    under_leaders: str, client: httpx.Client, path: str, status: int
) -> None:
    # given a server told it is reached at https://example.org/leaders
    # when one proxy asks for an address with the path taken off and another with it kept
    stripped = client.get(f"{under_leaders}{path}")
    kept = client.get(f"{under_leaders}/leaders{path}")
    # then both get the same answer, to the byte, with the same validators
    assert kept.status_code == stripped.status_code == status, kept.text[:300]
    assert kept.content == stripped.content
    assert kept.headers.get("etag") == stripped.headers.get("etag")
    # and a copy either one holds is current for the other
    if etag := kept.headers.get("etag"):
        again = client.get(f"{under_leaders}{path}", headers={"If-None-Match": etag})
        assert again.status_code == 304


def test_pages_and_feeds_under_a_public_url_s_path_link_to_the_public_address(
    under_leaders: str, client: httpx.Client
) -> None:
    # given a server under /leaders, asked through a proxy that keeps the path
    # when it is asked for the path alone, a feed, the overview's 404 and a documentation page
    home = client.get(f"{under_leaders}/leaders")
    feed = client.get(f"{under_leaders}/leaders/feeds/all.atom")
    missing = client.get(f"{under_leaders}/leaders/?org=nope")
    docs = client.get(f"{under_leaders}/leaders/docs")
    # then the path alone is the overview, and every link names the public address
    assert home.status_code == 200 and home.content == client.get(f"{under_leaders}/").content
    assert f'href="{PUBLIC}/feeds/all.atom" rel="self"' in feed.text
    assert missing.status_code == 404 and f'href="{PUBLIC}/' in missing.text
    assert "'/leaders/openapi.json'" in docs.text
    assert client.get(f"{under_leaders}/leaders/openapi.json").json()["servers"] == [
        {"url": "/leaders"}
    ]


@pytest.mark.parametrize(
    ("asked", "location"),
    [
        ("/feeds/all.atom?lang=pt-BR", "/feeds/all.atom?lang=pt"),
        ("/feeds/all.atom?page=02", "/feeds/all.atom?page=2"),
        ("/feeds/all.atom/", "/feeds/all.atom"),
        ("/opml/?lang=EN", "/opml?lang=EN"),
        ("/?lang=EN", "/?lang=en"),
    ],
)
def test_redirects_under_a_public_url_s_path_lead_there_whichever_proxy_asked(
    under_leaders: str, client: httpx.Client, asked: str, location: str
) -> None:
    # given a server under /leaders
    for prefix in ("", "/leaders"):
        # when an address spelled another way is asked for, through either proxy
        moved = client.get(f"{under_leaders}{prefix}{asked}", follow_redirects=False)
        # then it is sent to the one address under the public one
        assert moved.status_code == 308, (prefix, moved.text)
        assert moved.headers["location"] == f"{PUBLIC}{location}", prefix


@pytest.mark.parametrize(
    ("asked", "status"),
    [
        ("/le%61ders/feeds/all.atom", 200),  # the path spelled with an escape
        ("/leadership", 404),  # the same letters, another segment
        ("/leadersfeeds/all.atom", 404),
        ("/LEADERS/feeds/all.atom", 404),  # a path is read as written
        ("/other/leaders/feeds/all.atom", 404),
    ],
)
def test_only_the_public_url_s_path_as_a_whole_segment_is_taken_off(
    under_leaders: str, client: httpx.Client, asked: str, status: int
) -> None:
    # given a server under /leaders, when an address near it is asked for
    response = client.get(f"{under_leaders}{asked}")
    # then only the path itself, as whole segments, leads into the server
    assert response.status_code == status, response.text[:200]


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_the_access_log_shows_the_path_a_proxy_kept_as_it_was_sent(
    under_leaders: str, client: httpx.Client
) -> None:
    # given the server's access log read
    access = logging.getLogger("uvicorn.access")
    lines, level = _Lines(), access.level
    access.addHandler(lines)
    access.setLevel(logging.INFO)
    try:
        # when a proxy that keeps the path asks for a feed
        assert client.get(f"{under_leaders}/leaders/feeds/all.atom?lang=fr").status_code == 200
    finally:
        access.removeHandler(lines)
        access.setLevel(level)
    # then the log says the path the server was sent, not the one it served it as
    assert any('"GET /leaders/feeds/all.atom?lang=fr HTTP/1.1" 200' in line for line in lines.lines)


def test_a_public_url_path_that_begins_as_the_server_s_own_addresses_must_be_stripped(
    tmp_path: Path, client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    # given a server told it is reached at https://example.org/feeds, whose own feeds are
    # under /feeds too: /feeds/all.atom could be a stripped /feeds/feeds/all.atom or a kept
    # /all.atom
    public = "https://example.org/feeds"
    with caplog.at_level(logging.WARNING, logger="leaderlog.http"):
        app = create_app(seeded_database(tmp_path), public_url=public)
    # then it says at start that only a proxy that strips the path serves it
    assert "the proxy in front must strip it" in caplog.text
    with running(app) as base:
        # when each proxy asks for its feed
        stripped = client.get(f"{base}/feeds/all.atom")
        kept = client.get(f"{base}/feeds/feeds/all.atom")
    # then the server's addresses are served as they are, as before: a stripping proxy is
    # answered, one keeping the path is not
    assert stripped.status_code == 200
    assert f'href="{public}/feeds/all.atom" rel="self"' in stripped.text
    assert kept.status_code == 404


def test_every_address_of_the_server_begins_with_a_segment_a_public_url_path_cannot_take(
    under_leaders: str, client: httpx.Client
) -> None:
    # given the server's addresses, those the schema lists and those of its documentation
    paths = [*client.get(f"{under_leaders}/openapi.json").json()["paths"]]
    paths += ["/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json", "/static-offline-docs/x"]
    # then each but the overview begins with a segment that a public path is not taken off
    # under (else a stripping proxy's request for it would lose that segment)
    for path in paths:
        assert path == "/" or path.split("/")[1] in OWN_SEGMENTS, path
