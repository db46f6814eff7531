"""Answers that go through thousands of items are worked out on a worker thread, so that a
server's event loop goes on answering other requests meanwhile: the history of a person with
thousands of claims (2 s at 50,000)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from leaderlog._json import dumps
from leaderlog.log import EventLog
from leaderlog.projections import Queries, runner_for
from leaderlog.projections import queries as queries_module

MANY = 2_100  # beyond the number of claim versions worked out on the event loop


def _line(event_type: str, **data: Any) -> str:
    return dumps({"type": event_type, "data": data})


async def _busy_log(url: str) -> None:
    lines = [
        _line("org.registered", org="agency", name="Agency"),
        _line("post.defined", post="head", org="agency", title="Head"),
        _line("person.registered", person="ada", name="Ada"),
    ]
    lines += [
        _line(
            "source.registered",
            source=f"s{n}",
            url=f"https://news.example.com/{n}",
            publisher=f"Outlet {n}",
            language="en",
        )
        for n in range(MANY)
    ]
    lines += [
        _line(
            "claim.reported",
            claim=f"c{n}",
            source=f"s{n}",
            kind="incumbency",
            person="ada",
            post="head",
            capacity="permanent",
            modality="occurred",
            attribution={"kind": "outlet", "parties": []},
            quote=f"Ada leads the agency, report {n} says",
            locator="body",
        )
        for n in range(MANY)
    ]
    async with await EventLog.open(url) as log:
        await log.import_lines(lines, actor="cli")
        await (await runner_for(log.store)).catch_up()


def _recording(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Record the thread each call of ``queries_module.<name>`` runs on."""
    threads: list[int] = []
    original = getattr(queries_module, name)

    def recorded(*arguments: Any, **options: Any) -> Any:
        threads.append(threading.get_ident())
        return original(*arguments, **options)

    monkeypatch.setattr(queries_module, name, recorded)
    return threads


async def test_a_history_of_thousands_of_claims_is_folded_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'log.db'}"
    await _busy_log(url)
    folded_on = _recording(monkeypatch, "ordered_tenures")
    async with await EventLog.open(url) as log:
        history = await Queries(log.store).history(person="ada")
    assert folded_on and threading.get_ident() not in folded_on
    # the same answer as ever: one tenure, every claim its evidence
    assert len(history["tenures"]) == 1
    assert len(history["tenures"][0]["evidence"]) == MANY
