"""The root command, its global options, and helpers every command module shares."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import io
import logging
import os
import re
import secrets
import signal
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, BinaryIO, NoReturn, TypeVar
from urllib.parse import quote

import anyio
import click

from leaderlog._console import INTERRUPTED_STATUS, dropping_ctrl_c
from leaderlog._json import dumps
from leaderlog.cli._terminal import bar_put_away, bars_stopped
from leaderlog.errors import (
    BatchError,
    ConcurrencyError,
    DuplicateEventError,
    Interrupted,
    LeaderlogError,
    LogRemoved,
    RecordedAtRefused,
    RecordError,
    StoreError,
    StoreUnavailable,
)
from leaderlog.log import EventLog
from leaderlog.projections.query_input import NOT_UTF8_TEXT, WHOLE_NUMBER
from leaderlog.store import check_database_url

__all__ = [
    "Context",
    "OutputLost",
    "WholeNumber",
    "console_main",
    "escaped",
    "is_output_error",
    "logged_on_stderr",
    "main",
    "missing_sqlite_file",
    "print_json",
    "print_json_in_parts",
    "reported",
    "run",
]

T = TypeVar("T")


class WholeNumber(click.IntRange):
    """A whole number in a range, written in digits 0-9 as the HTTP API takes it: Python
    would also read other scripts' digits (fullwidth U+FF15, say), ``1_0``, ``+5`` and
    `` 5``, which a URL's ``after=`` or ``limit=`` refuses. A minus sign is left to the
    range, which says what is wrong with ``-1``."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not WHOLE_NUMBER.match(value):
            self.fail(f"{value!r} is not a whole number written in digits 0-9.", param, ctx)
        return super().convert(value, param, ctx)


class Context:
    def __init__(self, db: str | None) -> None:
        self._given_db = db

    @functools.cached_property
    def db(self) -> str:
        """The database URL (``--db``, ``LEADERLOG_DB`` or the default), its form checked when
        a command first needs it: a malformed one is a usage mistake, as any value an option
        refuses (a command that needs no database, such as ``schema``, does not mind it)."""
        try:
            return check_database_url(self._given_db)
        except StoreUnavailable as error:
            # An option of leaderlog itself: its usage and help are the ones to point to,
            # not the command's, whose help does not list it.
            command = click.get_current_context(silent=True)
            raise click.BadParameter(
                str(error),
                ctx=command.find_root() if command is not None else None,
                param_hint="'--db' (or LEADERLOG_DB)",
            ) from None

    @contextlib.asynccontextmanager
    async def log(self, *, create: bool) -> AsyncIterator[EventLog]:
        """The log the database URL names.

        ``create``: whether a SQLite file that does not exist is created, as a command that
        writes wants. A command that only reads refuses it instead: opening it would leave
        an empty database behind and answer as if nothing had happened.
        """
        if not create:
            _refuse_a_missing_sqlite_file(self.db)
        log = await EventLog.open(self.db, create=create)
        try:
            yield log
        finally:
            await log.close()

    async def append_to_log(self, append: Callable[[EventLog], Awaitable[T]]) -> T:
        """Run ``append`` (appends that commit whole or not at all) on the log, creating it
        if there is none; if ``append`` fails, a log that did not exist is not left behind.

        Otherwise later commands would find an empty log and answer as if it were a real
        one (``verify``: "chain OK, 0 events") instead of saying there is none.
        """
        missing = missing_sqlite_file(self.db)
        if missing is not None:
            appended = await _append_to_a_new_sqlite_file(missing.absolute(), append)
            if appended is not None:
                return appended[0]
        attempt = 1
        while True:
            async with self.log(create=True) as log:
                try:
                    return await append(log)
                except LogRemoved:
                    # Another process's first import was refused and dropped the empty log
                    # this one had opened: nothing was written, so the records are decided
                    # again on a log created anew, and their own problems are what is told.
                    if attempt >= _ATTEMPTS_ON_A_REMOVED_LOG:
                        raise
                except BaseException:
                    # The refusal is what to report; a log that cannot be removed stays empty.
                    with contextlib.suppress(StoreError):
                        await log.store.discard_created_log()
                    raise
            attempt += 1


# Each removal is another process's refused first import; these are for a burst of them.
_ATTEMPTS_ON_A_REMOVED_LOG = 5


def missing_sqlite_file(url: str) -> Path | None:
    """The file a SQLite URL names, if it does not exist."""
    if "://" in url and url.partition("://")[0].lower() != "sqlite":
        return None  # PostgreSQL, or a scheme that opening the store refuses
    # Imported here: a PostgreSQL user's command need not load the SQLite driver.
    from leaderlog.store.sqlite import check_place, check_url

    path = check_url(url)  # a malformed URL is refused here as it is when opened
    # As opening it is: a database under a file is no missing one that an import would make.
    check_place(path.absolute())
    try:
        if path.exists():
            return None
    except OSError as error:  # a folder on the way this user may not enter, say
        raise StoreUnavailable(
            f"cannot open SQLite database {path.absolute()}: {error.strerror}"
        ) from None
    return path


def _refuse_a_missing_sqlite_file(url: str) -> None:
    path = missing_sqlite_file(url)
    if path is None:
        return
    raise StoreUnavailable(
        f"database {path.absolute()} does not exist: import records into it first "
        "(leaderlog import FILE), or name another with --db URL or LEADERLOG_DB"
    )


async def _open_even_if_interrupted(url: str) -> EventLog:
    """Open a log; when the command is interrupted meanwhile, let the opening finish and
    close the log before passing the interruption on: the connection being made on another
    thread would otherwise go on, and create the file again once the caller removed it."""
    opening = asyncio.create_task(EventLog.open(url))
    try:
        return await asyncio.shield(opening)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await (await opening).close()
        raise


# What SQLite may keep beside a database file: the write-ahead log and its index, or a
# rollback journal.
_SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")
# New logs being built under a temporary name: SIGTERM, which ends the process without
# unwinding it, removes them first.
_DRAFTS: set[Path] = set()


def _remove_draft(draft: Path) -> None:
    """Remove a new log's hidden files, saying which stayed (a folder made read-only
    meanwhile, say): they hold nothing the log has, and the README says to delete them."""
    kept: list[str] = []
    for leftover in (draft, *(Path(f"{draft}{suffix}") for suffix in _SQLITE_COMPANIONS)):
        try:
            leftover.unlink(missing_ok=True)
        except OSError as error:
            kept.append(f"{leftover} ({error.strerror or error})")
    if kept:
        echo_line(
            f"warning: could not remove {', '.join(kept)}, left by the new log being built: "
            "it holds nothing the log has; delete it",
            err=True,
        )


async def _append_to_a_new_sqlite_file(
    path: Path, append: Callable[[EventLog], Awaitable[T]]
) -> tuple[T] | None:
    """Run ``append`` on a new log built under a temporary name beside ``path``, which then
    takes ``path``'s name only if ``append`` succeeded; ``None`` if the name could not be
    given (another command created ``path`` meanwhile, or links are not supported here),
    and ``append`` is to be run on ``path`` itself.

    Removing ``path`` after a failure instead would not be safe: another process may have
    opened it meanwhile and would go on writing to a file no name leads to.
    """
    # The name's start only: with the suffixes SQLite adds, the whole of a long name would
    # pass the 255 bytes a file name may have.
    draft = path.with_name(f".{path.name[:64]}.{secrets.token_hex(8)}.leaderlog-new")
    url = str(draft)
    if not NOT_UTF8_TEXT.search(url):
        url = "sqlite:///" + quote(url)
    elif "://" in url:
        # A name in bytes that are not UTF-8 (Latin-1, say) has no sqlite:/// URL, so it is
        # opened as a bare path: unless it holds ://, and would be read as another URL.
        return None
    _DRAFTS.add(draft)
    try:
        try:
            log = await _open_even_if_interrupted(url)
        except StoreUnavailable:
            # A folder that is missing or not writable, say: opening the database itself
            # then says so, naming the database rather than the temporary file.
            return None
        try:
            appended = await append(log)
        finally:
            await log.close()
        # Closing the last connection moved everything into the file itself; a link to the
        # file alone would miss what is still in a write-ahead log.
        if any(Path(f"{draft}{suffix}").exists() for suffix in _SQLITE_COMPANIONS):
            return None
        try:
            # Unlike a rename, a link never replaces a file that appeared under that name.
            os.link(draft, path)
        except OSError:
            return None
        return (appended,)
    finally:
        _remove_draft(draft)
        _DRAFTS.discard(draft)


# Control characters other than tab: from stored text, they could end a line early or
# move the terminal's cursor (a CR hides what came before it on the line). Bidirectional
# formatting characters too: a right-to-left override reorders the rest of the line.
_CONTROL = re.compile(
    r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def echo_line(line: str, *, err: bool = False) -> None:
    """Print one line of text output: control and bidirectional formatting characters in it
    (from stored names, titles, quotes, ...) are shown escaped (``\\r``, ``\\n``, ``\\x1b``,
    ``\\u202e``), so data can neither start a line of its own, overwrite one, nor reorder it."""
    click.echo(escaped(line), err=err)


def escaped(text: str) -> str:
    """``text`` with its control and bidirectional formatting characters escaped, as
    :func:`echo_line` prints it."""
    return _CONTROL.sub(lambda found: repr(found.group())[1:-1], text)


class _PrefixedOnStderr(logging.Handler):
    """Log records on stderr as commands print their own warnings and errors
    (``warning: ...``, ``error: ...``), each line escaped as :func:`echo_line` does."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            echo_line(f"{record.levelname.lower()}: {record.getMessage()}", err=True)
            if record.exc_info:
                # A bug's traceback, kept for its report; line by line, so that stored text in
                # an exception's message cannot fake a line of its own.
                for line in logging.Formatter().formatException(record.exc_info).splitlines():
                    echo_line(line, err=True)
        except Exception:
            self.handleError(record)


@contextlib.contextmanager
def logged_on_stderr(*loggers: str) -> Iterator[None]:
    """While the block runs, warnings and errors logged by ``loggers`` (and their children)
    are printed on stderr with the prefix of the command's own (``warning: ...``)."""
    handler = _PrefixedOnStderr(logging.WARNING)
    # Nested (a command run inside the server's routing), a record would be said twice.
    routed = [
        logger
        for logger in map(logging.getLogger, loggers)
        if not any(isinstance(present, _PrefixedOnStderr) for present in logger.handlers)
    ]
    for logger in routed:
        logger.addHandler(handler)
    try:
        yield
    finally:
        for logger in routed:
            logger.removeHandler(handler)


def run(function: Callable[[], Awaitable[T]], *, interrupted: str = "") -> T:
    """Run a coroutine; turn leaderlog errors into a message on stderr and exit code 1.

    ``interrupted`` is added to the message a Ctrl-C prints (say, what was or was not
    written); the exit status is then 130, as a shell expects.
    """
    said = _interrupted_message(interrupted)

    unraisable_hook = sys.unraisablehook
    held = _HeldCtrlC()
    installed = _stop_at_once_on_a_second_interrupt(said, held)

    async def guarded() -> T:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(_quiet_about_ctrl_c)
        sys.unraisablehook = _ctrl_c_delivered_again(loop, unraisable_hook)
        held.started(loop)
        try:
            return await function()
        finally:
            held.finished()

    try:
        # The PostgreSQL driver's pool warns while it reconnects (the server restarted under
        # the command): said as the command's own warnings, not bare.
        with reported(interrupted), logged_on_stderr("asyncpg"):
            result = anyio.run(guarded)
            # Held while the event loop was being made or wound down, and not raised since.
            held.deliver()
            return result
    finally:
        sys.unraisablehook = unraisable_hook
        # The handler that was there before takes over again (console_main's, which ends
        # the process at once on another Ctrl-C while it winds down).
        for ours, before in installed:
            if signal.getsignal(signal.SIGINT) is ours:
                signal.signal(signal.SIGINT, before)


# Code that Ctrl-C must not be raised in the middle of: the event loop's own, and the
# drivers'. Raised there, it left their state half changed: asyncpg's connect or pool
# release left a coroutine never awaited or a future whose error no one retrieved (printed
# after "interrupted"), a protocol cut in the middle of reading crashed the process, and
# asyncio's own loop or runner, cut while made or closed, printed their errors at exit.
# pydantic too: cut while it builds a model's validator, it raised its own SchemaError.
_HELD_IN = frozenset(
    {"asyncio", "asyncpg", "aiosqlite", "anyio", "selectors", "concurrent", "pydantic"}
)


def _in_the_machinery(frame: FrameType | None) -> bool:
    """Whether the innermost code that is either the command's or the machinery's (a helper
    it called, such as socket's, is neither) is the machinery's."""
    while frame is not None:
        name = frame.f_globals.get("__name__")
        top = name.partition(".")[0] if isinstance(name, str) else ""
        if top in _HELD_IN:
            return True
        if top == "leaderlog":
            return False
        frame = frame.f_back
    return False


class _HeldCtrlC:
    """A Ctrl-C pressed while the event loop's or a driver's code runs, held until it can be
    raised where the command's own code is: from a callback of the loop (between two of its
    steps, where the command's tasks are then cancelled as the drivers expect), else once
    the loop has ended."""

    def __init__(self) -> None:
        self.pending = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._delivery: asyncio.Handle | None = None

    def hold(self) -> None:
        self.pending = True
        loop = self._loop
        if loop is not None and not loop.is_closed():
            self._delivery = loop.call_soon_threadsafe(self.deliver)

    def started(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.deliver()

    def finished(self) -> None:
        # Winding the loop down is left to finish (its generators closed, its threads
        # joined): what was held is raised once it has, not from a step of the winding down.
        self._loop = None
        if self._delivery is not None:
            self._delivery.cancel()
            self._delivery = None

    def deliver(self) -> None:
        if self.pending:
            self.pending = False
            raise Interrupted


def _ctrl_c_delivered_again(
    loop: asyncio.AbstractEventLoop, hook: Callable[[Any], object]
) -> Callable[[Any], object]:
    """An unraisable hook that raises a Ctrl-C Python dropped again, in the event loop.

    Landing where an exception cannot go on (a finalizer, or a library's callback into
    Python: pydantic checking a pattern with Python's regular expressions), Ctrl-C was
    printed as "Exception ignored in: ..." with its traceback, and the command went on as
    if it had not been pressed. Raised from a callback of the loop instead, it stops the
    command as one that reaches the loop while it waits does."""

    def delivered_again(unraisable: Any) -> object:
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and not loop.is_closed():
            loop.call_soon_threadsafe(_interrupt)
            return None
        return hook(unraisable)

    return delivered_again


def _interrupt() -> NoReturn:
    raise Interrupted


def _quiet_about_ctrl_c(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The event loop's report of an error no one awaited, except Ctrl-C's: landing in a task
    that reads ahead, it reaches the command once already, and the loop would print its
    traceback ("Task exception was never retrieved") under the command's "interrupted"."""
    if isinstance(context.get("exception"), KeyboardInterrupt):
        return
    loop.default_exception_handler(context)


def _interrupted_message(interrupted: str) -> str:
    return "interrupted" + (f": {interrupted}" if interrupted else "")


@contextlib.contextmanager
def reported(interrupted: str = "") -> Iterator[None]:
    """Leaderlog errors as a message on stderr and exit code 1; Ctrl-C as ``interrupted``
    (plus what was or was not written) and exit code 130. For work outside :func:`run`
    too: reading a file or stdin before the event loop starts, where Ctrl-C stops it."""
    try:
        try:
            yield
        except BaseException:
            # Before any last words: one a Ctrl-C left drawing would draw itself under them.
            bars_stopped()
            raise
    except KeyboardInterrupt:
        click.echo(_interrupted_message(interrupted), err=True)
        sys.exit(INTERRUPTED_STATUS)
    except BatchError as error:
        click.echo(f"error: {len(error.problems)} problem(s), nothing written", err=True)
        for problem in error.problems[:50]:
            echo_line(f"  {problem} [rule: {problem.rule}]", err=True)
        if len(error.problems) > 50:
            click.echo(f"  ... and {len(error.problems) - 50} more", err=True)
        sys.exit(1)
    except LeaderlogError as error:
        rule = _rule_of(error)
        echo_line(f"error: {error}" + (f" [rule: {rule}]" if rule else ""), err=True)
        sys.exit(1)


_InterruptHandler = Callable[[int, FrameType | None], None]


@contextlib.contextmanager
def interruptible(interrupted: str = "") -> Iterator[Callable[[], bool]]:
    """Ctrl-C for work outside :func:`run` (reading records before the event loop starts).

    The first raises KeyboardInterrupt where the main thread is, as Python's own handler
    does, and is noted: one raised inside a finalizer is dropped by Python, so the work asks
    the function this yields, and stops itself. A second ends the process at once.
    """
    said = _interrupted_message(interrupted)
    noted = False

    def on_interrupt(signum: int, frame: FrameType | None) -> None:
        nonlocal noted
        if noted:
            _stop_at_once(said)
        noted = True
        raise Interrupted

    if threading.current_thread() is not threading.main_thread():
        yield lambda: noted
        return

    hook = sys.unraisablehook
    sys.unraisablehook = dropping_ctrl_c(hook)
    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield lambda: noted
    finally:
        signal.signal(signal.SIGINT, previous)
        sys.unraisablehook = hook


def console_main() -> None:
    """The ``leaderlog`` program: :func:`main` in a process of its own.

    A first Ctrl-C interrupts as Python's own handler does; another one, once the command
    has said so and the process is winding down (its database's threads joined, say),
    ends it at once with the same status, rather than as killed by the signal (in Python's
    last moments, once it has given Ctrl-C back its default, one still ends the process as
    killed by it, which a shell reports as the same 130). Only here: :func:`main` run inside
    another program leaves that program's signal handling alone.
    """
    interrupts = 0

    def on_interrupt(signum: int, frame: FrameType | None) -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts > 1:
            os._exit(INTERRUPTED_STATUS)
        raise Interrupted

    signal.signal(signal.SIGINT, on_interrupt)
    signal.signal(signal.SIGTERM, _terminated)
    main()


def _terminated(signum: int, frame: FrameType | None) -> None:
    """SIGTERM ends the process as it always has, killed by the signal (a shell reports
    143), once the terminal is put right (a progress bar drawn then left the cursor hidden
    in the shell the command returned to) and a new log being built under a temporary name
    is removed (nothing gave it its name: it would stay, hidden, beside the database)."""
    _said_on_stderr(bar_put_away())
    for draft in list(_DRAFTS):
        _remove_draft(draft)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.raise_signal(signal.SIGTERM)


def _stop_at_once(said: str) -> NoReturn:
    """End the process now, saying so on a line of its own."""
    _said_on_stderr(f"{bar_put_away()}{said} (again: stopped at once)\n")
    os._exit(INTERRUPTED_STATUS)


def _said_on_stderr(text: str) -> None:
    """Write straight to stderr's file, from a signal handler; nothing when stderr is closed
    (``2>&-``), where the signal must still end the process as it says."""
    if text and sys.stderr is not None:
        with contextlib.suppress(OSError, ValueError):
            os.write(sys.stderr.fileno(), text.encode())


def _stop_at_once_on_a_second_interrupt(
    said: str, held: _HeldCtrlC
) -> list[tuple[_InterruptHandler, _InterruptHandler]]:
    """The first Ctrl-C cancels the command, which then closes its database; a second one
    pressed meanwhile interrupted the closing itself and left threads waiting on each other
    for good. It ends the process at once instead: transactions make that as safe as a crash
    (what was committed stays, what was not is not). A first one pressed while the event
    loop's or a driver's code runs is ``held`` until it can be raised in the command's."""
    if threading.current_thread() is not threading.main_thread():
        return []
    first = signal.getsignal(signal.SIGINT)
    if not callable(first):
        return []
    interrupts = 0

    def on_interrupt(signum: int, frame: FrameType | None) -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts > 1:
            _stop_at_once(said)
        if _in_the_machinery(frame):
            held.hold()
            return
        first(signum, frame)

    signal.signal(signal.SIGINT, on_interrupt)
    return [(on_interrupt, first)]


def is_output_error(error: OSError) -> bool:
    """Whether writing to stdout failed (a full disk, a closed pipe), as opposed to an
    error the command itself should have reported."""
    try:
        sys.stdout.flush()
    except OSError:
        return True
    return error.errno in (errno.ENOSPC, errno.EPIPE, errno.EIO, errno.EDQUOT)


class OutputLost(Exception):
    """Output could not be written after the command changed something (``cause``);
    ``done`` says what it did all the same, as the user saw nothing of it."""

    def __init__(self, cause: OSError, done: str) -> None:
        super().__init__(done)
        self.cause = cause
        self.done = done


class _WholeWrites(io.RawIOBase):
    """Standard output as the commands write to it: every write goes out whole or raises.

    A pipe whose reader has gone takes part of a large write and reports only that part
    (``leaderlog feed | head -1``): the rest would be lost without an error, and the
    command would end with status 0. Writing the rest raises the broken pipe instead.
    """

    def __init__(self, target: BinaryIO) -> None:
        super().__init__()
        self._target = target

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            written = self._target.write(view[done:])
            if not written:
                raise BrokenPipeError(errno.EPIPE, "the output takes no more")
            done += written
        # Passed on at once, so that an error shows where the command flushes (a token it
        # could not show is revoked there), not after it has ended.
        self._target.flush()
        return done

    def flush(self) -> None:
        self._target.flush()

    def fileno(self) -> int:
        return self._target.fileno()

    def isatty(self) -> bool:
        return self._target.isatty()

    def close(self) -> None:
        # The process's own stdout stays open; only this view of it is done.
        self._target.flush()
        super().close()


@contextlib.contextmanager
def _standard_output() -> Iterator[None]:
    """Standard output for one command: UTF-8 whatever the locale (records, exports and JSON
    are UTF-8, and an export must import again), and written whole (see
    :class:`_WholeWrites`). A closed one is refused once the command is known
    (:meth:`_Commands.resolve_command`)."""
    original = sys.stdout
    buffer = getattr(original, "buffer", None) if original is not None else None
    if buffer is None:
        yield
        return
    original.flush()
    stream = io.TextIOWrapper(
        io.BufferedWriter(_WholeWrites(buffer)),
        encoding="utf-8",
        line_buffering=getattr(original, "line_buffering", False),
    )
    sys.stdout = stream
    try:
        yield
        stream.flush()
    finally:
        # A bar still drawn would give sys.stdout back to this stream when it stops.
        bars_stopped()
        sys.stdout = original
        with contextlib.suppress(ValueError, OSError):
            stream.detach()


def _silence_stdout() -> None:
    # Python flushes stdout again at exit; pointed at /dev/null, that flush cannot fail.
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


@contextlib.contextmanager
def _unwritable_output_reported() -> Iterator[None]:
    """Output that cannot be written ends the command with status 1 and one line on stderr
    (none when the reader went away: `leaderlog export | head`), never a traceback."""
    try:
        yield
    except BrokenPipeError:
        _silence_stdout()
        raise click.exceptions.Exit(1) from None
    except OSError as error:
        if not is_output_error(error):
            raise
        _say_the_output_is_lost(error)
        raise click.exceptions.Exit(1) from None
    except OutputLost as lost:
        _say_the_output_is_lost(lost.cause, lost.done)
        raise click.exceptions.Exit(1) from None


def _say_the_output_is_lost(error: OSError, done: str = "") -> None:
    _silence_stdout()
    also = f"; {done}" if done else ""
    click.echo(f"error: cannot write the output: {error.strerror or error}{also}", err=True)


def _rule_of(error: LeaderlogError) -> str | None:
    """The rule a refused record broke, named like the rules of :class:`RecordError`."""
    if isinstance(error, RecordError):
        return error.rule
    if isinstance(error, ConcurrencyError):
        return "expected_version"
    if isinstance(error, DuplicateEventError):
        return "event_id"
    if isinstance(error, RecordedAtRefused):
        return "recorded_at"
    return None


def print_json(value: Any) -> None:
    click.echo(dumps(value, indent=True))


async def print_json_in_parts(
    value: Mapping[str, Any], lists: Mapping[str, AsyncIterator[Sequence[Any]]]
) -> None:
    """``print_json({**value, key: [...], ...})`` with each of ``lists`` printed a part at a
    time, as its iterator gives them: the same text, without holding every item at once (nor
    the whole text). The iterators are read in the order their keys are printed."""
    keys = sorted({*value, *lists})
    if not keys:
        click.echo("{}")
        return
    click.echo("{", nl=False)
    for number, key in enumerate(keys):
        # Each member sits one level deep, a list's items two; JSON text holds no line
        # break but those of its indentation.
        click.echo(f"{',' if number else ''}\n  {dumps(key)}: ", nl=False)
        if key not in lists:
            click.echo(dumps(value[key], indent=True).replace("\n", "\n  "), nl=False)
            continue
        printed = False
        async for part in lists[key]:
            for item in part:
                text = dumps(item, indent=True).replace("\n", "\n    ")
                click.echo(f"{',' if printed else '['}\n    {text}", nl=False)
                printed = True
        click.echo("\n  ]" if printed else "[]", nl=False)
    click.echo("\n}")


class _Command(click.Command):
    """A command that refuses an option given twice, as the HTTP API refuses a repeated
    parameter (click would keep the last one silently: ``state --org ice --org dhs``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return self._parse_args(ctx, args)
        except click.UsageError as error:
            # click quotes extra arguments as typed ("Got unexpected extra argument (...)"):
            # escaped as every other line, a CR or an escape sequence in one can neither
            # overwrite the message nor vanish from it (click strips ANSI codes off a terminal).
            # Its other refusals (BadParameter, NoSuchOption) quote what they name with repr.
            if type(error) is not click.UsageError or escaped(error.message) == error.message:
                raise
            raise click.UsageError(escaped(error.message), error.ctx) from None

    def _parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not ctx.resilient_parsing:
            _refuse_repeated_options(self, ctx, args)
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as error:
            elsewhere = _commands_taking(ctx, error.option_name, besides=self)
            if not elsewhere:
                raise
            # click would suggest the nearest option of this command by spelling alone
            # (claim --as-of: "Did you mean '--json'?"), when the option is another's.
            raise click.UsageError(
                f"No such option '{error.option_name}' for {ctx.command_path}: "
                f"it is an option of {_in_words(elsewhere)}",
                ctx,
            ) from None
        except click.UsageError as error:
            # click's parser raises "Option '--org' requires an argument." without the
            # context, so it would be shown without the command's usage, unlike every
            # other usage mistake.
            if error.ctx is not None:
                raise
            raise click.UsageError(error.message, ctx) from None


def _commands_taking(ctx: click.Context, option: str, *, besides: click.Command) -> list[str]:
    """The paths of the other commands that take ``option``, in the order help lists them."""
    root = ctx.find_root()
    found: list[str] = []

    def visit(command: click.Command, path: str) -> None:
        if isinstance(command, click.Group):
            for name in command.list_commands(root):
                subcommand = command.get_command(root, name)
                if subcommand is not None:
                    visit(subcommand, f"{path} {name}")
        elif command is not besides and any(
            option in parameter.opts for parameter in command.params
        ):
            found.append(path)

    visit(root.command, "")
    return [path.strip() for path in found]


def _in_words(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _refuse_repeated_options(command: click.Command, ctx: click.Context, args: list[str]) -> None:
    try:
        _, _, order = command.make_parser(ctx).parse_args(args=list(args))
    except click.UsageError:
        return  # the real parse reports it
    seen: set[str] = set()
    for param in order:
        single = isinstance(param, click.Option) and not (
            param.multiple or param.count or param.is_flag
        )
        if not single or param.name is None:
            continue
        if param.name in seen:
            raise click.UsageError(f"{param.opts[0]} is given more than once: give it once", ctx)
        seen.add(param.name)


class _Commands(_Command, click.Group):
    """The root group: what every command shares when it is stopped or cannot write (and,
    as a command itself, refuses its own options given twice: ``--db``)."""

    command_class = _Command
    group_class = type

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with _unwritable_output_reported(), _standard_output():
                return super().invoke(ctx)
        except click.NoSuchOption as error:
            if error.option_name != "--db":
                raise
            # A global option, easily put after the command by habit. The command is named
            # whole: under a group (token), the subcommand alone would be no command at all.
            root = ctx.find_root().command_path
            given = error.ctx.command_path if error.ctx is not None else ""
            command = given[len(root) :].strip() if given.startswith(root) else ""
            # The variable is also the one way through scripts/run, which runs serve itself.
            raise click.UsageError(
                f"--db goes before the command: leaderlog --db URL {command or 'COMMAND'} ..., "
                "or set LEADERLOG_DB=URL (as in LEADERLOG_DB=URL leaderlog serve)",
                error.ctx,
            ) from None
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(INTERRUPTED_STATUS)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        # The command is known only now (invoked_subcommand is not set yet when invoke
        # begins): a closed standard output refuses it before it does anything, as its
        # output would be lost without a word (a new token among it), but for a server,
        # which logs to stderr all the same.
        if sys.stdout is None and name != "serve":
            click.echo("error: standard output is closed: nothing was done", err=True)
            raise click.exceptions.Exit(1)
        if sys.stdout is None:
            # Where its access log goes, lost as the closed output would lose it (uvicorn's
            # logging cannot be set up on no stream at all).
            sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
        return name, command, rest

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        # The root's own --help and --version print while its arguments are parsed, before
        # invoke() (which covers every command's output) runs.
        with _unwritable_output_reported():
            return super().make_context(info_name, args, parent, **extra)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    metavar="URL",
    envvar="LEADERLOG_DB",
    help="sqlite:///path (default ./leaderlog.db) or postgresql://...; env LEADERLOG_DB.",
)
@click.version_option(package_name="leaderlog")
@click.pass_context
def main(context: click.Context, db: str | None) -> None:
    """Who leads what, as reported: an append-only log of leadership changes.

    \b
    Example:
      leaderlog import seeds/ice-leadership-2025-05.jsonl
      leaderlog export > log.jsonl
      leaderlog --db sqlite:///other.db import log.jsonl
      leaderlog --db sqlite:///other.db events --json
    """
    context.obj = Context(db)
