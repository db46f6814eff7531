"""The root command, its global options, and helpers every command module shares."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import anyio
import click
from rich.console import Console

from leaderlog._json import dumps
from leaderlog.errors import (
    BatchError,
    ConcurrencyError,
    DuplicateEventError,
    LeaderlogError,
    RecordError,
    StoreUnavailable,
)
from leaderlog.log import EventLog
from leaderlog.store import database_url

__all__ = ["Context", "err_console", "main", "out_console", "print_json", "run"]

T = TypeVar("T")
out_console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


class Context:
    def __init__(self, db: str | None) -> None:
        self.db = database_url(db)

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


def _refuse_a_missing_sqlite_file(url: str) -> None:
    if "://" in url and url.partition("://")[0].lower() != "sqlite":
        return  # PostgreSQL, or a scheme that opening the store refuses
    # Imported here: a PostgreSQL user's command need not load the SQLite driver.
    from leaderlog.store.sqlite import path_from_url

    path = path_from_url(url)  # a malformed URL is refused here as it is when opened
    if str(path) == ":memory:" or path.exists():
        return
    raise StoreUnavailable(
        f"database {path.absolute()} does not exist: import records into it first "
        "(leaderlog import FILE), or name another with --db URL or LEADERLOG_DB"
    )


# What a shell reports for a command stopped by Ctrl-C (128 + SIGINT).
INTERRUPTED_STATUS = 130


# Control characters other than tab: from stored text, they could end a line early or
# move the terminal's cursor (a CR hides what came before it on the line). Bidirectional
# formatting characters too: a right-to-left override reorders the rest of the line.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def echo_line(line: str, *, err: bool = False) -> None:
    """Print one line of text output: control and bidirectional formatting characters in it
    (from stored names, titles, quotes, ...) are shown escaped (``\\r``, ``\\n``, ``\\x1b``,
    ``\\u202e``), so data can neither start a line of its own, overwrite one, nor reorder it."""
    click.echo(_CONTROL.sub(lambda found: repr(found.group())[1:-1], line), err=err)


def run(function: Callable[[], Awaitable[T]], *, interrupted: str = "") -> T:
    """Run a coroutine; turn leaderlog errors into a message on stderr and exit code 1.

    ``interrupted`` is added to the message a Ctrl-C prints (say, what was or was not
    written); the exit status is then 130, as a shell expects.
    """
    try:
        return anyio.run(function)
    except KeyboardInterrupt:
        click.echo("interrupted" + (f": {interrupted}" if interrupted else ""), err=True)
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


def _is_output_error(error: OSError) -> bool:
    """Whether writing to stdout failed (a full disk, a closed pipe), as opposed to an
    error the command itself should have reported."""
    try:
        sys.stdout.flush()
    except OSError:
        return True
    return error.errno in (errno.ENOSPC, errno.EPIPE, errno.EIO, errno.EDQUOT)


def _silence_stdout() -> None:
    # Python flushes stdout again at exit; pointed at /dev/null, that flush cannot fail.
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _rule_of(error: LeaderlogError) -> str | None:
    """The rule a refused record broke, named like the rules of :class:`RecordError`."""
    if isinstance(error, RecordError):
        return error.rule
    if isinstance(error, ConcurrencyError):
        return "expected_version"
    if isinstance(error, DuplicateEventError):
        return "event_id"
    return None


def print_json(value: Any) -> None:
    click.echo(dumps(value, indent=True))


class _Commands(click.Group):
    """The root group: what every command shares when it is stopped or cannot write."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.NoSuchOption as error:
            if error.option_name != "--db":
                raise
            # A global option, easily put after the command by habit.
            raise click.UsageError(
                "--db goes before the command: leaderlog --db URL "
                f"{ctx.invoked_subcommand or 'COMMAND'} ...",
                error.ctx,
            ) from None
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(INTERRUPTED_STATUS)
        except BrokenPipeError:
            # The reader went away (`leaderlog export | head`): nothing left to say to it.
            _silence_stdout()
            ctx.exit(1)
        except OSError as error:
            if not _is_output_error(error):
                raise
            _silence_stdout()
            click.echo(f"error: cannot write the output: {error.strerror or error}", err=True)
            ctx.exit(1)


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
      leaderlog --db sqlite:///other.db events --json
    """
    try:
        context.obj = Context(db)
    except LeaderlogError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(1)
