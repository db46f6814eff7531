"""The root command, its global options, and helpers every command module shares."""

from __future__ import annotations

import contextlib
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
    async def log(self) -> AsyncIterator[EventLog]:
        log = await EventLog.open(self.db)
        try:
            yield log
        finally:
            await log.close()


def run(function: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine; turn leaderlog errors into a message on stderr and exit code 1."""
    try:
        return anyio.run(function)
    except BatchError as error:
        click.echo(f"error: {len(error.problems)} problem(s), nothing written", err=True)
        for problem in error.problems[:50]:
            click.echo(f"  {problem} [rule: {problem.rule}]", err=True)
        if len(error.problems) > 50:
            click.echo(f"  ... and {len(error.problems) - 50} more", err=True)
        sys.exit(1)
    except LeaderlogError as error:
        rule = _rule_of(error)
        click.echo(f"error: {error}" + (f" [rule: {rule}]" if rule else ""), err=True)
        sys.exit(1)


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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
    context.obj = Context(db)
