"""A user projection another command forgot (``leaderlog projections --forget``) while a
runner, a server's, had it loaded: the runner lets it go, saying so once, instead of trying
to apply events to its dropped tables at every page and listing it as failing."""

from __future__ import annotations

import logging

import pytest

from leaderlog.log import EventLog
from leaderlog.projections import BUILTIN, ProjectionRunner
from leaderlog.projections.leadership import LeadershipProjection
from leaderlog.projections.runner import forget_projection
from tests.feeds.logs import confirm
from tests.projections.logs import GORDON_ACTING, SEED_COUNT
from tests.projections.test_runner import Counting


async def test_a_projection_forgotten_elsewhere_is_let_go_once(
    seeded_log: EventLog, caplog: pytest.LogCaptureFixture
) -> None:
    # given a runner keeping a user projection up to date
    runner = ProjectionRunner(seeded_log.store, [LeadershipProjection(), Counting()])
    assert await runner.catch_up() == SEED_COUNT
    # when another command forgets it, and events come
    await forget_projection(seeded_log.store, "counting", list(BUILTIN))
    await confirm(seeded_log, GORDON_ACTING)
    with caplog.at_level(logging.WARNING, logger="leaderlog.projections"):
        # then the runner goes on without it, failing nothing
        assert await runner.catch_up() == SEED_COUNT + 1
        await confirm(seeded_log, GORDON_ACTING)
        assert await runner.catch_up() == SEED_COUNT + 2
    assert {status.name for status in await runner.status()} == {"leadership"}
    assert runner.failing == {}
    # and neither brings back its checkpoint nor its tables
    assert set(await ProjectionRunner(seeded_log.store, []).registered()) == {"leadership"}
    tables = await seeded_log.store.query(
        "SELECT name FROM sqlite_master WHERE name LIKE 'p_counting_%'"
    )
    assert tables == []
    # and it is said once
    said = [record.getMessage() for record in caplog.records]
    assert said == [
        "projection counting was forgotten by another command (leaderlog projections "
        "--forget): it is no longer kept up to date here"
    ]
