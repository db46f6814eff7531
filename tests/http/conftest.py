from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from leaderlog.feeds import PAGE_SIZE
from leaderlog.http import create_app
from leaderlog.log import EventLog, load_seeds
from tests.conftest import SEEDS
from tests.feeds.logs import add_claims, add_hostile
from tests.http.server import running


async def _build(url: str, claims: int, hostile: bool) -> None:
    log = await EventLog.open(url)
    try:
        await load_seeds(log, SEEDS)
        if claims:
            await add_claims(log, 0, claims)
        if hostile:
            await add_hostile(log)
    finally:
        await log.close()


def into_the_next_second() -> None:
    """Sleep until the clock's second changes: Last-Modified is left out while the second of
    the last change runs, and the module servers' tests read it."""
    time.sleep(1.01 - time.time() % 1)


def _database(folder: Path, claims: int = 0, hostile: bool = False) -> str:
    url = f"sqlite:///{folder / 'leaderlog.db'}"
    asyncio.run(_build(url, claims, hostile))
    return url


@pytest.fixture(scope="module")
def seeded_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A server that loaded the seeds itself into an empty log: (base URL, database URL)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('seeded') / 'leaderlog.db'}"
    with running(create_app(url, seeds=SEEDS)) as base:
        into_the_next_second()
        yield base, url


@pytest.fixture(scope="module")
def archive_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """Seeds plus enough claims for three archive pages: (base URL, database URL)."""
    url = _database(tmp_path_factory.mktemp("archive"), claims=2 * PAGE_SIZE + 5)
    into_the_next_second()
    with running(create_app(url)) as base:
        yield base, url


@pytest.fixture(scope="module")
def hostile_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    url = _database(tmp_path_factory.mktemp("hostile"), hostile=True)
    with running(create_app(url)) as base:
        yield base, url


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as session:
        yield session
