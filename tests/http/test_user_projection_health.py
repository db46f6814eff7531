"""A server beside user projections that cannot run: the built-ins keep following, the log
says which one stopped and why, and /healthz lists it with its lag."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from leaderlog.http import create_app
from leaderlog.log import EventLog, load_seeds
from leaderlog.projections import runner as runner_module
from leaderlog.projections import runner_for
from tests.answer_schemas import assert_documented
from tests.conftest import SEEDS
from tests.http.server import confirm_as_another_writer, running, wait_for_claim_status
from tests.http.test_write_api import create_token
from tests.projections.logs import (
    GORDON_ACTING,
    SEED_COUNT,
    seen_projection_module,
    slow_projection_module,
)


def _seeded_with(url: str, *names: str) -> None:
    """The seeds, with the named user projections built (as `leaderlog rebuild NAME` does)."""

    async def build() -> None:
        async with await EventLog.open(url) as log:
            if await log.store.count() == 0:
                await load_seeds(log, SEEDS)
            await (await runner_for(log.store, also=names)).rebuild(names)

    asyncio.run(build())


def _said(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [record.getMessage() for record in caplog.records if text in record.getMessage()]


def _serve_while_another_writer_appends(
    url: str, client: httpx.Client, caplog: pytest.LogCaptureFixture, left_out: str
) -> tuple[str, dict[str, Any]]:
    """Serve ``url``; return the one start-up log line saying the user projection
    ``left_out`` is left out, and ``/healthz`` once the built-ins have followed a claim that
    another writer confirmed meanwhile."""
    with (
        caplog.at_level(logging.WARNING, logger="leaderlog.http"),
        running(create_app(url)) as base,
    ):
        (said,) = _said(caplog, f"projection {left_out} is left out")
        confirm_as_another_writer(url, GORDON_ACTING)
        wait_for_claim_status(client, base, GORDON_ACTING, "confirmed")
        health: dict[str, Any] = client.get(f"{base}/healthz").json()
        # User projections follow in a runner of their own: soon after the built-ins.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _behind(health, left_out):
            time.sleep(0.1)
            health = client.get(f"{base}/healthz").json()
    return said, health


def _behind(health: dict[str, Any], left_out: str) -> bool:
    return any(p["lag"] for p in health["projections"] if p["name"] != left_out)


def test_a_user_projection_rebuilt_from_a_changed_module_stops_alone(
    tmp_path: Path, folder: Path, client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    # given a server started with a user projection built at version 2
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    (folder / "claims_per_source.py").write_text(
        seen_projection_module("claims_per_source", version=2), encoding="utf-8"
    )
    _seeded_with(url, "claims_per_source")
    with (
        caplog.at_level(logging.WARNING, logger="leaderlog.http"),
        running(create_app(url)) as base,
    ):
        # when its module goes to version 3 and a command rebuilds it, then a claim is appended
        (folder / "claims_per_source.py").write_text(
            seen_projection_module("claims_per_source", version=3), encoding="utf-8"
        )
        _seeded_with(url, "claims_per_source")
        # then, before the server has looked again, it is said to be left out, and the
        # server is still sound (not "rebuilt by another leaderlog version")
        at_once = client.get(f"{base}/healthz").json()
        assert at_once["ok"] is True
        assert_documented("Health", at_once)
        (entry,) = [p for p in at_once["projections"] if p["name"] == "claims_per_source"]
        assert entry["error"].startswith("left out: ")
        assert "but the database holds version 3" in entry["error"]
        confirm_as_another_writer(url, GORDON_ACTING)
        # then the built-ins still follow the log
        wait_for_claim_status(client, base, GORDON_ACTING, "confirmed")
        health = client.get(f"{base}/healthz").json()
    # and the log names that projection alone, blaming its module rather than leaderlog
    (said,) = _said(caplog, "projection claims_per_source is left out")
    assert "another leaderlog version" not in said
    assert "but the database holds version 3" in said
    assert "restart the server to load it" in said
    assert not _said(caplog, "applying events to")
    # and /healthz lists it, lagging, while the server is still sound
    listed = {item["name"]: item for item in health["projections"]}
    assert health["ok"] is True
    assert (listed["claims_per_source"]["version"], listed["claims_per_source"]["lag"]) == (3, 1)
    assert listed["leadership"]["lag"] == 0


def test_a_built_user_projection_that_no_longer_imports_is_said_at_start(
    tmp_path: Path, folder: Path, client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    # given a user projection built, whose module then imports a package that is not there
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    (folder / "seen.py").write_text(seen_projection_module("seen"), encoding="utf-8")
    _seeded_with(url, "seen")
    broken = seen_projection_module("seen", imports="import no_such_package_anywhere\n")
    (folder / "seen.py").write_text(broken, encoding="utf-8")
    # when the server has started, then its log says which projection and why
    said, health = _serve_while_another_writer_appends(url, client, caplog, "seen")
    assert "No module named 'no_such_package_anywhere'" in said
    assert f"it stays at position {SEED_COUNT}" in said
    # and /healthz lists it with its lag, as it does one whose apply raises
    listed = {item["name"]: item for item in health["projections"]}
    assert health["ok"] is True
    assert (listed["seen"]["checkpoint"], listed["seen"]["lag"]) == (SEED_COUNT, 1)
    assert "No module named 'no_such_package_anywhere'" in listed["seen"]["error"]
    assert listed["seen"]["error"].startswith("left out: it could not be loaded: ")
    assert "error" not in listed["leadership"]


def test_user_projections_that_clash_do_not_stop_the_server(
    tmp_path: Path, folder: Path, client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    # given two user projections built, then one edited to create a table of the other's
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    for name in ("probe", "probe_x"):
        (folder / f"{name}.py").write_text(seen_projection_module(name), encoding="utf-8")
        _seeded_with(url, name)
    clashing = seen_projection_module(
        "probe",
        more_schema="'CREATE TABLE IF NOT EXISTS p_probe_x_more (b TEXT)'",
        more_tables="'p_probe_x_more'",
    )
    (folder / "probe.py").write_text(clashing, encoding="utf-8")
    # when the server starts, then it serves, and says which one is left out and why
    said, health = _serve_while_another_writer_appends(url, client, caplog, "probe")
    assert "table 'p_probe_x_more': it belongs to projection probe_x" in said
    listed = {item["name"]: item["lag"] for item in health["projections"]}
    assert health["ok"] is True
    assert (listed["probe"], listed["probe_x"], listed["leadership"]) == (1, 0, 0)


def _with_slow_projection(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch, *, seconds: float
) -> str:
    """The seeds with the slow projection built; user projections given ``seconds`` a page."""
    monkeypatch.setattr(runner_module, "USER_APPLY_SECONDS", seconds)
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    (folder / "slow.py").write_text(slow_projection_module(), encoding="utf-8")
    _seeded_with(url, "slow")
    return url


def test_a_slow_user_projection_holds_back_neither_writes_nor_the_built_ins(
    tmp_path: Path,
    folder: Path,
    client: httpx.Client,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given a server beside a user projection that hangs on some events, given 1 s a page
    url = _with_slow_projection(tmp_path, folder, monkeypatch, seconds=1.0)
    token = asyncio.run(create_token(url, "desk"))
    headers = {"Authorization": f"Bearer {token}"}
    with (
        caplog.at_level(logging.WARNING, logger="leaderlog.http"),
        running(create_app(url)) as base,
    ):
        # when people it hangs on are registered, one after another
        for number in range(3):
            person = {"type": "person.registered", "data": {"person": f"slow-{number}"}}
            person["data"]["name"] = f"Slow {number}"
            # then each write is answered (after at most the second a slow page may hold the
            # database: SQLite has one writer), not after the projection's minute, and is
            # read back at once
            answer = client.post(f"{base}/api/events", json=person, headers=headers, timeout=10)
            assert answer.status_code == 201, answer.text
            read_back = client.get(f"{base}/api/history", params={"person": f"slow-{number}"})
            assert read_back.status_code == 200, read_back.text
        health = client.get(f"{base}/healthz").json()
    lags = {item["name"]: item["lag"] for item in health["projections"]}
    assert (lags["leadership"], lags["audit"], lags["feed_entries"]) == (0, 0, 0)
    assert lags["slow"] >= 1
    said = _said(caplog, "projection slow could not apply")
    assert said and "apply() took longer than 1 s" in said[0]


def test_a_server_with_a_slow_user_projection_behind_serves_at_once(
    tmp_path: Path,
    folder: Path,
    client: httpx.Client,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given a user projection built, then events it hangs on appended while no server ran
    url = _with_slow_projection(tmp_path, folder, monkeypatch, seconds=30.0)

    async def append_people() -> None:
        async with await EventLog.open(url) as log:
            await log.import_lines(
                [
                    f'{{"type": "person.registered", "data": {{"person": "slow-{n}", '
                    f'"name": "Slow {n}"}}}}'
                    for n in range(5)
                ],
                actor="test",
            )

    asyncio.run(append_people())
    # when a server starts, then it answers at once, the built-ins current, the slow one behind
    with running(create_app(url)) as base:
        health = client.get(f"{base}/healthz", timeout=5).json()
    lags = {item["name"]: item["lag"] for item in health["projections"]}
    assert (lags["leadership"], lags["audit"], lags["feed_entries"]) == (0, 0, 0)
    assert lags["slow"] == 5


def test_a_user_projection_at_a_new_version_is_not_said_left_out_while_the_server_rebuilds_it(
    tmp_path: Path,
    folder: Path,
    client: httpx.Client,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # given a user projection built at version 1, whose module is at version 2 (an upgrade,
    # or an edit) when the server starts, and whose replay takes a moment
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    (folder / "seen.py").write_text(seen_projection_module("seen", version=1), encoding="utf-8")
    _seeded_with(url, "seen")
    slow = seen_projection_module("seen", version=2, imports="import asyncio\n").replace(
        "    async def apply(self, tx, events):\n",
        "    async def apply(self, tx, events):\n        await asyncio.sleep(2)\n",
    )
    (folder / "seen.py").write_text(slow, encoding="utf-8")
    # (the user projections' runner starts a moment after the server answers, as on a busy
    # machine: the first request meets the projection before that runner has looked)
    prepare = runner_module.ProjectionRunner.prepare

    async def later(self: runner_module.ProjectionRunner) -> None:
        if any(p.name == "seen" for p in self.projections):
            await asyncio.sleep(1)
        await prepare(self)

    monkeypatch.setattr(runner_module.ProjectionRunner, "prepare", later)
    caplog.set_level(logging.WARNING, logger="leaderlog.http")
    # when the server has started and /healthz is asked while it replays that projection
    with running(create_app(url)) as base:
        health = client.get(f"{base}/healthz").json()
        (entry,) = [p for p in health["projections"] if p["name"] == "seen"]
        # then it is not said to be left out, nor a restart asked for: this server is
        # rebuilding it at the version it loaded, and a restart would only start that again
        assert "left out" not in entry.get("error", ""), entry
        assert "restart" not in entry.get("error", ""), entry
        # and once replayed it stands at the version the server loaded
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (entry["version"], entry["lag"]) != (2, 0):
            time.sleep(0.2)
            health = client.get(f"{base}/healthz").json()
            (entry,) = [p for p in health["projections"] if p["name"] == "seen"]
        assert (entry["version"], entry["lag"], entry.get("error")) == (2, 0, None)
    # and the server's log said it would bring it up to date once serving, not before
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("bringing")]
    assert said == [
        f"bringing projections up to date once serving: seen (rebuilt: version 1 to 2, "
        f"{SEED_COUNT} events)"
    ]
