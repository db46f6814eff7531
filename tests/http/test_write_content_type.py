"""``POST /api/events`` with a Content-Type the MIME parser finds hard to read: refused with
415, never a 500, and nothing written; a refused header value is repeated only in part, as
every error repeats what it was given."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from tests.http.server import WriteServer, write_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WriteServer]:
    with write_server(tmp_path_factory.mktemp("content-type")) as started:
        yield started


def log_head(client: httpx.Client) -> tuple[int, str | None]:
    report = client.get("/api/verify").json()
    assert report["ok"] is True, report
    return report["count"], report["head_hash"]


def record(slug: str) -> bytes:
    return json.dumps({"type": "person.registered", "data": {"person": slug, "name": "P"}}).encode()


@pytest.mark.parametrize(
    ("content_type", "detail"),
    [
        # RFC 2231 values the standard parser fails on while decoding them.
        ("application/json; charset*=utf-16''utf-8", "send Content-Type: application/json"),
        ("application/json; x*=utf-16''abc", "send Content-Type: application/json"),
        ("application/json;x*1*", "send Content-Type: application/json"),
        # Comments nested deeper than the parser's recursion goes.
        ("application/json" + "(" * 600, "send Content-Type: application/json"),
        # A charset is given, yet not UTF-8: empty, or not ASCII.
        ("application/json; charset=", "charset '': send the JSON as UTF-8"),
        ("application/json; charset*=utf-16''", "charset '': send the JSON as UTF-8"),
        (
            "application/json; charset=latin1\u00e9",
            "charset 'latin1\u00e9': send the JSON as UTF-8",
        ),
    ],
    ids=[
        "rfc2231-utf16-value",
        "rfc2231-utf16-other",
        "continuation-alone",
        "nested-comments",
        "empty",
        "rfc2231-empty",
        "not-ascii",
    ],
)
def test_an_unreadable_content_type_is_415_and_writes_nothing(
    server: WriteServer, content_type: str, detail: str
) -> None:
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        before = log_head(client)
        response = client.post(
            "/api/events",
            content=record(f"unreadable-type-{len(content_type)}"),
            headers={
                b"Authorization": f"Bearer {server.token}".encode(),
                # Latin-1, as header bytes are on the wire.
                b"Content-Type": content_type.encode("latin-1"),
            },
        )
        assert response.status_code == 415, response.text
        assert response.json() == {"error": "unsupported_media_type", "detail": detail}
        assert log_head(client) == before


def test_a_readable_utf8_charset_is_still_accepted(server: WriteServer) -> None:
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        response = client.post(
            "/api/events",
            content=record("readable-charset"),
            headers={
                "Authorization": f"Bearer {server.token}",
                "Content-Type": "application/json; charset*=us-ascii''utf-8",
            },
        )
        assert response.status_code == 201, response.text


@pytest.mark.parametrize(
    ("header", "value", "detail"),
    [
        (
            "Content-Type",
            "application/json; charset=" + "x" * 5000,
            f"charset '{'x' * 57}...': send the JSON as UTF-8",
        ),
        (
            "Content-Encoding",
            "x" * 5000,
            f"Content-Encoding '{'x' * 57}...' is not accepted: send the JSON uncompressed",
        ),
    ],
    ids=["charset", "content-encoding"],
)
def test_a_refused_header_value_is_repeated_only_in_part(
    server: WriteServer, header: str, value: str, detail: str
) -> None:
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        before = log_head(client)
        headers = {
            "Authorization": f"Bearer {server.token}",
            "Content-Type": "application/json",
            header: value,
        }
        response = client.post("/api/events", content=record("long-header"), headers=headers)
        assert response.status_code == 415, response.text
        assert response.json()["detail"] == detail
        assert log_head(client) == before
