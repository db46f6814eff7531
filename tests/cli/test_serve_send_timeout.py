"""A client that asks for a large answer and reads none of it: the server drops the answer
and closes the connection once ``--send-timeout`` runs out, where the whole answer waited
in its memory for as long as the client liked (a few hundred such clients exhaust it)."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from leaderlog.log import EventLog
from tests.cli.test_serve_commands import serve, serving
from tests.conftest import free_port

# Records of about 30 KB each: an answer of them all is far more than the kernel's buffers
# between the server and a client that reads nothing.
RECORDS = 150
LIMIT = f"/api/events?limit={RECORDS}"


def _large_record(number: int) -> dict[str, object]:
    return {
        "type": "post.defined",
        "data": {
            "post": f"large-{number}",
            "org": "large",
            "title": "Large",
            "aliases": [f"{number}-{alias}-" + "a" * 290 for alias in range(50)],
            "labels": {f"x{letter}": "b" * 290 for letter in "abcdefghijklmnopqrstuvwxyz"},
        },
    }


async def _large_log(url: str) -> None:
    records = [{"type": "org.registered", "data": {"org": "large", "name": "Large"}}]
    records += [_large_record(number) for number in range(RECORDS - 1)]
    lines = "\n".join(json.dumps(record) for record in records).encode()
    async with await EventLog.open(url, create=True) as log:
        await log.import_lines(lines, actor="test")


@contextmanager
def _serving(url: str, *arguments: str) -> Iterator[int]:
    asyncio.run(_large_log(url))
    port = free_port()
    process = serve(url, "--port", str(port), *arguments)
    try:
        serving(process, port)
        yield port
    finally:
        process.terminate()
        process.communicate(timeout=60)


def _asking(port: int) -> socket.socket:
    connection = socket.socket()
    # A small window: the server's buffer fills after a few kilobytes.
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    connection.connect(("127.0.0.1", port))
    connection.sendall(f"GET {LIMIT} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    return connection


def _read_until_closed(connection: socket.socket, pause: float = 0.0) -> tuple[int, bool]:
    """The bytes read, and whether the server ended the connection (no more within 5 s of
    silence: it is still open)."""
    connection.settimeout(5)
    received = 0
    try:
        while chunk := connection.recv(65536):
            received += len(chunk)
            time.sleep(pause)
    except ConnectionResetError:
        return received, True
    except TimeoutError:
        return received, False
    return received, True


def test_an_answer_nobody_reads_is_dropped_once_the_send_timeout_runs_out(
    sqlite_url: str,
) -> None:
    with _serving(sqlite_url, "--send-timeout", "1") as port:
        # given a client that asks for a few megabytes and reads nothing
        with _asking(port) as connection:
            time.sleep(3)
            # then the server has closed its connection before sending the answer whole
            received, closed = _read_until_closed(connection)
        assert closed
        assert received < RECORDS * 20_000


@pytest.mark.parametrize("pause", [0.0, 0.002])
def test_an_answer_read_in_time_is_sent_whole(sqlite_url: str, pause: float) -> None:
    with _serving(sqlite_url, "--send-timeout", "1") as port:
        # given a client that reads the answer, at once or a little at a time
        with _asking(port) as connection:
            connection.settimeout(5)
            head = connection.recv(65536)
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n\r\n")[0].split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            body = len(head.split(b"\r\n\r\n", 1)[1])
            started = time.monotonic()
            while body < length:
                chunk = connection.recv(65536)
                assert chunk, "the server closed the connection"
                body += len(chunk)
                time.sleep(pause)
            took = time.monotonic() - started
        # then it gets all of it, even reading for longer than the time limit
        assert body == length > RECORDS * 20_000
        assert took > 1 or not pause
