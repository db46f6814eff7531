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
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, NamedTuple, TypeAlias

from leaderlog._json import Embedded, canonical_bytes, embed, loads
from leaderlog.errors import (
    ConcurrencyError,
    DuplicateEventError,
    RecordedAtRefused,
    StoreError,
    StoreUnavailable,
    UnreadableEvent,
)
from leaderlog.events import NO_META, RecordedEvent, excerpt, format_time

__all__ = [
    "CLOSED",
    "FOREIGN_KEYS_QUERY",
    "FUTURE_SLACK",
    "GENESIS_HASH",
    "MAX_POSITION",
    "TABLES_QUERY",
    "AppendGuard",
    "AppendResult",
    "EventStore",
    "ExpectedVersion",
    "NewEvent",
    "PendingBatch",
    "PlannedRow",
    "ProjectionTransaction",
    "SQLValue",
    "StoredText",
    "VerifyReport",
    "WriteProgress",
    "WriteProgressReporter",
    "call_progress",
    "chain_hash",
    "checked_store",
    "plan_rows",
    "storable",
]

ExpectedVersion: TypeAlias = int | Literal["no_stream", "any"]
GENESIS_HASH = "0" * 64
# Every table of the database the log and the projections live in, by dialect.
TABLES_QUERY = {
    "sqlite": "SELECT name FROM sqlite_master WHERE type = 'table'",
    "postgresql": "SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()",
}

# Every foreign key among those tables: (the table that has it, the table it refers to).
FOREIGN_KEYS_QUERY = {
    "sqlite": 'SELECT m.name, f."table" FROM sqlite_master AS m, '
    "pragma_foreign_key_list(m.name) AS f WHERE m.type = 'table'",
    "postgresql": "SELECT r.relname, f.relname FROM pg_constraint AS c "
    "JOIN pg_class AS r ON r.oid = c.conrelid JOIN pg_class AS f ON f.oid = c.confrelid "
    # Compared by name: ::regnamespace would read current_schema() as SQL, folding a
    # schema named "LeaderLog" (a role's own, on the default search_path) to leaderlog.
    "WHERE c.contype = 'f' AND r.relnamespace = "
    "(SELECT n.oid FROM pg_namespace AS n WHERE n.nspname = current_schema())",
}

# What every backend says of work asked of a store once it is closed: one message for one
# situation, not an outage worth waiting out.
CLOSED = "the store is closed"

# The largest integer both backends can store (SQLite INTEGER, PostgreSQL BIGINT).
MAX_POSITION = 2**63 - 1


def storable(number: int) -> int:
    """A position or limit brought within 0..``MAX_POSITION``.

    No event lies outside that range, so a number beyond it asks for nothing more (and a
    negative limit nothing at all); bound as it is, it would overflow the column type, and
    the two backends would read a negative limit differently.
    """
    if not isinstance(number, int) or isinstance(number, bool):
        # None, 1.5 or "3" would fail deep inside a comparison, or be read as another number.
        raise TypeError(f"a position or limit must be a whole number, got {number!r:.80}")
    return min(max(number, 0), MAX_POSITION)


WriteProgress: TypeAlias = Callable[[int, int], None]
"""Called with (steps done, steps in all) while a store writes a group of batches: two
steps per event, one as its row is chained and one as it is inserted."""

# Events laid out or inserted between two reports of a WriteProgress.
PROGRESS_STEP = 10_000


class WriteProgressReporter:
    """Hands a store's progress to the caller's :data:`WriteProgress` on the event loop's
    thread (a SQLite store writes on a thread of its own), never going backwards: a store
    that lays its rows out again (to look up stored ids) starts counting again. A callback
    that raises goes to the loop's exception handler and is not called again."""

    def __init__(
        self,
        progress: WriteProgress,
        batches: Sequence[PendingBatch],
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self._progress = progress
        self._loop = loop
        self._done = 0
        self._failed = False
        self.total = 2 * sum(len(batch.events) for batch in batches)

    def planned(self, rows: int) -> None:
        self._report(rows)

    def inserted(self, rows: int, of_rows: int) -> None:
        # Fewer rows than events when some were stored already or their batch was refused:
        # the second half of the steps is shared out among the rows there are.
        # The last step is left to finished(), after the commit.
        half = self.total // 2
        self._report(min(half + (half * rows // of_rows if of_rows else half), self.total - 1))

    def finished(self, outcomes: Sequence[AppendResult | StoreError]) -> None:
        """Every step done, once the rows are committed, unless every batch was refused
        (a bar would show a refused group written whole)."""
        if any(isinstance(outcome, AppendResult) for outcome in outcomes):
            self._report(self.total)

    def _report(self, done: int) -> None:
        if done <= self._done:
            return
        self._done = done
        if self._loop is None:
            self._call(done)
        else:
            self._loop.call_soon_threadsafe(self._call, done)

    def _call(self, done: int) -> None:
        if self._failed:
            return
        # Set while it runs: an interrupt it raises (which call_progress lets through) would
        # otherwise be raised again by each report already scheduled, while the program
        # shuts down.
        self._failed = True
        self._failed = not call_progress(self._progress, done, self.total)


def call_progress(callback: Callable[..., None], *arguments: object) -> bool:
    """Call a caller's progress callback; False when it raised. Its error goes to the event
    loop's exception handler: a broken progress bar is no reason to fail a write."""
    try:
        callback(*arguments)
    except (Exception, asyncio.CancelledError) as error:
        asyncio.get_running_loop().call_exception_handler(
            {"message": "a progress callback failed", "exception": error}
        )
        return False
    return True


# How far ahead of the store's clock a given recorded time may be (another server's clock).
FUTURE_SLACK = dt.timedelta(minutes=5)


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
    meta: Mapping[str, Any] = NO_META
    recorded_at: dt.datetime | None = None
    actor: str | None = None
    # canonical_bytes(data), when the writer has it already (it measured the record).
    data_json: bytes | None = None
    # The hash an export gave it: see plan_rows.
    exported_hash: str | None = None


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
    """``count`` events verified, the last of them at ``head_position`` with ``head_hash``
    (the log's head when ``ok``; otherwise the last event before ``first_bad_position``)."""

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


def _four_digit_year(text: str) -> str:
    """Earlier versions stored a year before 1000 with fewer digits ("999-01-01T..."): such
    a row still reads (its hash covers the text as stored)."""
    year, dash, rest = text.partition("-")
    return f"{year:0>4}{dash}{rest}" if dash and len(year) < 4 and year.isdigit() else text


def _recorded_at(text: str) -> dt.datetime:
    moment = _parsed_times.get(text)
    if moment is None:
        moment = dt.datetime.fromisoformat(_four_digit_year(text).replace("Z", "+00:00"))
        if moment.utcoffset() is None:
            raise ValueError(f"recorded_at {text!r} has no UTC offset")
        # What the hash covers is the time in UTC: one that cannot be moved there is unusable.
        moment.astimezone(dt.UTC)
        if len(_parsed_times) > 4096:
            _parsed_times.clear()
        _parsed_times[text] = moment
    return moment


def _stored_time(text: object) -> dt.datetime | None:
    """A stored recorded_at as a time, or None when the row was edited into something else."""
    try:
        return _recorded_at(text) if isinstance(text, str) else None
    except (ValueError, OverflowError):
        return None


def event_from_row(row: Sequence[Any], event_id: uuid.UUID) -> RecordedEvent:
    """An envelope from a stored row in ``events`` column order (the backends share it).

    Rows were validated on the way in; constructing without validation keeps reads cheap.
    Only what a row edited behind the store's back would break far from its cause is
    checked (data and meta are JSON objects, recorded_at is a time with an offset): such a
    row raises :class:`UnreadableEvent`, naming its position.
    """
    try:
        data = loads(row[6])
        meta = {} if row[9] == "{}" else loads(row[9])
        recorded_at = _recorded_at(row[7])
    except (ValueError, TypeError, OverflowError) as error:
        raise unreadable(row, _why_unreadable(row)) from error
    if type(data) is not dict or type(meta) is not dict:
        raise unreadable(row, _why_unreadable(row))
    return RecordedEvent.trusted(
        position=row[0],
        event_id=event_id,
        stream=row[2],
        version=row[3],
        type=row[4],
        schema_version=row[5],
        data=data,
        recorded_at=recorded_at,
        actor=row[8],
        meta=meta,
        hash=row[10],
    )


def unreadable(row: Sequence[Any], reason: str) -> UnreadableEvent:
    """The error for a stored row (in ``events`` column order) that cannot be decoded."""
    return UnreadableEvent(row[0], reason, row[10] if isinstance(row[10], str) else "")


def _why_unreadable(row: Sequence[Any]) -> str:
    """Which column of a row event_from_row refused, and why (only run once it has)."""
    for column, index in (("data", 6), ("meta", 9)):
        try:
            value = loads(row[index])
        except (ValueError, TypeError) as error:
            return f"{column} {excerpt(row[index])} is not valid JSON ({error})"
        if type(value) is not dict:
            return f"{column} {excerpt(row[index])} is not a JSON object"
    try:
        _recorded_at(row[7])
    except (ValueError, TypeError, OverflowError) as error:
        return f"recorded_at {excerpt(row[7])} is not a time with a UTC offset ({error})"
    return "its columns do not hold an event"


def chain_hash(previous: str, envelope: bytes) -> str:
    """sha256 over the previous hash and the event's canonical bytes."""
    return hashlib.sha256(previous.encode("ascii") + envelope).hexdigest()


class StoredText(NamedTuple):
    """An event's data, meta and recorded_at exactly as stored: the bytes its hash covers
    (appends store the canonical text they hashed), so any edit to them shows, even one
    that would read back as the same values."""

    data: str
    meta: str
    recorded_at: str


def recorded_hash(previous: str, event: RecordedEvent, stored: StoredText | None = None) -> str:
    """The chain hash of ``event``: of its canonical form, or of its text as ``stored``."""
    if stored is None:
        stored = StoredText(
            canonical_bytes(event.data).decode(),
            canonical_bytes(event.meta).decode(),
            format_time(event.recorded_at),
        )
    for column, value in zip(StoredText._fields, stored, strict=True):
        if not isinstance(value, str):  # SQLite keeps whatever a column is given
            raise TypeError(f"{column} is stored as {type(value).__name__}, not text")
    return chain_hash(
        previous,
        envelope_bytes(
            position=event.position,
            stream=event.stream,
            version=event.version,
            event_id=event.event_id,
            type=event.type,
            schema_version=event.schema_version,
            data=embed(stored.data.encode()),
            recorded_at=stored.recorded_at,
            actor=event.actor,
            meta=embed(stored.meta.encode()),
        ),
    )


class AppendGuard(NamedTuple):
    """A query an append runs in its transaction, under the lock every writer takes: a row
    found refuses the batch with ``refusal(rows)``, and nothing of it is written."""

    sql: str
    parameters: tuple[Any, ...]
    refusal: Callable[[list[tuple[Any, ...]]], StoreError]

    def refused(self, rows: Sequence[Iterable[Any]]) -> StoreError | None:
        """The refusal the rows the query found make, None when it found none."""
        return self.refusal([tuple(row) for row in rows]) if rows else None


@dataclass(slots=True)
class PendingBatch:
    """One batch as planned inside a write transaction (shared by the backends).

    ``expected`` holds the versions its own streams must be at; ``depends`` those of other
    streams its decision read (an organisation's ancestors, say), which must not have moved
    either when it appends anything.
    """

    events: Sequence[NewEvent]
    expected: Mapping[str, ExpectedVersion]
    actor: str
    depends: Mapping[str, ExpectedVersion] = field(default_factory=dict)
    guard: AppendGuard | None = None


def batch_streams(batches: Sequence[PendingBatch]) -> list[str]:
    """Every stream whose version planning the batches needs: written, expected at a version
    or depended on."""
    streams = {event.stream for batch in batches for event in batch.events}
    for batch in batches:
        streams.update(batch.expected)
        streams.update(batch.depends)
    return sorted(streams)


class PlannedRow(NamedTuple):
    """One event to insert, its data and meta already as canonical JSON (encoded once).

    They stay UTF-8 bytes, shared with the event, until a chunk of rows is inserted: text
    made for every row up front would hold a large import's payloads twice.
    """

    position: int
    stream: str
    version: int
    event_id: uuid.UUID
    type: str
    schema_version: int
    data_json: bytes
    recorded_at: str
    actor: str
    meta_json: bytes
    hash: str


_EMPTY_META = canonical_bytes({})


# The recorded times of a plan so far: the last event's time (None in an empty log, or when
# the stored one cannot be read) and whether it is the stored head's; the time (and its
# text) given to events that bring none.
_Times: TypeAlias = tuple[dt.datetime | None, bool, dt.datetime, str]


class _Clock:
    """Where a plan's recorded times stand; a given time must lie in [last, ``latest``]."""

    __slots__ = ("latest", "now", "times")

    def __init__(self, now: dt.datetime, head_recorded_at: str | None) -> None:
        head = _stored_time(head_recorded_at)
        self.now = now
        self.latest = now + FUTURE_SLACK
        # A clock that went backwards (or another server's that runs behind) stamps the
        # head's time instead, so recorded times never go backwards and any export can be
        # imported again. However far: a clock stepped back an hour would otherwise record
        # the next events an hour before the last one, and "known at" a time in that hour
        # would leave out an event the log had already recorded.
        stamp = head if head is not None and now < head else now
        self.times: _Times = (head, True, stamp, format_time(stamp))


def plan_rows(
    batches: Sequence[PendingBatch],
    stream_versions: Mapping[str, int],
    existing: Mapping[uuid.UUID, tuple[int, str, str, bytes]],
    head_position: int,
    head_hash: str,
    now: dt.datetime,
    head_recorded_at: str | None = None,
    guarded: Sequence[StoreError | None] = (),
    reporter: WriteProgressReporter | None = None,
) -> tuple[list[AppendResult | StoreError], list[PlannedRow]]:
    """Check each batch in order against the stored state and lay out the rows to insert.

    ``existing`` maps already stored event ids to (position, stream, type, canonical data).
    ``head_recorded_at`` is the last stored event's recorded_at: a given recorded time may
    not be before it (nor more than :data:`FUTURE_SLACK` after ``now``). ``guarded`` holds,
    per batch, the refusal its guard found (None where it found none, or had none).
    A batch that fails is left out whole; later batches see the state without it.
    ``reporter`` is told how many rows are laid out, every :data:`PROGRESS_STEP`.
    """
    versions = dict(stream_versions)
    # Keyed by the id's integer: hashing a UUID object runs Python code, an int's does not.
    known = {event_id.int: stored for event_id, stored in existing.items()}
    outcomes: list[AppendResult | StoreError] = []
    rows: list[PlannedRow] = []
    position, previous = head_position, head_hash
    clock = _Clock(now, head_recorded_at)

    for index, batch in enumerate(batches):
        later_batches = index < len(batches) - 1
        refusal = guarded[index] if guarded else None
        if refusal is not None:
            outcomes.append(refusal)
            continue
        try:
            stamps, stored_at, times = _plan_one(batch, versions, known, position, clock)
        except StoreError as error:
            outcomes.append(error)
            continue
        # What to undo should the batch be refused half way: it leaves nothing behind (for
        # the later batches, which are all that read them).
        replaced: list[tuple[str, int | None]] = []
        added: list[int] = []
        start_position, start_previous, start_rows = position, previous, len(rows)
        positions: list[int] = []
        appended = 0
        try:
            for number, (event, stamp) in enumerate(zip(batch.events, stamps, strict=True)):
                if stamp is None:
                    positions.append(stored_at[number])
                    continue
                position += 1
                appended += 1
                stream = event.stream
                before = versions.get(stream)
                if later_batches:
                    replaced.append((stream, before))
                version = (before or 0) + 1
                versions[stream] = version
                actor = event.actor or batch.actor
                data_json = event.data_json or canonical_bytes(event.data)
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
                if start_position:  # into an empty log, an import is a move
                    _check_chain(event, position, previous, clock)
                rows.append(
                    PlannedRow(
                        position,
                        stream,
                        version,
                        event.event_id,
                        event.type,
                        event.schema_version,
                        data_json,
                        stamp,
                        actor,
                        meta_json,
                        previous,
                    )
                )
                if later_batches:
                    # Only a later batch can repeat the id (one batch's own are checked
                    # apart): for one large batch, a second map of every row would be waste.
                    known[event.event_id.int] = (position, stream, event.type, data_json)
                    added.append(event.event_id.int)
                positions.append(position)
                if reporter is not None and not len(rows) % PROGRESS_STEP:
                    reporter.planned(len(rows))
        except StoreError as error:
            position, previous = start_position, start_previous
            del rows[start_rows:]
            for key in added:
                del known[key]
            for stream, before in reversed(replaced):
                if before is None:
                    del versions[stream]
                else:
                    versions[stream] = before
            outcomes.append(error)
            continue
        clock.times = times
        outcomes.append(AppendResult(tuple(positions), appended))
    return outcomes, rows


def _plan_one(
    batch: PendingBatch,
    versions: Mapping[str, int],
    known: Mapping[int, tuple[int, str, str, bytes]],
    head_position: int,
    clock: _Clock,
) -> tuple[list[str | None], dict[int, int], _Times]:
    """Each event's recorded time, None if it is already stored; the positions of those, by
    their index in the batch; and the clock's times once the batch is appended."""
    # Mostly one text shared by every event: a pointer an event, not a tuple.
    stamps: list[str | None] = []
    stored_at: dict[int, int] = {}
    seen_in_batch: set[int] = set()
    streams_with_new_events: set[str] = set()
    streams_with_stored_events: set[str] = set()
    last, last_is_head, stamp_time, stamp_text = clock.times
    for number, event in enumerate(batch.events):
        key = event.event_id.int
        if key in seen_in_batch:
            raise DuplicateEventError(event.event_id, head_position)
        seen_in_batch.add(key)
        stored = known.get(key)
        if stored is None:
            given = event.recorded_at
            if given is None:
                stamp, last = stamp_text, stamp_time
            else:
                stamp = _given_time(event.event_id, given, last, last_is_head, clock)
                last = given
                if given > stamp_time:
                    stamp_time, stamp_text = given, stamp
            last_is_head = False
            stamps.append(stamp)
            streams_with_new_events.add(event.stream)
            continue
        stored_position, stream, event_type, data = stored
        data_json = event.data_json or canonical_bytes(event.data)
        if (stream, event_type, data) != (event.stream, event.type, data_json):
            raise DuplicateEventError(event.event_id, stored_position)
        stamps.append(None)
        stored_at[number] = stored_position
        streams_with_stored_events.add(stream)
    # An idempotent retry of a batch whose events are all stored must succeed even though
    # the stream has moved on, so versions are only checked where something is appended; a
    # stream the batch writes nothing to is a guard on what it read, checked all the same.
    for stream, expected in batch.expected.items():
        if stream in streams_with_new_events or (
            streams_with_new_events and stream not in streams_with_stored_events
        ):
            _check_version(stream, expected, versions.get(stream))
    if streams_with_new_events:
        for stream, expected in batch.depends.items():
            _check_version(stream, expected, versions.get(stream))
    return stamps, stored_at, (last, last_is_head, stamp_time, stamp_text)


def _check_chain(event: NewEvent, position: int, computed: str, clock: _Clock) -> None:
    """Refuse a recorded time from the past on an event this log's chain does not hold.

    An import keeps the times of an export, so that a copy recomputes the very same chain.
    Given to any other event, a time already past would make the log say it knew the
    event then: answers "as known at" moments already past (and given) would change. So
    for an event from an export line appended to a log that has events, a time before the
    store's clock is kept only where its exported hash is the one the chain gives it here:
    a copy of more of this very log (a mirror catching up). Into an empty log, an import is
    a move, and keeps its times (:func:`plan_rows` does not ask).
    """
    given, exported = event.recorded_at, event.exported_hash
    if given is None or exported is None or exported == computed:
        return  # a program that moves a log itself (no export line) vouches for its times
    if given >= clock.now:
        return
    raise RecordedAtRefused(
        event.event_id,
        f"recorded_at {format_time(given)} is in the past (the store's clock says "
        f"{format_time(clock.now)}), and the event does not continue this log's own chain at "
        f"position {position} (the hash the export gives it is not the one it gets here): "
        "kept, that time would make this log say it knew the event before it did",
    )


def _check_version(stream: str, expected: ExpectedVersion, actual: int | None) -> None:
    if expected == "any":
        return
    if expected == "no_stream":
        if actual is not None:
            raise ConcurrencyError(stream, expected, actual)
    elif actual != expected and not (expected == 0 and actual is None):
        raise ConcurrencyError(stream, expected, actual)


def _given_time(
    event_id: uuid.UUID,
    given: dt.datetime,
    last: dt.datetime | None,
    last_is_head: bool,
    clock: _Clock,
) -> str:
    """The text of a recorded time an event brings (an import), once it is known to fit.

    "Known at a time" reads the log up to the last event recorded by then, which only
    means something while recorded times follow positions and none lies in the future.
    """
    if given.utcoffset() is None:
        raise RecordedAtRefused(event_id, f"recorded_at {given.isoformat()} has no UTC offset")
    try:
        text = format_time(given)
    except (OverflowError, ValueError):
        raise RecordedAtRefused(
            event_id, f"recorded_at {given.isoformat()} cannot be expressed in UTC"
        ) from None
    if last is not None and given < last:
        before = "the log's last event" if last_is_head else "the event before it"
        raise RecordedAtRefused(
            event_id,
            f"recorded_at {text} is before {before} ({format_time(last)}): "
            "recorded times never go backwards",
        )
    if given > clock.latest:
        minutes = int(FUTURE_SLACK.total_seconds() // 60)
        raise RecordedAtRefused(
            event_id,
            f"recorded_at {text} is more than {minutes} minutes after the store's clock "
            f"({format_time(clock.now)}): recorded times cannot be in the future",
        )
    return text


# What a projection's statement may be given: the values both backends store as they are
# (a time is stored as text: leaderlog.events.format_time).
SQLValue: TypeAlias = int | float | str | bytes | None


class ProjectionTransaction(abc.ABC):
    """Projection writes and the checkpoint, committed together or not at all.

    SQL uses ``?`` placeholders; backends translate to their own paramstyle.
    """

    @abc.abstractmethod
    async def execute(self, sql: str, parameters: Sequence[SQLValue] = ()) -> None:
        """Run one statement with ``?`` placeholders, given ``parameters``."""

    @abc.abstractmethod
    async def executemany(self, sql: str, rows: Sequence[Sequence[SQLValue]]) -> None:
        """Run one statement once per row of parameters."""

    @abc.abstractmethod
    async def fetchall(
        self, sql: str, parameters: Sequence[SQLValue] = ()
    ) -> list[tuple[Any, ...]]:
        """The rows one query answers."""

    @abc.abstractmethod
    async def lock_appends(self) -> None:
        """Take, until the transaction ends, the lock every append takes: what this
        transaction checks of the log then holds until it commits."""

    @abc.abstractmethod
    async def lock_schema_changes(self) -> None:
        """Let this transaction alone create or drop tables and indexes until it ends.

        Processes starting together on a new database run the same ``CREATE ... IF NOT
        EXISTS`` at once, which a database may refuse or deadlock on.
        """

    async def refresh_statistics(self, tables: Sequence[str]) -> None:
        """After ``tables`` were filled anew (a rebuild), let the query planner learn their
        sizes now rather than whenever the database gets to it. Nothing by default: SQLite
        plans without statistics unless asked, and keeps to that."""
        return None

    def confined(
        self, owns: Callable[[str], bool], savepoint: str
    ) -> contextlib.AbstractAsyncContextManager[None]:
        """While open, statements may change only tables ``owns`` accepts (and create or
        drop only those tables and their indexes), not end the transaction nor release or
        roll back the savepoint named ``savepoint``; reading anything stays allowed.
        Refused with :class:`ProjectionError`, as the statement runs where the database can
        (SQLite) or when the block ends (PostgreSQL). By default nothing is refused."""
        return contextlib.nullcontext()


# Events verify reads at a time (as many as iterate() pages through).
_VERIFY_PAGE = 2000

# For each event of a page (so many events after a position), the version of its stream it
# must follow: the greatest version of its stream before it that is its own or one below,
# found on the index of (stream, version); NULL (read as 0) when there is none. Verify
# stops at the first bad event, so the rows before the one it checks hold each stream's
# versions 1..k in position order: that greatest version is v - 1 exactly when the event's
# version v is k + 1. Asked a page at a time, this keeps verify's memory to a page, where
# remembering every stream's last version grew with the log. A LIMIT, not a range of
# positions, lets PostgreSQL expect a page of rows rather than a share of the log: a cost
# estimated that high would have every page's query compiled (JIT), for longer than it runs.
# The CASE keeps a version edited down to the lowest a column holds from overflowing.
_PREVIOUS_VERSIONS = (
    "SELECT page.position, (SELECT MAX(earlier.version) FROM events AS earlier "
    "WHERE earlier.stream = page.stream AND earlier.position < page.position "
    "AND earlier.version BETWEEN CASE WHEN page.version > 1 THEN page.version - 1 ELSE 0 END "
    "AND page.version) FROM events AS page WHERE page.position > ? "
    "ORDER BY page.position LIMIT ?"
)

# One row when events have an index leading with (stream, version), which _PREVIOUS_VERSIONS
# looks versions up on; by dialect. Only an edit of the schema behind the store's back takes
# the one the log is created with away.
_VERSIONS_INDEX_QUERY = {
    "sqlite": "SELECT 1 FROM pragma_index_list('events') AS list, "
    "pragma_index_info(list.name) AS first, pragma_index_info(list.name) AS second "
    "WHERE NOT list.partial AND first.seqno = 0 AND first.name = 'stream' "
    "AND second.seqno = 1 AND second.name = 'version'",
    "postgresql": "SELECT 1 FROM pg_index AS list "
    "JOIN pg_attribute AS first ON first.attrelid = list.indrelid "
    "AND first.attnum = list.indkey[0] "
    "JOIN pg_attribute AS second ON second.attrelid = list.indrelid "
    "AND second.attnum = list.indkey[1] "
    "WHERE list.indrelid = 'events'::regclass AND list.indisvalid AND list.indpred IS NULL "
    "AND first.attname = 'stream' AND second.attname = 'version'",
}


def _hash_problem(previous: str, event: RecordedEvent, stored: StoredText) -> str | None:
    """What is wrong with an event's hash, if anything, ``previous`` being the one before."""
    try:
        recomputed = recorded_hash(previous, event, stored)
    except (TypeError, ValueError) as error:
        # A column edited into another type (SQLite keeps whatever it is given).
        return f"the stored row cannot be read: {error}"
    if recomputed != event.hash:
        return "hash does not match the event's content and the previous hash"
    return None


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class EventStore(abc.ABC):
    """An append-only log of events in streams, with a global, gap-free position."""

    dialect: str

    def __init__(self) -> None:
        # Followers waiting for a commit, each a future of its own event loop: a store may be
        # shared by loops in several threads, and one loop's commit wakes another's waiters
        # through that loop (an asyncio.Condition is bound to one).
        self._waiting: set[asyncio.Future[None]] = set()
        # A commit landing between a follower's read and its wait must still wake it.
        self._committed_head = 0
        #: Whether opening this store created the log (its events table did not exist).
        self.created_log = False
        self._closed = False

    @property
    def closed(self) -> bool:
        """Whether the store was closed: followers then end rather than wait it out."""
        return self._closed

    # --- writing ---------------------------------------------------------------------------

    async def append(
        self,
        events: Sequence[NewEvent],
        *,
        expected: Mapping[str, ExpectedVersion] | None = None,
        actor: str,
    ) -> AppendResult:
        """Append one atomic batch (it may span streams). Raises on conflict.

        ``expected`` gives the version a stream must be at, whether the batch writes to it
        or only rests on it (a stream it read); nothing is checked for a retry whose events
        are all stored already.
        """
        (outcome,) = await self.append_batches([PendingBatch(events, expected or {}, actor)])
        if isinstance(outcome, StoreError):
            raise outcome
        return outcome

    @abc.abstractmethod
    async def append_batches(
        self, batches: Sequence[PendingBatch], progress: WriteProgress | None = None
    ) -> list[AppendResult | StoreError]:
        """Group commit: each batch is checked and applied on its own, all in one transaction.

        A failed batch leaves no trace; the others are still written. ``progress`` is called
        on the event loop's thread as the rows are chained and inserted (for a large import's
        progress bar), last with every step done once the rows are committed, unless every
        batch was refused.
        """

    # --- reading ---------------------------------------------------------------------------

    @abc.abstractmethod
    async def read_all(self, after: int = 0, limit: int | None = None) -> list[RecordedEvent]:
        """The events after position ``after``, in log order, at most ``limit`` of them
        (all when None; a negative limit asks for none)."""

    @abc.abstractmethod
    async def read_all_as_stored(
        self, after: int, limit: int
    ) -> list[tuple[RecordedEvent, StoredText]]:
        """:meth:`read_all`, with the text each event's hash covers as stored."""

    @abc.abstractmethod
    async def read_streams(self, streams: Sequence[str]) -> dict[str, list[RecordedEvent]]:
        """Every event of each named stream, in version order (missing streams are absent)."""

    async def read_stream(self, stream: str) -> list[RecordedEvent]:
        """Every event of one stream, in version order (none for a missing stream)."""
        if not isinstance(stream, str):
            raise TypeError(f"a stream is named by text, such as 'claim-x', got {stream!r:.80}")
        return (await self.read_streams([stream])).get(stream, [])

    @abc.abstractmethod
    async def find_event_ids(self, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, RecordedEvent]:
        """The stored events among ``ids``, by id (ids not stored are absent)."""

    async def get(self, position: int) -> RecordedEvent | None:
        """The event at ``position``, or None."""
        found = await self.read_all(after=position - 1, limit=1)
        return found[0] if found and found[0].position == position else None

    @abc.abstractmethod
    async def head(self) -> tuple[int, str]:
        """The last position and its hash (0 and the genesis hash when empty)."""

    async def longest_stream_id(self, after: int = 0, limit: int | None = None) -> int:
        """The length of the longest id (a stream's name after its kind, ``claim-ID``) among
        the events ``read_all`` would give, 0 when there are none: a listing printed page by
        page aligns on it."""
        until = MAX_POSITION if limit is None else storable(storable(after) + storable(limit))
        # A kind is lowercase letters; what follows it, less its separator, is the id.
        rows = await self.query(
            "SELECT MAX(LENGTH(LTRIM(stream, 'abcdefghijklmnopqrstuvwxyz')) - 1) FROM events "
            "WHERE position > ? AND position <= ?",
            (storable(after), until),
        )
        return int(rows[0][0] or 0)

    async def iterate(
        self, after: int = 0, page: int = 2000
    ) -> AsyncGenerator[RecordedEvent, None]:
        """Every event after ``after``, in log order, read ``page`` at a time (an export
        writes ``json.dumps(event.envelope())`` of each, one per line)."""
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
        here = asyncio.get_running_loop()
        for waiter in list(self._waiting):
            loop = waiter.get_loop()
            if loop is here:
                _wake(waiter)
            else:
                with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
                    loop.call_soon_threadsafe(_wake, waiter)

    def forget_heads_beyond(self, head: int) -> None:
        """The log was found to end at ``head`` (cut short behind this store's back): heads
        this store saw committed beyond it are no longer the log's, and followers waiting for
        events after ``head`` must wait for new ones rather than return at once, over and
        over, until the log grows past its old end."""
        self._committed_head = min(self._committed_head, head)

    async def wait_for_events(self, after: int, timeout: float) -> None:
        """Return once the head passes ``after`` or ``timeout`` elapses.

        Commits in this process wake waiters at once, whatever event loop they wait in;
        other writers are seen by polling (and, on PostgreSQL, by LISTEN/NOTIFY). On a
        closed store it returns at once: no commit will come, and the next read says why.
        """
        if self._closed or self._committed_head > after:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.add(waiter)
        try:
            # Again once registered: a commit in another thread may have come in between.
            if self._committed_head > after:
                return
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for drops a cancellation
            # that arrives as the wait ends, and a cancelled follower would go on.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await waiter
        finally:
            self._waiting.discard(waiter)

    async def subscribe(
        self, after: int = 0, *, poll_interval: float = 0.5, page: int = 1000
    ) -> AsyncIterator[RecordedEvent]:
        """Pull events from a checkpoint forever; a notification only wakes the reader.

        A database that cannot answer for a moment is waited out; once the store is closed,
        its :class:`StoreUnavailable` ends the subscription.
        """
        if isinstance(page, bool) or not isinstance(page, int) or page < 1:
            # A page of none would read nothing, forever.
            raise ValueError(f"page must be a whole number of events, 1 or more, not {page!r}")
        if not poll_interval > 0:
            raise ValueError(
                f"poll_interval must be a number of seconds above 0, not {poll_interval!r}"
            )
        while True:
            try:
                events = await self.read_all(after=after, limit=page)
            except StoreUnavailable:
                if self.closed:
                    raise
                await asyncio.sleep(poll_interval)
                continue
            for event in events:
                yield event
            if events:
                after = events[-1].position
                continue
            await self.wait_for_events(after, poll_interval)

    # --- integrity ------------------------------------------------------------------------

    async def verify(self, progress: Callable[[int, int], None] | None = None) -> VerifyReport:
        """Recompute the hash chain and check positions and versions are gap-free.

        On a broken chain, the database's own check of its files is asked too: a damaged
        file (a copy taken while SQLite wrote it, say) can read back as a chain broken at
        some position, through an index that no longer matches its table, when the events
        themselves are whole; the problem then says so.
        """
        report = await self._verify_chain(progress)
        if report.ok:
            return report
        try:
            damage = await self.damage()
        except StoreError:
            # The check itself could not run (a busy database, say): nothing more is known.
            return report
        if damage is None:
            return report
        return replace(
            report,
            problem=f"{report.problem}; but the database itself is damaged ({damage}), so "
            "this may be that damage rather than an edit: `leaderlog export` may still read "
            "every event, and an import of it into a new database, verified there with its "
            "head hash compared to one noted earlier, tells whether the log is whole",
        )

    async def damage(self) -> str | None:
        """What the database's own check finds wrong with its files, or None (PostgreSQL
        checks its pages as it reads them, and has no such check to ask)."""
        return None

    async def _verify_chain(
        self, progress: Callable[[int, int], None] | None = None
    ) -> VerifyReport:
        """:meth:`verify`, the chain alone.

        It holds a page of events at a time, however long the log: each stream's versions are
        looked up on the log's index of them rather than remembered (unless that index was
        dropped). A row that cannot even be decoded is reported at its position like any other
        edit.
        The report's head is the last event verified: on a broken chain, the end of the part
        before the first bad position, which holds as it was written. ``progress``, for a
        progress bar, is called after each page with (events verified, the log's head).
        """
        previous, count, expected_position = GENESIS_HASH, 0, 1
        lowest, highest = (await self.query("SELECT MIN(position), MAX(position) FROM events"))[0]
        if lowest is not None and lowest < 1:
            # Reading the chain starts after position 0: such a row would never be seen.
            reason = f"a row at position {lowest} lies outside the chain (positions start at 1)"
            return VerifyReport(False, 0, 0, GENESIS_HASH, lowest, reason)
        # Without an index to look versions up on, each lookup would read the whole log: each
        # stream's last version is remembered instead, in memory that grows with the streams.
        remembered: dict[Any, int] | None = None
        if not await self.query(_VERSIONS_INDEX_QUERY[self.dialect]):
            remembered = {}
        page = _VERIFY_PAGE
        while True:
            try:
                events = await self.read_all_as_stored(after=expected_position - 1, limit=page)
            except UnreadableEvent as error:
                # Rows before it must be checked first (an earlier one may be bad too): read
                # up to it, in smaller pages while there is a gap in between.
                before = error.position - expected_position
                if before > 0 and page > 1:
                    page = before if before < page else page // 2
                    continue
                if error.position != expected_position:
                    reason, at = f"position {expected_position} is missing", expected_position
                else:
                    reason, at = f"the stored row cannot be read: {error.reason}", error.position
                return VerifyReport(False, count, count, previous, at, reason)
            previous_versions, hash_problems = await self._versions_and_hashes(
                events, previous, remembered
            )
            for (event, _), hash_problem in zip(events, hash_problems, strict=True):
                problem, bad = self._check_link(
                    event,
                    expected_position,
                    previous_versions.get(event.position) or 0,
                    hash_problem,
                )
                if problem:
                    return VerifyReport(False, count, count, previous, bad, problem)
                previous, count, expected_position = event.hash, count + 1, expected_position + 1
            if progress is not None and not call_progress(progress, count, highest or 0):
                progress = None  # it failed, and would only fail again
            if len(events) < page:
                return VerifyReport(True, count, expected_position - 1, previous)
            page = _VERIFY_PAGE

    async def _versions_and_hashes(
        self,
        events: Sequence[tuple[RecordedEvent, StoredText]],
        previous: str,
        remembered: dict[Any, int] | None,
    ) -> tuple[dict[int, int | None], list[str | None]]:
        """For a page of events read, as stored: by position, the version of its stream each
        must follow, the events before it being whole; and what is wrong with each one's hash,
        if anything, ``previous`` being the hash before them.

        The versions are looked up (see _PREVIOUS_VERSIONS) while the hashes are recomputed,
        but not before the events were read: on PostgreSQL, a query begun as the read was, on
        another connection, could see the log as it was a moment earlier, without the last
        events read. With ``remembered``, each stream's last version before the page, they
        are taken from it instead, and it is brought up to the page's end."""
        if not events:
            return {}, []
        if remembered is not None:
            previous_versions: dict[int, int | None] = {}
            for event, _ in events:
                previous_versions[event.position] = remembered.get(event.stream, 0)
                remembered[event.stream] = event.version
            return previous_versions, self._hash_problems(events, previous)
        looking_up = asyncio.ensure_future(
            self.query(_PREVIOUS_VERSIONS, (events[0][0].position - 1, len(events)))
        )
        try:
            await asyncio.sleep(0)  # sent before the hashes keep this thread busy
            hash_problems = self._hash_problems(events, previous)
            found = await looking_up
        except BaseException:
            looking_up.cancel()
            raise
        return {position: version for position, version in found}, hash_problems

    @staticmethod
    def _hash_problems(
        events: Sequence[tuple[RecordedEvent, StoredText]], previous: str
    ) -> list[str | None]:
        """What is wrong with each event's hash, if anything, the events before it in the page
        being whole and ``previous`` the hash before them."""
        problems = []
        for event, stored in events:
            problems.append(_hash_problem(previous, event, stored))
            previous = event.hash
        return problems

    @staticmethod
    def _check_link(
        event: RecordedEvent,
        expected_position: int,
        previous_version: int,
        hash_problem: str | None,
    ) -> tuple[str | None, int]:
        """What is wrong with the next event of the chain, if anything, and at which position:
        ``previous_version`` is the version its stream must be at before it (0 for none),
        ``hash_problem`` what is wrong with its hash."""
        if event.position != expected_position:
            return f"position {expected_position} is missing", expected_position
        if event.version != previous_version + 1:
            return f"stream {event.stream} version {event.version} is out of order", event.position
        return hash_problem, event.position

    @abc.abstractmethod
    async def count(self) -> int:
        """How many events the log holds."""

    # --- projections -----------------------------------------------------------------------

    @abc.abstractmethod
    def projection_transaction(
        self,
    ) -> contextlib.AbstractAsyncContextManager[ProjectionTransaction]:
        """An async context manager yielding a :class:`ProjectionTransaction`."""

    @abc.abstractmethod
    async def query(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Read projection tables (``?`` placeholders)."""

    async def tables(self) -> set[str]:
        """The name of every table the database holds beside the log (a read: nothing is
        created to answer it)."""
        return {str(name) for (name,) in await self.query(TABLES_QUERY[self.dialect])}

    # --- lifecycle -------------------------------------------------------------------------

    @abc.abstractmethod
    async def discard_created_log(self) -> bool:
        """Remove the log opening this store created, if nothing was appended to it since.

        A command whose first append into a database without a log is refused calls it so
        that the database is left as it found it, not holding an empty log that looks like
        a real one. True when the log was removed; the store is then of no use but to close.
        A log this store did not create, or one that now holds events (another writer's),
        is kept.
        """

    @abc.abstractmethod
    async def close(self) -> None: ...

    async def __aenter__(self) -> EventStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


def checked_store(store: EventStore, taker: str) -> EventStore:
    """``store``, once it is found to be an :class:`EventStore`: anything else (an
    ``EventLog``, most likely) would fail only at its first query, as a projection never
    built, whose advice to rebuild it mends nothing."""
    if not isinstance(store, EventStore):
        raise TypeError(
            f"{taker} takes an EventStore (from open_store(), or an EventLog's .store), "
            f"not {type(store).__name__}"
        )
    return store


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
