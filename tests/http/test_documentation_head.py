"""HEAD works on every GET route, the API's documentation pages included: a link checker or
a monitor asking for the headers of /docs must not be told that the page takes no HEAD."""

from __future__ import annotations

import httpx
import pytest


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
