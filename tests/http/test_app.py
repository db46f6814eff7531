"""The app's assembly and lifespan (src/leaderlog/http/app.py)."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import APIRouter

from leaderlog.errors import ProjectionFailed, ProjectionFailure, StoreBusy, StoreUnreachable
from leaderlog.http import app as app_module
from leaderlog.http import catch_up_before_serving, create_app, projection_runners
from leaderlog.log import EventLog
from leaderlog.projections import BUILTIN, ProjectionRunner, runner_for
from leaderlog.projections import runner as runner_module
from leaderlog.projections.audit import AuditProjection
from leaderlog.projections.loading import builtin_named_modules
from tests.conftest import SEEDS
from tests.http.server import seeded_database
from tests.projections.logs import (
    ANOTHER_CLAIM,
    GORDON_ACTING,
    SEED_COUNT,
    seen_projection_module,
)

SOURCE = "fox-ice-shakeup-2025-05"


def test_a_log_given_to_the_app_stays_open_once_the_app_stops(tmp_path: Path) -> None:
    url = seeded_database(tmp_path)

    async def serve_then_read() -> int:
        # given a log the caller opened, and an app over it
        async with await EventLog.open(url) as log:
            app = create_app(log)
            # when the app starts, answers a request and stops
            async with app.router.lifespan_context(app):
                transport = httpx.ASGITransport(app=app)
                async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
                    assert (await client.get("/healthz")).status_code == 200
            # then the caller's log is still open: the app closes only a log it opened
            return await log.store.count()

    assert asyncio.run(serve_then_read()) == SEED_COUNT


@pytest.mark.parametrize("condition", [StoreBusy, StoreUnreachable])
async def test_catching_up_before_serving_raises_a_busy_or_unreachable_database(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch, condition: type[Exception]
) -> None:
    # given a database that is busy or does not answer while the projections catch up
    async def refused(self: ProjectionRunner, *args: object, **kwargs: object) -> int:
        raise condition("the database cannot answer now")

    monkeypatch.setattr(ProjectionRunner, "catch_up", refused)
    # when serve brings the projections up to date, then it is told, to wait for it
    with pytest.raises(condition):
        await catch_up_before_serving(seeded_log.store)


async def test_catching_up_before_serving_leaves_another_failure_to_the_server_start(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given projections that fail to apply the log for a reason no wait mends
    tried: list[str] = []

    async def failing(self: ProjectionRunner, *args: object, **kwargs: object) -> int:
        tried.append(", ".join(p.name for p in self.projections))
        raise ValueError("not today")

    monkeypatch.setattr(ProjectionRunner, "catch_up", failing)
    # when serve brings them up to date, then it does not fail (the start logs it), and
    # the feed entries are tried even though the other projections failed first
    await catch_up_before_serving(seeded_log.store)
    assert tried == ["leadership, audit", "feed_entries"]


async def test_progress_of_a_projection_a_new_version_rebuilds_counts_from_the_first_event(
    seeded_log: EventLog,
) -> None:
    # given projections brought up to date, then one found at another version (an upgrade)
    await catch_up_before_serving(seeded_log.store)
    async with seeded_log.store.projection_transaction() as tx:
        await tx.execute("UPDATE projection_checkpoints SET version = 0 WHERE name = 'audit'")
    reported: list[tuple[str, int, int]] = []
    # when serve brings them up to date, then the rebuild is shown from none to every event
    await catch_up_before_serving(seeded_log.store, lambda *step: reported.append(step))
    assert reported
    assert {names for names, _, _ in reported} == {"leadership, audit"}
    assert reported[-1] == ("leadership, audit", SEED_COUNT, SEED_COUNT)


async def test_progress_counts_the_events_appended_while_catching_up(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a log that another writer appends to once serve has read how far behind it is
    said = app_module._say_if_catching_up_takes_a_while

    async def and_another_writer_appends(*args: Any) -> None:
        await said(*args)
        await seeded_log.append_raw(
            {"type": "claim.confirmed", "data": {"claim": GORDON_ACTING, "source": SOURCE}},
            actor="test",
        )

    monkeypatch.setattr(app_module, "_say_if_catching_up_takes_a_while", and_another_writer_appends)
    reported: list[tuple[str, int, int]] = []
    # when serve brings the projections up to date
    await catch_up_before_serving(seeded_log.store, lambda *step: reported.append(step))
    # then each group's progress ends at every event, the one appended meanwhile included
    last = {names: (applied, total) for names, applied, total in reported}
    assert last == {
        "leadership, audit": (SEED_COUNT + 1, SEED_COUNT + 1),
        "feed_entries": (SEED_COUNT + 1, SEED_COUNT + 1),
    }


def test_a_database_that_cannot_answer_at_start_is_said_once_for_each_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    url = seeded_database(tmp_path)
    # given a database busy at the first three tries of the start, then not answering once
    reasons = ["the database is busy"] * 3 + ["nothing answers"]
    real_runners = app_module.projection_runners

    async def refusing(store: Any) -> Any:
        if reasons:
            raise StoreBusy(reasons.pop(0))
        return await real_runners(store)

    monkeypatch.setattr(app_module, "projection_runners", refusing)
    monkeypatch.setattr(app_module, "_RETRY_SECONDS", 0)

    async def start_and_stop() -> None:
        app = create_app(url)
        async with app.router.lifespan_context(app):
            pass

    # when a server starts, waiting for it
    with caplog.at_level(logging.WARNING, logger="leaderlog.http"):
        asyncio.run(start_and_stop())
    # then each reason is said once, not at every try
    assert [r.getMessage() for r in caplog.records if "cannot answer yet" in r.getMessage()] == [
        "the database cannot answer yet: the database is busy; waiting for it",
        "the database cannot answer yet: nothing answers; waiting for it",
    ]


def test_seeds_are_loaded_into_an_empty_log_only(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"

    async def start_with_seeds_and_count() -> int:
        # given a log that holds one event of its own, none of the seeds
        async with await EventLog.open(url) as log:
            await log.append_raw(
                {"type": "person.registered", "data": {"person": "x-y", "name": "X Y"}},
                actor="test",
            )
        # when an app told to load the seeds starts on it
        app = create_app(url, seeds=SEEDS)
        async with app.router.lifespan_context(app):
            pass
        async with await EventLog.open(url) as log:
            return await log.store.count()

    # then the seeds are not loaded into it
    assert asyncio.run(start_with_seeds_and_count()) == 1


async def test_the_user_projections_runner_rests_one_that_failed_before_trying_it_again(
    seeded_log: EventLog, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a user projection built, whose apply then fails once, with an event to apply
    (folder / "flaky.py").write_text(seen_projection_module("flaky"), encoding="utf-8")
    await (await runner_for(seeded_log.store, also=("flaky",))).rebuild(("flaky",))
    (folder / "flaky.py").write_text(
        seen_projection_module("flaky").replace(
            "    async def apply(self, tx, events):\n",
            "    async def apply(self, tx, events):\n"
            "        if not FAILED:\n"
            "            FAILED.append(True)\n"
            "            raise ValueError('not today')\n",
        )
        + "FAILED = []\n",
        encoding="utf-8",
    )
    await seeded_log.import_lines([ANOTHER_CLAIM], actor="test")
    monkeypatch.setattr(runner_module, "_FIRST_REST_SECONDS", 3600.0)
    *_, users = await projection_runners(seeded_log.store)
    assert [p.name for p in users.projections] == ["flaky"]
    # when the server's runner of user projections meets the failure, then runs again at once
    with pytest.raises(ProjectionFailed):
        await users.catch_up()
    # then the projection rests rather than being tried at every run (each try of a slow
    # one would hold every writer back): it is still said to fail, and has not moved
    with pytest.raises(ProjectionFailed, match="flaky"):
        await users.catch_up()
    (status,) = await users.status()
    assert status.lag == 1


def _start_and_stop(url: str) -> None:
    async def start_and_stop() -> None:
        app = create_app(url)
        async with app.router.lifespan_context(app):
            pass

    asyncio.run(start_and_stop())


@pytest.mark.parametrize(
    ("failure", "level", "said", "traceback"),
    [
        (
            StoreBusy("the database is busy"),
            logging.WARNING,
            "projections cannot catch up now: the database is busy; retrying",
            False,
        ),
        (
            ProjectionFailed([ProjectionFailure("leadership", 1, 1, ValueError("bad"))]),
            logging.ERROR,
            "projection leadership could not apply event 1: ValueError: bad; it stays at "
            "position 0 until that is fixed; retrying",
            False,
        ),
        (
            ValueError("not today"),
            logging.ERROR,
            "applying events to leadership, audit failed; retrying",
            True,
        ),
    ],
    ids=["database", "built-in", "unexpected"],
)
def test_a_failure_to_catch_up_at_start_is_logged_as_what_it_is(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    failure: Exception,
    level: int,
    said: str,
    traceback: bool,
) -> None:
    # given a log whose built-in projections fail to catch up
    url = seeded_database(tmp_path)
    catch_up = ProjectionRunner.catch_up

    async def failing(self: ProjectionRunner, *args: Any, **kwargs: Any) -> int:
        if any(p.name == "leadership" for p in self.projections):
            raise failure
        return await catch_up(self, *args, **kwargs)

    monkeypatch.setattr(ProjectionRunner, "catch_up", failing)
    # when a server starts on it
    with caplog.at_level(logging.WARNING, logger="leaderlog.http"):
        _start_and_stop(url)
    # then the log says it at the level it deserves: a busy database is its condition, a
    # built-in that stopped is an error (and says where), only the unexpected has a traceback
    (record,) = [r for r in caplog.records if r.getMessage().endswith("; retrying")]
    assert (record.levelno, record.getMessage()) == (level, said)
    assert (record.exc_info is not None) == traceback


def test_a_failure_to_catch_up_is_logged_again_once_it_returns_after_ending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # given a database busy at each runner's first two catch-ups (the start's and its
    # follower's), answering at the third, then busy once more
    url = seeded_database(tmp_path)
    monkeypatch.setattr(app_module, "_RETRY_SECONDS", 0.01)
    monkeypatch.setattr(app_module, "_POLL_SECONDS", 0.01)
    scripts: dict[int, list[str]] = {}
    catch_up = ProjectionRunner.catch_up

    async def scripted(self: ProjectionRunner, *args: Any, **kwargs: Any) -> int:
        script = scripts.setdefault(id(self), ["busy", "busy", "answers", "busy"])
        if script and script.pop(0) == "busy":
            raise StoreBusy("the database is busy")
        return await catch_up(self, *args, **kwargs)

    monkeypatch.setattr(ProjectionRunner, "catch_up", scripted)

    async def serve_until_done() -> None:
        app = create_app(url)
        async with app.router.lifespan_context(app):
            deadline = time.monotonic() + 20
            while len(scripts) < 2 or any(scripts.values()):
                assert time.monotonic() < deadline, scripts
                await asyncio.sleep(0.01)

    # when a server runs through it
    with caplog.at_level(logging.WARNING, logger="leaderlog.http"):
        asyncio.run(serve_until_done())
    # then each runner said it once while it lasted, and once again when it came back
    said = [r.getMessage() for r in caplog.records if "cannot catch up now" in r.getMessage()]
    assert said == ["projections cannot catch up now: the database is busy; retrying"] * 4


def test_a_projection_a_new_version_rebuilds_is_said_before_serving(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # given a log whose projections are built, one of them at another version (an upgrade)
    url = seeded_database(tmp_path)

    async def build_then_change_a_version() -> None:
        async with await EventLog.open(url) as log:
            await catch_up_before_serving(log.store)
            async with log.store.projection_transaction() as tx:
                await tx.execute(
                    "UPDATE projection_checkpoints SET version = 0 WHERE name = 'audit'"
                )

    asyncio.run(build_then_change_a_version())
    # when a server starts on it
    with caplog.at_level(logging.WARNING, logger="leaderlog.http"):
        _start_and_stop(url)
    # then it says it rebuilds that one alone, from which version to which, and over how much
    assert [r.getMessage() for r in caplog.records if "bringing" in r.getMessage()] == [
        "bringing projections up to date before serving: audit (rebuilt: version 0 to "
        f"{AuditProjection.version}, {SEED_COUNT} events)"
    ]


@pytest.mark.parametrize("method", ["PUT", "PATCH"])
async def test_a_405_lists_the_methods_of_routers_a_caller_added(method: str) -> None:
    # given an app with a router of the caller's, deleting events at the write path
    extra = APIRouter()

    @extra.delete("/api/events")
    async def forget_events() -> None:
        return None

    app = create_app("sqlite:///unused.db", routers=[extra])
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        # when the path is asked for with a method none of its routes takes
        response = await client.request(method, "/api/events")
    # then the 405 lists every method the path takes, the caller's included
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, HEAD, POST, DELETE"


def test_a_module_named_like_a_built_in_projection_is_said_at_start(
    tmp_path: Path, folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # given the projections folder holding a module named like a built-in projection
    (folder / "audit.py").write_text(seen_projection_module("audit"), encoding="utf-8")
    url = seeded_database(tmp_path)
    # when a server starts
    with caplog.at_level(logging.WARNING, logger="leaderlog.http"):
        _start_and_stop(url)
    # then its log says that module is never loaded, rather than ignoring it in silence
    (why,) = builtin_named_modules(builtin=BUILTIN)
    assert "audit.py" in why
    assert why in [record.getMessage() for record in caplog.records]


async def test_a_user_projection_that_no_longer_loads_is_followed_beside_one_that_does(
    seeded_log: EventLog, folder: Path
) -> None:
    # given two user projections built, one of whose modules then no longer imports
    for name in ("kept", "gone"):
        (folder / f"{name}.py").write_text(seen_projection_module(name), encoding="utf-8")
    await (await runner_for(seeded_log.store, also=("kept", "gone"))).rebuild(("kept", "gone"))
    (folder / "gone.py").write_text("import no_such_package_anywhere\n", encoding="utf-8")
    # when the server's runners are made
    *_, users = await projection_runners(seeded_log.store)
    # then the one left out is among the user projections followed (and listed with its lag
    # by /healthz) beside the one that loads
    assert sorted(p.name for p in users.projections) == ["gone", "kept"]
