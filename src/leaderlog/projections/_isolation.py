"""Projections that stop alone: stand-ins for user projections the runner cannot run, the
transaction wrapper that catches an ``apply`` going on after a failed statement, and how each
failure is worded (naming the projection, the events and its own line that raised)."""

from __future__ import annotations

import re
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from leaderlog.errors import ProjectionError, ProjectionFailure, ProjectionTimedOut
from leaderlog.events import RecordedEvent
from leaderlog.projections.base import (
    Projection,
    ProjectionTransaction,
    check_owned_names,
    taken_names,
)
from leaderlog.projections.loading import module_file, shown_path

__all__ = [
    "RUNNER_SAVEPOINT",
    "Escaped",
    "Explained",
    "LeftOut",
    "Watched",
    "WentOn",
    "apply_failure",
    "is_builtin",
    "leave_out_clashes",
    "left_out",
    "module_name",
    "older_than_stored",
]

# Until when a stand-in stays out: a running server loads projection modules only at start.
_UNTIL_FIXED = "that is fixed (a running server loads its module again when restarted)"


@dataclass(frozen=True)
class Explained(ProjectionFailure):
    """A failure worded by the runner, where the cause's own text would mislead or say too
    little: a stand-in's reason, a statement ``apply`` caught, ``sys.exit()``."""

    text: str

    def __str__(self) -> str:
        # One line, as ProjectionFailure's own: a cause's text may run over several, and a
        # log line of its own would pass for another problem.
        return " ".join(self.text.split())


class LeftOut(Projection):
    """Stands in for a user projection the runner cannot run.

    It is listed with its checkpoint (so its lag shows) and reported at every run, and never
    prepared, applied, rebuilt or dropped. Make one with :func:`left_out`.
    """

    def __init__(self, reason: str, until: str = _UNTIL_FIXED) -> None:
        self.reason = reason
        self.until = until

    def schema(self) -> Sequence[str]:
        return ()

    def tables(self) -> Sequence[str]:
        return ()

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        raise ProjectionError(f"projection {self.name} is left out: {self.reason}")

    def failure(self, position: int) -> ProjectionFailure:
        """What each run reports while the projection stays at ``position``."""
        return Explained(
            self.name,
            None,
            None,
            ProjectionError(self.reason),
            f"projection {self.name} is left out: {self.reason}; it stays at position "
            f"{position} until {self.until}",
        )


def left_out(name: str, version: int, reason: str, until: str = _UNTIL_FIXED) -> LeftOut:
    """A stand-in for the user projection ``name``.

    ``version`` is best the one stored in the database: a health check that compares stored
    and loaded versions then sees the projection as lagging, not as another leaderlog's.
    """

    class StandIn(LeftOut):
        pass

    StandIn.name = name
    StandIn.version = version
    return StandIn(reason, until)


def older_than_stored(projection: Projection, stored: int) -> LeftOut:
    """A stand-in for the user projection ``projection`` whose module is at an older version
    than the ``stored`` one: another folder's older copy of a module (two checkouts on one
    log), or a module taken back. Rebuilt, each would drop what the other built at every
    command, so the older leaves the newer as it is until asked by name."""
    return left_out(
        projection.name,
        stored,
        f"its module {module_name(projection)} is at version {projection.version}, but the "
        f"database holds version {stored}, built from a newer one (another folder's copy, "
        "say); an older version is not rebuilt over a newer one",
        until=f"its module is at version {stored} or later (a running server loads it again "
        f"when restarted), or `leaderlog rebuild {projection.name}` builds version "
        f"{projection.version} over it",
    )


def is_builtin(projection: Projection) -> bool:
    # Imported here: the package imports this module to assemble its built-ins.
    from leaderlog.projections import BUILTIN

    known = BUILTIN.get(projection.name)
    return known is not None and isinstance(projection, known)


def _source(projection: Projection) -> str:
    """``projections/x.py: `` for messages about a projection's declarations."""
    found = module_file(projection)
    return f"{shown_path(found)}: " if found else ""


def module_name(projection: Projection) -> str:
    found = module_file(projection)
    return shown_path(found) if found else f"its class {type(projection).__qualname__}"


def leave_out_clashes(projections: list[Projection]) -> list[Projection]:
    """The projections, with a stand-in for each user projection whose names are not its own.

    A rebuild drops every table a projection lists and a start runs its schema, so one that
    declares another's table (or the log's) must never run. A user projection's such mistake
    stops it alone; a built-in's is leaderlog's own bug, and raises.
    """
    names = [projection.name for projection in projections]
    builtin = {projection.name for projection in projections if is_builtin(projection)}
    reasons: dict[str, str] = {}
    for projection in projections:
        if isinstance(projection, LeftOut):
            continue
        problems = check_owned_names(projection, names)
        if not problems:
            continue
        if projection.name not in builtin:
            reasons.setdefault(projection.name, _source(projection) + "; ".join(problems))
            continue
        # A user projection whose longer prefix takes a built-in's tables is the one to stop.
        for other in projections:
            taken = [] if other.name in builtin else taken_names(projection, other.name)
            if taken:
                reasons[other.name] = (
                    f"{_source(other)}the name {other.name!r} would take {', '.join(taken)} "
                    f"from the built-in projection {projection.name}: choose another name"
                )
        remaining = check_owned_names(projection, [n for n in names if n not in reasons])
        if remaining:
            raise ProjectionError(f"projection {projection.name}: " + "; ".join(remaining))
    return [
        left_out(p.name, p.version, reasons[p.name])
        if p.name in reasons and not isinstance(p, LeftOut)
        else p
        for p in projections
    ]


_ROLLBACK_TO = re.compile(r"\s*ROLLBACK(?:\s+(?:TRANSACTION|WORK))?\s+TO\b", re.IGNORECASE)
# Statements that would end the page's transaction under the runner (committing a part of
# it without its checkpoint, or losing the other projections' rows) on either database.
_ENDING = re.compile(
    r"(?:BEGIN|COMMIT|END|ABORT|START\s+TRANSACTION|PREPARE\s+TRANSACTION"
    r"|ROLLBACK(?!\s+(?:(?:TRANSACTION|WORK)\s+)?TO\b))\b",
    re.IGNORECASE,
)
# A statement whose effect outlives the page on its connection, which the runner and the
# built-ins go on using: DEALLOCATE drops the prepared statements the PostgreSQL driver keeps
# there, so every later statement it had prepared would fail, the built-ins' answers too.
_DEALLOCATING = re.compile(r"DEALLOCATE\b", re.IGNORECASE)
_ENDS_THE_TRANSACTION = (
    "would end the runner's transaction or take its savepoint (it commits each page with the "
    "checkpoint)"
)
_DROPS_PREPARED_STATEMENTS = (
    "would drop the prepared statements kept on the database connection, which leaderlog "
    "goes on using after the page"
)
# What may hide a statement's first word: comments, and quoted text holding a semicolon.
_COMMENTS = r"/\*.*?\*/|--[^\n]*"
_NOT_CODE = re.compile(rf"{_COMMENTS}|'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"", re.DOTALL)


# The savepoint each projection's page runs in: a projection making, releasing or rolling
# back one of that name would take the runner's place.
RUNNER_SAVEPOINT = "one_projection"
_RUNNERS = re.compile(
    r"(?:SAVEPOINT|RELEASE(?:\s+SAVEPOINT)?|ROLLBACK(?:\s+(?:TRANSACTION|WORK))?\s+TO"
    rf"(?:\s+SAVEPOINT)?)\s+\"?{RUNNER_SAVEPOINT}\"?(?!\w)",
    re.IGNORECASE,
)


def _refused_statement(sql: str) -> tuple[str, str] | None:
    """The first statement of ``sql`` that a projection may not run, with why, if any (a
    text may hold several: PostgreSQL runs them all when no parameters are given)."""
    # The savepoint's name may be quoted: only comments are taken out for it.
    for statement in re.sub(_COMMENTS, " ", sql, flags=re.DOTALL).split(";"):
        if _RUNNERS.match(statement.strip()):
            return statement.strip(), _ENDS_THE_TRANSACTION
    for statement in _NOT_CODE.sub(" ", sql).split(";"):
        if _ENDING.match(statement.strip()):
            return statement.strip(), _ENDS_THE_TRANSACTION
        if _DEALLOCATING.match(statement.strip()):
            return statement.strip(), _DROPS_PREPARED_STATEMENTS
    return None


# What a statement's parameters may be on both databases (bool is an int).
_PORTABLE = (int, float, str, bytes, bytearray, memoryview)


class Watched(ProjectionTransaction):
    """The transaction as ``apply`` sees it, remembering the first statement that failed.

    On PostgreSQL a failed statement aborts the transaction: an ``apply`` that catches the
    error and goes on (SQLite's ignore-duplicates idiom) fails at its next statement with
    "current transaction is aborted", and so would every projection after it. The runner
    makes such a page that projection's failure, named by the statement's own error, on
    every database alike. Rolling back to a savepoint of its own undoes the failure, as
    PostgreSQL allows.
    """

    def __init__(self, tx: ProjectionTransaction, *, check_parameters: bool = False) -> None:
        self._tx = tx
        self._check_parameters = check_parameters
        self.failed: Exception | None = None
        self._failed_later: list[Exception] = []

    def _refuse_unportable(self, rows: Iterable[Sequence[Any]]) -> None:
        """A parameter of a type only one database takes: SQLite stores a datetime as
        ``str()`` gives it, where PostgreSQL refuses it, so a projection written against
        SQLite would fail on PostgreSQL alone."""
        if not self._check_parameters:
            return
        for row in rows:
            for number, value in enumerate(row, 1):
                if value is not None and not isinstance(value, _PORTABLE):
                    error = ProjectionError(
                        f"parameter {number} of a projection's statement is a "
                        f"{type(value).__name__}: pass None, a whole number, a float, text or "
                        "bytes, which SQLite and PostgreSQL take alike (a time as text, as "
                        "leaderlog.events.format_time writes it)"
                    )
                    self._remember(error)
                    raise error

    def _remember(self, error: Exception) -> None:
        if self.failed is None:
            self.failed = error
        else:
            self._failed_later.append(error)

    def failed_later(self, error: BaseException) -> bool:
        """Whether ``error`` is a statement's that failed after the first failed one."""
        return any(later is error for later in self._failed_later)

    def _refuse_forbidden(self, sql: str) -> None:
        refused = _refused_statement(sql)
        if refused is not None:
            statement, why = refused
            error = ProjectionError(
                f"a projection's statement may not do this: {statement[:40]!r} {why}"
            )
            self._remember(error)
            raise error

    async def execute(self, sql: str, parameters: Sequence[Any] = ()) -> None:
        self._refuse_forbidden(sql)
        self._refuse_unportable((parameters,))
        try:
            await self._tx.execute(sql, parameters)
        except Exception as error:
            self._remember(error)
            raise
        if _ROLLBACK_TO.match(sql):
            self.failed = None

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._refuse_forbidden(sql)
        if self._check_parameters:
            # Read once to be checked: a generator would reach the database spent.
            rows = list(rows)
        self._refuse_unportable(rows)
        try:
            await self._tx.executemany(sql, rows)
        except Exception as error:
            self._remember(error)
            raise

    async def fetchall(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self._refuse_forbidden(sql)
        self._refuse_unportable((parameters,))
        try:
            return await self._tx.fetchall(sql, parameters)
        except Exception as error:
            self._remember(error)
            raise

    async def lock_schema_changes(self) -> None:
        await self._tx.lock_schema_changes()

    async def lock_appends(self) -> None:
        await self._tx.lock_appends()

    if not TYPE_CHECKING:  # hidden from type checkers, which then still catch typos here

        def __getattr__(self, name: str) -> Any:
            # Called only for what the class lacks: say so in the user's terms, not this
            # class's name (a DB-API habit such as fetchone, say).
            raise AttributeError(
                f"a projection's transaction has no attribute {name!r}: it has execute, "
                "executemany and fetchall",
                name=name,
                obj=self,
            )


class WentOn(Exception):
    """``apply`` returned normally after one of its statements failed."""


class Escaped(Exception):
    """``apply`` raised what would stop leaderlog itself rather than the projection:
    ``sys.exit()``, ``KeyboardInterrupt``, an ``asyncio.CancelledError`` while nothing was
    cancelling it, or any other ``BaseException`` that is not an ``Exception``."""

    def __init__(self, raised: BaseException, did: str, would: str) -> None:
        super().__init__(f"apply() {did}")
        self.raised = raised
        self.did = did
        self.would = would

    @classmethod
    def exiting(cls, exiting: SystemExit) -> Escaped:
        return cls(exiting, f"called sys.exit({exiting.code!r})", "ended leaderlog itself")

    @classmethod
    def interrupting(cls, interrupting: KeyboardInterrupt) -> Escaped:
        return cls(interrupting, "raised KeyboardInterrupt", "stopped leaderlog itself")

    @classmethod
    def cancelling(cls, cancelled: BaseException) -> Escaped:
        return cls(cancelled, "raised CancelledError", "stopped leaderlog from following the log")

    @classmethod
    def escaping(cls, raised: BaseException) -> Escaped:
        return cls(raised, f"raised {type(raised).__name__}, a BaseException", "stopped leaderlog")


def _location(error: BaseException, projection: Projection) -> str:
    """`` (file, line N)`` of the line of the projection's module that ``error`` went through
    last (for a statement the database refused: the line that ran it, not the driver's), else
    of the innermost frame."""
    frames = traceback.extract_tb(error.__traceback__)
    source = module_file(projection)
    if source is not None and not any(frame.filename == source for frame in frames):
        # Raised by leaderlog itself once the projection's code had returned (what its
        # statements changed, checked when apply ends): a line of leaderlog's would mislead.
        return ""
    chosen = [frame for frame in frames if frame.filename == source] or frames
    if not chosen:
        return ""
    return f" ({shown_path(chosen[-1].filename)}, line {chosen[-1].lineno})"


def _caused_by(error: BaseException, cause: BaseException) -> bool:
    seen: BaseException | None = error
    while seen is not None:
        if seen is cause:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def apply_failure(
    projection: Projection,
    events: Sequence[RecordedEvent],
    error: Exception,
    went_on: Exception | None,
    *,
    failed_later: bool = False,
) -> ProjectionFailure:
    """The failure of ``projection`` on ``events``: ``error`` is what ``apply`` raised (or the
    runner's marker), ``went_on`` the first statement that failed in it, if any, and
    ``failed_later`` whether ``error`` is a later statement's failure (on PostgreSQL, refused
    because the first one aborted the transaction: the first is the one to name)."""
    first, last = events[0].position, events[-1].position
    span = f"event {first}" if first == last else f"events {first}-{last}"
    cause: Exception
    then = f"it stays at position {first - 1} until that is fixed"
    if isinstance(error, Escaped):
        cause = ProjectionError(str(error))
        cause.__cause__ = error.raised
        what = (
            f"it {error.did}{_location(error.raised, projection)}, which would have {error.would}"
        )
    elif isinstance(error, ProjectionTimedOut):
        cause = error
        what = (
            f"{error} and was stopped: it runs inside the database's write transaction, "
            f"which holds back every writer meanwhile; keep slow work (network calls, sleeps) "
            f"out of apply"
        )
        if error.next_page is not None:
            events_word = "event" if error.next_page == 1 else "events"
            then = f"it goes on with pages of {error.next_page} {events_word}"
    elif went_on is not None and (
        isinstance(error, WentOn) or not _caused_by(error, went_on) or failed_later
    ):
        cause = went_on
        what = (
            f"{type(cause).__name__}: {cause}{_location(cause, projection)}; apply() went on "
            "after this statement failed, but on PostgreSQL a failed statement aborts the "
            "projection's work on the page, so leaderlog stops the projection on every "
            "database: avoid the error in SQL instead (INSERT ... ON CONFLICT DO NOTHING "
            "rather than catching a duplicate key, say)"
        )
    else:
        cause = error
        what = f"{type(error).__name__}: {error}{_location(error, projection)}"
    return Explained(
        projection.name,
        first,
        last,
        cause,
        f"projection {projection.name} could not apply {span}: {what}; {then}",
    )
