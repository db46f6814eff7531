"""``POST /api/events`` over real HTTP: tokens, status codes, hostile bodies, races, logging.

One uvicorn server on a free port of 127.0.0.1 serves a seeded SQLite log for the whole module.
Tests that write use their own slugs, and every refused request must leave the log's count
and head hash as they were.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import socket
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from fastapi import FastAPI

from leaderlog.cli import main
from leaderlog.cli import projection_commands as _projection_commands
from leaderlog.events import parse_event, parse_record
from leaderlog.http import create_app
from leaderlog.http._deps import Services
from leaderlog.http.write_routes import MAX_BODY_BYTES, MAX_DEPTH, MAX_RECORDS, write_router
from leaderlog.log import EventLog, load_seeds
from leaderlog.tokens import Tokens
from tests.cli.test_hostile_records import CASES, RETRACTED_CLAIM, SEED_FILE, Hostile
from tests.http.server import answer_to_a_head
from tests.http.server import running as serving

del _projection_commands  # imported for the `audit` command it registers

JSON = "application/json"


# --- the server and its logs ---------------------------------------------------------------


CLIENT_LOGGERS = ("httpx", "httpcore")


class LogCapture(logging.Handler):
    """The log records that reach it, formatted, exceptions included."""

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        # The test's own HTTP client logs too; only what the server side logs counts.
        if not record.name.startswith(CLIENT_LOGGERS):
            self.lines.append(self.format(record))

    def text(self) -> str:
        return "\n".join(self.lines)


# The server's loggers at every level; the root (everything else, libraries included) from INFO
# up, since library debug output is large and never sees a request's headers. uvicorn's own
# loggers do not propagate to the root, so the capture joins each of them.
CAPTURED_LOGGERS = {
    "": logging.INFO,
    "leaderlog": logging.DEBUG,
    "uvicorn": logging.DEBUG,
    "uvicorn.error": logging.DEBUG,
    "uvicorn.access": logging.DEBUG,
}


@contextmanager
def capturing_every_log() -> Iterator[LogCapture]:
    """Everything the server logs (access log included) while the block runs."""
    capture = LogCapture()
    loggers = {logging.getLogger(name): level for name, level in CAPTURED_LOGGERS.items()}
    saved = {logger: logger.level for logger in loggers}
    for logger, level in loggers.items():
        logger.addHandler(capture)
        logger.setLevel(level)
    try:
        yield capture
    finally:
        for logger, level in saved.items():
            logger.removeHandler(capture)
            logger.setLevel(level)


async def build_seeded_database(path: Path) -> str:
    """The seeds plus one retracted claim (the state the hostile table expects); its URL."""
    url = f"sqlite:///{path}"
    async with await EventLog.open(url) as log:
        await load_seeds(log, SEED_FILE.parent)
        retraction = parse_event(
            "claim.retracted", {"claim": RETRACTED_CLAIM, "reason": "The caption was wrong."}
        )
        await log.append_events([retraction], actor="test")
    return url


async def create_token(url: str, name: str) -> str:
    async with await EventLog.open(url) as log:
        return await Tokens(log.store).create(name)


async def revoke_token(url: str, name: str) -> None:
    async with await EventLog.open(url) as log:
        await Tokens(log.store).revoke(name)


@dataclass
class Running:
    base_url: str
    db_url: str
    token: str
    logs: LogCapture
    tokens_used: list[str] = field(default_factory=list)

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=30)


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    db_url = asyncio.run(build_seeded_database(tmp_path_factory.mktemp("write") / "log.db"))
    token = asyncio.run(create_token(db_url, "alice"))
    with serving(create_app(db_url)) as base_url, capturing_every_log() as logs:
        yield Running(base_url, db_url, token, logs, [token])


@pytest.fixture(scope="module")
def api(running: Running) -> Iterator[httpx.Client]:
    with running.client() as client:
        yield client


# --- helpers --------------------------------------------------------------------------------


def person(slug: str, name: str = "Test Person", **fields: Any) -> dict[str, Any]:
    return {"type": "person.registered", "data": {"person": slug, "name": name}, **fields}


def rename(slug: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"type": "person.updated", "data": {"person": slug, "name": name}, **fields}


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def post(
    client: httpx.Client,
    body: Any,
    token: str | None,
    *,
    content_type: str | None = JSON,
    headers: Mapping[str, str | bytes] | None = None,
) -> httpx.Response:
    given: dict[str, str | bytes] = dict(headers or {})
    if token is not None:
        given["Authorization"] = f"Bearer {token}"
    if content_type is not None:
        given["Content-Type"] = content_type
    # As bytes, so a test can send header values that are not ASCII.
    sent = {
        name.encode(): value if isinstance(value, bytes) else value.encode()
        for name, value in given.items()
    }
    content = body if isinstance(body, bytes | str) else json.dumps(body)
    return client.post("/api/events", content=content, headers=sent)


def log_head(api: httpx.Client) -> tuple[int, str | None]:
    """Count and head hash, after checking the chain is intact and gap-free."""
    report = api.get("/api/verify").json()
    assert report["ok"] is True, report
    assert report["count"] == report["head_position"]
    return report["count"], report["head_hash"]


def error_body(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(JSON)
    body: dict[str, Any] = response.json()
    assert body["error"] and body["detail"], body
    return body


def envelope(api: httpx.Client, position: int) -> dict[str, Any]:
    response = api.get(f"/api/events/{position}")
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


# --- the auth matrix ------------------------------------------------------------------------


def test_no_token_is_401_with_a_challenge(api: httpx.Client) -> None:
    before = log_head(api)
    response = post(api, person(unique("no-token")), None)
    body = error_body(response, 401)
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert body["detail"].startswith("send Authorization: Bearer <token>")
    assert "leaderlog token create" in body["detail"]
    assert log_head(api) == before


@pytest.mark.parametrize(
    "authorization",
    ["Basic YWxpY2U6c2VjcmV0", "Bearer", "Token abc", "{token}", "Bearer\t{token}"],
    ids=["basic", "bearer-alone", "other-scheme", "no-scheme", "tab-separated"],
)
def test_malformed_authorization_is_401(
    running: Running, api: httpx.Client, authorization: str
) -> None:
    before = log_head(api)
    header = authorization.replace("{token}", running.token)
    response = post(api, person(unique("malformed")), None, headers={"Authorization": header})
    detail = error_body(response, 401)["detail"]
    assert detail.startswith("the Authorization header sent is not the word Bearer, a space and")
    assert "www-authenticate" in response.headers
    assert log_head(api) == before


UNKNOWN_TOKENS: dict[str, Callable[[str], str]] = {
    "well-formed-unknown": lambda good: "ll_" + "A" * 43,
    "nonsense": lambda good: "nonsense",
    "longer": lambda good: good + "x",
    "shorter": lambda good: good[:-1],
    "other-case": lambda good: good.swapcase(),
    "non-ascii": lambda good: good[:-1] + "\u00e9",
}


@pytest.mark.parametrize("variant", UNKNOWN_TOKENS)
def test_unknown_token_is_403(running: Running, api: httpx.Client, variant: str) -> None:
    before = log_head(api)
    sent = UNKNOWN_TOKENS[variant](running.token)
    running.tokens_used.append(sent)
    # Header bytes are Latin-1 on the wire; a non-ASCII token must still just be unknown.
    header = f"Bearer {sent}".encode()
    response = post(api, person(unique("unknown")), None, headers={"Authorization": header})
    body = error_body(response, 403)
    assert sent not in response.text
    assert "unknown token" in body["detail"]
    assert log_head(api) == before


def test_token_revoked_through_the_cli_stops_working_at_once(
    running: Running, api: httpx.Client
) -> None:
    cli = CliRunner()
    created = cli.invoke(main, ["--db", running.db_url, "token", "create", "bob"])
    assert created.exit_code == 0, created.output
    token = created.stdout.strip()
    running.tokens_used.append(token)

    slug = unique("bob-first")
    accepted = post(api, person(slug), token)
    assert accepted.status_code == 201, accepted.text
    assert envelope(api, accepted.json()["positions"][0])["actor"] == "bob"

    revoked = cli.invoke(main, ["--db", running.db_url, "token", "revoke", "bob"])
    assert revoked.exit_code == 0, revoked.output
    before = log_head(api)
    refused = post(api, person(unique("bob-after")), token)
    assert "revoked" in error_body(refused, 403)["detail"]
    assert log_head(api) == before


def test_token_revoked_through_the_library_stops_working_at_once(
    running: Running, api: httpx.Client
) -> None:
    token = asyncio.run(create_token(running.db_url, "carol"))
    running.tokens_used.append(token)
    assert post(api, person(unique("carol-first")), token).status_code == 201
    asyncio.run(revoke_token(running.db_url, "carol"))
    before = log_head(api)
    error_body(post(api, person(unique("carol-after")), token), 403)
    assert log_head(api) == before


def test_a_write_the_projections_did_not_apply_in_time_says_so(
    running: Running, api: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given projections that do not get to a write within the wait
    async def too_slow(self: Services, position: int, timeout: float = 0.0) -> bool:
        return False

    monkeypatch.setattr(Services, "applied_through", too_slow)
    # then the write is answered all the same, saying the next read may not show it yet
    response = post(api, person(unique("slow-to-show")), running.token)
    assert response.status_code == 201, response.text
    assert response.json()["projected"] is False


def test_good_token_appends_as_its_actor_and_the_audit_lists_it(
    running: Running, api: httpx.Client
) -> None:
    count, _ = log_head(api)
    slug = unique("alice-wrote")
    response = post(api, person(slug), running.token)
    assert response.status_code == 201, response.text
    body = response.json()
    assert body == {
        "appended": 1,
        "already_present": 0,
        "positions": [count + 1],
        "projected": True,
    }
    stored = envelope(api, count + 1)
    assert stored["actor"] == "alice"
    assert stored["data"]["person"] == slug
    assert log_head(api)[0] == count + 1

    # the write is answered once the projections hold it, so the writer reads it back at once
    audit = api.get("/api/audit", params={"actor": "alice", "limit": 10_000}).json()
    assert count + 1 in [event["position"] for event in audit["events"]]
    assert {event["actor"] for event in audit["events"]} == {"alice"}

    result = CliRunner().invoke(
        main, ["--db", running.db_url, "audit", "--actor", "alice", "--limit", "10000", "--json"]
    )
    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)["events"]
    assert [event["stream"] for event in listed if event["position"] == count + 1] == [
        f"person-{slug}"
    ]


def test_a_writer_reads_its_own_writes_at_once(running: Running, api: httpx.Client) -> None:
    for _ in range(5):
        slug = unique("read-back")
        response = post(api, person(slug, "Read Back"), running.token)
        assert response.status_code == 201, response.text
        (position,) = response.json()["positions"]
        history = api.get("/api/history", params={"person": slug})
        assert history.status_code == 200, history.text
        known = api.get("/api/state", params={"org": "ice", "known_at": position})
        assert known.status_code == 200, known.text
        assert known.json()["known_at"]["position"] == position


def test_a_busy_database_is_503_with_retry_after_and_nothing_is_written(
    running: Running, api: httpx.Client
) -> None:
    count, head = log_head(api)
    # another process holds the write lock for longer than a writer waits (busy_timeout)
    holder = sqlite3.connect(running.db_url.removeprefix("sqlite:///"), isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        response = post(api, person(unique("busy")), running.token)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    body = error_body(response, 503)
    assert (body["error"], response.headers["retry-after"]) == ("unavailable", "1")
    assert "database is busy" in body["detail"]
    assert log_head(api) == (count, head)
    assert "Traceback" not in running.logs.text()


# --- status codes ---------------------------------------------------------------------------


def test_the_same_record_again_is_200_with_the_same_positions(
    running: Running, api: httpx.Client
) -> None:
    record = person(unique("twice"))
    first = post(api, record, running.token)
    assert first.status_code == 201, first.text
    before = log_head(api)
    again = post(api, record, running.token)
    assert again.status_code == 200, again.text
    assert again.json() == {**first.json(), "appended": 0, "already_present": 1}
    assert log_head(api) == before

    newcomer = person(unique("newcomer"))
    mixed = post(api, [record, newcomer], running.token)
    assert mixed.status_code == 201, mixed.text
    assert mixed.json()["appended"] == 1
    assert mixed.json()["already_present"] == 1
    assert mixed.json()["positions"][0] == first.json()["positions"][0]
    # positions follow the records, not their order in the log: a new record before one
    # already present gets the later position, listed first
    count, _ = log_head(api)
    latest = person(unique("latest"))
    new_first = post(api, [latest, record], running.token)
    assert new_first.status_code == 201, new_first.text
    assert new_first.json()["positions"] == [count + 1, first.json()["positions"][0]]


def test_a_list_is_one_batch_with_positions_in_record_order(
    running: Running, api: httpx.Client
) -> None:
    count, _ = log_head(api)
    slug = unique("batch")
    records = [person(slug), rename(slug, "Renamed Once"), rename(slug, "Renamed Twice")]
    response = post(api, records, running.token)
    assert response.status_code == 201, response.text
    assert response.json()["positions"] == [count + 1, count + 2, count + 3]
    assert [envelope(api, count + n)["version"] for n in (1, 2, 3)] == [1, 2, 3]


def test_expected_version_conflict_is_409(running: Running, api: httpx.Client) -> None:
    slug = unique("versioned")
    assert post(api, person(slug, expected_version="no_stream"), running.token).status_code == 201
    assert post(api, rename(slug, "Second", expected_version=1), running.token).status_code == 201
    before = log_head(api)
    for stale in (1, 0, 5, "no_stream"):
        response = post(api, rename(slug, "Stale", expected_version=stale), running.token)
        body = error_body(response, 409)
        assert f"person-{slug}" in body["detail"]
        assert "record 0" in body["detail"]
    assert log_head(api) == before


def test_event_id_reused_with_other_content_is_409(running: Running, api: httpx.Client) -> None:
    event_id = str(uuid.uuid4())
    assert (
        post(api, person(unique("id-owner"), event_id=event_id), running.token).status_code == 201
    )
    before = log_head(api)
    response = post(api, person(unique("id-thief"), event_id=event_id), running.token)
    assert event_id in error_body(response, 409)["detail"]
    assert log_head(api) == before


def test_an_event_id_conflict_names_the_record_of_the_batch_holding_it(
    running: Running, api: httpx.Client
) -> None:
    event_id = str(uuid.uuid4())
    owner = person(unique("id-owner"), event_id=event_id)
    assert post(api, owner, running.token).status_code == 201
    before = log_head(api)
    batch = [person(unique("innocent")), person(unique("id-thief"), event_id=event_id)]
    detail = error_body(post(api, batch, running.token), 409)["detail"]
    assert detail.startswith(f"record 1: event id {event_id} is already stored"), detail
    assert log_head(api) == before


def test_a_batch_breaking_a_rule_and_an_expected_version_is_422_naming_the_rule(
    running: Running, api: httpx.Client
) -> None:
    # Rules are checked before versions (422 before 409): a writer told only of the stale
    # version would fix it and be refused again for what it was not told.
    slug = unique("conflicted")
    assert post(api, person(slug), running.token).status_code == 201
    stale = rename(slug, "Stale", expected_version=5)
    unknown_claim = {"type": "claim.retracted", "data": {"claim": unique("nope"), "reason": "x"}}
    before = log_head(api)
    for records, broken in (([stale, unknown_claim], 1), ([unknown_claim, stale], 0)):
        body = error_body(post(api, records, running.token), 422)
        assert [(p["where"], p["rule"]) for p in body["problems"]] == [
            (f"record {broken}", "reference")
        ]
    # A record after the stale one is checked on what the stale one says.
    renamed_then_updated = [
        stale,
        {"type": "person.updated", "data": {"person": slug, "aliases": ["S"]}},
    ]
    assert (
        "expected version 5"
        in error_body(post(api, renamed_then_updated, running.token), 409)["detail"]
    )
    assert log_head(api) == before


def test_another_record_s_content_derived_id_cannot_be_taken(
    running: Running, api: httpx.Client
) -> None:
    # given a record someone will send without an id: its id is derived from its content
    victim = person(unique("victim"))
    victims_id = str(parse_record(victim).event_id)
    # when another writer sends other content under that id first, then it is refused
    before = log_head(api)
    squatter = person(unique("squatter"), event_id=victims_id)
    body = error_body(post(api, squatter, running.token), 422)
    assert "content-derived (version 5) id" in body["problems"][0]["message"]
    assert log_head(api) == before
    # and the record itself may carry its own derived id, as an export has it
    assert post(api, {**victim, "event_id": victims_id}, running.token).status_code == 201


def test_every_problem_is_named_by_record_and_field(running: Running, api: httpx.Client) -> None:
    before = log_head(api)
    records = [
        {"type": "person.registered", "data": {"person": "Not A Slug", "name": ""}},
        {"type": "claim.reported", "data": {"claim": "half-a-claim"}},
        person(unique("fine")),
    ]
    body = error_body(post(api, records, running.token), 422)
    problems = body["problems"]
    assert [problem["where"] for problem in problems] == ["record 0", "record 1"]
    first_fields = {entry["field"] for entry in problems[0]["fields"]}
    assert {"data.person", "data.name"} <= first_fields
    second_fields = {entry["field"] for entry in problems[1]["fields"]}
    assert {"data.source", "data.kind", "data.person", "data.post"} <= second_fields
    assert all(entry["problem"] for problem in problems for entry in problem["fields"])
    # a client showing only `detail` still says what to mend first
    assert body["detail"] == (
        f"record 0: {problems[0]['message']}; and 1 more problem; nothing was written"
    )
    assert log_head(api) == before


def test_one_refused_record_is_named_in_the_detail(running: Running, api: httpx.Client) -> None:
    before = log_head(api)
    body = error_body(
        post(
            api,
            {"type": "person.registered", "data": {"person": "Bad Slug", "name": "X"}},
            running.token,
        ),
        422,
    )
    [problem] = body["problems"]
    assert "Bad Slug" in problem["message"]
    assert body["detail"] == f"record 0: {problem['message']}; nothing was written"
    assert log_head(api) == before


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        ([], "schema"),
        ({}, "schema"),
        (json.dumps("just a string"), "schema"),
        (
            person(
                "spoofed",
                actor="cli",
                position=1,
                hash="0" * 64,
                recorded_at="2020-01-01T00:00:00Z",
            ),
            "envelope",
        ),
        (person("spoofed", actor="seed"), "envelope"),
        ({**person("oversized"), "meta": {"note": "n" * 70_000}}, "size"),
    ],
    ids=[
        "empty-list",
        "empty-object",
        "string",
        "export-envelope",
        "actor-field",
        "oversized-record",
    ],
)
def test_invalid_bodies_are_422(running: Running, api: httpx.Client, body: Any, rule: str) -> None:
    before = log_head(api)
    problems = error_body(post(api, body, running.token), 422)["problems"]
    assert [(problem["where"], problem["rule"]) for problem in problems] == [("record 0", rule)]
    assert log_head(api) == before


def test_envelope_fields_cannot_make_another_actor(running: Running, api: httpx.Client) -> None:
    slug = unique("impostor")
    record = person(
        slug,
        position=1,
        hash="0" * 64,
        actor="seed",
        recorded_at="2020-01-01T00:00:00Z",
        stream=f"person-{slug}",
    )
    before = log_head(api)
    problems = error_body(post(api, record, running.token), 422)["problems"]
    fields = {entry["field"] for entry in problems[0]["fields"]}
    assert fields == {"position", "hash", "actor", "recorded_at", "stream"}
    assert log_head(api) == before


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (b"{", "it ends before its JSON value does"),
        (b'{"type": "person.registered",}', "trailing comma is not allowed at line 1, column 29"),
        (b"\xff\xfe{}", "not UTF-8 text (byte 0xFF) at line 1, column 1"),
        (b"", "it is empty"),
        (b"  \n ", "it is empty"),
        (b"nul\x00l", "unexpected text where a JSON value should be at line 1, column 1"),
    ],
    ids=["unclosed", "trailing-comma", "not-utf8", "empty", "blank", "nul-byte"],
)
def test_malformed_json_is_400(
    running: Running, api: httpx.Client, body: bytes, detail: str
) -> None:
    before = log_head(api)
    answer = error_body(post(api, body, running.token), 400)
    assert answer["error"] == "bad_json"
    assert answer["detail"] == f"the body is not valid JSON: {detail}"
    assert log_head(api) == before


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            '{"type": "person.registered", "data": {"name": "Zo\u00eb"}}'.encode("latin-1"),
            "not UTF-8 text (byte 0xEB)",
        ),
        (
            b'{"type": "person.registered", "data": {"person": "a", "person": "b", "name": "N"}}',
            "the name 'person' appears twice in one object",
        ),
        (
            b'{"type": "person.registered", "data": {"person": "a", "name": "N"}, '
            b'"meta": {"n": 12345678901234567890.5}}',
            "number 12345678901234567890.5 has more digits than a 64-bit float holds",
        ),
    ],
    ids=["latin-1", "name-twice", "float-digits"],
)
def test_a_400_says_what_is_wrong_with_the_json(
    running: Running, api: httpx.Client, body: bytes, message: str
) -> None:
    detail = error_body(post(api, body, running.token), 400)["detail"]
    assert message in detail


@pytest.mark.parametrize(
    ("depth", "error"),
    [(MAX_DEPTH, "too_deep"), (300, "too_deep"), (1000, "too_deep"), (100_000, "too_deep")],
)
def test_deeply_nested_json_is_400_and_the_server_lives_on(
    running: Running, api: httpx.Client, depth: int, error: str
) -> None:
    """Past the parser's own limit it is not JSON to us; short of it, our limit answers.

    Canonical JSON cannot even encode a record nested a few hundred levels deep, so every
    such body must be refused before a record is built from it.
    """
    before = log_head(api)
    nested = "[" * depth + "]" * depth
    record = '{"type": "person.registered", "data": {"person": "deep", "name": "D"}, "meta": {"x": '
    response = post(api, f"{record}{nested}}}}}", running.token)
    assert error_body(response, 400)["error"] == error
    assert log_head(api) == before
    assert post(api, person(unique("after-deep")), running.token).status_code == 201


def test_nesting_up_to_the_limit_is_accepted(running: Running, api: httpx.Client) -> None:
    # The record, "meta" and its "x" are three levels; the list fills the rest.
    depth = MAX_DEPTH - 3
    meta = {"x": json.loads("[" * depth + "]" * depth)}
    response = post(api, person(unique("nested"), meta=meta), running.token)
    assert response.status_code == 201, response.text


@pytest.mark.parametrize(
    "content_type",
    ["application/json; charset=utf-8", 'application/json;charset="UTF-8"', "APPLICATION/JSON"],
)
def test_json_said_to_be_utf8_is_accepted(
    running: Running, api: httpx.Client, content_type: str
) -> None:
    body = json.dumps(person(unique("charset"))).encode()
    response = api.post(
        "/api/events",
        content=body,
        headers={"Authorization": f"Bearer {running.token}", "Content-Type": content_type},
    )
    assert response.status_code == 201, response.text


def test_json_said_to_be_in_another_encoding_is_415(running: Running, api: httpx.Client) -> None:
    before = log_head(api)
    response = api.post(
        "/api/events",
        content=json.dumps(person(unique("utf16"))).encode(),
        headers={
            "Authorization": f"Bearer {running.token}",
            "Content-Type": "application/json; charset=utf-16",
        },
    )
    assert error_body(response, 415)["detail"] == "charset 'utf-16': send the JSON as UTF-8"
    assert log_head(api) == before


def test_a_charset_given_twice_is_refused(running: Running, api: httpx.Client) -> None:
    before = log_head(api)
    response = post(
        api,
        person(unique("twice-charset")),
        running.token,
        content_type="application/json; charset=utf-8; charset=latin-1",
    )
    assert error_body(response, 415)["detail"] == (
        "charset is given 2 times in Content-Type: give it once, as utf-8"
    )
    assert log_head(api) == before


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "application/jsonx", "text/json"],
)
def test_wrong_content_type_is_415(
    running: Running, api: httpx.Client, content_type: str | None
) -> None:
    before = log_head(api)
    response = post(api, person(unique("typed")), running.token, content_type=content_type)
    error_body(response, 415)
    assert log_head(api) == before


@pytest.mark.parametrize(
    ("content_type", "encoding"),
    [("text/plain", "identity"), ("application/json; charset=latin-1", "identity"), (JSON, "gzip")],
)
def test_a_body_that_would_be_refused_by_its_headers_is_not_asked_for(
    running: Running, content_type: str, encoding: str
) -> None:
    # given a writer that waits for 100 Continue before sending a large body
    # when it sends its head alone
    answer = answer_to_a_head(
        running.base_url,
        running.token,
        f"Content-Type: {content_type}\r\nContent-Encoding: {encoding}\r\n"
        "Content-Length: 5000000\r\n",
    )
    # then the refusal comes first, without a 100 Continue asking for the body
    assert answer.startswith(b"HTTP/1.1 415 "), answer[:200]


def test_a_compressed_body_is_415_naming_the_encoding(running: Running, api: httpx.Client) -> None:
    before = log_head(api)
    body = gzip.compress(json.dumps(person(unique("zipped"))).encode())
    response = post(api, body, running.token, headers={"Content-Encoding": "gzip"})
    assert error_body(response, 415)["detail"] == (
        "Content-Encoding 'gzip' is not accepted: send the JSON uncompressed"
    )
    assert log_head(api) == before


@pytest.mark.parametrize(
    ("name", "values"),
    [
        ("Authorization", ["Bearer {token}", "Bearer not-a-token"]),
        ("Authorization", ["Bearer not-a-token", "Bearer {token}"]),
        ("Content-Type", [JSON, "text/plain"]),
        ("Content-Type", [JSON, JSON]),
        ("Content-Encoding", ["identity", "gzip"]),
    ],
)
def test_a_header_that_takes_one_value_given_twice_is_400(
    running: Running, api: httpx.Client, name: str, values: list[str]
) -> None:
    before = log_head(api)
    headers = [("Authorization", f"Bearer {running.token}"), ("Content-Type", JSON)]
    headers = [(key, value) for key, value in headers if key != name]
    headers += [(name, value.format(token=running.token)) for value in values]
    response = api.post("/api/events", content=json.dumps(person(unique("twice"))), headers=headers)
    body = error_body(response, 400)
    assert body == {
        "error": "repeated_header",
        "detail": f"{name} is given 2 times: give it once",
    }
    assert log_head(api) == before


@pytest.mark.parametrize("query", ["x=1", "after=5"])
def test_a_write_with_a_query_parameter_is_422_naming_it(
    running: Running, api: httpx.Client, query: str
) -> None:
    before = log_head(api)
    response = api.post(
        f"/api/events?{query}",
        content=json.dumps(person(unique("queried"))),
        headers={"Authorization": f"Bearer {running.token}", "Content-Type": JSON},
    )
    name, _, value = query.partition("=")
    # shaped like every other refusal of a write, so a writer reads one kind of body
    assert error_body(response, 422) == {
        "error": "invalid",
        "detail": f"query parameter {name}: unknown parameter {name!r} for /api/events: it "
        "takes none; nothing was written",
        "problems": [
            {
                "where": f"query parameter {name}",
                "rule": "parameter",
                "message": f"unknown parameter {name!r} for /api/events: it takes none",
                "input": value,
            }
        ],
    }
    assert log_head(api) == before


def test_a_body_starting_with_a_byte_order_mark_is_read(
    running: Running, api: httpx.Client
) -> None:
    body = b"\xef\xbb\xbf" + json.dumps(person(unique("bom"))).encode()
    response = post(api, body, running.token)
    assert response.status_code == 201, response.text


def test_content_type_parameters_are_accepted(running: Running, api: httpx.Client) -> None:
    record = person(unique("charset"))
    response = post(api, record, running.token, content_type="Application/JSON; charset=utf-8")
    assert response.status_code == 201, response.text


def oversized_body() -> bytes:
    record = person("too-big", meta={"padding": "p" * 1000})
    body = json.dumps([record] * (MAX_BODY_BYTES // 1000 + 1)).encode()
    assert len(body) > MAX_BODY_BYTES
    return body


def test_body_over_the_limit_is_413(running: Running, api: httpx.Client) -> None:
    before = log_head(api)
    response = post(api, oversized_body(), running.token)
    assert str(MAX_BODY_BYTES) in error_body(response, 413)["detail"]
    assert log_head(api) == before


def test_chunked_body_over_the_limit_is_413(running: Running, api: httpx.Client) -> None:
    """No Content-Length: the server must count while it reads."""
    body = oversized_body()
    chunks = [body[start : start + 65_536] for start in range(0, len(body), 65_536)]
    before = log_head(api)
    response = api.post(
        "/api/events",
        content=iter(chunks),
        headers={"Authorization": f"Bearer {running.token}", "Content-Type": JSON},
    )
    assert response.request.headers.get("transfer-encoding") == "chunked"
    assert "content-length" not in response.request.headers
    error_body(response, 413)
    assert log_head(api) == before


def test_chunked_body_under_the_limit_is_read(running: Running, api: httpx.Client) -> None:
    body = json.dumps(person(unique("chunked"))).encode()
    response = api.post(
        "/api/events",
        content=iter([body[:10], body[10:]]),
        headers={"Authorization": f"Bearer {running.token}", "Content-Type": JSON},
    )
    assert response.status_code == 201, response.text


def test_too_many_records_is_413(running: Running, api: httpx.Client) -> None:
    records = [person(f"many-{index}") for index in range(MAX_RECORDS + 1)]
    before = log_head(api)
    assert str(MAX_RECORDS) in error_body(post(api, records, running.token), 413)["detail"]
    assert log_head(api) == before


# --- the hostile-record table, over HTTP ----------------------------------------------------


def nesting(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((nesting(child) for child in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((nesting(child) for child in value), default=0)
    return 0


def http_body(case: Hostile) -> tuple[bytes, int | None]:
    """The case's non-blank lines as one JSON list, and its nesting (None: not all JSON)."""
    lines = [line if isinstance(line, bytes) else line.encode() for line in case.lines]
    lines = [line for line in lines if line.strip()]
    body = b"[" + b",".join(lines) + b"]"
    try:
        return body, nesting(json.loads(body))
    except (ValueError, RecursionError):
        return body, None


# Where HTTP names a rule differently from the import: an envelope is never accepted over HTTP.
# Over HTTP, any envelope field is refused as such, before what it holds is looked at.
HTTP_RULES = {case.name: "envelope" for case in CASES if case.name.startswith("export-")}


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_hostile_records_are_refused_over_http(
    running: Running, api: httpx.Client, case: Hostile
) -> None:
    body, depth = http_body(case)
    before = log_head(api)
    response = post(api, body, running.token)
    if depth is None or case.rule == "json":
        error_body(response, 400)
    elif depth > MAX_DEPTH:
        assert error_body(response, 400)["error"] == "too_deep"
    elif case.rule in {"expected_version", "event_id"} and response.status_code == 409:
        assert error_body(response, 409)["error"] == "conflict"
    else:
        problems = error_body(response, 422)["problems"]
        blank_before = sum(1 for line in case.lines[: case.line - 1] if not line.strip())
        where = f"record {case.line - 1 - blank_before}"
        rule = HTTP_RULES.get(case.name, case.rule)
        assert (where, rule) in [(p["where"], p["rule"]) for p in problems], problems
    assert log_head(api) == before


# --- concurrency ----------------------------------------------------------------------------


async def test_concurrent_posts_with_one_expected_version_have_one_winner(
    running: Running,
) -> None:
    slug = unique("race")
    headers = {"Authorization": f"Bearer {running.token}", "Content-Type": JSON}
    async with httpx.AsyncClient(base_url=running.base_url, timeout=30) as api:
        first = await api.post("/api/events", json=person(slug), headers=headers)
        assert first.status_code == 201, first.text
        responses = await asyncio.gather(
            *(
                api.post(
                    "/api/events",
                    json=rename(slug, f"Contender {index}", expected_version=1),
                    headers=headers,
                )
                for index in range(20)
            )
        )
        statuses = sorted(response.status_code for response in responses)
        assert statuses == [201] + [409] * 19, [r.text for r in responses]
        report = (await api.get("/api/verify")).json()
        assert report["ok"] is True
        assert report["count"] == report["head_position"]
        start = first.json()["positions"][0]
        stream = [
            event
            for event in (await api.get("/api/events", params={"after": start - 1})).json()
            if event["stream"] == f"person-{slug}"
        ]
    assert [event["version"] for event in stream] == [1, 2]
    winner = next(response for response in responses if response.status_code == 201)
    assert stream[1]["position"] == winner.json()["positions"][0]


async def test_concurrent_registrations_of_one_new_stream_have_one_winner(
    running: Running,
) -> None:
    """The losers break the rule that a person is registered once (422, before their 409)."""
    slug = unique("newborn")
    headers = {"Authorization": f"Bearer {running.token}", "Content-Type": JSON}
    async with httpx.AsyncClient(base_url=running.base_url, timeout=30) as api:
        responses = await asyncio.gather(
            *(
                api.post(
                    "/api/events",
                    json=person(slug, f"Claimant {index}", expected_version="no_stream"),
                    headers=headers,
                )
                for index in range(20)
            )
        )
        report = (await api.get("/api/verify")).json()
    assert sorted(response.status_code for response in responses) == [201] + [422] * 19
    losers = [response.json() for response in responses if response.status_code == 422]
    assert {loser["problems"][0]["rule"] for loser in losers} == {"unique"}
    assert report["ok"] is True
    assert report["count"] == report["head_position"]


# --- reads stay public; the one write route is the one above -------------------------------


@pytest.mark.parametrize("path", ["/api/events", "/api/verify", "/healthz", "/feeds/all.atom"])
def test_read_routes_need_no_token(api: httpx.Client, path: str) -> None:
    assert api.get(path).status_code == 200
    refused_token = api.get(path, headers={"Authorization": "Bearer not-a-token"})
    assert refused_token.status_code == 200


PATH_VALUES = {"filename": "all.atom", "kind": "org", "claim_id": "x", "position": "1"}


def test_the_only_route_that_writes_is_post_api_events(api: httpx.Client) -> None:
    """So the auth matrix above covers every write route the app has."""
    document = api.get("/openapi.json").json()
    operations = {
        (method.upper(), path)
        for path, item in document["paths"].items()
        for method in item
        if method in {"get", "head", "post", "put", "patch", "delete", "options", "trace"}
    }
    assert {op for op in operations if op[0] not in {"GET", "HEAD"}} == {("POST", "/api/events")}

    before = log_head(api)
    for path in document["paths"]:
        concrete = path.format(**PATH_VALUES)
        for method in ("POST", "PUT", "PATCH", "DELETE"):
            response = api.request(method, concrete, json=person(unique("sneaky")))
            expected = 401 if (method, path) == ("POST", "/api/events") else 405
            assert response.status_code == expected, (method, concrete, response.text)
    assert log_head(api) == before


# --- documentation --------------------------------------------------------------------------


def test_openapi_describes_every_field_of_the_answer_to_a_write(
    running: Running, api: httpx.Client
) -> None:
    document = api.get("/openapi.json").json()
    answer = post(api, person(unique("documented")), running.token)
    assert answer.status_code == 201, answer.text
    schema = document["components"]["schemas"]["Appended"]
    assert set(schema["properties"]) == set(answer.json())
    assert set(schema["required"]) == set(answer.json())
    assert schema["properties"]["projected"]["type"] == "boolean"


def test_openapi_names_every_reason_for_a_415_and_a_400(api: httpx.Client) -> None:
    responses = api.get("/openapi.json").json()["paths"]["/api/events"]["post"]["responses"]
    for reason in ("application/json", "charset", "Content-Encoding"):
        assert reason in responses["415"]["description"], reason
    for reason in ("not JSON", "UTF-8", "twice in one object", "64 bits", "given twice"):
        assert reason in responses["400"]["description"], reason


def test_openapi_documents_the_write_route_with_examples(
    running: Running, api: httpx.Client
) -> None:
    document = api.get("/openapi.json").json()
    operation = document["paths"]["/api/events"]["post"]
    content = operation["requestBody"]["content"][JSON]
    assert set(content["examples"]) == {"one record", "a batch"}
    assert {"201", "200", "400", "401", "403", "408", "409", "413", "415", "422"} <= set(
        operation["responses"]
    )
    assert operation["security"] == [{"token": []}]
    assert document["components"]["securitySchemes"]["token"]["scheme"] == "bearer"
    assert "#/$defs" not in json.dumps(document)

    docs = api.get("/docs")
    assert docs.status_code == 200
    assert "/openapi.json" in docs.text

    # The examples are real: they apply to the seeded log.
    for name in ("one record", "a batch"):
        response = post(api, content["examples"][name]["value"], running.token)
        assert response.status_code == 201, (name, response.text)


def test_the_largest_batch_is_accepted(running: Running, api: httpx.Client) -> None:
    prefix = unique("most")
    records = [person(f"{prefix}-{index}") for index in range(MAX_RECORDS)]
    count, _ = log_head(api)
    response = post(api, records, running.token)
    assert response.status_code == 201, response.text
    assert response.json()["positions"] == list(range(count + 1, count + MAX_RECORDS + 1))


# --- secrets --------------------------------------------------------------------------------


def test_tokens_never_reach_the_logs(running: Running, api: httpx.Client) -> None:
    """Runs last: every token any test sent, good or bad, is absent from the server's logs."""
    post(api, person(unique("logged")), running.token)
    post(api, b"{", running.token)
    post(api, person(unique("logged")), "ll_not-a-real-token-at-all")
    running.tokens_used.append("ll_not-a-real-token-at-all")
    text = running.logs.text()
    assert "POST /api/events" in text  # the access log was captured
    for token in running.tokens_used:
        assert token not in text


def test_a_writer_hanging_up_mid_body_writes_nothing_and_logs_no_fault(
    running: Running, api: httpx.Client
) -> None:
    before = log_head(api)
    host, port = running.base_url.removeprefix("http://").split(":")
    for _ in range(3):
        with socket.create_connection((host, int(port))) as connection:
            connection.sendall(
                b"POST /api/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Authorization: Bearer " + running.token.encode() + b"\r\n"
                b"Content-Length: 1000\r\n\r\n" + json.dumps(person("hung-up")).encode()[:40]
            )
            time.sleep(0.2)  # the server is reading the body when the writer goes
    assert post(api, person(unique("after-hang-up")), running.token).status_code == 201
    assert api.get("/api/events", params={"after": before[0]}).json()[0]["data"]["person"] != (
        "hung-up"
    )
    assert "ClientDisconnect" not in running.logs.text()
    assert "Traceback" not in running.logs.text()


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"actor": "seed"}, "actor is set by the log"),
        ({"actor": "seed", "stream": "person-x"}, "stream, actor are set by the log"),
    ],
    ids=["one", "two"],
)
def test_envelope_fields_sent_are_named_in_the_detail_as_set_by_the_log(
    running: Running, api: httpx.Client, fields: dict[str, str], said: str
) -> None:
    # given a record carrying envelope fields, which only the log sets
    before = log_head(api)
    record = person(unique("enveloped"), **fields)
    # when it is posted
    body = error_body(post(api, record, running.token), 422)
    # then the detail names them, in the log's order, in a sentence of the right number
    assert body["detail"] == f"record 0: {said}, not by a writer; nothing was written"
    assert log_head(api) == before


def test_openapi_bounds_a_batch_as_the_route_does(api: httpx.Client) -> None:
    # given the write route's OpenAPI document
    operation = api.get("/openapi.json").json()["paths"]["/api/events"]["post"]
    # when its request body's list form is read
    schema = operation["requestBody"]["content"][JSON]["schema"]
    [batch] = [branch for branch in schema["oneOf"] if branch.get("type") == "array"]
    # then it says what the route refuses: an empty list (422) and more than MAX_RECORDS (413)
    assert batch["minItems"] == 1
    assert batch["maxItems"] == MAX_RECORDS


async def test_a_batch_is_answered_once_the_projections_applied_its_last_record(
    seeded_log: EventLog,
) -> None:
    # given the write route over a seeded log, its wait for the projections recorded
    token = await Tokens(seeded_log.store).create("alice")
    waited: list[int] = []

    async def applied_through(request: Any, position: int) -> bool:
        waited.append(position)
        return True

    app = FastAPI()
    app.include_router(write_router(lambda request: seeded_log, applied_through))
    records = [person(unique("first")), person(unique("second")), person(unique("third"))]
    # when a batch of three records is appended
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://test"
    ) as client:
        response = await client.post(
            "/api/events",
            content=json.dumps(records),
            headers={"Authorization": f"Bearer {token}", "Content-Type": JSON},
        )
    # then it is answered after waiting for the last of them, so that a read sees them all
    assert response.status_code == 201, response.text
    positions = response.json()["positions"]
    assert len(positions) == 3
    assert waited == [max(positions)]
