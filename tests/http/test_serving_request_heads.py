"""``leaderlog serve`` and request heads it does not serve: a body's length given two ways,
an address or headers larger than it reads.

A request with both Content-Length and Transfer-Encoding is how requests are smuggled past a
reverse proxy that reads the one header while the server reads the other: RFC 9112 §6.1 has
the server close the connection after answering it, so that nothing after it on that
connection is taken for another request.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT, free_port
from tests.http.server import seeded_database

LEADERLOG = Path(sys.executable).parent / "leaderlog"


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """The port of a ``leaderlog serve`` over the seeds, answering."""
    url = seeded_database(tmp_path_factory.mktemp("heads"))
    chosen = free_port()
    environment = {name: value for name, value in os.environ.items() if name != "LEADERLOG_DB"}
    process = subprocess.Popen(
        [str(LEADERLOG), "--db", url, "serve", "--no-seed", "--port", str(chosen)],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{chosen}/healthz", timeout=5)
                break
            except httpx.TransportError:
                assert process.poll() is None, "the server ended"
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.05)
        yield chosen
    finally:
        process.terminate()
        process.wait(timeout=60)


def _everything_sent_back(connection: socket.socket) -> tuple[bytes, bool]:
    """What the server sends until it closes the connection or stops sending for a while,
    and whether it closed it."""
    connection.settimeout(3)
    received = b""
    try:
        while chunk := connection.recv(65536):
            received += chunk
    except ConnectionResetError:
        return received, True
    except TimeoutError:
        return received, False
    return received, True


@pytest.mark.parametrize(
    "method, path",
    [("POST", "/api/events"), ("GET", "/healthz")],
    ids=["write route", "read route"],
)
def test_a_request_giving_its_length_two_ways_is_refused_and_its_connection_closed(
    port: int, method: str, path: str
) -> None:
    # given a request whose Content-Length covers a second request that its chunked body,
    # as read by Transfer-Encoding, leaves over
    smuggled = b"GET /nothing-here HTTP/1.1\r\nHost: x\r\n\r\n"
    chunked_body = b"0\r\n\r\n"
    request = (
        f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(chunked_body) + len(smuggled)}\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    ).encode() + chunked_body
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(request + smuggled)
        received, closed = _everything_sent_back(connection)
    # then it is refused as a malformed request, in the one JSON error shape
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 Bad Request\r\n"), head
    assert b"\r\nconnection: close" in head.lower()
    assert json.loads(body) == {
        "error": "bad_request",
        "detail": "the request gives the length of its body twice, as Content-Length and "
        "as Transfer-Encoding: send one of them",
    }
    # and the connection is closed: what followed is not answered as a request of its own
    assert closed
    assert received.count(b"HTTP/1.1 ") == 1


def test_a_chunked_request_and_the_next_one_on_its_connection_are_both_answered(
    port: int,
) -> None:
    # given a chunked request with no Content-Length, and another after it
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    following = b"GET /nothing-here HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(request + following)
        received, closed = _everything_sent_back(connection)
    # then both are answered on the one connection
    assert received.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"HTTP/1.1 404 Not Found\r\n" in received
    assert closed


def _sent_in_pieces(port: int, request: bytes) -> tuple[bytes, bool]:
    """``request`` sent as a network delivers it, a segment at a time with pauses between
    (loopback would deliver it whole), then what came back."""
    with socket.create_connection(("127.0.0.1", port)) as connection:
        for start in range(0, len(request), 1400):
            try:
                connection.sendall(request[start : start + 1400])
            except OSError:
                break  # refused and closed before the rest was sent
            time.sleep(0.001)
        return _everything_sent_back(connection)


def _sent(port: int, request: bytes, *, in_pieces: bool) -> tuple[bytes, bool]:
    """What the server sent back, and whether it closed the connection: the request sent at
    once, or in network-sized pieces."""
    if in_pieces:
        return _sent_in_pieces(port, request)
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(request)
        return _everything_sent_back(connection)


def _refusal(received: bytes, status: bytes) -> object:
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 " + status + b" "), head
    assert b"\r\nconnection: close" in head.lower()
    return json.loads(body)


@pytest.mark.parametrize("in_pieces", [False, True], ids=["at once", "in pieces"])
def test_an_address_longer_than_the_server_reads_is_414_however_it_arrives(
    port: int, in_pieces: bool
) -> None:
    # given a feed address of 20,000 characters (a tracking parameter gone wrong)
    request = b"GET /feeds/all.atom?utm_source=" + b"a" * 20_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    received, closed = _sent(port, request, in_pieces=in_pieces)
    # then it is refused for its length, not served one time and called malformed another
    assert _refusal(received, b"414") == {
        "error": "uri_too_long",
        "detail": "the request's address is longer than the 16 KiB this server reads",
    }
    assert closed


@pytest.mark.parametrize("in_pieces", [False, True], ids=["at once", "in pieces"])
def test_headers_larger_than_the_server_reads_are_431_however_they_arrive(
    port: int, in_pieces: bool
) -> None:
    request = b"GET /feeds/all.atom HTTP/1.1\r\nHost: x\r\nCookie: " + b"c" * 20_000 + b"\r\n\r\n"
    received, closed = _sent(port, request, in_pieces=in_pieces)
    assert _refusal(received, b"431") == {
        "error": "request_header_fields_too_large",
        "detail": "the request's line and headers are larger than the 16 KiB this server reads",
    }
    assert closed


def test_a_request_head_within_the_limit_is_served(port: int) -> None:
    request = (
        b"GET /feeds/all.atom?utm_source=" + b"a" * 6_000 + b" HTTP/1.1\r\nHost: x\r\n"
        b"Cookie: " + b"c" * 6_000 + b"\r\nConnection: close\r\n\r\n"
    )
    received, closed = _sent_in_pieces(port, request)
    assert received.startswith(b"HTTP/1.1 200 OK\r\n")
    assert closed


def test_a_request_for_an_absolute_address_is_served_for_its_path_and_host(port: int) -> None:
    # given a request whose target is a whole URL, as a client sends it to a proxy (RFC 9112
    # §3.2.2: a server must accept it, and take the host from it rather than from Host)
    request = (
        f"GET http://127.0.0.1:{port}/feeds/all.atom?utm_source=x HTTP/1.1\r\n"
        "Host: elsewhere.example\r\nConnection: close\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(request)
        received, _ = _everything_sent_back(connection)
    # then the feed at that path is served, its links under the URL's host
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n"), head
    self_link = f'<link href="http://127.0.0.1:{port}/feeds/all.atom" rel="self"'
    assert self_link.encode() in body
    assert b"elsewhere.example" not in body


@pytest.mark.parametrize("version", [b"HTTP/2.0", b"HTTP/0.9", b"HTTP/3.0", b"HTTP/9.9"])
def test_a_request_line_naming_another_major_version_of_http_is_refused(
    port: int, version: bytes
) -> None:
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(b"GET /healthz " + version + b"\r\nHost: x\r\n\r\n")
        received, closed = _everything_sent_back(connection)
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 505 HTTP Version Not Supported\r\n"), head
    assert json.loads(body)["error"] == "http_version_not_supported"
    assert closed


@pytest.mark.parametrize("version", [b"HTTP/1.0", b"HTTP/1.1"])
def test_a_request_line_of_http_1_is_served(port: int, version: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(b"GET /healthz " + version + b"\r\nHost: x\r\nConnection: close\r\n\r\n")
        received, _ = _everything_sent_back(connection)
    assert received.startswith(b"HTTP/1.1 200 OK\r\n"), received[:200]
