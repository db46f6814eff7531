"""``POST /api/events``: append one record or a list of them (one atomic batch), with a token.

Checks run cheapest first and nothing is written unless every record passes:
422 (a query parameter: the route takes none) → 401/403 (token) → 415 (media type) →
413 (size) → 400 (JSON, nesting) → 422 (records and rules) → 409 (expected version or
event id) → 201 appended / 200 already present.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from email.message import EmailMessage, Message
from email.utils import collapse_rfc2231_value
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field
from starlette.requests import ClientDisconnect

from leaderlog._json import (
    MAX_INPUT_DEPTH,
    InputTooDeep,
    JSONDecodeError,
    described,
    loads_input,
)
from leaderlog.errors import (
    BatchError,
    ConcurrencyError,
    DuplicateEventError,
    RecordError,
    TokenError,
)
from leaderlog.events import EVENT_TYPES, Record, check_derived_id, event_schema, parse_record
from leaderlog.http._deps import check_parameters
from leaderlog.http._errors import (
    ErrorBody,
    error_response,
    parameter_problems,
    shortened,
)
from leaderlog.log import MAX_LINE_BYTES, EventLog, too_large
from leaderlog.tokens import Tokens

__all__ = ["MAX_BODY_BYTES", "MAX_DEPTH", "MAX_RECORDS", "write_router"]


# Headers a write takes one value of.
_SINGLE_HEADERS = ("Authorization", "Content-Type", "Content-Length", "Content-Encoding")
MAX_BODY_BYTES = 1024 * 1024
MAX_RECORDS = 1000
# Deeper JSON than any record needs; also keeps values within what canonical JSON can encode.
MAX_DEPTH = MAX_INPUT_DEPTH
# Set by the log, never by a writer: accepting them would let a token holder write under
# another actor's name or at another time.
ENVELOPE_FIELDS = (
    "position",
    "stream",
    "version",
    "schema_version",
    "recorded_at",
    "actor",
    "hash",
)

# The JSON parser's words for a body holding more after its first value.
_SEVERAL_VALUES = "unexpected content after document"
_ONE_LIST = "a body is one JSON value: send several records as one list, [{...}, {...}]"

_bearer = HTTPBearer(
    auto_error=False,
    scheme_name="token",
    description="A write token from `leaderlog token create NAME`; NAME becomes the `actor`.",
)


class Appended(BaseModel):
    appended: int
    already_present: int
    positions: list[int]
    projected: bool = Field(
        description="False when the server's projections had not applied the write within "
        "the 5 s it waits: the next read may not show it yet."
    )


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


_COMPONENTS = "#/components/schemas/"


def record_components() -> dict[str, Any]:
    """The record schema (``leaderlog schema``) as OpenAPI components: each record type
    (``ClaimReportedRecord``...), ``Record`` (one of them, told apart by ``type``) and the
    parts they share (``RecordFuzzyDate``...), each titled by its name. Generated clients
    name their classes by title: inlined in the request body twice (a record, a list of
    them), the shared parts came out as two classes of one name and the route was left out,
    and their names clashed with those of the answers (``FuzzyDate``)."""
    schema = event_schema()
    renamed = {name: f"Record{name}" for name in schema["$defs"]}

    def referenced(value: Any) -> Any:
        if isinstance(value, list):
            return [referenced(item) for item in value]
        if not isinstance(value, dict):
            return value
        reference = value.get("$ref")
        if isinstance(reference, str) and reference.startswith("#/$defs/"):
            return {**value, "$ref": _COMPONENTS + renamed[reference.removeprefix("#/$defs/")]}
        return {key: referenced(item) for key, item in value.items()}

    components = {
        renamed[name]: {**referenced(part), "title": renamed[name]}
        for name, part in schema["$defs"].items()
    }
    mapping = {}
    for branch in schema["oneOf"]:
        event_type = branch["title"]
        name = f"{EVENT_TYPES[event_type].__name__}Record"
        components[name] = {**referenced(branch), "title": name}
        mapping[event_type] = _COMPONENTS + name
    components["Record"] = {
        "title": "Record",
        "oneOf": [{"$ref": target} for target in mapping.values()],
        "discriminator": {"propertyName": "type", "mapping": mapping},
    }
    return components


def use_record_components(app: FastAPI) -> None:
    """Add :func:`record_components` to the app's OpenAPI document, which the write route's
    request body refers to."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        document = generate()
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        # The document is generated once and kept: added to once.
        if "Record" not in schemas:
            schemas.update(record_components())
        return document

    app.openapi = openapi  # type: ignore[method-assign]


def _request_body_schema() -> dict[str, Any]:
    record = {"$ref": _COMPONENTS + "Record"}
    return {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "oneOf": [
                        record,
                        {"type": "array", "items": record, "minItems": 1, "maxItems": MAX_RECORDS},
                    ],
                },
                "examples": {
                    "one record": {
                        "summary": "Confirm a claim, expecting its stream at version 1",
                        "value": _record_example(),
                    },
                    "a batch": {
                        "summary": "A list is one atomic batch: all of it or none",
                        "value": [
                            {
                                "type": "person.registered",
                                "data": {"person": "jane-doe", "name": "Jane Doe"},
                            },
                            {
                                "type": "person.updated",
                                "data": {"person": "jane-doe", "aliases": ["J. Doe"]},
                                "event_id": "0196f2a4-7c3e-7b21-9a4d-2f0c8e1b5a77",
                            },
                        ],
                    },
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


def _media_type(header: str) -> tuple[str, str | None, int]:
    """A Content-Type's media type, its ``charset`` (lower-cased) and how many times it gives
    a charset, read by the standard library's MIME header parser (quoted values, spaces and
    case as RFC 9110 allows)."""
    message = EmailMessage()
    # The legacy parser lists every parameter; the modern one keeps the first of a name.
    every = Message()
    try:
        message["Content-Type"] = header
        every["Content-Type"] = header
        given = [value for name, value in every.get_params() or [] if name.lower() == "charset"]
    except (IndexError, ValueError, RecursionError):
        # Some malformed headers break the parser itself (an RFC 2231 value in UTF-16 cut
        # short, a continuation with no value, comments nested hundreds deep): unreadable,
        # so refused as below.
        return "text/plain", None, 0
    # An unreadable header reads as text/plain, which is refused like any other type.
    charset = message.get_content_charset()
    if charset is None and given:
        # Given but unreadable to the modern parser (empty, not ASCII): not UTF-8 either.
        charset = collapse_rfc2231_value(given[0]).lower()
    return message.get_content_type(), charset, len(given)


def _with_advice(error: JSONDecodeError) -> str:
    """Why the body is not JSON; for several values in a row, as a file of records for
    ``import`` holds them (or such a file sent by ``curl -d``, which drops the line ends),
    how to send them instead."""
    reason = described(error)
    if str(error.msg).startswith(_SEVERAL_VALUES):
        reason += f" ({_ONE_LIST}; JSON Lines are for leaderlog import)"
    return reason


def _parse(raw: Any) -> list[Record]:
    """Every record of the body; :class:`BatchError` naming every problem otherwise."""
    items = raw if isinstance(raw, list) else [raw]
    if not items:
        raise BatchError([RecordError("no records given", where="record 0", rule="schema")])
    records: list[Record] = []
    problems: list[RecordError] = []
    for index, item in enumerate(items):
        where = f"record {index}"
        if isinstance(item, dict):
            envelope = [name for name in ENVELOPE_FIELDS if name in item]
            if envelope:
                problems.append(
                    RecordError(
                        f"{', '.join(envelope)} {'is' if len(envelope) == 1 else 'are'} "
                        "set by the log, not by a writer",
                        where=where,
                        rule="envelope",
                        fields=[(name, "set by the log; leave it out") for name in envelope],
                    )
                )
                continue
        # Refused before its fields are read as import refuses a line's record: the limit
        # itself, on the record's data and meta, is the log's to check, so that both entry
        # points accept a record of exactly MAX_RECORD_BYTES (its type and other keys come
        # on top).
        if too_large(item):
            problems.append(
                RecordError(
                    f"record is larger than {MAX_LINE_BYTES} bytes", where=where, rule="size"
                )
            )
            continue
        try:
            record = parse_record(item)
        except RecordError as error:
            problems.append(error.located(where))
            continue
        try:
            # An exported envelope too: over HTTP, a writer's ids are its own or none.
            check_derived_id(record.event_id, record.event)
        except RecordError as error:
            problems.append(error.located(where))
            continue
        records.append(record)
    if problems:
        raise BatchError(problems)
    return records


def _refusal(problems: Sequence[Mapping[str, object]]) -> str:
    """``detail`` of a refused write: its first problem, located, and how many more (a
    client showing only ``detail`` still says what to mend; ``problems`` has them all)."""
    first = problems[0]
    detail = f"{first['where']}: {first['message']}" if first["where"] else str(first["message"])
    if len(problems) > 1:
        more = len(problems) - 1
        detail += f"; and {more} more problem{'s' if more > 1 else ''}"
    return f"{detail}; nothing was written"


def _conflict_located(conflict: DuplicateEventError, records: list[Record]) -> str:
    """The conflict, naming the record of the batch that holds the id as the 422 names
    records (a batch may hold hundreds)."""
    holder = next(
        (index for index, record in enumerate(records) if record.event_id == conflict.event_id),
        None,
    )
    return str(conflict) if holder is None else f"record {holder}: {conflict}"


def write_router(
    get_log: Callable[[Request], EventLog],
    applied_through: Callable[[Request, int], Awaitable[bool]],
) -> APIRouter:
    """The write route, given how a request finds the application's :class:`EventLog`.

    ``applied_through(request, position)`` is awaited before a write is answered, so that
    the writer's next read sees what it wrote; what it returns (whether the projections got
    there in time) is the answer's ``projected``.
    """
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
        400: {
            "model": ErrorBody,
            "description": f"The body is not JSON (not UTF-8, a name twice in one object, an "
            f"integer beyond 64 bits), or nests deeper than {MAX_DEPTH} levels; a header that "
            "takes one value is given twice.",
        },
        401: {"model": ErrorBody, "description": "No bearer token."},
        403: {"model": ErrorBody, "description": "Unknown or revoked token."},
        408: {
            "model": ErrorBody,
            "description": "The body did not all arrive within `leaderlog serve "
            "--body-timeout` seconds of the headers; nothing was written, and the connection "
            "is closed.",
        },
        409: {"model": ErrorBody, "description": "Expected version or event id conflict."},
        413: {
            "model": ErrorBody,
            "description": f"Body over {MAX_BODY_BYTES} bytes or over {MAX_RECORDS} records.",
        },
        415: {
            "model": ErrorBody,
            "description": "Content-Type is not application/json, or gives a charset other "
            "than UTF-8 (or more than one); or the body is compressed (Content-Encoding).",
        },
        422: {
            "model": ErrorBody,
            "description": "Invalid records, or a query parameter (the route takes none); "
            "`problems` names each with its record and fields, or the parameter.",
        },
        503: {
            "model": ErrorBody,
            "description": "The database is busy or unreachable; nothing was written. Retry "
            "after the seconds in Retry-After.",
        },
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
    async def append_events(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
    ) -> JSONResponse:
        """Append one record or a list of records as one atomic batch.

        Needs `Authorization: Bearer <token>` (see `leaderlog token create NAME`); the
        token's name becomes the events' `actor`. Records without `event_id` get one derived
        from their content, so sending the same record twice answers 200 the second time.
        `expected_version` (an integer, `"no_stream"` or `"any"`) guards the record's stream.
        Limits: 1 MiB per body, 1000 records per body, 63 KiB per record, 64 levels of
        nesting. Envelope fields (`position`, `actor`, `recorded_at`, ...) are set by the log.

            curl -H "Authorization: Bearer $T" -H 'Content-Type: application/json' \\
                 -d @record.json http://127.0.0.1:8000/api/events
        """
        try:
            check_parameters(request, lenient=False)
        except RequestValidationError as refused:
            problems = parameter_problems(refused.errors())
            return error_response(422, "invalid", _refusal(problems), problems=problems)
        for name in _SINGLE_HEADERS:
            times = len(request.headers.getlist(name))
            if times > 1:
                # Which one would count depends on the server in between: refuse to guess.
                return error_response(
                    400, "repeated_header", f"{name} is given {times} times: give it once"
                )
        token = credentials.credentials.strip() if credentials is not None else ""
        if not token:
            # One was sent, in another form ("Bearer<TAB>token", Basic): say it was seen.
            sent = (
                "the Authorization header sent is not the word Bearer, a space and a token: "
                if request.headers.get("authorization", "").strip()
                else ""
            )
            return error_response(
                401,
                "unauthorized",
                f"{sent}send Authorization: Bearer <token> (create one with `leaderlog token "
                "create`)",
                headers={"WWW-Authenticate": 'Bearer realm="leaderlog"'},
            )
        log = get_log(request)
        try:
            actor = await tokens_for(log).check(token)
        except TokenError as error:
            return error_response(403, "forbidden", str(error))

        # Told by the headers: refused before the body is asked for (a client that sent
        # Expect: 100-continue then never sends it).
        media_type, charset, charsets_given = _media_type(request.headers.get("content-type", ""))
        if media_type != "application/json":
            return error_response(
                415, "unsupported_media_type", "send Content-Type: application/json"
            )
        if charsets_given > 1:
            # Readers differ on which one counts, as they do for a header given twice.
            return error_response(
                415,
                "unsupported_media_type",
                f"charset is given {charsets_given} times in Content-Type: give it once, as utf-8",
            )
        if charset not in (None, "utf-8", "utf8"):
            # JSON is UTF-8 (RFC 8259): a body said to be in another encoding is not read.
            return error_response(
                415,
                "unsupported_media_type",
                f"charset {shortened(charset)!r}: send the JSON as UTF-8",
            )
        encoding = request.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            return error_response(
                415,
                "unsupported_media_type",
                f"Content-Encoding {shortened(encoding)!r} is not accepted: "
                "send the JSON uncompressed",
                headers={"Accept-Encoding": "identity"},
            )
        try:
            body = await _read_body(request)
        except ClientDisconnect:
            # The writer hung up before its body was whole: nothing to append, nobody to
            # answer, and no fault of the server's to log.
            return error_response(
                400, "incomplete", "the body ended before Content-Length was reached"
            )
        if body is None:
            return error_response(413, "too_large", f"the body is over {MAX_BODY_BYTES} bytes")
        try:
            # A byte order mark is not JSON, but editors write one; import accepts it too.
            raw = loads_input(body.removeprefix(b"\xef\xbb\xbf"))
        except InputTooDeep:
            return error_response(400, "too_deep", f"the body nests deeper than {MAX_DEPTH} levels")
        except JSONDecodeError as error:
            return error_response(
                400, "bad_json", f"the body is not valid JSON: {_with_advice(error)}"
            )
        if isinstance(raw, list) and len(raw) > MAX_RECORDS:
            return error_response(
                413, "too_many_records", f"at most {MAX_RECORDS} records per request"
            )

        try:
            records = _parse(raw)
            labels = [f"record {index}" for index in range(len(records))]
            outcome = await log.append_records(records, actor=actor, labels=labels)
        except BatchError as error:
            problems = [problem.as_dict() for problem in error.problems]
            return error_response(422, "invalid", _refusal(problems), problems=problems)
        except ConcurrencyError as error:
            return error_response(409, "conflict", str(error))
        except DuplicateEventError as error:
            return error_response(409, "conflict", _conflict_located(error, records))
        # StoreUnavailable goes to the app's handler, as from every other route: a log found
        # removed then answers so on every route, and is logged once.
        projected = True
        if outcome.positions:
            projected = await applied_through(request, max(outcome.positions))
        status = 201 if outcome.appended else 200
        return JSONResponse(
            {
                "appended": outcome.appended,
                "already_present": outcome.already_present,
                "positions": list(outcome.positions),
                # False when the wait ran out: the next read may not show the write yet.
                "projected": projected,
            },
            status,
        )

    return router
