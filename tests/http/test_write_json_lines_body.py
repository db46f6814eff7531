"""``POST /api/events`` given JSON Lines, the format ``leaderlog import`` reads: a ``400`` that
says how to send several records (one JSON list), nothing written; the list it asks for is
appended."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from tests.http.server import WriteServer, write_server

HINT = "a body is one JSON value: send several records as one list, [{...}, {...}]"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WriteServer]:
    with write_server(tmp_path_factory.mktemp("json-lines")) as started:
        yield started


def person(slug: str) -> dict[str, object]:
    return {"type": "person.registered", "data": {"person": slug, "name": "P"}}


def send(server: WriteServer, body: bytes) -> httpx.Response:
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}
    return httpx.post(f"{server.base_url}/api/events", content=body, headers=headers, timeout=30)


def log_head(server: WriteServer) -> tuple[int, str | None]:
    report = httpx.get(f"{server.base_url}/api/verify", timeout=30).json()
    assert report["ok"] is True, report
    return report["count"], report["head_hash"]


def json_lines(*slugs: str) -> bytes:
    return b"".join(json.dumps(person(slug)).encode() + b"\n" for slug in slugs)


@pytest.mark.parametrize(
    ("body", "where"),
    [
        # A file of records as import reads it (curl --data-binary @records.jsonl).
        (json_lines("lines-a", "lines-b"), "line 2, column 1"),
        # The same file sent with curl -d, which drops the line ends.
        (json_lines("joined-a", "joined-b").replace(b"\n", b""), "line 1, column 75"),
    ],
    ids=["json-lines", "line-ends-dropped"],
)
def test_several_json_values_are_400_saying_to_send_one_list(
    server: WriteServer, body: bytes, where: str
) -> None:
    before = log_head(server)
    answer = send(server, body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == "bad_json"
    assert answer.json()["detail"] == (
        f"the body is not valid JSON: unexpected content after document at {where} ({HINT}; "
        "JSON Lines are for leaderlog import)"
    )
    assert log_head(server) == before


def test_the_list_it_asks_for_is_appended(server: WriteServer) -> None:
    body = json.dumps([person("listed-a"), person("listed-b")]).encode()
    answer = send(server, body)
    assert answer.status_code == 201, answer.text
    assert answer.json()["appended"] == 2


def test_other_malformed_json_gets_no_such_advice(server: WriteServer) -> None:
    answer = send(server, b'{"type": "person.registered",}')
    assert answer.status_code == 400, answer.text
    assert HINT not in answer.json()["detail"]
