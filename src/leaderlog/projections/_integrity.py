"""The log's integrity check, with what the projections remember of its end.

A hash chain shows every edit, but a log cut short is a shorter chain that is still whole. The
projections' checkpoints say how far the log once reached: one beyond today's head means
events were removed from the end (or the events table was replaced by another log's).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from leaderlog.projections.base import CHECKPOINT_TABLE
from leaderlog.store.base import EventStore, VerifyReport

__all__ = ["verify_log"]

# One statement, so the head and the checkpoints are read from one snapshot: a projection
# that applied events appended after the chain was read is not mistaken for one beyond it.
_BEYOND_THE_HEAD = (
    "WITH head AS (SELECT COALESCE(MAX(position), 0) AS position FROM events) "
    f"SELECT c.name, c.position, head.position FROM {CHECKPOINT_TABLE} AS c, head "
    "WHERE c.position > head.position ORDER BY c.position DESC, c.name"
)


async def verify_log(
    store: EventStore, progress: Callable[[int, int], None] | None = None
) -> VerifyReport:
    """``store.verify(progress)``, and not ok if a projection had applied the log beyond
    its end.

    Only reads (a role that may only read can run it); a database whose projections were
    never built has nothing to compare with and is judged on its chain alone.
    """
    # Without a bar to feed, called as before: a store's own verify may take no callback.
    report = await store.verify() if progress is None else await store.verify(progress)
    if not report.ok or CHECKPOINT_TABLE not in await store.tables():
        return report
    beyond = await store.query(_BEYOND_THE_HEAD)
    if not beyond:
        return report
    name, position, head = str(beyond[0][0]), int(beyond[0][1]), int(beyond[0][2])
    problem = (
        f"the log ends at position {head}, but projection {name!r} had applied it up to "
        f"position {position}: events were removed from its end, or it was replaced"
    )
    return dataclasses.replace(report, ok=False, first_bad_position=head + 1, problem=problem)
