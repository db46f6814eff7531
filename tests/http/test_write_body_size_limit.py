"""``POST /api/events`` takes a body of at most ``MAX_BODY_BYTES`` (1 MiB), that many included:
whether the size is declared (Content-Length) or only counted while reading (chunked)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from leaderlog.http.write_routes import MAX_BODY_BYTES
from tests.http.server import WriteServer, answer_to_a_head, write_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WriteServer]:
    with write_server(tmp_path_factory.mktemp("body-size")) as started:
        yield started


def body_of(size: int, slug: str) -> bytes:
    """One valid record, padded with the whitespace JSON allows after a value to ``size``."""
    record = json.dumps({"type": "person.registered", "data": {"person": slug, "name": "P"}})
    body = record.encode() + b" " * (size - len(record))
    assert len(body) == size
    return body


def chunks(body: bytes) -> Iterator[bytes]:
    for start in range(0, len(body), 65_536):
        yield body[start : start + 65_536]


def headers(server: WriteServer) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_body_of_exactly_the_limit_is_appended(server: WriteServer, chunked: bool) -> None:
    # given a valid body of exactly MAX_BODY_BYTES bytes
    slug = f"body-at-limit-{'chunked' if chunked else 'declared'}"
    body = body_of(MAX_BODY_BYTES, slug)

    # when it is posted, its size declared or not
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        response = client.post(
            "/api/events", content=chunks(body) if chunked else body, headers=headers(server)
        )

    # then it is read whole and appended (the limit is "at most", not "less than")
    assert response.status_code == 201, response.text
    assert response.json()["appended"] == 1


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_body_one_byte_over_the_limit_is_413(server: WriteServer, chunked: bool) -> None:
    # given a valid body of MAX_BODY_BYTES + 1 bytes
    slug = f"body-over-limit-{'chunked' if chunked else 'declared'}"
    body = body_of(MAX_BODY_BYTES + 1, slug)

    # when it is posted
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        before = client.get("/api/verify").json()["count"]
        response = client.post(
            "/api/events", content=chunks(body) if chunked else body, headers=headers(server)
        )
        after = client.get("/api/verify").json()["count"]

    # then it is refused as too large, and nothing is written
    assert response.status_code == 413, response.text
    assert response.json() == {
        "error": "too_large",
        "detail": f"the body is over {MAX_BODY_BYTES} bytes",
    }
    assert after == before


def test_a_body_declared_over_the_limit_is_refused_before_it_is_asked_for(
    server: WriteServer,
) -> None:
    # given a writer that declares a body over the limit and waits for 100 Continue
    # when only the headers are sent
    answer = answer_to_a_head(
        server.base_url,
        server.token,
        f"Content-Type: application/json\r\nContent-Length: {MAX_BODY_BYTES + 1}\r\n",
    )
    # then the refusal comes first, without a 100 Continue asking for the body
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
