"""A log holding an event of a type this version does not know (stored by a newer version, or
by another program through the store) is refused in words wherever it is read, never with a
``KeyError``: by the rules before an append to its stream, and by the projections."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from leaderlog.errors import RecordError, UnreadableEvent
from leaderlog.events import current_schema_version, parse_event, upcast
from leaderlog.log import EventLog, load_seeds
from leaderlog.store.base import NewEvent
from tests.conftest import SEEDS, invoke

NEWER_TYPE = "org.merged"


async def _log_with_a_newer_type(url: str) -> int:
    """The seeds, then an event of a type this version does not know on ICE's stream; the
    log's head."""
    async with await EventLog.open(url) as log:
        await load_seeds(log, SEEDS)
        appended = await log.store.append(
            [NewEvent(uuid.uuid4(), "org-ice", NEWER_TYPE, 1, {"org": "ice", "into": "dhs"})],
            actor="cli",
        )
        assert (await log.store.verify()).ok
        return appended.positions[0]


def test_an_unknown_type_is_refused_with_the_rule_named() -> None:
    for read in (
        lambda: current_schema_version(NEWER_TYPE),
        lambda: upcast(NEWER_TYPE, 1, {"org": "ice"}),
    ):
        with pytest.raises(RecordError) as caught:
            read()
        assert caught.value.rule == "type"
        assert repr(NEWER_TYPE) in str(caught.value)


async def test_appending_to_a_stream_holding_an_unknown_type_is_refused_in_words(
    sqlite_url: str,
) -> None:
    head = await _log_with_a_newer_type(sqlite_url)
    async with await EventLog.open(sqlite_url) as log:
        rename = parse_event("org.updated", {"org": "ice", "name": "ICE"})
        # named by its position in the log, not as if the record appended were at fault
        with pytest.raises(UnreadableEvent) as caught:
            await log.append_events([rename], actor="test")
        assert caught.value.position == head
        assert str(caught.value).startswith(f"event at position {head} cannot be read: ")
        assert (await log.store.head())[0] == head


def test_importing_onto_a_stream_holding_an_unknown_type_is_refused_in_words(
    sqlite_url: str,
) -> None:
    head = asyncio.run(_log_with_a_newer_type(sqlite_url))
    record = '{"type": "org.updated", "data": {"org": "ice", "name": "ICE"}}\n'
    imported = invoke(sqlite_url, "import", "-", stdin=record)
    assert imported.exit_code == 1
    assert "KeyError" not in imported.output + imported.stderr
    assert f"event at position {head} cannot be read: event type '{NEWER_TYPE}' is not one" in (
        imported.stderr
    )
    assert "Traceback" not in imported.stderr
    assert json.loads(invoke(sqlite_url, "verify", "--json").stdout)["head_position"] == head


def test_the_projections_name_an_unknown_type_in_words(sqlite_url: str) -> None:
    head = asyncio.run(_log_with_a_newer_type(sqlite_url))
    # (the query answers as known before it, and warns of where each projection stopped)
    answered = invoke(sqlite_url, "state")
    assert answered.exit_code == 0, answered.stderr
    assert answered.stderr.startswith("warning: projection ")
    assert "KeyError" not in answered.stderr
    # with its position: the page a projection stops at holds thousands of events
    assert (
        f"event at position {head}: event type '{NEWER_TYPE}' is not one this leaderlog "
        "understands" in answered.stderr
    )
    # The log itself is read and verified as it is.
    assert invoke(sqlite_url, "verify").exit_code == 0
    assert NEWER_TYPE in invoke(sqlite_url, "events").stdout
