"""The terminal the commands draw their progress bars on (rich), and nothing else of rich.

Every bar is drawn on stderr, redrawn in place and gone once done, and only on a terminal
that redraws a line: a log file, a pipe or a dumb terminal gets none (at most a line saying
what is done), so that neither escape codes nor carriage returns end up in them.
"""

from __future__ import annotations

import os
import sys
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Column
from rich.text import Text

__all__ = [
    "bar_put_away",
    "bars",
    "bars_stopped",
    "bytes_bar",
    "count_bar",
    "err_console",
    "progress_bar",
    "redraws_lines",
    "stage_bars",
]


def _a_terminal(stream: object) -> bool:
    """Whether ``stream`` is a terminal that redraws a line, as a progress bar needs: rich
    takes FORCE_COLOR for one too, and CI systems that set it for colours got bars, escape
    codes and carriage returns in their logs and pipes. TTY_COMPATIBLE says so outright."""
    said = os.environ.get("TTY_COMPATIBLE")
    if said in ("0", "1"):
        return said == "1"
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except ValueError:  # closed
        return False


err_console = Console(
    stderr=True, highlight=False, soft_wrap=True, force_terminal=_a_terminal(sys.stderr)
)


def redraws_lines() -> bool:
    """Whether stderr can draw a progress bar: a terminal that redraws a line in place."""
    return err_console.is_terminal and not err_console.is_dumb_terminal


def bar_put_away() -> str:
    """On a terminal, what clears the line a progress bar may be drawn on, with the cursor
    hidden, and shows the cursor again, as the bar would have done on closing."""
    return "\r\x1b[2K\x1b[?25h" if redraws_lines() else ""


# Every bar made here. A Ctrl-C pressed as a `with` statement enters one (the bar started,
# its exit not yet armed) leaves it drawing until the interpreter ends, when it draws itself
# again under the command's last words and hands back a standard output long since closed
# (Python then exits 120).
_BARS: weakref.WeakSet[Progress] = weakref.WeakSet()


def _made(*columns: ProgressColumn | str, **options: Any) -> Progress:
    progress = Progress(*columns, **options)
    _BARS.add(progress)
    return progress


def bars_stopped() -> None:
    """Stop every bar still drawn (stopping one twice does nothing)."""
    for progress in list(_BARS):
        progress.stop()


# A column that never gives way to a narrow terminal: a count or a share done. Rich shrinks
# the widest column that may wrap, and that was the count ("500000/10000…" on 40 columns,
# "12.0/450.0 MB" broken over two lines) while the label stood whole; the bar and the time
# left give way instead. Shared: rich copies a column's settings into each table it draws.
_WHOLE = Column(no_wrap=True)


# Columns a bar's count, unit and time left take with the bar at its narrowest: what a
# label may not take ("1000000/1000000 events 0:00:00" and a short bar).
_BESIDE_A_LABEL = 48


def progress_bar(label: str, unit: str = "events") -> Progress:
    """Bars labelled ``label`` counting ``unit``: "rebuilding ... 20000/500000 events"."""
    # On a narrow terminal the label gives way, ending in an ellipsis, never the count:
    # "rebuilding leadership, audit, feed_entries" on 80 columns cut "20000/500000" short.
    # Three dots, not an ellipsis, which a stderr that is not UTF-8 writes as "\u2026".
    room = max(10, err_console.width - _BESIDE_A_LABEL)
    # Narrower still, the bar itself gives way: the count says as much.
    bar = [BarColumn()] if err_console.width >= _BESIDE_A_LABEL + 10 else []
    return _made(
        _CutLabel(label, room),
        *bar,
        MofNCompleteColumn(table_column=_WHOLE),
        TextColumn(unit),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
        # Drawn elsewhere, it left a blank line.
        disable=not redraws_lines(),
    )


class _CutLabel(TextColumn):
    """A label cut to ``room`` columns as drawn: ``label`` may be a format, such as
    ``bars``' "{task.description}", which cut itself ("{task.d...") raised ValueError as
    the bar was drawn, on any terminal narrower than 66 columns."""

    def __init__(self, label: str, room: int) -> None:
        super().__init__(label)
        self._room = room

    def render(self, task: Task) -> Text:
        text = super().render(task)
        if text.cell_len > self._room:
            text.truncate(self._room - 3)
            text.append("...")
        return text


@contextmanager
def count_bar(label: str, *, start: int, total: int) -> Iterator[Callable[[int, int], None]]:
    """One bar of events from position ``start`` on, fed (position, head) as a projection
    runner reports how far it is."""
    with progress_bar(label) as progress:
        task = progress.add_task(label, total=max(total, 1))

        def advance(position: int, head: int) -> None:
            progress.update(task, completed=position - start, total=max(head - start, 1))

        yield advance


@contextmanager
def bars(unit: str, threshold: int) -> Iterator[Callable[[str, int, int], None]]:
    """A progress callback, (label, done, total), drawn as a bar for each label with a
    total of at least ``threshold`` ``unit``. Nothing is drawn, not even the hidden cursor's
    escape codes, until a first bar is due."""
    progress = progress_bar("{task.description}", unit)
    tasks: dict[str, TaskID] = {}

    def show(label: str, done: int, total: int) -> None:
        if total < threshold:
            return
        if not tasks:
            progress.start()
        if label not in tasks:
            tasks[label] = progress.add_task(label, total=total)
        progress.update(tasks[label], completed=done, total=total)

    try:
        yield show
    finally:
        progress.stop()  # nothing to do when none was started


def _bars_of(label: TextColumn, count: ProgressColumn) -> Progress:
    return _made(
        label,
        BarColumn(),
        count,
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
        disable=not redraws_lines(),
    )


@contextmanager
def bytes_bar(label: str, *, total: int | None, completed: int) -> Iterator[Callable[[int], None]]:
    """A bar of bytes read ("reading ━━━ 12.3/40.0 MB"; no end to it when ``total`` is
    unknown), advanced by each chunk's size."""
    with _bars_of(TextColumn(label), DownloadColumn(table_column=_WHOLE)) as progress:
        task = progress.add_task(label, total=total, completed=completed)
        yield lambda size: progress.advance(task, size)


class _PercentDone(ProgressColumn):
    """The share of the steps done, in whole percent rounded down: 100% only once every
    step is done (rich's own column rounds, and shows 30,000 of 30,001 as 100%)."""

    def render(self, task: Task) -> Text:
        if task.total is None:
            return Text("")
        percent = 100 if task.total <= 0 else int(task.completed * 100 // task.total)
        return Text(f"{min(max(percent, 0), 100):>3}%", style="progress.percentage")


@contextmanager
def stage_bars(
    labels: Mapping[str, str], *, total: int, instead: str
) -> Iterator[Callable[[str, int, int], None] | None]:
    """A bar per stage of one piece of work, (stage, done, total), labelled by ``labels``:
    the first stage's drawn at once, each other's once it begins rather than as an empty
    bar. Where no bar can be drawn, the line ``instead`` is said and nothing is yielded."""
    if not redraws_lines():
        err_console.print(instead)
        yield None
        return
    with _bars_of(TextColumn("{task.description}"), _PercentDone(table_column=_WHOLE)) as progress:
        first = next(iter(labels))
        stages = {first: progress.add_task(labels[first], total=total)}

        def advance(stage: str, done: int, total: int) -> None:
            if stage not in stages:
                stages[stage] = progress.add_task(labels[stage], total=total, completed=done)
            progress.update(stages[stage], completed=done, total=total)

        yield advance
