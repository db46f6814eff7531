"""The projection runner: catch up, follow, rebuild, and report lag.

Every page of events is applied to every projection that has not seen it yet inside one
projection transaction, which also moves their checkpoints. Checkpoints are read again inside
that transaction, so two runners (say a server and a CLI query) never apply an event twice:
the second one skips what the first applied.

Before reading checkpoints, a runner's transaction touches the checkpoint rows it will move,
which makes concurrent runners on PostgreSQL wait for each other as they do on SQLite.

A projection whose stored version differs from its class's ``version`` is dropped and rebuilt
from position 0, except a user projection stored at a newer version than its module's (another
folder's older copy): that one is left out until :meth:`ProjectionRunner.rebuild` names it. A
rebuild creates a projection's ``query_indexes()`` only once the replay has
reached the head of the log.

A user projection the runner cannot run (its names clash with another's, it was rebuilt at
another version since this runner loaded it, or its module is older than the version stored)
is replaced by a :class:`LeftOut` stand-in: it stays listed with its checkpoint and is reported
at every run, while the others go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

from leaderlog._json import copied
from leaderlog.errors import (
    Interrupted,
    ProjectionError,
    ProjectionFailed,
    ProjectionFailure,
    ProjectionTimedOut,
    RecordError,
    StoreError,
    StoreUnavailable,
    UnreadableEvent,
)
from leaderlog.events import EVENT_TYPES, RecordedEvent
from leaderlog.projections._collector import few_collections
from leaderlog.projections._isolation import (
    RUNNER_SAVEPOINT,
    Escaped,
    LeftOut,
    Watched,
    WentOn,
    apply_failure,
    is_builtin,
    leave_out_clashes,
    left_out,
    module_name,
    older_than_stored,
)
from leaderlog.projections._sql import marks
from leaderlog.projections.base import (
    CHECKPOINT_SCHEMA,
    Projection,
    ProjectionTransaction,
    check_owned_names,
    owner_of,
    payload,
    shared_decoding,
    tables_created,
)
from leaderlog.store.base import FOREIGN_KEYS_QUERY, TABLES_QUERY, EventStore, checked_store

__all__ = [
    "LeftOut",
    "NotLoaded",
    "Progress",
    "ProjectionRunner",
    "ProjectionStatus",
    "events_to_apply",
    "forget_projection",
    "left_out",
]

logger = logging.getLogger("leaderlog.projections")

Progress = Callable[[int, int], None]
"""Told after each applied page: the last position applied, and the log's head."""
DEFAULT_PAGE = 2000
# How long a user projection's apply may take on one page. It runs inside the page's write
# transaction: on SQLite every writer waits for it meanwhile, on PostgreSQL every runner.
USER_APPLY_SECONDS = 5.0
_PAUSE_AFTER_A_SLOW_PAGE = 0.5
_FIRST_REST_SECONDS = 2.0
_LONGEST_REST_SECONDS = 60.0
_PREPARE_ATTEMPTS = 3


@contextlib.asynccontextmanager
async def _alone(tx: ProjectionTransaction) -> AsyncIterator[None]:
    """Run one projection's statements inside a savepoint: if they raise, only they are
    undone and the transaction stays usable for the others (PostgreSQL would otherwise
    refuse every later statement of the transaction)."""
    await tx.execute(f"SAVEPOINT {RUNNER_SAVEPOINT}")
    try:
        yield
    except Exception:
        await tx.execute(f"ROLLBACK TO SAVEPOINT {RUNNER_SAVEPOINT}")
        await tx.execute(f"RELEASE SAVEPOINT {RUNNER_SAVEPOINT}")
        raise
    await tx.execute(f"RELEASE SAVEPOINT {RUNNER_SAVEPOINT}")


async def _create(tx: ProjectionTransaction, statement: str) -> None:
    """Run one of a projection's DDL statements; a failure names the statement."""
    try:
        await tx.execute(statement)
    except StoreError:
        raise  # the database's trouble (busy, gone), not the statement's
    except Exception as error:
        shown = " ".join(statement.split())
        shown = shown if len(shown) <= 100 else f"{shown[:97]}..."
        raise ProjectionError(f"{shown!r} failed: {error}") from error


async def _cancel(task: asyncio.Task[list[RecordedEvent]] | None) -> None:
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task


async def _refresh_statistics(tx: ProjectionTransaction, projection: Projection) -> None:
    """Let the planner learn the sizes of the projection's tables (see
    ``ProjectionTransaction.refresh_statistics``). They only guide it: failing to gather them
    fails nothing."""
    with contextlib.suppress(Exception):
        async with _alone(tx):
            await tx.refresh_statistics(projection.tables())


def _own_copies(events: Sequence[RecordedEvent]) -> list[RecordedEvent]:
    """The page as a user projection gets it: the built-ins and the other projections read
    the same events, so one that edits a payload in place (``payload(event)`` is the stored
    dict itself) must edit a copy of its own."""
    return [
        RecordedEvent.trusted(
            event.position,
            event.stream,
            event.version,
            event.event_id,
            event.type,
            event.schema_version,
            copied(event.data),
            event.recorded_at,
            event.actor,
            copied(event.meta),
            event.hash,
        )
        for event in events
    ]


def _unreadable(events: Sequence[RecordedEvent]) -> dict[int, RecordError]:
    """The page's events a newer leaderlog wrote (a newer ``schema_version``, or a type this
    version does not know), by position, each with the refusal that names it.

    No projection is handed such an event in the same page as those before it: one that
    reads it raises, and everything it applied from the page would be rolled back with it.
    """
    found: dict[int, RecordError] = {}
    for event in events:
        known = EVENT_TYPES.get(event.type)
        if known is not None and event.schema_version <= known.schema_version:
            continue
        try:
            payload(event)
        except RecordError as refusal:
            # Made here, not raised by a projection: its traceback would name this module.
            found[event.position] = refusal.with_traceback(None)
    return found


class NotLoaded(NamedTuple):
    """A user projection built in the database whose module is there but does not load."""

    version: int
    position: int
    error: ProjectionError


class ProjectionStatus(NamedTuple):
    name: str
    version: int
    checkpoint: int
    head: int
    lag: int


def events_to_apply(
    runner: ProjectionRunner, statuses: Sequence[ProjectionStatus]
) -> tuple[int, int]:
    """(first, last) position of what the runner's projections have to apply, for a
    progress bar: from the checkpoint furthest behind (0 for one a new version rebuilds,
    whose lag says nothing of that) to the head. Left-out projections apply nothing."""
    spans = [
        (0 if status.version != projection.version else status.checkpoint, status.head)
        for projection, status in zip(runner.projections, statuses, strict=True)
        if not isinstance(projection, LeftOut)
    ]
    if not spans:
        return 0, 0
    return min(start for start, _ in spans), max(head for _, head in spans)


class ProjectionRunner:
    """Keeps ``projections`` up to date with ``store``'s log."""

    def __init__(
        self,
        store: EventStore,
        projections: Iterable[Projection],
        *,
        page: int = DEFAULT_PAGE,
        user_apply_seconds: float | None = None,
        rest_after_failure: bool = False,
    ) -> None:
        self.store = checked_store(store, "ProjectionRunner")
        self.user_apply_seconds = (
            USER_APPLY_SECONDS if user_apply_seconds is None else user_apply_seconds
        )
        # For a runner that follows the log: a user projection that fails is tried again
        # less and less often (see _rest) rather than at every run.
        self.rest_after_failure = rest_after_failure
        # Whether a user projection that ran out of time goes on at once with smaller pages
        # (False for a quick answer: it then stops for this run, named by its failure).
        self.go_on_smaller = True
        # Events a run applies before the planner learns the tables' sizes again, doubling
        # each time: tables that grow from nothing are otherwise planned as if still empty.
        self.refresh_statistics_after = 10_000
        # User projections that ran out of time on a page: the smaller page they get now.
        self._smaller_pages: dict[str, int] = {}
        # And the last position of the page each last ran out of time on: its pages grow
        # back only past it, not straight into the event that was slow again.
        self._slow_through: dict[str, int] = {}
        # User projections that failed, left to rest: until when, for how long, and why.
        self._resting: dict[str, tuple[float, float, ProjectionFailure]] = {}
        given = list(projections)
        names = [projection.name for projection in given]
        if len(set(names)) != len(names):
            raise ProjectionError(f"projection names must be unique, got {names}")
        self.projections = leave_out_clashes(given)
        # Filled by runner_for: modules it could not load, which this runner leaves out.
        self.not_loaded: dict[str, NotLoaded] = {}
        self.page = page
        self._prepared = False
        # Projections whose schema() failed at the last prepare: left out of every run.
        self._unprepared: dict[str, ProjectionFailure] = {}
        # Projections (re)built from scratch whose query indexes wait for the end of the replay.
        self._deferred: set[str] = set()
        # Each projection's checkpoint when this runner last read it: one found lower since
        # was rebuilt by another process, which may have stopped before its query indexes.
        self._seen_checkpoints: dict[str, int] = {}
        # Every projection with a checkpoint in the database when this runner last read
        # them, loaded here or not: their tables are theirs all the same.
        self._registered: set[str] = set()
        # The projections whose checkpoint a run of this runner has seen in the database.
        self._checkpointed: set[str] = set()
        #: Projections the last :meth:`rebuild` replayed besides those it was asked for:
        #: loaded ones its preparation emptied (never built, built at another version, or
        #: beyond the log's head), each with the (version, checkpoint) it had before, or
        #: None when it had never been built.
        self.also_rebuilt: dict[str, tuple[int, int] | None] = {}
        #: Each projection that could not apply the log at its last run, and why (a health
        #: check lists them; a later run that gets through takes it off).
        self.failing: dict[str, ProjectionFailure] = {}
        # The last position this runner read of the log, and its hash. A checkpoint is only a
        # number: a log cut short behind the store's back and written again would have this
        # runner go on from it into events it never saw, skipping those in between. The hash
        # chain ties the hash at this position to every event up to it, so the log is still
        # the one the projections applied for as long as this position holds this hash.
        self._read_through: tuple[int, str] | None = None
        #: Called with the log's head when this runner finds the log no longer holds what its
        #: projections applied (cut short, or another log in its place) and starts rebuilding
        #: them: whoever keeps what was read from them (a server's feeds and pages) drops it.
        self.on_another_log: Callable[[int], None] | None = None
        #: Why the last catch-up could not go on, in words anyone may be told (the database's
        #: disk is full, it cannot be reached, it refused...); None once one got through.
        self.stalled: str | None = None

    @property
    def unprepared(self) -> Mapping[str, ProjectionFailure]:
        """Projections whose tables could not be created: left out until the process
        restarts (a statement the database refuses will not pass on its own)."""
        return dict(self._unprepared)

    def _named(self, names: Iterable[str] | None) -> list[Projection]:
        if names is None:
            return list(self.projections)
        if isinstance(names, str):
            # Read as its characters, it would be refused as projections "l, e, a, d...".
            raise ProjectionError(f"give a list of projection names, not the text {names!r:.80}")
        by_name = {projection.name: projection for projection in self.projections}
        unknown = [name for name in names if name not in by_name]
        if unknown:
            raise ProjectionError(
                f"unknown projection(s) {', '.join(unknown)}; known: {', '.join(by_name)}"
            )
        return [by_name[name] for name in dict.fromkeys(names)]

    # --- schema and checkpoints ------------------------------------------------------------

    async def _checkpoints(self, tx: ProjectionTransaction) -> dict[str, tuple[int, int]]:
        """The loaded projections' (version, checkpoint); notes every registered name."""
        rows = await tx.fetchall("SELECT name, version, position FROM projection_checkpoints")
        every = {str(name): (int(version), int(position)) for name, version, position in rows}
        self._registered = set(every)
        names = {projection.name for projection in self.projections}
        return {name: stored for name, stored in every.items() if name in names}

    def _everyone(self) -> set[str]:
        """The names of every projection whose tables are its own: built in, loaded here, or
        registered in the database (a module not loaded by this process still owns its rows)."""
        # Imported here: the package imports this module to assemble its built-ins.
        from leaderlog.projections import BUILTIN

        return {*BUILTIN, *(other.name for other in self.projections), *self._registered}

    async def _reset(self, tx: ProjectionTransaction, projection: Projection) -> None:
        self._slow_through.pop(projection.name, None)
        if not is_builtin(projection):
            problems = check_owned_names(projection, self._everyone() - {projection.name})
            if problems:
                # Dropping its tables() would drop another projection's, loaded elsewhere.
                raise ProjectionError(f"projection {projection.name}: " + "; ".join(problems))
        await self._unpin(tx, projection)
        for table in projection.tables():
            await tx.execute(f"DROP TABLE IF EXISTS {table}")
        # And those of its prefix that it no longer lists (an earlier version's, renamed
        # since), which would otherwise stay behind with rows never updated again.
        everyone = self._everyone()
        for (found,) in await tx.fetchall(TABLES_QUERY[self.store.dialect]):
            table = str(found)
            if _TABLE_NAME.fullmatch(table) and owner_of(table, everyone) == projection.name:
                await tx.execute(f"DROP TABLE IF EXISTS {table}")
        async with self._confined(tx, projection):
            for statement in projection.schema():
                await _create(tx, statement)
        await tx.execute(
            "INSERT INTO projection_checkpoints (name, version, position) VALUES (?, ?, 0) "
            "ON CONFLICT (name) DO UPDATE SET version = excluded.version, position = 0",
            (projection.name, projection.version),
        )
        self._deferred.add(projection.name)

    async def _unpin(self, tx: ProjectionTransaction, projection: Projection) -> None:
        """Drop the tables of other projections whose foreign keys refer to ``projection``'s,
        and forget those projections' checkpoints, so they are built again from the log.

        Such a key pins the rows it refers to, so ``projection`` could not be rebuilt (a
        built-in upgraded, say), and every query reading it would stop. SQLite refuses a
        user projection such a key now; an earlier version's database, or PostgreSQL, may
        still hold one. The projection that declared it is rebuilt on its own, where its
        key is refused again (SQLite) or pins nothing for long (a reset comes here first).
        """
        own = {table.lower() for table in projection.tables()}
        rows = await tx.fetchall(FOREIGN_KEYS_QUERY[self.store.dialect])
        pinning = sorted(
            {
                str(table)
                for table, refers_to in rows
                if str(refers_to).lower() in own and str(table).lower() not in own
            }
        )
        if not pinning:
            return
        # Its owner need not be loaded here (a module since removed): it has a checkpoint.
        registered = await tx.fetchall("SELECT name FROM projection_checkpoints")
        everyone = self._everyone() | {str(name) for (name,) in registered}
        owners = sorted({owner for table in pinning if (owner := owner_of(table, everyone))})
        for table in pinning:
            quoted = table.replace('"', '""')  # a name read from the catalog, quoted as one
            await tx.execute(f'DROP TABLE IF EXISTS "{quoted}"')
        for owner in owners:
            await tx.execute("DELETE FROM projection_checkpoints WHERE name = ?", (owner,))
        logger.warning(
            "projection %s is reset, but %s pinned its rows with foreign keys: dropped, to be "
            "built again from the log (%s)",
            projection.name,
            ", ".join(pinning),
            ", ".join(owners) or "owner not loaded",
        )

    @property
    def prepared(self) -> bool:
        """Whether :meth:`prepare` has run since this runner began or last rebuilt: until
        then a projection found at another version is this runner's to rebuild."""
        return self._prepared

    async def prepare(self) -> None:
        """Create missing tables; rebuild (from 0) any projection whose version changed."""
        if self._prepared:
            return
        for attempt in range(_PREPARE_ATTEMPTS):
            last_attempt = attempt == _PREPARE_ATTEMPTS - 1
            try:
                self._unprepared = await self._prepare_once(isolate=last_attempt)
                break
            except StoreUnavailable as error:
                # Busy or unreachable: each try would wait out the busy timeout again. A
                # deadlock is the exception: PostgreSQL broke it at once, by failing this
                # side, and trying again is what it asks for.
                if last_attempt or "deadlock" not in str(error):
                    raise
                await asyncio.sleep(0.05 * (attempt + 1))
            except Exception:
                # Another process creating the same tables at the same moment can make
                # CREATE ... IF NOT EXISTS fail on PostgreSQL; the next attempt finds them.
                if last_attempt:
                    raise
                await asyncio.sleep(0.05 * (attempt + 1))
        self._prepared = True

    async def _prepare_once(self, *, isolate: bool) -> dict[str, ProjectionFailure]:
        """Create or reset each projection's tables. With ``isolate``, one whose statements
        fail is rolled back alone and returned, so a broken user schema stops only itself."""
        failed: dict[str, ProjectionFailure] = {}
        async with self.store.projection_transaction() as tx:
            # Servers starting together on a new database would otherwise create the same
            # tables at once; the checkpoint rows _lock uses may not exist yet.
            await tx.lock_schema_changes()
            await tx.execute(CHECKPOINT_SCHEMA)
            await self._lock(tx)
            stored = await self._checkpoints(tx)
            rows = await tx.fetchall("SELECT MAX(position) FROM events")
            head = int(rows[0][0] or 0)
            existing = {
                str(table).lower()
                for (table,) in await tx.fetchall(TABLES_QUERY[self.store.dialect])
            }
            for projection in self.projections:
                if isinstance(projection, LeftOut):
                    continue
                found = stored.get(projection.name)
                if (
                    found is not None
                    and found[0] > projection.version
                    and not is_builtin(projection)
                ):
                    # Built since runner_for looked, from a newer copy of its module: rebuilt
                    # here, the two would drop each other's tables at every command.
                    self._replace(projection, older_than_stored(projection, found[0]))
                    continue
                try:
                    async with _alone(tx):
                        # A checkpoint beyond the head was made from another log (the events
                        # table was replaced): what it projected is not this log's.
                        if (
                            found is None
                            or found[0] != projection.version
                            or not 0 < found[1] <= head
                        ):
                            await self._reset(tx, projection)
                            continue
                        missing = sorted(tables_created(projection) - existing)
                        if missing:
                            # Created now, it would hold only the events after the
                            # checkpoint: a table added or renamed without a new version, or
                            # one dropped by hand. Built again, it holds the whole log.
                            logger.warning(
                                "projection %s is built again from the log: %s, which its "
                                "schema() creates, was not in the database at position %d "
                                "(a table added or renamed without a new version, or "
                                "dropped)",
                                projection.name,
                                ", ".join(missing),
                                found[1],
                            )
                            await self._reset(tx, projection)
                            continue
                        async with self._confined(tx, projection):
                            for statement in (*projection.schema(), *projection.query_indexes()):
                                await _create(tx, statement)
                except StoreError:
                    # The database's trouble (busy, a lock held elsewhere), not the
                    # projection's: prepare fails as a whole and is tried again.
                    raise
                except Exception as error:
                    if not isolate:
                        raise
                    failed[projection.name] = ProjectionFailure(projection.name, None, None, error)
        return failed

    async def _lock(self, tx: ProjectionTransaction) -> None:
        """Serialise runners on this projection set's checkpoint rows (a no-op on SQLite,
        whose projection transactions are exclusive already)."""
        names = [projection.name for projection in self.projections]
        if names:
            await tx.execute(
                "UPDATE projection_checkpoints SET position = position "
                f"WHERE name IN ({marks(len(names))})",
                names,
            )

    async def _create_deferred_indexes(self, behind: set[str]) -> list[ProjectionFailure]:
        """Create the query indexes of rebuilt projections, except those ``behind``.

        One whose statement fails is left out from then on, as a failing schema is at start,
        and named; the others keep theirs.
        """
        waiting = [p for p in self.projections if p.name in self._deferred - behind]
        failed: list[ProjectionFailure] = []
        if not waiting:
            return failed
        async with self.store.projection_transaction() as tx:
            await tx.lock_schema_changes()
            for projection in waiting:
                try:
                    async with _alone(tx):
                        for statement in projection.query_indexes():
                            await _create(tx, statement)
                    await _refresh_statistics(tx, projection)
                except StoreError:
                    raise
                except Exception as error:
                    failure = ProjectionFailure(projection.name, None, None, error)
                    self._unprepared[projection.name] = failure
                    failed.append(failure)
        self._deferred -= {projection.name for projection in waiting}
        return failed

    # --- applying --------------------------------------------------------------------------

    async def _apply_page(
        self, projections: Sequence[Projection], events: Sequence[RecordedEvent]
    ) -> list[ProjectionFailure]:
        """Apply a page to each projection that has not seen it; return those that raised.

        Each projection applies inside a savepoint, so one that raises (a user projection's
        bug, say) loses only its own rows of the page while the others commit theirs.
        """
        first = events[0].position
        unreadable = _unreadable(events)
        failures: list[ProjectionFailure] = []
        async with self.store.projection_transaction() as tx:
            await self._lock(tx)
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
                    stop = next((p for p in unreadable if p >= todo[0].position), None)
                    if stop is not None and stop > todo[0].position:
                        # Everything before it first: a projection that reads it stops just
                        # before it at the next page, having lost nothing of this one.
                        todo = [event for event in todo if event.position < stop]
                    elif stop is not None and is_builtin(projection):
                        # Every built-in stops there, whether it reads this type or not: the
                        # feeds, the state and the audit then stand at one position, and none
                        # folds a payload it may misread.
                        failures.append(
                            ProjectionFailure(projection.name, stop, stop, unreadable[stop])
                        )
                        continue
                    todo = todo[: self._smaller_pages.get(projection.name, len(todo))]
                    if not is_builtin(projection):
                        todo = _own_copies(todo)
                    watched = Watched(tx, check_parameters=not is_builtin(projection))
                    try:
                        async with _alone(tx):
                            async with self._confined(tx, projection):
                                await self._apply_one(projection, watched, todo)
                            if watched.failed is not None:
                                # Raised inside the savepoint, so that rolling back to it
                                # makes PostgreSQL's aborted transaction usable again.
                                raise WentOn from watched.failed
                    except StoreError:
                        # The database's trouble (busy, deadlocked, gone), not the
                        # projection's: the whole page is tried again.
                        raise
                    except Exception as error:
                        failure = apply_failure(
                            projection,
                            todo,
                            error,
                            watched.failed,
                            failed_later=watched.failed_later(error),
                        )
                        if isinstance(failure.cause, StoreError):
                            raise failure.cause from error  # swallowed by apply(): as above
                        failures.append(failure)
                        continue
                    await tx.execute(
                        "UPDATE projection_checkpoints SET position = ? WHERE name = ?",
                        (todo[-1].position, projection.name),
                    )
        return failures

    def _confined(
        self, tx: ProjectionTransaction, projection: Projection
    ) -> contextlib.AbstractAsyncContextManager[None]:
        """A user projection's ``apply`` changes only its own tables (where the database
        can hold it to that): a mistake or a module taken from elsewhere cannot touch the
        log, the built-ins or the runner's checkpoints and savepoint."""
        if is_builtin(projection):
            return contextlib.nullcontext()
        everyone = self._everyone()

        def owns(table: str) -> bool:
            return owner_of(table, everyone) == projection.name

        return tx.confined(owns, RUNNER_SAVEPOINT)

    async def _apply_one(
        self, projection: Projection, watched: Watched, todo: Sequence[RecordedEvent]
    ) -> None:
        """``projection.apply``, within the time a user projection is given; what would stop
        the runner itself (``sys.exit()``, a CancelledError of its own) is its failure."""
        limit = None if is_builtin(projection) else self.user_apply_seconds
        started = time.monotonic()
        overran = False
        try:
            async with asyncio.timeout(limit) as clock:
                # A list of its own: the runner reads the page's positions from ``todo``
                # afterwards, whatever apply does to the list it was given.
                await projection.apply(watched, list(todo))
            # Stopped at the limit, apply caught the cancellation (a bare except) and
            # returned: what it was doing then was cut short, so its page is not kept. Nor
            # is one that blocked the loop past the limit after its last await, where no
            # timer could fire: it held every writer that long all the same.
            overran = clock.expired() or (limit is not None and time.monotonic() - started > limit)
            if overran:
                raise TimeoutError
            quick = limit is not None and time.monotonic() - started < limit / 4
            past_the_slow_page = todo[-1].position >= self._slow_through.get(projection.name, 0)
            if quick and past_the_slow_page and projection.name in self._smaller_pages:
                # Well in time again: its pages grow back, twice as large each time (only
                # when far below the limit, so a steadily heavy one does not swing).
                grown = self._smaller_pages[projection.name] * 2
                if grown >= self.page:
                    del self._smaller_pages[projection.name]
                else:
                    self._smaller_pages[projection.name] = grown
        except SystemExit as exiting:
            raise Escaped.exiting(exiting) from exiting
        except Interrupted:
            raise  # Ctrl-C, landing in apply as it may land anywhere: the command stops
        except KeyboardInterrupt as interrupting:
            # Raised by apply itself (a server's stop reaches the runner as a cancellation).
            raise Escaped.interrupting(interrupting) from interrupting
        except TimeoutError as error:
            if limit is None or not (overran or clock.expired()):
                raise
            smaller = (len(todo) // 2 or None) if self.go_on_smaller else None
            if smaller is not None:
                # Perhaps only slow on this many events: it goes on with smaller pages.
                self._smaller_pages[projection.name] = smaller
                self._slow_through[projection.name] = todo[-1].position
            raise ProjectionTimedOut(limit, smaller) from error
        except asyncio.CancelledError as cancelled:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the runner is being stopped
            raise Escaped.cancelling(cancelled) from cancelled
        except Exception:
            raise
        except BaseException as escaping:
            raise Escaped.escaping(escaping) from escaping

    @staticmethod
    async def _going_on_smaller(failed: list[ProjectionFailure]) -> list[ProjectionFailure]:
        """The failures that stop their projection: one that ran out of time on a page of
        several events goes on with smaller pages, and is only logged. Each page is its own
        transaction, and other processes' writers, which have waited meanwhile, are given a
        moment to take the database first."""
        stopping = []
        for failure in failed:
            cause = failure.cause
            if isinstance(cause, ProjectionTimedOut) and cause.next_page is not None:
                logger.warning("%s", failure)
            else:
                stopping.append(failure)
        if len(stopping) < len(failed):
            await asyncio.sleep(_PAUSE_AFTER_A_SLOW_PAGE)
        return stopping

    async def _another_log(
        self, head: tuple[int, str] | None = None, page: Sequence[RecordedEvent] = ()
    ) -> int | None:
        """The last position this runner read if the log no longer holds there the event it
        read, else None.

        ``head`` and ``page`` were just read from the log: when they hold that position, they
        answer without asking the store again, so a follower woken with nothing new asks
        nothing, and one woken for a page of new events asks once (at the head it had read),
        where one lookup by position is asked otherwise.
        """
        if self._read_through is None:
            return None
        position, hash = self._read_through
        found: str | None
        if head is not None and position == head[0]:
            found = head[1]
        elif page and 0 <= (index := position - page[0].position) < len(page):
            found = page[index].hash  # positions are gap-free: the page holds it there
        else:
            # Also past a head just read: it is not cut short for that, since another run of
            # this runner (a server's follower beside a writer waiting for its own event) may
            # have read a later head while this one waited for its answer.
            event = await self.store.get(position)
            found = event.hash if event is not None else None
        return None if found == hash else position

    async def _forget_another_log(self, position: int) -> None:
        """Rebuild from position 0 every projection that applied the log this runner read,
        which is no longer there: as :meth:`prepare` does with a checkpoint beyond the log's
        head, rather than go on from checkpoints that count another log's events.

        One whose tables cannot be created again is left out, as at :meth:`prepare`.
        """
        head, _ = await self.store.head()
        self.store.forget_heads_beyond(head)
        rebuilt = []
        async with self.store.projection_transaction() as tx:
            await tx.lock_schema_changes()
            # A copy of the log alone (a file an import wrote, say) put in place of the
            # database comes without the projections' tables: they are made again.
            await tx.execute(CHECKPOINT_SCHEMA)
            await self._lock(tx)
            stored = await self._checkpoints(tx)
            for projection in self.projections:
                found = stored.get(projection.name)
                if (
                    isinstance(projection, LeftOut)
                    or projection.name in self._unprepared
                    # Not this runner's to write: _run says so.
                    or (found is not None and found[0] != projection.version)
                    or (found is not None and found[1] == 0)
                ):
                    continue
                try:
                    async with _alone(tx):
                        await self._reset(tx, projection)
                except StoreError:
                    raise
                except Exception as error:
                    failure = ProjectionFailure(projection.name, None, None, error)
                    self._unprepared[projection.name] = failure
                    continue
                rebuilt.append(
                    f"{projection.name} (up to position {found[1]})"
                    if found is not None
                    else f"{projection.name} (not in this database)"
                )
        self._read_through = None
        logger.warning(
            "the log no longer holds at position %d the event the projections applied there "
            "(it ends at %d now): events were removed from its end, or it was replaced; "
            "rebuilding from this log what was built from another: %s",
            position,
            head,
            ", ".join(rebuilt) or "nothing",
        )
        if self.on_another_log is not None:
            self.on_another_log(head)

    def _notice_rebuilds(
        self, projections: Sequence[Projection], stored: Mapping[str, tuple[int, int]]
    ) -> None:
        """Defer the query indexes of any projection another process has rebuilt since this
        runner last looked: a rebuild stopped before the head (Ctrl-C, a kill) never created
        them, and this runner, replaying to the head, does."""
        for projection in projections:
            position = stored.get(projection.name, (projection.version, 0))[1]
            if position < self._seen_checkpoints.get(projection.name, 0):
                self._deferred.add(projection.name)
            self._seen_checkpoints[projection.name] = position

    async def _stored(self) -> dict[str, tuple[int, int]]:
        rows = await self.store.query("SELECT name, version, position FROM projection_checkpoints")
        return {str(name): (int(version), int(position)) for name, version, position in rows}

    async def _run(self, projections: Sequence[Projection], progress: Progress | None) -> int:
        """Apply pages until the named projections reach today's head; returns where they
        stand (past that head when a page read holds events appended since).

        A projection that raises is left where it was and the others go on; at the end,
        :class:`ProjectionFailed` names each one that stopped.
        """
        target, head_hash = await self.store.head()
        if (vanished := await self._another_log(head=(target, head_hash))) is not None:
            await self._forget_another_log(vanished)
        # The log checked, its head stands for all of it up to there: a change to any event up
        # to the head, or its removal, changes or removes the head's hash.
        self._read_through = (target, head_hash) if target else None
        stored = await self._stored()
        failures: list[ProjectionFailure] = []
        runnable: list[Projection] = []
        for projection in projections:
            version, position = stored.get(projection.name, (projection.version, 0))
            if projection.name in stored:
                self._checkpointed.add(projection.name)
            elif self._forgotten_elsewhere(projection):
                continue
            if isinstance(projection, LeftOut):
                if version != projection.version:
                    # Listed at the version stored, as a lagging projection and never as
                    # another leaderlog's (which a health check would take it for).
                    stand_in = left_out(
                        projection.name, version, projection.reason, projection.until
                    )
                    projection = self._replace(projection, stand_in)
                failures.append(projection.failure(position))
            elif projection.name in self._unprepared:
                failures.append(self._unprepared[projection.name])
            elif (resting := self._resting.get(projection.name)) and resting[0] > time.monotonic():
                failures.append(resting[2])
            elif version == projection.version:
                runnable.append(projection)
            else:
                failures.append(self._rebuilt_elsewhere(projection, version, position))
        projections = runnable
        # The next page is read while this one is applied: turning rows into events and
        # writing projection rows then overlap (they run on different connections).
        ahead: asyncio.Task[list[RecordedEvent]] | None = None
        ahead_after = -1
        backlog = target - min((stored.get(p.name, (0, 0))[1] for p in projections), default=0)
        applied, next_refresh = 0, self.refresh_statistics_after
        # A page may hold events appended after the head was read: the others may stand past
        # it, and a follower waiting for events past the head would retry a failing projection
        # at once. Where the slowest of them stands, though: one going on in smaller pages (or
        # stopped before an event it cannot read) may not have reached the page's end, and a
        # follower told that position would leave it there until another event is appended.
        reached = target
        try:
            with few_collections(backlog):
                while True:
                    stored = await self._stored()
                    moved = [
                        projection
                        for projection in projections
                        if stored.get(projection.name, (projection.version, 0))[0]
                        != projection.version
                    ]
                    if moved:
                        # Rebuilt at another version since this run began, by a process that
                        # may have stopped part way: its checkpoint, the lowest, would have
                        # this run read a page it may not apply, again and again.
                        failures += [
                            self._rebuilt_elsewhere(projection, *stored[projection.name])
                            for projection in moved
                        ]
                        projections = [p for p in projections if p not in moved]
                        if not projections:
                            break
                    self._notice_rebuilds(projections, stored)
                    low = min((stored.get(p.name, (0, 0))[1] for p in projections), default=target)
                    if low >= target:
                        reached = low
                        break
                    try:
                        if ahead is not None and ahead_after == low:
                            events = await ahead
                        else:
                            await _cancel(ahead)
                            events = await self.store.read_all(after=low, limit=self.page)
                    except UnreadableEvent as unreadable:
                        if unreadable.position <= low + 1:
                            self._blocked_by(unreadable, projections, stored)
                            raise
                        # Every event before it first: the next page then begins with it.
                        events = await self.store.read_all(
                            after=low, limit=unreadable.position - low - 1
                        )
                    ahead = None
                    if not events:
                        break
                    if (vanished := await self._another_log(page=events)) is not None:
                        # Cut short and written again since this run started: start again
                        # from this log's first event.
                        await self._forget_another_log(vanished)
                        projections = [p for p in projections if p.name not in self._unprepared]
                        continue
                    if events[-1].position < target:
                        ahead_after = events[-1].position
                        ahead = asyncio.create_task(
                            self.store.read_all(after=ahead_after, limit=self.page)
                        )
                    failed = await self._going_on_smaller(
                        await self._apply_page(projections, events)
                    )
                    self._read_through = (events[-1].position, events[-1].hash)
                    if failed:
                        failures += failed
                        stopped = {failure.name for failure in failed}
                        projections = [p for p in projections if p.name not in stopped]
                        if not projections:
                            # None goes on: trying them again before an event follows this
                            # page would read the same events.
                            reached = max(reached, events[-1].position)
                            break
                    applied += len(events)
                    if applied >= next_refresh:
                        next_refresh *= 2
                        async with self.store.projection_transaction() as tx:
                            for projection in projections:
                                await _refresh_statistics(tx, projection)
                    if progress is not None:
                        progress(min(events[-1].position, target), target)
        finally:
            await _cancel(ahead)
        failures += await self._create_deferred_indexes({failure.name for failure in failures})
        self._rest(runnable, failures)
        for projection in runnable:
            self.failing.pop(projection.name, None)
        self.failing.update((failure.name, failure) for failure in failures)
        if failures:
            raise ProjectionFailed(failures, position=reached)
        return reached

    def _rebuilt_elsewhere(
        self, projection: Projection, version: int, position: int
    ) -> ProjectionFailure:
        """What becomes of ``projection`` found at another ``version`` in the database: a
        built-in ends the run; a user projection is left out, failing at ``position``."""
        if is_builtin(projection):
            # Rebuilt since this runner prepared it, by another leaderlog version on the
            # same database: applying would write rows of one shape into tables of another.
            raise ProjectionError(
                f"projection {projection.name} is at version {version} in this database, "
                f"rebuilt by another leaderlog version; this one has version "
                f"{projection.version}: run one version against a database (restarted, "
                "this one rebuilds it)"
            )
        # Rebuilt elsewhere from its module as it is now: only a process that loads the
        # module again can apply to those tables; the others need not wait.
        stand_in = left_out(
            projection.name,
            version,
            f"this process loaded its module ({module_name(projection)}) at version "
            f"{projection.version}, but the database holds version {version}, rebuilt "
            "since from the module as changed",
            until="the module is loaded again: restart the server to load it",
        )
        return self._replace(projection, stand_in).failure(position)

    def _blocked_by(
        self,
        unreadable: UnreadableEvent,
        projections: Sequence[Projection],
        stored: Mapping[str, tuple[int, int]],
    ) -> None:
        """Note as failing each projection that needs the event that cannot be read: an
        edited row stops them for good, unlike a busy database, and a health check that
        saw only their lag would pass them for catching up."""
        for projection in projections:
            checkpoint = stored.get(projection.name, (projection.version, 0))[1]
            if checkpoint < unreadable.position:
                # A copy without the traceback: where the store noticed says nothing useful.
                cause = UnreadableEvent(
                    unreadable.position, unreadable.reason, unreadable.stored_hash
                )
                self.failing[projection.name] = ProjectionFailure(
                    projection.name, checkpoint + 1, unreadable.position, cause
                )

    def _rest(self, ran: Sequence[Projection], failures: Sequence[ProjectionFailure]) -> None:
        """Leave a user projection that failed alone for a while, twice as long each time it
        fails again (up to a minute): each try of a slow one holds every writer back. One
        that got through is tried as usual again."""
        if not self.rest_after_failure:
            return
        failed = {failure.name: failure for failure in failures}
        for projection in ran:
            failure = failed.get(projection.name)
            if failure is None:
                self._resting.pop(projection.name, None)
            elif not is_builtin(projection):
                _, rested, _ = self._resting.get(projection.name, (0.0, 0.0, failure))
                pause = min(rested * 2, _LONGEST_REST_SECONDS) if rested else _FIRST_REST_SECONDS
                self._resting[projection.name] = (time.monotonic() + pause, pause, failure)

    def _forgotten_elsewhere(self, projection: Projection) -> bool:
        """Whether ``projection``, a user projection this runner saw checkpointed, whose
        checkpoint is gone, was forgotten by another command; it is then let go, said once.
        Its tables went with its checkpoint: applying events to them would fail at every
        page, and preparing it again would bring back what its owner removed."""
        if is_builtin(projection) or projection.name not in self._checkpointed:
            return False
        self._checkpointed.discard(projection.name)
        self.projections = [p for p in self.projections if p is not projection]
        self._resting.pop(projection.name, None)
        self.failing.pop(projection.name, None)
        self._registered.discard(projection.name)
        logger.warning(
            "projection %s was forgotten by another command (leaderlog projections --forget): "
            "it is no longer kept up to date here",
            projection.name,
        )
        return True

    def _replace(self, projection: Projection, stand_in: LeftOut) -> LeftOut:
        """Put ``stand_in`` where ``projection`` was, for every later run and status."""
        self.projections = [stand_in if p is projection else p for p in self.projections]
        return stand_in

    async def catch_up(self, progress: Progress | None = None) -> int:
        """Bring every projection to the current head of the log; returns that position.

        Raises :class:`ProjectionFailed` (its ``failures`` name each projection that raised)
        once every other projection has reached the head, and :class:`StoreUnavailable` when
        the database cannot answer or the store is closed."""
        try:
            await self.prepare()
            head = await self._run(self.projections, progress)
        except ProjectionFailed:
            self.stalled = None  # the database answered: the projections' own failures
            raise
        except StoreUnavailable as error:
            self.stalled = error.public
            raise
        except ProjectionError:
            # Another version's rebuild, say: health reads that from the projections' own
            # versions, and says what ends it; it is no trouble of the database's.
            self.stalled = None
            raise
        except Exception as error:
            # A refusal of the database's (a right revoked, a damaged file): said in the
            # server's log, which may name what anyone may not be told (a file's path).
            self.stalled = f"{type(error).__name__} (the server's log says more)"
            raise
        self.stalled = None
        return head

    async def rebuild(
        self, names: Iterable[str] | None = None, progress: Progress | None = None
    ) -> int:
        """Drop the named projections (all by default) and replay them from the log."""
        chosen = self._named(names)
        for projection in chosen:
            self._resting.pop(projection.name, None)  # asked for by name: tried at once
        async with self.store.projection_transaction() as tx:
            await tx.lock_schema_changes()
            await tx.execute(CHECKPOINT_SCHEMA)
            # The checkpoint rows before any table, in the order a runner applying a page
            # takes them: the other order deadlocked with a follower on PostgreSQL.
            await self._lock(tx)
            stored = await self._checkpoints(tx)
            for projection in chosen:
                if isinstance(projection, LeftOut):
                    continue  # never run, so never dropped: the run reports why
                # One whose schema fails keeps its tables; prepare() meets the same failure
                # and reports it without holding back the others.
                with contextlib.suppress(Exception):
                    async with _alone(tx):
                        await self._reset(tx, projection)
        self._prepared = False
        waiting = set(self._deferred)
        await self.prepare()
        # Those prepare() has just emptied (their version changed) are replayed with them,
        # not left empty until the next query.
        # One that had applied nothing at its version is no further behind for being emptied
        # again: it is left to the next run, and its failure (why it is at 0, as a rule) is
        # not this rebuild's.
        idle = {p.name for p in self.projections if stored.get(p.name) == (p.version, 0)}
        emptied = self._deferred - waiting - idle - {projection.name for projection in chosen}
        also = [projection for projection in self.projections if projection.name in emptied]
        self.also_rebuilt = {projection.name: stored.get(projection.name) for projection in also}
        return await self._run([*chosen, *also], progress)

    async def follow(
        self, *, poll_interval: float = 0.5, stop: asyncio.Event | None = None
    ) -> None:
        """Catch up, then apply new events as they are appended, until ``stop`` is set.

        A database that cannot answer for a moment (busy, a deadlock, a restart) is waited
        out, each new reason logged once. A projection that fails stops alone, as in
        :meth:`catch_up`: the failure is logged once (and again when it changes), the others
        go on following, and it is tried again as events arrive. Closing the store ends it
        (:class:`StoreUnavailable`).
        """
        said = ""
        while stop is None or not stop.is_set():
            try:
                head = await self.catch_up()
            except StoreUnavailable as error:
                if self.store.closed:
                    raise  # not a moment's trouble: nothing will answer again
                if str(error) != said:
                    said = str(error)
                    logger.warning("projections cannot catch up now: %s; retrying", error)
                await asyncio.sleep(poll_interval)
                continue
            except ProjectionFailed as error:
                # The others reached the head (error.position) before it was raised.
                if str(error) != said:
                    said = str(error)
                    logger.warning("%s", error)
                await self._until_the_head_passes(error.position, poll_interval, stop)
                continue
            said = ""
            await self.store.wait_for_events(head, poll_interval)

    async def _until_the_head_passes(
        self, position: int | None, poll_interval: float, stop: asyncio.Event | None
    ) -> None:
        """After a projection failed at the head ``position``: wait for events after it, so
        that it is tried again as they arrive, not at every poll (each try of a failing page
        holds the write lock)."""
        if position is None:
            await asyncio.sleep(poll_interval)
            return
        while stop is None or not stop.is_set():
            await self.store.wait_for_events(position, poll_interval)
            try:
                head, _ = await self.store.head()
            except StoreUnavailable:
                return  # the next catch-up says what became of the database
            if head > position:
                return

    # --- reporting -------------------------------------------------------------------------

    async def status(self) -> list[ProjectionStatus]:
        """Each projection's stored version, checkpoint, the log head and the lag behind it."""
        stored = await self.registered()
        # Read after the checkpoints, so the head is at least each of them even while
        # writers append and projections follow (a lag is never negative).
        head, _ = await self.store.head()
        found = []
        for projection in self.projections:
            version, checkpoint = stored.get(projection.name, (projection.version, 0))
            found.append(
                ProjectionStatus(
                    projection.name, version, checkpoint, head, max(head - checkpoint, 0)
                )
            )
        return found

    async def registered(self) -> dict[str, tuple[int, int]]:
        """Every projection with a checkpoint in this database: name -> (version, position)."""
        try:
            return await self._stored()
        except StoreError:
            raise
        except Exception:
            # No checkpoint table yet. Created only then: a write transaction would make
            # a status check (a server's /healthz, say) wait for any other writer.
            async with self.store.projection_transaction() as tx:
                # As prepare does: processes starting together on a new PostgreSQL log would
                # otherwise create the same table at once, and all but one fail.
                await tx.lock_schema_changes()
                await tx.execute(CHECKPOINT_SCHEMA)
            return await self._stored()


_TABLE_NAME = re.compile(r"[a-z][a-z0-9_]*")


async def forget_projection(
    store: EventStore, name: str, others: Iterable[str]
) -> tuple[list[str], int | None]:
    """Drop a user projection's tables and its checkpoint, without needing its module.

    Its tables are those whose ``p_<name>_`` prefix is its own beside ``others`` (every other
    projection: ``p_feed_entries_x`` is not ``feed``'s). Returns the tables dropped and the
    position it had reached (None if it had no checkpoint). The caller decides whether the
    projection may be forgotten: this drops what the name owns.
    """
    everyone = {name, *others}
    async with store.projection_transaction() as tx:
        await tx.execute(CHECKPOINT_SCHEMA)
        rows = await tx.fetchall(
            "SELECT position FROM projection_checkpoints WHERE name = ?", [name]
        )
        tables = sorted(
            str(table)
            for (table,) in await tx.fetchall(TABLES_QUERY[store.dialect])
            if _TABLE_NAME.fullmatch(str(table)) and owner_of(str(table), everyone) == name
        )
        for table in tables:
            await tx.execute(f"DROP TABLE IF EXISTS {table}")
        await tx.execute("DELETE FROM projection_checkpoints WHERE name = ?", [name])
    return tables, (int(rows[0][0]) if rows else None)
