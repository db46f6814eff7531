"""HTTP caching and encoding: conditional GET (RFC 9110 §13), gzip, HEAD.

- ``If-None-Match`` uses the weak comparison and, when present, ``If-Modified-Since`` is
  ignored (RFC 9110 §13.1.3); a match gets ``304`` with no body.
- A ``304`` repeats ETag, Last-Modified, Cache-Control, Vary and Content-Language, so caches
  can refresh what they hold.
- Feeds are compressed once, when rendered; these helpers only pick the stored encoding.
- ``HEAD`` answers the headers a ``GET`` would, with the length of the body it would send.
- A large JSON answer is encoded and compressed on a worker thread, a small one at once.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import gzip
import re
from collections.abc import Awaitable, Callable, Iterator
from email.utils import parsedate_to_datetime
from typing import Any

from fastapi import APIRouter
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response

from leaderlog._json import canonical_bytes
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
# Records (see _records) encoded at once. A JSON answer of more is encoded on a worker thread,
# this many at a time: the encoder holds the interpreter lock, and so the event loop, until it
# is done with what it was given (a history of 1,000 posts, 44 MB of JSON, takes 0.3 s). 20
# records of a history, audit or the log (300-650 bytes each) encode in 10-20 us, less than a
# thread hop (60-90 us); 20 of a state's posts (the largest records, 5-14 KB) in 0.3-0.6 ms.
_RECORDS_AT_ONCE = 20
# A body larger than this is compressed on a worker thread, which gzip lets the event loop
# run meanwhile: it takes 3-12 ns a byte (64 KiB in 0.2-0.6 ms, a few hops' time; the history
# above 0.5 s).
_OFF_LOOP_BYTES = 64 * 1024


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
    # OverflowError: a year or time of more digits than a C long holds.
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    since = since if since.tzinfo is not None else since.replace(tzinfo=dt.UTC)
    # The email parser takes any year below 100 for a two-digit one ("0001" as 2001), but
    # only the RFC 850 form has those: a four-digit year is the year it says, as in the
    # Last-Modified this server sends for a log moved with times in the first century.
    written = _FOUR_DIGIT_YEAR.search(value)
    if written is not None and int(written.group()) != since.year:
        try:
            since = since.replace(year=int(written.group()))
        except ValueError:  # year 0, or 29 February of a year that has none
            return None
    # Every HTTP-date form begins with its day's name, and one that is not that date's is not
    # a date at all; a date yet to come cannot be a copy's (a client's clock running fast
    # would otherwise be told 304 after every change).
    day_name = value.replace(",", " ").split()[0].lower()
    if not _DAY_NAMES[since.weekday()].startswith(day_name) or len(day_name) < 3:
        return None
    if since > dt.datetime.now(dt.UTC):
        return None
    return since


# The year of IMF-fixdate and asctime: four digits standing alone (a time has colons).
_FOUR_DIGIT_YEAR = re.compile(r"(?<![\d:])\d{4}(?![\d:])")
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
        body = gzipped if gzipped is not None else _compressed(body)
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
    or the document never changes again, so that no second change can share its date.

    Either way, a date yet to come is not sent (RFC 9110 §8.8.2.1): stamps run ahead of the
    clock after a burst of more than a thousand claims a second (see the feed projection's
    ``Clock``)."""
    now = now or dt.datetime.now(dt.UTC)
    if validators.final:
        return validators.last_modified <= now
    return validators.last_modified < now.replace(microsecond=0)


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


async def json_response(request: Request, value: object, status_code: int = 200) -> Response:
    """``value`` as JSON. A large one is encoded and compressed on a worker thread, so that
    the event loop answers other requests meanwhile, and taken apart there once sent (see
    _taken_apart): ``value``, and the lists and objects directly in it, are the response's
    and must not be used again."""
    gzipped = accepts_gzip(request)
    large = _records(value) > _RECORDS_AT_ONCE
    if large:
        body, compressed = await asyncio.to_thread(_encoded, value, gzipped)
    else:
        body, compressed = _json_body(value), None
        if gzipped and len(body) > _OFF_LOOP_BYTES:
            compressed = await asyncio.to_thread(_compressed, body)
    response = respond(
        request,
        body=body,
        gzipped=compressed,
        media_type="application/json",
        status_code=status_code,
        headers={"Cache-Control": "no-cache"},
    )
    if large:
        # A function, not a coroutine: the task runs it on a worker thread.
        response.background = BackgroundTask(_taken_apart, value)
    return response


def _records(value: object) -> int:
    """How many records ``value`` holds, at a glance: the members of a list, or those of each
    list and object in an object (a history's tenures, a state's posts, an audit's events)."""
    if isinstance(value, list):
        return len(value)
    if isinstance(value, dict):
        return sum(
            len(member) if isinstance(member, list | dict) else 1 for member in value.values()
        )
    return 1


def _encoded(value: object, gzipped: bool) -> tuple[bytes, bytes | None]:
    """``value`` as JSON, and compressed too when ``gzipped`` and too large to be compressed
    on the event loop (a smaller body is compressed as it is sent)."""
    body = _json_body(value)
    return body, _compressed(body) if gzipped and len(body) > _OFF_LOOP_BYTES else None


def _json_body(value: object) -> bytes:
    """JSON as the API sends it: keys sorted, no whitespace, UTF-8; a large value is encoded
    a few records at a time (see _RECORDS_AT_ONCE)."""
    if _records(value) <= _RECORDS_AT_ONCE:
        return canonical_bytes(value)
    return b"".join(_json_pieces(value))


def _json_pieces(value: object) -> Iterator[bytes]:
    """The bytes of ``canonical_bytes(value)``, encoded at most ``_RECORDS_AT_ONCE`` members of
    a list or an object at a time (or one member of an object, when it has few)."""
    if isinstance(value, list) and len(value) > _RECORDS_AT_ONCE:
        yield b"["
        for start in range(0, len(value), _RECORDS_AT_ONCE):
            yield b"," if start else b""
            yield canonical_bytes(value[start : start + _RECORDS_AT_ONCE])[1:-1]
        yield b"]"
    elif (
        isinstance(value, dict)
        and _records(value) > _RECORDS_AT_ONCE
        and all(isinstance(key, str) for key in value)
    ):
        # In code point order, as the encoder sorts keys.
        keys = sorted(value)
        yield b"{"
        if len(keys) > _RECORDS_AT_ONCE:
            for start in range(0, len(keys), _RECORDS_AT_ONCE):
                piece = {key: value[key] for key in keys[start : start + _RECORDS_AT_ONCE]}
                yield b"," if start else b""
                yield canonical_bytes(piece)[1:-1]
        else:
            for index, key in enumerate(keys):
                yield b"," if index else b""
                yield canonical_bytes(key) + b":"
                yield from _json_pieces(value[key])
        yield b"}"
    else:
        yield canonical_bytes(value)


def _compressed(body: bytes) -> bytes:
    return gzip.compress(body, compresslevel=6, mtime=0)


def _taken_apart(value: object) -> None:
    """Empty ``value`` (a list) or the lists and objects directly in it, one member at a time.
    Freed at once, the records of a large answer would hold the interpreter lock, and so the
    event loop, about as long as encoding them at once does (0.3-0.4 s for a history of 1,000
    posts)."""
    members = list(value.values()) if isinstance(value, dict) else [value]
    for member in members:
        if isinstance(member, list):
            while member:
                member.pop()
        elif isinstance(member, dict):
            while member:
                member.popitem()
