"""serve's options, start-up words and logs, where it listens, and feed's limits."""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import sys
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
from click.testing import CliRunner, Result

from leaderlog.cli import projection_commands, serve_commands
from leaderlog.cli._app import main
from leaderlog.errors import StoreBusy
from leaderlog.log import EventLog
from tests.cli.terminal import drawn_on_a_terminal
from tests.cli.test_serve_commands import _ipv6_loopback_port, _seed, _serving_with, occupied_port
from tests.conftest import free_port
from tests.store import postgres_schema


def _stopped_before_serving(server: object, sockets: object = None) -> None:
    """uvicorn's Server.run stopped by Ctrl-C before its start-up."""
    raise KeyboardInterrupt


def _serve_in_this_process(
    monkeypatch: pytest.MonkeyPatch, url: str, *arguments: str, serving: object = None
) -> Result:
    """``serve`` run in this process on a free port, up to uvicorn's run, which is
    ``serving`` (by default: stopped by Ctrl-C before it starts)."""
    monkeypatch.setattr("uvicorn.Server.run", serving or _stopped_before_serving)
    port = free_port()
    before = sys.getswitchinterval()
    try:
        return CliRunner().invoke(main, ["--db", url, "serve", "--port", str(port), *arguments])
    finally:
        sys.setswitchinterval(before)


@pytest.mark.parametrize("addresses", ["*", "10.1.2.3/8", "10.0.0.1, 192.168.0.0/16"])
def test_serve_takes_proxy_addresses_written_as_uvicorn_takes_them(
    sqlite_url: str, addresses: str
) -> None:
    # given a port another program listens on, so that serve ends right after its options
    with occupied_port() as port:
        # when the proxies are given as "*", as a network written with one of its
        # addresses, or as a list with a space after its comma
        result = CliRunner().invoke(
            main,
            [
                "--db",
                sqlite_url,
                "serve",
                "--no-seed",
                "--port",
                str(port),
                "--proxy-headers",
                "--forwarded-allow-ips",
                addresses,
            ],
        )
    # then they are taken: serve goes on to listen, and finds the port taken
    assert result.exit_code == 1, result.stderr
    assert f"cannot listen on 127.0.0.1:{port}: address already in use" in result.stderr


def _self_link(port: int) -> str:
    """The self link of the Atom feed, asked for as a proxy forwarding https would ask."""
    answer = httpx.get(
        f"http://127.0.0.1:{port}/feeds/all.atom",
        headers={"X-Forwarded-Proto": "https"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return answer.text.partition('rel="self"')[0].rpartition('href="')[2]


def test_serve_trusts_forwarded_headers_only_from_the_proxies_it_is_given(
    sqlite_url: str,
) -> None:
    # given a server trusting the proxy on this machine (the default), and one trusting
    # only proxies elsewhere
    with _serving_with(sqlite_url, "--proxy-headers") as (port, _):
        # when a request comes through the proxy on this machine, then links say https
        trusted = _self_link(port)
    with _serving_with(sqlite_url, "--proxy-headers", "--forwarded-allow-ips", "10.0.0.0/8") as (
        port,
        _,
    ):
        # when it comes from an address not named, then its forwarded scheme is ignored
        ignored = _self_link(port)
    assert trusted.startswith("https://"), trusted
    assert ignored.startswith("http://"), ignored


def test_a_forwarded_websocket_scheme_gives_https_links_not_a_server_error(
    sqlite_url: str,
) -> None:
    # given a server trusting the proxy on this machine
    with _serving_with(sqlite_url, "--proxy-headers") as (port, _):
        # when the proxy forwards X-Forwarded-Proto: wss (uvicorn takes it for HTTP too)
        answers = {
            path: httpx.get(
                f"http://127.0.0.1:{port}{path}", headers={"X-Forwarded-Proto": "wss"}, timeout=30
            )
            for path in ("/feeds/all.atom", "/feeds/all.json", "/opml", "/")
        }
    # then every document answers, its links https ones
    for path, answer in answers.items():
        assert answer.status_code == 200, (path, answer.status_code, answer.text[:300])
        assert "wss://" not in answer.text, path
        assert f"https://127.0.0.1:{port}/" in answer.text, path


def test_serve_says_an_empty_log_stays_empty_when_it_finds_no_seeds(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given no seeds folder, here or shipped (as in an editable install run elsewhere)
    monkeypatch.setattr(serve_commands, "seeds_folder", lambda: None)
    # when serve starts, asked to seed an empty log, and when asked not to
    seeding = _serve_in_this_process(monkeypatch, sqlite_url)
    not_seeding = _serve_in_this_process(monkeypatch, sqlite_url, "--no-seed")
    # then the first says so before anything else, the second does not
    assert seeding.stderr.startswith(
        "warning: no seeds folder found; an empty log stays empty\n"
    ), seeding.stderr
    assert "no seeds folder" not in not_seeding.stderr, not_seeding.stderr


def test_serve_says_once_that_it_waits_for_a_busy_database(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a database that is busy the first two times it is opened
    opened = EventLog.open
    busy = [StoreBusy("database is busy: locked"), StoreBusy("database is busy: locked")]

    async def open_when_free(url: str, **options: object) -> EventLog:
        if busy:
            raise busy.pop()
        return await opened(url, **options)  # type: ignore[arg-type]

    monkeypatch.setattr("leaderlog.cli._app.EventLog.open", open_when_free)
    # when serve starts on it
    result = _serve_in_this_process(monkeypatch, sqlite_url, "--no-seed")
    # then it says it waits once, not at each try, and goes on to serve
    waiting = [line for line in result.stderr.splitlines() if "waiting for it" in line]
    assert waiting == ["warning: database is busy: locked; waiting for it"], result.stderr
    assert not busy
    assert f"serving {sqlite_url} on http://127.0.0.1:" in result.stderr


def test_serve_draws_each_projection_group_s_progress_on_a_terminal(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a log whose projections are not built yet, and a terminal on stderr
    asyncio.run(_seed(sqlite_url))
    screen = drawn_on_a_terminal(monkeypatch)
    monkeypatch.setattr(projection_commands, "PROGRESS_THRESHOLD", 1)
    # when serve brings them up to date before serving
    _serve_in_this_process(monkeypatch, sqlite_url, "--no-seed")
    # then a bar is drawn for each group of projections, saying what it does
    drawn = screen.getvalue()
    assert "updating leadership, audit" in drawn, drawn
    assert "updating feed_entries" in drawn, drawn


def test_the_start_up_line_hides_the_database_password(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def with_a_password() -> Result:
        # given a PostgreSQL URL holding a password (the test server does not ask for one)
        async with postgres_schema(postgres_url) as url:
            parts = urlsplit(url)
            secret = urlunsplit(
                parts._replace(netloc=f"{parts.username}:s3cret@{parts.hostname}:{parts.port}")
            )
            # when serve starts on it
            return await asyncio.to_thread(_serve_in_this_process, monkeypatch, secret, "--no-seed")

    result = asyncio.run(with_a_password())
    # then the line saying where it serves names the user, not the password
    assert "serving postgresql://postgres:***@" in result.stderr, result.stderr
    assert "s3cret" not in result.stderr


def test_serve_listens_on_127_0_0_1_port_8000_unless_told_otherwise(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given that the address serve listens on by default is taken (nothing is bound here)
    asked: list[tuple[str, int]] = []

    def taken(host: str, port: int) -> list[socket.socket]:
        asked.append((host, port))
        raise OSError(errno.EADDRINUSE, "Address already in use")

    monkeypatch.setattr(serve_commands, "listening_sockets", taken)
    # when serve is started without --host or --port
    result = CliRunner().invoke(main, ["--db", sqlite_url, "serve", "--no-seed"])
    # then it tried 127.0.0.1:8000, and says so
    assert asked == [("127.0.0.1", 8000)]
    assert result.exit_code == 1
    assert result.stderr.startswith("error: cannot listen on 127.0.0.1:8000: address already")


def test_serve_holds_clients_to_its_documented_time_limits_unless_told_otherwise(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given the time limits serve hands its HTTP protocol
    given: list[tuple[float, float, float]] = []
    protocol = serve_commands._with_deadlines

    def recorded(header: float, body: float, send: float) -> type[asyncio.Protocol]:
        given.append((header, body, send))
        return protocol(header, body, send)

    monkeypatch.setattr(serve_commands, "_with_deadlines", recorded)
    # when serve starts without time limits, then with each given
    _serve_in_this_process(monkeypatch, sqlite_url, "--no-seed")
    _serve_in_this_process(
        monkeypatch,
        sqlite_url,
        "--no-seed",
        "--header-timeout",
        "1",
        "--body-timeout",
        "2",
        "--send-timeout",
        "3",
    )
    # then the defaults its help gives hold (10 s for headers, 30 s for a body and for an
    # answer), and each given replaces its own
    assert given == [(10.0, 30.0, 30.0), (1.0, 2.0, 3.0)]


def test_serve_refuses_port_0_which_no_reader_could_be_sent_to(sqlite_url: str) -> None:
    # when serve is asked to listen on port 0 (any free port, unknown to its readers)
    result = CliRunner().invoke(main, ["--db", sqlite_url, "serve", "--port", "0"])
    # then it is a usage mistake
    assert result.exit_code == 2, result.stderr
    assert "Invalid value for '--port': 0 is not in the range 1<=x<=65535" in result.stderr


@pytest.mark.parametrize(
    ("host", "port", "error", "said"),
    [
        (
            "no-such-host.invalid",
            8000,
            socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
            "cannot listen on no-such-host.invalid:8000: 'no-such-host.invalid' is not a known "
            "host name (Name or service not known; choose another with --host)",
        ),
        (
            "0.0.0.0",
            80,
            PermissionError(errno.EACCES, "Permission denied"),
            "cannot listen on 0.0.0.0:80: permission denied (ports below 1024 need "
            "administrator rights; choose another with --port)",
        ),
        (
            "0.0.0.0",
            1024,
            PermissionError(errno.EACCES, "Permission denied"),
            "cannot listen on 0.0.0.0:1024: permission denied",
        ),
        (
            "::1",
            8000,
            OSError(errno.EMFILE, "Too many open files"),
            "cannot listen on [::1]:8000: too many open files",
        ),
    ],
)
def test_cannot_listen_says_why_in_one_line_and_what_to_do_when_it_knows(
    host: str, port: int, error: OSError, said: str
) -> None:
    # when an address cannot be listened on for this reason, then the line says so
    assert serve_commands.cannot_listen(host, port, error) == said


def test_serve_names_a_host_that_does_not_resolve(sqlite_url: str) -> None:
    # when serve is given a host name no resolver knows (.invalid never resolves, RFC 2606)
    result = CliRunner().invoke(
        main, ["--db", sqlite_url, "serve", "--no-seed", "--host", "no-such-host.invalid"]
    )
    # then it says so in one line, before anything is created
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "error: cannot listen on no-such-host.invalid:8000: 'no-such-host.invalid' is not a "
        "known host name ("
    ), result.stderr
    assert result.stderr.endswith("; choose another with --host)\n")
    assert result.stderr.count("\n") == 1


def _access_line(target: str) -> str:
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        0,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:50000", "GET", target, "1.1", 200),
        None,
    )
    assert all(keep(record) for keep in logging.getLogger("uvicorn.access").filters)
    return record.getMessage()


TOKEN = "ll_" + "A1b_-" * 8 + "xyz"


@pytest.mark.parametrize(
    ("target", "shown"),
    [
        # a password, a key, a secret, whatever its case and wherever it is in the query
        ("/api/state?org=ice&password=hunter2", "/api/state?org=ice&password=***"),
        ("/api/state?org=ice&API_KEY=k1&x=1", "/api/state?org=ice&API_KEY=***&x=1"),
        ("/api/state?Client_Secret=s&org=ice", "/api/state?Client_Secret=***&org=ice"),
        ("/api/state?Access_Token=t", "/api/state?Access_Token=***"),
        # a write token percent-encoded, in lower case or one character at a time
        ("/feeds/" + TOKEN.replace("_", "%5f", 1), "/feeds/ll_***"),
        ("/feeds/" + TOKEN.replace("-", "%2D"), "/feeds/ll_***"),
    ],
)
def test_an_access_line_hides_secrets_however_they_are_written(target: str, shown: str) -> None:
    # when a request line holding a secret is logged, then the secret is not in the line
    assert _access_line(target) == f'127.0.0.1:50000 - "GET {shown} HTTP/1.1" 200'


def test_the_server_s_error_log_keeps_a_request_s_own_failure() -> None:
    # given an error uvicorn logs for a request that failed (not one cut by a stop)
    try:
        raise ValueError("the application failed")
    except ValueError:
        failure = sys.exc_info()
    record = logging.LogRecord(
        "uvicorn.error", logging.ERROR, __file__, 0, "Exception in ASGI application", (), failure
    )
    # then it is logged, as is a cancellation for another reason than a stop
    cancelled = asyncio.CancelledError("client went away")
    other = logging.LogRecord(
        "uvicorn.error",
        logging.ERROR,
        __file__,
        0,
        "Exception in ASGI application",
        (),
        (type(cancelled), cancelled, None),
    )
    kept = logging.getLogger("uvicorn.error").filters
    assert all(keep(record) for keep in kept)
    assert all(keep(other) for keep in kept)


def test_a_driver_warning_while_serving_is_said_as_the_server_s_own(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a server whose database driver warns while it serves (a PostgreSQL restart)
    def serving(server: object, sockets: object = None) -> None:
        logging.getLogger("asyncpg.pool").warning("Failed to restore the pool connection floor")
        raise KeyboardInterrupt

    result = _serve_in_this_process(monkeypatch, sqlite_url, "--no-seed", serving=serving)
    # then the warning is prefixed as every other warning of the command
    assert "warning: Failed to restore the pool connection floor\n" in result.stderr, result.stderr


def test_listening_on_colon_colon_keeps_to_ipv6_as_the_refusal_of_an_empty_host_says() -> None:
    # given the sockets serve listens on for --host :: (skipped on a machine without IPv6)
    _ipv6_loopback_port()
    sockets = serve_commands.listening_sockets("::", 0)
    try:
        # then they take IPv6 clients only, whatever the system's default: IPv4 ones would be
        # shown as ::ffff:127.0.0.1, which no trusted proxy address matches
        assert [s.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY) for s in sockets] == [1]
        with socket.create_connection(("::1", sockets[0].getsockname()[1]), timeout=5):
            pass
    finally:
        for listening in sockets:
            listening.close()


@pytest.mark.parametrize(("length", "status"), [(64, 1), (65, 2)])
def test_feed_refuses_a_scope_id_one_character_longer_than_any_id(
    sqlite_url: str, length: int, status: int
) -> None:
    # given a seeded log
    asyncio.run(_seed(sqlite_url))
    # when a feed is asked for an organisation whose id is as long as an id may be, or one more
    result = CliRunner().invoke(
        main, ["--db", sqlite_url, "feed", "--scope", f"org:{'a' * length}"]
    )
    # then the first is looked up (and not found), the second is a usage mistake
    assert result.exit_code == status, result.stderr
    if status == 2:
        assert "its id is 65 characters long; no id is longer than 64" in result.stderr


def test_feed_refuses_archive_page_0_as_a_usage_mistake(sqlite_url: str) -> None:
    # given a seeded log
    asyncio.run(_seed(sqlite_url))
    # when page 0 of a feed is asked for (archive pages are numbered from 1)
    result = CliRunner().invoke(main, ["--db", sqlite_url, "feed", "--page", "0"])
    # then it is refused as --page's own mistake, and nothing is written
    assert result.exit_code == 2, result.stderr
    assert "Invalid value for '--page'" in result.stderr
    assert result.stdout == ""
