"""The projection contract: a named, versioned read model fed from the log in pages.

A projection owns a few tables (named ``p_<projection>_...``) in the same database as the log.
The runner hands it pages of recorded events in position order, inside a transaction that
also writes the projection's checkpoint, so rows and checkpoint always commit together.

Rules a projection follows:

- ``schema()`` is portable DDL for SQLite and PostgreSQL: ``CREATE TABLE/INDEX IF NOT EXISTS``,
  types ``TEXT``, ``BIGINT`` and ``DOUBLE PRECISION``, JSON kept as ``TEXT``.
- SQL uses ``?`` placeholders and ``INSERT ... ON CONFLICT (...) DO UPDATE`` for upserts.
- ``apply`` only reads its own tables; the runner may apply projections at different
  checkpoints, so another projection's rows are not a consistent input.
- ``apply`` must work a page at a time: a handful of statements per page, never one
  round trip per event.
- Bumping ``version`` makes the runner drop ``tables()`` and rebuild from the log.
- Indexes that only queries need may go in ``query_indexes()`` so a rebuild builds them once,
  after the bulk load.
"""

from __future__ import annotations

import abc
import datetime as dt
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

from leaderlog.errors import RecordError
from leaderlog.events import (
    Event,
    RecordedEvent,
    current_schema_version,
    format_time,
    readable_event,
    upcast,
)
from leaderlog.projections._sql import chunks, marks
from leaderlog.store.base import MAX_POSITION, ProjectionTransaction

__all__ = [
    "CHECKPOINT_SCHEMA",
    "CHECKPOINT_TABLE",
    "Projection",
    "ProjectionTransaction",
    "check_owned_names",
    "chunks",
    "decode",
    "marks",
    "not_built",
    "owner_of",
    "payload",
    "recorded_time",
    "shared_decoding",
    "tables_created",
    "taken_names",
]

CHECKPOINT_TABLE = "projection_checkpoints"


def not_built(name: str) -> str:
    """What to say of a projection never built in the database read, to a user of the
    command line or of the library alike."""
    return (
        f"the {name} projection has not been built; run `leaderlog rebuild` "
        "(from Python: await (await runner_for(store)).catch_up())"
    )


CHECKPOINT_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {CHECKPOINT_TABLE} ("
    "name TEXT PRIMARY KEY, version BIGINT NOT NULL, position BIGINT NOT NULL)"
)


class Projection(abc.ABC):
    """One read model. Subclasses set ``name`` and ``version`` and implement the three methods."""

    name: ClassVar[str]
    version: ClassVar[int]

    @abc.abstractmethod
    def schema(self) -> Sequence[str]:
        """Portable DDL statements, each ``CREATE TABLE/INDEX IF NOT EXISTS``."""

    @abc.abstractmethod
    def tables(self) -> Sequence[str]:
        """The projection's table names; dropped when it is rebuilt."""

    @abc.abstractmethod
    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        """Fold one page of events (in position order) into the projection's tables."""

    def query_indexes(self) -> Sequence[str]:
        """Optional: ``CREATE INDEX IF NOT EXISTS`` statements that only queries use.

        ``apply`` must never need them. A rebuild creates them once after replaying the log,
        which is much cheaper than maintaining them row by row; otherwise they are created
        with the schema.
        """
        return ()


_TABLE_NAME = re.compile(r"[a-z][a-z0-9_]*")
# PostgreSQL cuts a longer name to this many bytes, so two long names could become one.
LONGEST_IDENTIFIER = 63
# A name ends where the statement goes on: a name followed by a quote or a dot is no plain name.
_DDL = re.compile(
    r"\s*CREATE\s+(?:UNIQUE\s+)?(TABLE|INDEX)\s+IF\s+NOT\s+EXISTS\s+(\w+)(?=[\s(]|$)"
    r"(?:\s+ON\s+(\w+)(?=[\s(]|$))?",
    re.IGNORECASE,
)


def tables_created(projection: Projection) -> set[str]:
    """The tables ``schema()`` creates (lower-case), as far as ``tables()`` lists them."""
    listed = {table.lower() for table in projection.tables()}
    created = set()
    for statement in projection.schema():
        found = _DDL.match(statement)
        if found is not None and found.group(1).upper() == "TABLE":
            created.add(found.group(2).lower())
    return created & listed


_IF_NOT_EXISTS = re.compile(r"\bIF\s+NOT\s+EXISTS\b", re.IGNORECASE)
_CREATE = re.compile(r"\s*CREATE\s+(?:UNIQUE\s+)?(?:TABLE|INDEX)\b", re.IGNORECASE)
_QUOTED_NAME = re.compile(
    r"\s*CREATE\s+(?:UNIQUE\s+)?(?:TABLE|INDEX)\s+(?:IF\s+NOT\s+EXISTS\s+)?"
    r"(?:\w+\s+ON\s+)?([\"`\[][^\"`\]]*[\"`\]])",
    re.IGNORECASE,
)


def owner_of(name: str, projections: Iterable[str]) -> str | None:
    """The projection whose ``p_<projection>_`` prefix ``name`` carries; the longest wins,
    so ``p_feed_entries_versions`` belongs to ``feed_entries`` even beside a ``feed``."""
    owners = [p for p in projections if name.lower().startswith(f"p_{p}_")]
    return max(owners, key=len, default=None)


def _shape_problems(projection: Projection) -> list[str]:
    """What its version and declarations get wrong in kind (a string where a list of them
    belongs would otherwise be read one character at a time)."""
    problems: list[str] = []
    version = projection.version
    if type(version) is not int or not 1 <= version <= MAX_POSITION:
        problems.append(f"version {version!r} is not a whole number from 1 to {MAX_POSITION}")
    for method in (projection.tables, projection.schema, projection.query_indexes):
        declared = method()
        if (
            isinstance(declared, str)
            or not isinstance(declared, Sequence)
            or not all(isinstance(item, str) for item in declared)
        ):
            problems.append(
                f"{method.__name__}() returned {type(declared).__name__}: it must return a "
                "list of strings"
            )
    return problems


def check_owned_names(projection: Projection, others: Iterable[str] = ()) -> list[str]:
    """What is wrong with the tables and DDL a projection declares, as messages.

    The runner drops ``tables()`` on every rebuild and runs ``schema()`` on every start, so
    a name outside the projection's own ``p_<name>_`` prefix could destroy the log itself or
    another projection's rows. ``others`` are the names of projections it runs beside.
    """
    problems = _shape_problems(projection)
    if problems:
        return problems
    everyone = {projection.name, *others}

    def check(name: str, what: str) -> None:
        if len(name.encode()) > LONGEST_IDENTIFIER:
            problems.append(
                f"{what} name {name!r} is longer than {LONGEST_IDENTIFIER} bytes (PostgreSQL "
                "would cut it, and two such names could become one)"
            )
            return
        owner = owner_of(name, everyone)
        if owner == projection.name:
            return
        whose = f"it belongs to projection {owner}" if owner else "it is not its own"
        problems.append(f"{what} {name!r}: {whose}; its names start with p_{projection.name}_")

    for table in projection.tables():
        if not _TABLE_NAME.fullmatch(table):
            problems.append(f"table name {table!r} is not valid: use a-z, 0-9 and _")
        else:
            check(table, "table")
    listed = {table.lower() for table in projection.tables()}
    for method in (projection.schema, projection.query_indexes):
        for statement in method():
            found = _DDL.match(statement)
            wrong = _statement_problem(statement, found)
            if found is None or wrong:
                problems.append(f"statement {_shown(statement)} {wrong}")
                continue
            kind, created, table = found.groups()
            check(created, kind.lower())
            if table is not None:
                check(table, "table")
            own = owner_of(created, everyone) == projection.name
            if kind.upper() == "TABLE" and own and created.lower() not in listed:
                # A rebuild drops only what tables() lists: this one would keep its rows
                # from every earlier build, and --forget would be the only way to drop it.
                problems.append(
                    f"table {created!r} is created by {method.__name__}() but not listed in "
                    "tables(): list it in tables(), so that a rebuild drops it"
                )
    return list(dict.fromkeys(problems))


def _shown(statement: str) -> str:
    shown = " ".join(statement.split())
    return repr(shown if len(shown) <= 60 else f"{shown[:57]}...")


def _statement_problem(statement: str, found: re.Match[str] | None) -> str:
    """Why a ``schema()`` or ``query_indexes()`` statement is refused ("" if it is not)."""
    if statement.lstrip().startswith(("--", "/*")):
        # Refused rather than skipped: what a comment hides cannot be checked.
        return "starts with a comment: give the statement alone, with comments in Python"
    quoted = _QUOTED_NAME.match(statement)
    if quoted is not None:
        bare = quoted.group(1)[1:-1]
        return (
            f"names a table or index in quotes ({quoted.group(1)}): write it unquoted "
            f"({bare}), as its owner's names are checked"
        )
    second = _second_statement(statement)
    if second:
        return second
    if found is None:
        if _CREATE.match(statement) and not _IF_NOT_EXISTS.search(statement):
            return "lacks IF NOT EXISTS: every start runs it again"
        return "is not one CREATE TABLE/INDEX IF NOT EXISTS with a plain name (a-z, 0-9 and _)"
    if found.group(1).upper() == "INDEX" and found.group(3) is None:
        return "does not say which table the index is ON (ON <table> (...))"
    return ""


# Quoted text and comments, read alike by SQLite and PostgreSQL once _READ_APART is ruled out
# (a -- comment ends at a carriage return too, as on PostgreSQL).
_QUOTES_AND_COMMENTS = re.compile(
    r"""'(?:[^']|'')*'|"(?:[^"]|"")*"|--[^\r\n]*|/\*.*?\*/""", re.DOTALL
)
# What one of the two databases reads as part of a quote or comment where the other does
# not: a backslash (an escape in PostgreSQL's E'...'), $ (its dollar quotes $$...$$), [ and `
# (SQLite's quoted names), a carriage return (the end of a -- comment on PostgreSQL only);
# and a comment opened inside another (PostgreSQL nests them, SQLite ends both at one */).
_READ_APART = re.compile(r"[\\$\[`\r]")


def _second_statement(statement: str) -> str:
    """Why ``statement`` holds, or may hold, a statement after its first ("" if it cannot).

    A ';' in quoted text or a comment is part of the statement (``DEFAULT 'a;b'``), but only
    where both databases agree on where that quote or comment ends: PostgreSQL runs every
    statement of a string given without parameters.
    """
    code = _QUOTES_AND_COMMENTS.sub(" ", statement)
    if ";" in code.rstrip().rstrip(";"):
        return "holds a ';': give each statement as a string of its own"
    if ";" not in statement.rstrip().rstrip(";"):
        return ""
    apart = _READ_APART.search(statement)
    nested = any(
        "/*" in found.group()[2:]
        for found in _QUOTES_AND_COMMENTS.finditer(statement)
        if found.group().startswith("/*")
    )
    if apart is None and not nested:
        return ""
    if apart is None:
        beside = "a comment inside a comment"
    elif apart.group() == "\r":
        beside = "a carriage return"
    else:
        beside = f"'{apart.group()}'"
    return (
        f"holds a ';' in quotes or a comment beside {beside}, which SQLite and PostgreSQL "
        "do not read alike (one of them could take the ';' for the end of the statement): "
        "leave out one or the other"
    )


def _declared_names(projection: Projection) -> list[str]:
    """The table and index names a projection lists or creates, as far as they can be read."""
    names = [table for table in projection.tables() if _TABLE_NAME.fullmatch(table)]
    for statement in (*projection.schema(), *projection.query_indexes()):
        found = _DDL.match(statement)
        if found is not None:
            names += [name for name in found.groups()[1:] if name is not None]
    return list(dict.fromkeys(names))


def taken_names(projection: Projection, claimant: str) -> list[str]:
    """The names ``projection`` declares that would belong to ``claimant`` beside it.

    A projection named ``leadership_org`` takes ``p_leadership_org_tree`` from ``leadership``:
    its longer prefix wins, so rebuilding either would drop the other's table.
    """
    beside = {projection.name, claimant}
    return [name for name in _declared_names(projection) if owner_of(name, beside) == claimant]


# Several projections read the same page; decoding a payload with pydantic costs more than
# most projections spend on it, so the runner lets them share one decode per event.
_page_cache: dict[int, tuple[RecordedEvent, Event]] | None = None


@contextmanager
def shared_decoding() -> Iterator[None]:
    """While active, :func:`decode` decodes each recorded event once (the runner, per page)."""
    global _page_cache
    previous, _page_cache = _page_cache, {}
    try:
        yield
    finally:
        _page_cache = previous


def decode(recorded: RecordedEvent) -> Event:
    """The event's payload as its current model (upcast if stored in an older shape)."""
    cache = _page_cache
    if cache is None:
        return _readable(recorded)
    hit = cache.get(id(recorded))
    # The cached entry keeps the recorded event alive, so its id cannot be reused meanwhile.
    if hit is not None and hit[0] is recorded:
        return hit[1]
    event = _readable(recorded)
    cache[id(recorded)] = (recorded, event)
    return event


def _readable(recorded: RecordedEvent) -> Event:
    try:
        return readable_event(recorded.type, recorded.schema_version, recorded.data)
    except RecordError as error:
        raise _at_its_position(error, recorded) from None


def _at_its_position(error: RecordError, recorded: RecordedEvent) -> RecordError:
    """The refusal of a stored event (one a newer version wrote, say), naming where it is
    in the log: the page a projection stops at holds thousands."""
    return error.located(f"event at position {recorded.position}")


def payload(recorded: RecordedEvent) -> dict[str, Any]:
    """The stored data in its current shape, without validating it again.

    Stored events were validated when appended; reading them as plain data is several times
    cheaper than :func:`decode`, which matters when a rebuild replays millions of them.
    """
    try:
        if recorded.schema_version == current_schema_version(recorded.type):
            return recorded.data
        return upcast(recorded.type, recorded.schema_version, recorded.data)
    except RecordError as error:
        raise _at_its_position(error, recorded) from None


# Events appended together share their recorded time, so formatting each distinct one once
# saves most of the work.
_formatted: dict[dt.datetime, str] = {}


def recorded_time(recorded: RecordedEvent) -> str:
    """``recorded_at`` as stored: RFC 3339 in UTC with microseconds."""
    moment = recorded.recorded_at
    text = _formatted.get(moment)
    if text is None:
        if len(_formatted) > 4096:
            _formatted.clear()
        text = _formatted[moment] = format_time(moment)
    return text
