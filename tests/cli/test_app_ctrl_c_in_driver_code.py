"""Ctrl-C pressed while the event loop's or a database driver's code runs is raised once that
code has finished its step, in the command's own: cut in the middle, asyncpg left coroutines
never awaited and futures whose errors no one retrieved, printed after "interrupted"."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Callable, Iterator
from types import FrameType

import pytest

from leaderlog.cli._app import run
from leaderlog.errors import Interrupted


@pytest.fixture(autouse=True)
def _ctrl_c_raised_as_the_program_raises_it() -> Iterator[None]:
    """As console_main sets it up: Ctrl-C raised wherever the program is (asyncio's runner
    would otherwise take Ctrl-C over, cancelling the command's task instead)."""

    def on_interrupt(signum: int, frame: FrameType | None) -> None:
        raise Interrupted

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _driver_step(finished: list[bool]) -> Callable[[], None]:
    """A step of code that belongs to a driver (its module is asyncpg's), pressed Ctrl-C in."""
    namespace = {"__name__": "asyncpg.protocol_step", "os": os, "signal": signal}
    exec(
        "def step(finished):\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    total = sum(range(10_000))  # the signal is handled here, mid-step\n"
        "    finished.append(total > 0)\n",
        namespace,
    )
    step = namespace["step"]
    return lambda: step(finished)  # type: ignore[operator]


def test_given_ctrl_c_inside_driver_code_when_run_then_the_step_ends_and_the_command_stops(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a command whose driver is pressed Ctrl-C in while it runs a step of its own
    finished: list[bool] = []
    after: list[str] = []

    async def command() -> None:
        _driver_step(finished)()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        after.append("the command ran on")

    # When it is run as the command line runs it
    with pytest.raises(SystemExit) as stopped:
        run(command)

    # Then the driver's step was left to finish, and the command stopped right after it,
    # saying only that it was interrupted
    assert finished == [True]
    assert after == []
    assert stopped.value.code == 130
    assert capsys.readouterr().err == "interrupted\n"


def test_given_ctrl_c_while_the_event_loop_is_made_when_run_then_it_stops_quietly(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given Ctrl-C pressed while asyncio makes the command's event loop (cut there, the
    # half-made loop printed "Exception ignored in: BaseEventLoop.__del__" at exit)
    made: list[bool] = []
    new_event_loop = asyncio.new_event_loop

    def interrupted_while_made() -> asyncio.AbstractEventLoop:
        os.kill(os.getpid(), signal.SIGINT)
        loop = new_event_loop()
        made.append(True)
        return loop

    monkeypatch.setattr(asyncio.events, "new_event_loop", _as_asyncio_code(interrupted_while_made))
    ran: list[bool] = []

    async def command() -> None:
        ran.append(True)

    # When the command is run
    with pytest.raises(SystemExit) as stopped:
        run(command)

    # Then the loop is made whole, the command does not run, and it says it was interrupted
    assert made == [True]
    assert ran == []
    assert stopped.value.code == 130
    assert capsys.readouterr().err == "interrupted\n"


def _as_asyncio_code(function: Callable[[], asyncio.AbstractEventLoop]) -> Callable[[], object]:
    """``function`` run from a frame of asyncio's own, as the runner's making of a loop is."""
    namespace: dict[str, object] = {"__name__": "asyncio.making", "function": function}
    exec("def made():\n    return function()\n", namespace)
    return namespace["made"]  # type: ignore[return-value]


def test_given_ctrl_c_in_driver_code_as_the_command_ends_when_run_then_the_loop_winds_down(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a command whose last step, a driver's, is pressed Ctrl-C in, leaving an
    # asynchronous generator for the loop to close as it winds down
    closed: list[bool] = []
    kept: list[AsyncIterator[int]] = []  # open until the loop winds down

    async def rows() -> AsyncIterator[int]:
        try:
            yield 1
            yield 2
        finally:
            closed.append(True)

    async def command() -> None:
        reading = rows()
        await anext(reading)
        kept.append(reading)
        _driver_step([])()

    # When it is run as the command line runs it
    with pytest.raises(SystemExit) as stopped:
        run(command)

    # Then the loop wound down whole (the generator closed by it) before the command
    # stopped, saying only that it was interrupted
    assert closed == [True]
    assert stopped.value.code == 130
    assert capsys.readouterr().err == "interrupted\n"
