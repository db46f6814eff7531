"""A real uvicorn server on a free 127.0.0.1 port, in a thread, for tests over HTTP."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import uvicorn
from fastapi import FastAPI

from leaderlog.events import Event
from leaderlog.http import create_app
from leaderlog.log import EventLog, load_seeds
from leaderlog.projections import Projection, ProjectionRunner
from leaderlog.tokens import Tokens
from tests.conftest import SEEDS

__all__ = ["WriteServer", "create_token", "running", "seeded_database", "write_server"]


@contextmanager
def running(app: FastAPI) -> Iterator[str]:
    """Serve ``app`` until the block ends; yields its base URL."""
    # IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets whose proto is TCP; without it
    # every response stalls ~40 ms on Nagle plus delayed ACK.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def seeded_database(folder: Path, *more: Event) -> str:
    """A SQLite file in ``folder`` holding the seeds, then ``more``; its URL (no projections
    built yet, as a server finds a log written by another process)."""
    url = f"sqlite:///{folder / 'leaderlog.db'}"

    async def write() -> None:
        async with await EventLog.open(url) as log:
            await load_seeds(log, SEEDS)
            if more:
                await log.append_events(list(more), actor="test")

    asyncio.run(write())
    return url


def confirm_as_another_writer(
    url: str, claim: str, *, projecting: Sequence[Projection] = ()
) -> None:
    """Another process's writer confirms ``claim`` (a seed claim) while a server runs, then
    brings the ``projecting`` projections up to date, as a command would."""

    async def append() -> None:
        async with await EventLog.open(url) as log:
            await log.append_raw(
                {
                    "type": "claim.confirmed",
                    "data": {"claim": claim, "source": "fox-ice-shakeup-2025-05"},
                },
                actor="test",
            )
            if projecting:
                await ProjectionRunner(log.store, list(projecting)).catch_up()

    asyncio.run(append())


def wait_for_claim_status(client: httpx.Client, base: str, claim: str, wanted: str) -> None:
    """Poll the server until ``claim`` reads ``wanted`` (the read models followed the log)."""
    deadline = time.monotonic() + 20
    status = ""
    while status != wanted and time.monotonic() < deadline:
        status = client.get(f"{base}/api/claims/{claim}").json()["status"]
        time.sleep(0.1)
    assert status == wanted


async def create_token(url: str, name: str) -> str:
    """A write token for ``name`` in the log at ``url``."""
    async with await EventLog.open(url) as log:
        return await Tokens(log.store).create(name)


@dataclass
class WriteServer:
    base_url: str
    token: str


@contextmanager
def write_server(folder: Path) -> Iterator[WriteServer]:
    """A server on a seeded log in ``folder``, with a write token for "alice"."""
    url = seeded_database(folder)
    token = asyncio.run(create_token(url, "alice"))
    with running(create_app(url)) as base_url:
        yield WriteServer(base_url, token)


def answer_to_a_head(base_url: str, token: str, headers: str) -> bytes:
    """The head of what the server answers to a write's head alone, sent by a writer that
    waits for 100 Continue before its body; ``headers`` are the request's other header lines."""
    address = httpx.URL(base_url)
    head = (
        f"POST /api/events HTTP/1.1\r\nHost: {address.host}\r\n"
        f"Authorization: Bearer {token}\r\n{headers}Expect: 100-continue\r\n\r\n"
    )
    with socket.create_connection((address.host, address.port), timeout=10) as connection:
        connection.sendall(head.encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            received = connection.recv(65536)
            assert received, answer  # closed before a whole answer's head
            answer += received
    return answer
