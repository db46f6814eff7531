"""An event a newer leaderlog wrote (a newer ``schema_version``, or a type this version does not
know) stops every built-in projection just before it: each applies every event before it, in
the same page or not, and names the event's position; a user projection that never reads it
goes on."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest

from leaderlog.errors import ProjectionFailed
from leaderlog.events import RecordedEvent
from leaderlog.log import EventLog, load_seeds
from leaderlog.projections import (
    BUILTIN,
    Projection,
    ProjectionRunner,
    ProjectionTransaction,
    payload,
)
from leaderlog.store.base import NewEvent
from tests.conftest import SEEDS, invoke
from tests.projections.logs import SEED_COUNT

# (type, schema_version, data) of an event a newer leaderlog wrote on ICE's stream
Newer = tuple[str, int, dict[str, Any]]
NEWER: Newer = ("org.updated", 99, {"org": "ice", "name": "ICE"})
UNKNOWN: Newer = ("org.merged", 1, {"org": "ice", "into": "dhs"})


async def _seeds_then(url: str, newer: Newer) -> int:
    """The seeds, the event a newer version wrote, then an ordinary one after it; the newer
    event's position (past today's rules: straight to the store, as another version would)."""
    async with await EventLog.open(url) as log:
        await load_seeds(log, SEEDS)
        written = await log.store.append(
            [
                NewEvent(uuid.uuid4(), "org-ice", *newer),
                NewEvent(uuid.uuid4(), "org-dhs", "org.updated", 1, {"org": "dhs", "name": "DHS"}),
            ],
            actor="cli",
        )
        return written.positions[0]


class _Counter(Projection):
    """Counts events without reading their data: a newer event is nothing to it."""

    name: ClassVar[str] = "counted"
    version: ClassVar[int] = 1

    def schema(self) -> Sequence[str]:
        return ("CREATE TABLE IF NOT EXISTS p_counted_n (position BIGINT PRIMARY KEY)",)

    def tables(self) -> Sequence[str]:
        return ("p_counted_n",)

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        for event in events:
            await tx.execute("INSERT INTO p_counted_n (position) VALUES (?)", (event.position,))


class _Reader(_Counter):
    """Reads every event's data, as most projections do."""

    name: ClassVar[str] = "reader"

    def schema(self) -> Sequence[str]:
        return ("CREATE TABLE IF NOT EXISTS p_reader_n (position BIGINT PRIMARY KEY)",)

    def tables(self) -> Sequence[str]:
        return ("p_reader_n",)

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        for event in events:
            payload(event)
            await tx.execute("INSERT INTO p_reader_n (position) VALUES (?)", (event.position,))


@pytest.mark.parametrize("newer", [NEWER, UNKNOWN], ids=["newer-schema-version", "unknown-type"])
@pytest.mark.parametrize("page", [2000, 7], ids=["one-page", "several-pages"])
async def test_every_built_in_applies_the_events_before_it_and_names_it(
    sqlite_url: str, newer: Newer, page: int
) -> None:
    position = await _seeds_then(sqlite_url, newer)
    assert position == SEED_COUNT + 1
    async with await EventLog.open(sqlite_url) as log:
        runner = ProjectionRunner(log.store, [cls() for cls in BUILTIN.values()], page=page)
        with pytest.raises(ProjectionFailed) as caught:
            await runner.catch_up()
        assert sorted(caught.value.names) == sorted(BUILTIN)
        for failure in caught.value.failures:
            assert (failure.first, failure.last) == (position, position)
            assert f"event at position {position}: " in str(failure)
            assert (
                f"it stays at position {position - 1} until the leaderlog version that wrote "
                "that event runs"
            ) in str(failure)
        checkpoints = {status.name: status.checkpoint for status in await runner.status()}
        assert checkpoints == {name: position - 1 for name in BUILTIN}
        # and a second run stops at the same place, having applied nothing twice
        with pytest.raises(ProjectionFailed):
            await runner.catch_up()
        assert {s.name: s.checkpoint for s in await runner.status()} == checkpoints


def test_leaderlog_projections_shows_where_each_built_in_stopped(sqlite_url: str) -> None:
    position = asyncio.run(_seeds_then(sqlite_url, NEWER))
    # a query brings the projections up to date, as far as they go, says where they stop,
    # and answers as known before that event, as a server does (it failed, answering nothing)
    answered = invoke(sqlite_url, "state", "--json")
    assert answered.exit_code == 0, answered.stderr
    assert json.loads(answered.stdout)["known_at"]["position"] == position - 1
    for name in BUILTIN:
        assert (
            f"warning: projection {name} could not apply event {position}: RecordError: event at "
            f"position {position}: org.updated schema_version 99 is newer than this leaderlog "
            f"understands (1); it stays at position {position - 1} until"
        ) in answered.stderr
    listed = invoke(sqlite_url, "projections", "--json")
    statuses = {status["name"]: status for status in json.loads(listed.stdout)}
    assert {name: statuses[name]["checkpoint"] for name in BUILTIN} == {
        name: position - 1 for name in BUILTIN
    }
    assert {name: statuses[name]["lag"] for name in BUILTIN} == {name: 2 for name in BUILTIN}
    # and an answer that needs that event names it
    needing = invoke(sqlite_url, "state", "--known-at", str(position))
    assert needing.exit_code == 1
    assert f"event at position {position} cannot be read" in needing.stderr
    assert "run the leaderlog version that wrote it" in needing.stderr


async def test_a_user_projection_that_does_not_read_it_goes_on_and_one_that_does_stops(
    sqlite_url: str,
) -> None:
    position = await _seeds_then(sqlite_url, NEWER)
    async with await EventLog.open(sqlite_url) as log:
        runner = ProjectionRunner(log.store, [_Counter(), _Reader()])
        with pytest.raises(ProjectionFailed) as caught:
            await runner.catch_up()
        assert caught.value.names == ("reader",)
        assert f"event at position {position}: " in str(caught.value)
        checkpoints = {status.name: status.checkpoint for status in await runner.status()}
        assert checkpoints == {"counted": position + 1, "reader": position - 1}
