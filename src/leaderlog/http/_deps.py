"""What route handlers reach through the app: the log, the queries, the feeds, the runner.

Other routers (for example the write API) use these too, so the app can be extended with
``create_app(..., routers=[...])`` or ``app.include_router(...)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import re
import urllib.parse
from collections import Counter, OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError
from starlette.requests import Request

from leaderlog.errors import LogRemoved, ProjectionFailed, ProjectionFailure
from leaderlog.feeds import (
    FeedService,
    host_and_port,
    is_web_address,
    uri,
    with_lowercase_scheme,
)
from leaderlog.http._errors import shortened
from leaderlog.log import EventLog
from leaderlog.projections import BUILTIN, InvalidQuery, ProjectionRunner, Queries, verify_log
from leaderlog.projections.feed_entries import FeedEntriesProjection
from leaderlog.projections.query_input import WHOLE_NUMBER, check_utf8
from leaderlog.store import VerifyReport

__all__ = [
    "DIGITS_ONLY",
    "OWN_WRITES_SECONDS",
    "Pages",
    "Services",
    "base_url",
    "check_parameters",
    "check_public_url",
    "check_utf8_parameters",
    "feeds_of",
    "in_utf8",
    "invalid_parameter",
    "log_of",
    "queries_of",
    "reads_builtins",
    "redirect_root",
    "runners_of",
    "services_of",
]


_HOST = re.compile(
    r"^[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?\Z|^\[[0-9A-Fa-f:.]{2,45}\](:[0-9]{1,5})?\Z"
)


def _digits_only(value: object) -> object:
    """Refuse a whole number written other than in digits 0-9 (``5.0``, ``1_0``, ``+5``, `` 5``),
    all of which pydantic reads as a number but the CLI's ``--after``/``--limit`` refuse: the
    same value gets the same verdict, and ``?page=1_0`` is not taken for page 10. A minus
    sign is left to the bound, which says what is wrong with ``-1``."""
    if isinstance(value, str) and not WHOLE_NUMBER.match(value):
        raise PydanticCustomError(
            "int_parsing", "Input should be a valid integer, unable to parse string as an integer"
        )
    return value


# After Query in Annotated, so that the schema keeps stating the bounds as minimum/maximum.
DIGITS_ONLY = BeforeValidator(_digits_only)


# How long a write waits for the projections to apply it before answering anyway.
OWN_WRITES_SECONDS = 5.0


class _Applied:
    """The position every runner has applied, as far as writers have seen; one catch-up at
    a time, so writers arriving together share it."""

    def __init__(self) -> None:
        self.position = 0
        # Moved on when the log is found replaced: a catch-up begun before then must not
        # set ``position`` from the other log's head.
        self.generation = 0
        self.lock = asyncio.Lock()
        self.running: set[asyncio.Task[None]] = set()


class _Removal:
    """The removal of the log (its schema or events table dropped), once a request or a
    follower has met it."""

    def __init__(self) -> None:
        self.error: LogRemoved | None = None


class _Verifying:
    """The hash-chain check under way, if any: requests that arrive meanwhile share it."""

    def __init__(self) -> None:
        self.task: asyncio.Task[VerifyReport] | None = None


class Pages:
    """HTML pages rendered lately, each under its ETag (which names what it shows: the
    positions and day it was computed for, and its address and language), so that a request
    repeated before anything changes is answered without computing the page again. The
    least recently used goes first once ``limit`` are kept."""

    def __init__(self, limit: int = 32) -> None:
        self.limit = limit
        self._kept: OrderedDict[str, tuple[bytes, bytes]] = OrderedDict()

    def get(self, etag: str) -> tuple[bytes, bytes] | None:
        """The page's body and its gzip encoding, if kept."""
        found = self._kept.get(etag)
        if found is not None:
            self._kept.move_to_end(etag)
        return found

    def clear(self) -> None:
        self._kept.clear()

    def keep(self, etag: str, body: bytes, gzipped: bytes) -> None:
        self._kept[etag] = (body, gzipped)
        self._kept.move_to_end(etag)
        while len(self._kept) > self.limit:
            self._kept.popitem(last=False)


def reads_builtins(runner: ProjectionRunner) -> bool:
    """Whether the runner keeps built-in projections (which answers and feeds read) current:
    not the one of user projections, which follows the log on its own."""
    return any(projection.name in BUILTIN for projection in runner.projections)


# Queries (/api/state, /api/history, /api/claims, /api/audit) worked out at once; the rest wait.
ANSWERS_AT_ONCE = 4


@dataclass(frozen=True, slots=True)
class Services:
    log: EventLog
    runners: tuple[ProjectionRunner, ...]
    queries: Queries
    feeds: FeedService
    _applied: _Applied = field(default_factory=_Applied)
    _verifying: _Verifying = field(default_factory=_Verifying)
    _removal: _Removal = field(default_factory=_Removal)
    pages: Pages = field(default_factory=Pages)
    # Each answer being worked out holds its claims decoded and its JSON until sent: a state
    # of a 20,000-event log, about 40 MB. Twenty clients asking at once took a server from
    # 70 MB to 900 MB; a few at a time are as quick in all (the work is Python's, one
    # thread at a time) and hold a few answers' memory.
    answering: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(ANSWERS_AT_ONCE))

    def log_removed(self, error: LogRemoved) -> None:
        """Remember that the log was removed: from then on every route says so, even one it
        could still answer from what was projected or rendered before (the projections'
        tables outlive a dropped events table; feeds are kept in memory). The log does not
        come back by itself, and one restored under this server is another log: a restart
        reads it."""
        if self._removal.error is None:
            self._removal.error = error

    def log_replaced(self, head: int) -> None:
        """The log was cut short or replaced under this server (a runner found so, and is
        rebuilding from it): the feeds and pages read from the other log are dropped, and a
        writer's position is waited for again, since positions up to the old head now name
        other events."""
        self._applied.position = min(self._applied.position, head)
        self._applied.generation += 1
        self.feeds.log_replaced(head)
        self.pages.clear()

    def refuse_once_removed(self) -> None:
        """Raise, anew, the :class:`LogRemoved` met before, if any (raising the one object
        again and again would grow its traceback with every request)."""
        met = self._removal.error
        if met is not None:
            raise LogRemoved(str(met), public=met.public)

    async def verify(self) -> VerifyReport:
        """The whole chain checked again. It reads every event (tens of seconds on a large
        log), so requests arriving while one check runs get its report instead of starting
        their own; each new request after it ends checks again, so an edit is never hidden."""
        verifying = self._verifying
        if verifying.task is None or verifying.task.done():
            verifying.task = asyncio.create_task(verify_log(self.log.store))
        # Shielded: one client that stops waiting must not cancel the others' check.
        return await asyncio.shield(verifying.task)

    async def catch_up(self) -> None:
        """Apply everything appended so far to what queries and feeds read: the runners of
        built-in projections (the user projections' runner follows on its own, so a slow one
        holds back no writer). One that fails holds back neither the built-ins nor the other
        runners; :class:`ProjectionFailed` then comes last."""
        target, _ = await self.log.store.head()
        generation = self._applied.generation
        failures: list[ProjectionFailure] = []
        for runner in self.runners:
            if not reads_builtins(runner):
                continue
            try:
                await runner.catch_up()
            except ProjectionFailed as failed:
                failures += failed.failures
        # A log replaced meanwhile makes ``target`` the other log's head.
        replaced = generation != self._applied.generation
        if replaced or any(failure.name == FeedEntriesProjection.name for failure in failures):
            self.feeds.invalidate()
        else:
            self.feeds.applied(target)
        if not replaced and not any(failure.name in BUILTIN for failure in failures):
            # What queries and feeds read is there.
            self._applied.position = max(self._applied.position, target)
        if failures:
            raise ProjectionFailed(failures)

    async def applied_through(self, position: int, timeout: float = OWN_WRITES_SECONDS) -> bool:
        """Wait until the projections have applied ``position`` (so whoever appended it reads
        it back at once); False if that took longer than ``timeout`` or failed, in which case
        the followers apply it soon and report any failure."""
        applied = self._applied
        if applied.position >= position:
            return True

        async def catch_up_once() -> None:
            async with applied.lock:
                if applied.position < position:
                    await self.catch_up()

        def finished(task: asyncio.Task[None]) -> None:
            applied.running.discard(task)
            if not task.cancelled():
                # Looked at, so that one that failed after the writer stopped waiting is not
                # logged as never retrieved: the followers apply it and report the failure.
                task.exception()

        task = asyncio.create_task(catch_up_once())
        applied.running.add(task)
        task.add_done_callback(finished)
        # Shielded: a write that stops waiting must not cut a projection transaction short.
        with contextlib.suppress(Exception):
            async with asyncio.timeout(timeout):
                await asyncio.shield(task)
        return applied.position >= position


def invalid_parameter(
    message: str,
    value: object,
    name: str | None = None,
    *,
    where: str = "query",
    rule: str = "value_error",
) -> RequestValidationError:
    """A 422 raised as FastAPI raises its own validation errors, so every 422 is answered
    by one handler in one shape.

    ``where`` is the part of the request that holds the parameter: ``query`` or ``path``.
    ``rule`` is the problem's ``rule``: ``value_error`` (pydantic's name for a value its
    checks refuse), or ``parameter`` for a parameter that cannot be given at all."""
    location = (where, name) if name else (where,)
    return RequestValidationError([{"type": rule, "loc": location, "msg": message, "input": value}])


def check_parameters(request: Request, *, lenient: bool) -> None:
    """Refuse (422) a parameter given twice, and one the route does not take: silently
    answering for one of two values, or for the defaults of a misspelt one, would look like
    an answer to the question asked. ``lenient`` (feeds and pages) lets through parameters
    the route does not take (readers add tracking ones) and one repeated with one value."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    known = sorted(field.alias for field in route.dependant.query_params)
    items = request.query_params.multi_items()
    given = Counter(name for name, _ in items)
    for name, times in given.items():
        if name not in known:
            if lenient:
                continue
            takes = f"it takes {', '.join(known)}" if known else "it takes none"
            raise invalid_parameter(
                f"unknown parameter {shortened(name)!r} for {route.path}: {takes}",
                request.query_params.get(name),
                name,
                rule="parameter",
            )
        values = [value for given_name, value in items if given_name == name]
        if times > 1 and not (lenient and len(set(values)) == 1):
            raise invalid_parameter(
                f"parameter {shortened(name)!r} is given {times} times: give it once",
                values,
                name,
                rule="parameter",
            )


def check_utf8_parameters(request: Request, path_names: Mapping[str, str]) -> None:
    """Refuse (422) a query or path parameter whose percent-escapes are not UTF-8 (``%E9``:
    an ``é`` typed in Latin-1), as the command line refuses the same bytes, in its words.
    Starlette reads such bytes as U+FFFD, so the question would otherwise be answered about
    another text (``ic%E9``: a 404 for an unknown ``ic`` and U+FFFD). ``path_names`` maps a
    path parameter to the name its message calls it (``claim_id`` to ``claim``, as the
    queries name it)."""
    query = request.scope.get("query_string", b"").decode("latin-1")
    given = [
        ("query", name, name, value)
        for name, value in urllib.parse.parse_qsl(
            query, keep_blank_values=True, errors="surrogateescape"
        )
    ]
    given += [
        ("path", name, path_names.get(name, name), value)
        for name, value in _path_parameters_as_sent(request)
    ]
    for where, name, called, value in given:
        try:
            check_utf8(called, value)
        except InvalidQuery as error:
            read = request.query_params if where == "query" else request.path_params
            raise invalid_parameter(str(error), read.get(name), name, where=where) from None


async def in_utf8(request: Request) -> None:
    """A dependency of the pages and feeds: :func:`check_utf8_parameters`, a feed's file
    name called the feed."""
    check_utf8_parameters(request, {"filename": "feed"})


def _path_parameters_as_sent(request: Request) -> Iterator[tuple[str, str]]:
    """The path parameters read with bytes that are not UTF-8 (U+FFFD in what Starlette
    read), each as Python reads such bytes (a lone surrogate, U+DCE9 for ``%E9``): a path
    parameter is one segment of the path as sent."""
    raw_path: bytes = request.scope.get("raw_path") or b""
    segments = [urllib.parse.unquote_to_bytes(segment) for segment in raw_path.split(b"/")]
    for name, value in request.path_params.items():
        if not isinstance(value, str) or "\ufffd" not in value:
            continue
        for segment in segments:
            if segment.decode("utf-8", "replace") == value:
                yield name, segment.decode("utf-8", "surrogateescape")
                break


def services_of(request: Request) -> Services:
    """The app's services, for a request about the log: a :class:`LogRemoved` once the log
    was found removed (every such route reaches the log through here)."""
    services: Services | None = getattr(request.app.state, "services", None)
    if services is None:
        # Made by the app's lifespan, which Starlette does not run for an app mounted in
        # another (app.mount): the request would fail on app.state, saying nothing of why.
        raise RuntimeError(
            "leaderlog's app has not started: its lifespan has not run (an app mounted in "
            "another one is not started by it; enter `leaderlog_app.router.lifespan_context("
            "leaderlog_app)` in your app's lifespan)"
        )
    services.refuse_once_removed()
    return services


def log_of(request: Request) -> EventLog:
    """The app's :class:`~leaderlog.log.EventLog`: to read the log or append to it."""
    return services_of(request).log


def runners_of(request: Request) -> tuple[ProjectionRunner, ...]:
    """The app's projection runners: built-ins first, then any user projections."""
    return services_of(request).runners


def queries_of(request: Request) -> Queries:
    """The app's :class:`~leaderlog.projections.Queries` over the built-in projections."""
    return services_of(request).queries


def feeds_of(request: Request) -> FeedService:
    """The app's :class:`~leaderlog.feeds.FeedService`: feed documents and the OPML."""
    return services_of(request).feeds


def base_url(request: Request) -> str:
    """The server's public address when one is configured (``create_app(public_url=...)``),
    else the scheme and host the client used (behind a proxy: --proxy-headers).

    A Host header that is not a plain host name and port is not echoed into documents; the
    address the server listens on is used instead.
    """
    configured = _public_url(request)
    if configured is not None:
        return configured
    scope = request.scope
    host = request.headers.get("host", "")
    if not _plain_host(host):
        address, port = scope.get("server") or ("127.0.0.1", 80)
        host = host_and_port(str(address), int(port))
    # uvicorn's --proxy-headers takes X-Forwarded-Proto "ws" and "wss" too, for an HTTP
    # request as well: links are http(s) whatever a proxy said.
    scheme = _HTTP_SCHEMES.get(str(scope.get("scheme", "http")).lower(), "http")
    return f"{scheme}://{host}{scope.get('root_path', '')}".rstrip("/")


_HTTP_SCHEMES = {"http": "http", "https": "https", "ws": "http", "wss": "https"}


def redirect_root(request: Request) -> str:
    """What a redirect's path is prefixed with: the configured public address, else the
    ASGI root path the application is mounted at (set when another application mounts it,
    or by ``uvicorn --root-path`` running it; ``leaderlog serve`` sets none), else nothing.

    Without a public address the redirect stays relative, so a forged Host header cannot send
    readers elsewhere; with one, a proxy that strips the public path (``--public-url
    https://example.org/leaders``) still gets its readers sent back under that path.
    """
    configured = _public_url(request)
    if configured is not None:
        return configured
    root: str = request.scope.get("root_path", "")
    return root.rstrip("/")


def _public_url(request: Request) -> str | None:
    """The address given as ``create_app(public_url=...)``, checked and without a trailing
    slash; None when the server was given none."""
    configured: str | None = getattr(request.app.state, "public_url", None)
    return configured


def _plain_host(host: str) -> bool:
    """Whether a Host header is a host name or address and a port a URL can carry."""
    found = _HOST.match(host)
    if found is None:
        return False
    port = found.group(1) or found.group(2)  # ":8000", in either alternative of _HOST
    if host.startswith("["):
        # The pattern admits any hex digits, colons and dots in brackets ("[1:2]"): only an
        # IPv6 address makes a link feeds can carry.
        try:
            ipaddress.IPv6Address(host[1 : host.index("]")])
        except ValueError:
            return False
    return port is None or int(port[1:]) <= 65535


def check_public_url(url: str) -> str:
    """``url`` as a URI without a trailing slash, if it is an http(s) address with a host and
    neither query nor fragment (the scheme put in lower case); raises ValueError saying what
    is wrong otherwise.

    Every link and redirect starts with it, so a host or path outside ASCII is given in the
    form a URI carries it (IDNA host, UTF-8 escapes): as an IRI, a Location header holding it
    leads to no host a resolver finds, and the W3C Feed Validator refuses Atom links holding it
    once a path segment is long.
    """
    url = with_lowercase_scheme(url)
    parts = urllib.parse.urlsplit(url)
    try:
        port_is_valid = parts.port is None or parts.port > 0
    except ValueError:
        port_is_valid = False
    if "@" in parts.netloc:
        raise ValueError(
            f"public URL {url!r} has a user name or password: feeds link every reader to it"
        )
    # An http(s) address with a host, as a link carries it; the port in range too.
    if not is_web_address(url) or not port_is_valid:
        raise ValueError(f"public URL {url!r} is not an http(s) address like https://example.org")
    if parts.query or parts.fragment or "?" in url or "#" in url:
        raise ValueError(f"public URL {url!r} has a query or fragment; give scheme, host, path")
    return uri(url).rstrip("/")
