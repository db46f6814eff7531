"""A stored row edited behind the store's back, so that it no longer reads as an event, stops
the projections just before it: each applies every event before it, in the same page or not,
and names its position (they stood where the page holding it began)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from leaderlog.errors import UnreadableEvent
from leaderlog.log import EventLog, load_seeds
from leaderlog.projections import BUILTIN, ProjectionRunner
from tests.conftest import SEEDS
from tests.projections.logs import SEED_COUNT

EDITED = 20


async def _seeds_with_an_edited_row(folder: Path) -> str:
    url = f"sqlite:///{folder / 'leaderlog.db'}"
    async with await EventLog.open(url) as log:
        await load_seeds(log, SEEDS)
    with sqlite3.connect(folder / "leaderlog.db") as connection:
        connection.execute("DROP TRIGGER events_are_append_only_update")
        connection.execute("UPDATE events SET data = '{not json' WHERE position = ?", (EDITED,))
    return url


@pytest.mark.parametrize("page", [2000, 7])
async def test_every_projection_applies_the_events_before_an_edited_row(
    tmp_path: Path, page: int
) -> None:
    url = await _seeds_with_an_edited_row(tmp_path)
    async with await EventLog.open(url) as log:
        runner = ProjectionRunner(log.store, [factory() for factory in BUILTIN.values()], page=page)
        with pytest.raises(UnreadableEvent, match=f"event at position {EDITED} cannot be read"):
            await runner.catch_up()
        status = {row.name: row.checkpoint for row in await runner.status()}
        assert status == {name: EDITED - 1 for name in BUILTIN}
        assert {name: (f.first, f.last) for name, f in runner.failing.items()} == {
            name: (EDITED, EDITED) for name in BUILTIN
        }
    assert SEED_COUNT > EDITED
