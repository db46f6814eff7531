"""The read API: the CLI's queries as JSON, with the same parameters.

Errors are the one JSON shape of :mod:`leaderlog.http._errors`: 404 (``not_found``) for an
unknown org, post, person, claim or position, 422 (``invalid``, each parameter refused in
``problems``) for a parameter that cannot be understood (an unknown or repeated one too), 503
(``unavailable``) while projections are missing or the database cannot answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field
from starlette.responses import Response

from leaderlog.errors import ProjectionError
from leaderlog.events import EVENT_TYPES
from leaderlog.http._answers import (
    AuditAnswer,
    ClaimAnswer,
    Envelope,
    Health,
    HistoryAnswer,
    StateAnswer,
    Verification,
)
from leaderlog.http._conditional import get_and_head, json_response
from leaderlog.http._deps import (
    DIGITS_ONLY,
    check_parameters,
    check_utf8_parameters,
    invalid_parameter,
    log_of,
    queries_of,
    runners_of,
    services_of,
)
from leaderlog.http._errors import documented
from leaderlog.projections import InvalidQuery, UnknownEntity
from leaderlog.projections._isolation import is_builtin
from leaderlog.projections.queries import ATTRIBUTION_KINDS, CLAIM_STATUSES
from leaderlog.projections.query_input import MAX_TIME_LENGTH
from leaderlog.projections.runner import LeftOut

__all__ = ["router"]


async def _only_known_parameters(request: Request) -> None:
    check_parameters(request, lenient=False)
    check_utf8_parameters(request, _PATH_NAMES)


# Path parameters as the queries name them (their messages start with that name).
_PATH_NAMES = {"claim_id": "claim"}


# Every read route refuses a parameter it does not take, and may find the database busy.
router = APIRouter(
    tags=["read API"],
    dependencies=[Depends(_only_known_parameters)],
    responses=documented(
        {
            422: "A parameter cannot be understood, or the route does not take it; "
            "`problems` names each (`where`, `rule`, `message`, `input`).",
            503: "The database is busy or unreachable, or the projections are not built "
            "yet; retry after the seconds in Retry-After. Without Retry-After, no retry "
            "helps: the log was removed, or another leaderlog version rebuilt a projection.",
        }
    ),
)

# What a text parameter takes is stated in the schema (json_schema_extra on its string) and
# checked by the queries, which the CLI shares: their messages name the forms a value may
# take ("known_at must be a log position (such as 42) or an RFC 3339 time ..."), where a
# pattern FastAPI checked would answer "String should match pattern '...'" instead.
_CONTROL = r"\x00-\x1f\x7f-\x9f"
# A name stored may hold tab, line feed and carriage return, and a filter on it too.
_CONTROL_IN_NAMES = r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
_DAY = {"format": "date"}
_TIME_OR_DAY = {"maxLength": MAX_TIME_LENGTH, "anyOf": [{"format": "date-time"}, _DAY]}


def _not_blank(control: str) -> dict[str, Any]:
    """Some character that is not a space, and none of ``control``."""
    return {"pattern": f"^[^{control}]*[^\\s{control}][^{control}]*$"}


PositionOrTime = Annotated[
    str,
    Field(
        json_schema_extra={
            "maxLength": MAX_TIME_LENGTH,
            "anyOf": [{"pattern": "^[0-9]+$"}, {"format": "date-time"}, _DAY],
        }
    ),
]
KnownAt = Annotated[
    PositionOrTime | None,
    Query(
        description="As known at: a log position, a whole number such as 12, or an RFC 3339 "
        "recorded time with its offset (2025-05-29T14:00:00Z), or a day YYYY-MM-DD meaning "
        "its end (UTC). A position beyond the log's head is refused. Default: everything.",
        examples=["12", "2025-05-29T14:00:00Z", "2025-05-29"],
    ),
]
# The longest a value may be is stated in the schema and checked by the queries too, in the
# CLI's words ("org is 65 characters long; no id is longer than 64").
Id = Annotated[str, Field(json_schema_extra={**_not_blank(_CONTROL), "maxLength": 64})]
Slug = Annotated[
    Id | None,
    Query(
        description="An id (a lower-case slug, such as ice, robert-hammer or "
        "fox-ice-shakeup-2025-05): not blank, without control "
        "characters; one not recorded is a 404.",
    ),
]
NameFilter = Annotated[
    Annotated[str, Field(json_schema_extra={**_not_blank(_CONTROL_IN_NAMES), "maxLength": 300})]
    | None,
    Query(
        description="A name as recorded: not blank, without control characters other than "
        "tab and line breaks; one not recorded is a 404.",
    ),
]
TimeOrDay = Annotated[
    Annotated[str, Field(json_schema_extra=_TIME_OR_DAY)] | None,
    Query(
        description="An RFC 3339 time with its offset (2025-05-29T14:00:00Z) or a day "
        "YYYY-MM-DD (UTC): `from` takes in the day from its start, `to` up to its end. "
        "`from` after `to` is refused (422).",
        examples=["2025-05-29T14:00:00Z", "2025-05-29"],
    ),
]


_ERRORS = documented({404: "Unknown organisation, post, person or claim."})


def _answered(answer: type[BaseModel]) -> dict[int | str, dict[str, Any]]:
    """The route's documented responses: its answer's members (see ._answers), its errors."""
    return {200: {"model": answer, "description": "The answer."}, **_ERRORS}


MAX_EVENTS = 1000
# A state or an org's history of thousands of posts takes the server tens of seconds and
# hundreds of megabytes for an answer of as many (a history of 5,000 posts: 30 s, 220 MB).
MAX_STATE_POSTS = 1000


async def _answer(
    request: Request,
    query: Callable[[], Awaitable[Any]],
    in_path: Mapping[str, str] | None = None,
) -> Response:
    """The answer of ``query()`` as JSON, or its error as the status it stands for; asked
    only while fewer than ``ANSWERS_AT_ONCE`` others are worked out (``Services.answering``).

    ``in_path`` maps a query's parameter names to the path parameters that carry them
    (``claim`` to ``claim_id``), so that a refused one is located in the path."""
    async with services_of(request).answering:
        if await request.is_disconnected():
            # Given up while it waited its turn: worked out, it would only hold back the
            # answers still awaited behind it.
            return Response(status_code=204)
        try:
            value = await query()
        except UnknownEntity as error:
            raise HTTPException(404, str(error)) from None
        except InvalidQuery as error:
            raise _refused(request, error, in_path or {}) from None
        except ProjectionError as error:
            raise HTTPException(503, str(error), headers={"Retry-After": "1"}) from None
        return await json_response(request, value)


def _refused(
    request: Request, error: InvalidQuery, in_path: Mapping[str, str]
) -> RequestValidationError:
    """The 422 of every value the query refused, each located where the request has it."""
    problems: list[Any] = []
    for refusal in error.all:
        path_name = in_path.get(refusal.parameter or "")
        if path_name is not None:
            given = request.path_params.get(path_name)
            found = invalid_parameter(str(refusal), given, path_name, where="path")
        else:
            given = request.query_params.get(refusal.parameter) if refusal.parameter else None
            message = refusal.named_as(refusal.parameter) if refusal.parameter else str(refusal)
            found = invalid_parameter(message, given, refusal.parameter)
        problems += found.errors()
    return RequestValidationError(problems)


@get_and_head(
    router,
    "/api/state",
    responses=_answered(StateAnswer),
    summary="Current or historical leadership",
)
async def state(
    request: Request,
    org: Slug = None,
    as_of: Annotated[
        Annotated[str, Field(json_schema_extra={**_DAY, "maxLength": 32})] | None,
        Query(
            description="Effective date, a day YYYY-MM-DD (default: today, UTC).",
            examples=["2025-06-15"],
        ),
    ] = None,
    known_at: KnownAt = None,
) -> Response:
    """Who holds each post on `as_of`, as known at `known_at` (`leaderlog state`).

    `org` limits the answer to that organisation and everything under it. Each post lists
    its holders, pending changes (expected, announced or rumored), vacancy and conflicts.
    At most 1,000 posts are answered at once (422 beyond): on a large log, ask per `org`.
    """
    return await _answer(
        request, lambda: queries_of(request).state(org, as_of, known_at, max_posts=MAX_STATE_POSTS)
    )


@get_and_head(
    router,
    "/api/history",
    responses=_answered(HistoryAnswer),
    summary="Timelines of a person, post or org",
)
async def history(
    request: Request,
    person: Slug = None,
    post: Slug = None,
    org: Slug = None,
    known_at: KnownAt = None,
) -> Response:
    """Every tenure with start, end, cause and evidence (`leaderlog history`).

    Give exactly one of `person`, `post` or `org` (an org means its whole subtree). An org
    subtree of more than 1,000 posts is refused (422): ask per sub-organisation.
    """
    return await _answer(
        request,
        lambda: queries_of(request).history(
            person=person, post=post, org=org, known_at=known_at, max_posts=MAX_STATE_POSTS
        ),
    )


@get_and_head(
    router,
    "/api/claims/{claim_id}",
    responses=_answered(ClaimAnswer),
    summary="One claim's lifecycle",
)
async def claim(
    request: Request,
    claim_id: Annotated[Id, Path(description="A claim's id; not blank.")],
    known_at: KnownAt = None,
) -> Response:
    """Reported, then confirmed / corrected / disputed / retracted, with every source."""
    return await _answer(
        request,
        lambda: queries_of(request).claim(claim_id, known_at),
        in_path={called: name for name, called in _PATH_NAMES.items()},
    )


@get_and_head(
    router,
    "/api/audit",
    responses=_answered(AuditAnswer),
    summary="Audit queries over recorded events",
)
async def audit(
    request: Request,
    source: Slug = None,
    publisher: NameFilter = None,
    actor: NameFilter = None,
    type: Annotated[
        Annotated[str, Field(json_schema_extra={"enum": sorted(EVENT_TYPES), "maxLength": 64})]
        | None,
        Query(description="An event type, such as claim.retracted."),
    ] = None,
    status: Annotated[
        Annotated[str, Field(json_schema_extra={"enum": list(CLAIM_STATUSES), "maxLength": 32})]
        | None,
        Query(
            description="The claim's status now (its latest step, whenever the event was): "
            f"{', '.join(CLAIM_STATUSES)}."
        ),
    ] = None,
    attribution: Annotated[
        Annotated[str, Field(json_schema_extra={"enum": list(ATTRIBUTION_KINDS), "maxLength": 32})]
        | None,
        Query(
            description="The claim's attribution now (as last corrected, if it was): "
            f"{', '.join(ATTRIBUTION_KINDS)}."
        ),
    ] = None,
    recorded_from: Annotated[TimeOrDay, Query(alias="from")] = None,
    recorded_to: Annotated[TimeOrDay, Query(alias="to")] = None,
    after: Annotated[
        int, Query(ge=0, description="Page on: the previous `next_after`."), DIGITS_ONLY
    ] = 0,
    limit: Annotated[
        int, Query(ge=1, le=10_000, description="At most this many events."), DIGITS_ONLY
    ] = 500,
) -> Response:
    """Events matching every filter given, oldest first (`leaderlog audit`).

    For example every claim from anonymous sources that was later retracted:
    `/api/audit?attribution=anonymous&status=retracted`.
    """
    return await _answer(
        request,
        lambda: queries_of(request).audit(
            source=source,
            publisher=publisher,
            actor=actor,
            type=type,
            status=status,
            attribution=attribution,
            recorded_from=recorded_from,
            recorded_to=recorded_to,
            after=after,
            limit=limit,
        ),
    )


@get_and_head(
    router,
    "/api/events",
    responses={200: {"model": list[Envelope], "description": "The envelopes."}},
    summary="The raw log, envelopes included",
)
async def events(
    request: Request,
    after: Annotated[int, Query(ge=0, description="Start after this position."), DIGITS_ONLY] = 0,
    limit: Annotated[
        int, Query(ge=1, le=MAX_EVENTS, description="At most this many events."), DIGITS_ONLY
    ] = 100,
) -> Response:
    """Envelopes in position order (`leaderlog events --json`); page on with `after`."""
    found = await log_of(request).events(after=after, limit=limit)
    return await json_response(request, [event.envelope() for event in found])


@get_and_head(
    router,
    "/api/events/{position}",
    responses={
        200: {"model": Envelope, "description": "The envelope."},
        **documented({404: "No event at that position."}),
    },
    summary="One event by position",
)
async def event(request: Request, position: Annotated[int, Path(ge=1), DIGITS_ONLY]) -> Response:
    found = await log_of(request).store.get(position)
    if found is None:
        raise HTTPException(404, f"no event at position {position}")
    return await json_response(request, found.envelope())


@get_and_head(
    router,
    "/api/verify",
    responses={200: {"model": Verification, "description": "The report."}},
    summary="Check the hash chain and counts",
)
async def verify(request: Request) -> Response:
    """The `leaderlog verify` report: `ok`, and the first bad position if any."""
    report = await services_of(request).verify()
    return await json_response(request, asdict(report))


@get_and_head(
    router,
    "/healthz",
    responses={200: {"model": Health, "description": "The server's health."}},
    summary="Liveness, log head and projection lag",
)
async def healthz(request: Request) -> Response:
    """``ok`` while the server runs, its projections are the versions it reads (not rebuilt
    by another leaderlog version) and the built-in ones apply the log; each projection's
    checkpoint and lag behind the log, and ``error`` for one that is left out (its module
    does not load, or changed) or could not apply the log at its last try (its own failure,
    or the database's: a full disk, say).
    """
    runners = runners_of(request)
    pairs = [
        (projection, status)
        for runner in runners
        for projection, status in zip(runner.projections, await runner.status(), strict=True)
    ]
    # Projections of a runner that has not prepared them yet (the user projections, which
    # catch up once the server answers): one found at another version is about to be
    # rebuilt by this server, not rebuilt since by another process.
    to_prepare = {
        projection.name
        for runner in runners
        if not runner.prepared
        for projection in runner.projections
    }
    unprepared = {name: f for runner in runners for name, f in runner.unprepared.items()}
    failing = {name: f for runner in runners for name, f in runner.failing.items()}
    # Each projection whose runner could not go on for the database's trouble (a full disk).
    stalled = {
        projection.name: runner.stalled
        for runner in runners
        if runner.stalled is not None
        for projection in runner.projections
    }
    head = max((s.head for _, s in pairs), default=(await log_of(request).store.head())[0])
    listed = []
    for projection, status in pairs:
        entry: dict[str, Any] = {
            "name": status.name,
            "version": status.version,
            "checkpoint": status.checkpoint,
            # Against the head listed (the latest any runner read), not an earlier one.
            "lag": max(head - status.checkpoint, 0),
        }
        if isinstance(projection, LeftOut):
            entry["error"] = f"left out: {projection.reason}"
        elif (failure := unprepared.get(status.name) or failing.get(status.name)) is not None:
            entry["error"] = str(failure)
        elif (trouble := stalled.get(status.name)) is not None:
            entry["error"] = f"cannot apply the log: {trouble}"
        elif status.version != projection.version and is_builtin(projection):
            entry["error"] = (
                f"rebuilt by another leaderlog version (version {status.version} in the "
                f"database; this server reads version {projection.version}): restart it"
            )
        elif status.version != projection.version and status.name not in to_prepare:
            # A command rebuilt it from its module as changed, and this server has not yet
            # looked (it notices on its next catch-up): left out, as it will then say. (One
            # still to prepare is this server's to rebuild, as it starts following.)
            entry["error"] = (
                f"left out: this server loaded its module at version {projection.version}, "
                f"but the database holds version {status.version}, rebuilt since from the "
                "module as changed; restart the server to load it"
            )
        listed.append(entry)
    return await json_response(
        request,
        {
            "ok": all(
                status.version == projection.version
                for projection, status in pairs
                if is_builtin(projection)
            )
            and not any(
                is_builtin(projection)
                for projection, _ in pairs
                if projection.name in unprepared
                or projection.name in failing
                or projection.name in stalled
            ),
            "head": head,
            "projections": listed,
        },
    )
