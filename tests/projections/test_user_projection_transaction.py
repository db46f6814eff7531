"""What a user projection's ``apply`` is told when it calls what its transaction lacks."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import ClassVar

import pytest

from leaderlog.errors import ProjectionFailed
from leaderlog.events import RecordedEvent
from leaderlog.log import EventLog
from leaderlog.projections import ProjectionRunner, ProjectionTransaction
from leaderlog.projections.base import Projection


class FetchingOne(Projection):
    """Reads with ``fetchone``, as a DB-API cursor would, which the transaction lacks."""

    name: ClassVar[str] = "fetching_one"
    version: ClassVar[int] = 1

    def schema(self) -> Sequence[str]:
        return ()

    def tables(self) -> Sequence[str]:
        return ()

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        await tx.fetchone("SELECT 1")  # type: ignore[attr-defined]


async def test_a_method_the_transaction_lacks_is_named_with_those_it_has(
    seeded_log: EventLog,
) -> None:
    runner = ProjectionRunner(seeded_log.store, [FetchingOne()])
    with pytest.raises(ProjectionFailed) as raised:
        await asyncio.wait_for(runner.catch_up(), timeout=30)
    message = str(raised.value)
    assert (
        "AttributeError: a projection's transaction has no attribute 'fetchone': it has "
        "execute, executemany and fetchall" in message
    )
    assert "Watched" not in message
