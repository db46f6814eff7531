"""The projection runner: catch up, follow, rebuild, and report lag.

Every page of events is applied to every projection that has not seen it yet inside one
projection transaction, which also moves their checkpoints. Checkpoints are read again inside
that transaction, so two runners (say a server and a CLI query) never apply an event twice:
the store serialises projection transactions and the second one skips what the first applied.

A projection whose stored version differs from its class's ``version`` is dropped and rebuilt
from position 0. A rebuild creates a projection's ``query_indexes()`` only once the replay has
reached the head of the log.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from leaderlog.errors import ProjectionError
from leaderlog.events import RecordedEvent
from leaderlog.projections._sql import marks
from leaderlog.projections.base import (
    CHECKPOINT_SCHEMA,
    Projection,
    ProjectionTransaction,
    shared_decoding,
)
from leaderlog.store.base import EventStore

__all__ = ["Progress", "ProjectionRunner", "ProjectionStatus"]

# Called after each applied page with (last applied position, head position).
Progress = Callable[[int, int], None]
DEFAULT_PAGE = 2000


class ProjectionStatus(NamedTuple):
    name: str
    version: int
    checkpoint: int
    head: int
    lag: int


class ProjectionRunner:
    """Keeps ``projections`` up to date with ``store``'s log."""

    def __init__(
        self, store: EventStore, projections: Iterable[Projection], *, page: int = DEFAULT_PAGE
    ) -> None:
        self.store = store
        self.projections = list(projections)
        names = [projection.name for projection in self.projections]
        if len(set(names)) != len(names):
            raise ProjectionError(f"projection names must be unique, got {names}")
        self.page = page
        self._prepared = False
        # Projections (re)built from scratch whose query indexes wait for the end of the replay.
        self._deferred: set[str] = set()

    def _named(self, names: Iterable[str] | None) -> list[Projection]:
        if names is None:
            return list(self.projections)
        by_name = {projection.name: projection for projection in self.projections}
        unknown = [name for name in names if name not in by_name]
        if unknown:
            raise ProjectionError(
                f"unknown projection(s) {', '.join(unknown)}; known: {', '.join(by_name)}"
            )
        return [by_name[name] for name in dict.fromkeys(names)]

    # --- schema and checkpoints ------------------------------------------------------------

    async def _checkpoints(self, tx: ProjectionTransaction) -> dict[str, tuple[int, int]]:
        names = [projection.name for projection in self.projections]
        rows = await tx.fetchall(
            "SELECT name, version, position FROM projection_checkpoints "
            f"WHERE name IN ({marks(len(names))})",
            names,
        )
        return {str(name): (int(version), int(position)) for name, version, position in rows}

    async def _reset(self, tx: ProjectionTransaction, projection: Projection) -> None:
        for table in projection.tables():
            await tx.execute(f"DROP TABLE IF EXISTS {table}")
        for statement in projection.schema():
            await tx.execute(statement)
        await tx.execute(
            "INSERT INTO projection_checkpoints (name, version, position) VALUES (?, ?, 0) "
            "ON CONFLICT (name) DO UPDATE SET version = excluded.version, position = 0",
            (projection.name, projection.version),
        )
        self._deferred.add(projection.name)

    async def prepare(self) -> None:
        """Create missing tables; rebuild (from 0) any projection whose version changed."""
        if self._prepared:
            return
        async with self.store.projection_transaction() as tx:
            await tx.execute(CHECKPOINT_SCHEMA)
            stored = await self._checkpoints(tx)
            for projection in self.projections:
                found = stored.get(projection.name)
                if found is None or found[0] != projection.version or found[1] == 0:
                    await self._reset(tx, projection)
                    continue
                for statement in (*projection.schema(), *projection.query_indexes()):
                    await tx.execute(statement)
        self._prepared = True

    async def _create_deferred_indexes(self) -> None:
        waiting = [p for p in self.projections if p.name in self._deferred]
        if not waiting:
            return
        async with self.store.projection_transaction() as tx:
            for projection in waiting:
                for statement in projection.query_indexes():
                    await tx.execute(statement)
        self._deferred -= {projection.name for projection in waiting}

    # --- applying --------------------------------------------------------------------------

    async def _apply_page(
        self, projections: Sequence[Projection], events: Sequence[RecordedEvent]
    ) -> None:
        first = events[0].position
        async with self.store.projection_transaction() as tx:
            stored = await self._checkpoints(tx)
            with shared_decoding():
                for projection in projections:
                    version, checkpoint = stored.get(projection.name, (projection.version, 0))
                    # Skip anything another runner already applied, and never leave a gap
                    # (a concurrent rebuild may have moved a checkpoint back).
                    if version != projection.version or checkpoint < first - 1:
                        continue
                    todo = [event for event in events if event.position > checkpoint]
                    if not todo:
                        continue
                    await projection.apply(tx, todo)
                    await tx.execute(
                        "UPDATE projection_checkpoints SET position = ? WHERE name = ?",
                        (todo[-1].position, projection.name),
                    )

    async def _stored(self) -> dict[str, tuple[int, int]]:
        rows = await self.store.query("SELECT name, version, position FROM projection_checkpoints")
        return {str(name): (int(version), int(position)) for name, version, position in rows}

    async def _run(self, projections: Sequence[Projection], progress: Progress | None) -> int:
        """Apply pages until the named projections reach today's head; returns that head."""
        target, _ = await self.store.head()
        while True:
            stored = await self._stored()
            low = min((stored.get(p.name, (0, 0))[1] for p in projections), default=target)
            if low >= target:
                break
            events = await self.store.read_all(after=low, limit=self.page)
            if not events:
                break
            await self._apply_page(projections, events)
            if progress is not None:
                progress(min(events[-1].position, target), target)
        await self._create_deferred_indexes()
        return target

    async def catch_up(self, progress: Progress | None = None) -> int:
        """Bring every projection to the current head of the log; returns that position."""
        await self.prepare()
        return await self._run(self.projections, progress)

    async def rebuild(
        self, names: Iterable[str] | None = None, progress: Progress | None = None
    ) -> int:
        """Drop the named projections (all by default) and replay them from the log."""
        chosen = self._named(names)
        async with self.store.projection_transaction() as tx:
            await tx.execute(CHECKPOINT_SCHEMA)
            for projection in chosen:
                await self._reset(tx, projection)
        self._prepared = False
        await self.prepare()
        return await self._run(chosen, progress)

    async def follow(
        self, *, poll_interval: float = 0.5, stop: asyncio.Event | None = None
    ) -> None:
        """Catch up, then apply new events as they are appended, until ``stop`` is set."""
        while stop is None or not stop.is_set():
            head = await self.catch_up()
            await self.store.wait_for_events(head, poll_interval)

    # --- reporting -------------------------------------------------------------------------

    async def status(self) -> list[ProjectionStatus]:
        """Each projection's stored version, checkpoint, the log head and the lag behind it."""
        head, _ = await self.store.head()
        async with self.store.projection_transaction() as tx:
            await tx.execute(CHECKPOINT_SCHEMA)
        stored = await self._stored()
        found = []
        for projection in self.projections:
            version, checkpoint = stored.get(projection.name, (projection.version, 0))
            found.append(
                ProjectionStatus(projection.name, version, checkpoint, head, head - checkpoint)
            )
        return found

    async def registered(self) -> dict[str, tuple[int, int]]:
        """Every projection with a checkpoint in this database: name -> (version, position)."""
        async with self.store.projection_transaction() as tx:
            await tx.execute(CHECKPOINT_SCHEMA)
        return await self._stored()
