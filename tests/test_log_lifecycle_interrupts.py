"""KeyboardInterrupt and SystemExit raised while an EventLog appends, in programs that run
their own event loop: the interrupt reaches the program once, the callers are answered, the
log still closes, and asyncio reports nothing left behind."""

from __future__ import annotations

import asyncio
import gc
import uuid
from typing import Any

import pytest

from leaderlog.errors import StoreError
from leaderlog.events import PersonRegistered, Record
from leaderlog.log import AppendOutcome, EventLog

Interrupt = type[KeyboardInterrupt] | type[SystemExit]


def people(count: int) -> list[Record]:
    return [
        Record(event=PersonRegistered(person=f"p{n}", name="P"), event_id=uuid.uuid4())
        for n in range(count)
    ]


async def stored_count(store_url: str) -> int:
    async with await EventLog.open(store_url) as log:
        return await log.store.count()


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_raised_in_the_log_s_writer_is_not_reported_again_as_never_retrieved(
    store_url: str, interrupt: Interrupt
) -> None:
    # A program driving its own loop (run_until_complete), where Ctrl-C raises
    # KeyboardInterrupt in whatever runs: here, while the writer checks a batch.
    loop = asyncio.new_event_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _, context: reported.append(context))

    def interrupting(stage: str, done: int, total: int) -> None:
        raise interrupt()

    try:
        log = loop.run_until_complete(EventLog.open(store_url))
        appending = loop.create_task(
            log.append_records(people(3), actor="t", progress=interrupting)
        )
        # then the interrupt reaches the program
        with pytest.raises(interrupt):
            loop.run_until_complete(appending)
        # and the caller is told nothing was written
        with pytest.raises(StoreError, match=r"stopped \(\w+\) while this batch was checked"):
            loop.run_until_complete(appending)
        loop.run_until_complete(log.close())
        del log, appending
        gc.collect()
    finally:
        loop.close()
    # and asyncio reports no task exception never retrieved: the program has had it
    assert [context["message"] for context in reported] == []
    assert asyncio.run(stored_count(store_url)) == 0


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_a_progress_callback_raising_an_interrupt_while_writing_is_not_called_again(
    store_url: str, interrupt: Interrupt, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a report for every row written, so that several are on their way at once
    monkeypatch.setattr("leaderlog.store.base.PROGRESS_STEP", 1)
    calls: list[int] = []
    reported: list[dict[str, Any]] = []

    def interrupting(stage: str, done: int, total: int) -> None:
        if stage == "writing":
            calls.append(done)
            raise interrupt()

    async def program() -> None:
        asyncio.get_running_loop().set_exception_handler(
            lambda _, context: reported.append(context)
        )
        async with await EventLog.open(store_url) as log:
            await log.append_records(people(20), actor="t", progress=interrupting)

    # when the callback raises the interrupt at its first report of writing
    with pytest.raises(interrupt):
        asyncio.run(program())
    gc.collect()
    # then it is not called again (which would raise the interrupt again while asyncio.run
    # shuts down, leaving the log open and its tasks pending), and the program shut down
    # cleanly
    assert len(calls) == 1
    assert [context["message"] for context in reported] == []
    # the batch whole or not at all: on PostgreSQL the interrupt stops it before its commit
    assert asyncio.run(stored_count(store_url)) in (0, 20)


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_append_queued_behind_a_group_an_interrupt_stopped_is_still_appended(
    store_url: str, interrupt: Interrupt, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a batch checked a record at a turn, reporting each
    monkeypatch.setattr("leaderlog.log._DECIDED_BETWEEN_TURNS", 1)
    monkeypatch.setattr("leaderlog.log._PROGRESS_STEP", 1)
    loop = asyncio.new_event_loop()
    queued: list[asyncio.Task[AppendOutcome]] = []

    def interrupting(stage: str, done: int, total: int) -> None:
        if not queued:
            # another caller appends while the batch is checked: it waits behind its group
            queued.append(
                loop.create_task(
                    log.append_events([PersonRegistered(person="b", name="B")], actor="t")
                )
            )
            return
        raise interrupt()

    try:
        log = loop.run_until_complete(EventLog.open(store_url))
        interrupted = loop.create_task(
            log.append_records(people(5), actor="t", progress=interrupting)
        )
        # when an interrupt stops the writer (a program that goes on after a Ctrl-C)
        with pytest.raises(interrupt):
            loop.run_until_complete(interrupted)
        with pytest.raises(StoreError):
            loop.run_until_complete(interrupted)

        async def answer() -> AppendOutcome:
            async with asyncio.timeout(30):  # a hang would otherwise hold the run
                return await queued[0]

        # then the append queued behind it is taken up and appended
        assert loop.run_until_complete(answer()).appended == 1
        loop.run_until_complete(log.close())
    finally:
        loop.close()
    assert asyncio.run(stored_count(store_url)) == 1
