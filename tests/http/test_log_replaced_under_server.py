"""A log restored under a running server, from an older copy or from another log's file:
the feeds and pages serve the log now in place, never what was read from the other one."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx

from leaderlog.events import PersonRegistered
from leaderlog.http import create_app
from leaderlog.projections import BUILTIN
from tests.http.server import confirm_as_another_writer, running, seeded_database

FOX = "fox-ice-shakeup-2025-05"
GENALO_CONFIRMED = "Confirmed: Departure of Kenneth Genalo"
HAMMER_CONFIRMED = "Confirmed: Departure of Robert Hammer"


def _folder(path: Path) -> Path:
    path.mkdir()
    return path


def _database(url: str) -> Path:
    return Path(url.removeprefix("sqlite:///"))


def _restore(copy: str, onto: str) -> None:
    """``sqlite3 ONTO ".restore COPY"``: SQLite's online backup, page by page, under the
    server's open connections."""
    source, target = sqlite3.connect(_database(copy)), sqlite3.connect(_database(onto))
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()


def _titles(client: httpx.Client, base: str) -> list[str]:
    """The JSON feed's titles once it answers; polls past 503s while feeds are rebuilt."""
    deadline = time.monotonic() + 20
    while True:
        response = client.get(f"{base}/feeds/all.json")
        if response.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert response.status_code == 200, response.text
    return [item["title"] for item in response.json()["items"]]


def _until(client: httpx.Client, base: str, shown: str) -> list[str]:
    deadline = time.monotonic() + 20
    titles = _titles(client, base)
    while not any(title.startswith(shown) for title in titles) and time.monotonic() < deadline:
        time.sleep(0.1)
        titles = _titles(client, base)
    return titles


def _build_projections(url: str) -> None:
    """As a server leaves the database it served: its projections built."""
    with running(create_app(url)) as base, httpx.Client() as client:
        assert client.get(f"{base}/feeds/all.json").status_code == 200


def test_another_log_of_the_same_length_is_served_with_new_tags(tmp_path: Path) -> None:
    served = seeded_database(_folder(tmp_path / "served"))
    confirm_as_another_writer(served, f"{FOX}-genalo-retirement")
    # Another log, exactly as long, written by an import alone (no projection tables).
    other = seeded_database(_folder(tmp_path / "other"))
    confirm_as_another_writer(other, f"{FOX}-hammer-reassignment")
    with running(create_app(served)) as base, httpx.Client() as client:
        atom = client.get(f"{base}/feeds/all.atom")
        page = client.get(f"{base}/")
        assert _titles(client, base)[0].startswith(GENALO_CONFIRMED)

        _restore(other, served)

        titles = _until(client, base, HAMMER_CONFIRMED)
        assert titles[0].startswith(HAMMER_CONFIRMED)
        assert not any(title.startswith(GENALO_CONFIRMED) for title in titles)
        # A reader's copy of the other log's documents is not current: it gets this log's.
        held = {"If-None-Match": atom.headers["ETag"]}
        again = client.get(f"{base}/feeds/all.atom", headers=held)
        assert again.status_code == 200
        assert HAMMER_CONFIRMED in again.text
        assert GENALO_CONFIRMED not in again.text
        page_again = client.get(f"{base}/", headers={"If-None-Match": page.headers["ETag"]})
        assert page_again.status_code == 200
        assert page_again.headers["ETag"] != page.headers["ETag"]


def test_an_older_copy_restored_brings_the_feeds_back_without_what_it_lacks(
    tmp_path: Path,
) -> None:
    served = seeded_database(_folder(tmp_path / "served"))
    _build_projections(served)
    older = seeded_database(_folder(tmp_path / "older"))
    _restore(served, older)
    confirm_as_another_writer(served, f"{FOX}-genalo-retirement")
    with running(create_app(served)) as base, httpx.Client() as client:
        assert _titles(client, base)[0].startswith(GENALO_CONFIRMED)

        _restore(older, served)

        # Served again (not "being rebuilt" until the log grows past what was served),
        # without the confirmation the older copy never had.
        deadline = time.monotonic() + 20
        titles = _titles(client, base)
        while any(title.startswith("Confirmed") for title in titles):
            assert time.monotonic() < deadline, titles
            time.sleep(0.1)
            titles = _titles(client, base)
        assert any("Kenneth Genalo" in title for title in titles)
        # Written again, the log reaches the position served before with another event.
        confirm_as_another_writer(served, f"{FOX}-hammer-reassignment")
        assert _until(client, base, HAMMER_CONFIRMED)[0].startswith(HAMMER_CONFIRMED)


def test_a_writer_on_a_log_replaced_during_a_catch_up_waits_for_its_own_event(
    tmp_path: Path,
) -> None:
    # given a server on a log of 30 events, and a shorter log of 29 to restore under it
    served = seeded_database(_folder(tmp_path / "served"))
    confirm_as_another_writer(served, f"{FOX}-genalo-retirement")
    shorter = seeded_database(_folder(tmp_path / "shorter"))

    async def served_and_restored() -> tuple[int, bool, dict[str, int]]:
        app = create_app(served)
        async with app.router.lifespan_context(app):
            services = app.state.services
            runner = next(r for r in services.runners if r.projections[0].name in BUILTIN)
            catch_up = runner.catch_up

            async def restored_first(*arguments: Any, **keywords: Any) -> int:
                runner.catch_up = catch_up
                _restore(shorter, served)
                return await catch_up(*arguments, **keywords)

            # when the shorter log is restored while a writer's catch-up runs
            runner.catch_up = restored_first
            await services.catch_up()
            # and a writer appends to it
            log = services.log
            written = await log.append_events([PersonRegistered(person="p1", name="P")], actor="t")
            (position,) = written.positions
            applied = await services.applied_through(position)
            rows = await log.store.query("SELECT name, position FROM projection_checkpoints")
            return position, applied, {str(name): int(at) for name, at in rows}

    position, applied, checkpoints = asyncio.run(served_and_restored())
    # then the writer of position 30 of this log waits until its event is applied, where
    # the other log's 30 events counted as applied already
    assert position == 30
    assert applied
    assert all(checkpoints[name] >= position for name in BUILTIN), checkpoints
