"""Every error leaderlog raises on purpose.

Hierarchy::

    LeaderlogError
    ├── RecordError              a record cannot be read (bad JSON, unknown type, bad field)
    │   └── DomainError          a record breaks a domain rule (dangling reference, dead claim...)
    ├── BatchError               several problems in one batch; nothing of it was written
    ├── StoreError
    │   ├── ConcurrencyError     the expected version of a stream did not match
    │   ├── DuplicateEventError  an event id is already stored with other content
    │   ├── RecordedAtRefused    a given recorded time would run backwards or into the future
    │   ├── AppendRefused        a condition checked under the append's lock does not hold
    │   ├── UnreadableEvent      a stored row cannot be decoded (edited behind the store)
    │   └── StoreUnavailable     the database cannot be reached or opened, or is busy
    │       ├── StoreBusy        another transaction held a lock longer than a write waits
    │       ├── StoreUnreachable nothing answers at the database's address, or it is restarting
    │       ├── LogRemoved       the log was dropped while open (a refused first import, by
    │       │                    hand), or its SQLite file removed or replaced
    │       ├── StoreReadOnly    the database may be read but not written here
    │       ├── StoreDamaged     the SQLite file is damaged: restore it from a backup
    │       └── BuiltByAnotherVersion  a projection was rebuilt by another leaderlog version
    ├── ProjectionError          a projection cannot be loaded or answered
    │   ├── ProjectionFailed     projections could not apply some events; the others went on
    │   ├── ProjectionTimedOut   a user projection's apply ran past its time limit on a page
    │   │                        (the cause of its ProjectionFailure; it goes on with smaller
    │   │                        pages where it can)
    │   ├── UnknownEntity        no such org, post, person or claim (with suggestions)
    │   └── InvalidQuery         a date, time, position or filter cannot be understood
    ├── TokenError               a write token is unknown, revoked or malformed, or its name
    │   │                        has a live token already
    │   └── TokenNameRefused     a name cannot be given a token (malformed, reserved, or the
    │                            actor of events appended without one)
    └── FeedError                a feed cannot be made as asked (an unknown format)
        ├── FeedNotFound         no such organisation, person, post or archive page
        │                        (also a LookupError)
        └── UnknownLanguage      a language asked for that the feeds are not offered in
                                 (also a ValueError)

Beside them, outside :class:`Exception`::

    KeyboardInterrupt
    └── Interrupted              Ctrl-C, as the command line raises it

Each is importable from here and from :mod:`leaderlog`; the feed errors from
:mod:`leaderlog.feeds` too. This module imports no other part of leaderlog, so every other
module can import it.
"""

from __future__ import annotations

import traceback
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from leaderlog.feeds import Scope
    from leaderlog.projections import Queries

__all__ = [
    "AppendRefused",
    "BatchError",
    "BuiltByAnotherVersion",
    "ConcurrencyError",
    "DomainError",
    "DuplicateEventError",
    "FeedError",
    "FeedNotFound",
    "Interrupted",
    "InvalidQuery",
    "LeaderlogError",
    "LogRemoved",
    "ProjectionError",
    "ProjectionFailed",
    "ProjectionFailure",
    "ProjectionTimedOut",
    "RecordError",
    "RecordedAtRefused",
    "StoreBusy",
    "StoreDamaged",
    "StoreError",
    "StoreReadOnly",
    "StoreUnavailable",
    "StoreUnreachable",
    "TokenError",
    "TokenNameRefused",
    "UnknownEntity",
    "UnknownLanguage",
    "UnreadableEvent",
]


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, as leaderlog's command line raises it wherever the program happens to be.

    Told apart from a KeyboardInterrupt that a projection's ``apply`` raises itself, which is
    that projection's failure: this one stops the command, whichever code it lands in.
    """


class LeaderlogError(Exception):
    """Base class of every error leaderlog raises on purpose."""

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled (a process pool handing a worker's error back) as it is: its message and
        # attributes, made again without calling __init__, since most of these errors are
        # made from other arguments than their message (a stream and versions, a list of
        # problems). The default, cls(*args), could not make a ConcurrencyError again (the
        # pool then says it broke) and read a BatchError's message as its problems, one per
        # character.
        return (_made_again, (type(self), self.args), self.__dict__)


def _made_again(kind: type[LeaderlogError], args: tuple[object, ...]) -> LeaderlogError:
    """An error of ``kind`` with these ``args``, its ``__init__`` not called (unpickling sets
    its attributes next)."""
    return kind.__new__(kind, *args)


class RecordError(LeaderlogError):
    """A record cannot be read: not JSON, unknown type, a missing or invalid field.

    ``where`` names the record (``line 3``, ``record 0``); ``rule`` names what was broken.
    """

    def __init__(
        self,
        message: str,
        *,
        where: str | None = None,
        rule: str = "schema",
        fields: Sequence[tuple[str, str]] = (),
    ) -> None:
        self.message = message
        self.where = where
        self.rule = rule
        # (field path, problem) pairs, so an API can name every field at fault.
        self.fields = list(fields)
        super().__init__(f"{where}: {message}" if where else message)

    def located(self, where: str) -> RecordError:
        """The same problem, attributed to a record position."""
        return type(self)(self.message, where=where, rule=self.rule, fields=self.fields)

    def as_dict(self) -> dict[str, object]:
        problem: dict[str, object] = {
            "where": self.where,
            "rule": self.rule,
            "message": self.message,
        }
        if self.fields:
            problem["fields"] = [{"field": name, "problem": text} for name, text in self.fields]
        return problem


class DomainError(RecordError):
    """A well-formed record breaks a domain rule (references, claim lifecycle).

    ``others`` holds the further rules the same record breaks, so that one refusal can name
    every problem (:meth:`every`).
    """

    others: Sequence[DomainError] = ()

    def __init__(
        self,
        message: str,
        *,
        where: str | None = None,
        rule: str = "schema",
        fields: Sequence[tuple[str, str]] = (),
        missing: str | None = None,
        taken: str | None = None,
    ) -> None:
        super().__init__(message, where=where, rule=rule, fields=fields)
        # The stream a broken reference names, or the one registered again, so that a
        # caller can say where it is defined.
        self.missing = missing
        self.taken = taken

    def every(self) -> list[DomainError]:
        return [self, *self.others]


class BatchError(LeaderlogError):
    """One or more records of a batch were refused; nothing of the batch was written."""

    def __init__(self, problems: Sequence[RecordError]) -> None:
        self.problems = list(problems)
        lines = [str(problem) for problem in self.problems[:20]]
        if len(self.problems) > 20:
            lines.append(f"... and {len(self.problems) - 20} more")
        super().__init__("\n".join(lines))


class StoreError(LeaderlogError):
    """The event store refused or failed an operation."""


class ConcurrencyError(StoreError):
    """A stream's version is not the one the writer expected."""

    def __init__(
        self,
        stream: str,
        expected: int | Literal["no_stream", "any"],
        actual: int | None,
        *,
        where: str | None = None,
    ) -> None:
        self.stream = stream
        self.expected = expected
        self.actual = actual
        self.where = where
        shown = "no stream" if actual is None else f"version {actual}"
        #: What went wrong, without ``where``.
        self.message = f"stream {stream!r} expected version {expected!r}, found {shown}"
        super().__init__(f"{where}: {self.message}" if where else self.message)


class AppendRefused(StoreError):
    """A condition the append checks in its own transaction, under the lock every writer
    takes, does not hold (what a caller checked before may have changed since); nothing of
    the batch was written."""


class DuplicateEventError(StoreError):
    """An event id is already stored with different content."""

    def __init__(self, event_id: uuid.UUID, position: int) -> None:
        self.event_id = event_id
        self.position = position
        super().__init__(
            f"event id {event_id} is already stored at position {position} with other content"
        )


class UnreadableEvent(StoreError):
    """A stored row cannot be decoded into an event: edited behind the store's back, or
    written by a newer leaderlog (a newer ``schema_version`` or an unknown type)."""

    def __init__(self, position: int, reason: str, stored_hash: str = "") -> None:
        self.position = position
        self.reason = reason
        # The row's hash column, when it is text, so verify can name where it stopped.
        self.stored_hash = stored_hash
        super().__init__(f"event at position {position} cannot be read: {reason}")


class RecordedAtRefused(StoreError):
    """A given recorded time would make the log's clock run backwards or into the future."""

    def __init__(self, event_id: uuid.UUID, message: str) -> None:
        self.event_id = event_id
        super().__init__(f"event {event_id}: {message}")


class StoreUnavailable(StoreError):
    """The database cannot be opened or reached, or cannot do this now (busy, rebuilding).

    The message may name the database's address; ``public`` is what anyone may be told (an
    HTTP client, say), by default only that it is worth trying again.
    """

    def __init__(self, message: str, *, public: str | None = None) -> None:
        super().__init__(message)
        self.public = public or "the database is busy or unreachable; try again shortly"


class ProjectionError(LeaderlogError):
    """A projection is unknown, cannot be loaded, or cannot answer a query."""


class UnknownEntity(ProjectionError):
    """The org, post, person or claim asked about does not exist (as known at that time).

    ``suggestions`` holds the ids of entities the asker may have meant, best first.
    """

    def __init__(self, message: str, suggestions: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.suggestions = tuple(suggestions)


class InvalidQuery(ProjectionError):
    """A date, time, position or filter cannot be understood; ``parameter`` names it as the
    HTTP API does (``as_of``, ``known_at``, ``org``...), when one is at fault; ``against``,
    the other one a message about two names after it, as ``from (...) is after to (...)``."""

    def __init__(
        self, message: str, *, parameter: str | None = None, against: str | None = None
    ) -> None:
        super().__init__(message)
        self.parameter = parameter
        self.against = against
        #: The question's other refused values, when it had several (see ``all``).
        self.others: tuple[InvalidQuery, ...] = ()

    @property
    def all(self) -> tuple[InvalidQuery, ...]:
        """This refusal, then those of the question's other values refused with it."""
        return (self, *self.others)

    def named_as(self, spelling: str, against_spelling: str | None = None) -> str:
        """The message with the parameter called as the caller knows it (``--known-at`` on
        the command line, ``known_at`` in a URL): messages start with its name, in words,
        and name ``against`` as `` <against> (``."""
        message = str(self)
        if self.parameter is None:
            return message
        if self.against is not None and against_spelling is not None:
            message = message.replace(f" {self.against} (", f" {against_spelling} (", 1)
        for written in (self.parameter.replace("_", "-"), self.parameter):
            if message == written or message.startswith((f"{written} ", f"{written}:")):
                return spelling + message[len(written) :]
        return message


@dataclass(frozen=True)
class ProjectionFailure:
    """One projection that could not apply events ``first``..``last``, and why; both are
    ``None`` when it could not even create its tables (its ``schema()`` failed)."""

    name: str
    first: int | None
    last: int | None
    cause: Exception

    @property
    def at_a_newer_version_s_event(self) -> bool:
        """Whether it stopped at a stored event a newer leaderlog wrote (a newer
        ``schema_version``, or a type this version does not know): nothing here can fix it."""
        return isinstance(self.cause, RecordError) and self.cause.rule in ("schema_version", "type")

    def __str__(self) -> str:
        # One line: a database's message may run over several ("...\nDETAIL: ...").
        reason = " ".join(str(self.cause).split())
        if self.first is None or self.last is None:
            return (
                f"projection {self.name} could not create its tables: {reason}; "
                "it is left out until that is fixed"
            )
        cause = f"{type(self.cause).__name__}: {reason}{_where_raised(self.cause)}"
        span = (
            f"event {self.first}" if self.first == self.last else f"events {self.first}-{self.last}"
        )
        until = "that is fixed"
        if self.at_a_newer_version_s_event:
            until = "the leaderlog version that wrote that event runs"
        return (
            f"projection {self.name} could not apply {span}: {cause}; "
            f"it stays at position {self.first - 1} until {until}"
        )


class ProjectionFailed(ProjectionError):
    """Some projections raised while applying events; every other one went on.

    ``failures`` holds one :class:`ProjectionFailure` per projection that stopped: its rows
    from the failing page were rolled back and its checkpoint stays before that page.
    ``position`` is where the others stand (the head the run went to), when known.
    """

    def __init__(
        self, failures: Sequence[ProjectionFailure], *, position: int | None = None
    ) -> None:
        self.failures = tuple(failures)
        #: The position every other projection of the run reached, when known.
        self.position = position
        super().__init__("; ".join(str(failure) for failure in self.failures))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(failure.name for failure in self.failures)


def _where_raised(error: BaseException) -> str:
    """`` (file, line N)`` of the innermost frame that raised ``error``, if known."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return ""
    return f" ({frames[-1].filename}, line {frames[-1].lineno})"


class ProjectionTimedOut(ProjectionError):
    """A user projection's ``apply`` ran past the runner's time limit for one page, and was
    stopped: it runs inside the write transaction, which holds back every writer meanwhile.

    ``seconds`` is the limit; ``next_page`` the smaller page it is tried on next, or None
    when the page already held one event (it then stays where it is until fixed).
    """

    def __init__(self, seconds: float, next_page: int | None) -> None:
        super().__init__(f"apply() took longer than {seconds:g} s")
        self.seconds = seconds
        self.next_page = next_page


class TokenError(LeaderlogError):
    """A write token is unknown, revoked or malformed."""


class TokenNameRefused(TokenError):
    """A name cannot be given a token: it is malformed, reserved for the log's own actors, or
    already recorded as the actor of events that no token of that name wrote."""


class FeedError(LeaderlogError):
    """A feed cannot be made as asked; :class:`FeedNotFound` and :class:`UnknownLanguage`
    are its kinds."""


class FeedNotFound(FeedError, LookupError):
    """No such organisation, person, post or archive page.

    ``scope`` is the feed's :class:`leaderlog.feeds.Scope` when its subject is unknown, None
    for a missing page; ``entries`` then counts the scope's filings when it was asked.
    """

    def __init__(
        self, message: str, scope: Scope | None = None, *, entries: int | None = None
    ) -> None:
        super().__init__(message)
        self.scope = scope
        self.entries = entries

    async def explained(self, queries: Queries) -> str:
        """The message, naming the ids probably meant when the feed's subject is unknown
        (``org:ero`` names ``ice-ero``). Needs the leadership projection built."""
        scope = self.scope
        if scope is None or scope.id is None or scope.subject_kind is None:
            return str(self)
        return str(await queries.unknown(scope.subject_kind, scope.id))


class UnknownLanguage(FeedError, ValueError):
    """A language was asked for explicitly that the feeds are not offered in; ``offered``
    holds the tags of those they are."""

    def __init__(self, asked: str, offered: Sequence[str] = ()) -> None:
        self.asked = asked
        self.offered = tuple(offered)
        choices = f"; choose one of {', '.join(self.offered)}" if self.offered else ""
        # Named by its start: a tag of thousands of characters is not copied into the answer.
        shown = f"{asked[:57]!r}..." if len(asked) > 60 else repr(asked)
        super().__init__(f"language {shown} is not offered{choices}")


class StoreBusy(StoreUnavailable):
    """The database is busy: another transaction held a lock longer than a write waits
    (SQLite's busy timeout, PostgreSQL's lock_timeout). Worth trying again."""


class StoreUnreachable(StoreUnavailable):
    """Nothing answers at the database server's address (the connection is refused, or not
    answered in time), or the server is starting up or shutting down: worth trying again, as
    a restart ends. A wrong database, user or password is not this: it will not pass."""


class LogRemoved(StoreUnavailable):
    """The log was removed while this store had it open: a first import refused in another
    process dropped the empty log it had created (nothing was written; trying again creates
    it again, and is answered on the records, not on a missing table), or its table or
    PostgreSQL schema was dropped by hand (restore it, then open it again), or its SQLite file
    was removed or replaced by another (a copy moved over it): the store would go on with the
    old file, and what it wrote would be lost with it, so it stops until opened again."""


class StoreReadOnly(StoreUnavailable):
    """The database may be read but not written here: a SQLite file or folder this process
    may not write (a server then needs a restart, as SQLite keeps a connection opened
    read-only so), or a PostgreSQL connection that may only read (a hot standby, or
    ``default_transaction_read_only``). Not worth trying again until that changes."""


class StoreDamaged(StoreUnavailable):
    """The database file is damaged (SQLite reports it malformed, or not a database): no
    retry mends it; restore it from a backup, or export what still reads."""


class BuiltByAnotherVersion(StoreUnavailable):
    """A built-in projection's tables were rebuilt by another leaderlog version, in the shape
    that version reads. Not worth trying again soon: nothing changes them back until this
    version rebuilds them (its restart does)."""
