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
import hashlib
import re
import uuid
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableSequence, Sequence
from dataclasses import dataclass, field
from importlib.resources import as_file, files
from pathlib import Path
from typing import IO, Any, TypeVar, cast, overload

from leaderlog._json import JSONDecodeError, canonical_bytes, described, loads, loads_input
from leaderlog.domain import (
    EntityState,
    ExistingEntity,
    MissingKnowledge,
    OrgState,
    decide,
    evolve,
    referenced_streams,
    referenced_streams_in,
)
from leaderlog.errors import (
    BatchError,
    ConcurrencyError,
    DomainError,
    DuplicateEventError,
    RecordError,
    StoreError,
    StoreUnavailable,
    UnreadableEvent,
)
from leaderlog.events import (
    EVENT_TYPES,
    ClaimReported,
    Event,
    ExpectedVersion,
    HeldRecord,
    OrgRegistered,
    PersonRegistered,
    PostDefined,
    Record,
    RecordedEvent,
    RecordFields,
    SourceRegistered,
    check_actor,
    check_expected_version,
    check_meta,
    check_record,
    content_event_id,
    current_schema_version,
    event_stream,
    new_event_id,
    parse_held_record,
    parse_record,
    readable_event,
    record_of,
)
from leaderlog.store import (
    AppendGuard,
    AppendResult,
    EventStore,
    NewEvent,
    PendingBatch,
    WriteProgress,
    open_store,
)
from leaderlog.store.base import call_progress

__all__ = [
    "MAX_LINE_BYTES",
    "MAX_LINE_TEXT_BYTES",
    "MAX_RECORD_BYTES",
    "AppendOutcome",
    "AppendProgress",
    "EventLog",
    "ParsedRecords",
    "load_seeds",
    "parse_lines",
    "parse_records",
    "read_lines",
    "seed_files",
    "seeds_folder",
    "stored_unchanged",
    "too_large",
]

# A record's size is its stored form's, compact UTF-8 JSON, however a line or request writes
# it: JSON may escape any character (Python's json.dumps writes every non-ASCII one as a
# \u escape such as \u00e9), so counting the text as given would refuse on import what the
# write API accepts.
MAX_LINE_BYTES = 64 * 1024
# What import reads of a line before refusing it unread, so that memory stays bounded. A
# record within MAX_LINE_BYTES takes at most six times that with every character escaped:
# an ASCII byte as \u00XX takes six bytes, a character of two to four bytes takes six or
# twelve (two UTF-16 units), at most three a byte, and json.dumps's ", " and ": " two for
# one. Only whitespace padding between tokens, which no JSON writer puts in a line, could
# make a line of a record within the limit longer.
MAX_LINE_TEXT_BYTES = 6 * MAX_LINE_BYTES
# Room is left for the envelope an export adds, so every record the log accepts, from any
# entry point, can be exported and imported again within the import's line limit.
MAX_RECORD_BYTES = MAX_LINE_BYTES - 1024
_GROUP_LIMIT = 1000
# Records decided between two reports of an AppendProgress.
_PROGRESS_STEP = 10_000
# Records decided between two turns given to the event loop: checking a large batch takes
# seconds, which would hold up every other task, and the caller's cancellation (a Ctrl-C)
# would only be seen once the whole batch was checked.
_DECIDED_BETWEEN_TURNS = 1000
_CACHE_LIMIT = 500_000
# Ids looked up at a time when a batch's records may be stored already: each lookup's events
# are let go of once noted compactly, so a large import given again holds only the notes.
_LOOKUP_CHUNK = 1000
_RETRIES = 5
_EVENT_CLASSES = tuple(EVENT_TYPES.values())
# Events that create their own stream. Their stream is assumed absent when it is not cached:
# the append expects "no_stream", so if it exists after all the store refuses the batch,
# which is then loaded and decided again (and refused by the ``unique`` rule).
_CREATING = (OrgRegistered, PostDefined, PersonRegistered, SourceRegistered, ClaimReported)
_CREATING_TYPES = frozenset(cls.model_fields["type"].default for cls in _CREATING)


@dataclass(frozen=True, slots=True)
class AppendOutcome:
    """What an append did: one position per record, and how many were new."""

    positions: tuple[int, ...]
    appended: int

    @property
    def already_present(self) -> int:
        return len(self.positions) - self.appended


class _GivenUp(Exception):
    """The caller of the request being decided stopped waiting for it."""


# One record on its way through the write path: what its row needs, without a pydantic
# model's cost per appended event.
_Entry = HeldRecord


class _CanonicalData(Mapping[str, Any]):
    """An event's data held as the canonical JSON it is stored as, read back only if asked:
    a large import would otherwise hold every payload twice until it is written."""

    __slots__ = ("_json",)

    def __init__(self, data_json: bytes) -> None:
        self._json = data_json

    def __getitem__(self, key: str) -> Any:
        return loads(self._json)[key]

    def __iter__(self) -> Iterator[str]:
        return iter(loads(self._json))

    def __len__(self) -> int:
        return len(loads(self._json))


@dataclass(eq=False, slots=True)
class _Request:
    entries: Sequence[_Entry]
    given_labels: Sequence[str] | None
    actor: str
    future: asyncio.Future[AppendOutcome]
    ids_are_fresh: bool
    guard: AppendGuard | None = None
    progress: _Progress | None = None
    attempts: int = 0

    def label(self, index: int) -> str:
        # Only needed for error messages, so built on demand.
        return self.given_labels[index] if self.given_labels else f"record {index}"


# A type alias rather than a protocol: a type checker then reads a lambda's arguments as
# (str, int, int) and checks what it does with them.
AppendProgress = Callable[[str, int, int], None]
"""Called with (stage, steps done, steps in all) while a batch is appended, for a progress
bar: stage ``"checking"`` (a step per record decided on the rules), then ``"writing"`` (two
steps per record: chained, then inserted; records already stored count as done), each
ending with every step done once the append is written; a refused one ends where it was.
Steps never go backwards within a stage. An exception it raises goes to the event loop's
exception handler and it is not called again: the append goes on, as do the others batched
with it."""


class _Progress:
    """One caller's :data:`AppendProgress`, reported forward only (a request decided again,
    once missing streams are loaded, starts its count again)."""

    def __init__(self, callback: AppendProgress, records: int) -> None:
        self._callback: AppendProgress | None = callback
        self.steps = records
        self._writing_steps = 2 * records
        self._checked = 0
        self._written = 0

    def checked(self, steps: int) -> None:
        if steps > self._checked:
            self._checked = steps
            self._report("checking", steps, self.steps)

    def written(self, done: int, total: int) -> None:
        """The store's progress through the whole group, as this caller's share: its own
        records' steps, the same fraction of them done (a group retried counts on), short of
        the last: only this caller's own outcome says whether its records were written."""
        steps = self._writing_steps
        self._forward(min(steps * done // total, steps - 1) if total else 0)

    def completed(self) -> None:
        """This caller's records are committed (or were stored already)."""
        self._forward(self._writing_steps)

    def _forward(self, share: int) -> None:
        if share > self._written:
            self._written = share
            self._report("writing", share, self._writing_steps)

    def _report(self, stage: str, done: int, total: int) -> None:
        # Called again after it raised, it would only fail again. Let go of while it runs: an
        # interrupt it raises (which call_progress lets through) would otherwise be raised
        # again at each report, while the program shuts down.
        callback, self._callback = self._callback, None
        if callback is not None and call_progress(callback, stage, done, total):
            self._callback = callback


def _written_by(requests: Sequence[_Request]) -> WriteProgress | None:
    """The store's progress, handed to every request of the group that asked for it."""
    wanted = [request.progress for request in requests if request.progress is not None]
    if not wanted:
        return None

    def written(done: int, total: int) -> None:
        for progress in wanted:
            progress.written(done, total)

    return written


@dataclass(slots=True)
class _Prepared:
    """A group's decisions, ready to append: ``states``, ``versions`` and ``ids`` are what
    they lead to, for the requests after them (the last request's are left out);
    ``refused`` and ``deferred`` requests are not appended with them."""

    group: list[_Request]
    decided: list[tuple[_Request, _Decision]] = field(default_factory=list)
    deferred: list[_Request] = field(default_factory=list)
    refused: list[tuple[_Request, Exception]] = field(default_factory=list)
    states: dict[str, EntityState] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)
    ids: set[uuid.UUID] = field(default_factory=set)

    def batches(self) -> list[PendingBatch]:
        return [
            PendingBatch(d.new_events, d.expected, r.actor, d.depends, r.guard)
            for r, d in self.decided
        ]


@dataclass(slots=True)
class _Decision:
    """A request's events and the stream states they lead to, before commit."""

    new_events: list[NewEvent] = field(default_factory=list)
    expected: dict[str, ExpectedVersion] = field(default_factory=dict)
    # Streams the decision read but does not write, at the versions it read them.
    depends: dict[str, ExpectedVersion] = field(default_factory=dict)
    states: dict[str, EntityState] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)
    known_positions: dict[int, int] = field(default_factory=dict)


class _LayeredKnowledge:
    """The request's own uncommitted decisions, then its group's, then the cache; ``read``
    collects every stream a decision looked at whose version it rests on.

    A person, post or source stored (in the cache) is not among them: the rules read
    nothing of one but that it exists, and once stored it exists for good, so a writer
    editing it meanwhile changes nothing a decision read (with its version, the decision
    would be refused and taken again for every edit, and could be worn out by them).
    """

    __slots__ = ("_cache", "_group", "_request", "assumed_absent", "read")

    def __init__(
        self,
        request: Mapping[str, EntityState],
        group: Mapping[str, EntityState],
        cache: Mapping[str, EntityState | None],
    ) -> None:
        self._request = request
        self._group = group
        self._cache = cache
        self.assumed_absent: str | None = None
        self.read: set[str] = set()

    def state(self, stream: str) -> EntityState | None:
        # Asked several times per record: plain membership tests, no loops.
        if stream in self._request:
            return self._request[stream]
        if stream in self._cache and stream not in self._group:
            state = self._cache[stream]
            if type(state) is not ExistingEntity:
                self.read.add(stream)
            return state
        self.read.add(stream)
        if stream in self._group:
            return self._group[stream]
        if stream == self.assumed_absent:
            return None
        raise MissingKnowledge({stream})


def _assumes_absent(request: _Request, entry: _Entry) -> bool:
    """Whether the entry's own stream may be taken as absent without loading it (see
    ``_CREATING``); never on a retry, which must decide on what is really stored."""
    return (
        request.attempts == 0
        and entry.expected_version in (None, "no_stream")
        and entry.type in _CREATING_TYPES
    )


def _same_event(entry: _Entry, stored: RecordedEvent) -> bool:
    same = (stored.type, stored.schema_version) == (entry.type, entry.schema_version)
    return (
        same
        and canonical_bytes(stored.data) == entry.data_json
        and stored.stream == _own_stream(entry)
    )


def _stored_as_given(request: _Request, stored: Mapping[uuid.UUID, _StoredEvent]) -> dict[int, int]:
    """The position of each of the request's records whose event is stored under its id as
    it is, by the record's index: appending it again is an idempotent retry."""
    given: dict[int, int] = {}
    if request.ids_are_fresh:
        return given
    for index, entry in enumerate(request.entries):
        previous = stored.get(entry.event_id)
        if previous is None:
            continue
        digest = _digest(entry.type, entry.schema_version, _own_stream(entry), entry.data_json)
        if previous.digest == digest:
            given[index] = previous.position
    return given


def _own_stream(entry: _Entry) -> str:
    """The entry's stream, read from its data when that is in the current shape (making the
    event model costs several times as much, for every record of a file imported again)."""
    event = entry.kept_event
    if event is None and entry.schema_version != current_schema_version(entry.type):
        event = entry.event
    if event is not None:
        return event.stream()
    return event_stream(entry.type, loads(entry.data_json))


def _digest(event_type: str, schema_version: int, stream: str, data_json: bytes) -> bytes:
    """What tells two events apart for an idempotent retry, in 32 bytes."""
    envelope = canonical_bytes([event_type, schema_version, stream])
    return hashlib.sha256(envelope + data_json).digest()


@dataclass(frozen=True, slots=True)
class _StoredEvent:
    """An event stored under a record's id, as deciding the record needs it: its position,
    and a digest of its stream, type, schema version and data, to tell whether it is the
    record's own event (a file imported again would otherwise hold each record twice, once
    as read and once as stored)."""

    position: int
    digest: bytes

    @classmethod
    def of(cls, event: RecordedEvent) -> _StoredEvent:
        data_json = canonical_bytes(event.data)
        return cls(
            event.position, _digest(event.type, event.schema_version, event.stream, data_json)
        )


def stored_unchanged(record: Record | RecordFields | HeldRecord, stored: RecordedEvent) -> bool:
    """Whether ``stored`` holds ``record``'s event as it is: appending it again would be an
    idempotent retry (same stream, type, schema version and data)."""
    return _same_event(_held(record), stored)


def _held(record: Record | RecordFields | HeldRecord) -> HeldRecord:
    if isinstance(record, HeldRecord):
        return record
    return HeldRecord(record if isinstance(record, RecordFields) else RecordFields.of(record))


def _streams_of(entry: _Entry) -> tuple[str, set[str]]:
    """The entry's own stream, and every stream a decision about it reads: from its model
    when it keeps one, else read from its data when that is in the current shape, as its
    event is made again only to be decided (making it costs several times what reading the
    data does, for every record of an import)."""
    event = entry.kept_event
    if event is None and entry.schema_version != current_schema_version(entry.type):
        event = entry.event
    if event is not None:
        return event.stream(), referenced_streams(event)
    data = loads(entry.data_json)
    return event_stream(entry.type, data), referenced_streams_in(entry.type, data)


def _stored_event(recorded: RecordedEvent) -> Event:
    """A stored event, read for the rules as the projections read it: text an earlier version
    accepted (a noncharacter, say) or another tool stored does not make its stream one that
    nothing can be appended to, not even the update that would correct it. One this
    leaderlog cannot read at all (stored by a newer version) is named by its position."""
    try:
        return readable_event(recorded.type, recorded.schema_version, recorded.data)
    except RecordError as error:
        raise UnreadableEvent(recorded.position, error.message) from None


def _creators(entries: Sequence[_Entry]) -> dict[str, list[int]]:
    """Where in the batch each stream is created: the records that register it, in order."""
    found: dict[str, list[int]] = {}
    for index, entry in enumerate(entries):
        if entry.type in _CREATING_TYPES:
            found.setdefault(entry.event.stream(), []).append(index)
    return found


def _defined_elsewhere(
    problem: DomainError, request: _Request, index: int, creators: Mapping[str, list[int]]
) -> DomainError:
    """``problem``, saying so when the record it refers to is in the batch: further down
    (records are checked in order, each on what comes before it), or above but refused
    itself, so that a reader does not look for the mistake in a record that has none; and,
    for one registering again what exists, the record above that registers it too."""
    if problem.taken is not None:
        above = [at for at in creators.get(problem.taken, ()) if at < index]
        if not above:
            return problem
        does = "reports" if problem.taken.startswith("claim-") else "registers"
        advice = f"{request.label(above[-1])} {does} it too"
        return DomainError(f"{problem.message}; {advice}", rule=problem.rule, taken=problem.taken)
    if problem.missing is None:
        return problem
    found = creators.get(problem.missing, ())
    later = next((at for at in found if at > index), None)
    if later is not None:
        advice = f"{request.label(later)} registers it: put that record first"
    elif found:
        # Registered above and still missing: that record broke a rule of its own.
        advice = f"{request.label(found[-1])} registers it, but is refused"
    else:
        return problem
    return DomainError(f"{problem.message}; {advice}", rule=problem.rule)


def _id_used_twice(event_id: uuid.UUID, first: str) -> str:
    """Why a record whose id an earlier record of its batch has is refused."""
    if event_id.version == 5:
        # Only a record's own content gives it a version 5 id (check_derived_id): the writer
        # most likely gave no id at all, and repeated a record, by mistake or on purpose.
        return (
            f"the same record as {first} (its type and data give it the same content-derived "
            f"event id {event_id}); to append it again on purpose, give it an event_id of its "
            "own (a version 4 or 7 UUID)"
        )
    return f"event id {event_id} is already used by {first}"


def _answer(future: asyncio.Future[AppendOutcome], answer: AppendOutcome | BaseException) -> None:
    """Answer a caller, unless it stopped waiting (setting a cancelled future raises)."""
    if future.done():
        return
    if isinstance(answer, BaseException):
        future.set_exception(answer)
    else:
        future.set_result(answer)


def _writer_stopped_message(stop: BaseException, writing_began: bool) -> str:
    """What a caller is told of its batch when the log's writer task was stopped under it
    (cancelled from outside, or a KeyboardInterrupt or SystemExit raised in it)."""
    how = "cancelled" if isinstance(stop, asyncio.CancelledError) else type(stop).__name__
    if not writing_began:
        return (
            f"the log's writer task was stopped ({how}) while this batch was checked: "
            "nothing was written; append it again"
        )
    return (
        f"the log's writer task was stopped ({how}) while this batch was written: it may "
        "have been committed or not; append it again as records with their own event_id "
        "(append_records), which are idempotent"
    )


def _without_byte_order_mark(first_line: str | bytes) -> str | bytes:
    """Editors on Windows start UTF-8 files with a byte order mark: it is not data. A UTF-16
    one means the whole file is in the wrong encoding."""
    if isinstance(first_line, str):
        return first_line.removeprefix("\ufeff")
    if first_line.startswith((b"\xff\xfe", b"\xfe\xff")):
        problem = "the file is UTF-16 text; JSON Lines must be UTF-8"
        raise BatchError([RecordError(problem, where="line 1", rule="json")])
    if compressed := _COMPRESSED.match(first_line):
        # "Not UTF-8: save the file as UTF-8" would send the user to an editor.
        tool = compressed.lastgroup  # named after the tool that reads it
        problem = (
            f"the file is {tool}-compressed; decompress it first "
            f"({tool} -dc FILE | leaderlog import -)"
        )
        raise BatchError([RecordError(problem, where="line 1", rule="json")])
    return first_line.removeprefix(b"\xef\xbb\xbf")


# What compressed files start with (none can start a line of JSON): an export is often kept
# compressed, and its bytes would be refused as text in another encoding.
_COMPRESSED = re.compile(
    rb"(?P<gzip>\x1f\x8b)|(?P<bzip2>BZh[1-9](?:1AY&SY|\x17rE8P\x90))"
    rb"|(?P<xz>\xfd7zXZ\x00)|(?P<zstd>\x28\xb5\x2f\xfd)"
)


def _holds_carriage_returns_alone(line: str | bytes) -> bool:
    """Whether a line holds carriage returns before its end: a file whose lines end in CR
    alone (as classic Mac OS wrote them) reads as one line holding every record."""
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    return "\r" in text.rstrip("\r\n")


def _unreadable(line: str | bytes, error: Exception, where: str) -> RecordError:
    """Why a line is not JSON; text in another encoding (Latin-1, say) is named as such."""
    if isinstance(line, bytes):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as not_utf8:
            byte = line[not_utf8.start]
            return RecordError(
                f"not UTF-8 text (byte 0x{byte:02X} at column {not_utf8.start + 1}); "
                "save the file as UTF-8",
                where=where,
                rule="json",
            )
    problem = described(error, one_line=True) if isinstance(error, JSONDecodeError) else error
    if _holds_carriage_returns_alone(line):
        problem = (
            f"{problem}; its lines seem to end in a carriage return alone: save the file "
            "with LF or CRLF line ends"
        )
    return RecordError(f"not valid JSON: {problem}", where=where, rule="json")


def read_lines(handle: IO[bytes]) -> Iterator[bytes]:
    """The lines of a binary file, each read only up to just past :data:`MAX_LINE_TEXT_BYTES`.

    A longer line is given cut there (too long all the same) and the rest of it skipped,
    so that it is refused instead of filling memory; after a line that does not end within
    :data:`_SKIPPED_AT_MOST` bytes (``/dev/zero``, a binary file) nothing more is read."""
    # Room for a byte order mark and a CRLF beyond the limit, which parse_lines does not count.
    while line := handle.readline(MAX_LINE_TEXT_BYTES + 6):
        if len(line) > MAX_LINE_TEXT_BYTES and not line.endswith(b"\n"):
            skipped = 0
            while (rest := handle.readline(MAX_LINE_BYTES)) and not rest.endswith(b"\n"):
                skipped += len(rest)
                if skipped > _SKIPPED_AT_MOST:
                    yield line
                    return
        yield line


_SKIPPED_AT_MOST = 64 * 1024 * 1024


def too_large(raw: Any) -> bool:
    """Whether a record read from JSON is larger than :data:`MAX_LINE_BYTES` as stored, the
    check import and the write API make alike before reading its fields."""
    return len(canonical_bytes(raw)) > MAX_LINE_BYTES


def _length_without_line_end(line: str | bytes) -> int:
    return len(line.rstrip(b"\r\n")) if isinstance(line, bytes) else len(line.rstrip("\r\n"))


class _LineLabels(MutableSequence[str]):
    """Labels naming records by line (``line 12``, ``claims.jsonl line 12``), made when
    read: a number a record rather than a string (an import holds every record at once).
    Any other text may be put among them too."""

    # A line's label is its number and its prefix's index (_PREFIX_BITS bits); another
    # text's is -1 - its index in _texts.
    __slots__ = ("_codes", "_prefix_texts", "_prefixes", "_texts")
    _PREFIX_BITS = 16

    def __init__(self, labels: Iterable[str] = ()) -> None:
        self._codes = array("q")
        self._prefixes: dict[str, int] = {"": 0}
        self._prefix_texts = [""]
        self._texts: list[str] = []
        self.extend(labels)

    def add_line(self, number: int, prefix: str = "") -> None:
        index = self._prefixes.get(prefix)
        if index is None:
            index = self._prefixes[prefix] = len(self._prefix_texts)
            self._prefix_texts.append(prefix)
        if index >> self._PREFIX_BITS or number >= 1 << (62 - self._PREFIX_BITS):
            self.append(f"{prefix}line {number}")
        else:
            self._codes.append(number << self._PREFIX_BITS | index)

    def add_prefixed(self, labels: Sequence[str], where: str) -> None:
        """``labels`` after these, each prefixed with ``where``."""
        if not isinstance(labels, _LineLabels):
            self.extend(f"{where} {label}" for label in labels)
            return
        prefixes = labels._prefix_texts
        mask = (1 << self._PREFIX_BITS) - 1
        for code in labels._codes:
            if code < 0:
                self.append(f"{where} {labels._texts[-1 - code]}")
            else:
                self.add_line(code >> self._PREFIX_BITS, f"{where} {prefixes[code & mask]}")

    def _label(self, code: int) -> str:
        if code < 0:
            return self._texts[-1 - code]
        prefix = self._prefix_texts[code & ((1 << self._PREFIX_BITS) - 1)]
        return f"{prefix}line {code >> self._PREFIX_BITS}"

    def _code(self, label: str) -> int:
        self._texts.append(label)
        return -len(self._texts)

    def __len__(self) -> int:
        return len(self._codes)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self._label(code) for code in self._codes[index]]
        return self._label(self._codes[index])

    def __iter__(self) -> Iterator[str]:
        return map(self._label, self._codes)

    @overload
    def __setitem__(self, index: int, value: str) -> None: ...
    @overload
    def __setitem__(self, index: slice, value: Iterable[str]) -> None: ...
    def __setitem__(self, index: int | slice, value: str | Iterable[str]) -> None:
        if isinstance(index, slice):
            assert not isinstance(value, str)
            self._codes[index] = array("q", map(self._code, value))
        else:
            assert isinstance(value, str)
            self._codes[index] = self._code(value)

    def __delitem__(self, index: int | slice) -> None:
        del self._codes[index]

    def insert(self, index: int, value: str) -> None:
        self._codes.insert(index, self._code(value))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(list(self))


@dataclass(slots=True)
class ParsedRecords:
    """Records read from JSON Lines by :func:`parse_records`, each with the label that names
    it in errors (``line 3``); :meth:`EventLog.append_parsed` appends them.

    Each record is held as the write path takes it, a :class:`HeldRecord`, without the event
    model a :class:`Record` keeps (over a kilobyte more a claim): an import holds every
    record of its files at once. :class:`RecordFields` may be put among them too.
    """

    records: list[HeldRecord | RecordFields] = field(default_factory=list)
    labels: MutableSequence[str] = field(default_factory=_LineLabels)
    # The records parse_records read, in order: any other (built or put in by hand) is
    # checked when appended, as append_records checks a Record built by hand.
    _parsed: tuple[HeldRecord | RecordFields, ...] = field(default=(), repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.records)

    def add(self, more: ParsedRecords, where: str | None = None) -> None:
        """Take in ``more`` after these records, its labels prefixed with ``where`` (the
        file they were read from, when there are several)."""
        parsed = self._parsed if len(self._parsed) == len(self.records) else ()
        self.records += more.records
        if where and isinstance(self.labels, _LineLabels):
            self.labels.add_prefixed(more.labels, where)
        else:
            self.labels += [f"{where} {label}" for label in more.labels] if where else more.labels
        self._parsed = (*parsed, *more._parsed) if parsed or not more.records else ()

    def unchecked(self) -> Iterator[tuple[int, HeldRecord | RecordFields]]:
        """The records (with their index) that parse_records did not read as they are."""
        parsed = self._parsed
        for index, record in enumerate(self.records):
            if index >= len(parsed) or parsed[index] is not record:
                yield index, record


def parse_lines(lines: Iterable[str | bytes]) -> tuple[list[Record], list[str]]:
    """Parse JSON Lines into records; every problem names its line. Blank lines are skipped."""
    records: list[Record] = []
    labels = _parse(lines, lambda raw: records.append(parse_record(raw)))
    return records, list(labels)


def parse_records(lines: Iterable[str | bytes]) -> ParsedRecords:
    """:func:`parse_lines`, into the compact form a large import needs (see
    :class:`ParsedRecords`)."""
    records: list[HeldRecord | RecordFields] = []
    labels = _parse(lines, lambda raw: records.append(parse_held_record(raw)))
    return ParsedRecords(records, labels, tuple(records))


def _parse(lines: Iterable[str | bytes], take: Callable[[Any], None]) -> _LineLabels:
    """Hand each JSON line's value to ``take``; the labels of the lines it took."""
    labels = _LineLabels()
    problems: list[RecordError] = []
    for number, line in enumerate(lines, start=1):
        where = f"line {number}"
        if not isinstance(line, str | bytes):
            # Records already parsed from JSON go through append_raw instead.
            raise BatchError(
                [
                    RecordError(
                        f"lines must be text or bytes (JSON Lines), not {type(line).__name__}; "
                        "append JSON values already read with append_raw",
                        where=where,
                        rule="json",
                    )
                ]
            )
        if number == 1:
            line = _without_byte_order_mark(line)
        if _length_without_line_end(line) > MAX_LINE_TEXT_BYTES:
            problems.append(
                RecordError(
                    f"line is larger than {MAX_LINE_TEXT_BYTES} bytes: a record is at most "
                    f"{MAX_LINE_BYTES} bytes, and six times that with every character escaped",
                    where=where,
                    rule="size",
                )
            )
            continue
        if not line.strip():
            continue
        try:
            raw = loads_input(line)
        except (JSONDecodeError, UnicodeDecodeError) as error:
            problems.append(_unreadable(line, error, where))
            continue
        if too_large(raw):
            problems.append(
                RecordError(
                    f"record is larger than {MAX_LINE_BYTES} bytes", where=where, rule="size"
                )
            )
            continue
        try:
            take(raw)
            labels.add_line(number)
        except RecordError as error:
            problems.append(error.located(where))
    if problems:
        raise BatchError(problems)
    return labels


_Item = TypeVar("_Item")


def _listed(
    given: Iterable[_Item], item: type | tuple[type, ...], name: str, items: str
) -> list[_Item]:
    """``given`` as a list (a generator would be used up by the checks and append nothing),
    or a :class:`BatchError` when it is one item or not a collection at all."""
    if isinstance(given, (item, str, bytes, Mapping)) or not isinstance(given, Iterable):
        # One pydantic model iterates as its fields, a text as its characters and a JSON
        # record as its keys: "not an event model: str" would hide that a list was wanted.
        problem = RecordError(
            f"{name} must be a list of {items}, not {type(given).__name__}",
            where="record 0",
            rule="schema",
        )
        raise BatchError([problem])
    return list(given)


class EventLog:
    """Append records (rules enforced) and read the log.

    Open one per store and event loop (an application's loop, or each thread's own): its
    appends are batched together on the loop they are made in.

    An append that is cancelled (or runs out of an ``asyncio.timeout``) before its group
    begins writing is left out. Once writing has begun it may still be committed, as a write
    whose answer is lost on a network may: to try again safely, append records with their
    own ``event_id`` (:meth:`append_records`), which are idempotent.

    Appends are written by a task of the log's own. Cancelled from outside (a shutdown that
    cancels every task), it answers the group it was on with a :class:`StoreError` saying so
    (and whether that group may have been written); the appends queued behind it are taken
    up by a new writer.
    """

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._states: dict[str, EntityState | None] = {}
        self._versions: dict[str, int] = {}
        self._known_head = 0
        # Whether _known_head is the head this log's own last append left, with every event
        # up to it in the cache (see _prepare).
        self._head_is_current = False
        self._queue: list[_Request] = []
        self._writer: asyncio.Task[None] | None = None
        self._closed = False

    @classmethod
    async def open(cls, url: str | None = None, *, create: bool = True) -> EventLog:
        """The log at ``url``; ``create=False`` refuses a log that does not exist (a missing
        SQLite file, or a PostgreSQL database without the log's tables).

        Raises :class:`StoreUnavailable` (or its kinds :class:`StoreBusy`,
        :class:`StoreUnreachable`, :class:`StoreReadOnly`) when the log cannot be opened as
        given, :class:`StoreError` for a damaged SQLite file, and TypeError for a URL that is
        not text."""
        return cls(await open_store(url, create=create))

    async def close(self) -> None:
        """Close the store, once the appends under way are answered; appends made once
        closing has begun are refused with :class:`StoreUnavailable`. Closing again does
        nothing."""
        # At once: callers that go on appending would otherwise keep the writer busy, and
        # closing waiting for it, for as long as they append.
        self._closed = True
        # Waited for, not awaited: a writer that was cancelled (all tasks are, at some
        # shutdowns) must not make closing fail, and closing cancelled must not cancel it.
        while (writer := self._writer) is not None and not writer.done():
            await asyncio.wait([writer])
        await self.store.close()

    async def __aenter__(self) -> EventLog:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # --- appending -------------------------------------------------------------------------

    async def append_events(
        self,
        events: Iterable[Event],
        *,
        actor: str,
        expected_version: ExpectedVersion | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> AppendOutcome:
        """Append events as one atomic batch with fresh, time-ordered ids.

        ``expected_version`` guards the stream of the first event (give events of other
        streams their own calls, or records with their own, to guard those). ``meta`` goes
        with every event; it must read back as given (:func:`check_meta`).

        Returns an :class:`AppendOutcome`. Raises :class:`BatchError` for an event or
        argument refused (its ``problems`` are :class:`RecordError` and
        :class:`DomainError`), :class:`ConcurrencyError` for a stale ``expected_version``,
        and :class:`StoreUnavailable` once the log is closed or its database cannot answer.
        """
        events = _listed(events, _EVENT_CLASSES, "events", "event models")
        for index, event in enumerate(events):
            if not isinstance(event, _EVENT_CLASSES):
                problem = RecordError(
                    f"not an event model: {type(event).__name__}",
                    where=f"record {index}",
                    rule="schema",
                )
                raise BatchError([problem])
        try:
            check_expected_version(expected_version)
            copied_meta = check_meta(meta)
        except RecordError as error:
            raise BatchError([error.located("record 0")]) from None
        entries = [
            _Entry(
                RecordFields(
                    event, new_event_id(), expected_version if index == 0 else None, copied_meta
                )
            )
            for index, event in enumerate(events)
        ]
        return await self._submit(entries, None, actor, ids_are_fresh=True)

    async def append_records(
        self,
        records: Sequence[Record],
        *,
        actor: str,
        labels: Sequence[str] | None = None,
        guard: AppendGuard | None = None,
        progress: AppendProgress | None = None,
    ) -> AppendOutcome:
        """Append validated records as one atomic batch (idempotent on their event ids).

        ``labels`` name the records in errors (one each, such as ``line 3``; by default
        ``record 0``, ``record 1``...). ``guard`` is checked in the append's own
        transaction, under the writers' lock: a row it finds refuses the batch (see
        :class:`AppendGuard`). ``progress`` is told how far the append has got (see
        :data:`AppendProgress`).

        Raises as :meth:`append_events` does, and :class:`DuplicateEventError` for an
        ``event_id`` already stored with other content.
        """
        records = _listed(records, Record, "records", "Record")
        if labels is not None:
            # A text would label each record with one of its characters.
            labels = _listed(labels, str, "labels", "str (one per record)")
        if labels is not None and len(labels) != len(records):
            problem = RecordError(
                f"labels must name each record: {len(labels)} given for {len(records)} records",
                where="record 0",
                rule="schema",
            )
            raise BatchError([problem])
        problems: list[RecordError] = []
        for index, record in enumerate(records):
            label = labels[index] if labels else f"record {index}"
            try:
                if not isinstance(record, Record):
                    raise RecordError(f"not a Record: {type(record).__name__}", rule="schema")
                # Built by hand, it is held here to what parsing checks (a parsed one passes).
                check_record(record)
            except RecordError as error:
                problems.append(error.located(label))
        if problems:
            raise BatchError(problems)
        entries = [_Entry(RecordFields.of(record)) for record in records]
        return await self._submit(
            entries,
            labels,
            actor,
            ids_are_fresh=False,
            guard=guard,
            progress=None if progress is None else _Progress(progress, len(entries)),
        )

    async def append_parsed(
        self,
        parsed: ParsedRecords,
        *,
        actor: str,
        guard: AppendGuard | None = None,
        progress: AppendProgress | None = None,
    ) -> AppendOutcome:
        """:meth:`append_records` of records :func:`parse_records` read, which are appended
        as they are: parsing checked them already."""
        if len(parsed.labels) != len(parsed.records):
            problem = RecordError(
                f"labels must name each record: {len(parsed.labels)} given for "
                f"{len(parsed.records)} records",
                where="record 0",
                rule="schema",
            )
            raise BatchError([problem])
        problems: list[RecordError] = []
        unchecked = False
        for index, fields in parsed.unchecked():
            unchecked = True
            try:
                if isinstance(fields, HeldRecord):
                    fields = fields.fields()
                elif not isinstance(fields, RecordFields):
                    raise RecordError(f"not RecordFields: {type(fields).__name__}", rule="schema")
                check_record(record_of(fields))
            except RecordError as error:
                problems.append(error.located(parsed.labels[index]))
        if problems:
            raise BatchError(problems)
        # Every record is one parse_records read, a HeldRecord, unless some were not.
        entries = (
            [_held(record) for record in parsed.records]
            if unchecked
            else cast(list[HeldRecord], parsed.records)
        )
        return await self._submit(
            entries,
            parsed.labels,
            actor,
            ids_are_fresh=False,
            guard=guard,
            progress=None if progress is None else _Progress(progress, len(parsed.records)),
        )

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

    async def import_lines(
        self, lines: Iterable[str | bytes] | str | bytes, *, actor: str
    ) -> AppendOutcome:
        """Check every JSON line, then append them all as one batch, or none of them."""
        if not isinstance(lines, Iterable):
            raise TypeError(
                f"lines must be text, bytes or an iterable of lines, got {type(lines).__name__}"
            )
        if isinstance(lines, str | bytes):
            # One text of lines, not an iterable of one-character "lines". Split at line feeds
            # only, as a file is read: str.splitlines() also splits at U+2028 and other
            # characters JSON strings may hold as they are (a carriage return before a line
            # feed is taken off with the rest of the white space around a record).
            lines = lines.split("\n") if isinstance(lines, str) else lines.split(b"\n")
        try:
            # Checked before the lines are, as every append checks it: first.
            check_actor(actor)
        except RecordError as error:
            raise BatchError([error]) from None
        parsed = parse_records(lines)
        if not parsed:
            return AppendOutcome((), 0)
        return await self.append_parsed(parsed, actor=actor)

    async def import_file(self, path: Path | str, *, actor: str) -> AppendOutcome:
        """:meth:`import_lines` of a JSON Lines file (an export, or records)."""
        with Path(path).open("rb") as handle:
            return await self.import_lines(read_lines(handle), actor=actor)

    async def _submit(
        self,
        entries: Sequence[_Entry],
        labels: Sequence[str] | None,
        actor: str,
        *,
        ids_are_fresh: bool,
        guard: AppendGuard | None = None,
        progress: _Progress | None = None,
    ) -> AppendOutcome:
        try:
            check_actor(actor)
        except RecordError as error:
            # Refused as every other part of a call is: one BatchError naming the problems.
            raise BatchError([error]) from None
        if self._closed:
            raise StoreUnavailable("the log is closed (or closing): open it again to append")
        if not entries:
            return AppendOutcome((), 0)
        loop = asyncio.get_running_loop()
        writer = self._writer
        if writer is not None and not writer.done() and writer.get_loop() is not loop:
            # Its group commit would answer this caller from another loop's thread: a hang.
            raise RuntimeError(
                "this EventLog is appending in another event loop; open one EventLog per "
                "event loop (or thread)"
            )
        future: asyncio.Future[AppendOutcome] = loop.create_future()
        self._queue.append(_Request(entries, labels, actor, future, ids_are_fresh, guard, progress))
        if self._writer is None or self._writer.done():
            self._start_writer()
        return await future

    def _start_writer(self) -> None:
        self._writer = asyncio.create_task(self._drain())
        self._writer.add_done_callback(self._writer_stopped)

    def _writer_stopped(self, writer: asyncio.Task[None]) -> None:
        """A writer stopped under its group leaves the appends queued behind that group to a
        new writer, their callers still waiting: one cancelled from outside (a shutdown
        cancelling every task), or one a KeyboardInterrupt or SystemExit was raised in (a
        Ctrl-C in a program that drives its own loop, and may go on after it)."""
        if not writer.cancelled():
            # exception() marks it retrieved: asyncio has raised an interrupt out of the loop
            # to the program already, which is not to be told of it again, as a task
            # exception never retrieved, once the task is collected.
            stopped = writer.exception()
            if stopped is None:
                return
            if not isinstance(stopped, KeyboardInterrupt | SystemExit):
                writer.get_loop().call_exception_handler(
                    {
                        "message": "the log's writer task failed",
                        "exception": stopped,
                        "task": writer,
                    }
                )
                return
        if writer is not self._writer:
            return
        if any(not request.future.done() for request in self._queue):
            self._start_writer()

    async def _drain(self) -> None:
        while self._queue:
            group = self._take()
            if not group:
                continue
            writing_began = False
            try:
                prepared = await self._prepare(group)
                if any(request.future.cancelled() for request in group):
                    # A caller stopped waiting while the group was decided: decided again
                    # without it, since the requests after it may rest on what it would write.
                    self._queue[:0] = [r for r in group if not r.future.cancelled()]
                    continue
                for request, refusal in prepared.refused:
                    _answer(request.future, refusal)
                writing = _written_by([request for request, _ in prepared.decided])
                writing_began = True
                outcomes = await self.store.append_batches(prepared.batches(), writing)
            except Exception as error:
                self._fail(group, error)
                continue
            except BaseException as error:
                self._fail(group, StoreError(_writer_stopped_message(error, writing_began)))
                raise
            self._queue[:0] = self._finish(prepared, outcomes)

    def _take(self) -> list[_Request]:
        """The next group, without the callers that stopped waiting before it was taken."""
        group, self._queue = self._queue[:_GROUP_LIMIT], self._queue[_GROUP_LIMIT:]
        return [request for request in group if not request.future.cancelled()]

    def _fail(self, group: Sequence[_Request], error: Exception) -> None:
        # The cache may no longer match the store; start again from nothing.
        self._forget()
        for request in group:
            _answer(request.future, error)

    def _forget(self) -> None:
        self._states.clear()
        self._versions.clear()
        self._known_head = 0
        self._head_is_current = False

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
        self._states[stream] = evolve(self._states[stream], _stored_event(recorded))
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
                state = evolve(state, _stored_event(recorded))
                version = recorded.version
            self._states[stream] = state
            self._versions[stream] = version

    async def _load_ancestors(self, streams: Iterable[str]) -> None:
        """Load the parents above the organisations among ``streams``, up to the top or to
        one already loaded, one query per level."""
        below = [stream for stream in streams if stream.startswith("org-")]
        while below:
            above: set[str] = set()
            for stream in below:
                state = self._states.get(stream)
                if isinstance(state, OrgState) and state.parent is not None:
                    parent = f"org-{state.parent}"
                    if parent not in self._states:
                        above.add(parent)
            if above:
                await self._load(above)
            below = sorted(above)

    async def _prepare(self, group: list[_Request]) -> _Prepared:
        """Decide every request of a group (each on top of the ones before it).

        After an append of its own, the log does not ask the store whether other writers
        have appended since: a decision that appends rests only on versions the append checks
        (and on the existence of persons, posts and sources, which is for good). A refusal is
        checked by nothing, so it is only given once every event stored has been seen.
        """
        on_own_head = self._head_is_current
        if not on_own_head:
            await self._catch_up()
        attempts = [request.attempts for request in group]
        prepared = _Prepared(group)
        states = self._states
        stored = await self._stored(
            [e.event_id for req in group if not req.ids_are_fresh for e in req.entries]
        )
        given = {request: _stored_as_given(request, stored) for request in group}
        needed: set[str] = set()
        for request in group:
            for index, entry in enumerate(request.entries):
                if index in given[request]:
                    # Answered with its position, no rule checked: what it names is not read.
                    continue
                own, streams = _streams_of(entry)
                for stream in streams:
                    if stream not in states:
                        needed.add(stream)
                if _assumes_absent(request, entry):
                    needed.discard(own)
        if needed:
            await self._load(needed)

        for number, request in enumerate(group, start=1):
            if not request.ids_are_fresh and any(
                e.event_id in prepared.ids for e in request.entries
            ):
                # An earlier request appends these ids (the same file imported twice at
                # once): once it has committed, they are found stored and this request is
                # answered idempotently instead of breaking the unique rule.
                prepared.deferred.append(request)
                continue
            try:
                while True:
                    try:
                        decision = await self._decide(
                            request, stored, given[request], prepared.states, prepared.versions
                        )
                        break
                    except MissingKnowledge as missing:
                        # Decisions are pure, so the request is simply decided again; with
                        # every stream it names loaded at once, not one per decision (each
                        # decides the whole request: one by one, a large import took hours).
                        await self._load(
                            missing.streams | self._unknown_streams(request, given[request])
                        )
                        # The cycle rule walks up the tree one parent at a time: loading
                        # the whole chain now decides the request again once, not once per
                        # level (a move under an org 2,000 deep, in an import of 5,000
                        # records, took over 5 minutes).
                        await self._load_ancestors(missing.streams)
                    except (BatchError, ConcurrencyError, DuplicateEventError):
                        if request.attempts > 0 or not any(
                            _assumes_absent(request, entry) for entry in request.entries
                        ):
                            raise
                        # Refused anyway: decide again on what is really stored, so that a
                        # record creating a stream that exists is named among the problems,
                        # which are told before a stale version or an id stored with other
                        # content, whether or not this log had the stream cached.
                        request.attempts = 1
                        await self._load(self._unknown_streams(request, given[request]))
            except (BatchError, StoreError) as error:
                prepared.refused.append((request, error))
                continue
            except _GivenUp:
                # The group is decided again without it (see _drain): the rest of this
                # decision would be thrown away.
                return prepared
            if number < len(group):
                # Only the later requests of the group read them: the last (a large import,
                # alone in its group) needs no second copy of its streams' states and ids.
                prepared.states.update(decision.states)
                prepared.versions.update(decision.versions)
                if not request.ids_are_fresh:
                    prepared.ids.update(event.event_id for event in decision.new_events)
            prepared.decided.append((request, decision))
        unseen = [
            entry.event_id
            for request, _ in prepared.refused
            if not request.ids_are_fresh
            for entry in request.entries
            if entry.event_id not in stored
        ]
        if unseen and await self._stored(unseen):
            # Another writer stored some of these records after their ids were looked up,
            # and the refusal may rest on what it wrote (the streams were loaded later):
            # decided again, records stored as given are answered as already present.
            return await self._prepare_again(group, attempts)
        if on_own_head and prepared.refused:
            known_head = self._known_head
            self._head_is_current = False
            await self._catch_up()
            if self._known_head != known_head:
                # Other writers have appended meanwhile: decided again on what they wrote.
                return await self._prepare_again(group, attempts)
            self._head_is_current = True
        return prepared

    async def _prepare_again(self, group: list[_Request], attempts: list[int]) -> _Prepared:
        """The group decided again from the start, on every event stored by now."""
        for request, tries in zip(group, attempts, strict=True):
            request.attempts = tries
        self._head_is_current = False
        return await self._prepare(group)

    def _unknown_streams(self, request: _Request, given: Mapping[int, int]) -> set[str]:
        """The streams the request's records name that the cache does not hold (but for
        those of records stored as given, which are not decided)."""
        states = self._states
        return {
            stream
            for index, entry in enumerate(request.entries)
            if index not in given
            for stream in _streams_of(entry)[1]
            if stream not in states
        }

    async def _stored(self, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, _StoredEvent]:
        """The events stored under these ids, noted compactly."""
        found: dict[uuid.UUID, _StoredEvent] = {}
        for start in range(0, len(ids), _LOOKUP_CHUNK):
            chunk = ids[start : start + _LOOKUP_CHUNK]
            events = await self.store.find_event_ids(chunk)
            for event_id in chunk:
                # Keyed by the record's own id: the store's copy of it is let go of too.
                event = events.get(event_id)
                if event is not None:
                    found[event_id] = _StoredEvent.of(event)
        return found

    def _finish(
        self, prepared: _Prepared, outcomes: Sequence[AppendResult | StoreError]
    ) -> list[_Request]:
        """Answer the committed requests; return those to decide again, in group order."""
        retry: list[_Request] = []
        appended_positions: list[int] = []
        for (request, decision), outcome in zip(prepared.decided, outcomes, strict=True):
            if isinstance(outcome, ConcurrencyError) and request.attempts < _RETRIES:
                # Decided on state another writer has since changed: reload and decide again.
                for stream in [*decision.expected, *decision.depends]:
                    self._states.pop(stream, None)
                    self._versions.pop(stream, None)
                request.attempts += 1
                retry.append(request)
                continue
            if isinstance(outcome, ConcurrencyError):
                # Not the caller's expected version (a stale one is refused when decided
                # again): what the decision read kept moving, however often it was retaken.
                outcome = StoreUnavailable(
                    f"other writers kept changing {outcome.stream}, which this batch rests on, "
                    f"while it was decided ({request.attempts + 1} tries); nothing was "
                    "written: try again"
                )
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
                    for index in range(len(request.entries))
                )
            appended_positions.extend(outcome.positions)
            if request.progress is not None:
                request.progress.completed()
            _answer(request.future, AppendOutcome(positions, outcome.appended))
        if appended_positions and min(appended_positions) == self._known_head + 1 and not retry:
            self._known_head = max(appended_positions)
            # Nothing of another writer's came before these: the cache is the log up to here.
            self._head_is_current = True
        elif appended_positions or retry:
            self._head_is_current = False
        waiting = {*retry, *prepared.deferred}
        return [request for request in prepared.group if request in waiting]

    async def _decide(
        self,
        request: _Request,
        stored: Mapping[uuid.UUID, _StoredEvent],
        given: Mapping[int, int],
        group_states: Mapping[str, EntityState],
        group_versions: Mapping[str, int],
    ) -> _Decision:
        decision = _Decision()
        knowledge = _LayeredKnowledge(decision.states, group_states, self._states)
        problems: list[RecordError] = []
        # Fresh ids are new UUIDv7s: neither stored nor repeated, so nothing to look up.
        check_ids = not request.ids_are_fresh
        first_use: dict[uuid.UUID, int] = {}
        creators: dict[str, list[int]] | None = None
        # A stale expected version is told once every record has been checked against the
        # rules, which come first (422 before 409): a writer told only of the version would
        # fix it and be refused again for a rule it was not told of.
        stale: ConcurrencyError | None = None
        duplicate: DuplicateEventError | None = None
        progress = request.progress
        for index, entry in enumerate(request.entries):
            if index and not index % _DECIDED_BETWEEN_TURNS:
                await asyncio.sleep(0)
                if request.future.cancelled():
                    raise _GivenUp
            if progress is not None and index and not index % _PROGRESS_STEP:
                progress.checked(index)
            if check_ids:
                if entry.event_id in first_use:
                    problems.append(
                        RecordError(
                            _id_used_twice(
                                entry.event_id, request.label(first_use[entry.event_id])
                            ),
                            where=request.label(index),
                            rule="event_id",
                        )
                    )
                    continue
                first_use[entry.event_id] = index
                if index in given:
                    decision.known_positions[index] = given[index]
                    continue
                previous = stored.get(entry.event_id)
                if previous is not None:
                    # Told once every record is checked against the rules, as a stale version
                    # is; meanwhile the record is checked as the new one it was meant to be.
                    duplicate = duplicate or DuplicateEventError(entry.event_id, previous.position)
            data_json = entry.data_json
            size = len(data_json) + (len(canonical_bytes(entry.meta)) if entry.meta else 0)
            if size > MAX_RECORD_BYTES:
                problems.append(
                    RecordError(
                        f"record is {size} bytes; at most {MAX_RECORD_BYTES}",
                        where=request.label(index),
                        rule="size",
                    )
                )
                continue
            # Made again from its data, and let go once decided.
            event = entry.event
            if _assumes_absent(request, entry):
                knowledge.assumed_absent = event.stream()
            try:
                events = decide(event, knowledge)
            except DomainError as error:
                where = request.label(index)
                if creators is None:
                    creators = _creators(request.entries)
                problems.extend(
                    _defined_elsewhere(problem, request, index, creators).located(where)
                    for problem in error.every()
                )
                events = []
            knowledge.assumed_absent = None
            for decided in events:
                conflict = self._add(
                    decision, knowledge, request, index, entry, event, decided, group_versions
                )
                stale = stale or conflict
        if problems:
            raise BatchError(problems)
        if duplicate is not None:
            raise duplicate
        if stale is not None:
            raise stale
        if progress is not None:
            progress.checked(progress.steps)
        # Another writer may change what was read (an ancestor moved while an organisation
        # was moved under it): the append then fails on a version and is decided again,
        # so no rule rests on a stale read.
        for stream in knowledge.read:
            if stream not in decision.expected:
                version = group_versions.get(stream) or self._versions.get(stream, 0)
                decision.depends[stream] = version or "no_stream"
        return decision

    def _add(
        self,
        decision: _Decision,
        knowledge: _LayeredKnowledge,
        request: _Request,
        index: int,
        entry: _Entry,
        own_event: Event,
        event: Event,
        group_versions: Mapping[str, int],
    ) -> ConcurrencyError | None:
        """Add one decided event to the request's decision, at its stream's next version
        (``own_event`` is the entry's, as the decision was given it); the conflict when the
        entry expected its stream at another version (added all the same, so that the
        records after it are checked on what it says)."""
        stream = event.stream()
        version = decision.versions.get(stream)
        if version is None:
            version = group_versions.get(stream)
            if version is None:
                version = self._versions.get(stream, 0)
        own = event is own_event
        # Against the version the batch has brought the stream to so far: a second record of
        # a stream in one batch expects what the first one left.
        conflict = self._version_conflict(entry, stream, version, request, index) if own else None
        if stream not in decision.expected:
            decision.expected[stream] = version if version else "no_stream"
        decision.states[stream] = evolve(None if version == 0 else knowledge.state(stream), event)
        decision.versions[stream] = version + 1
        schema_version, data, data_json = (
            # Only the text is kept: the append stores it.
            (entry.schema_version, _CanonicalData(entry.data_json), entry.data_json)
            if own
            else (event.schema_version, event.data(), None)
        )
        decision.new_events.append(
            NewEvent(
                entry.event_id if own else content_event_id(event),
                stream,
                event.type,
                schema_version,
                data,
                entry.meta,
                entry.recorded_at,
                entry.actor,
                data_json,
                entry.exported_hash if own else None,
            )
        )
        return conflict

    @staticmethod
    def _version_conflict(
        entry: _Entry, stream: str, actual: int, request: _Request, index: int
    ) -> ConcurrencyError | None:
        expected = entry.expected_version
        if expected is None or expected == "any":
            return None
        wanted = 0 if expected == "no_stream" else expected
        if wanted != actual:
            return ConcurrencyError(stream, expected, actual or None, where=request.label(index))
        return None

    # --- reading ---------------------------------------------------------------------------

    async def events(self, after: int = 0, limit: int | None = None) -> list[RecordedEvent]:
        """The events after position ``after``, in log order (see ``EventStore.read_all``)."""
        return await self.store.read_all(after=after, limit=limit)


def seeds_folder() -> Path | None:
    """./seeds when it holds seed files, else the copy packaged with (or beside) leaderlog;
    None when there is none."""
    local = Path("seeds")
    if local.is_dir() and any(local.glob("*.jsonl")):
        return local
    packaged = files("leaderlog").joinpath("_seeds")
    if packaged.is_dir():
        with as_file(packaged) as folder:
            return Path(folder)
    # An editable install runs from the source tree, whose seeds/ sits beside src/.
    checkout = Path(__file__).resolve().parents[2] / "seeds"
    if checkout.is_dir() and any(checkout.glob("*.jsonl")):
        return checkout
    return None


def seed_files(directory: Path | str) -> list[Path]:
    """The ``*.jsonl`` files of a seeds folder, in name order; a folder that is not there is
    an error (a mistyped one would otherwise load nothing without a word)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"seeds folder {directory} does not exist or is not a folder")
    return sorted(directory.glob("*.jsonl"))


async def load_seeds(
    log: EventLog,
    directory: Path | str | None = None,
    *,
    on_file: Callable[[Path, AppendOutcome], None] | None = None,
) -> AppendOutcome:
    """Import every ``*.jsonl`` file of a seeds folder, in name order, as actor ``seed``
    (by default the folder :func:`seeds_folder` finds: the seeds shipped with leaderlog
    unless ./seeds has some)."""
    if directory is None:
        directory = seeds_folder()
        if directory is None:
            raise FileNotFoundError("no seeds folder: ./seeds holds none, nor does leaderlog")
    positions: list[int] = []
    appended = 0
    for path in seed_files(directory):
        try:
            outcome = await log.import_file(path, actor="seed")
        except BatchError as error:
            # Several files load in turn: "line 1" alone would not say which.
            raise BatchError(
                [
                    p.located(f"{path.name} {p.where}" if p.where else path.name)
                    for p in error.problems
                ]
            ) from None
        positions.extend(outcome.positions)
        appended += outcome.appended
        if on_file:
            on_file(path, outcome)
    return AppendOutcome(tuple(positions), appended)
