"""The ASGI app: feeds, the read API, the HTML overview, and room for more routers.

    app = create_app("sqlite:///leaderlog.db", seeds=seeds_folder())  # leaderlog.log
    uvicorn.run(app, host="127.0.0.1", port=8000)

At start-up the app opens the log (or uses the :class:`EventLog` it is given), loads the
seeds into an empty log when asked to, brings every projection up to date, and then follows
the log in a background task, so feeds and answers reflect new events while it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from fastapi_offline import FastAPIOffline
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Match, request_response

from leaderlog._version import leaderlog_version
from leaderlog.errors import (
    BuiltByAnotherVersion,
    LogRemoved,
    ProjectionError,
    ProjectionFailed,
    StoreBusy,
    StoreDamaged,
    StoreError,
    StoreUnavailable,
    StoreUnreachable,
    UnreadableEvent,
)
from leaderlog.feeds import FeedService
from leaderlog.http import _api, _feeds, _pages
from leaderlog.http._deps import (
    Services,
    check_public_url,
    log_of,
    reads_builtins,
    redirect_root,
    services_of,
)
from leaderlog.http._errors import (
    error_response,
    http_error_response,
    invalid_request,
    unavailable_response,
    unexpected_error,
    use_error_body_for_validation,
)
from leaderlog.http._public_path import serve_under_public_path
from leaderlog.http.write_routes import use_record_components, write_router
from leaderlog.log import EventLog, load_seeds
from leaderlog.projections import (
    BUILTIN,
    ProjectionRunner,
    Queries,
    modules_not_found,
    runner_for,
)
from leaderlog.projections.feed_entries import FeedEntriesProjection
from leaderlog.projections.loading import builtin_named_modules
from leaderlog.projections.runner import LeftOut, ProjectionStatus, events_to_apply, left_out
from leaderlog.store import EventStore

__all__ = ["create_app", "feed_runner", "projection_runners"]

logger = logging.getLogger("leaderlog.http")
_RETRY_SECONDS = 2.0
# Appends in this process wake the follower at once; other writers are seen within this.
_POLL_SECONDS = 0.5

DESCRIPTION = """\
Who leads what, as reported: an append-only log of leadership changes, served as
Atom, RSS and JSON feeds (one entry per claim, in ten languages) and as JSON.

* Feeds: `/feeds/all.atom`, `/feeds/org/{org}.rss` (the whole subtree),
  `/feeds/person/{id}.json`, `/feeds/post/{id}.atom`; `?lang=` or Accept-Language picks
  the language, `?page=N` an RFC 5005 archive page. Conditional GET, gzip and HEAD work.
* `/opml` lists every feed; `/` is an HTML overview.
* The read API takes the same parameters as the `leaderlog` command line.

Every JSON error, whatever the route or status, is one shape (`ErrorBody`):
`{"error": "not_found", "detail": "unknown claim 'x'"}`, where `error` is a code to branch
on and `detail` says what went wrong; a `422` adds `problems`, each with `where` (a record
or a parameter: `"query parameter as_of"`), `rule`, `message` and, for a parameter, the
`input` given. The HTML overview's own 404 (an unknown organisation or language) is a page.
"""


def feed_runner(store: EventStore) -> ProjectionRunner:
    """The runner of the feed entries alone (feeds need nothing else)."""
    return ProjectionRunner(store, [FeedEntriesProjection()])


async def projection_runners(store: EventStore) -> tuple[ProjectionRunner, ...]:
    """Runners over every projection the server reads.

    The feed entries get a runner of their own, so a projection that cannot apply some
    stored event does not hold the feeds back (and the other way round); so do the user
    projections, whose pages then never share a transaction with the built-ins' (a slow or
    failing module holds back neither the answers nor a writer reading its own write). A user
    projection built before whose module no longer loads joins as a stand-in: its failure is
    logged at start and ``/healthz`` lists it with its lag, as for one that raises.
    """
    for problem in builtin_named_modules(builtin=BUILTIN):
        logger.warning("%s", problem)
    loaded = await runner_for(store)
    builtins = [
        p for p in loaded.projections if p.name in BUILTIN and p.name != FeedEntriesProjection.name
    ]
    users = [p for p in loaded.projections if p.name not in BUILTIN]
    users += [
        left_out(name, missing.version, f"it could not be loaded: {missing.error}")
        for name, missing in loaded.not_loaded.items()
    ]
    # Built in the database but with no module where this server looks (started from another
    # folder, or the module removed): runner_for skips such a name, which would leave it
    # behind in silence, missing from the start's log and from /healthz, where its lag is
    # what tells that it is not kept up to date.
    registered = await loaded.registered()
    users += [
        left_out(name, registered[name][0], why)
        for name, why in modules_not_found(loaded, registered).items()
    ]
    runners = [ProjectionRunner(store, builtins), feed_runner(store)]
    if users:
        runners.append(ProjectionRunner(store, users, rest_after_failure=True))
    return tuple(runners)


async def catch_up_before_serving(
    store: EventStore, progress: Callable[[str, int, int], None] | None = None
) -> None:
    """Bring the built-in projections up to date, as a server's start does before it
    answers, saying so when that takes a while.

    ``progress`` is told (the projections being updated, events applied, events to apply)
    as each page is applied; the feed entries are updated after the others.

    ``leaderlog serve`` calls it before starting the server, where Ctrl+C and SIGTERM stop
    it at once: uvicorn notices them only once the application has started, which on a
    long log not yet projected is minutes later. A database that is busy or not answering
    is raised, to be waited for; another failure is left to the start that follows, which
    tries again and logs it.
    """
    builtins = [
        projection() for name, projection in BUILTIN.items() if name != FeedEntriesProjection.name
    ]
    runners = (ProjectionRunner(store, builtins), feed_runner(store))
    statuses = [await runner.status() for runner in runners]
    await _say_if_catching_up_takes_a_while(runners, statuses)
    for runner, status in zip(runners, statuses, strict=True):
        report = None
        if progress is not None:
            start, head = events_to_apply(runner, status)
            names = ", ".join(p.name for p in runner.projections if not isinstance(p, LeftOut))
            report = functools.partial(_report_applied, progress, names, start, head)
        try:
            await runner.catch_up(report)
        except (StoreBusy, StoreUnreachable):
            raise
        except Exception:
            continue  # logged by the start that follows, as it fails there again


def _report_applied(
    progress: Callable[[str, int, int], None],
    names: str,
    start: int,
    head: int,
    position: int,
    target: int,
) -> None:
    # Events appended meanwhile are applied too: the total grows with them.
    last = max(head, target)
    progress(names, max(0, min(position, last) - start), last - start)


class _Said:
    """What a runner's follower has logged, so that each failure is logged once rather than
    at every retry: the last catch-up's failures (one that comes back after a catch-up without
    it is logged again), and every left-out projection's, which stays out until a restart
    whatever the others do meanwhile (another user projection failing, then getting through,
    must not log it again each time)."""

    def __init__(self) -> None:
        self.last: frozenset[str] = frozenset()
        # By name and reason: the line names its checkpoint too, which moves on while another
        # process keeps it current (the newer copy of its module, say).
        self.left_out: set[tuple[str, str]] = set()


def _log_failure(runner: ProjectionRunner, error: Exception, said: _Said | None = None) -> _Said:
    """Log what ``error`` says that ``said`` has not; returns what is said now."""
    said = _Said() if said is None else said
    last = said.last
    if not isinstance(error, ProjectionFailed):
        said.last = frozenset([str(error)])
        if str(error) in last:
            return said
        if isinstance(error, StoreError):
            # Busy, deadlocked or gone: the database's condition, in one line; not a bug.
            logger.warning("projections cannot catch up now: %s; retrying", error)
        elif isinstance(error, ProjectionError):
            # Another leaderlog version rebuilt a projection under this server: no retry can
            # mend that, only a restart (the message says so); not a bug, so no traceback.
            logger.error("%s", error)
        else:
            names = ", ".join(p.name for p in runner.projections)
            logger.exception("applying events to %s failed; retrying", names)
        return said
    # It names each projection that stopped, its events and the line that raised; the
    # runner's own stack would add nothing, and the other projections went on. One left
    # out (its module does not load, or changed) waits for a restart, not a retry.
    said.last = frozenset(str(failure) for failure in error.failures)
    left = {p.name for p in runner.projections if isinstance(p, LeftOut)}
    for failure in error.failures:
        line = str(failure)
        if failure.name in left:
            why = (failure.name, str(failure.cause))
            if why not in said.left_out:
                said.left_out.add(why)
                logger.warning("%s", failure)
        elif line in last:
            continue
        elif failure.name in BUILTIN:
            logger.error("%s; retrying", failure)
        else:
            # Retried as it is: a server loads user projection modules when it starts.
            logger.error(
                "%s; retrying (a change to its module takes effect when the server restarts)",
                failure,
            )
    return said


# Events behind at start from which catching up is said to be under way (about a second).
_LONG_CATCH_UP = 5000


async def _say_if_catching_up_takes_a_while(
    runners: Sequence[ProjectionRunner],
    statuses: Sequence[Sequence[ProjectionStatus]] | None = None,
) -> None:
    """Requests wait while the server catches up at start; after an upgrade that rebuilds a
    projection it can take a while, which the log should say rather than seem to hang.
    ``statuses``: each runner's, when already read."""
    if statuses is None:
        statuses = [await runner.status() for runner in runners]
    # The answers wait for the built-ins; user projections catch up once serving.
    behind: dict[str, list[str]] = {"before serving": [], "once serving": []}
    for runner, of_runner in zip(runners, statuses, strict=True):
        when = "before serving" if reads_builtins(runner) else "once serving"
        for projection, status in zip(runner.projections, of_runner, strict=True):
            if isinstance(projection, LeftOut):
                continue  # not brought up to date: its failure is logged next
            if status.version != projection.version:
                behind[when].append(
                    f"{status.name} (rebuilt: version {status.version} to "
                    f"{projection.version}, {status.head} events)"
                )
            elif status.lag >= _LONG_CATCH_UP:
                behind[when].append(f"{status.name} ({status.lag} events behind)")
    for when, names in behind.items():
        if names:
            logger.warning("bringing projections up to date %s: %s", when, ", ".join(names))


async def _once_the_database_answers(
    start: Callable[[], Awaitable[tuple[ProjectionRunner, ...]]],
) -> tuple[ProjectionRunner, ...]:
    """Run the start-up steps, again while the database is busy or cannot be reached (a lock
    held elsewhere, a restart): a server waits for its database rather than exit with a
    trace. Each new reason is logged once."""
    said = ""
    while True:
        try:
            return await start()
        except StoreUnavailable as error:
            if str(error) != said:
                said = str(error)
                logger.warning("the database cannot answer yet: %s; waiting for it", error)
            await asyncio.sleep(_RETRY_SECONDS)


async def _say_left_out(runner: ProjectionRunner) -> _Said:
    """Log at start each projection the runner leaves out, as a catch-up would report it;
    returns what was logged (the follower, meeting the same, does not log it again)."""
    statuses = await runner.status()
    failures = [
        projection.failure(status.checkpoint)
        for projection, status in zip(runner.projections, statuses, strict=True)
        if isinstance(projection, LeftOut)
    ]
    if not failures:
        return _Said()
    return _log_failure(runner, ProjectionFailed(failures))


async def _catch_up(runner: ProjectionRunner) -> _Said:
    """Catch up before serving; returns the failure logged, if any (serving goes on with
    what is projected, and the follower retries)."""
    try:
        await runner.catch_up()
    except Exception as error:
        return _log_failure(runner, error)
    return _Said()


async def _follow(
    runner: ProjectionRunner, services: Services, stop: asyncio.Event, said: _Said
) -> None:
    """``runner.follow()``, unrolled so the feeds learn at once that projections moved.

    ``said`` is what was already logged: a failure is logged again only when it changes,
    not on every retry.
    """
    applied = -1
    keeps_the_feeds = any(p.name == FeedEntriesProjection.name for p in runner.projections)
    while not stop.is_set():
        try:
            head = await runner.catch_up()
        except Exception as error:
            if isinstance(error, LogRemoved):
                # Found here first when no request reads the log itself (routes answered
                # from projections would go on answering for a log that is gone).
                services.log_removed(error)
            # A failing page must not end the server: it is retried (a user projection that
            # keeps failing, less and less often: see ProjectionRunner).
            _log_failure(runner, error, said)
            await _until_more_events_or_a_while(runner, stop)
            continue
        said.last = frozenset()
        if head != applied:
            applied = head
            if keeps_the_feeds:
                services.feeds.applied(head)
            else:
                services.feeds.invalidate()
        await runner.store.wait_for_events(head, _POLL_SECONDS)


async def _until_more_events_or_a_while(runner: ProjectionRunner, stop: asyncio.Event) -> None:
    """After a failed catch-up: on once more events arrive (the runner's other projections
    follow them; one that keeps failing rests, see ProjectionRunner), after a while, or when
    the server stops."""
    try:
        seen, _ = await runner.store.head()
    except Exception:
        seen = None  # the database cannot answer: wait a while, then try again
    waits: list[asyncio.Future[object]] = [asyncio.ensure_future(stop.wait())]
    if seen is not None:
        waits.append(asyncio.ensure_future(runner.store.wait_for_events(seen, _RETRY_SECONDS)))
    try:
        await asyncio.wait(waits, timeout=_RETRY_SECONDS, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in waits:
            task.cancel()


def create_app(
    source: str | EventLog | None = None,
    *,
    seeds: Path | None = None,
    routers: Sequence[APIRouter] = (),
    public_url: str | None = None,
) -> FastAPI:
    """The app over a database URL (default: ``LEADERLOG_DB`` or ./leaderlog.db) or a log.

    ``seeds``: a folder of ``*.jsonl`` files loaded first when the log is empty.
    ``routers``: more routers to include (their handlers reach the log, the queries, the
    feeds and the projection runners with :func:`~leaderlog.http.log_of`,
    :func:`~leaderlog.http.queries_of`, :func:`~leaderlog.http.feeds_of` and
    :func:`~leaderlog.http.runners_of`, given the request).
    ``public_url``: the address readers reach the server at (``https://feeds.example.org``),
    used in every link instead of the request's Host header; raises ValueError if it is not
    an http(s) URL without query or fragment. When it has a path (``/leaders``), requests
    under that path are served as at the root too, unless it begins as one of the app's own
    addresses (``/feeds``): see :func:`~leaderlog.http._public_path.serve_under_public_path`.

    The app opens the log (one given as a URL; a log given is left open), catches up and
    follows the projections in its lifespan. Mounted in another app (``app.mount("/leaders",
    leaderlog_app)``), whose server does not run a mounted app's lifespan, enter it from
    yours: ``async with leaderlog_app.router.lifespan_context(leaderlog_app): yield``.
    """
    public = check_public_url(public_url) if public_url is not None else None

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = not isinstance(source, EventLog)
        log = await EventLog.open(source) if not isinstance(source, EventLog) else source
        stop = asyncio.Event()
        tasks: list[asyncio.Task[None]] = []

        async def start() -> tuple[ProjectionRunner, ...]:
            if seeds is not None and await log.store.count() == 0:
                await load_seeds(log, seeds)
            runners = await projection_runners(log.store)
            await _say_if_catching_up_takes_a_while(runners)
            return runners

        try:
            runners = await _once_the_database_answers(start)
            # As said above: the answers wait for the built-ins alone.
            reported = [
                await (_catch_up(runner) if reads_builtins(runner) else _say_left_out(runner))
                for runner in runners
            ]
            services = Services(log, runners, Queries(log.store), FeedService(log.store))
            for runner in runners:
                runner.on_another_log = services.log_replaced
            app.state.services = services
            tasks = [
                asyncio.create_task(_follow(runner, services, stop, failure))
                for runner, failure in zip(runners, reported, strict=True)
            ]
            yield
        finally:
            stop.set()
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            if owned:
                await log.close()

    # /docs and /redoc load their scripts and styles from the package, not from a CDN, so
    # they work offline and behind a firewall (served under /static-offline-docs); Swagger
    # UI's validator badge, which would send the schema's address to swagger.io, is off.
    # Served under a path of a public address, the API is there too, for Swagger UI's tries.
    under = _public_path(public)
    app = FastAPIOffline(
        servers=[{"url": under}] if under else None,
        title="leaderlog",
        summary="Who leads what, as reported.",
        description=DESCRIPTION,
        version=leaderlog_version(),
        swagger_ui_parameters={"validatorUrl": None},
        lifespan=lifespan,
        # Starlette's own redirect is absolute, built from the Host header (see _http_error).
        redirect_slashes=False,
        generate_unique_id_function=_operation_id,
    )
    _documentation_takes_head(app)
    app.state.public_url = public
    app.include_router(_pages.router)
    app.include_router(_feeds.router)
    app.include_router(_api.router)
    app.include_router(write_router(log_of, _applied_through))
    for router in routers:
        app.include_router(router)
    app.add_exception_handler(StoreUnavailable, _unavailable)
    app.add_exception_handler(UnreadableEvent, _unreadable)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(Exception, unexpected_error)
    use_error_body_for_validation(app)
    use_record_components(app)
    serve_under_public_path(app, public, routers)
    return app


def _operation_id(route: APIRoute) -> str:
    """The route's function name (``state``, ``claim``, ``append_events``): what a client
    generated from /openapi.json names its calls, where FastAPI's default spelled out the
    path and method (``state_api_state_get``)."""
    return route.name


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


def _documentation_takes_head(app: FastAPI) -> None:
    """HEAD on the documentation pages (/docs, /redoc, Swagger UI's OAuth2 redirect), as on
    every other GET route: fastapi-offline routes them for GET alone. Called before any
    router is included, so only those pages are touched; they are kept out of the schema,
    which therefore gains no HEAD operations."""
    for route in app.routes:
        if isinstance(route, APIRoute) and not route.include_in_schema:
            methods = route.methods or set()
            if "GET" in methods:
                methods.add("HEAD")
            # fastapi-offline's own addresses (it leaves FastAPI's docs_url unset).
            if route.path in ("/docs", "/redoc"):
                route.app = request_response(_in_english(route.endpoint))


def _public_path(public: str | None) -> str:
    """The path of the public address the server is reached at (``/leaders`` for
    ``https://example.org/leaders``), or "" at the root of its host."""
    # Written into the documentation's HTML and scripts as it is: a quote percent-encoded
    # (an address means the same either way) cannot end a string there.
    return quote(urlsplit(public).path.rstrip("/"), safe="/%:@!$&()*+,;=-._~") if public else ""


def _in_english(
    page: Callable[[Request], Awaitable[Response]],
) -> Callable[[Request], Awaitable[Response]]:
    """A documentation page that says its language, as every other page does (for screen
    readers): fastapi-offline writes a bare ``<html>``. Behind a proxy that serves the
    server under a path of its public address, the page loads its scripts, styles and the
    schema from under that path (fastapi-offline prefixes them with the request's root
    path, which nothing else here sets): from the host's root they were not found, and the
    page the overview links to came up blank."""

    async def in_english(request: Request) -> Response:
        under = _public_path(request.app.state.public_url)
        if under and not request.scope.get("root_path"):
            request.scope["root_path"] = under
        written = await page(request)
        body = bytes(written.body).replace(b"<html>", b'<html lang="en" dir="ltr">', 1)
        return HTMLResponse(body, status_code=written.status_code)

    return in_english


async def _http_error(request: Request, error: Exception) -> Response:
    """The error in the one shape; a 405 lists every method the path has (Starlette names
    only those of the first route that matched the path: GET for ``/api/events``, not POST),
    and a page asked for with a trailing slash is redirected without it."""
    assert isinstance(error, StarletteHTTPException)
    if error.status_code == 404 and (redirect := _without_trailing_slash(request)) is not None:
        return redirect
    if error.status_code == 405:
        allowed = [method for method in _METHODS if _routed(request, method=method)]
        if allowed:
            error.headers = {**(error.headers or {}), "Allow": ", ".join(allowed)}
    return http_error_response(request, error)


def _routed(request: Request, **changed: str) -> bool:
    """Whether a route takes the request with ``changed`` scope values (another method or
    path). Asked route by route through the public matching API: included routers may be
    wrapped, so their paths and methods cannot be listed directly."""
    scope = {**request.scope, **changed}
    return any(
        route.matches(scope)[0] == Match.FULL
        for route in request.app.routes
        if isinstance(route, BaseRoute)
    )


def _without_trailing_slash(request: Request) -> Response | None:
    """A 308 from ``/feeds/all.atom/`` to ``/feeds/all.atom`` when that is a page.

    Under the same root as the language redirects (``redirect_root``). Only for GET and
    HEAD: a writer's body and token are never sent on.
    """
    path = request.url.path
    if request.method not in ("GET", "HEAD") or path == "/" or not path.endswith("/"):
        return None
    stripped = path.rstrip("/") or "/"
    if not _routed(request, path=stripped):
        return None
    query = request.url.query
    return RedirectResponse(
        f"{redirect_root(request)}{stripped}{'?' + query if query else ''}", status_code=308
    )


async def _applied_through(request: Request, position: int) -> bool:
    return await services_of(request).applied_through(position)


async def _unavailable(request: Request, error: Exception) -> Response:
    """The database is busy, unreachable or the log gone: its condition, not a server fault."""
    assert isinstance(error, StoreUnavailable)
    app = request.scope.get("app")
    if isinstance(error, LogRemoved):
        services: Services | None = getattr(app.state, "services", None) if app else None
        if services is not None:
            services.log_removed(error)
    if _news(app, error):
        logger.warning("%s %s: %s", request.method, request.url.path, error)
    return unavailable_response(error)


def _news(app: Any, error: StoreUnavailable) -> bool:
    """Whether the server's log is to say ``error``: a condition no retry ends (the log
    removed, a projection another version rebuilt) is said once, not at every request it
    answers until a restart; a busy or unreachable database each time."""
    if not isinstance(error, (LogRemoved, BuiltByAnotherVersion, StoreDamaged)) or app is None:
        return True
    said: set[str] | None = getattr(app.state, "lasting_said", None)
    if said is None:
        said = app.state.lasting_said = set()
    if str(error) in said:
        return False
    said.add(str(error))
    return True


async def _unreadable(request: Request, error: Exception) -> Response:
    """A stored event cannot be read: edited behind the store's back (``leaderlog verify``
    names the first bad position) or written by a newer leaderlog; a server fault either
    way, said plainly."""
    logger.error("%s %s: %s", request.method, request.url.path, error)
    return error_response(500, "unreadable_event", str(error))
