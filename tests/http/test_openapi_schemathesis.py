"""The app against its own OpenAPI document: generated requests to every route.

No generated request may get a 5xx, and every response must match the schema the document
gives for it. Examples are bounded (and derandomized) so each route takes about a second.
Writes carry a valid token, so generated records reach the record checks and the rules.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from typing import Any

import httpx
import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    positive_data_acceptance,
    response_schema_conformance,
)

from leaderlog.feeds import LANGUAGES
from leaderlog.http import create_app
from leaderlog.projections.queries import CLAIM_STATUSES
from tests.http.server import running
from tests.http.test_write_api import build_seeded_database, create_token

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]


class DeferredApp:
    """An ASGI app built later by a fixture (on a temporary log), named at import time."""

    def __init__(self) -> None:
        self.app: FastAPI | None = None

    async def __call__(
        self,
        scope: Scope,
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        assert self.app is not None, "the app fixture has not run"
        await self.app(scope, receive, send)


APP = DeferredApp()
# The document the app serves at /openapi.json; building it opens no database.
DOCUMENT = create_app().openapi()
CHECKS = [not_a_server_error, response_schema_conformance]


def loaded(*, coverage: bool) -> schemathesis.BaseSchema:
    """The document as schemathesis sees it, with or without the coverage phase.

    The coverage phase tries every boundary of every parameter: cheap for the read routes,
    but thousands of cases for the record schema of the write route, which fuzzing covers.
    """
    schema = schemathesis.openapi.from_dict(DOCUMENT)
    schema.app = APP
    phases = ["examples", "coverage", "fuzzing"] if coverage else ["examples", "fuzzing"]
    schema.config.phases.update(phases=phases)
    return schema


read_routes = loaded(coverage=True).exclude(method="POST")
write_routes = loaded(coverage=False).include(method="POST")


@pytest.fixture(scope="module")
def write_token(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Points the app at a seeded log of its own; the token writes to it."""
    url = asyncio.run(build_seeded_database(tmp_path_factory.mktemp("openapi") / "log.db"))
    token = asyncio.run(create_token(url, "fuzzer"))
    APP.app = create_app(url)
    try:
        yield token
    finally:
        APP.app = None


async def test_the_document_is_the_one_served(write_token: str) -> None:
    assert APP.app is not None
    transport = httpx.ASGITransport(app=APP.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
        response = await client.get("/openapi.json")
    assert response.json() == DOCUMENT


def bounded(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )


@read_routes.parametrize()
@bounded(12)
def test_read_routes(case: schemathesis.Case[Any], write_token: str) -> None:
    case.call_and_validate(checks=CHECKS)


@write_routes.parametrize()
@bounded(30)
def test_write_route(case: schemathesis.Case[Any], write_token: str) -> None:
    case.call_and_validate(headers={"Authorization": f"Bearer {write_token}"}, checks=CHECKS)


def _parameter(path: str, name: str) -> dict[str, Any]:
    """The string schema a GET route states for a parameter (its non-null alternative)."""
    for parameter in DOCUMENT["paths"][path]["get"]["parameters"]:
        if parameter["name"] == name:
            schema: dict[str, Any] = parameter["schema"]
            return next(s for s in schema.get("anyOf", [schema]) if s["type"] != "null")
    raise AssertionError(f"{path} states no parameter {name}")


def test_the_document_states_what_each_text_parameter_takes() -> None:
    formats = [{"pattern": "^[0-9]+$"}, {"format": "date-time"}, {"format": "date"}]
    for path in ("/api/state", "/api/history", "/api/claims/{claim_id}"):
        assert _parameter(path, "known_at")["anyOf"] == formats
    assert _parameter("/api/state", "as_of")["format"] == "date"
    for name in ("from", "to"):
        assert _parameter("/api/audit", name)["anyOf"] == formats[1:]
    for path in ("/opml", "/feeds/{filename}", "/feeds/{kind}/{filename}"):
        assert _parameter(path, "lang")["enum"] == list(LANGUAGES)
    # The overview takes an empty one too, as a form with no language chosen sends it.
    assert _parameter("/", "lang")["enum"] == ["", *LANGUAGES]
    assert _parameter("/api/audit", "status")["enum"] == list(CLAIM_STATUSES)
    assert "pattern" in _parameter("/api/state", "org")


# Refusals no parameter's schema can state: a position beyond the log's head, a time that
# leaves the years 1 to 9999 once converted to UTC, and rules over several parameters.
_NOT_STATABLE = re.compile(
    r"beyond the log's head|out of range once converted to UTC|after the last time|"
    r"give exactly one of|is after to"
)


@schemathesis.check
def accepts_what_the_schema_admits(
    ctx: schemathesis.CheckContext, response: schemathesis.Response, case: schemathesis.Case[Any]
) -> bool | None:
    """schemathesis's positive-data acceptance, but for a 422 whose every problem is one of
    those no schema can state."""
    if response.status_code == 422:
        problems = response.json().get("problems") or []
        if problems and all(_NOT_STATABLE.search(p["message"]) for p in problems):
            return None
    return positive_data_acceptance(ctx, response, case)


def _valid_reads() -> schemathesis.BaseSchema:
    schema = schemathesis.openapi.from_dict(DOCUMENT)
    schema.config.phases.update(phases=["examples", "coverage", "fuzzing"])
    schema.config.generation.update(modes=[GenerationMode.POSITIVE])
    return schema.exclude(method="POST")


valid_reads = _valid_reads()


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real server over HTTP, as a generated client finds it."""
    url = asyncio.run(build_seeded_database(tmp_path_factory.mktemp("accepts") / "log.db"))
    with running(create_app(url)) as base:
        yield base


@valid_reads.parametrize()
@bounded(25)
def test_what_the_schema_admits_is_accepted(case: schemathesis.Case[Any], live_server: str) -> None:
    case.call_and_validate(base_url=live_server, checks=[accepts_what_the_schema_admits])
