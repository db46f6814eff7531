"""One body for every JSON error the server sends: ``{"error", "detail", "problems"}``.

``error`` is a stable code a program can branch on (``not_found``, ``invalid``, ...),
``detail`` says what went wrong in words, and ``problems``, with a 422, lists each thing
refused with where it is, the rule it breaks and its message.
The write route builds its own refusals with :func:`error_response`; everything raised
elsewhere (an :class:`HTTPException`, a refused parameter, FastAPI's own request
validation, an unexpected exception) goes through the handlers here, so a client reads
one shape whichever route or layer refused it.
"""

from __future__ import annotations

import http
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from fastapi import FastAPI
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from leaderlog.errors import (
    BuiltByAnotherVersion,
    LogRemoved,
    StoreDamaged,
    StoreReadOnly,
    StoreUnavailable,
)

__all__ = [
    "LONGEST_ECHO",
    "ErrorBody",
    "Problem",
    "documented",
    "error_response",
    "http_error_response",
    "invalid_request",
    "parameter_problems",
    "shortened",
    "unavailable_response",
    "unexpected_error",
    "use_error_body_for_validation",
]

# What an error (a 404, a 422) repeats of what was asked: its first characters, as other
# error messages quote (anyone can ask for an id or a parameter twenty thousand characters
# long, and would get it back whole).
LONGEST_ECHO = 60
# A 422's ``input``, though, is the value refused, often for its length: an id one
# character over its 64 is shown whole, one of thousands is not.
_LONGEST_INPUT_ECHO = 200


def shortened(text: str, longest: int = LONGEST_ECHO) -> str:
    """``text``, cut to ``longest`` characters with ``...`` when longer."""
    return text if len(text) <= longest else f"{text[: longest - 3]}..."


def _echoed(value: Any) -> Any:
    if isinstance(value, str):
        return shortened(value, _LONGEST_INPUT_ECHO)
    if isinstance(value, list | tuple):
        return [_echoed(item) for item in value]
    return value


class Problem(BaseModel):
    """One thing refused: a record's rule, or a parameter the request gave."""

    where: str | None = Field(
        None,
        description='What is refused: "record 0" (the first), "query parameter as_of", '
        '"path parameter claim_id", or "query" for a rule over several parameters.',
    )
    rule: str = Field(
        description="The rule broken: a record rule (schema, envelope, size, ...), "
        '"parameter" for a parameter the route does not take or one given twice, '
        '"value_error" for a value it refuses, or pydantic\'s error type '
        "(int_parsing, greater_than_equal, string_too_long, ...).",
    )
    message: str
    fields: list[dict[str, str]] | None = Field(
        None, description="For a record: each field at fault and its problem."
    )
    input: Any = Field(
        None, description="For a parameter: the value given (a list when given twice)."
    )


class ErrorBody(BaseModel):
    """The body of every JSON error response, whatever the route or status."""

    error: str = Field(
        description="A code to branch on: not_found, invalid, method_not_allowed, "
        "unauthorized, forbidden, conflict, too_large, unsupported_media_type, bad_json, "
        "unavailable, internal, ..."
    )
    detail: str = Field(description="What went wrong, in words.")
    problems: list[Problem] | None = Field(
        None, description="With a 422: each problem found, in order."
    )


# Codes by status for errors that carry no more specific one; the write route's own codes
# (bad_json, too_deep, repeated_header, ...) say more where it has more to say.
_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "too_large",
    # RFC 9110's name, whichever Python's phrase ("Request-URI Too Long" before 3.13).
    414: "uri_too_long",
    415: "unsupported_media_type",
    422: "invalid",
    500: "internal",
    503: "unavailable",
}


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def _code(status: int) -> str:
    known = _CODES.get(status)
    if known is not None:
        return known
    return "_".join(_phrase(status).lower().replace("-", " ").split()) or "error"


def error_response(
    status: int,
    error: str | None,
    detail: str,
    *,
    problems: Iterable[Mapping[str, object]] | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """An error in the one shape; ``error`` None takes the status's own code.

    An error is an answer for now: a feed or page missing today may exist after the next
    append, and caches keep a 404 without validators for a while by heuristics.
    """
    body: dict[str, object] = {"error": error or _code(status), "detail": detail}
    if problems is not None:
        body["problems"] = list(problems)
    sent = {"Cache-Control": "no-cache", **(headers or {})}
    return JSONResponse(body, status, headers=sent)


def unavailable_response(error: StoreUnavailable) -> JSONResponse:
    """The database's condition as a 503 saying only what anyone may be told (the full
    message can name the database's address). ``Retry-After: 1`` when trying again soon may
    work (busy, unreachable, a full disk); not when the log was removed, a projection rebuilt
    by another leaderlog version, or the file may not be written, which no retry mends."""
    lasting = isinstance(error, (LogRemoved, BuiltByAnotherVersion, StoreReadOnly, StoreDamaged))
    headers = {} if lasting else {"Retry-After": "1"}
    return error_response(503, "unavailable", error.public, headers=headers)


def _where(location: tuple[object, ...]) -> str | None:
    """``("query", "as_of")`` as ``"query parameter as_of"``, the way a write's problems
    name a record (``"record 0"``); ``("query",)``, a rule over several parameters, as
    ``"query"``."""
    if not location:
        return None
    part, *names = (shortened(str(name)) for name in location)
    if not names:
        return part
    if part in ("query", "path", "header", "cookie"):
        return f"{part} parameter {'.'.join(names)}"
    return f"{part} {'.'.join(names)}"


def parameter_problems(errors: Iterable[Mapping[str, Any]]) -> list[dict[str, object]]:
    """FastAPI's validation errors (its own, or :func:`~leaderlog.http._deps.invalid_parameter`'s)
    as ``problems``: where, the rule (pydantic's error type, such as ``int_parsing``, or
    ``parameter`` for one the route does not take or given twice), message and the input."""
    problems: list[dict[str, object]] = []
    for error in errors:
        problem: dict[str, object] = {
            "where": _where(tuple(error.get("loc", ()))),
            "rule": str(error.get("type", "invalid")),
            "message": str(error.get("msg", "")),
        }
        if error.get("input") is not None:
            problem["input"] = jsonable_encoder(_echoed(error["input"]))
        problems.append(problem)
    return problems


async def invalid_request(request: Request, error: Exception) -> Response:
    """A 422 naming each parameter refused; ``detail`` is their messages, located."""
    assert isinstance(error, RequestValidationError)
    problems = parameter_problems(error.errors())
    detail = "; ".join(
        f"{problem['where']}: {problem['message']}" if problem["where"] else str(problem["message"])
        for problem in problems
    )
    return error_response(422, "invalid", detail or "the request is invalid", problems=problems)


def _said(request: Request, error: HTTPException) -> str:
    """The exception's words; Starlette's bare status phrase is said more usefully."""
    detail = error.detail if isinstance(error.detail, str) else str(error.detail)
    if detail != _phrase(error.status_code):
        return detail
    # The path is the client's, as long as it makes it: repeated as an id is, shortened.
    path = shortened(request.url.path)
    if error.status_code == 404:
        return f"nothing is served at {path}"
    if error.status_code == 405:
        allowed = (error.headers or {}).get("Allow")
        takes = f": it takes {allowed}" if allowed else ""
        return f"{shortened(request.method)} is not allowed on {path}{takes}"
    return detail


def http_error_response(request: Request, error: HTTPException) -> Response:
    """An :class:`HTTPException` in the one shape, its headers (Allow, Retry-After) kept."""
    if error.status_code in (204, 304) or error.status_code < 200:
        return Response(status_code=error.status_code, headers=error.headers)
    return error_response(
        error.status_code, None, _said(request, error), headers=dict(error.headers or {})
    )


logger = logging.getLogger("leaderlog.http")


async def unexpected_error(request: Request, error: Exception) -> Response:
    """A fault of the server's own: a 500 in the one shape rather than a text body. The
    exception goes on to the server's log with its traceback; the client is told no more
    than that, since a message can hold what only the server should see.

    ``Connection: close``: the server closes the connection once the exception reaches it,
    and a client told so opens a new one for its next request rather than failing on this.
    """
    # The traceback that follows in the server's log names no request: this line does.
    logger.error(
        "%s %s: the server failed to answer (%s; its traceback follows)",
        request.method,
        request.url.path,
        type(error).__name__,
    )
    return error_response(
        500,
        "internal",
        "the server failed to answer this request; its log says why",
        headers={"Connection": "close"},
    )


def documented(descriptions: Mapping[int, str]) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for error statuses, each with :class:`ErrorBody` as its body."""
    return {
        status: {"model": ErrorBody, "description": description}
        for status, description in descriptions.items()
    }


_FASTAPI_VALIDATION = ("#/components/schemas/HTTPValidationError", "#/components/schemas/ErrorBody")


def _replaced(value: Any, old: str, new: str) -> Any:
    if isinstance(value, dict):
        return {key: _replaced(item, old, new) for key, item in value.items()}
    if isinstance(value, list):
        return [_replaced(item, old, new) for item in value]
    return new if value == old else value


def use_error_body_for_validation(app: FastAPI) -> None:
    """Have the app's OpenAPI document give :class:`ErrorBody` where FastAPI would declare
    its own validation error body (the 422 it adds to every route with parameters that
    declares none), since the handlers here answer those in the one shape too."""

    generate = app.openapi

    def openapi() -> dict[str, Any]:
        document = generate()
        schemas = document.get("components", {}).get("schemas", {})
        if "HTTPValidationError" not in schemas:
            return document
        old, new = _FASTAPI_VALIDATION
        replaced: dict[str, Any] = _replaced(document, old, new)
        document = replaced
        schemas = document["components"]["schemas"]
        del schemas["HTTPValidationError"]
        schemas.pop("ValidationError", None)
        if "ErrorBody" not in schemas:
            schemas["ErrorBody"] = _error_body_schema(schemas)
        app.openapi_schema = document
        return document

    app.openapi = openapi  # type: ignore[method-assign]


def _error_body_schema(schemas: dict[str, Any]) -> dict[str, Any]:
    """ErrorBody's schema, for a document whose routes never named it themselves."""
    generated = ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")
    for name, schema in generated.pop("$defs", {}).items():
        schemas.setdefault(name, schema)
    return generated
