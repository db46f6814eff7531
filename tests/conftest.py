from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from leaderlog.cli import main
from leaderlog.log import EventLog

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"
POSTGRES_URL = os.environ.get(
    "LEADERLOG_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test"
)


def postgres_reachable() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture
def postgres_url() -> str:
    """The test server's URL; skipped locally when it is down, but never in CI."""
    if not postgres_reachable():
        if os.environ.get("CI") == "true":
            pytest.fail("PostgreSQL is not reachable at 127.0.0.1:5432 and CI=true")
        pytest.skip("PostgreSQL is not reachable at 127.0.0.1:5432")
    return POSTGRES_URL


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'leaderlog.db'}"


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
