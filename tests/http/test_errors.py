"""Every JSON error of the server, whatever its route, method, status or the layer that
refused the request, is one documented shape: ``{"error", "detail", "problems"}``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema_rs
import pytest
from fastapi import APIRouter

from leaderlog.http import create_app
from tests.http.server import running, seeded_database

JSON = "application/json"
ERROR_BODY_REF = "#/components/schemas/ErrorBody"


@pytest.fixture(scope="module")
def error_body_validator(seeded_server: tuple[str, str]) -> Any:
    """Checks a body against the ErrorBody schema of the document the server serves."""
    base, _ = seeded_server
    document = httpx.get(f"{base}/openapi.json").json()
    return jsonschema_rs.validator_for(
        {"$ref": ERROR_BODY_REF, "components": document["components"]}
    )


def one_shape(response: httpx.Response, status: int, validator: Any) -> dict[str, Any]:
    """The body, after checking it is the documented error shape and nothing else."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == JSON, response.headers
    body: dict[str, Any] = response.json()
    validator.validate(body)
    assert set(body) <= {"error", "detail", "problems"}, body
    assert body["error"] and body["detail"], body
    assert response.headers["cache-control"] == "no-cache"
    return body


@pytest.mark.parametrize(
    ("method", "path", "status", "error"),
    [
        ("GET", "/api/state?as_of=garbage", 422, "invalid"),  # leaderlog's own check
        ("GET", "/api/events?limit=0", 422, "invalid"),  # FastAPI's own validation
        ("GET", "/api/events/abc", 422, "invalid"),  # ... of a path parameter
        ("GET", "/api/state?bogus=1", 422, "invalid"),  # a parameter the route does not take
        ("GET", "/api/state?org=ice&org=dhs", 422, "invalid"),  # one given twice
        ("GET", "/?lang=fr&lang=de", 422, "invalid"),  # on the HTML overview too
        ("GET", "/api/claims/nope", 404, "not_found"),
        ("GET", "/api/events/99999", 404, "not_found"),
        ("GET", "/no/such/route", 404, "not_found"),
        ("POST", "/no/such/route", 404, "not_found"),
        ("DELETE", "/api/events", 405, "method_not_allowed"),
        ("PUT", "/api/state", 405, "method_not_allowed"),
        ("GET", "/feeds/org/atlantis.atom", 404, "not_found"),
        ("GET", "/feeds/all.xml", 404, "not_found"),
        ("GET", "/feeds/all.atom?lang=xx", 422, "invalid"),
        ("GET", "/opml?format=xml", 422, "invalid"),
        ("POST", "/api/events", 401, "unauthorized"),
        ("POST", "/api/events?x=1", 422, "invalid"),
    ],
)
def test_every_kind_of_json_error_has_the_one_documented_shape(
    seeded_server: tuple[str, str],
    client: httpx.Client,
    error_body_validator: Any,
    method: str,
    path: str,
    status: int,
    error: str,
) -> None:
    base, _ = seeded_server
    body = one_shape(client.request(method, base + path), status, error_body_validator)
    assert body["error"] == error
    assert ("problems" in body) == (status == 422), body


def test_a_422_names_each_parameter_refused_its_rule_and_what_was_given(
    seeded_server: tuple[str, str], client: httpx.Client, error_body_validator: Any
) -> None:
    base, _ = seeded_server
    own_check = one_shape(client.get(f"{base}/api/state?as_of=garbage"), 422, error_body_validator)
    message = "as_of must be a calendar day YYYY-MM-DD, got 'garbage'"
    assert own_check == {
        "error": "invalid",
        "detail": f"query parameter as_of: {message}",
        "problems": [
            {
                "where": "query parameter as_of",
                "rule": "value_error",
                "message": message,
                "input": "garbage",
            }
        ],
    }
    fastapi_check = one_shape(client.get(f"{base}/api/events?limit=0"), 422, error_body_validator)
    assert fastapi_check["problems"] == [
        {
            "where": "query parameter limit",
            "rule": "greater_than_equal",
            "message": "Input should be greater than or equal to 1",
            "input": "0",
        }
    ]
    in_path = one_shape(client.get(f"{base}/api/events/abc"), 422, error_body_validator)
    ((where, rule, given),) = [(p["where"], p["rule"], p["input"]) for p in in_path["problems"]]
    assert (where, rule, given) == ("path parameter position", "int_parsing", "abc")
    # every parameter at fault is named, in one answer
    two = one_shape(client.get(f"{base}/api/audit?limit=x&after=y"), 422, error_body_validator)
    assert {p["where"] for p in two["problems"]} == {
        "query parameter limit",
        "query parameter after",
    }
    unknown = one_shape(client.get(f"{base}/api/state?bogus=1"), 422, error_body_validator)
    assert unknown["problems"] == [
        {
            "where": "query parameter bogus",
            "rule": "parameter",
            "message": "unknown parameter 'bogus' for /api/state: it takes as_of, known_at, org",
            "input": "1",
        }
    ]
    twice = one_shape(client.get(f"{base}/api/state?org=ice&org=dhs"), 422, error_body_validator)
    assert twice["problems"] == [
        {
            "where": "query parameter org",
            "rule": "parameter",
            "message": "parameter 'org' is given 2 times: give it once",
            "input": ["ice", "dhs"],
        }
    ]
    # a rule over several parameters is located in the query as a whole
    history = one_shape(client.get(f"{base}/api/history"), 422, error_body_validator)
    assert [(p["where"], p["rule"]) for p in history["problems"]] == [("query", "value_error")]


def test_a_404_says_what_is_missing(
    seeded_server: tuple[str, str], client: httpx.Client, error_body_validator: Any
) -> None:
    base, _ = seeded_server
    claim = one_shape(client.get(f"{base}/api/claims/nope"), 404, error_body_validator)
    assert claim == {"error": "not_found", "detail": "unknown claim 'nope'"}
    route = one_shape(client.get(f"{base}/no/such/route"), 404, error_body_validator)
    assert route == {"error": "not_found", "detail": "nothing is served at /no/such/route"}
    feed = one_shape(client.get(f"{base}/feeds/org/ero.rss"), 404, error_body_validator)
    assert feed["detail"].startswith("unknown organisation 'ero'; did you mean ice-ero (ERO,")
    # a HEAD gets the status and headers without the body
    head = client.head(f"{base}/api/claims/nope")
    assert (head.status_code, head.headers["content-type"], head.content) == (404, JSON, b"")


def test_an_error_repeats_at_most_the_first_characters_of_what_was_asked(
    seeded_server: tuple[str, str], client: httpx.Client, error_body_validator: Any
) -> None:
    base, _ = seeded_server
    # a page number of 3,000 digits parses, and is named by its first digits in the 404
    page = one_shape(
        client.get(f"{base}/feeds/all.atom", params={"page": "9" * 3000}), 404, error_body_validator
    )
    assert page["detail"] == (
        f"archive page {'9' * 20}... (3,000 digits) does not exist (the feed is complete)"
    )
    # one of 5,000 does not parse: the 422 repeats 200 characters of it, not all of them
    too_long = one_shape(client.get(f"{base}/api/events/{'9' * 5000}"), 422, error_body_validator)
    assert [p["input"] for p in too_long["problems"]] == ["9" * 197 + "..."]
    # nor the name and value of a parameter no route takes, nor one given twice
    name = "x" * 1000
    unknown = one_shape(
        client.get(f"{base}/api/state", params={name: "v" * 1000}), 422, error_body_validator
    )
    assert unknown["problems"] == [
        {
            "where": f"query parameter {'x' * 57}...",
            "rule": "parameter",
            "message": f"unknown parameter '{'x' * 57}...' for /api/state: it takes as_of, "
            "known_at, org",
            "input": "v" * 197 + "...",
        }
    ]
    twice = one_shape(
        client.get(f"{base}/api/state", params=[("org", "o" * 300), ("org", "dhs")]),
        422,
        error_body_validator,
    )
    assert twice["problems"][0]["input"] == ["o" * 197 + "...", "dhs"]
    assert len(twice["detail"]) < 200, twice["detail"]


def test_a_405_says_which_methods_the_path_takes(
    seeded_server: tuple[str, str], client: httpx.Client, error_body_validator: Any
) -> None:
    base, _ = seeded_server
    response = client.delete(f"{base}/api/events")
    assert one_shape(response, 405, error_body_validator) == {
        "error": "method_not_allowed",
        "detail": "DELETE is not allowed on /api/events: it takes GET, HEAD, POST",
    }
    assert response.headers["allow"] == "GET, HEAD, POST"


def _failing_router() -> APIRouter:
    router = APIRouter()

    @router.get("/broken")
    async def broken() -> None:
        raise RuntimeError("a bug, with a secret: hunter2")

    return router


@pytest.fixture
def failing_server(tmp_path: Path) -> Iterator[str]:
    with running(create_app(seeded_database(tmp_path), routers=[_failing_router()])) as base:
        yield base


def test_an_unexpected_failure_is_a_500_in_the_same_shape_and_says_no_more(
    failing_server: str,
    client: httpx.Client,
    error_body_validator: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    body = one_shape(client.get(f"{failing_server}/broken"), 500, error_body_validator)
    assert body == {
        "error": "internal",
        "detail": "the server failed to answer this request; its log says why",
    }
    # the server's log names the request the traceback after it belongs to
    assert (
        "GET /broken: the server failed to answer (RuntimeError; its traceback follows)"
        in caplog.messages
    )
    # the server goes on answering
    assert client.get(f"{failing_server}/healthz").status_code == 200


def test_the_openapi_document_declares_the_one_shape_for_every_json_error(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    document = client.get(f"{base}/openapi.json").json()
    # FastAPI's own validation error schemas are gone, not left unused for clients to generate
    schemas = document["components"]["schemas"]
    assert "HTTPValidationError" not in schemas and "ValidationError" not in schemas
    declared = 0
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if int(status) < 400:
                    continue
                content = response.get("content", {})
                if JSON in content:
                    declared += 1
                    schema = content[JSON]["schema"]
                    assert schema == {"$ref": ERROR_BODY_REF}, (method, path, status)
                else:
                    # the overview's own 404 is a page for the reader
                    assert (path, status, list(content)) == ("/", "404", ["text/html"])
            if operation.get("parameters"):
                assert "422" in operation["responses"], (method, path)
    assert declared > 20


@pytest.mark.parametrize(
    "path",
    [
        "/feeds/all.atom?page=1_0",
        "/feeds/all.atom?page=%2B1",
        "/feeds/all.atom?page=%201",
        "/feeds/all.atom?page=1.0",
        "/feeds/org/ice.json?page=2.00",
        "/?page=1_0",
        "/?page=%2B2",
    ],
)
def test_a_page_number_is_written_in_digits_alone(
    seeded_server: tuple[str, str], client: httpx.Client, path: str
) -> None:
    # Python's int() reads "1_0" as 10 and "+1" as 1: nobody writing them meant a page
    base, _ = seeded_server
    response = client.get(base + path, follow_redirects=False)
    assert response.status_code == 422, (path, response.headers.get("location"))


def test_a_page_number_with_leading_zeros_is_still_sent_to_its_one_spelling(
    seeded_server: tuple[str, str], client: httpx.Client
) -> None:
    base, _ = seeded_server
    response = client.get(f"{base}/feeds/all.atom?page=01", follow_redirects=False)
    assert (response.status_code, response.headers["location"]) == (
        308,
        "/feeds/all.atom?page=1",
    )


@pytest.mark.parametrize(
    ("path", "rule", "said"),
    [
        ("/api/state?as_of=2025-05-29" + "x" * 30, "value_error", "as_of must be a calendar day"),
        ("/api/audit?status=retracted" + "x" * 40, "value_error", "unknown status 'retracted"),
        ("/api/audit?type=claim.retracted" + "x" * 60, "value_error", "unknown event type"),
        ("/api/audit?attribution=named" + "x" * 40, "value_error", "unknown attribution"),
        ("/feeds/all.atom?lang=" + "q" * 10_000, "value_error", "language 'qqq"),
        ("/opml?lang=" + "q" * 10_000, "value_error", "language 'qqq"),
    ],
)
def test_a_long_value_gets_the_api_own_message_and_is_repeated_in_part(
    seeded_server: tuple[str, str],
    client: httpx.Client,
    error_body_validator: Any,
    path: str,
    rule: str,
    said: str,
) -> None:
    base, _ = seeded_server
    body = one_shape(client.get(base + path), 422, error_body_validator)
    ((problem,),) = [body["problems"]]
    assert problem["rule"] == rule, problem
    assert problem["message"].startswith(said), problem
    assert len(problem["message"]) < 400, problem["message"]
    assert len(body["detail"]) < 450, body["detail"]


def test_a_404_for_an_event_names_the_position_not_found(
    seeded_server: tuple[str, str], client: httpx.Client, error_body_validator: Any
) -> None:
    # given a log of fewer than 99,999 events
    base, _ = seeded_server
    # when the event at a position beyond its head is asked for
    missing = client.get(f"{base}/api/events/99999")
    # then the 404 says there is no event there, rather than that nothing is served there
    body = one_shape(missing, 404, error_body_validator)
    assert body == {"error": "not_found", "detail": "no event at position 99999"}


def test_a_rule_over_several_parameters_is_a_problem_without_an_input(
    seeded_server: tuple[str, str], client: httpx.Client, error_body_validator: Any
) -> None:
    # given a route that takes exactly one of three parameters
    base, _ = seeded_server
    # when none is given
    refused = client.get(f"{base}/api/history")
    # then the one problem is the query's, and carries no input (no value was given)
    body = one_shape(refused, 422, error_body_validator)
    assert body == {
        "error": "invalid",
        "detail": "query: give exactly one of person, post or org",
        "problems": [
            {
                "where": "query",
                "rule": "value_error",
                "message": "give exactly one of person, post or org",
            }
        ],
    }


def test_a_422_detail_says_every_problem_in_order_separated_by_semicolons(
    seeded_server: tuple[str, str], client: httpx.Client, error_body_validator: Any
) -> None:
    # given two parameters, each refused by the query's own check
    base, _ = seeded_server
    # when both are given
    refused = client.get(f"{base}/api/state", params={"as_of": "x", "known_at": "y"})
    # then the detail says each, located, in the order of the problems
    body = one_shape(refused, 422, error_body_validator)
    assert [problem["where"] for problem in body["problems"]] == [
        "query parameter as_of",
        "query parameter known_at",
    ]
    assert body["detail"] == "; ".join(
        f"{problem['where']}: {problem['message']}" for problem in body["problems"]
    )
    assert body["detail"].startswith(
        "query parameter as_of: as_of must be a calendar day YYYY-MM-DD, got 'x'; "
        "query parameter known_at: known_at must be a log position"
    )
