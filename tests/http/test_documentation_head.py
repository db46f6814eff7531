"""HEAD works on every GET route, the API's documentation pages included: a link checker or
a monitor asking for the headers of /docs must not be told that the page takes no HEAD."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from tests.http.server import running, seeded_database


@pytest.mark.parametrize("path", ["/docs", "/redoc", "/docs/oauth2-redirect", "/openapi.json"])
def test_head_gets_the_headers_of_a_documentation_page(
    seeded_server: tuple[str, str], client: httpx.Client, path: str
) -> None:
    base, _ = seeded_server
    got = client.get(f"{base}{path}")
    head = client.head(f"{base}{path}")
    assert got.status_code == 200
    assert head.status_code == 200, head.text
    assert head.content == b""
    assert head.headers["content-type"] == got.headers["content-type"]
    assert head.headers["content-length"] == got.headers["content-length"]


def test_a_documentation_page_lists_head_among_its_methods(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    refused = client.delete(f"{base}/docs")
    assert refused.status_code == 405
    assert refused.headers["allow"] == "GET, HEAD"


def test_the_documentation_lists_no_head_operations(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    paths = client.get(f"{base}/openapi.json").json()["paths"]
    assert "/docs" not in paths
    assert not [path for path, operations in paths.items() if "head" in operations]


@pytest.mark.parametrize("path", ["/docs", "/redoc"])
def test_a_documentation_page_says_its_language(
    seeded_server: tuple[str, str], client: httpx.Client, path: str
) -> None:
    # as every other page does, for screen readers to read it in English
    base, _ = seeded_server
    got = client.get(f"{base}{path}")
    assert got.status_code == 200
    assert '<html lang="en" dir="ltr">' in got.text
    head = client.head(f"{base}{path}")
    assert head.headers["content-length"] == got.headers["content-length"]


@pytest.mark.parametrize("path", ["/docs", "/redoc"])
def test_a_documentation_page_under_a_public_path_loads_what_it_needs_from_there(
    tmp_path: Path, client: httpx.Client, path: str
) -> None:
    # Behind a proxy serving the server under /leaders (and stripping it), the overview's
    # link to /leaders/docs opened a blank page: it loaded its scripts, styles and schema
    # from the host's root, where the proxy has nothing.
    from leaderlog.http import create_app

    app = create_app(seeded_database(tmp_path), public_url="https://example.org/leaders")
    with running(app) as base:
        page = client.get(f"{base}{path}").text
        loaded = re.findall(r"""(?:src|href|url)[=:]\s*['"](/[^'"]+)['"]""", page)
        assert loaded and all(address.startswith("/leaders/") for address in loaded), loaded
        # and each is there once the proxy has taken the path off again
        for address in loaded:
            assert client.get(f"{base}{address[len('/leaders') :]}").status_code == 200, address
        # Swagger UI's tries go to the API under the same path
        assert client.get(f"{base}/openapi.json").json()["servers"] == [{"url": "/leaders"}]


def test_at_the_root_of_a_host_the_documentation_loads_from_the_root(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    page = client.get(f"{base}/docs").text
    assert "'/openapi.json'" in page and '"/static-offline-docs/swagger-ui.css"' in page
    assert "servers" not in client.get(f"{base}/openapi.json").json()


def test_a_quote_in_the_public_path_cannot_end_a_string_of_the_documentation(
    tmp_path: Path, client: httpx.Client
) -> None:
    from leaderlog.http import create_app

    app = create_app(seeded_database(tmp_path), public_url="https://example.org/o'brien")
    with running(app) as base:
        page = client.get(f"{base}/docs").text
    assert "url: '/o%27brien/openapi.json'" in page
    assert "o'brien" not in page
