"""``POST /api/events``: the forms of Authorization, Content-Type and Content-Encoding a writer
may send, and what a refused one is answered with."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from tests.http.server import WriteServer, write_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WriteServer]:
    with write_server(tmp_path_factory.mktemp("request-headers")) as started:
        yield started


def record(slug: str) -> bytes:
    return json.dumps({"type": "person.registered", "data": {"person": slug, "name": "P"}}).encode()


def post(server: WriteServer, slug: str, headers: dict[str, str]) -> httpx.Response:
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        return client.post("/api/events", content=record(slug), headers=headers)


def test_spaces_between_bearer_and_the_token_are_not_part_of_it(server: WriteServer) -> None:
    # given a valid token sent with two spaces after the word Bearer
    headers = {"Authorization": f"Bearer  {server.token}", "Content-Type": "application/json"}

    # when a record is posted
    response = post(server, "token-spaces", headers)

    # then the token is read without the space, and the record appended
    assert response.status_code == 201, response.text


@pytest.mark.parametrize("charset", ["utf-8", "UTF-8", "utf8", "UTF8"])
def test_both_spellings_of_the_utf8_charset_are_accepted(server: WriteServer, charset: str) -> None:
    # given a Content-Type naming UTF-8 in either spelling
    headers = {
        "Authorization": f"Bearer {server.token}",
        "Content-Type": f"application/json; charset={charset}",
    }

    # when a record is posted
    response = post(server, f"charset-{charset.lower()}-{sum(map(str.isupper, charset))}", headers)

    # then it is read as the JSON it is
    assert response.status_code == 201, response.text


@pytest.mark.parametrize("encoding", ["", "identity", "Identity"])
def test_a_content_encoding_of_no_compression_is_accepted(
    server: WriteServer, encoding: str
) -> None:
    # given a Content-Encoding saying the body is not compressed (empty, or identity in any case)
    headers = {
        "Authorization": f"Bearer {server.token}",
        "Content-Type": "application/json",
        "Content-Encoding": encoding,
    }

    # when a record is posted
    response = post(server, f"encoding-{len(encoding)}-{sum(map(str.isupper, encoding))}", headers)

    # then it is appended
    assert response.status_code == 201, response.text


def test_a_compressed_body_is_415_saying_what_is_accepted(server: WriteServer) -> None:
    # given a Content-Encoding of a compression
    headers = {
        "Authorization": f"Bearer {server.token}",
        "Content-Type": "application/json",
        "Content-Encoding": "gzip",
    }

    # when a record is posted
    response = post(server, "gzip-body", headers)

    # then it is 415, and the answer says (Accept-Encoding, RFC 9110) to send it uncompressed
    assert response.status_code == 415, response.text
    assert response.headers["Accept-Encoding"] == "identity"
    assert response.json()["error"] == "unsupported_media_type"
