"""The app against its own OpenAPI document: generated requests to every route.

No generated request may get a 5xx, and every response must match the schema the document
gives for it. Examples are bounded (and derandomized) so each route takes about a second.
Writes carry a valid token, so generated records reach the record checks and the rules.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from typing import Any

import httpx
import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from leaderlog.http import create_app
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
