"""The event store contract every backend (SQLite, PostgreSQL) implements.

A store knows envelopes, streams, versions, ids and hashes; it knows nothing of domain rules.
Backends must pass ``tests/store/contract.py`` unchanged.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import datetime as dt
import hashlib
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, TypeAlias

from leaderlog._json import Embedded, canonical_bytes, embed, loads
from leaderlog.errors import ConcurrencyError, DuplicateEventError, StoreError
from leaderlog.events import RecordedEvent, format_time

__all__ = [
    "GENESIS_HASH",
    "MAX_POSITION",
    "AppendResult",
    "EventStore",
    "ExpectedVersion",
    "NewEvent",
    "PendingBatch",
    "PlannedRow",
    "ProjectionTransaction",
    "VerifyReport",
    "chain_hash",
    "plan_rows",
    "storable",
]

ExpectedVersion: TypeAlias = int | Literal["no_stream", "any"]
GENESIS_HASH = "0" * 64
# The largest integer both backends can store (SQLite INTEGER, PostgreSQL BIGINT).
MAX_POSITION = 2**63 - 1


def storable(number: int) -> int:
    """A position or limit brought within 0..``MAX_POSITION``.

    No event lies outside that range, so a number beyond it asks for nothing more (and a
    negative limit nothing at all); bound as it is, it would overflow the column type, and
    the two backends would read a negative limit differently.
    """
    return min(max(number, 0), MAX_POSITION)


_NO_META: Mapping[str, Any] = MappingProxyType({})


class NewEvent(NamedTuple):
    """An event to append. ``recorded_at``/``actor`` are only given when moving a log.

    A named tuple rather than a frozen dataclass: one is made per appended event, and a
    frozen dataclass pays for a guarded attribute write per field.
    """

    event_id: uuid.UUID
    stream: str
    type: str
    schema_version: int
    data: Mapping[str, Any]
    meta: Mapping[str, Any] = _NO_META
    recorded_at: dt.datetime | None = None
    actor: str | None = None


@dataclass(frozen=True, slots=True)
class AppendResult:
    """Positions of the batch's events, in order; ``appended`` counts the new ones."""

    positions: tuple[int, ...]
    appended: int

    @property
    def already_present(self) -> int:
        return len(self.positions) - self.appended


@dataclass(frozen=True, slots=True)
class VerifyReport:
    ok: bool
    count: int
    head_position: int
    head_hash: str
    first_bad_position: int | None = None
    problem: str | None = None


def envelope_bytes(
    *,
    position: int,
    stream: str,
    version: int,
    event_id: uuid.UUID,
    type: str,
    schema_version: int,
    data: Mapping[str, Any] | Embedded,
    recorded_at: str,
    actor: str,
    meta: Mapping[str, Any] | Embedded,
) -> bytes:
    return canonical_bytes(
        {
            "position": position,
            "stream": stream,
            "version": version,
            # Serialised as its canonical text, exactly like str(event_id).
            "event_id": event_id,
            "type": type,
            "schema_version": schema_version,
            "data": data,
            "recorded_at": recorded_at,
            "actor": actor,
            "meta": meta,
        }
    )


# Events appended together share their recorded time: parse each distinct stamp once.
_parsed_times: dict[str, dt.datetime] = {}


def _recorded_at(text: str) -> dt.datetime:
    moment = _parsed_times.get(text)
    if moment is None:
        if len(_parsed_times) > 4096:
            _parsed_times.clear()
        moment = _parsed_times[text] = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment


def event_from_row(row: Sequence[Any], event_id: uuid.UUID) -> RecordedEvent:
    """An envelope from a stored row in ``events`` column order (the backends share it).

    Rows were validated on the way in; constructing without validation keeps reads cheap.
    """
    return RecordedEvent.trusted(
        position=row[0],
        event_id=event_id,
        stream=row[2],
        version=row[3],
        type=row[4],
        schema_version=row[5],
        data=loads(row[6]),
        recorded_at=_recorded_at(row[7]),
        actor=row[8],
        meta={} if row[9] == "{}" else loads(row[9]),
        hash=row[10],
    )


def chain_hash(previous: str, envelope: bytes) -> str:
    """sha256 over the previous hash and the event's canonical bytes."""
    return hashlib.sha256(previous.encode("ascii") + envelope).hexdigest()


def recorded_hash(previous: str, event: RecordedEvent) -> str:
    return chain_hash(
        previous,
        envelope_bytes(
            position=event.position,
            stream=event.stream,
            version=event.version,
            event_id=event.event_id,
            type=event.type,
            schema_version=event.schema_version,
            data=event.data,
            recorded_at=format_time(event.recorded_at),
            actor=event.actor,
            meta=event.meta,
        ),
    )


@dataclass(slots=True)
class PendingBatch:
    """One batch as planned inside a write transaction (shared by the backends)."""

    events: Sequence[NewEvent]
    expected: Mapping[str, ExpectedVersion]
    actor: str


class PlannedRow(NamedTuple):
    """One event to insert, its data and meta already as canonical JSON text (encoded once)."""

    position: int
    stream: str
    version: int
    event_id: uuid.UUID
    type: str
    schema_version: int
    data_json: str
    recorded_at: str
    actor: str
    meta_json: str
    hash: str


_EMPTY_META = canonical_bytes({})


def plan_rows(
    batches: Sequence[PendingBatch],
    stream_versions: Mapping[str, int],
    existing: Mapping[uuid.UUID, tuple[int, str, str, bytes]],
    head_position: int,
    head_hash: str,
    now: dt.datetime,
) -> tuple[list[AppendResult | StoreError], list[PlannedRow]]:
    """Check each batch in order against the stored state and lay out the rows to insert.

    ``existing`` maps already stored event ids to (position, stream, type, canonical data).
    A batch that fails is left out whole; later batches see the state without it.
    """
    versions = dict(stream_versions)
    # Keyed by the id's integer: hashing a UUID object runs Python code, an int's does not.
    known = {event_id.int: stored for event_id, stored in existing.items()}
    outcomes: list[AppendResult | StoreError] = []
    rows: list[PlannedRow] = []
    position, previous = head_position, head_hash
    recorded_at = format_time(now)

    for batch in batches:
        try:
            plan = _plan_one(batch, versions, known, position)
        except StoreError as error:
            outcomes.append(error)
            continue
        positions: list[int] = []
        appended = 0
        for event, data_json, known_position in plan:
            if known_position is not None:
                positions.append(known_position)
                continue
            position += 1
            appended += 1
            stream = event.stream
            version = versions.get(stream, 0) + 1
            versions[stream] = version
            stamp = format_time(event.recorded_at) if event.recorded_at else recorded_at
            actor = event.actor or batch.actor
            meta_json = canonical_bytes(event.meta) if event.meta else _EMPTY_META
            envelope = envelope_bytes(
                position=position,
                stream=stream,
                version=version,
                event_id=event.event_id,
                type=event.type,
                schema_version=event.schema_version,
                data=embed(data_json),
                recorded_at=stamp,
                actor=actor,
                meta=embed(meta_json),
            )
            previous = chain_hash(previous, envelope)
            rows.append(
                PlannedRow(
                    position,
                    stream,
                    version,
                    event.event_id,
                    event.type,
                    event.schema_version,
                    data_json.decode(),
                    stamp,
                    actor,
                    meta_json.decode(),
                    previous,
                )
            )
            known[event.event_id.int] = (position, stream, event.type, data_json)
            positions.append(position)
        outcomes.append(AppendResult(tuple(positions), appended))
    return outcomes, rows


def _plan_one(
    batch: PendingBatch,
    versions: Mapping[str, int],
    known: Mapping[int, tuple[int, str, str, bytes]],
    head_position: int,
) -> list[tuple[NewEvent, bytes, int | None]]:
    """Each event with its canonical data and, if it is already stored, its position."""
    plan: list[tuple[NewEvent, bytes, int | None]] = []
    seen_in_batch: set[int] = set()
    streams_with_new_events: set[str] = set()
    for event in batch.events:
        key = event.event_id.int
        if key in seen_in_batch:
            raise DuplicateEventError(event.event_id, head_position)
        seen_in_batch.add(key)
        data_json = canonical_bytes(event.data)
        stored = known.get(key)
        if stored is None:
            plan.append((event, data_json, None))
            streams_with_new_events.add(event.stream)
            continue
        stored_position, stream, event_type, data = stored
        if (stream, event_type, data) != (event.stream, event.type, data_json):
            raise DuplicateEventError(event.event_id, stored_position)
        plan.append((event, data_json, stored_position))
    # An idempotent retry of a batch whose events are all stored must succeed even though
    # the stream has moved on, so versions are only checked where something is appended.
    for stream, expected in batch.expected.items():
        if stream not in streams_with_new_events or expected == "any":
            continue
        actual = versions.get(stream)
        if expected == "no_stream":
            if actual is not None:
                raise ConcurrencyError(stream, expected, actual)
        elif actual != expected and not (expected == 0 and actual is None):
            raise ConcurrencyError(stream, expected, actual)
    return plan


class ProjectionTransaction(abc.ABC):
    """Projection writes and the checkpoint, committed together or not at all.

    SQL uses ``?`` placeholders; backends translate to their own paramstyle.
    """

    @abc.abstractmethod
    async def execute(self, sql: str, parameters: Sequence[Any] = ()) -> None: ...

    @abc.abstractmethod
    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...

    @abc.abstractmethod
    async def fetchall(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...


class EventStore(abc.ABC):
    """An append-only log of events in streams, with a global, gap-free position."""

    dialect: str

    def __init__(self) -> None:
        self._appended = asyncio.Condition()
        # A commit landing between a follower's read and its wait must still wake it.
        self._committed_head = 0

    # --- writing ---------------------------------------------------------------------------

    async def append(
        self,
        events: Sequence[NewEvent],
        *,
        expected: Mapping[str, ExpectedVersion] | None = None,
        actor: str,
    ) -> AppendResult:
        """Append one atomic batch (it may span streams). Raises on conflict."""
        (outcome,) = await self.append_batches([PendingBatch(events, expected or {}, actor)])
        if isinstance(outcome, StoreError):
            raise outcome
        return outcome

    @abc.abstractmethod
    async def append_batches(
        self, batches: Sequence[PendingBatch]
    ) -> list[AppendResult | StoreError]:
        """Group commit: each batch is checked and applied on its own, all in one transaction.

        A failed batch leaves no trace; the others are still written.
        """

    # --- reading ---------------------------------------------------------------------------

    @abc.abstractmethod
    async def read_all(self, after: int = 0, limit: int | None = None) -> list[RecordedEvent]: ...

    @abc.abstractmethod
    async def read_streams(self, streams: Sequence[str]) -> dict[str, list[RecordedEvent]]:
        """Every event of each named stream, in version order (missing streams are absent)."""

    async def read_stream(self, stream: str) -> list[RecordedEvent]:
        return (await self.read_streams([stream])).get(stream, [])

    @abc.abstractmethod
    async def find_event_ids(self, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, RecordedEvent]: ...

    async def get(self, position: int) -> RecordedEvent | None:
        found = await self.read_all(after=position - 1, limit=1)
        return found[0] if found and found[0].position == position else None

    @abc.abstractmethod
    async def head(self) -> tuple[int, str]:
        """The last position and its hash (0 and the genesis hash when empty)."""

    async def iterate(self, after: int = 0, page: int = 2000) -> AsyncIterator[RecordedEvent]:
        while True:
            events = await self.read_all(after=after, limit=page)
            for event in events:
                yield event
            if len(events) < page:
                return
            after = events[-1].position

    # --- following -------------------------------------------------------------------------

    async def _notify_appended(self, head: int) -> None:
        self._committed_head = max(self._committed_head, head)
        async with self._appended:
            self._appended.notify_all()

    async def wait_for_events(self, after: int, timeout: float) -> None:
        """Return once the head passes ``after`` or ``timeout`` elapses.

        Commits in this process wake waiters at once; other writers are seen by polling
        (and, on PostgreSQL, by LISTEN/NOTIFY).
        """
        if self._committed_head > after:
            return
        async with self._appended:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._appended.wait(), timeout)

    async def subscribe(
        self, after: int = 0, *, poll_interval: float = 0.5, page: int = 1000
    ) -> AsyncIterator[RecordedEvent]:
        """Pull events from a checkpoint forever; a notification only wakes the reader."""
        while True:
            events = await self.read_all(after=after, limit=page)
            for event in events:
                yield event
            if events:
                after = events[-1].position
                continue
            await self.wait_for_events(after, poll_interval)

    # --- integrity ------------------------------------------------------------------------

    async def verify(self) -> VerifyReport:
        """Recompute the hash chain and check positions and versions are gap-free."""
        previous, count, expected_position = GENESIS_HASH, 0, 1
        versions: dict[str, int] = {}
        async for event in self.iterate():
            problem = None
            if event.position != expected_position:
                problem = f"position {expected_position} is missing"
                bad = expected_position
            elif event.version != versions.get(event.stream, 0) + 1:
                problem = f"stream {event.stream} version {event.version} is out of order"
                bad = event.position
            elif recorded_hash(previous, event) != event.hash:
                problem = "hash does not match the event's content and the previous hash"
                bad = event.position
            if problem:
                return VerifyReport(False, count, event.position, event.hash, bad, problem)
            versions[event.stream] = event.version
            previous, count, expected_position = event.hash, count + 1, expected_position + 1
        return VerifyReport(True, count, expected_position - 1, previous)

    @abc.abstractmethod
    async def count(self) -> int: ...

    # --- projections -----------------------------------------------------------------------

    @abc.abstractmethod
    def projection_transaction(self) -> Any:
        """An async context manager yielding a :class:`ProjectionTransaction`."""

    @abc.abstractmethod
    async def query(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Read projection tables (``?`` placeholders)."""

    # --- lifecycle -------------------------------------------------------------------------

    @abc.abstractmethod
    async def close(self) -> None: ...

    async def __aenter__(self) -> EventStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
