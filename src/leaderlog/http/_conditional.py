"""HTTP caching and encoding: conditional GET (RFC 9110 §13), gzip, HEAD.

- ``If-None-Match`` uses the weak comparison and, when present, ``If-Modified-Since`` is
  ignored (RFC 9110 §13.1.3); a match gets ``304`` with no body.
- A ``304`` repeats ETag, Last-Modified, Cache-Control, Vary and Content-Language, so caches
  can refresh what they hold.
- Feeds are compressed once, when rendered; these helpers only pick the stored encoding.
- ``HEAD`` answers the headers a ``GET`` would, with the length of the body it would send.
"""

from __future__ import annotations

import datetime as dt
import gzip
from collections.abc import Awaitable, Callable
from email.utils import parsedate_to_datetime
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from leaderlog._json import dumps
from leaderlog.feeds import Rendered, Validators, header_quality

__all__ = [
    "VARY",
    "PreparedResponse",
    "accepts_gzip",
    "cached_response",
    "caching_headers",
    "etag_matches",
    "get_and_head",
    "is_not_modified",
    "json_response",
    "list_header",
    "not_modified",
    "respond",
]

VARY = "Accept-Encoding, Accept-Language"
# Below this a compressed body saves too little to be worth the work.
_GZIP_MINIMUM = 1024


Endpoint = Callable[..., Awaitable[Response]]


def get_and_head(router: APIRouter, path: str, **options: Any) -> Callable[[Endpoint], Endpoint]:
    """Route GET (documented) and HEAD (same handler, kept out of the API schema)."""

    def register(endpoint: Endpoint) -> Endpoint:
        router.add_api_route(path, endpoint, methods=["GET"], **options)
        router.add_api_route(path, endpoint, methods=["HEAD"], include_in_schema=False)
        return endpoint

    return register


def _opaque(tag: str) -> str:
    tag = tag.strip()
    return tag[2:] if tag.startswith("W/") else tag


def list_header(request: Request, name: str) -> str | None:
    """A list-valued header, its repeated lines joined as one list (RFC 9110 §5.3)."""
    lines = request.headers.getlist(name)
    return ", ".join(lines) if lines else None


def etag_matches(request: Request, etag: str) -> bool | None:
    """Whether If-None-Match names ``etag`` (or ``*``), compared weakly; None without it."""
    if_none_match = list_header(request, "if-none-match")
    if if_none_match is None:
        return None
    current = _opaque(etag)
    return any(tag.strip() == "*" or _opaque(tag) == current for tag in if_none_match.split(","))


def is_not_modified(request: Request, validators: Validators) -> bool:
    """Whether the client's copy is current: If-None-Match first, else If-Modified-Since."""
    matches = etag_matches(request, validators.etag)
    if matches is not None:
        return matches
    since = _if_modified_since(request)
    return since is not None and validators.last_modified.replace(microsecond=0) <= since


def _if_modified_since(request: Request) -> dt.datetime | None:
    """The date of If-Modified-Since, or None where RFC 9110 §13.1.3 says to ignore it: not
    one valid HTTP-date (two of them, a date without its GMT or day name, ...), or later than
    now."""
    lines = request.headers.getlist("if-modified-since")
    if len(lines) != 1:
        return None
    value = lines[0].strip()
    # IMF-fixdate and the RFC 850 form have one comma, after the day name, and end in GMT;
    # the asctime form has neither. Anything else is not one HTTP-date.
    if value.count(",") > 1 or ("," in value and not value.endswith(" GMT")):
        return None
    try:
        since = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    since = since if since.tzinfo is not None else since.replace(tzinfo=dt.UTC)
    # Every HTTP-date form begins with its day's name, and one that is not that date's is not
    # a date at all; a date yet to come cannot be a copy's (a client's clock running fast
    # would otherwise be told 304 after every change).
    day_name = value.replace(",", " ").split()[0].lower()
    if not _DAY_NAMES[since.weekday()].startswith(day_name) or len(day_name) < 3:
        return None
    if since > dt.datetime.now(dt.UTC):
        return None
    return since


_DAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def accepts_gzip(request: Request) -> bool:
    """Whether Accept-Encoding allows gzip (a ``q=0`` refuses it); a coding whose q is no
    qvalue (``gzip;q=2``) is ignored, as Accept-Language ignores such a range."""
    header = list_header(request, "accept-encoding") or ""
    verdict: bool | None = None
    for part in header.split(","):
        coding, *parameters = (piece.strip() for piece in part.split(";"))
        quality = header_quality(parameters)
        if quality is None:
            continue
        coding = coding.lower()
        if coding in ("gzip", "x-gzip"):
            return quality > 0
        if coding == "*":
            verdict = quality > 0
    return bool(verdict)


def caching_headers(
    validators: Validators, language: str | None, now: dt.datetime | None = None
) -> dict[str, str]:
    """ETag, Cache-Control, Vary, Content-Language, and Last-Modified once it is safe.

    HTTP dates count whole seconds. While the second of the last change is still running,
    another change may land in it with the same date, and a reader that sends only
    If-Modified-Since would then be told 304 and miss it; so Last-Modified is left out
    until that second is over (the ETag tells the two changes apart meanwhile).
    """
    headers = {"ETag": validators.etag}
    if _second_is_over(validators, now):
        headers["Last-Modified"] = validators.last_modified_http
    headers |= {"Cache-Control": validators.cache_control, "Vary": VARY}
    if language:
        headers["Content-Language"] = language
    return headers


def respond(
    request: Request,
    *,
    body: bytes,
    media_type: str,
    gzipped: bytes | None = None,
    headers: dict[str, str] | None = None,
    status_code: int = 200,
) -> Response:
    """A response in the best encoding the client accepts; HEAD gets the headers only."""
    sent = dict(headers or {})
    vary = sent.get("Vary")
    if vary is None:
        sent["Vary"] = "Accept-Encoding"
    if accepts_gzip(request) and (gzipped is not None or len(body) >= _GZIP_MINIMUM):
        body = gzipped if gzipped is not None else gzip.compress(body, compresslevel=6, mtime=0)
        sent["Content-Encoding"] = "gzip"
    sent["Content-Length"] = str(len(body))
    if request.method == "HEAD":
        body = b""
    return Response(body, status_code=status_code, headers=sent, media_type=media_type)


class PreparedResponse(Response):
    """A response whose header lines were built once and are sent as they are."""

    def __init__(self, body: bytes, status_code: int, raw_headers: list[tuple[bytes, bytes]]):
        self.body = body
        self.status_code = status_code
        self.background = None
        self.raw_headers = raw_headers


def _raw(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    return [
        (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()
    ]


def _second_is_over(validators: Validators, now: dt.datetime | None = None) -> bool:
    """Whether the second of the document's last change has ended (see caching_headers),
    or the document never changes again, so that no second change can share its date."""
    if validators.final:
        return True
    this_second = (now or dt.datetime.now(dt.UTC)).replace(microsecond=0)
    return validators.last_modified < this_second


def cached_response(request: Request, rendered: Rendered) -> Response:
    """A rendered document, its header lines built once per encoding and kept with it (and
    again once Last-Modified can be sent)."""
    gzipped = accepts_gzip(request)
    now = dt.datetime.now(dt.UTC)
    key = ("headers", gzipped, _second_is_over(rendered.validators, now))
    raw_headers = rendered.memo.get(key)
    body = rendered.gzipped if gzipped else rendered.body
    if raw_headers is None:
        headers = {
            "Content-Type": rendered.media_type,
            "Content-Length": str(len(body)),
            **caching_headers(rendered.validators, rendered.language, now),
        }
        if gzipped:
            headers["Content-Encoding"] = "gzip"
        raw_headers = rendered.memo[key] = _raw(headers)
    return PreparedResponse(b"" if request.method == "HEAD" else body, 200, raw_headers)


def not_modified(validators: Validators, language: str | None) -> Response:
    return PreparedResponse(b"", 304, _raw(caching_headers(validators, language)))


def json_response(request: Request, value: object, status_code: int = 200) -> Response:
    return respond(
        request,
        body=dumps(value).encode(),
        media_type="application/json",
        status_code=status_code,
        headers={"Cache-Control": "no-cache"},
    )
