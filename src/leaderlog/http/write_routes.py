"""``POST /api/events``: append one record or a list of them (one atomic batch), with a token.

Checks run cheapest first and nothing is written unless every record passes:
401/403 (token) → 413 (size) → 415 (media type) → 400 (JSON) → 422 (records and rules)
→ 409 (expected version or event id) → 201 appended / 200 already present.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from leaderlog._json import JSONDecodeError, loads
from leaderlog.errors import BatchError, ConcurrencyError, DuplicateEventError, TokenError
from leaderlog.events import event_schema
from leaderlog.log import EventLog
from leaderlog.tokens import Tokens

__all__ = ["MAX_BODY_BYTES", "MAX_RECORDS", "write_router"]

MAX_BODY_BYTES = 1024 * 1024
MAX_RECORDS = 1000
MAX_DEPTH = 64


class Appended(BaseModel):
    appended: int
    already_present: int
    positions: list[int]


class Problem(BaseModel):
    where: str | None = None
    rule: str
    message: str
    fields: list[dict[str, str]] | None = None


class ErrorBody(BaseModel):
    error: str
    detail: str
    problems: list[Problem] | None = None


def _error(status: int, error: str, detail: str, **extra: Any) -> JSONResponse:
    headers = extra.pop("headers", None)
    return JSONResponse({"error": error, "detail": detail, **extra}, status, headers=headers)


def _record_example() -> dict[str, Any]:
    return {
        "type": "claim.confirmed",
        "data": {
            "claim": "fox-ice-shakeup-2025-05-gordon-hsi-acting",
            "source": "fox-ice-shakeup-2025-05",
            "effective": {"date": "2025-06-02", "qualifier": "on"},
        },
        "expected_version": 1,
    }


def _request_body_schema() -> dict[str, Any]:
    schema = event_schema()
    definitions = schema.pop("$defs")
    record = {"oneOf": schema["oneOf"]}
    return {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "oneOf": [record, {"type": "array", "items": record, "maxItems": MAX_RECORDS}],
                    "$defs": definitions,
                },
                "examples": {
                    "one record": {"value": _record_example()},
                    "a batch": {"value": [_record_example()]},
                },
            }
        },
    }


async def _read_body(request: Request) -> bytes | None:
    """The body, or None once it exceeds the limit (read no further than that)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            return None
    return bytes(body)


def write_router(get_log: Callable[[Request], EventLog]) -> APIRouter:
    """The write route, given how a request finds the application's :class:`EventLog`."""
    router = APIRouter()
    # One Tokens per store, so its table is ensured once rather than on every request.
    tokens_by_store: dict[int, Tokens] = {}

    def tokens_for(log: EventLog) -> Tokens:
        tokens = tokens_by_store.get(id(log.store))
        if tokens is None:
            tokens = tokens_by_store[id(log.store)] = Tokens(log.store)
        return tokens

    responses: dict[int | str, dict[str, Any]] = {
        200: {"model": Appended, "description": "Every record was already present."},
        201: {"model": Appended, "description": "Appended; the positions, in record order."},
        400: {"model": ErrorBody, "description": "The body is not JSON."},
        401: {"model": ErrorBody, "description": "No bearer token."},
        403: {"model": ErrorBody, "description": "Unknown or revoked token."},
        409: {"model": ErrorBody, "description": "Expected version or event id conflict."},
        413: {"model": ErrorBody, "description": f"Body over {MAX_BODY_BYTES} bytes."},
        415: {"model": ErrorBody, "description": "Content-Type is not application/json."},
        422: {"model": ErrorBody, "description": "Invalid records; every problem is named."},
    }

    @router.post(
        "/api/events",
        tags=["write"],
        summary="Append records",
        status_code=201,
        response_model=Appended,
        responses=responses,
        openapi_extra={"requestBody": _request_body_schema()},
    )
    async def append_events(request: Request) -> JSONResponse:
        """Append one record or a list of records as one atomic batch.

        Needs `Authorization: Bearer <token>` (see `leaderlog token create NAME`); the
        token's name becomes the events' `actor`. Records without `event_id` get one derived
        from their content, so sending the same record twice answers 200 the second time.
        At most 1 MiB and 1000 records per request.
        """
        log = get_log(request)
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return _error(
                401,
                "unauthorized",
                "send Authorization: Bearer <token> (create one with `leaderlog token create`)",
                headers={"WWW-Authenticate": 'Bearer realm="leaderlog"'},
            )
        try:
            actor = await tokens_for(log).check(token.strip())
        except TokenError as error:
            return _error(403, "forbidden", str(error))

        body = await _read_body(request)
        if body is None:
            return _error(413, "too_large", f"the body is over {MAX_BODY_BYTES} bytes")
        media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media_type != "application/json":
            return _error(415, "unsupported_media_type", "send Content-Type: application/json")
        try:
            raw = loads(body)
        except JSONDecodeError as error:
            return _error(400, "bad_json", f"the body is not valid JSON: {error}")
        if isinstance(raw, list) and len(raw) > MAX_RECORDS:
            return _error(413, "too_many_records", f"at most {MAX_RECORDS} records per request")

        try:
            outcome = await log.append_raw(raw, actor=actor)
        except BatchError as error:
            return _error(
                422,
                "invalid",
                f"{len(error.problems)} problem(s); nothing was written",
                problems=[problem.as_dict() for problem in error.problems],
            )
        except (ConcurrencyError, DuplicateEventError) as error:
            return _error(409, "conflict", str(error))
        status = 201 if outcome.appended else 200
        return JSONResponse(
            {
                "appended": outcome.appended,
                "already_present": outcome.already_present,
                "positions": list(outcome.positions),
            },
            status,
        )

    return router
