"""Commands over the raw log: import, events, verify, export, schema."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import textwrap
from collections.abc import AsyncGenerator, Callable, Generator, Iterator, Sequence
from dataclasses import asdict
from typing import IO, Any

import click

from leaderlog._json import dumps
from leaderlog.cli._app import (
    Context,
    OutputLost,
    WholeNumber,
    echo_line,
    escaped,
    interruptible,
    is_output_error,
    main,
    print_json,
    reported,
    run,
)
from leaderlog.cli._terminal import bars, bytes_bar, stage_bars
from leaderlog.cli.projection_commands import PROGRESS_THRESHOLD
from leaderlog.errors import (
    BatchError,
    ConcurrencyError,
    DuplicateEventError,
    LeaderlogError,
    RecordedAtRefused,
    RecordError,
    StoreError,
)
from leaderlog.events import (
    HeldRecord,
    RecordedEvent,
    RecordFields,
    check_actor,
    event_schema,
    format_time,
)
from leaderlog.log import (
    AppendOutcome,
    AppendProgress,
    EventLog,
    ParsedRecords,
    parse_records,
    read_lines,
    stored_unchanged,
)
from leaderlog.projections import verify_log
from leaderlog.tokens import Tokens

_IMPORT_INTERRUPTED = (
    "an import is one transaction, so it was written whole or not at all; "
    "importing the same files again appends only what is missing"
)
# Files smaller than this import without a progress bar: it would only flicker.
_PROGRESS_THRESHOLD = 1024 * 1024
# Imports of this many records or fewer append without progress bars, in a few seconds.
_APPEND_BAR_THRESHOLD = 10_000
# Events read at a time by the commands that list them.
_EVENTS_PAGE = 2000


def _size(file: IO[bytes]) -> int | None:
    """The file's size for the progress bar, when it can be known (not for a pipe)."""
    if sys.stdin is not None and file is sys.stdin.buffer:
        return _stdin_size(file)
    try:
        size = file.seek(0, 2)
        file.seek(0)
    except OSError:
        return None
    return size


def _stdin_size(stdin: IO[bytes]) -> int | None:
    """What is left to read of a file redirected to stdin; None for a pipe or a terminal.

    Found without seeking, which would move what the shell handed over: a command run
    before this one on the same stdin may have read part of it.
    """
    try:
        status = os.fstat(stdin.fileno())
        if not stat.S_ISREG(status.st_mode):
            return None
        return max(status.st_size - stdin.tell(), 0)
    except (OSError, ValueError):
        return None


def _in_file(problem: RecordError, file: IO[bytes]) -> RecordError:
    return problem.located(f"{file.name} {problem.where}" if problem.where else file.name)


def _lines_with_progress(
    handle: IO[bytes], size: int | None, interrupted: Callable[[], bool]
) -> Generator[bytes, None, None]:
    lines = _until_interrupted(_read_lines_of(handle), interrupted)
    if size is not None and size < _PROGRESS_THRESHOLD:
        yield from lines
        return
    if size is None:
        # A pipe: its size shows only as it is read, so the bar, without an end, is drawn
        # once as much has been read as a file needs to get one.
        read = 0
        for line in lines:
            read += len(line)
            yield line
            if read >= _PROGRESS_THRESHOLD:
                break
        else:
            return
    else:
        read = 0
    with bytes_bar("reading", total=size, completed=read) as advance:
        for line in lines:
            advance(len(line))
            yield line


@contextlib.contextmanager
def _append_bar(records: int) -> Iterator[AppendProgress | None]:
    """Progress bars for the append of a large import: its rules checked, its rows written."""
    if records <= _APPEND_BAR_THRESHOLD:
        yield None
        return
    with stage_bars(
        {"checking": "checking rules", "writing": "writing"},
        total=records,
        instead=f"appending {records} records in one transaction...",
    ) as advance:
        yield advance


def _read_lines_of(handle: IO[bytes]) -> Iterator[bytes]:
    """:func:`read_lines`, with a file that fails while it is read named as the input.

    A disk's I/O error, a network file system gone or a socket reset on stdin is not the
    output failing (EIO would pass for it), nor a traceback: it is said with the file's name.
    """
    try:
        yield from read_lines(handle)
    except OSError as error:
        stdin = sys.stdin is not None and handle is sys.stdin.buffer
        name = "standard input" if stdin else handle.name
        raise LeaderlogError(
            f"cannot read {name}: {error.strerror or error}; nothing was written"
        ) from None


def _until_interrupted(lines: Iterator[bytes], interrupted: Callable[[], bool]) -> Iterator[bytes]:
    for line in lines:
        if interrupted():
            raise KeyboardInterrupt  # one that Python dropped (see interruptible)
        yield line


def _each_file_once(
    context: click.Context, parameter: click.Parameter, files: Sequence[IO[bytes]]
) -> Sequence[IO[bytes]]:
    """The files, refused when one is given twice (under any name, or ``-`` twice): its
    records would each be refused as repeating themselves, naming one file twice."""
    seen: dict[tuple[int, int], str] = {}
    for file in files:
        try:
            status = os.fstat(file.fileno())
        except (OSError, ValueError):
            continue  # no file descriptor to tell it by
        name = "-" if sys.stdin is not None and file is sys.stdin.buffer else str(file.name)
        earlier = seen.get((status.st_dev, status.st_ino))
        if earlier is not None:
            raise click.BadParameter(
                f"{earlier!r} is given twice (also as {name!r}): give each file once"
            )
        seen[(status.st_dev, status.st_ino)] = name
    return files


def _actor_name(context: click.Context, parameter: click.Parameter, actor: str) -> str:
    # Checked before any file is read or the log opened, as click checks its own types.
    try:
        return check_actor(actor)
    except RecordError as error:
        raise click.BadParameter(error.message) from None


class _InputFile(click.File):
    """A file to read, or ``-`` for stdin, which is refused clearly when it is closed."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value == "-" and sys.stdin is None:
            self.fail("standard input is closed", param, ctx)
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as error:
            # click repeats the name as given: a line break in it would start a line of its own.
            raise click.BadParameter(
                escaped(error.message), ctx=error.ctx, param=error.param
            ) from None


@main.command("import", short_help="Append records (or an export) from JSON Lines files.")
@click.argument(
    "files",
    metavar="FILE...",
    nargs=-1,
    required=True,
    type=_InputFile("rb"),
    callback=_each_file_once,
)
@click.option(
    "--actor",
    default="cli",
    show_default=True,
    callback=_actor_name,
    help="Recorded as who appended (not the name of a write token).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@click.pass_obj
def import_command(context: Context, files: Sequence[IO[bytes]], actor: str, as_json: bool) -> None:
    """Append JSON Lines records (or an export) from each FILE, or - for stdin.

    Every record of every file is checked before anything is written: one bad record means
    nothing is written, and the error names its line (and its file, when several are given)
    and rule. The files are appended in the order given, as one transaction (each file once).
    Importing the same file again appends nothing the second time. The seed article's records
    are in seeds/ of leaderlog's repository (serve loads the copy shipped with leaderlog).

    \b
    Example:
      leaderlog import seeds/ice-leadership-2025-05.jsonl
      leaderlog import seeds/*.jsonl
      leaderlog export | leaderlog --db sqlite:///copy.db import -
    """

    def read_all(interrupted: Callable[[], bool]) -> ParsedRecords:
        parsed = ParsedRecords()
        problems: list[RecordError] = []
        for file in files:
            # With several files, "line 3" alone would not say which one.
            named = len(files) > 1
            # Closed however reading stops (a refused line, Ctrl-C in a record's checks):
            # left suspended, the generator would hold its bar open, and go on drawing it
            # under the command's last words, until the interpreter collected it.
            lines = _lines_with_progress(file, _size(file), interrupted)
            try:
                with contextlib.closing(lines):
                    found = parse_records(lines)
            except BatchError as error:
                problems += [
                    _in_file(problem, file) if named else problem for problem in error.problems
                ]
                continue
            parsed.add(found, file.name if named else None)
        if problems:
            raise BatchError(problems)
        return parsed

    async def append(log: EventLog, parsed: ParsedRecords) -> AppendOutcome:
        records, labels = parsed.records, parsed.labels
        # The write API records a token's name for requests made with that token: an import
        # under the same name, given or kept from an exported envelope, would pass for them
        # in the audit. A log this import creates has no tokens (and listing them would
        # create their tables in it).
        guard = None
        if not log.store.created_log:
            tokens = Tokens(log.store)
            token_names = {token.name for token in await tokens.listing()}
            if actor != "cli" and actor in token_names:
                raise click.BadParameter(
                    f"{actor!r} is the name of a write token, recorded only for requests made "
                    "with it; choose another name",
                    param_hint="'--actor'",
                )
            named = [
                (record, label)
                for record, label in zip(records, labels, strict=True)
                if record.actor in token_names
            ]
            # A token's own events, already stored as they are (this log's export imported
            # again), append nothing and pass for nobody: they are answered as present.
            stored = await log.store.find_event_ids([record.event_id for record, _ in named])
            taken = [
                RecordError(
                    f"actor {record.actor!r} is the name of a write token here, recorded only "
                    "for requests made with it; import this log into a database without that "
                    "token",
                    where=label,
                    rule="actor",
                )
                for record, label in named
                if not _stored_as_it_is(record, stored.get(record.event_id))
            ]
            if taken:
                raise BatchError(taken)
            # Checked again when appending, under the writers' lock: a token created under
            # one of these names meanwhile (token create takes that lock to count the
            # name's events) refuses the import instead of sharing the name with it.
            unchecked = {record.actor or actor for record in records} - token_names
            guard = await tokens.name_guard(unchecked) if unchecked else None
        try:
            with _append_bar(len(records)) as progress:
                return await log.append_parsed(parsed, actor=actor, guard=guard, progress=progress)
        except ConcurrencyError as error:
            # Said as every other refusal of a record is: a problem of a batch not written.
            problem = RecordError(error.message, where=error.where, rule="expected_version")
            raise BatchError([problem]) from None
        except (DuplicateEventError, RecordedAtRefused) as error:
            # Name the line, as every other refusal of a record does.
            line = next(
                (
                    label
                    for record, label in zip(records, labels, strict=True)
                    if record.event_id == error.event_id
                ),
                None,
            )
            if isinstance(error, DuplicateEventError):
                problem = RecordError(str(error), where=line, rule="event_id")
            else:
                problem = RecordError(
                    f"{error}; to append such records as new events, stamped now, give them "
                    "without their envelope (only type, data, event_id and meta)",
                    where=line,
                    rule="recorded_at",
                )
            raise BatchError([problem]) from None

    # Read before the event loop starts: a Ctrl-C while stdin blocks then stops it at once.
    still_reading = "nothing was written: the records were still being read"
    with reported(still_reading), interruptible(still_reading) as interrupted:
        parsed = read_all(interrupted)
        if interrupted():
            raise KeyboardInterrupt  # dropped by Python after the last line was read
    if not parsed:
        if as_json:
            print_json({"appended": 0, "already_present": 0})
        else:
            click.echo("appended 0, already present 0 (no records)")
        return

    async def import_records() -> None:
        outcome = await context.append_to_log(lambda log: append(log, parsed))
        try:
            if as_json:
                print_json(
                    {"appended": outcome.appended, "already_present": outcome.already_present}
                )
            else:
                click.echo(
                    f"appended {outcome.appended}, already present {outcome.already_present}"
                )
        except OSError as error:
            if not is_output_error(error):
                raise
            # Say what the import did: from the error alone, it would pass for refused.
            raise OutputLost(error, _what_was_appended(outcome)) from None

    run(import_records, interrupted=_IMPORT_INTERRUPTED)


def _stored_as_it_is(record: HeldRecord | RecordFields, stored: RecordedEvent | None) -> bool:
    """Whether ``stored`` is ``record``'s event under the same id, by the same actor."""
    return stored is not None and stored.actor == record.actor and stored_unchanged(record, stored)


def _what_was_appended(outcome: AppendOutcome) -> str:
    if outcome.appended == 0:
        return f"nothing was appended (already present {outcome.already_present})"
    return (
        f"the import was committed all the same: appended {outcome.appended}, "
        f"already present {outcome.already_present}"
    )


@main.command("events", short_help="Show the raw log, one event a line (or as JSON).")
@click.option("--after", type=WholeNumber(min=0), default=0, help="Start after this position.")
@click.option("--limit", type=WholeNumber(min=1), default=None, help="At most this many.")
@click.option("--json", "as_json", is_flag=True, help="Print envelopes as a JSON array.")
@click.pass_obj
def events_command(context: Context, after: int, limit: int | None, as_json: bool) -> None:
    """Show the raw log: each event's position, time, type, id and actor a line; with
    --json, each event's whole envelope and data.

    \b
    Example:
      leaderlog events --after 10 --limit 5
      leaderlog events --json
    """

    async def list_events() -> None:
        out = sys.stdout
        # Page by page, as export does: a whole large log would not fit in memory at once.
        async with context.log(create=False) as log:
            shown = _at_most(log.store.iterate(after=after, page=_page(limit)), limit)
            if as_json:
                await _write_json_array(out, shown)
                return
            # Wide enough for the longest id shown, so that the actors stay in one column.
            width = max(40, await log.store.longest_stream_id(after, limit))
            empty = True
            async for event in shown:
                subject = event.stream.partition("-")[2]
                # In full, as stored: a time copied into --known-at takes in this event. A row
                # edited behind the log's back may hold anything: shown escaped.
                echo_line(
                    f"{event.position:>6}  {format_time(event.recorded_at)}  "
                    f"{event.type:<18} {subject:<{width}} {event.actor}"
                )
                empty = False
        if empty:
            click.echo(f"(no events after position {after})" if after else "(no events)")

    run(list_events)


async def _write_json_array(out: IO[str], events: AsyncGenerator[RecordedEvent, None]) -> None:
    """The array print_json would write, an element at a time, and valid JSON whatever
    happens: the first page is read before anything is written, and an error on a later one
    (a row edited behind the store's back) closes the array before it is reported."""
    async with contextlib.aclosing(events):
        first = await anext(events, None)
        if first is None:
            out.write("[]\n")
            return
        out.write("[\n" + _element(first))
        last = first.position
        try:
            async for event in events:
                out.write(",\n" + _element(event))
                last = event.position
        except StoreError as error:
            out.write("\n]\n")
            out.flush()
            raise StoreError(
                f"{error}; the JSON array printed ends after position {last} "
                "(the events in it are complete)"
            ) from error
        except BaseException:
            # Interrupted, say: what was printed is still an array, if it can be closed.
            with contextlib.suppress(OSError, ValueError):
                out.write("\n]\n")
                out.flush()
            raise
        out.write("\n]\n")
        out.flush()


def _element(event: RecordedEvent) -> str:
    return textwrap.indent(dumps(event.envelope(), indent=True), "  ")


def _page(limit: int | None) -> int:
    return min(limit or _EVENTS_PAGE, _EVENTS_PAGE)


async def _at_most(
    events: AsyncGenerator[RecordedEvent, None], limit: int | None
) -> AsyncGenerator[RecordedEvent, None]:
    count = 0
    async with contextlib.aclosing(events):
        async for event in events:
            yield event
            count += 1
            # Before the next page is read: what lies beyond the limit is never touched.
            if limit is not None and count >= limit:
                return


@main.command("verify", short_help="Check the hash chain, positions and versions.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
def verify_command(context: Context, as_json: bool) -> None:
    """Check the hash chain, positions and versions; print the first bad position.

    Exits with status 1 when the log is not intact.

    \b
    Example:
      leaderlog verify
    """

    async def verify_chain() -> bool:
        async with context.log(create=False) as log:
            # A large log takes a while (about a minute a million events): shown on a terminal.
            with bars("events", PROGRESS_THRESHOLD) as show:
                report = await verify_log(
                    log.store, lambda done, head: show("verifying the chain", done, head)
                )
        if as_json:
            print_json(asdict(report))
        elif report.ok:
            click.echo(f"chain OK, {report.count} events, head hash {report.head_hash}")
        else:
            # The problem may quote an edited row (its stream, say): shown escaped.
            echo_line(
                f"chain BROKEN at position {report.first_bad_position}: {report.problem} "
                f"({report.count} events verified before it)"
            )
        return report.ok

    if not run(verify_chain):
        sys.exit(1)


@main.command("export", short_help="Write the whole log as JSON Lines, envelopes included.")
@click.pass_obj
def export_command(context: Context) -> None:
    """Write the whole log as JSON Lines, envelopes included, to stdout.

    `import` reads this back keeping ids, times and actors, so a log moves between
    SQLite and PostgreSQL with the same ids and hashes.

    \b
    Example:
      leaderlog export > log.jsonl
      createdb -h 127.0.0.1 -U postgres leaderlog    # PostgreSQL's own tool, once
      leaderlog --db postgresql://postgres@127.0.0.1/leaderlog import log.jsonl
    """

    async def export_events() -> None:
        out = sys.stdout
        async with context.log(create=False) as log:
            async for event in log.store.iterate():
                out.write(dumps(event.envelope()))
                out.write("\n")
        out.flush()

    run(export_events)


@main.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of every record type.

    \b
    Example:
      leaderlog schema > record.schema.json
    """
    print_json(event_schema())
