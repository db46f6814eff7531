"""``leaderlog feed`` and ``leaderlog serve``: arguments, errors, and where seeds come from."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import httpx
import pytest
from click.testing import CliRunner, Result

import leaderlog.http
from leaderlog.cli import projection_commands, serve_commands
from leaderlog.cli._app import main
from leaderlog.http import catch_up_before_serving
from leaderlog.http.app import _RETRY_SECONDS as RETRY_SECONDS
from leaderlog.log import EventLog, load_seeds, seeds_folder
from leaderlog.projections import runner_for
from leaderlog.tokens import Tokens
from tests.cli.terminal import drawn_on_a_terminal
from tests.cli.test_log_commands import organisations_file
from tests.conftest import ROOT, SEEDS, free_port
from tests.http.server import confirm_as_another_writer
from tests.projections.logs import (
    ANOTHER_CLAIM,
    GORDON_ACTING,
    SEED_COUNT,
    seen_projection_module,
)
from tests.store import postgres_connection, postgres_schema


async def _seed(url: str) -> None:
    log = await EventLog.open(url)
    try:
        await load_seeds(log, SEEDS)
    finally:
        await log.close()


def test_feed_writes_a_document_and_refuses_bad_arguments(sqlite_url: str) -> None:
    asyncio.run(_seed(sqlite_url))
    runner = CliRunner()
    written = runner.invoke(
        main, ["--db", sqlite_url, "feed", "--format", "json", "--lang", "pt-BR"]
    )
    assert written.exit_code == 0, written.output
    assert b'"language": "pt"' in written.stdout_bytes
    assert b'"feed_url": "http://127.0.0.1:8000/feeds/all.json?lang=pt"' in written.stdout_bytes
    # A scheme is case-insensitive: given in capitals, it is linked in lower case.
    shouted = runner.invoke(main, ["--db", sqlite_url, "feed", "--base-url", "HTTPS://x.org/"])
    assert shouted.exit_code == 0, shouted.output
    assert b'href="https://x.org/feeds/all.atom" rel="self"' in shouted.stdout_bytes
    cases = {
        ("--scope", "planet:earth"): (2, "is not one of all, org:ID"),
        ("--lang", "tlh"): (2, "is not offered"),
        ("--format", "xml"): (2, "'xml' is not one of"),
        ("--base-url", "ftp://example.org"): (2, "http:// or https://"),
        ("--base-url", "http://example.com/sub?x=1&y=2"): (2, "without ?query or #fragment"),
        ("--base-url", "http://example.com/sub#top"): (2, "without ?query or #fragment"),
        ("--base-url", "https://u:p@example.com"): (2, "without a user name or password"),
        # An IPv6 host without its closing bracket: the same usage mistake, not a traceback.
        ("--base-url", "http://[::1"): (2, "an IPv6 host goes in brackets: http://[::1]:8000"),
        ("--base-url", "http://::1]:8000/"): (2, "an IPv6 host goes in brackets"),
        ("--scope", "org:atlantis"): (1, "unknown organisation 'atlantis'"),
        ("--scope", "person:hammer"): (1, "'hammer'; did you mean robert-hammer (Robert Hammer,"),
        # A name where the id goes: the ids it probably means, as for --person.
        ("--scope", "person:Robert J. Hammer"): (1, "did you mean robert-hammer (Robert Hammer,"),
        ("--scope", "org:ICE"): (1, "unknown organisation 'ICE'; did you mean ice (ICE,"),
        ("--page", "1"): (1, "the feed is complete"),
    }
    for arguments, (status, message) in cases.items():
        result = runner.invoke(main, ["--db", sqlite_url, "feed", *arguments])
        assert result.exit_code == status, arguments
        assert message in result.stderr, (arguments, result.stderr)


def test_seeds_come_from_the_working_folder_when_it_has_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    assert seeds_folder() == Path("seeds")
    monkeypatch.chdir(tmp_path)
    found = seeds_folder()
    # Elsewhere only a packaged copy can be used (an editable install has none).
    assert found is None or any(found.glob("*.jsonl"))


async def test_the_library_loads_the_seeds_leaderlog_ships_when_given_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    async with await EventLog.open(f"sqlite:///{tmp_path / 'seeded.db'}") as log:
        loaded = await load_seeds(log)
        assert loaded.appended == 29
        assert (await log.store.verify()).ok


async def test_the_library_says_when_there_are_no_seeds_to_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("leaderlog.log.seeds_folder", lambda: None)
    async with await EventLog.open(f"sqlite:///{tmp_path / 'empty.db'}") as log:
        with pytest.raises(FileNotFoundError, match="no seeds folder"):
            await load_seeds(log)
        assert await log.store.count() == 0


def _serve_refused(database: Path, *options: str) -> Result:
    """``serve --no-seed`` on ``database`` with ``options``, refused as a usage mistake."""
    result = CliRunner().invoke(
        main, ["--db", f"sqlite:///{database}", "serve", "--no-seed", *options]
    )
    assert result.exit_code == 2, result.output
    return result


@pytest.mark.parametrize("given", ["http://[::1", "http://::1]:8000/", "https://[fe80::1/x"])
def test_serve_refuses_a_public_url_whose_ipv6_host_lacks_a_bracket_as_any_other(
    tmp_path: Path, given: str
) -> None:
    database = tmp_path / "leaderlog.db"
    result = _serve_refused(database, "--public-url", given)
    assert (
        f"Error: Invalid value for '--public-url': public URL {given!r} is not an http(s) "
        "address like https://example.org (an IPv6 host goes in brackets: http://[::1]:8000)\n"
    ) in result.stderr
    assert not database.exists()


def test_serve_is_documented() -> None:
    result = CliRunner().invoke(main, ["serve", "--help"])
    assert result.exit_code == 0
    for option in (
        "--host",
        "--port",
        "--no-seed",
        "--header-timeout",
        "--body-timeout",
        "--send-timeout",
    ):
        assert option in result.output


def test_serve_help_examples_are_commands_or_comments() -> None:
    text = CliRunner().invoke(main, ["serve", "--help"]).stdout
    examples = text.partition("Example:\n")[2].partition("\n\n")[0].splitlines()
    assert len(examples) >= 3
    for line in examples:
        assert line.strip().startswith(("leaderlog ", "# ")), line


def test_serve_reports_a_database_it_cannot_open_in_one_line(tmp_path: Path) -> None:
    # No server starts: the database is opened (and seeded) before uvicorn is.
    missing = tmp_path / "no-such-folder" / "leaderlog.db"
    port = str(free_port())
    result = CliRunner().invoke(main, ["--db", f"sqlite:///{missing}", "serve", "--port", port])
    assert result.exit_code == 1
    assert result.stderr.endswith(
        f"error: cannot create {missing}: folder {missing.parent} does not exist\n"
    )
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("host", ["", "  "])
def test_an_empty_host_is_a_usage_mistake_not_every_interface(host: str, tmp_path: Path) -> None:
    # "" listened on 0.0.0.0 and :: alike, and the server said it served http://:8000/.
    missing = tmp_path / "no-such-folder" / "leaderlog.db"
    result = CliRunner().invoke(main, ["--db", f"sqlite:///{missing}", "serve", "--host", host])
    assert result.exit_code == 2, result.stderr
    assert result.stderr.endswith(
        "Error: Invalid value for '--host': give an address to listen on (0.0.0.0 for every "
        "IPv4 interface, :: for every IPv6 one), not an empty one\n"
    )


@pytest.mark.parametrize(
    ("host", "message"),
    [
        ("[localhost]", "brackets hold only an IPv6 address (such as [::1]), not 'localhost': "),
        ("[127.0.0.1]", "brackets hold only an IPv6 address (such as [::1]), not '127.0.0.1': "),
        ("[]", "brackets hold only an IPv6 address (such as [::1]), not '': "),
        ("[::1", "'[::1' is missing a bracket: give an IPv6 address as ::1 or [::1]"),
        ("::1]", "'::1]' is missing a bracket: give an IPv6 address as ::1 or [::1]"),
        # These ended in a UnicodeError traceback from the IDNA codec inside getaddrinfo.
        ("\udcff", "'\\udcff' holds bytes that are not UTF-8 text"),
        ("a..b", "'a..b' is not a host name or IP address: each of its dot-separated labels "),
        ("a" * 64 + ".b", f"'{'a' * 64}.b' is not a host name or IP address: each of its "),
    ],
)
def test_a_host_that_names_no_address_is_a_usage_mistake(
    host: str, message: str, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-folder" / "leaderlog.db"
    result = CliRunner().invoke(main, ["--db", f"sqlite:///{missing}", "serve", "--host", host])
    assert result.exit_code == 2, result.stderr
    assert f"Error: Invalid value for '--host': {message}" in result.stderr


@pytest.mark.parametrize("option", ["--header-timeout", "--body-timeout", "--send-timeout"])
@pytest.mark.parametrize("seconds", ["nan", "inf", "-inf", "1e400"])
def test_a_time_limit_that_is_no_number_of_seconds_is_a_usage_mistake(
    option: str, seconds: str, tmp_path: Path
) -> None:
    # nan passed for a number above 0, and closed every connection at once.
    missing = tmp_path / "no-such-folder" / "leaderlog.db"
    result = CliRunner().invoke(main, ["--db", f"sqlite:///{missing}", "serve", option, seconds])
    assert result.exit_code == 2, result.stderr
    assert f"Invalid value for '{option}'" in result.stderr
    assert "cannot create" not in result.stderr


def test_serve_names_the_seed_file_that_is_bad(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "a.jsonl").write_text(
        (SEEDS / "ice-leadership-2025-05.jsonl").read_text(encoding="utf-8")
    )
    (tmp_path / "seeds" / "b.jsonl").write_text('{"type": "org.registered"}\n')
    monkeypatch.chdir(tmp_path)
    # (on a port of its own: a fixed one is held meanwhile by this test in another worker,
    # and below 1024 only root may listen)
    port = str(free_port())
    result = CliRunner().invoke(main, ["--db", "sqlite:///leaderlog.db", "serve", "--port", port])
    assert result.exit_code == 1
    assert "b.jsonl line 1: " in result.stderr, result.stderr
    # the whole of a.jsonl went in before b.jsonl was refused; b.jsonl wrote nothing
    verify = CliRunner().invoke(main, ["--db", "sqlite:///leaderlog.db", "verify", "--json"])
    assert '"count": 29' in verify.stdout


LEADERLOG = Path(sys.executable).parent / "leaderlog"
# The start-up line names the version pip installed, as `leaderlog --version` does.
VERSION = importlib.metadata.version("leaderlog")


@contextmanager
def occupied_port() -> Iterator[int]:
    """A 127.0.0.1 port another program is listening on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        yield int(other.getsockname()[1])


def serve(
    url: str, *arguments: str, seeded: bool = False, stdout_closed: bool = False
) -> subprocess.Popen[str]:
    """``leaderlog serve`` in a child process; ``seeded``: with the seeds of this checkout,
    loaded if the log is empty; ``stdout_closed``: started with its standard output closed."""
    environment = {name: value for name, value in os.environ.items() if name != "LEADERLOG_DB"}
    seeding = [] if seeded else ["--no-seed"]
    return subprocess.Popen(
        [str(LEADERLOG), "--db", url, "serve", *seeding, *arguments],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.DEVNULL if stdout_closed else subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=(lambda: os.close(1)) if stdout_closed else None,
    )


def serving(process: subprocess.Popen[str], port: int, host: str = "127.0.0.1") -> httpx.Response:
    """The server's /healthz, once it answers (it fails if the server ends first); ``host``
    as a URL writes it."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return httpx.get(f"http://{host}:{port}/healthz", timeout=5)
        except httpx.TransportError:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)


def test_serve_says_it_loaded_the_seeds_into_an_empty_log(tmp_path: Path) -> None:
    port = free_port()
    url = f"sqlite:///{tmp_path / 'new.db'}"
    process = serve(url, "--port", str(port), seeded=True)
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        second = process.stderr.readline()
    finally:
        process.terminate()
        process.communicate(timeout=60)
    assert first == "the log was empty: loaded the seeds, 29 events from 1 file in seeds\n"
    announced = f"leaderlog {VERSION} serving {url} on http://127.0.0.1:{port}/"
    assert second.startswith(announced), second


def test_serve_on_a_port_in_use_says_so_in_one_line_before_announcing_anything(
    sqlite_url: str,
) -> None:
    with occupied_port() as port:
        process = serve(sqlite_url, "--port", str(port))
        stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 1
    assert stdout == ""
    assert stderr == (
        f"error: cannot listen on 127.0.0.1:{port}: address already in use "
        "(is another server running? choose another with --port)\n"
    )
    # and nothing was created or seeded meanwhile
    assert not Path(sqlite_url.removeprefix("sqlite:///")).exists()


def test_serve_on_an_address_this_machine_does_not_have_says_so(sqlite_url: str) -> None:
    # 192.0.2.1 is reserved for documentation (RFC 5737): no machine has it.
    result = CliRunner().invoke(
        main, ["--db", sqlite_url, "serve", "--no-seed", "--host", "192.0.2.1", "--port", "8000"]
    )
    assert result.exit_code == 1
    assert result.stderr == (
        "error: cannot listen on 192.0.2.1:8000: address not available "
        "(it is not an address of this machine; choose another with --host)\n"
    )


@contextmanager
def _server(url: str, *arguments: str) -> Iterator[tuple[int, subprocess.Popen[str]]]:
    """A server started on a free port given ``arguments``: its port and process, which the
    block stops and reads; killed if it is still running when the block ends."""
    port = free_port()
    process = serve(url, "--port", str(port), *arguments)
    try:
        yield port, process
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


@contextmanager
def _serving_with(url: str, *arguments: str) -> Iterator[tuple[int, Any]]:
    """A server given ``arguments`` (its timeouts), answering: its port and process."""
    with _server(url, *arguments) as (port, process):
        try:
            serving(process, port)
            yield port, process
        finally:
            process.terminate()
            process.communicate(timeout=60)


def test_a_long_catch_up_before_serving_is_said_to_begin_and_to_be_done(
    sqlite_url: str, tmp_path: Path
) -> None:
    # given a log of as many events as a catch-up shows progress for, never projected
    records = organisations_file(tmp_path / "orgs.jsonl", projection_commands.PROGRESS_THRESHOLD)
    imported = CliRunner().invoke(main, ["--db", sqlite_url, "import", str(records)])
    assert imported.exit_code == 0, imported.output
    # when a server starts on it (its stderr a log file, where no progress bar is drawn)
    with _server(sqlite_url) as (port, process):
        assert serving(process, port).status_code == 200
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    # then the log says, before serving, that it brings the projections up to date, and
    # how far behind each is (the server seems to hang otherwise)
    (said,) = [line for line in stderr.splitlines() if "bringing projections up to date" in line]
    assert f"leadership ({projection_commands.PROGRESS_THRESHOLD} events behind)" in said, said
    # and that the catch-up is done, and how long it took, before it serves
    done = [line for line in stderr.splitlines() if line.startswith("projections brought up")]
    assert len(done) == 1, stderr
    assert done[0].startswith(
        f"projections brought up to date: {projection_commands.PROGRESS_THRESHOLD} events "
        "applied in "
    ), done
    serves = stderr.index(f"leaderlog {VERSION} serving ")
    assert stderr.index(said) < stderr.index(done[0]) < serves, stderr
    # (in whole seconds, never fewer than none)
    assert re.fullmatch(r"projections brought up to date: \d+ events applied in \d+ s", done[0])


@pytest.mark.parametrize("access_log", [True, False])
def test_the_access_log_is_written_unless_turned_off(sqlite_url: str, access_log: bool) -> None:
    # given a server started with or without --no-access-log
    arguments = () if access_log else ("--no-access-log",)
    with _server(sqlite_url, *arguments) as (port, process):
        # when a feed reader polls it
        assert serving(process, port).status_code == 200
        httpx.get(f"http://127.0.0.1:{port}/feeds/all.atom", timeout=30)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    # then each answer is a line on stdout, or none is; the server's own lines stay
    assert process.returncode == 0, stderr
    assert ('"GET /feeds/all.atom HTTP/1.1" 200' in stdout) is access_log, stdout
    assert "Application startup complete." in stderr


def test_serve_announces_its_address_then_serves_until_ctrl_c(sqlite_url: str) -> None:
    with _server(sqlite_url) as (port, process):
        assert serving(process, port).status_code == 200
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert stderr.startswith(
        f"leaderlog {VERSION} serving {sqlite_url} on http://127.0.0.1:{port}/ (Ctrl+C to stop)\n"
    )
    assert "Application startup complete" in stderr


def test_serve_runs_with_its_standard_output_closed(sqlite_url: str) -> None:
    # A server logs to stderr: started with stdout closed (a service manager's choice), it
    # was refused as a command whose output would be lost.
    port = free_port()
    process = serve(sqlite_url, "--port", str(port), stdout_closed=True)
    try:
        assert serving(process, port).status_code == 200
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr
    assert "standard output is closed" not in stderr


def _ipv6_loopback_port() -> int:
    """A free port on ::1; the test is skipped on a machine that cannot listen there."""
    if not socket.has_ipv6:
        pytest.skip("this Python has no IPv6 support")
    try:
        return free_port("::1")
    except OSError as error:
        pytest.skip(f"this machine cannot listen on ::1 ({error})")


def test_serve_takes_an_ipv6_address_in_brackets_as_copied_from_a_url(sqlite_url: str) -> None:
    port = _ipv6_loopback_port()
    process = serve(sqlite_url, "--host", "[::1]", "--port", str(port))
    try:
        assert process.stderr is not None
        announced = process.stderr.readline()
        assert announced == (
            f"leaderlog {VERSION} serving {sqlite_url} on http://[::1]:{port}/ (Ctrl+C to stop)\n"
        ), announced
        health = serving(process, port, "[::1]")
        assert health.status_code == 200, health.text
    finally:
        process.terminate()
        process.communicate(timeout=60)


def test_a_request_that_never_ends_does_not_hold_a_stop(sqlite_url: str) -> None:
    token = CliRunner().invoke(main, ["--db", sqlite_url, "token", "create", "stalling"])
    assert token.exit_code == 0, token.output
    with _server(sqlite_url) as (port, process):
        serving(process, port)
        # given a writer that sent half of its request and waits
        stalled = socket.create_connection(("127.0.0.1", port))
        stalled.sendall(
            b"POST /api/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + token.stdout.strip().encode() + b"\r\n"
            b'Content-Length: 80\r\n\r\n{"type":'
        )
        time.sleep(0.5)
        # when the server is told to stop, then it stops all the same
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
        stalled.close()
    assert process.returncode is not None
    # and cutting the request is not logged as the server's own failure
    assert "Exception in ASGI application" not in stderr
    assert "Traceback" not in stderr


def _closed_by_server(connection: socket.socket) -> bool:
    """Whether the server has closed ``connection`` (its end of file is waiting to be read)."""
    connection.setblocking(False)
    try:
        return connection.recv(1) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True  # a byte sent after the close was refused
    finally:
        connection.setblocking(True)


def _ended_after_answer(connection: socket.socket) -> bool:
    """Whether the server closed ``connection`` after its answer: end of file, or a reset,
    which is how a close reaches the client when bytes it sent were left unread."""
    try:
        return connection.recv(1) == b""
    except ConnectionResetError:
        return True


def _response(connection: socket.socket) -> bytes:
    """One response, whole (it has a Content-Length): its head, a blank line, its body."""
    connection.settimeout(10)
    received = b""
    while b"\r\n\r\n" not in received:
        received += connection.recv(65536)
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += connection.recv(65536)
    return head + b"\r\n\r\n" + body


def test_a_client_sending_its_headers_a_byte_at_a_time_is_cut_off(sqlite_url: str) -> None:
    with _serving_with(sqlite_url, "--header-timeout", "1") as (port, process):
        # given a client that sends a byte of its request every tenth of a second
        request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nUser-Agent: slow\r\n\r\n"
        connection = socket.create_connection(("127.0.0.1", port))
        started = time.monotonic()
        sent = 0
        with connection:
            while sent < len(request) and not _closed_by_server(connection):
                try:
                    connection.sendall(request[sent : sent + 1])
                except (BrokenPipeError, ConnectionResetError):
                    break  # closed while the byte was on its way
                sent += 1
                time.sleep(0.1)
            took = time.monotonic() - started
        # then the server closed the connection once its second was up, before the request
        # was whole (each byte would have held it open for good)
        assert sent < len(request)
        assert 0.9 <= took < 4
        # and goes on serving everyone else
        assert serving(process, port).status_code == 200


def test_headers_in_time_are_answered_and_each_request_of_a_connection_has_its_own_time(
    sqlite_url: str,
) -> None:
    with _serving_with(sqlite_url, "--header-timeout", "2") as (port, _):
        request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        with socket.create_connection(("127.0.0.1", port)) as connection:
            # given headers sent in pieces over 1.2 seconds, twice on one connection
            for _ in range(2):
                for piece in (request[:10], request[10:20], request[20:]):
                    connection.sendall(piece)
                    time.sleep(0.6)
                # then each is answered: the 2.4 seconds in all are not held against them
                assert _response(connection).startswith(b"HTTP/1.1 200")
            # and a connection then left idle is closed once the time for the next is up
            time.sleep(2.5)
            assert _closed_by_server(connection)


def _closing_error(answer: bytes, status: bytes) -> Any:
    """The JSON error body of ``answer``, checked to have ``status`` and to close."""
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 " + status + b"\r\n"), head
    assert b"\r\ncontent-type: application/json" in head.lower()
    assert b"\r\nconnection: close" in head.lower()
    return json.loads(body)


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"NOT A REQUEST\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n",
        b"POST /api/events HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n",
    ],
    ids=["request line", "header line", "content length"],
)
def test_a_request_that_is_not_http_is_answered_in_the_api_s_error_shape(
    sqlite_url: str, request_bytes: bytes
) -> None:
    with (
        _serving_with(sqlite_url) as (port, process),
        socket.create_connection(("127.0.0.1", port)) as connection,
    ):
        # given a request whose line or headers cannot be read as HTTP/1.1
        connection.sendall(request_bytes)
        # then it is told so in the one JSON shape every other error has, and the
        # connection is closed
        assert _closing_error(_response(connection), b"400 Bad Request") == {
            "error": "bad_request",
            "detail": "the request is not HTTP/1.1 this server can read: its line or "
            "headers are malformed",
        }
        assert _ended_after_answer(connection)
        # and the server goes on serving everyone else
        assert serving(process, port).status_code == 200


def test_a_malformed_body_after_the_answer_closes_the_connection_quietly(
    sqlite_url: str,
) -> None:
    with _server(sqlite_url) as (port, process):
        serving(process, port)
        with socket.create_connection(("127.0.0.1", port)) as connection:
            # given a write answered 401 from its headers, its chunked body still to come
            connection.sendall(
                b"POST /api/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n"
            )
            assert _response(connection).startswith(b"HTTP/1.1 401 ")
            # when the body then turns out not to be HTTP/1.1 chunks
            connection.sendall(b"zz\r\nnot a chunk\r\n")
            # then the connection is closed with no second answer after the first
            connection.settimeout(10)
            assert connection.recv(65536) == b""
        # and the server goes on serving everyone else
        assert serving(process, port).status_code == 200
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    # without a failure of its own in the log
    assert "Traceback" not in stderr, stderr


def _write_token(url: str) -> bytes:
    created = CliRunner().invoke(main, ["--db", url, "token", "create", "writer"])
    assert created.exit_code == 0, created.output
    return created.stdout.strip().encode()


def _write_head(
    token: bytes, body: bytes, content_type: bytes = b"application/json", more: bytes = b""
) -> bytes:
    """The line and headers of a POST /api/events sending ``body``; ``more``: other headers,
    each ending in CRLF."""
    return (
        b"POST /api/events HTTP/1.1\r\nHost: x\r\nContent-Type: " + content_type + b"\r\n"
        b"Authorization: Bearer "
        + token
        + b"\r\n"
        + more
        + b"Content-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
    )


def _record(person: str) -> bytes:
    return json.dumps(
        {"type": "person.registered", "data": {"person": person, "name": "Test Person"}}
    ).encode()


def _trickled_until_closed(connection: socket.socket, body: bytes, seconds: float) -> int:
    """Send ``body`` a byte every fifth of a second for up to ``seconds``, then the rest at
    once, unless the server answers or closes first: how many bytes went."""
    connection.setblocking(False)
    sent = 0
    started = time.monotonic()
    try:
        while sent < len(body) and time.monotonic() - started < seconds:
            try:
                connection.recv(1, socket.MSG_PEEK)
                return sent  # answered, or closed
            except BlockingIOError:
                pass
            connection.send(body[sent : sent + 1])
            sent += 1
            time.sleep(0.2)
        connection.sendall(body[sent:])
        return len(body)
    except (BrokenPipeError, ConnectionResetError):
        return sent  # closed while a byte was on its way
    finally:
        connection.setblocking(True)


def _health(port: int) -> dict[str, Any]:
    answer = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10)
    assert answer.status_code == 200
    found: dict[str, Any] = answer.json()
    return found


def test_a_body_trickled_past_its_time_is_answered_408_and_nothing_is_written(
    sqlite_url: str,
) -> None:
    token = _write_token(sqlite_url)
    port = free_port()
    process = serve(sqlite_url, "--port", str(port), "--body-timeout", "1")
    try:
        serving(process, port)
        # given a writer that sends its headers, then its body a byte every fifth of a second
        # (slow enough to take over ten seconds)
        body = _record("slow-writer")
        with socket.create_connection(("127.0.0.1", port)) as connection:
            connection.sendall(_write_head(token, body))
            started = time.monotonic()
            sent = _trickled_until_closed(connection, body, seconds=8)
            # then it is told, once its second is up and before its body was whole, that its
            # request took too long, and the connection is closed
            answer = _response(connection)
            took = time.monotonic() - started
            assert _ended_after_answer(connection)
        assert sent < len(body)
        assert 0.9 <= took < 6
        assert _closing_error(answer, b"408 Request Timeout") == {
            "error": "request_timeout",
            "detail": "the request's body did not all arrive within 1 second of its headers; "
            "nothing of it was read",
        }
        # and nothing was written, while the server goes on serving everyone else
        assert _health(port)["head"] == 0
    finally:
        process.terminate()
        stdout, stderr = process.communicate(timeout=60)
    # (the answer is in the access log, as the application's answers are, and cutting the
    # request is not logged as the server's own failure)
    assert '"POST /api/events HTTP/1.1" 408' in stdout
    assert "Traceback" not in stderr


def test_a_body_refused_from_its_headers_and_then_trickled_is_cut_off_too(
    sqlite_url: str,
) -> None:
    token = _write_token(sqlite_url)
    with _serving_with(sqlite_url, "--body-timeout", "1") as (port, _):
        # given a writer refused from its headers (415), before its body was asked for
        body = _record("refused-writer")
        with socket.create_connection(("127.0.0.1", port)) as connection:
            connection.sendall(_write_head(token, body, content_type=b"text/plain"))
            assert _response(connection).startswith(b"HTTP/1.1 415 ")
            # when it trickles its body all the same, then its connection is closed once the
            # body's second is up (an answer was given already)
            connection.setblocking(False)
            sent = 0
            started = time.monotonic()
            while sent < len(body) and not _closed_by_server(connection):
                try:
                    connection.send(body[sent : sent + 1])
                except (BrokenPipeError, ConnectionResetError):
                    break
                sent += 1
                time.sleep(0.2)
            took = time.monotonic() - started
        assert sent < len(body)
        assert took < 6
        assert _health(port)["head"] == 0


def test_bodies_sent_in_pieces_in_time_are_written_and_each_request_has_its_own_time(
    sqlite_url: str,
) -> None:
    token = _write_token(sqlite_url)
    with (
        _serving_with(sqlite_url, "--body-timeout", "4") as (port, _),
        socket.create_connection(("127.0.0.1", port)) as connection,
    ):
        # given two writes on one connection, each body sent in three pieces over 2.4
        # seconds: 4.8 seconds in all, more than one body's time
        for number, person in enumerate(("first-writer", "second-writer"), start=1):
            body = _record(person)
            connection.sendall(_write_head(token, body))
            third = len(body) // 3
            connection.sendall(body[:third])
            for piece in (body[third : 2 * third], body[2 * third :]):
                time.sleep(1.2)
                connection.sendall(piece)
            # then each is written: the body's time is counted for each request anew
            answer = _response(connection)
            assert answer.startswith(b"HTTP/1.1 201 "), answer
            assert _health(port)["head"] == number
        # and the connection still serves a request with no body after them
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _response(connection).startswith(b"HTTP/1.1 200 ")


def test_a_body_the_server_does_not_ask_for_yet_is_not_timed(postgres_url: str) -> None:
    async def held_meanwhile() -> None:
        async with postgres_schema(postgres_url) as url:
            async with await EventLog.open(url) as log:
                token = (await Tokens(log.store).create("writer")).encode()
            port = free_port()
            process = serve(url, "--port", str(port), "--body-timeout", "1")
            try:
                await _health_once_listening(port, process)
                # given a writer waiting for 100 Continue while the server, checking its
                # token, waits for another transaction's lock on the tokens
                async with _locking(url, "write_tokens") as transaction:
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
                    body = _record("patient-writer")
                    writer.write(_write_head(token, body, more=b"Expect: 100-continue\r\n"))
                    await asyncio.sleep(2.5)
                    await transaction.rollback()
                # when it is told to go on, over twice its body's time after its headers
                told = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
                assert told.startswith(b"HTTP/1.1 100 "), told
                writer.write(body)
                # then its body, sent at once, is written: the wait was the server's
                answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
                assert answer.startswith(b"HTTP/1.1 201 "), answer
                writer.close()
            finally:
                process.terminate()
                await asyncio.to_thread(process.communicate, timeout=60)

    asyncio.run(held_meanwhile())


def test_serve_says_warning_and_error_before_its_own_as_other_commands_do(
    tmp_path: Path, folder: Path
) -> None:
    # given a log with two user projections built: one whose module no longer imports, and
    # one whose apply now raises, with an event still to apply
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    for name in ("gone", "failing"):
        (folder / f"{name}.py").write_text(seen_projection_module(name), encoding="utf-8")

    async def build() -> None:
        async with await EventLog.open(url) as log:
            await load_seeds(log, SEEDS)
            await (await runner_for(log.store, also=("gone", "failing"))).rebuild(
                ("gone", "failing")
            )
            await log.import_lines([ANOTHER_CLAIM], actor="test")

    asyncio.run(build())
    (folder / "gone.py").write_text("import no_such_package_anywhere\n", encoding="utf-8")
    (folder / "failing.py").write_text(
        seen_projection_module("failing").replace(
            "    async def apply(self, tx, events):\n",
            "    async def apply(self, tx, events):\n        raise ValueError('not today')\n",
        ),
        encoding="utf-8",
    )
    # when a server runs until /healthz lists the failing projection's error
    with _server(url) as (port, process):
        deadline = time.monotonic() + 60
        while "error" not in _projection(serving(process, port).json(), "failing"):
            assert time.monotonic() < deadline, "the failure was not listed"
            time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    # then its warnings and errors start as every other command's do
    said = stderr.splitlines()
    assert any(
        line.startswith("warning: projection gone is left out: ")
        and "No module named 'no_such_package_anywhere'" in line
        for line in said
    ), stderr
    assert any(
        line.startswith(f"error: projection failing could not apply event {SEED_COUNT + 1}: ")
        and "ValueError: not today" in line
        and line.endswith(
            "; retrying (a change to its module takes effect when the server restarts)"
        )
        for line in said
    ), stderr
    assert not [line for line in said if line.startswith("projection ")]
    # while uvicorn's own lines, and its access log on stdout, stay as uvicorn writes them
    assert "INFO:     Application startup complete." in said
    assert '"GET /healthz HTTP/1.1" 200' in stdout


def _projection(health: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = (item for item in health["projections"] if item["name"] == name)
    return found


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["--forwarded-allow-ips", "10.0.0.1"], "has no effect without --proxy-headers"),
        (
            ["--proxy-headers", "--forwarded-allow-ips", "10.0.0.1,proxy.local"],
            "'proxy.local' is not an IP address or network",
        ),
    ],
)
def test_serve_refuses_proxy_addresses_it_would_ignore(
    sqlite_url: str, arguments: list[str], said: str
) -> None:
    # (on a port taken, so that serve taking them would end at once, not serve for ever)
    with occupied_port() as port:
        result = CliRunner().invoke(
            main, ["--db", sqlite_url, "serve", "--no-seed", "--port", str(port), *arguments]
        )
    assert result.exit_code == 2, result.stderr
    assert said in result.stderr


@pytest.mark.parametrize("given", ["0", "-1", "soon", "1e-300", "0.009"])
def test_serve_refuses_a_body_timeout_that_is_not_a_positive_number(
    tmp_path: Path, given: str
) -> None:
    database = tmp_path / "leaderlog.db"
    result = _serve_refused(database, "--body-timeout", given)
    assert "Invalid value for '--body-timeout'" in result.stderr, result.stderr
    if given[0].isdigit():
        assert "0.01" in result.stderr, result.stderr  # says the shortest it takes
    # refused before anything was opened or created
    assert not database.exists()


async def _next_line(process: subprocess.Popen[str]) -> str:
    """The next line the server says, failing (rather than hanging) if none comes in a minute."""
    assert process.stderr is not None
    return await asyncio.wait_for(asyncio.to_thread(process.stderr.readline), 60)


@asynccontextmanager
async def _locking(url: str, table: str) -> AsyncIterator[asyncpg.transaction.Transaction]:
    """A transaction of another session holding ``table``'s strongest lock, as a migration
    would; it is rolled back when the block ends, if the block has not done so."""
    async with postgres_connection(url) as holder:
        transaction = holder.transaction()
        await transaction.start()
        await holder.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        yield transaction


def test_a_database_busy_at_start_is_waited_for(postgres_url: str) -> None:
    async def locked_meanwhile() -> None:
        async with postgres_schema(postgres_url) as url:
            # given a log, and a migration holding its events table's lock
            async with await EventLog.open(url) as log:
                await load_seeds(log, SEEDS)
            async with _locking(url, "events") as transaction:
                port = free_port()
                # (with its seeds: loading them, if the log is empty, counts its events)
                busy_url = f"{url}&lock_timeout=300ms"
                process = serve(busy_url, "--port", str(port), seeded=True)
                try:
                    # when the server starts meanwhile, then it says it waits
                    assert process.stderr is not None
                    line = await _next_line(process)
                    # (prefixed as every other warning of the command)
                    assert line.startswith("warning: database is busy: "), line
                    assert line.endswith("; waiting for it\n"), line
                    # and serves once the lock is released
                    await transaction.rollback()
                    health = await _health_once_listening(port, process)
                    assert health.status_code == 200
                finally:
                    process.terminate()
                    process.communicate(timeout=60)

    asyncio.run(locked_meanwhile())


@pytest.mark.parametrize(
    ("stop", "status", "said"),
    [
        (signal.SIGTERM, -signal.SIGTERM, ""),
        (signal.SIGINT, 130, "interrupted: stopped before serving\n"),
    ],
)
def test_a_server_bringing_its_projections_up_to_date_stops_at_once(
    postgres_url: str, stop: signal.Signals, status: int, said: str
) -> None:
    # The catch-up ran inside uvicorn's start, which notices a stop only once the start is
    # done: on a long log not yet projected, minutes; here, for as long as a lock is held.
    async def stopped_meanwhile() -> None:
        async with postgres_schema(postgres_url) as url:
            # given a log whose projections are kept from catching up by a lock held elsewhere
            async with await EventLog.open(url) as log:
                await load_seeds(log, SEEDS)
                await (await runner_for(log.store)).catch_up()
            async with _locking(url, "projection_checkpoints") as transaction:
                port = free_port()
                process = serve(f"{url}&lock_timeout=300ms", "--port", str(port))
                try:
                    assert process.stderr is not None
                    line = await _next_line(process)
                    assert line.startswith("warning: database is busy: "), line
                    assert line.endswith("; waiting for it\n"), line
                    # when the server is stopped meanwhile
                    process.send_signal(stop)
                    # then it stops at once, without having started
                    stdout, stderr = await asyncio.to_thread(process.communicate, timeout=30)
                finally:
                    if process.poll() is None:
                        process.kill()
                        process.communicate()
                    await transaction.rollback()
        assert process.returncode == status
        assert stderr == said
        assert "Application startup" not in stdout

    asyncio.run(stopped_meanwhile())


def test_a_database_server_not_answering_yet_at_start_is_waited_for(postgres_url: str) -> None:
    async def started_meanwhile() -> None:
        async with postgres_schema(postgres_url) as url:
            # given a log whose server listens at an address where nothing answers yet
            async with await EventLog.open(url) as log:
                await load_seeds(log, SEEDS)
            real = urlsplit(url)
            database_port, port = free_port(), free_port()
            moved = urlunsplit(real._replace(netloc=f"{real.username}@127.0.0.1:{database_port}"))
            process = serve(moved, "--port", str(port), seeded=True)
            forwarder: asyncio.Server | None = None
            try:
                # when the server starts meanwhile, then it says it waits
                assert process.stderr is not None
                line = await _next_line(process)
                assert line.startswith("warning: "), line
                assert "nothing answers there (connection refused)" in line, line
                assert line.endswith("; waiting for it\n"), line
                # and serves once the database answers there
                forwarder = await _forwarding(database_port, real.hostname or "", real.port or 0)
                health = await _health_once_listening(port, process)
                assert health.status_code == 200
                assert health.json()["head"] == SEED_COUNT
            finally:
                process.terminate()
                # In a thread: the forwarder runs in this loop while the server closes.
                await asyncio.to_thread(process.communicate, timeout=60)
                if forwarder is not None:
                    forwarder.close()

    asyncio.run(started_meanwhile())


async def _health_once_listening(port: int, process: subprocess.Popen[str]) -> httpx.Response:
    """``/healthz`` once the server answers (within a minute), while it keeps running."""
    async with httpx.AsyncClient() as client:
        for _ in range(600):
            try:
                return await client.get(f"http://127.0.0.1:{port}/healthz")
            except httpx.TransportError:
                assert process.poll() is None
                await asyncio.sleep(0.1)
    raise AssertionError("the server did not answer within a minute")


async def _forwarding(port: int, host: str, to_port: int) -> asyncio.Server:
    """A TCP server on ``port`` that passes every connection on to ``host:to_port``."""

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection(host, to_port)
        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

    return await asyncio.start_server(connected, "127.0.0.1", port)


def test_a_token_in_a_query_string_is_not_kept_in_the_access_log() -> None:
    # a request line as uvicorn logs it, with a token put in the query by mistake
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        0,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:50000", "GET", "/api/state?access_token=ll_secret&org=ice", "1.1", 422),
        None,
    )
    assert all(keep(record) for keep in logging.getLogger("uvicorn.access").filters)
    assert record.getMessage() == (
        '127.0.0.1:50000 - "GET /api/state?access_token=***&org=ice HTTP/1.1" 422'
    )


TOKEN = "ll_" + "A1b_-" * 8 + "xyz"


@pytest.mark.parametrize(
    ("client", "target", "shown_client", "shown_target"),
    [
        # a write token by its shape, wherever it is put
        (
            "127.0.0.1:50000",
            f"/feeds/all.atom?t={TOKEN}",
            "127.0.0.1:50000",
            "/feeds/all.atom?t=ll_***",
        ),
        ("127.0.0.1:50000", f"/feeds/{TOKEN}", "127.0.0.1:50000", "/feeds/ll_***"),
        (
            "127.0.0.1:50000",
            "/api/events?Authorization=Bearer%20" + TOKEN.replace("_", "%5F", 1),
            "127.0.0.1:50000",
            "/api/events?Authorization=Bearer%20ll_***",
        ),
        # an X-Forwarded-For address, logged as the client sent it: its escape codes would
        # clear the operator's screen and print a forged line
        (
            '\x1b[2J\x1b[1;1HINFO: 10.0.0.9:4431 - "GET / HTTP/1.1" 200 OK\r\n:0',
            "/healthz",
            "\\x1b[2J\\x1b[1;1HINFO:%2010.0.0.9:4431%20-%20%22GET%20/%20HTTP/1.1%22%20200%20OK"
            "\\r\\n:0",
            "/healthz",
        ),
        # and its spaces and quotes, which would pass the rest off as a request of its own
        # on the same line; a percent sign is encoded too, so that the encoding reads back
        (
            '9.9.9.9:0 - "GET /api/verify HTTP/1.1" 200 OK%20\t:0',
            "/healthz",
            "9.9.9.9:0%20-%20%22GET%20/api/verify%20HTTP/1.1%22%20200%20OK%2520%09:0",
            "/healthz",
        ),
        # an address as uvicorn writes it, IPv6 ones included, unchanged
        ("2001:db8::1:443", "/healthz", "2001:db8::1:443", "/healthz"),
    ],
)
def test_an_access_line_hides_write_tokens_and_escapes_what_a_client_sent(
    client: str, target: str, shown_client: str, shown_target: str
) -> None:
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        0,
        '%s - "%s %s HTTP/%s" %d',
        (client, "GET", target, "1.1", 200),
        None,
    )
    assert all(keep(record) for keep in logging.getLogger("uvicorn.access").filters)
    assert record.getMessage() == f'{shown_client} - "GET {shown_target} HTTP/1.1" 200'


def test_a_server_shares_the_interpreter_lock_in_short_turns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Large answers are worked out on worker threads: with Python's 5 ms turns at the lock,
    other requests waited up to 5 ms a step meanwhile."""
    during: list[float] = []

    def serving(server: object, sockets: object = None) -> None:
        during.append(sys.getswitchinterval())
        raise KeyboardInterrupt

    monkeypatch.setattr("uvicorn.Server.run", serving)
    port = free_port()
    before = sys.getswitchinterval()
    try:
        result = CliRunner().invoke(
            main,
            ["--db", f"sqlite:///{tmp_path / 'l.db'}", "serve", "--port", str(port), "--no-seed"],
        )
    finally:
        sys.setswitchinterval(before)
    assert during == [serve_commands.SWITCH_INTERVAL], result.output


def _serve_with_a_broken_user_projection(url: str, folder: Path) -> str:
    """Serve ``url``, whose user projection ``seen`` was built and whose module then stopped
    importing (``alive``, built too, still loads), while another writer appends; the server's
    stderr once it has followed that append and retried the user projections."""
    for name in ("alive", "seen"):
        (folder / f"{name}.py").write_text(seen_projection_module(name), encoding="utf-8")

    async def build() -> None:
        async with await EventLog.open(url) as log:
            await load_seeds(log, SEEDS)
            await (await runner_for(log.store, also=("alive", "seen"))).rebuild(["alive", "seen"])

    asyncio.run(build())
    broken = seen_projection_module("seen", imports="import no_such_package_anywhere\n")
    (folder / "seen.py").write_text(broken, encoding="utf-8")
    port = free_port()
    process = serve(url, "--port", str(port))
    try:
        serving(process, port)
        confirm_as_another_writer(url, GORDON_ACTING)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json()
            lags = {p["name"]: p["lag"] for p in health["projections"]}
            if health["head"] > SEED_COUNT and not any(
                lag for name, lag in lags.items() if name != "seen"
            ):
                break
            time.sleep(0.1)
        time.sleep(2 * RETRY_SECONDS + 0.5)  # the user projections' runner retried meanwhile
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=60)
    return stderr


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_serve_reports_a_user_projection_that_does_not_load_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_url: str, kind: str
) -> None:
    folder = tmp_path / "projections"
    folder.mkdir()
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(folder))
    if kind == "sqlite":
        stderr = _serve_with_a_broken_user_projection(
            f"sqlite:///{tmp_path / 'leaderlog.db'}", folder
        )
    else:

        async def in_a_schema() -> str:
            async with postgres_schema(postgres_url) as url:
                return await asyncio.to_thread(_serve_with_a_broken_user_projection, url, folder)

        stderr = asyncio.run(in_a_schema())
    said = [line for line in stderr.splitlines() if "projection seen" in line]
    assert len(said) == 1, stderr
    assert said[0].startswith("warning: projection seen is left out: "), said
    assert "No module named 'no_such_package_anywhere'" in said[0]


def test_serve_shows_each_projection_group_s_progress_while_it_catches_up(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a log whose projections are not built yet, and serve's progress on a terminal
    screen = drawn_on_a_terminal(monkeypatch)
    monkeypatch.setattr(projection_commands, "PROGRESS_THRESHOLD", 1)
    reported: list[tuple[str, int, int]] = []

    async def catch_up() -> int:
        async with await EventLog.open(sqlite_url) as log:
            await load_seeds(log, SEEDS)
            with projection_commands.catch_up_bars("updating") as shown:

                def show(names: str, applied: int, total: int) -> None:
                    reported.append((names, applied, total))
                    shown(names, applied, total)

                # when serve brings them up to date before serving
                await catch_up_before_serving(log.store, show)
            statuses = await (await runner_for(log.store)).status()
            return max(status.lag for status in statuses)

    # then they are, and a bar for each group of projections went from none to every event
    assert asyncio.run(catch_up()) == 0
    groups = list(dict.fromkeys(names for names, _, _ in reported))
    assert groups == ["leadership, audit", "feed_entries"]
    for group in groups:
        steps = [(applied, total) for names, applied, total in reported if names == group]
        assert steps[-1] == (SEED_COUNT, SEED_COUNT)
        assert [applied for applied, _ in steps] == sorted(applied for applied, _ in steps)
    drawn = screen.getvalue()
    assert "updating leadership, audit" in drawn and "updating feed_entries" in drawn
    assert f"{SEED_COUNT}/{SEED_COUNT}" in drawn


def test_feed_is_written_for_a_role_that_may_only_read_once_the_feeds_are_current(
    postgres_url: str,
) -> None:
    async def asked_twice() -> tuple[Result, Result]:
        # given a PostgreSQL log whose feed entries are current
        async with postgres_schema(postgres_url) as url:
            await _seed(url)
            built = await asyncio.to_thread(CliRunner().invoke, main, ["--db", url, "feed"])
            # when asked again over a connection that may only read (a hot standby's)
            read_only = f"{url}&default_transaction_read_only=on"
            again = await asyncio.to_thread(CliRunner().invoke, main, ["--db", read_only, "feed"])
        return built, again

    built, again = asyncio.run(asked_twice())
    assert built.exit_code == 0, built.stderr
    # then the same document is written, where creating tables first refused it
    assert again.exit_code == 0, again.stderr
    assert again.stdout_bytes == built.stdout_bytes


def test_ctrl_c_that_python_drops_while_the_application_is_made_stops_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given Ctrl-C pressed while the application is made, where it lands in a finalizer,
    # whose errors Python prints as "Exception ignored" and drops
    class Finalized:
        def __del__(self) -> None:
            os.kill(os.getpid(), signal.SIGINT)
            sum(range(1000))  # where the signal's handler runs, raising inside __del__

    made = leaderlog.http.create_app

    def made_with_a_dropped_ctrl_c(*args: Any, **kwargs: Any) -> Any:
        Finalized()
        return made(*args, **kwargs)

    served: list[bool] = []

    def serving(server: object, sockets: object = None) -> None:
        served.append(True)
        raise KeyboardInterrupt

    monkeypatch.setattr(leaderlog.http, "create_app", made_with_a_dropped_ctrl_c)
    monkeypatch.setattr("uvicorn.Server.run", serving)
    # when serve is started
    result = CliRunner().invoke(
        main,
        ["--db", f"sqlite:///{tmp_path / 'l.db'}", "serve", f"--port={free_port()}", "--no-seed"],
    )
    # then it stops before serving, saying so, and nothing of the dropped error is printed
    assert served == []
    assert result.exit_code == 130, result.output
    assert "interrupted: stopped before serving" in result.output
    assert "Exception ignored" not in result.output
