"""Feed routes: ``/feeds/all.{ext}``, ``/feeds/{org|person|post}/{id}.{ext}`` and ``/opml``.

A ``?lang=`` that names an offered language another way (``pt-BR``, ``EN``, ``zh``), or a
``?page=`` written another way (``01``, ``+1``), is answered with a permanent redirect to the
address in its one spelling: a document's self link names the address it is served at, and an
archive page is cached for a year, so each is served at one address only. A parameter given
twice is refused (422); one a route does not take is ignored (readers add tracking ones).
Errors are JSON in the API's one shape (:mod:`leaderlog.http._errors`): readers show no error
body, and a program fetching a feed reads the same body as from the API.
"""

from __future__ import annotations

import urllib.parse
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request
from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError
from starlette.responses import RedirectResponse, Response

from leaderlog.feeds import (
    FORMATS,
    LANGUAGES,
    FeedFormat,
    FeedNotFound,
    FeedRequest,
    OfferedLanguage,
    Scope,
    UnknownLanguage,
    named_subject,
    negotiate,
    resolve,
)
from leaderlog.feeds._paging import SUBJECT_KINDS
from leaderlog.http._conditional import (
    cached_response,
    get_and_head,
    is_not_modified,
    list_header,
    not_modified,
)
from leaderlog.http._deps import (
    DIGITS_ONLY,
    base_url,
    check_parameters,
    feeds_of,
    in_utf8,
    invalid_parameter,
    queries_of,
    redirect_root,
)
from leaderlog.http._errors import LONGEST_ECHO, documented, shortened

__all__ = [
    "CANONICAL_REDIRECT",
    "LONGEST_ECHO",
    "canonical_address",
    "given_once",
    "pick_language",
    "router",
]


async def given_once(request: Request) -> None:
    check_parameters(request, lenient=True)


router = APIRouter(
    tags=["feeds"],
    dependencies=[Depends(given_once), Depends(in_utf8)],
    responses=documented(
        {
            422: "A bad parameter (unknown language, page below 1, one given twice with two "
            "values); `problems` names it.",
            503: "The database is busy or unreachable; retry after the seconds in "
            "Retry-After. Without Retry-After, no retry helps: the log was removed, or "
            "another leaderlog version rebuilt the feeds.",
        }
    ),
)


def _offered_tag(value: object) -> object:
    """The offered tag another spelling names (``pt-BR``: ``pt``), so that the schema lists
    the offered tags while the others still reach the redirect to their one spelling; a
    language not offered is refused with the message the CLI gives, in the API's shape."""
    if not isinstance(value, str):
        return value
    try:
        return resolve(value)
    except UnknownLanguage as error:
        # The message is a context value, not the template: a tag may hold braces.
        raise PydanticCustomError("value_error", "{message}", {"message": str(error)}) from None


LangQuery = Annotated[
    OfferedLanguage | None,
    BeforeValidator(_offered_tag),
    Query(
        description=f"Language, one of {', '.join(LANGUAGES)}; another spelling of one "
        "(pt-BR, EN) is redirected to it. Without it, Accept-Language decides (English when "
        "nothing fits).",
    ),
]
PageQuery = Annotated[
    int | None,
    Query(ge=1, description="An RFC 5005 archive page (1 = oldest); omit for the newest 50."),
    DIGITS_ONLY,
]
CANONICAL_REDIRECT: dict[str, object] = {
    "description": "`lang` named an offered language another way (`?lang=pt-BR` goes to "
    "`?lang=pt`), `page` was written another way (`01`), or either came before another "
    "parameter: the same address in its one spelling."
}
_FEED_RESPONSES: dict[int | str, dict[str, object]] = {
    200: {
        "description": "The feed document.",
        "content": {
            "application/atom+xml": {},
            "application/rss+xml": {},
            "application/feed+json": {},
        },
    },
    304: {"description": "Not modified: the client's copy (ETag / date) is current."},
    **documented({404: "No such organisation, person, post, format or archive page."}),
    308: CANONICAL_REDIRECT,
}


def pick_language(request: Request, lang: str | None) -> tuple[str, bool]:
    """The language to answer in, and whether it was asked for in the address."""
    if lang is not None:
        try:
            return resolve(lang), True
        except UnknownLanguage as error:
            raise invalid_parameter(str(error), lang, "lang") from None
    return negotiate(list_header(request, "accept-language")), False


def canonical_address(
    request: Request, path: str, chosen: str, page: int | None = None
) -> Response | None:
    """A 308 to ``path`` with ``lang`` and ``page`` in their one spelling, each once and in
    the order the documents' own links give them, after any other parameters (kept, in
    their order); None when the address already is the canonical one."""
    items = request.query_params.multi_items()
    spelled = {"lang": chosen} if page is None else {"lang": chosen, "page": str(page)}
    given = {name for name, _ in items}
    canonical = [(name, value) for name, value in items if name not in spelled]
    canonical += [(name, value) for name, value in spelled.items() if name in given]
    if canonical == items:
        return None
    # The other parameters as they were written, not re-encoded: "x" would become "x=", so
    # an address of thousands of them would be sent on longer than this server reads.
    kept = [
        piece
        for piece in request.url.query.split("&")
        if piece and urllib.parse.unquote_plus(piece.partition("=")[0]) not in spelled
    ]
    kept += [
        urllib.parse.urlencode({name: value}) for name, value in spelled.items() if name in given
    ]
    location = f"{redirect_root(request)}{path}?{'&'.join(kept)}"
    return RedirectResponse(location, status_code=308)


def _split(filename: str) -> tuple[str, FeedFormat]:
    stem, dot, extension = filename.rpartition(".")
    if not dot or extension not in FORMATS:
        raise HTTPException(
            404, f"no feed at {shortened(filename)!r}: feeds end in .atom, .rss or .json"
        )
    return stem, extension


async def _serve(
    request: Request, scope: Scope, fmt: FeedFormat, lang: str | None, page: int | None
) -> Response:
    chosen, explicit = pick_language(request, lang)
    if (redirect := canonical_address(request, scope.path(fmt), chosen, page)) is not None:
        return redirect
    feed_request = FeedRequest(scope, fmt, chosen, base_url(request), page, explicit)
    service = feeds_of(request)
    try:
        validators, rendered = await service.lookup(feed_request)
        if is_not_modified(request, validators):
            return not_modified(validators, chosen)
        if rendered is None:
            rendered = await service.render(feed_request)
    except FeedNotFound as error:
        raise HTTPException(404, await error.explained(queries_of(request))) from None
    return cached_response(request, rendered)


@get_and_head(
    router,
    "/feeds/{filename}",
    responses=_FEED_RESPONSES,
    summary="Every claim: all.atom, all.rss or all.json",
)
async def all_feed(
    request: Request,
    filename: Annotated[
        str,
        # Stated, not validated: any other name is a 404 saying which feeds there are.
        Path(
            description="all.atom, all.rss or all.json.",
            json_schema_extra={"enum": [f"all.{fmt}" for fmt in FORMATS]},
        ),
    ],
    lang: LangQuery = None,
    page: PageQuery = None,
) -> Response:
    """The feed of every claim. One entry per claim; corrections update the same entry."""
    stem, fmt = _split(filename)
    if stem != "all":
        raise HTTPException(404, f"no feed at /feeds/{shortened(filename)}; try /feeds/all.{fmt}")
    return await _serve(request, Scope("all"), fmt, lang, page)


@get_and_head(
    router,
    "/feeds/{kind}/{filename}",
    responses=_FEED_RESPONSES,
    summary="One organisation (whole subtree), person or post: /feeds/org/ice.atom",
)
async def scoped_feed(
    request: Request,
    # Stated, not validated: any other kind or name is a 404 saying what there is.
    kind: Annotated[
        str,
        Path(description="org, person or post.", json_schema_extra={"enum": list(SUBJECT_KINDS)}),
    ],
    filename: Annotated[
        str,
        Path(
            description="The id, then .atom, .rss or .json (ice.atom).",
            json_schema_extra={"pattern": rf"^.+\.({'|'.join(FORMATS)})$"},
        ),
    ],
    lang: LangQuery = None,
    page: PageQuery = None,
) -> Response:
    """The feed of an organisation and everything under it, of a person, or of a post."""
    stem, fmt = _split(filename)
    try:
        scope = Scope.parse(f"{kind}:{stem}")
    except ValueError:
        named = named_subject(f"{kind}:{stem}")
        if named is not None:
            # Looked up as given, said shortened: "unknown organisation 'xxxx...'".
            explained = await named.explained(queries_of(request))
            said = explained.replace(repr(stem), repr(shortened(stem)), 1)
            raise HTTPException(404, said) from None
        raise HTTPException(
            404,
            f"no feed at /feeds/{shortened(kind)}/{shortened(filename)}: "
            f"use /feeds/org|person|post/ID.{fmt}",
        ) from None
    return await _serve(request, scope, fmt, lang, page)


@get_and_head(
    router,
    "/opml",
    summary="Every feed as OPML, to subscribe to all of them at once",
    responses={
        200: {"content": {"text/x-opml": {}}},
        304: {"description": "Not modified."},
        308: CANONICAL_REDIRECT,
    },
)
async def opml(
    request: Request,
    lang: LangQuery = None,
    format: Annotated[FeedFormat, Query(description="Which feed format to list.")] = "atom",
) -> Response:
    """An OPML 2.0 list of every feed: everything, each organisation, person and post."""
    chosen, explicit = pick_language(request, lang)
    if (redirect := canonical_address(request, "/opml", chosen)) is not None:
        return redirect
    rendered = await feeds_of(request).opml(chosen, base_url(request), format, explicit)
    if is_not_modified(request, rendered.validators):
        return not_modified(rendered.validators, chosen)
    return cached_response(request, rendered)
