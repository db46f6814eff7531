"""The read API over HTTP: the CLI's queries as JSON, errors as 4xx, and the docs."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import re
import sqlite3
import threading
import time
import urllib.parse
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from starlette.requests import Request

from leaderlog.cli import main
from leaderlog.errors import ProjectionError, ProjectionFailed, StoreUnavailable
from leaderlog.feeds import FeedService
from leaderlog.http import _api as api_module
from leaderlog.http import app as app_module
from leaderlog.http import create_app
from leaderlog.http._deps import Services
from leaderlog.http.app import _RETRY_SECONDS as RETRY_SECONDS
from leaderlog.http.app import _unavailable
from leaderlog.log import EventLog, load_seeds
from leaderlog.projections import BUILTIN, Queries, runner_for
from leaderlog.projections.audit import AuditProjection
from leaderlog.store import VerifyReport
from leaderlog.store import sqlite as sqlite_module
from tests.answer_schemas import assert_documented
from tests.conftest import SEEDS
from tests.feeds.logs import FOX, HAMMER_CAPTION
from tests.http.server import (
    confirm_as_another_writer,
    running,
    seeded_database,
    wait_for_claim_status,
)
from tests.projections.logs import GORDON_ACTING
from tests.projections.test_cli import FAILING_PROJECTION
from tests.store import postgres_connection, postgres_schema


def test_state_history_claims_and_audit(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    state = client.get(f"{base}/api/state", params={"org": "ice-hsi", "as_of": "2025-06-01"})
    assert state.status_code == 200
    body = state.json()
    assert body["as_of"] == "2025-06-01" and body["org"]["org"] == "ice-hsi"
    posts = {answer["post"]["post"] for answer in body["posts"]}
    assert posts == {"ice-hsi-ead", "ice-hsi-dsac"}
    early = client.get(f"{base}/api/state", params={"known_at": "5"}).json()
    assert early["known_at"]["position"] == 5 and early["posts"] == []

    history = client.get(f"{base}/api/history", params={"person": "robert-hammer"}).json()
    assert history["subject"]["person"]["name"] == "Robert Hammer"

    claim = client.get(f"{base}/api/claims/{HAMMER_CAPTION}").json()
    assert claim["status"] == "disputed"
    assert [step["type"] for step in claim["lifecycle"]] == ["claim.reported", "claim.disputed"]

    audit = client.get(
        f"{base}/api/audit", params={"attribution": "anonymous", "type": "claim.reported"}
    ).json()
    assert len(audit["events"]) == 5
    assert {event["source"] for event in audit["events"]} == {FOX}


@pytest.mark.parametrize(
    "path",
    ["/healthz", "/api/state?org=ice", "/api/events?limit=2", "/api/claims/" + HAMMER_CAPTION],
)
def test_head_answers_what_get_would_without_the_body(
    seeded_server: tuple[str, str], client: httpx.Client, path: str
) -> None:
    base, _ = seeded_server
    got, head = client.get(f"{base}{path}"), client.head(f"{base}{path}")
    assert (got.status_code, head.status_code) == (200, 200)
    assert head.content == b""
    assert head.headers["content-type"] == got.headers["content-type"]
    assert head.headers["content-length"] == got.headers["content-length"]


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/api/events", "GET, HEAD, POST"),
        ("DELETE", "/api/events", "GET, HEAD, POST"),
        ("POST", "/api/state", "GET, HEAD"),
        ("POST", "/feeds/all.atom", "GET, HEAD"),
    ],
)
def test_a_method_the_path_lacks_is_405_listing_every_method_it_has(
    seeded_server: tuple[str, str], client: httpx.Client, method: str, path: str, allowed: str
) -> None:
    base, _ = seeded_server
    response = client.request(method, f"{base}{path}")
    assert response.status_code == 405
    assert response.headers["allow"] == allowed


@pytest.mark.parametrize(
    ("path", "location"),
    [
        ("/feeds/org/ice.atom/", "/feeds/org/ice.atom"),
        ("/api/state/?org=ice&as_of=2025-06-01", "/api/state?org=ice&as_of=2025-06-01"),
        ("/healthz/", "/healthz"),
        # however many slashes end it
        ("/feeds/all.atom///?lang=fr", "/feeds/all.atom?lang=fr"),
    ],
)
def test_a_trailing_slash_redirects_relatively_whatever_the_host_says(
    seeded_server: tuple[str, str], client: httpx.Client, path: str, location: str
) -> None:
    base, _ = seeded_server
    for method in ("GET", "HEAD"):
        response = client.request(method, f"{base}{path}", headers={"Host": "evil.example"})
        assert response.status_code == 308
        assert response.headers["location"] == location
    assert client.get(f"{base}{path}", follow_redirects=True).status_code == 200


def test_a_trailing_slash_on_a_write_or_nowhere_is_404(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    """A writer's body and token are never sent on to another address."""
    base, _ = seeded_server
    posted = client.post(f"{base}/api/events/", json={}, headers={"Host": "evil.example"})
    assert (posted.status_code, posted.headers.get("location")) == (404, None)
    assert client.get(f"{base}/feeds/nothing.atom/", follow_redirects=True).status_code == 404
    assert client.get(f"{base}/no/such/page/").status_code == 404


def test_events_verify_and_health(seeded_server: tuple[str, str], client: httpx.Client) -> None:
    base, _ = seeded_server
    events = client.get(f"{base}/api/events", params={"after": 10, "limit": 3}).json()
    assert [event["position"] for event in events] == [11, 12, 13]
    one = client.get(f"{base}/api/events/11").json()
    assert one == events[0] and one["stream"] == "person-kenneth-genalo"
    verify = client.get(f"{base}/api/verify").json()
    assert verify["ok"] is True and verify["count"] >= 29
    health = client.get(f"{base}/healthz").json()
    assert health["ok"] is True
    assert {p["name"] for p in health["projections"]} >= {"leadership", "audit", "feed_entries"}


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("/api/state?org=" + "a" * 65, "org is 65 characters long; no id is longer than 64"),
        ("/api/claims/" + "a" * 65, "claim is 65 characters long; no id is longer than 64"),
        ("/api/audit?actor=" + "a" * 301, "actor is 301 characters long; no name is longer"),
    ],
)
def test_a_value_too_long_is_refused_in_the_cli_s_words(
    seeded_server: tuple[str, str], client: httpx.Client, path: str, said: str
) -> None:
    # the API checks it, not FastAPI ("String should have at most 64 characters")
    base, _ = seeded_server
    response = client.get(base + path)
    assert response.status_code == 422
    assert said in response.json()["detail"]


def test_bad_parameters_are_422_and_unknown_ids_404(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    cases = {
        "/api/state?org=atlantis": 404,
        "/api/state?as_of=tomorrow": 422,
        "/api/state?known_at=not-a-time": 422,
        "/api/state?known_at=-3": 422,
        "/api/state?known_at=%2B22": 422,
        "/api/history": 422,
        "/api/history?person=robert-hammer&post=ice-hsi-ead": 422,
        "/api/history?person=nobody": 404,
        "/api/claims/nothing-here": 404,
        "/api/audit?status=lost": 422,
        "/api/audit?limit=0": 422,
        "/api/audit?from=yesterday": 422,
        "/api/audit?from=0001-01-01T00:00:00%2B01:00": 422,
        "/api/state?known_at=9999-12-31T23:59:59-01:00": 422,
        "/api/history?org=ice&known_at=0001-01-01T00:00:00%2B01:00": 422,
        "/api/audit?from=2025-06-02&to=2025-06-01": 422,
        "/api/events?limit=100000": 422,
        "/api/events?after=-1": 422,
        # whole numbers only, as the CLI's --after and --limit take them
        "/api/events?limit=5.0": 422,
        "/api/audit?after=5.0": 422,
        "/api/events/5.0": 422,
        # and in digits 0-9 alone, which Python's int() would read otherwise
        "/api/events?limit=1_0": 422,
        "/api/events?after=%2B5": 422,
        "/api/audit?after=%205": 422,
        "/api/audit?limit=%EF%BC%95": 422,
        "/api/events/1_0": 422,
        "/api/events/0": 422,
        "/api/events/99999": 404,
        f"/api/events/{10**30}": 404,
    }
    for path, status in cases.items():
        response = client.get(base + path)
        assert response.status_code == status, (path, response.text)
        assert response.json()["detail"], path
        # What is missing today may be there after the next append: no cache keeps it.
        assert response.headers["cache-control"] == "no-cache", path
    # Positions beyond what storage holds (SQLite INTEGER, PostgreSQL BIGINT) ask for nothing.
    assert client.get(f"{base}/api/events?after={10**30}").json() == []
    assert client.get(f"{base}/api/audit?after={10**30}").json()["events"] == []
    meant = client.get(f"{base}/api/history?post=HSI%20director")
    assert meant.status_code == 404
    assert "did you mean ice-hsi-ead (" in meant.json()["detail"]
    claim = client.get(f"{base}/api/claims/genalo-retirement")
    assert claim.status_code == 404
    assert "did you mean fox-ice-shakeup-2025-05-genalo-retirement (" in claim.json()["detail"]


def test_a_422_locates_the_parameter_at_fault(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    cases = {
        "/api/state?as_of=2025-02-30": "as_of",
        "/api/state?known_at=not-a-time": "known_at",
        "/api/state?known_at=99999": "known_at",
        "/api/state?known_at=%2B22": "known_at",
        "/api/history?org=ice&known_at=2025-06-01T00:00:00": "known_at",
        "/api/audit?status=lost": "status",
        "/api/audit?type=claim.deleted": "type",
        "/api/audit?attribution=rumour": "attribution",
        "/api/audit?limit=0": "limit",
        "/api/events?limit=5.0": "limit",
        "/api/audit?from=yesterday": "from",
        "/api/audit?to=2025-13-01": "to",
        "/api/audit?publisher=%20": "publisher",
    }
    for path, parameter in cases.items():
        response = client.get(base + path)
        assert response.status_code == 422, (path, response.text)
        (problem,) = response.json()["problems"]
        assert problem["where"] == f"query parameter {parameter}", (path, problem)
        given = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)[parameter]
        assert problem["input"] == given[0], (path, problem)
        if problem["message"].split()[0] in {parameter, parameter.replace("_", "-")}:
            # Named as the URL names it, not as the command line does.
            assert problem["message"].startswith(f"{parameter} "), (path, problem)
    # a claim id is a part of the path, and located there, as FastAPI locates a long one
    for given in ("a\x01b", "a" * 65):
        response = client.get(f"{base}/api/claims/{urllib.parse.quote(given)}")
        assert response.status_code == 422, response.text
        (problem,) = response.json()["problems"]
        assert (problem["where"], problem["input"]) == ("path parameter claim_id", given), problem


def test_every_value_a_query_refuses_is_a_problem_of_its_422(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    cases = {
        "/api/audit?status=bogus&from=x&attribution=zz": ["status", "attribution", "from"],
        "/api/audit?publisher=%20&actor=%20&to=2025-13-01": ["publisher", "actor", "to"],
        "/api/state?as_of=2025-13-01&known_at=abc": ["as_of", "known_at"],
        "/api/history?person=%20&known_at=abc": ["person", "known_at"],
        # rules over two values too: one of person, post or org; from before to
        "/api/history?person=x&post=y&known_at=abc": ["known_at", None],
        "/api/audit?from=2025-06-02&to=2025-06-01&status=bogus": ["status", "from"],
    }
    for path, parameters in cases.items():
        response = client.get(base + path)
        assert response.status_code == 422, (path, response.text)
        problems = response.json()["problems"]
        assert [problem["where"] for problem in problems] == [
            f"query parameter {parameter}" if parameter else "query" for parameter in parameters
        ], (path, problems)


def test_a_position_written_with_a_plus_sign_is_refused_as_the_cli_does(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    response = client.get(f"{base}/api/state", params={"known_at": "+22"})  # sent as %2B22
    assert response.status_code == 422, response.text
    (problem,) = response.json()["problems"]
    assert problem["message"] == (
        "known_at position is written as a plain number, such as 22, without a plus sign; got '+22'"
    )


def test_a_long_time_is_answered_or_refused_as_the_cli_does(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, url = seeded_server
    # 64 characters: answered, the same answer as the CLI's
    longest = "2999-06-01T00:00:00." + "0" * 43 + "Z"
    assert len(longest) == 64
    answer = client.get(f"{base}/api/state", params={"known_at": longest, "org": "ice-hsi"})
    assert answer.status_code == 200, answer.text
    cli = CliRunner().invoke(
        main, ["--db", url, "state", "--org", "ice-hsi", "--known-at", longest, "--json"]
    )
    assert cli.exit_code == 0, cli.output
    assert answer.json() == json.loads(cli.stdout)
    # 65: refused by both, with the same words
    refused = client.get(f"{base}/api/audit", params={"from": longest[:-1] + "0Z"})
    assert refused.status_code == 422
    assert refused.json()["problems"][0]["message"] == (
        "from is 65 characters long; no log position or time needs more than 64"
    )


def test_unknown_and_repeated_parameters_are_422_not_ignored(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    cases = {
        "/api/state?asof=2024-01-01": "unknown parameter 'asof' for /api/state: it takes "
        "as_of, known_at, org",
        "/api/audit?frm=2025-06-01": "unknown parameter 'frm'",
        "/api/history?person=robert-hammer&as_of=2025-01-01": "unknown parameter 'as_of'",
        "/api/verify?deep=1": "unknown parameter 'deep' for /api/verify: it takes none",
        "/api/state?as_of=2025-01-01&as_of=2025-06-01": "'as_of' is given 2 times",
    }
    for path, message in cases.items():
        response = client.get(base + path)
        assert response.status_code == 422, (path, response.text)
        assert message in response.json()["problems"][0]["message"], path
    spaced = client.get(f"{base}/api/state", params={"known_at": "2025-06-01T14:00:00 02:00"})
    assert "must be written %2B" in spaced.json()["problems"][0]["message"]


def test_a_state_of_too_many_posts_is_asked_per_organisation(
    seeded_server: tuple[str, str], client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, _ = seeded_server
    monkeypatch.setattr(api_module, "MAX_STATE_POSTS", 2)
    whole = client.get(f"{base}/api/state")
    assert whole.status_code == 422
    assert "at most 2 are answered at once" in whole.json()["problems"][0]["message"]
    assert "ask for one organisation and its subtree" in whole.json()["problems"][0]["message"]
    assert client.get(f"{base}/api/state", params={"org": "ice-hsi"}).status_code == 200
    # asked for one subtree already, the advice is its parts or the CLI
    subtree = client.get(f"{base}/api/state", params={"org": "ice"})
    assert subtree.status_code == 422
    assert subtree.json()["problems"][0]["message"].endswith(
        "posts are known under 'ice'; at most 2 are answered at once: ask for each of its "
        "sub-organisations (org=ID), or run `leaderlog state --org ice`, which has no such cap"
    )
    # the whole log is asked for by no parameter: the query as a whole is at fault
    assert whole.json()["problems"][0]["where"] == "query"


def test_too_many_posts_of_an_organisation_itself_are_asked_of_the_cli_alone(
    seeded_server: tuple[str, str], client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given HSI's two posts, its own (it has no sub-organisations), over a cap of one
    base, _ = seeded_server
    monkeypatch.setattr(api_module, "MAX_STATE_POSTS", 1)
    for route in ("state", "history"):
        refused = client.get(f"{base}/api/{route}", params={"org": "ice-hsi"})
        assert refused.status_code == 422
        # then the advice is not to ask for sub-organisations it does not have
        assert refused.json()["problems"][0]["message"].endswith(
            "2 posts are known under 'ice-hsi', all its own; at most 1 is answered at once: "
            f"run `leaderlog {route} --org ice-hsi`, which has no such cap"
        )


def test_an_organisation_s_history_of_too_many_posts_is_asked_per_sub_organisation(
    seeded_server: tuple[str, str], client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, _ = seeded_server
    monkeypatch.setattr(api_module, "MAX_STATE_POSTS", 2)
    # ICE's subtree holds three posts: too many, with the advice to ask for its parts
    subtree = client.get(f"{base}/api/history", params={"org": "ice"})
    assert subtree.status_code == 422
    problem = subtree.json()["problems"][0]
    assert problem["where"] == "query parameter org"
    assert problem["message"].endswith(
        "posts are known under 'ice'; at most 2 are answered at once: ask for each of its "
        "sub-organisations (org=ID), or run `leaderlog history --org ice`, which has no such cap"
    )
    # HSI's two posts, a post and a person are answered as before
    assert client.get(f"{base}/api/history", params={"org": "ice-hsi"}).status_code == 200
    assert client.get(f"{base}/api/history", params={"post": "ice-hsi-ead"}).status_code == 200
    person = client.get(f"{base}/api/history", params={"person": "robert-hammer"})
    assert person.status_code == 200


def test_large_answers_are_gzipped(seeded_server: tuple[str, str], client: httpx.Client) -> None:
    base, _ = seeded_server
    with client.stream("GET", f"{base}/api/events", headers={"Accept-Encoding": "gzip"}) as got:
        assert got.headers["content-encoding"] == "gzip"
        assert got.headers["vary"] == "Accept-Encoding"


def test_docs_describe_every_route(seeded_server: tuple[str, str], client: httpx.Client) -> None:
    base, _ = seeded_server
    assert client.get(f"{base}/docs").status_code == 200
    paths = client.get(f"{base}/openapi.json").json()["paths"]
    for path in (
        "/api/state",
        "/api/history",
        "/api/claims/{claim_id}",
        "/api/audit",
        "/api/events",
        "/api/events/{position}",
        "/api/verify",
        "/healthz",
        "/feeds/{filename}",
        "/feeds/{kind}/{filename}",
        "/opml",
        "/",
    ):
        assert path in paths, path
    audit = {p["name"]: p for p in paths["/api/audit"]["get"]["parameters"]}
    assert audit.keys() >= {
        "source",
        "publisher",
        "actor",
        "type",
        "status",
        "attribution",
        "from",
        "to",
    }
    # What no schema can state is said in words: a range that ends before it starts.
    for name in ("from", "to"):
        assert "`from` after `to` is refused (422)" in audit[name]["description"], name
    # A generated client names its calls after the operations: short, as the CLI's commands.
    operations = {
        (path, method): operation["operationId"]
        for path, item in paths.items()
        for method, operation in item.items()
    }
    assert operations[("/api/state", "get")] == "state"
    assert operations[("/api/claims/{claim_id}", "get")] == "claim"
    assert operations[("/api/events", "post")] == "append_events"
    assert len(set(operations.values())) == len(operations)


_ASSET = re.compile(r"""(?:href|src|spec-url)="([^"]*)"|url: '([^']*)'""")
_DOCS_ASSET_TYPES = {".js": "text/javascript", ".css": "text/css", ".png": "image/png"}


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_load_nothing_from_another_site(
    seeded_server: tuple[str, str], client: httpx.Client, page: str
) -> None:
    """The documentation pages work offline: every script, style and icon they name is on
    this server, and is served with its type."""
    base, _ = seeded_server
    html = client.get(f"{base}{page}")
    assert html.status_code == 200
    assert "validator.swagger.io" not in html.text
    if page == "/docs":
        assert '"validatorUrl": null' in html.text
    assets = [a or b for a, b in _ASSET.findall(html.text)]
    assert "/openapi.json" in assets
    scripts = [a for a in assets if a.endswith(".js")]
    assert scripts, html.text
    for asset in assets:
        assert asset.startswith("/") and not asset.startswith("//"), asset
        got = client.get(f"{base}{asset}")
        assert got.status_code == 200, asset
        if asset != "/openapi.json":
            kind = _DOCS_ASSET_TYPES[Path(asset).suffix]
            assert got.headers["content-type"].split(";")[0] == kind, asset
            assert len(got.content) > 1000, asset


def test_a_failing_user_projection_does_not_hold_the_answers_back(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    client: httpx.Client,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # given a log whose registered user projection raises on every event
    (tmp_path / "failing.py").write_text(FAILING_PROJECTION, encoding="utf-8")
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(tmp_path))
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"

    async def register_it() -> None:
        async with await EventLog.open(url) as log:
            await load_seeds(log, SEEDS)
            with pytest.raises(ProjectionFailed):
                await (await runner_for(log.store, also=("failing",))).rebuild(["failing"])

    asyncio.run(register_it())
    with caplog.at_level(logging.ERROR, logger="leaderlog.http"), running(create_app(url)) as base:
        # when another writer appends a claim while the server runs
        confirm_as_another_writer(url, GORDON_ACTING)
        # then the built-in read models still follow the log
        wait_for_claim_status(client, base, GORDON_ACTING, "confirmed")
        # and the failure is logged, naming the projection and what raised, once while it
        # stays the same rather than on every retry
        time.sleep(RETRY_SECONDS + 0.5)  # so the server has retried at least once
        # (its first page ends at 29, or at 30 when the append came before the server's
        # first pass; a page that grows is another failure, logged once as well)
        failures = [
            r.message
            for r in caplog.records
            if re.search(r"could not apply events 1-(29|30): ValueError", r.message)
        ]
        assert failures and len(failures) == len(set(failures)), failures
        assert "(" + str(tmp_path / "failing.py") + ", line 16)" in failures[0]


def _seeded_with_row_3_edited(tmp_path: Path) -> str:
    """The seeded log's URL, its third row edited behind the store's back."""
    url = seeded_database(tmp_path)
    with sqlite3.connect(tmp_path / "leaderlog.db") as connection:
        connection.execute("DROP TRIGGER events_are_append_only_update")
        connection.execute("UPDATE events SET data = '{not json' WHERE position = 3")
    return url


def test_a_row_edited_behind_the_store_is_reported_not_a_crash(
    tmp_path: Path, client: httpx.Client
) -> None:
    url = _seeded_with_row_3_edited(tmp_path)
    with running(create_app(url)) as base:
        broken = client.get(f"{base}/api/events/3")
        assert broken.status_code == 500
        assert broken.json()["detail"].startswith("event at position 3 cannot be read: ")
        report = client.get(f"{base}/api/verify").json()
        assert (report["ok"], report["first_bad_position"]) == (False, 3)


def test_healthz_is_not_ok_while_a_row_edited_behind_the_store_stops_the_projections(
    tmp_path: Path, client: httpx.Client
) -> None:
    # given a log whose third row was edited before the projections ever applied it
    url = _seeded_with_row_3_edited(tmp_path)
    with running(create_app(url)) as base:
        health = client.get(f"{base}/healthz").json()
    # then health says so, for each built-in stuck before it, rather than a lag it catches up
    assert health["ok"] is False
    assert {entry["name"] for entry in health["projections"]} == set(BUILTIN)
    # having applied the two events before it
    for entry in health["projections"]:
        assert entry["checkpoint"] == 2, entry
        assert entry["error"] == (
            f"projection {entry['name']} could not apply event 3: UnreadableEvent: event at "
            "position 3 cannot be read: data '{not json' is not valid JSON (unexpected "
            "character, expected a string key: line 1 column 2 (char 1)); it stays at "
            "position 2 until that is fixed"
        )


def test_healthz_says_the_projections_cannot_apply_the_log_while_the_database_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, client: httpx.Client
) -> None:
    monkeypatch.setattr(sqlite_module, "BUSY_TIMEOUT", 0.2)
    (tmp_path / "served").mkdir()
    (tmp_path / "more").mkdir()
    url = seeded_database(tmp_path / "served")
    # the next event of the same log, as another writer appends it
    more = seeded_database(tmp_path / "more")
    confirm_as_another_writer(more, GORDON_ACTING)
    with running(create_app(url)) as base:
        assert client.get(f"{base}/healthz").json()["ok"] is True
        holder = sqlite3.connect(tmp_path / "served" / "leaderlog.db", isolation_level=None)
        try:
            holder.execute("ATTACH DATABASE ? AS more", (str(tmp_path / "more" / "leaderlog.db"),))
            holder.execute("BEGIN IMMEDIATE")
            holder.execute("INSERT INTO events SELECT * FROM more.events WHERE position = 30")
            holder.execute("COMMIT")
            # then another writer holds the write lock the projections need for that event
            holder.execute("BEGIN IMMEDIATE")
            deadline = time.monotonic() + 20
            health = client.get(f"{base}/healthz").json()
            # (each runner finds so at its next try)
            while not all("error" in entry for entry in health["projections"]):
                assert time.monotonic() < deadline, health
                time.sleep(0.05)
                health = client.get(f"{base}/healthz").json()
            # then health is not ok, and says why for each projection, where it stayed ok
            assert health["ok"] is False, health
            for entry in health["projections"]:
                assert entry["lag"] == 1, entry
                assert entry["error"].startswith("cannot apply the log: the database is busy")
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        # and once the writer lets go, the projections go on and health is ok again
        deadline = time.monotonic() + 20
        health = client.get(f"{base}/healthz").json()
        while not health["ok"] and time.monotonic() < deadline:
            time.sleep(0.05)
            health = client.get(f"{base}/healthz").json()
        assert health["ok"] is True, health
        assert all("error" not in entry for entry in health["projections"]), health


def test_healthz_answers_while_another_writer_holds_the_database(
    tmp_path: Path, client: httpx.Client
) -> None:
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    with running(create_app(url, seeds=SEEDS)) as base:
        holder = sqlite3.connect(tmp_path / "leaderlog.db", isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            # a liveness probe reads: it must not queue for the write lock and time out
            health = client.get(f"{base}/healthz")
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert health.status_code == 200, health.text


async def test_a_503_says_to_retry_and_keeps_the_database_s_address_to_the_server_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    request = Request({"type": "http", "method": "GET", "path": "/api/state", "headers": []})
    error = StoreUnavailable("PostgreSQL is unavailable: Connect call failed ('10.0.0.5', 5432)")
    response = await _unavailable(request, error)
    assert (response.status_code, response.headers["retry-after"]) == (503, "1")
    assert "10.0.0.5" not in bytes(response.body).decode()
    assert "try again" in bytes(response.body).decode()
    assert "10.0.0.5" in caplog.text


def test_a_long_catch_up_at_start_is_said_and_another_version_s_build_is_not_ok(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    client: httpx.Client,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(app_module, "_LONG_CATCH_UP", 10)
    url = seeded_database(tmp_path)
    # given a log whose projections were never built: the start says it catches up
    with (
        caplog.at_level(logging.WARNING, logger="leaderlog.http"),
        running(create_app(url)) as base,
    ):
        assert "bringing projections up to date before serving" in caplog.text
        assert client.get(f"{base}/healthz").json()["ok"] is True

        # when another leaderlog version rebuilds a projection under the running server
        async def rebuild_elsewhere() -> None:
            async with await EventLog.open(url) as log, log.store.projection_transaction() as tx:
                await tx.execute(
                    "UPDATE projection_checkpoints SET version = 99 WHERE name = 'audit'"
                )

        asyncio.run(rebuild_elsewhere())
        # then health says not ok, and why, and its answers are 503s, not 500s
        health = client.get(f"{base}/healthz").json()
        assert health["ok"] is False
        (audit,) = [entry for entry in health["projections"] if entry["name"] == "audit"]
        assert audit["error"] == (
            "rebuilt by another leaderlog version (version 99 in the database; this server "
            f"reads version {AuditProjection.version}): restart it"
        )
        response = client.get(f"{base}/api/audit")
        assert response.status_code == 503, response.text
        # in the one error shape, saying that only a restart mends it (no Retry-After)
        assert response.json()["error"] == "unavailable"
        assert "rebuilt by another version" in response.json()["detail"]
        assert "until it is restarted" in response.json()["detail"]
        assert "retry-after" not in response.headers
        # and once the log moves on, the follower says so in one line, with no traceback
        confirm_as_another_writer(url, GORDON_ACTING)
        deadline = time.monotonic() + 10
        while "is at version 99 in this database" not in caplog.text:
            assert time.monotonic() < deadline, caplog.text
            time.sleep(0.05)
    assert "Traceback" not in caplog.text


async def test_verify_requests_arriving_together_share_one_check(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with await EventLog.open(sqlite_url) as log:
        await load_seeds(log, SEEDS)
        services = Services(log, (), Queries(log.store), FeedService(log.store))
        checks = 0
        verify = log.store.verify

        async def slow_verify() -> VerifyReport:
            nonlocal checks
            checks += 1
            await asyncio.sleep(0.2)
            return await verify()

        monkeypatch.setattr(log.store, "verify", slow_verify)
        reports = await asyncio.gather(*(services.verify() for _ in range(5)))
        assert checks == 1 and all(report.ok for report in reports)
        # one arriving after it ended checks again: an edit meanwhile is never hidden
        await services.verify()
        assert checks == 2


async def test_catching_up_for_a_writer_that_stopped_waiting_fails_without_an_unread_error(
    sqlite_url: str,
) -> None:
    """The write is answered after its wait; the catch-up failing later (a lock held
    elsewhere) is the followers' to report, not an "exception was never retrieved"."""
    async with await EventLog.open(sqlite_url) as log:
        await load_seeds(log, SEEDS)
        unread: list[dict[str, object]] = []
        asyncio.get_running_loop().set_exception_handler(lambda _, context: unread.append(context))

        class LockedOut:
            async def catch_up(self) -> int:
                await asyncio.sleep(0.05)
                raise StoreUnavailable("database is busy: lock timeout")

        services = Services(log, (LockedOut(),), Queries(log.store), FeedService(log.store))  # type: ignore[arg-type]
        assert await services.applied_through(1, timeout=0.01) is False
        await asyncio.sleep(0.1)
        gc.collect()
        assert unread == []


def test_a_server_starting_while_its_log_is_locked_waits_for_it(
    postgres_url: str, client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    """A lock held elsewhere at start (a migration, a long transaction) is waited out, as
    a restart of the database is, instead of ending the server with a traceback."""

    def waited() -> bool:
        return "the database cannot answer yet" in caplog.text

    async def hold_the_log_locked(url: str, locked: threading.Event) -> None:
        # Until the server has met the lock (a slow start would otherwise find it gone).
        async with postgres_connection(url) as holder, holder.transaction():
            await holder.execute("LOCK TABLE events IN ACCESS EXCLUSIVE MODE")
            locked.set()
            deadline = time.monotonic() + 30
            while not waited() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.3)

    async def scenario() -> None:
        async with postgres_schema(postgres_url) as url:
            async with await EventLog.open(url) as log:
                await load_seeds(log, SEEDS)
            locked = threading.Event()
            holder = threading.Thread(target=asyncio.run, args=(hold_the_log_locked(url, locked),))
            holder.start()
            locked.wait(10)
            try:
                with (
                    caplog.at_level(logging.WARNING, logger="leaderlog.http"),
                    running(create_app(f"{url}&lock_timeout=100ms")) as base,
                ):
                    # On a busy machine the lock may outlast the start and meet the first
                    # catch-up too: the follower retries it, so wait for that, not a race.
                    deadline = time.monotonic() + 30
                    while client.get(f"{base}/healthz").json()["ok"] is not True:
                        assert time.monotonic() < deadline, caplog.text
                        time.sleep(0.1)
                    state = client.get(f"{base}/api/state", params={"org": "ice-hsi"})
                    assert state.status_code == 200
            finally:
                holder.join(10)
            assert waited(), caplog.text
            assert "lock timeout" in caplog.text

    asyncio.run(scenario())


def test_the_answers_have_the_members_the_openapi_document_states(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    """/openapi.json states each answer's members, so a generated client has typed answers;
    the seeds' answers, of every query and of the log's routes, have them."""
    base, _ = seeded_server
    paths = client.get(f"{base}/openapi.json").json()["paths"]
    for path, name in (
        ("/api/state", "StateAnswer"),
        ("/api/history", "HistoryAnswer"),
        ("/api/claims/{claim_id}", "ClaimAnswer"),
        ("/api/audit", "AuditAnswer"),
        ("/api/events/{position}", "Envelope"),
        ("/api/verify", "Verification"),
        ("/healthz", "Health"),
    ):
        content = paths[path]["get"]["responses"]["200"]["content"]["application/json"]
        assert content["schema"] == {"$ref": f"#/components/schemas/{name}"}, path
    asked = [
        ("StateAnswer", "/api/state", {}),
        ("StateAnswer", "/api/state", {"org": "ice", "as_of": "2025-01-01", "known_at": "5"}),
        ("HistoryAnswer", "/api/history", {"org": "dhs"}),
        ("HistoryAnswer", "/api/history", {"person": "robert-hammer"}),
        ("HistoryAnswer", "/api/history", {"post": "ice-hsi-ead"}),
        ("AuditAnswer", "/api/audit", {"limit": "5"}),
        ("AuditAnswer", "/api/audit", {"type": "comment.requested"}),
    ]
    events = client.get(f"{base}/api/events", params={"limit": "1000"}).json()
    claims = {event["data"]["claim"] for event in events if event["type"] == "claim.reported"}
    asked += [("ClaimAnswer", f"/api/claims/{claim}", {}) for claim in sorted(claims)]
    asked += [
        ("Envelope", "/api/events/1", {}),
        ("Verification", "/api/verify", {}),
        ("Health", "/healthz", {}),
    ]
    for name, path, params in asked:
        response = client.get(f"{base}{path}", params=params)
        assert response.status_code == 200, (path, params)
        assert_documented(name, response.json())
    for envelope in events:
        assert_documented("Envelope", envelope)
    # and the check is no formality: an answer short of a member is caught
    with pytest.raises(AssertionError):
        assert_documented("StateAnswer", {"as_of": "2025-01-01", "posts": []})


def test_the_write_body_refers_to_record_components_titled_once() -> None:
    """Generated clients name classes by title: the record types and their shared parts are
    components of their own, each title used once in the document, so the write route is
    generated (it was left out, its inlined parts clashing) and no default contradicts its
    own schema (a field that may be left out but not be null has none)."""
    document = create_app().openapi()
    body = document["paths"]["/api/events"]["post"]["requestBody"]["content"]
    record = {"$ref": "#/components/schemas/Record"}
    assert body["application/json"]["schema"]["oneOf"][0] == record
    assert body["application/json"]["schema"]["oneOf"][1]["items"] == record
    schemas = document["components"]["schemas"]
    mapping = schemas["Record"]["discriminator"]["mapping"]
    assert mapping["claim.reported"] == "#/components/schemas/ClaimReportedRecord"
    assert {"RecordFuzzyDate", "FuzzyDate", "RecordAttribution", "Attribution"} <= set(schemas)
    titles = [schema.get("title", name) for name, schema in schemas.items()]
    assert len(titles) == len(set(titles))

    def defaults(value: object) -> list[object]:
        if isinstance(value, list):
            return [found for item in value for found in defaults(item)]
        if not isinstance(value, dict):
            return []
        own = [value] if "default" in value and value["default"] is None else []
        return own + [found for item in value.values() for found in defaults(item)]

    for schema in defaults(document):
        assert isinstance(schema, dict)
        assert "anyOf" in schema or "null" in str(schema.get("type")), schema


def test_a_query_the_projections_cannot_answer_yet_is_a_503_inviting_a_retry(
    seeded_server: tuple[str, str], client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given projections that cannot answer yet (an event appended but not applied, say)
    base, _ = seeded_server

    async def not_projected_yet(*_: object, **__: object) -> None:
        raise ProjectionError("known-at position 99 is in the log but not projected yet")

    monkeypatch.setattr(Queries, "state", not_projected_yet)
    # when a client asks
    answer = client.get(f"{base}/api/state")
    # then it is told so in the one shape, and to try again in a second
    assert answer.status_code == 503
    assert answer.headers["retry-after"] == "1"
    assert answer.json() == {
        "error": "unavailable",
        "detail": "known-at position 99 is in the log but not projected yet",
    }


def test_the_audit_answers_up_to_500_events_and_the_raw_log_100_unless_told(
    archive_server: tuple[str, str], client: httpx.Client
) -> None:
    # given a log of more than 100 events (and fewer than 500)
    base, _ = archive_server
    head = client.get(f"{base}/healthz").json()["head"]
    assert 100 < head < 500
    # when the audit and the raw log are asked for without a limit
    audit = client.get(f"{base}/api/audit").json()
    events = client.get(f"{base}/api/events").json()
    # then the audit answers every event in one page, and the raw log its first 100
    assert [event["position"] for event in audit["events"]] == list(range(1, head + 1))
    assert audit["next_after"] is None
    assert [event["position"] for event in events] == list(range(1, 101))


def test_every_record_component_is_titled_by_its_component_name() -> None:
    # given the OpenAPI document (generated clients name their classes by title)
    document = create_app().openapi()
    schemas = document["components"]["schemas"]
    # when the components the write body refers to are read: Record, one per record type,
    # and the parts they share
    mapping = schemas["Record"]["discriminator"]["mapping"]
    names = ["Record", *(target.rsplit("/", 1)[1] for target in mapping.values())]
    names += [name for name in schemas if name.startswith("Record")]
    # then each is titled by its own name (ClaimReportedRecord, not "claim.reported")
    assert "ClaimReportedRecord" in names and "RecordFuzzyDate" in names
    for name in names:
        assert schemas[name]["title"] == name, name


def test_an_unreadable_event_is_a_500_coded_for_it_and_said_in_the_server_log(
    tmp_path: Path, client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    # given a log whose third row was edited behind the store's back
    url = _seeded_with_row_3_edited(tmp_path)
    # when that event is asked for
    with (
        caplog.at_level(logging.ERROR, logger="leaderlog.http"),
        running(create_app(url)) as base,
    ):
        broken = client.get(f"{base}/api/events/3")
    # then the answer's code says what went wrong, for a client to branch on
    assert broken.status_code == 500
    assert broken.json()["error"] == "unreadable_event"
    # and the server's log names the request and the position, with no traceback
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("GET /api/")]
    assert len(said) == 1, said
    assert said[0].startswith("GET /api/events/3: event at position 3 cannot be read: ")
    assert "Traceback" not in caplog.text
