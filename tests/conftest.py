from __future__ import annotations

import asyncio
import os
import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest
from click.testing import CliRunner, Result

from leaderlog.cli import main
from leaderlog.log import EventLog

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"
POSTGRES_URL = os.environ.get(
    "LEADERLOG_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test"
)


def free_port(host: str = "127.0.0.1") -> int:
    """A port on ``host`` for a server the caller starts next, which no other test's server
    (another pytest-xdist worker's among them) is given meanwhile.

    A port merely bound to learn it and let go is the kernel's to give to the next
    ``bind((host, 0))`` while the server meant for it is still starting: another worker's
    server then holds it ("address already in use"), or answers in its place. This one is
    left in TIME_WAIT for a minute instead, which ``bind(0)`` and outgoing connections pass
    over, while a server that sets SO_REUSEADDR (``leaderlog serve``, uvicorn and asyncio do)
    listens on it at once.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, 0))
        listener.listen(1)
        address = listener.getsockname()
        with socket.create_connection(address[:2]):
            accepted, _ = listener.accept()
            # Closed first on the port's own side: the TIME_WAIT is kept on that port.
            accepted.close()
    return int(address[1])


def postgres_address() -> tuple[str, int]:
    """The host and port of the test server: the one LEADERLOG_TEST_POSTGRES names, so that
    tests skip (or, in CI, fail) when that server is down, not when the default one is."""
    parts = urlsplit(POSTGRES_URL)
    return parts.hostname or "127.0.0.1", parts.port or 5432


def postgres_reachable() -> bool:
    try:
        with socket.create_connection(postgres_address(), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """The URL of a database of this test process's own on the test server, dropped at the
    end.

    What PostgreSQL shares across a database would otherwise reach from one pytest-xdist
    worker's tests into another's: advisory locks (a test that holds one, or waits on one
    with a short lock_timeout, meets only its own worker's) and NOTIFY traffic. (Roles are
    the whole server's: tests name theirs uniquely.)
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    name = f"leaderlog_{worker}_{uuid.uuid4().hex[:12]}"

    async def administer(statement: str) -> None:
        connection = await asyncpg.connect(POSTGRES_URL)
        try:
            await connection.execute(statement)
        finally:
            await connection.close()

    def run_apart(statement: str) -> None:
        # In a thread of its own: the first test of a process to ask for the database may
        # be an async one, whose event loop is running in this thread already.
        with ThreadPoolExecutor(max_workers=1) as thread:
            thread.submit(asyncio.run, administer(statement)).result()

    run_apart(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(POSTGRES_URL)._replace(path=f"/{name}"))
    finally:
        run_apart(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def postgres_url(request: pytest.FixtureRequest) -> str:
    """The test server's URL, naming this process's own database; skipped locally when the
    server is down, but never in CI."""
    if not postgres_reachable():
        host, port = postgres_address()
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL is not reachable at {host}:{port} and CI=true")
        pytest.skip(f"PostgreSQL is not reachable at {host}:{port}")
    url: str = request.getfixturevalue("postgres_database")
    return url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'leaderlog.db'}"


@pytest.fixture(params=["sqlite", "postgresql"])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A new log's URL on each backend in turn: a SQLite file, then a PostgreSQL schema of its
    own (dropped after)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'leaderlog.db'}"
        return
    from tests.store import postgres_schema

    async with postgres_schema(request.getfixturevalue("postgres_url")) as url:
        yield url


@pytest.fixture
async def seeded_log(sqlite_url: str) -> AsyncIterator[EventLog]:
    from leaderlog.log import load_seeds

    log = await EventLog.open(sqlite_url)
    await load_seeds(log, SEEDS)
    try:
        yield log
    finally:
        await log.close()


@pytest.fixture
async def seeded_postgres_log(postgres_url: str) -> AsyncIterator[EventLog]:
    """An EventLog on a fresh PostgreSQL schema (dropped afterwards) with the seeds loaded."""
    from leaderlog.log import load_seeds
    from tests.store import postgres_schema

    async with postgres_schema(postgres_url) as url:
        log = await EventLog.open(url)
        try:
            await load_seeds(log, SEEDS)
            yield log
        finally:
            await log.close()


def invoke(url: str, *arguments: str, stdin: str | None = None) -> Result:
    """Run ``leaderlog --db URL ARGUMENTS`` in this process."""
    return CliRunner().invoke(main, ["--db", url, *arguments], input=stdin)


def ok(result: Result) -> str:
    """The output of a command that must have succeeded."""
    assert result.exit_code == 0, result.output + result.stderr
    return result.stdout


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty projections folder, the one commands and servers load user projections from."""
    found = tmp_path / "projections"
    found.mkdir()
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(found))
    return found
