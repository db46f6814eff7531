"""HTTP benchmark: a warm feed GET and a 304, against a trivial endpoint of the same app.

A log holds the seeds plus 10,000 generated claims. The server (uvicorn, one process) runs
the real app with one extra route that returns the very bytes of ``/feeds/all.atom`` from
memory. The same keep-alive client then measures, in the same run, requests per second of:

- the trivial endpoint (the baseline),
- a warm ``GET /feeds/all.atom``,
- a conditional ``GET /feeds/all.atom`` answered ``304``.

Each figure is printed as a ratio to the baseline; the bar is 0.5 for both. For information,
it also times the OPML rendered after each of a few appended claims by a service that served
it before (which reuses the organisations, people and posts read then), against one that
reads them afresh. Run
``python scripts/bench_http.py`` (``--quick`` for a smoke run). Exit status 1 if a bar is
missed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from leaderlog.events import Attribution, ClaimReported, FuzzyDate, PersonRegistered
from leaderlog.feeds import FeedRequest, FeedService, Scope
from leaderlog.http import feed_runner
from leaderlog.log import EventLog, load_seeds

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"
BAR = 0.5
FEED_PATH = "/feeds/all.atom"
SAME_BYTES_PATH = "/bench/same-bytes"

# Run in a child process so the server has its own interpreter and event loop.
SERVER = """
import sys
from pathlib import Path

import uvicorn
from fastapi import APIRouter
from starlette.responses import Response

from leaderlog.http import create_app

url, port, static = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
body = static.read_bytes()
router = APIRouter()


@router.get("/bench/same-bytes")
async def same_bytes() -> Response:
    return Response(body, media_type="application/atom+xml; charset=utf-8")


uvicorn.run(create_app(url, routers=[router]), host="127.0.0.1", port=port,
            log_level="warning", access_log=False)
"""


@dataclass(frozen=True)
class Settings:
    claims: int
    seconds: float
    connections: int
    rounds: int
    appends: int


FULL = Settings(claims=10_000, seconds=3.0, connections=8, rounds=3, appends=20)
QUICK = Settings(claims=1_000, seconds=0.5, connections=4, rounds=1, appends=3)


async def build_log(url: str, claims: int) -> None:
    """The seeds plus ``claims`` generated claims about 100 generated people."""
    log = await EventLog.open(url)
    try:
        await load_seeds(log, SEEDS)
        people = [
            PersonRegistered(person=f"bench-{n}", name=f"Bench Person {n}") for n in range(100)
        ]
        await log.append_events(people, actor="bench")
        batch = []
        for index in range(claims):
            batch.append(
                ClaimReported(
                    claim=f"bench-claim-{index}",
                    source="fox-ice-shakeup-2025-05",
                    kind=("appointment", "departure", "incumbency")[index % 3],
                    person=f"bench-{index % 100}",
                    post=("ice-hsi-ead", "ice-ero-ead", "dhs-secretary")[index % 3],
                    capacity="acting",
                    effective=FuzzyDate(date="2025-06", qualifier="about"),
                    modality="expected",
                    attribution=Attribution(kind="anonymous", parties=("ICE",)),
                    quote=f"Generated quote {index}.",
                )
            )
            if len(batch) == 500:
                await log.append_events(batch, actor="bench")
                batch = []
        if batch:
            await log.append_events(batch, actor="bench")
        await feed_runner(log.store).catch_up()
    finally:
        await log.close()


async def render_expected(url: str, base: str) -> bytes:
    """The subscription document the server will send, rendered here from the same log."""
    log = await EventLog.open(url)
    try:
        service = FeedService(log.store)
        return (await service.render(FeedRequest(Scope("all"), "atom", "en", base))).body
    finally:
        await log.close()


async def opml_after_appends(url: str, base: str, appends: int) -> tuple[float, float]:
    """Median seconds to render the OPML after a claim is appended: by a service that
    rendered it before, and by a new one."""
    log = await EventLog.open(url)
    try:
        warm = FeedService(log.store, poll_interval=0)
        await warm.opml("en", base)
        kept: list[float] = []
        afresh: list[float] = []
        for index in range(appends):
            claim = ClaimReported(
                claim=f"bench-opml-claim-{index}",
                source="fox-ice-shakeup-2025-05",
                kind="appointment",
                person=f"bench-{index % 100}",
                post="ice-hsi-ead",
                capacity="acting",
                effective=FuzzyDate(date="2025-06", qualifier="about"),
                modality="expected",
                attribution=Attribution(kind="anonymous", parties=("ICE",)),
                quote=f"Generated quote after the log was built {index}.",
            )
            await log.append_events([claim], actor="bench")
            await feed_runner(log.store).catch_up()
            started = time.perf_counter()
            await warm.opml("en", base)
            kept.append(time.perf_counter() - started)
            started = time.perf_counter()
            await FeedService(log.store, poll_interval=0).opml("en", base)
            afresh.append(time.perf_counter() - started)
        return statistics.median(kept), statistics.median(afresh)
    finally:
        await log.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Connection:
    """A minimal HTTP/1.1 keep-alive client: the same cost for every endpoint measured."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port: int) -> Connection:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    async def get(self, request: bytes) -> tuple[int, bytes]:
        self.writer.write(request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        body = await self.reader.readexactly(length) if length else b""
        return status, body

    def close(self) -> None:
        self.writer.close()


def request_bytes(port: int, path: str, headers: dict[str, str]) -> bytes:
    host = f"Host: 127.0.0.1:{port}"
    lines = [f"GET {path} HTTP/1.1", host, *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def requests_per_second(
    port: int, request: bytes, expect: int, seconds: float, connections: int
) -> float:
    opened = [await Connection.open(port) for _ in range(connections)]
    done = 0
    deadline = time.perf_counter() + seconds

    async def worker(connection: Connection) -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            status, _ = await connection.get(request)
            if status != expect:
                raise RuntimeError(f"expected {expect}, got {status}")
            done += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker(connection) for connection in opened))
    elapsed = time.perf_counter() - started
    for connection in opened:
        connection.close()
    return done / elapsed


async def measure(port: int, expected: bytes, settings: Settings) -> dict[str, float]:
    probe = await Connection.open(port)
    status, body = await probe.get(request_bytes(port, FEED_PATH, {}))
    same_status, same = await probe.get(request_bytes(port, SAME_BYTES_PATH, {}))
    probe.close()
    if status != 200 or body != expected or same_status != 200 or same != body:
        raise RuntimeError("the endpoints do not return the same bytes")
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request_bytes(port, FEED_PATH, {}))
    head = (await reader.readuntil(b"\r\n\r\n")).decode()
    writer.close()
    etag = next(
        line.split(":", 1)[1].strip()
        for line in head.split("\r\n")
        if line.lower().startswith("etag:")
    )
    cases = {
        "trivial endpoint, same bytes": (request_bytes(port, SAME_BYTES_PATH, {}), 200),
        "warm GET /feeds/all.atom": (request_bytes(port, FEED_PATH, {}), 200),
        "conditional GET answered 304": (
            request_bytes(port, FEED_PATH, {"If-None-Match": etag}),
            304,
        ),
    }
    for request, expect in cases.values():  # warm up every path once
        await requests_per_second(port, request, expect, 0.3, settings.connections)
    results: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(settings.rounds):
        for name, (request, expect) in cases.items():
            results[name].append(
                await requests_per_second(
                    port, request, expect, settings.seconds, settings.connections
                )
            )
    return {name: statistics.median(values) for name, values in results.items()}


def wait_for(port: int, process: subprocess.Popen[bytes], timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the server exited")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the server did not start")


def run(settings: Settings, workdir: Path) -> bool:
    url = f"sqlite:///{workdir / 'bench.db'}"
    started = time.perf_counter()
    asyncio.run(build_log(url, settings.claims))
    print(f"log: seeds + {settings.claims} claims, built in {time.perf_counter() - started:.1f} s")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    static = workdir / "all.atom"
    static.write_bytes(asyncio.run(render_expected(url, base)))
    process = subprocess.Popen(
        [sys.executable, "-c", SERVER, url, str(port), str(static)],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        wait_for(port, process)
        figures = asyncio.run(measure(port, static.read_bytes(), settings))
    finally:
        process.terminate()
        process.wait(timeout=30)
    baseline = figures["trivial endpoint, same bytes"]
    print(f"document: {static.stat().st_size} bytes; {settings.connections} connections")
    ok = True
    for name, value in figures.items():
        ratio = value / baseline
        verdict = ""
        if name != "trivial endpoint, same bytes":
            passed = ratio >= BAR
            ok &= passed
            verdict = f"  (bar {BAR}x: {'ok' if passed else 'MISSED'})"
        print(f"{name:<32} {value:>9,.0f} req/s  {ratio:5.2f}x{verdict}")
    kept, afresh = asyncio.run(opml_after_appends(url, base, settings.appends))
    print(
        f"OPML after an append: {kept * 1000:.1f} ms, against {afresh * 1000:.1f} ms read "
        f"afresh ({afresh / kept:.1f}x; median of {settings.appends})"
    )
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small, short smoke run")
    arguments = parser.parse_args()
    settings = QUICK if arguments.quick else FULL
    with tempfile.TemporaryDirectory(prefix="leaderlog-bench-http-") as folder:
        ok = run(settings, Path(folder))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
