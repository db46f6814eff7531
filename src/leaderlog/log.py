"""The library API for writing: records in, domain rules checked, events appended.

:class:`EventLog` keeps a partial, in-memory fold of the log (the :mod:`leaderlog.domain`
state of every stream it has looked at) so rules cost no queries in the common case. It is
kept honest two ways: before each group of appends it reads whatever other writers committed,
and every append carries the exact stream versions its decision was based on, so a decision
made on stale state is refused by the store and decided again.

Concurrent callers are batched into one transaction (group commit); each caller's batch still
succeeds or fails on its own.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from leaderlog._json import JSONDecodeError, canonical_bytes, loads
from leaderlog.domain import EntityState, MissingKnowledge, decide, evolve, referenced_streams
from leaderlog.errors import (
    BatchError,
    ConcurrencyError,
    DomainError,
    DuplicateEventError,
    RecordError,
    StoreError,
)
from leaderlog.events import (
    Event,
    ExpectedVersion,
    Record,
    RecordedEvent,
    content_event_id,
    new_event_id,
    parse_record,
)
from leaderlog.store import EventStore, NewEvent, PendingBatch, open_store

__all__ = ["AppendOutcome", "EventLog", "parse_lines"]

MAX_LINE_BYTES = 64 * 1024
_GROUP_LIMIT = 1000
_CACHE_LIMIT = 500_000
_RETRIES = 5


@dataclass(frozen=True, slots=True)
class AppendOutcome:
    """What an append did: one position per record, and how many were new."""

    positions: tuple[int, ...]
    appended: int

    @property
    def already_present(self) -> int:
        return len(self.positions) - self.appended


@dataclass(eq=False, slots=True)
class _Request:
    records: Sequence[Record]
    labels: Sequence[str]
    actor: str
    future: asyncio.Future[AppendOutcome]
    ids_are_fresh: bool
    attempts: int = 0


@dataclass(slots=True)
class _Decision:
    """A request's events and the stream states they lead to, before commit."""

    new_events: list[NewEvent] = field(default_factory=list)
    expected: dict[str, ExpectedVersion] = field(default_factory=dict)
    states: dict[str, EntityState] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)
    known_positions: dict[int, int] = field(default_factory=dict)


class _LayeredKnowledge:
    """The request's own uncommitted decisions, then its group's, then the cache."""

    __slots__ = ("_cache", "_group", "_request")

    def __init__(
        self,
        request: Mapping[str, EntityState],
        group: Mapping[str, EntityState],
        cache: Mapping[str, EntityState | None],
    ) -> None:
        self._request = request
        self._group = group
        self._cache = cache

    def state(self, stream: str) -> EntityState | None:
        # Asked several times per record: plain membership tests, no loops.
        if stream in self._request:
            return self._request[stream]
        if stream in self._group:
            return self._group[stream]
        if stream in self._cache:
            return self._cache[stream]
        raise MissingKnowledge({stream})


def _answer(future: asyncio.Future[AppendOutcome], answer: AppendOutcome | BaseException) -> None:
    """Answer a caller, unless it stopped waiting (setting a cancelled future raises)."""
    if future.done():
        return
    if isinstance(answer, BaseException):
        future.set_exception(answer)
    else:
        future.set_result(answer)


def parse_lines(lines: Iterable[str | bytes]) -> tuple[list[Record], list[str]]:
    """Parse JSON Lines into records; every problem names its line. Blank lines are skipped."""
    records: list[Record] = []
    labels: list[str] = []
    problems: list[RecordError] = []
    for number, line in enumerate(lines, start=1):
        where = f"line {number}"
        if len(line) > MAX_LINE_BYTES:
            problems.append(
                RecordError(
                    f"record is larger than {MAX_LINE_BYTES} bytes", where=where, rule="size"
                )
            )
            continue
        if not line.strip():
            continue
        try:
            raw = loads(line)
        except (JSONDecodeError, UnicodeDecodeError) as error:
            problems.append(RecordError(f"not valid JSON ({error})", where=where, rule="json"))
            continue
        try:
            records.append(parse_record(raw))
            labels.append(where)
        except RecordError as error:
            problems.append(error.located(where))
    if problems:
        raise BatchError(problems)
    return records, labels


class EventLog:
    """Append records (rules enforced) and read the log. One instance per process and store."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._states: dict[str, EntityState | None] = {}
        self._versions: dict[str, int] = {}
        self._known_head = 0
        self._queue: list[_Request] = []
        self._writer: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, url: str | None = None) -> EventLog:
        return cls(await open_store(url))

    async def close(self) -> None:
        if self._writer is not None:
            await asyncio.shield(self._writer)
        await self.store.close()

    async def __aenter__(self) -> EventLog:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # --- appending -------------------------------------------------------------------------

    async def append_events(
        self,
        events: Sequence[Event],
        *,
        actor: str,
        expected_version: ExpectedVersion | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> AppendOutcome:
        """Append events as one atomic batch with fresh, time-ordered ids."""
        records = [
            Record(
                event=event,
                event_id=new_event_id(),
                expected_version=expected_version if index == 0 else None,
                meta=dict(meta or {}),
            )
            for index, event in enumerate(events)
        ]
        return await self._submit(records, None, actor, ids_are_fresh=True)

    async def append_records(
        self, records: Sequence[Record], *, actor: str, labels: Sequence[str] | None = None
    ) -> AppendOutcome:
        """Append validated records as one atomic batch (idempotent on their event ids)."""
        return await self._submit(records, labels, actor, ids_are_fresh=False)

    async def append_raw(self, raw: object, *, actor: str) -> AppendOutcome:
        """Validate one JSON record, or a list of them, and append them as one batch."""
        items = raw if isinstance(raw, list) else [raw]
        records: list[Record] = []
        problems: list[RecordError] = []
        for index, item in enumerate(items):
            try:
                records.append(parse_record(item))
            except RecordError as error:
                problems.append(error.located(f"record {index}"))
        if problems:
            raise BatchError(problems)
        if not records:
            raise BatchError([RecordError("no records given", where="record 0", rule="schema")])
        labels = [f"record {index}" for index in range(len(records))]
        return await self.append_records(records, actor=actor, labels=labels)

    async def import_lines(self, lines: Iterable[str | bytes], *, actor: str) -> AppendOutcome:
        """Check every JSON line, then append them all as one batch, or none of them."""
        records, labels = parse_lines(lines)
        if not records:
            return AppendOutcome((), 0)
        return await self.append_records(records, actor=actor, labels=labels)

    async def import_file(self, path: Path, *, actor: str) -> AppendOutcome:
        with path.open("rb") as handle:
            return await self.import_lines(handle, actor=actor)

    async def _submit(
        self,
        records: Sequence[Record],
        labels: Sequence[str] | None,
        actor: str,
        *,
        ids_are_fresh: bool,
    ) -> AppendOutcome:
        if not records:
            return AppendOutcome((), 0)
        future: asyncio.Future[AppendOutcome] = asyncio.get_running_loop().create_future()
        labels = labels or [f"record {index}" for index in range(len(records))]
        self._queue.append(_Request(records, labels, actor, future, ids_are_fresh))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        while self._queue:
            group, self._queue = self._queue[:_GROUP_LIMIT], self._queue[_GROUP_LIMIT:]
            try:
                retry = await self._commit_group(group)
            except BaseException as error:
                # The cache may no longer match the store; start again from nothing.
                self._forget()
                for request in group:
                    if not request.future.done():
                        request.future.set_exception(
                            error if isinstance(error, Exception) else StoreError(str(error))
                        )
                if not isinstance(error, Exception):
                    raise
                continue
            self._queue[:0] = retry

    def _forget(self) -> None:
        self._states.clear()
        self._versions.clear()
        self._known_head = 0

    # --- the group commit ------------------------------------------------------------------

    async def _catch_up(self) -> None:
        head, _ = await self.store.head()
        if head < self._known_head:
            self._forget()
        if head == self._known_head:
            return
        if self._known_head == 0 or head - self._known_head > 10_000:
            # Cheaper to reload lazily than to replay a long stretch of foreign writes.
            self._forget()
            self._known_head = head
            return
        for recorded in await self.store.read_all(after=self._known_head):
            self._observe(recorded)
        self._known_head = head

    def _observe(self, recorded: RecordedEvent) -> None:
        stream = recorded.stream
        if stream not in self._states:
            return
        if recorded.version <= self._versions.get(stream, 0):
            return
        self._states[stream] = evolve(self._states[stream], recorded.event())
        self._versions[stream] = recorded.version

    async def _load(self, streams: set[str]) -> None:
        if len(self._states) > _CACHE_LIMIT:
            self._states.clear()
            self._versions.clear()
        loaded = await self.store.read_streams(sorted(streams))
        for stream in streams:
            state: EntityState | None = None
            version = 0
            for recorded in loaded.get(stream, []):
                state = evolve(state, recorded.event())
                version = recorded.version
            self._states[stream] = state
            self._versions[stream] = version

    async def _commit_group(self, group: list[_Request]) -> list[_Request]:
        await self._catch_up()
        needed = {
            stream
            for request in group
            for record in request.records
            for stream in referenced_streams(record.event)
        } - self._states.keys()
        if needed:
            await self._load(needed)

        stored: dict[uuid.UUID, RecordedEvent] = {}
        ids = [r.event_id for req in group if not req.ids_are_fresh for r in req.records]
        if ids:
            stored = await self.store.find_event_ids(ids)

        group_states: dict[str, EntityState] = {}
        group_versions: dict[str, int] = {}
        group_ids: set[uuid.UUID] = set()
        decided: list[tuple[_Request, _Decision]] = []
        deferred: list[_Request] = []
        for request in group:
            if not request.ids_are_fresh and any(r.event_id in group_ids for r in request.records):
                # An earlier request of this group appends these ids (the same file imported
                # twice at once): once it has committed, they are found stored and this
                # request is answered idempotently instead of breaking the unique rule.
                deferred.append(request)
                continue
            try:
                decision = await self._decide(request, stored, group_states, group_versions)
            except (BatchError, StoreError) as error:
                _answer(request.future, error)
                continue
            group_states.update(decision.states)
            group_versions.update(decision.versions)
            group_ids.update(event.event_id for event in decision.new_events)
            decided.append((request, decision))

        outcomes = await self.store.append_batches(
            [PendingBatch(d.new_events, d.expected, r.actor) for r, d in decided]
        )
        retry: list[_Request] = []
        appended_positions: list[int] = []
        for (request, decision), outcome in zip(decided, outcomes, strict=True):
            if isinstance(outcome, ConcurrencyError) and request.attempts < _RETRIES:
                # Decided on state another writer has since changed: reload and decide again.
                for stream in decision.expected:
                    self._states.pop(stream, None)
                    self._versions.pop(stream, None)
                request.attempts += 1
                retry.append(request)
                continue
            if isinstance(outcome, StoreError):
                _answer(request.future, outcome)
                continue
            self._states.update(decision.states)
            self._versions.update(decision.versions)
            # The store saw only the records not already known, in order.
            positions = outcome.positions
            if decision.known_positions:
                new_positions = iter(positions)
                positions = tuple(
                    decision.known_positions.get(index) or next(new_positions)
                    for index in range(len(request.records))
                )
            appended_positions.extend(outcome.positions)
            _answer(request.future, AppendOutcome(positions, outcome.appended))
        if appended_positions and min(appended_positions) == self._known_head + 1 and not retry:
            self._known_head = max(appended_positions)
        waiting = {*retry, *deferred}
        return [request for request in group if request in waiting]

    async def _decide(
        self,
        request: _Request,
        stored: Mapping[uuid.UUID, RecordedEvent],
        group_states: Mapping[str, EntityState],
        group_versions: Mapping[str, int],
    ) -> _Decision:
        decision = _Decision()
        knowledge = _LayeredKnowledge(decision.states, group_states, self._states)
        problems: list[RecordError] = []
        first_use: dict[uuid.UUID, str] = {}
        for index, (record, label) in enumerate(zip(request.records, request.labels, strict=True)):
            if record.event_id in first_use:
                used_by = first_use[record.event_id]
                problems.append(
                    RecordError(
                        f"event id {record.event_id} is already used by {used_by}",
                        where=label,
                        rule="event_id",
                    )
                )
                continue
            first_use[record.event_id] = label
            previous = stored.get(record.event_id)
            if previous is not None:
                event = record.event
                if (previous.stream, previous.type, canonical_bytes(previous.data)) != (
                    event.stream(),
                    event.type,
                    canonical_bytes(event.data()),
                ):
                    raise DuplicateEventError(record.event_id, previous.position)
                decision.known_positions[index] = previous.position
                continue
            while True:
                try:
                    events = decide(record.event, knowledge)
                    break
                except MissingKnowledge as missing:
                    await self._load(missing.streams)
                except DomainError as error:
                    problems.append(error.located(label))
                    events = []
                    break
            for event in events:
                stream = event.stream()
                version = decision.versions.get(
                    stream, group_versions.get(stream, self._versions.get(stream, 0))
                )
                if stream not in decision.expected:
                    self._check_expected(record, stream, version, label)
                    decision.expected[stream] = version if version else "no_stream"
                decision.states[stream] = evolve(knowledge.state(stream), event)
                decision.versions[stream] = version + 1
                decision.new_events.append(
                    NewEvent(
                        event_id=record.event_id
                        if event is record.event
                        else content_event_id(event),
                        stream=stream,
                        type=event.type,
                        schema_version=event.schema_version,
                        data=event.data(),
                        meta=record.meta,
                        recorded_at=record.recorded_at,
                        actor=record.actor,
                    )
                )
        if problems:
            raise BatchError(problems)
        return decision

    @staticmethod
    def _check_expected(record: Record, stream: str, actual: int, label: str) -> None:
        expected = record.expected_version
        if expected is None or expected == "any":
            return
        wanted = 0 if expected == "no_stream" else expected
        if wanted != actual:
            raise ConcurrencyError(stream, expected, actual or None, where=label)

    # --- reading ---------------------------------------------------------------------------

    async def events(self, after: int = 0, limit: int | None = None) -> list[RecordedEvent]:
        return await self.store.read_all(after=after, limit=limit)


def seed_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.jsonl"))


async def load_seeds(
    log: EventLog, directory: Path, *, on_file: Callable[[Path, AppendOutcome], None] | None = None
) -> AppendOutcome:
    """Import every ``*.jsonl`` file of a seeds folder, in name order, as actor ``seed``."""
    positions: list[int] = []
    appended = 0
    for path in seed_files(directory):
        outcome = await log.import_file(path, actor="seed")
        positions.extend(outcome.positions)
        appended += outcome.appended
        if on_file:
            on_file(path, outcome)
    return AppendOutcome(tuple(positions), appended)
