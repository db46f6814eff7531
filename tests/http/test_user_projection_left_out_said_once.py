"""A server beside user projections it leaves out: each is said once in its log, however the
other user projections fare meanwhile; and one whose module is an older copy than the version
the database holds (a server started from another checkout) is left out, not rebuilt back."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import httpx
import pytest

from leaderlog.errors import ProjectionFailed
from leaderlog.http import create_app
from leaderlog.http.app import _log_failure
from leaderlog.log import EventLog
from leaderlog.projections.runner import ProjectionRunner, left_out, older_than_stored
from tests.http.server import confirm_as_another_writer, running
from tests.http.test_user_projection_health import _said, _seeded_with
from tests.projections.logs import GORDON_ACTING, SEED_COUNT, seen_projection_module


def _projection(client: httpx.Client, base: str, name: str) -> dict[str, Any]:
    health = client.get(f"{base}/healthz").json()
    (found,) = [p for p in health["projections"] if p["name"] == name]
    return dict(found)


def _failing_once(marker: Path) -> str:
    """``seen_projection_module("flaky")``, whose apply raises once while ``marker`` exists
    (and removes it)."""
    return seen_projection_module("flaky", imports="import pathlib\n").replace(
        "    async def apply(self, tx, events):\n",
        "    async def apply(self, tx, events):\n"
        f"        marker = pathlib.Path({str(marker)!r})\n"
        "        if marker.exists():\n"
        "            marker.unlink()\n"
        "            raise ValueError('failing once')\n",
    )


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_left_out_projection_is_said_once_while_another_fails_then_recovers(
    backend: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    folder: Path,
    client: httpx.Client,
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = (
        f"sqlite:///{tmp_path / 'leaderlog.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("store_url_postgres")
    )
    # given user projections broken and flaky built, broken's module since failing to import,
    # and flaky's apply about to fail once on an event appended after they were built
    marker = tmp_path / "fail-once"
    (folder / "broken.py").write_text(seen_projection_module("broken"), encoding="utf-8")
    (folder / "flaky.py").write_text(_failing_once(marker), encoding="utf-8")
    _seeded_with(url, "broken", "flaky")
    (folder / "broken.py").write_text("def broken(:\n", encoding="utf-8")
    confirm_as_another_writer(url, GORDON_ACTING)
    marker.touch()
    # when a server starts, and flaky fails, rests, then catches up
    with (
        caplog.at_level(logging.WARNING, logger="leaderlog.http"),
        running(create_app(url)) as base,
    ):
        deadline = time.monotonic() + 20
        while _projection(client, base, "flaky")["lag"] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _projection(client, base, "flaky")["lag"] == 0
        assert not marker.exists()
    # then flaky's failure was said, and broken's leaving out was said once all along
    assert len(_said(caplog, "projection flaky could not apply event")) == 1
    (said,) = _said(caplog, "projection broken is left out")
    assert "SyntaxError" in said
    assert f"it stays at position {SEED_COUNT}" in said


@pytest.fixture
async def store_url_postgres(postgres_url: str) -> Any:
    from tests.store import postgres_schema

    async with postgres_schema(postgres_url) as url:
        yield url


def test_a_server_started_beside_an_older_copy_leaves_the_newer_build_as_it_is(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    client: httpx.Client,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # given seen built at version 2 from one folder
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    newer, older = tmp_path / "b", tmp_path / "a"
    for found, version in ((newer, 2), (older, 1)):
        found.mkdir()
        (found / "seen.py").write_text(
            seen_projection_module("seen", version=version), encoding="utf-8"
        )
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(newer))
    _seeded_with(url, "seen")
    # when a server starts from another folder, whose copy of the module is at version 1
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(older))
    with (
        caplog.at_level(logging.WARNING, logger="leaderlog.http"),
        running(create_app(url)) as base,
    ):
        listed = _projection(client, base, "seen")
    # then it leaves seen out at version 2, saying why once, and never rebuilds it
    assert (listed["version"], listed["checkpoint"]) == (2, SEED_COUNT)
    assert "is at version 1, but the database holds version 2" in listed["error"]
    (said,) = _said(caplog, "projection seen is left out")
    assert "`leaderlog rebuild seen` builds version 1 over it" in said
    assert not _said(caplog, "rebuilt: version")

    async def stored() -> list[tuple[Any, ...]]:
        async with await EventLog.open(url) as log:
            return [
                tuple(row)
                for row in await log.store.query(
                    "SELECT version, position FROM projection_checkpoints WHERE name = 'seen'"
                )
            ]

    assert asyncio.run(stored()) == [(2, SEED_COUNT)]


def test_a_left_out_projection_kept_current_elsewhere_is_said_once_as_its_checkpoint_moves(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # given a server's user runner leaving seen out (an older copy of its module), whose
    # leaving out it has said once
    seen = older_than_stored(left_out("seen", 1, "its module is older"), 2)
    runner = cast(ProjectionRunner, SimpleNamespace(projections=[seen]))
    with caplog.at_level(logging.WARNING, logger="leaderlog.http"):
        said = _log_failure(runner, ProjectionFailed([seen.failure(SEED_COUNT)]))
        # when the newer copy's process keeps seen current, so that its checkpoint moves on
        # between the server's catch-ups
        for position in range(SEED_COUNT + 1, SEED_COUNT + 4):
            said = _log_failure(runner, ProjectionFailed([seen.failure(position)]), said)
    # then the server has said it is left out once, not once per position
    assert len(_said(caplog, "projection seen is left out")) == 1
