"""Commands that publish: ``serve`` (the HTTP server) and ``feed`` (one feed to stdout)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import logging
import math
import re
import socket
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

import click
from click.core import ParameterSource
from click.decorators import FC

from leaderlog._version import leaderlog_version
from leaderlog.cli._app import (
    Context,
    WholeNumber,
    echo_line,
    escaped,
    interruptible,
    logged_on_stderr,
    main,
    reported,
    run,
)
from leaderlog.cli.projection_commands import (
    PROGRESS_THRESHOLD,
    catch_up_bars,
    catch_up_for_queries,
)
from leaderlog.errors import ProjectionError, StoreBusy, StoreUnavailable, StoreUnreachable
from leaderlog.feeds import (
    FORMATS,
    FeedNotFound,
    FeedRequest,
    FeedService,
    Scope,
    UnknownLanguage,
    host_and_port,
    is_web_address,
    named_subject,
    resolve,
    with_lowercase_scheme,
)
from leaderlog.log import EventLog, load_seeds, seed_files, seeds_folder
from leaderlog.projections import Queries, runner_for
from leaderlog.projections.query_input import MAX_ID_LENGTH, NOT_UTF8_TEXT
from leaderlog.store import without_password

if TYPE_CHECKING:
    from starlette.responses import JSONResponse

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
# What uvicorn exits with when the application does not start (its STARTUP_FAILURE).
_STARTUP_FAILURE = 3
# uvicorn's default: connections the kernel queues before the server accepts them.
_BACKLOG = 2048
# How long a client may take to send a request's line and headers (--header-timeout).
HEADER_SECONDS = 10.0
# How long a client may take to send a request's body once its headers are in (--body-timeout).
BODY_SECONDS = 30.0
# How long an answer may wait on a client that reads none of it (--send-timeout).
SEND_SECONDS = 30.0
# The most a request's line and headers may take (h11's and so uvicorn's limit).
HEAD_BYTES = 16 * 1024


def _proxy_addresses(context: click.Context, parameter: click.Parameter, value: str) -> str:
    """Checked here: uvicorn would take a mistyped address as a name that never matches."""
    given = context.get_parameter_source("forwarded_allow_ips") != ParameterSource.DEFAULT
    if given and not context.params.get("proxy_headers"):
        raise click.BadParameter("has no effect without --proxy-headers: give both, or neither")
    for part in value.split(","):
        address = part.strip()
        if address == "*":
            continue
        try:
            ipaddress.ip_network(address, strict=False)
        except ValueError:
            raise click.BadParameter(
                f"{address!r} is not an IP address or network (such as 10.0.0.0/8), nor *"
            ) from None
    return value


def _listening_host(context: click.Context, parameter: click.Parameter, host: str) -> str:
    # An empty host listens on every interface of both families: more likely a variable that
    # went missing (--host "$HOST") than a wish to serve the whole network.
    if not host.strip():
        raise click.BadParameter(
            "give an address to listen on (0.0.0.0 for every IPv4 interface, :: for every IPv6 "
            "one), not an empty one"
        )
    if host.startswith("[") or host.endswith("]"):
        return _unbracketed(host)
    if NOT_UTF8_TEXT.search(host):
        raise click.BadParameter(f"{host!r} holds bytes that are not UTF-8 text")
    try:
        # What getaddrinfo does first with a name; it fails there with a UnicodeError.
        host.encode("idna")
    except UnicodeError:
        raise click.BadParameter(
            f"{host!r} is not a host name or IP address: each of its dot-separated labels "
            "must hold 1 to 63 characters"
        ) from None
    return host


def _unbracketed(host: str) -> str:
    """``[::1]`` as ``::1``: an IPv6 address copied from a URL, which brackets it."""
    if not (host.startswith("[") and host.endswith("]")):
        raise click.BadParameter(
            f"{host!r} is missing a bracket: give an IPv6 address as ::1 or [::1]"
        )
    inside = host[1:-1]
    try:
        ipaddress.IPv6Address(inside)
    except ValueError:
        raise click.BadParameter(
            f"brackets hold only an IPv6 address (such as [::1]), not {inside!r}: "
            "give a host name or an IPv4 address without them"
        ) from None
    return inside


# The shortest time limit taken: a client cannot send a request's line, headers or body
# in less (one of 1e-300 s closed every connection before its first byte was read).
_SHORTEST_SECONDS = 0.01


def _finite_seconds(context: click.Context, parameter: click.Parameter, value: float) -> float:
    # A FloatRange lets nan and inf through: asyncio takes a deadline of nan for one already
    # due, so every connection would be closed at once, and inf is no deadline at all.
    if not math.isfinite(value):
        raise click.BadParameter(f"give a number of seconds of at least 0.01, not {value}")
    return value


def _seconds_option(name: str, default: float, help: str) -> Callable[[FC], FC]:
    """A time limit in seconds: any number from 0.01 on."""
    return click.option(
        name,
        type=click.FloatRange(_SHORTEST_SECONDS),
        default=default,
        show_default=True,
        callback=_finite_seconds,
        help=help,
    )


@main.command("serve")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    callback=_listening_host,
    help="Address to listen on (an IPv6 address with or without brackets: ::1 or [::1]).",
)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535))
@click.option("--no-seed", is_flag=True, help="Do not load the seeds into an empty log.")
@click.option(
    "--proxy-headers",
    is_flag=True,
    is_eager=True,  # known when --forwarded-allow-ips is checked, wherever it is given
    help="Trust the X-Forwarded-Proto/For headers of the reverse proxies "
    "--forwarded-allow-ips names.",
)
@click.option(
    "--forwarded-allow-ips",
    default="127.0.0.1,::1",
    show_default=True,
    callback=_proxy_addresses,
    help="With --proxy-headers: the proxies whose X-Forwarded-* headers are trusted "
    "(addresses or networks, comma-separated, or *).",
)
@click.option(
    "--public-url",
    help="The address readers use (https://feeds.example.org): every link is built from "
    "it instead of the request's Host header.",
)
@_seconds_option(
    "--header-timeout",
    HEADER_SECONDS,
    "Seconds a client has to send a request's line and headers; a connection still "
    "sending them then is closed.",
)
@_seconds_option(
    "--body-timeout",
    BODY_SECONDS,
    "Seconds a client has to send a request's body once its headers are in; a request "
    "still sending it then is answered 408 and its connection closed.",
)
@_seconds_option(
    "--send-timeout",
    SEND_SECONDS,
    "Seconds an answer may wait on a client that reads none of it; its connection is then "
    "closed and the answer dropped.",
)
@click.option(
    "--access-log/--no-access-log",
    default=True,
    show_default=True,
    help="A line on stdout for each request answered (feed readers polling write many).",
)
@click.pass_obj
def serve_command(
    context: Context,
    host: str,
    port: int,
    no_seed: bool,
    proxy_headers: bool,
    forwarded_allow_ips: str,
    public_url: str | None,
    header_timeout: float,
    body_timeout: float,
    send_timeout: float,
    access_log: bool,
) -> None:
    """Serve feeds, the JSON API and an HTML overview over HTTP.

    On an empty log the seeds are loaded first (./seeds, or the copy shipped with
    leaderlog). Projections are brought up to date, then kept current while serving.

    \b
    Example:
      leaderlog serve
      # then open http://127.0.0.1:8000/
      # or subscribe to http://127.0.0.1:8000/feeds/all.atom
      leaderlog --db sqlite:///other.db serve --port 8080 --no-seed
      leaderlog serve --proxy-headers --public-url https://feeds.example.org
      leaderlog serve --header-timeout 5 --body-timeout 120 --send-timeout 60
    """
    # Imported here: the HTTP stack costs every other command half a second to load.
    import uvicorn

    from leaderlog.http import catch_up_before_serving, check_public_url, create_app

    if public_url is not None:
        if not _splits(public_url):
            raise click.BadParameter(
                f"public URL {public_url!r} is not an http(s) address like https://example.org "
                f"({_IPV6_IN_BRACKETS})",
                param_hint="'--public-url'",
            )
        try:
            public_url = check_public_url(public_url)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="'--public-url'") from None
    seeds = None if no_seed else seeds_folder()
    if not no_seed and seeds is None:
        echo_line("warning: no seeds folder found; an empty log stays empty", err=True)

    async def open_and_seed() -> None:
        # Here rather than in the server's startup, so that a database that cannot be
        # opened or a bad seed file is a one-line error, as with every other command; one
        # that is only busy (a lock a migration holds) or not answering yet (starting up,
        # restarting) is waited for, said once. Catching up is done here too, where Ctrl+C
        # and SIGTERM stop it at once.
        said = False
        while True:
            try:
                async with context.log(create=True) as log:
                    if seeds is not None and await log.store.count() == 0:
                        loaded = await load_seeds(log, seeds)
                        files = len(seed_files(seeds))
                        click.echo(
                            f"the log was empty: loaded the seeds, {loaded.appended} events "
                            f"from {files} file{'s' if files != 1 else ''} in {seeds}",
                            err=True,
                        )
                    await _catch_up_saying_how_long(log)
                return
            except StoreUnavailable as error:
                if not isinstance(error, StoreBusy | StoreUnreachable):
                    raise
                if not said:
                    # Prefixed as the server's own warnings are, in one line however long.
                    echo_line(f"warning: {error}; waiting for it", err=True)
                    said = True
                await asyncio.sleep(1)

    async def _catch_up_saying_how_long(log: EventLog) -> None:
        # A long catch-up (an upgrade rebuilding a projection) is said to be done, and how
        # long it took: without a terminal's bar, the log would show only that it began.
        events = 0
        started = time.monotonic()
        with catch_up_bars("updating") as shown:

            def noted(names: str, applied: int, total: int) -> None:
                nonlocal events
                events = max(events, total)
                shown(names, applied, total)

            await catch_up_before_serving(log.store, noted)
        if events >= PROGRESS_THRESHOLD:
            took = time.monotonic() - started
            click.echo(
                f"projections brought up to date: {events} events applied in {took:.0f} s",
                err=True,
            )

    # The address is taken first: uvicorn would start the application and only then find
    # the port taken, after its "startup complete", in a traceback-like log; and a server
    # that cannot listen must not have created or seeded a database meanwhile.
    try:
        sockets = listening_sockets(host, port)
    except OSError as error:
        click.echo(f"error: {cannot_listen(host, port, error)}", err=True)
        sys.exit(1)
    try:
        with logged_on_stderr(*_SERVER_LOGGERS):
            before_serving = "stopped before serving"
            run(open_and_seed, interrupted=before_serving)
            with reported(before_serving), interruptible(before_serving) as interrupted:
                app = create_app(context.db, seeds=seeds, public_url=public_url)
                config = uvicorn.Config(
                    app,
                    host=host,
                    port=port,
                    proxy_headers=proxy_headers,
                    forwarded_allow_ips=forwarded_allow_ips if proxy_headers else None,
                    log_level="info",
                    access_log=access_log,
                    # A client that never finishes its request would otherwise hold a stop
                    # for good.
                    timeout_graceful_shutdown=GRACEFUL_STOP_SECONDS,
                    http=_with_deadlines(header_timeout, body_timeout, send_timeout),
                )
                server = uvicorn.Server(config)
                if interrupted():
                    # Pressed where Python drops it (a finalizer's code, while the
                    # application was made): the server would have started regardless.
                    raise KeyboardInterrupt
            # Large answers are worked out on worker threads; with Python's default 5 ms turns
            # at the interpreter lock, every other request waited up to 5 ms per step meanwhile
            # (a /healthz took 0.3-0.8 s during a 500-post state; 0.1-0.2 s with 1 ms turns).
            sys.setswitchinterval(SWITCH_INTERVAL)
            # Given sockets, uvicorn does not say where it listens: this line does.
            click.echo(
                f"leaderlog {leaderlog_version()} serving {without_password(context.db)} on "
                f"http://{host_and_port(host, port)}/ "
                "(Ctrl+C to stop)",
                err=True,
            )
            # Ctrl-C is how a server is stopped: status 0, as with uvicorn.run.
            with contextlib.suppress(KeyboardInterrupt):
                server.run(sockets=sockets)
    finally:
        for listening in sockets:
            listening.close()
    if not server.started:
        sys.exit(_STARTUP_FAILURE)


# A token put in a query string by mistake (?token=..., ?access_token=...) is refused, but
# the access log would keep the request line as sent.
_SECRET_IN_QUERY = re.compile(r"(?i)([?&][^=&]*(?:token|key|secret|password)[^=&]*=)[^&\s]*")
# A write token wherever it is put (?t=, a path, a header an access line shows), by its shape:
# "ll_" and 43 URL-safe characters, percent-encoded or not.
_WRITE_TOKEN = re.compile(r"ll(?:_|%5[Ff])(?:[A-Za-z0-9_-]|%[0-9A-Fa-f]{2}){43}")


def _secrets_hidden(record: logging.LogRecord) -> bool:
    """Hide secrets in an access line, and escape what a client sent: an X-Forwarded-For
    address is logged as given, and escape codes in it would clear the screen or forge a
    line of their own on the operator's terminal."""
    if isinstance(record.args, tuple):
        record.args = tuple(
            escaped(_WRITE_TOKEN.sub("ll_***", _SECRET_IN_QUERY.sub(r"\1***", arg)))
            if isinstance(arg, str)
            else arg
            for arg in record.args
        )
        client, *rest = record.args or (None,)
        if isinstance(client, str):
            # The client comes first, as one word: spaces and quotes in a forwarded one
            # would pass the rest of it off as the request line of a line of its own.
            record.args = (_SPACES_AND_QUOTES.sub(_percent_encoded, client), *rest)
    return True


_SPACES_AND_QUOTES = re.compile(r'[\s"%]')


def _percent_encoded(found: re.Match[str]) -> str:
    return "".join(f"%{byte:02X}" for byte in found.group().encode())


logging.getLogger("uvicorn.access").addFilter(_secrets_hidden)


def _not_a_request_cut_at_stop(record: logging.LogRecord) -> bool:
    """Leave out the traceback uvicorn logs for each request still unfinished when a stop
    has waited long enough (a client that never sent its whole body): cutting them is
    what the stop is for, not the server's fault."""
    raised = record.exc_info[1] if record.exc_info else None
    return not (
        isinstance(raised, asyncio.CancelledError)
        and "timeout graceful shutdown exceeded" in str(raised)
    )


logging.getLogger("uvicorn.error").addFilter(_not_a_request_cut_at_stop)

# Whose warnings and errors a server prints as commands print theirs (``warning: ...``);
# uvicorn's own lines keep uvicorn's format, its access log included.
_SERVER_LOGGERS = ("leaderlog", "asyncpg")


def _splits(url: str) -> bool:
    """Whether ``url`` can be taken apart as a URL: it cannot when a "[" or "]" opens or
    closes no IPv6 host (urlsplit's only refusal, in Python's words: "Invalid IPv6 URL")."""
    try:
        urlsplit(url)
    except ValueError:
        return False
    return True


_IPV6_IN_BRACKETS = "an IPv6 host goes in brackets: http://[::1]:8000"


# How long a stop (Ctrl-C, SIGTERM) waits for requests in flight before closing them.
GRACEFUL_STOP_SECONDS = 5
# Seconds a thread holds the interpreter lock while another waits for it (see serve).
SWITCH_INTERVAL = 0.001


def _with_deadlines(
    header_seconds: float, body_seconds: float, send_seconds: float
) -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol, holding clients to three deadlines (and refusing the
    request heads ``CheckedConnection`` says, each with its own answer).

    A request's line and headers must all arrive ``header_seconds`` after the connection
    was opened or its last response was sent, or the connection is closed. uvicorn waits
    for them for good: its keep-alive timeout starts again with every byte, so clients
    sending a byte now and then could hold every connection open (Slowloris).

    A request's body must all arrive ``body_seconds`` after its headers, or the request is
    answered 408 (while no answer has begun) and the connection closed; the application
    reads the end of the body as the client hanging up, so nothing of it is written. Time
    the server holds the body back (a client owed its 100 Continue, or reading paused while
    the application has not taken what came) is not held against the client.
    uvicorn does not time bodies either: a writer stopping partway through a Content-Length
    held its connection until it hung up.

    An answer the client reads none of for ``send_seconds`` (the server's buffer full and not
    shrinking) is dropped and the connection closed at once. The whole answer waits in that
    buffer: clients asking for large answers and never reading them held the server's memory
    for as long as they liked (a few hundred such clients could exhaust it).
    """
    # Imported here, as uvicorn is (see serve_command).
    import h11
    from uvicorn.protocols.http.h11_impl import STATUS_PHRASES, H11Protocol
    from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string

    from leaderlog.http._errors import error_response

    too_slow = error_response(
        408,
        None,
        f"the request's body did not all arrive within {body_seconds:g} "
        f"{'second' if body_seconds == 1 else 'seconds'} of its headers; nothing of it was read",
        headers={"Connection": "close"},
    )
    # uvicorn's own answer to a request it cannot parse is plain text; every other error a
    # client gets from this server is in the one JSON shape.
    unreadable = error_response(
        400,
        None,
        "the request is not HTTP/1.1 this server can read: its line or headers are malformed",
        headers={"Connection": "close"},
    )
    framed_twice = error_response(
        400,
        None,
        "the request gives the length of its body twice, as Content-Length and as "
        "Transfer-Encoding: send one of them",
        headers={"Connection": "close"},
    )

    # h11 takes any HTTP/d.d; a request line saying HTTP/2.0 or 0.9 was served as HTTP/1.1.
    other_version = error_response(
        505,
        None,
        "this server speaks HTTP/1.1 (and 1.0); the request line names another major version "
        "of HTTP",
        headers={"Connection": "close"},
    )
    too_long_address = error_response(
        414,
        None,
        f"the request's address is longer than the {HEAD_BYTES // 1024} KiB this server reads",
        headers={"Connection": "close"},
    )
    too_large_head = error_response(
        431,
        None,
        f"the request's line and headers are larger than the {HEAD_BYTES // 1024} KiB this "
        "server reads",
        headers={"Connection": "close"},
    )

    class CheckedConnection(h11.Connection):
        """h11's server side, refusing more than h11 does, each refusal with its answer.

        A request that gives its body's length both by Content-Length and by
        Transfer-Encoding: h11 reads the chunks and keeps the connection open, so bytes a
        proxy in front counted into the body by Content-Length would be answered here as a
        request of their own (request smuggling, which RFC 9112 §6.1 guards against by
        closing the connection).

        A request whose target is a whole URL (absolute-form, as clients send to a proxy) is
        taken as one for its path, with the URL's host as its Host, as RFC 9112 §3.2.2 has a
        server do: uvicorn would route the whole URL as a path, and answer 404.

        A request line or head over ``HEAD_BYTES``: h11 refuses one only while it is still
        arriving, so whether it was served depended on how the network cut it up, and
        uvicorn called it malformed.
        """

        refusal: JSONResponse | None = None

        def next_event(self) -> h11.Event | type[h11.NEED_DATA] | type[h11.PAUSED]:
            try:
                event = super().next_event()
            except h11.RemoteProtocolError as error:
                if error.error_status_hint == 431:
                    waiting, _ = self.trailing_data
                    line_is_whole = b"\n" in waiting
                    self.refusal = too_large_head if line_is_whole else too_long_address
                raise
            if isinstance(event, h11.Request):
                self.refusal = _refusal_of(event)
                if self.refusal is not None:
                    raise h11.RemoteProtocolError("refused", self.refusal.status_code)
                return _in_origin_form(event)
            return event

    def _in_origin_form(request: h11.Request) -> h11.Request:
        # Latin-1 both ways: h11 lets through any byte but controls and spaces.
        target = request.target.decode("latin-1")
        if not target.lower().startswith(("http://", "https://")):
            return request
        try:
            url = urlsplit(target)
        except ValueError:
            return request  # a bracket opening no IPv6 host: no path to serve, a 404
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        given = [value for name, value in request.headers if name == b"host"]
        host = url.netloc.encode("latin-1") if url.netloc else b"".join(given[:1])
        others = [(name, value) for name, value in request.headers if name != b"host"]
        return h11.Request(
            method=request.method,
            target=path.encode("latin-1"),
            headers=[(b"host", host), *others] if host else others,
            http_version=request.http_version,
        )

    def _refusal_of(request: h11.Request) -> JSONResponse | None:
        if not request.http_version.startswith(b"1."):
            return other_version
        names = {name for name, _ in request.headers}
        if {b"content-length", b"transfer-encoding"} <= names:
            return framed_twice
        if len(request.target) > HEAD_BYTES:
            return too_long_address
        # The head's bytes as sent, give or take the spaces around each header's value.
        head = len(request.method) + len(request.target) + len(b"  HTTP/1.1\r\n\r\n")
        head += sum(len(name) + len(value) + len(b": \r\n") for name, value in request.headers)
        return too_large_head if head > HEAD_BYTES else None

    class DeadlineProtocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None
        # The client's state the deadline was set for: a new one is set only when it moves
        # on, never for more bytes of the same headers or body.
        _timed: object = None
        _body_was_held_back = False
        # While writing is paused: the timer for a client reading none of the answer, and
        # the bytes unsent when it was set.
        _unread: asyncio.TimerHandle | None = None
        _unsent = 0

        def __init__(self, *arguments: Any, **options: Any) -> None:
            super().__init__(*arguments, **options)
            self.conn = CheckedConnection(h11.SERVER, HEAD_BYTES)

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._time_what_is_awaited()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._time_what_is_awaited()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            # The next request's headers are awaited now, or (pipelined) its body.
            self._time_what_is_awaited()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_waiting()
            self._stop_watching_the_reader()
            super().connection_lost(exc)

        def pause_writing(self) -> None:
            super().pause_writing()
            if self._unread is None:
                self._unsent = self.transport.get_write_buffer_size()
                self._unread = self.loop.call_later(send_seconds, self._reader_too_slow)

        def resume_writing(self) -> None:
            super().resume_writing()
            self._stop_watching_the_reader()

        def _stop_watching_the_reader(self) -> None:
            if self._unread is not None:
                self._unread.cancel()
                self._unread = None

        def _reader_too_slow(self) -> None:
            self._unread = None
            if self.transport.is_closing():
                return
            unsent = self.transport.get_write_buffer_size()
            if unsent < self._unsent:
                # It read some, however slowly: another period from now.
                self._unsent = unsent
                self._unread = self.loop.call_later(send_seconds, self._reader_too_slow)
                return
            # Not close(), which would wait to send what is buffered first.
            self.transport.abort()

        def _time_what_is_awaited(self) -> None:
            awaited = self.conn.their_state
            if awaited is self._timed:
                return
            self._stop_waiting()
            self._timed = awaited
            if self.transport.is_closing():
                return
            if awaited is h11.IDLE:
                self._deadline = self.loop.call_later(header_seconds, self._headers_too_slow)
            elif awaited is h11.SEND_BODY:
                self._body_was_held_back = False
                self._deadline = self.loop.call_later(body_seconds, self._body_too_slow)

        def _stop_waiting(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _headers_too_slow(self) -> None:
            self._deadline = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

        def _body_too_slow(self) -> None:
            self._deadline = None
            if self.conn.their_state is not h11.SEND_BODY or self.transport.is_closing():
                return
            held_back = self.conn.they_are_waiting_for_100_continue or self.flow.read_paused
            if held_back or self._body_was_held_back:
                # When the server let the body go on is not known, only that it held it at
                # the last look: a whole period more counts from a moment after that.
                self._body_was_held_back = held_back
                self._deadline = self.loop.call_later(body_seconds, self._body_too_slow)
                return
            if self.conn.our_state is h11.SEND_RESPONSE:
                self._log_own_answer(too_slow.status_code)
                self._answer(too_slow)
            # The application, waiting for the rest of the body, hears the client hung up
            # and answers nothing more.
            if self.cycle is not None and not self.cycle.response_complete:
                self.cycle.disconnected = True
                self.cycle.message_event.set()
            self.transport.close()

        def send_400_response(self, msg: str) -> None:
            # A malformed body (a bad chunk) may come after the application has begun or
            # given its answer: a second one cannot be sent then, only the connection closed.
            if self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                refusal = self.conn.refusal if isinstance(self.conn, CheckedConnection) else None
                self._answer(refusal or unreadable)
            self.transport.close()

        def _log_own_answer(self, status: int) -> None:
            if self.access_log:
                # As uvicorn logs the answers the application gives.
                self.access_logger.info(
                    '%s - "%s %s HTTP/%s" %d',
                    get_client_addr(self.scope),
                    self.scope["method"],
                    get_path_with_query_string(self.scope),
                    self.scope["http_version"],
                    status,
                )

        def _answer(self, response: JSONResponse) -> None:
            head = h11.Response(
                status_code=response.status_code,
                headers=self.server_state.default_headers + response.raw_headers,
                reason=STATUS_PHRASES[response.status_code],
            )
            for event in (head, h11.Data(data=bytes(response.body)), h11.EndOfMessage()):
                self.transport.write(self.conn.send(event) or b"")

    return DeadlineProtocol


def listening_sockets(host: str, port: int) -> list[socket.socket]:
    """Sockets bound and listening on every address ``host`` names, as uvicorn's own would be.

    Raises the :class:`OSError` (a :class:`socket.gaierror` for a name that does not
    resolve) of the first address that cannot be taken; nothing stays open then.
    """
    found = socket.getaddrinfo(
        host or None,  # "" means every interface, as in asyncio
        port,
        type=socket.SOCK_STREAM,
        # Named, so that asyncio sees a TCP socket and turns Nagle off (TCP_NODELAY).
        proto=socket.IPPROTO_TCP,
        flags=socket.AI_PASSIVE,
    )
    addresses = list(dict.fromkeys((family, address) for family, _, _, _, address in found))
    sockets: list[socket.socket] = []
    unavailable: OSError | None = None
    try:
        for family, address in addresses:
            listening = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
            sockets.append(listening)
            # A restarted server need not wait for the old one's connections to time out.
            listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                # "::" would otherwise also claim the IPv4 port that 0.0.0.0 takes beside it,
                # and show IPv4 clients, a proxy at 127.0.0.1 among them, as ::ffff:127.0.0.1,
                # which the trusted proxy addresses do not match.
                listening.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                listening.bind(address)
            except OSError as error:
                if error.errno != errno.EADDRNOTAVAIL or len(addresses) == 1:
                    raise
                # One of several (::1 beside 127.0.0.1 for localhost) on a machine without
                # that address family: skipped, as asyncio does.
                sockets.pop().close()
                unavailable = error
                continue
            listening.listen(_BACKLOG)
        if not sockets and unavailable is not None:
            raise unavailable
    except BaseException:
        for listening in sockets:
            listening.close()
        raise
    return sockets


def cannot_listen(host: str, port: int, error: OSError) -> str:
    """Why ``host:port`` cannot be listened on, and what to do about it, in one line."""
    where = f"cannot listen on {host_and_port(host, port)}"
    if isinstance(error, socket.gaierror):
        return (
            f"{where}: {host!r} is not a known host name "
            f"({error.strerror}; choose another with --host)"
        )
    if error.errno == errno.EADDRINUSE:
        return (
            f"{where}: address already in use "
            "(is another server running? choose another with --port)"
        )
    if error.errno == errno.EADDRNOTAVAIL:
        return (
            f"{where}: address not available "
            "(it is not an address of this machine; choose another with --host)"
        )
    if error.errno == errno.EACCES and port < 1024:
        return (
            f"{where}: permission denied "
            "(ports below 1024 need administrator rights; choose another with --port)"
        )
    reason = error.strerror or str(error)
    return f"{where}: {reason[:1].lower()}{reason[1:]}"


@main.command("feed", short_help="Write a feed to stdout, as the server serves it.")
@click.option(
    "--scope",
    default="all",
    show_default=True,
    help="all, org:ID (the whole subtree), person:ID or post:ID.",
)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="atom", show_default=True)
@click.option("--lang", default=None, help="en, es, fr, de, it, pt, ru, zh-Hans, hi or ja.")
@click.option("--page", type=WholeNumber(min=1), default=None, help="An archive page.")
@click.option(
    "--base-url",
    default=DEFAULT_BASE_URL,
    show_default=True,
    help="Where the feed is served; its links start with this.",
)
@click.pass_obj
def feed_command(
    context: Context, scope: str, fmt: str, lang: str | None, page: int | None, base_url: str
) -> None:
    """Write a feed document to stdout: the same bytes the server sends for it.

    Without --lang the document is the English one a client gets asking for no language
    (neither ?lang= nor Accept-Language).

    \b
    Example:
      leaderlog feed --scope org:ice --format rss
      leaderlog feed --scope person:robert-hammer --lang fr > hammer.fr.atom
    """
    base_url = with_lowercase_scheme(base_url)
    if not _splits(base_url):
        raise click.BadParameter(
            f"give an http:// or https:// address ({_IPV6_IN_BRACKETS})",
            param_hint="'--base-url'",
        )
    if "@" in urlsplit(base_url).netloc:
        raise click.BadParameter(
            "give an address without a user name or password: feeds link every reader to it",
            param_hint="'--base-url'",
        )
    if not is_web_address(base_url):
        raise click.BadParameter("give an http:// or https:// address", param_hint="'--base-url'")
    if urlsplit(base_url).port == 0:
        # No reader can reach it (serve's --public-url refuses it too).
        raise click.BadParameter(
            "give a port from 1 to 65535, not 0: feeds link every reader to it",
            param_hint="'--base-url'",
        )
    if "?" in base_url or "#" in base_url:
        # Feed paths are appended to it: a query or fragment, even an empty one, would end
        # up in the middle.
        raise click.BadParameter(
            "give the address feeds are served under, without ?query or #fragment",
            param_hint="'--base-url'",
        )
    try:
        chosen_scope = Scope.parse(scope)
    except ValueError as error:
        named = named_subject(scope)
        if named is None:
            raise click.BadParameter(str(error), param_hint="'--scope'") from None
        _refuse_a_subject_too_long(named)
        _explain(context, named)
    try:
        chosen_lang = resolve(lang) if lang is not None else "en"
    except UnknownLanguage as error:
        raise click.BadParameter(str(error), param_hint="'--lang'") from None
    request = FeedRequest(
        chosen_scope,
        fmt,  # type: ignore[arg-type]
        chosen_lang,
        # Made a URI without its trailing slash by FeedRequest, as the server's --public-url.
        base_url,
        page,
        explicit_lang=lang is not None,
    )

    async def render_feed() -> bytes:
        async with context.log(create=False) as log:
            from leaderlog.http import feed_runner  # the HTTP stack, only when used

            # As the queries do: nothing written when the feed entries are current, so that
            # a role that may only read (a hot standby's) gets its feed.
            await catch_up_for_queries(feed_runner(log.store))
            try:
                rendered = await FeedService(log.store).render(request)
            except FeedNotFound as error:
                raise ProjectionError(await _explained(log, error)) from None
        return rendered.body

    body = run(render_feed)
    sys.stdout.buffer.write(body)
    sys.stdout.buffer.flush()


async def _explained(log: EventLog, error: FeedNotFound) -> str:
    if error.scope is not None:
        # The ids probably meant come from the leadership read model.
        await catch_up_for_queries(await runner_for(log.store))
    return await error.explained(Queries(log.store))


def _refuse_a_subject_too_long(error: FeedNotFound) -> None:
    """A subject longer than any id is a usage mistake, as --org, --person and --post say
    in state and history: looked up, it would only be repeated whole in the error."""
    subject = error.scope.id if error.scope is not None else None
    if subject is not None and len(subject) > MAX_ID_LENGTH:
        raise click.BadParameter(
            f"its id is {len(subject)} characters long; no id is longer than {MAX_ID_LENGTH}",
            param_hint="'--scope'",
        )


def _explain(context: Context, error: FeedNotFound) -> NoReturn:
    """Say what a scope that names no id may have meant, and exit 1 as for an unknown id."""

    async def explain() -> str:
        async with context.log(create=False) as log:
            return await _explained(log, error)

    echo_line(f"error: {run(explain)}", err=True)
    sys.exit(1)
