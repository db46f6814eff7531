"""Reliability with real processes on one SQLite file: SIGKILL, racing writers, tampering."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from leaderlog.events import parse_event
from leaderlog.log import EventLog, load_seeds
from leaderlog.projections import runner_for
from leaderlog.store import open_store

ROOT = Path(__file__).resolve().parent.parent
HELPERS = Path(__file__).resolve().parent / "helpers"
LEADERLOG = Path(sys.executable).parent / "leaderlog"
KILLS = 20

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")


def start(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(HELPERS / script), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def acknowledgements(output: str) -> list[dict[str, Any]]:
    """Complete lines only: a line cut short by the kill was never acknowledged."""
    complete = output[: output.rfind("\n") + 1]
    return [json.loads(line) for line in complete.splitlines() if '"batch"' in line]


async def check_log(url: str, acknowledged: list[dict[str, Any]]) -> int:
    """Acknowledged batches are stored exactly; no batch is partly stored; the chain is intact."""
    store = await open_store(url)
    try:
        report = await store.verify()
        assert report.ok, report
        events = {event.position: event for event in await store.read_all()}
    finally:
        await store.close()
    assert sorted(events) == list(range(1, len(events) + 1))
    for batch in acknowledged:
        for position, event_id in zip(batch["positions"], batch["ids"], strict=True):
            assert str(events[position].event_id) == event_id, batch
            assert events[position].meta == {"batch": batch["batch"]}
    sizes = Counter(event.meta["batch"] for event in events.values())
    partial = {tag: size for tag, size in sizes.items() if size != 3}
    assert not partial, f"batches stored in part: {partial}"
    return len(events)


def test_the_check_catches_a_partial_or_lost_batch(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'partial.db'}"

    async def write_part_of_a_batch() -> None:
        async with await EventLog.open(url) as log:
            for number in range(2):
                event = parse_event("person.registered", {"person": f"p{number}", "name": "P"})
                await log.append_events([event], actor="test", meta={"batch": "0-0"})

    asyncio.run(write_part_of_a_batch())
    with pytest.raises(AssertionError, match="stored in part"):
        asyncio.run(check_log(url, []))
    lost = {"batch": "0-0", "positions": [1, 2, 3], "ids": ["x", "y", "z"]}
    with pytest.raises((AssertionError, KeyError)):
        asyncio.run(check_log(url, [lost]))


def wait_until_ready(writer: subprocess.Popen[str]) -> None:
    assert writer.stdout is not None
    if not writer.stdout.readline():
        _, errors = writer.communicate(timeout=30)
        pytest.fail(f"writer did not start: {errors}")


def release(writer: subprocess.Popen[str]) -> None:
    assert writer.stdin is not None
    writer.stdin.write("go\n")
    writer.stdin.flush()


def test_sigkill_loses_no_acknowledged_batch_and_leaves_no_partial_one(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'crash.db'}"
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    acknowledged: list[dict[str, Any]] = []
    writer = start("crash_writer.py", url, "0")
    wait_until_ready(writer)
    for run in range(KILLS):
        release(writer)
        # The restart opens the same file while this writer runs; it waits for its turn.
        restart = start("crash_writer.py", url, str(run + 1)) if run + 1 < KILLS else None
        # Killed once it is writing, not during start-up (a loaded machine starts slowly).
        assert writer.stdout is not None
        first = writer.stdout.readline()
        time.sleep(rng.uniform(0.05, 0.4))
        writer.send_signal(signal.SIGKILL)
        output, errors = writer.communicate(timeout=30)
        assert writer.returncode == -signal.SIGKILL, f"writer died on its own: {errors}"
        batches = acknowledgements(first + output)
        assert batches, f"writer {run} acknowledged nothing: {errors}"
        acknowledged.extend(batches)
        count = asyncio.run(check_log(url, acknowledged))
        assert count >= 3 * len(acknowledged), f"seed {seed}, run {run}"
        if restart is not None:
            writer = restart
            wait_until_ready(writer)
    assert len(acknowledged) >= KILLS


def test_two_writer_processes_interleave_without_gaps(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    writers = [start("crash_writer.py", url, name, "40") for name in ("a", "b")]
    for writer in writers:
        wait_until_ready(writer)
    for writer in writers:
        release(writer)
    acknowledged: list[dict[str, Any]] = []
    for writer in writers:
        output, errors = writer.communicate(timeout=120)
        assert writer.returncode == 0, errors
        acknowledged.extend(acknowledgements(output))
    assert len(acknowledged) == 80
    assert asyncio.run(check_log(url, acknowledged)) == 240
    positions = sorted(p for batch in acknowledged for p in batch["positions"])
    assert positions == list(range(1, 241))


async def _prepare_contested(url: str) -> None:
    async with await EventLog.open(url) as log:
        registered = parse_event("person.registered", {"person": "contested", "name": "C"})
        await log.append_events([registered], actor="test")


def test_racing_processes_have_exactly_one_winner_per_version(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'race.db'}"
    rounds = 10
    asyncio.run(_prepare_contested(url))
    gate = tmp_path / "gate"
    gate.mkdir()
    names = ("left", "right")
    racers = [start("race_writer.py", url, str(gate), name, str(rounds)) for name in names]
    try:
        for number in range(1, rounds + 1):
            deadline = time.monotonic() + 60
            while not all((gate / f"{name}-ready-{number}").exists() for name in names):
                failed = [racer for racer in racers if racer.poll() is not None]
                assert not failed, failed[0].communicate()[1]
                assert time.monotonic() < deadline, f"racers never got ready for round {number}"
                time.sleep(0.005)
            (gate / f"go-{number}").touch()
        outputs = [racer.communicate(timeout=60) for racer in racers]
    finally:
        for racer in racers:
            if racer.poll() is None:
                racer.kill()
                racer.wait()
    for racer, (_, errors) in zip(racers, outputs, strict=True):
        assert racer.returncode == 0, errors
    results: dict[int, list[dict[str, Any]]] = {}
    for output, _ in outputs:
        for line in output.splitlines():
            result = json.loads(line)
            results.setdefault(result["round"], []).append(result)
    assert sorted(results) == list(range(1, rounds + 1))
    for number, pair in results.items():
        outcomes = sorted(result["result"] for result in pair)
        assert outcomes == ["conflict", "won"], (number, pair)
        (conflict,) = [result for result in pair if result["result"] == "conflict"]
        assert "person-contested" in conflict["message"]
        assert f"expected version {number}" in conflict["message"]

    async def stream_versions() -> list[int]:
        store = await open_store(url)
        try:
            assert (await store.verify()).ok
            return [event.version for event in await store.read_stream("person-contested")]
        finally:
            await store.close()

    assert asyncio.run(stream_versions()) == list(range(1, rounds + 2))


# --- tampering ------------------------------------------------------------------------------


@pytest.fixture
def seeded_file(tmp_path: Path) -> Path:
    path = tmp_path / "leaderlog.db"

    async def seed() -> None:
        async with await EventLog.open(f"sqlite:///{path}") as log:
            await load_seeds(log, ROOT / "seeds")

    asyncio.run(seed())
    return path


def verify_command(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {name: value for name, value in os.environ.items() if name != "LEADERLOG_DB"}
    return subprocess.run(
        [str(LEADERLOG), "--db", f"sqlite:///{path}", "verify", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
        check=False,
    )


def test_triggers_refuse_update_and_delete(seeded_file: Path) -> None:
    with sqlite3.connect(seeded_file) as connection:
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            connection.execute("UPDATE events SET actor = 'mallory' WHERE position = 7")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            connection.execute("DELETE FROM events WHERE position = 29")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            connection.execute("DELETE FROM events")
        assert connection.execute("SELECT COUNT(*) FROM events").fetchone() == (29,)
    connection.close()


def _tamper(path: Path, *statements: str) -> None:
    connection = sqlite3.connect(path)
    try:
        with connection:
            for statement in statements:
                connection.execute(statement)
    finally:
        connection.close()


def test_verify_names_the_edited_position(seeded_file: Path) -> None:
    _tamper(
        seeded_file,
        "DROP TRIGGER events_are_append_only_update",
        """UPDATE events SET data = json_set(data, '$.name', 'Robert Hammer-Smith')
           WHERE position = 12""",
    )
    result = verify_command(seeded_file)
    assert result.returncode == 1
    assert result.stdout.startswith("chain BROKEN at position 12:")
    assert "11 events verified before it" in result.stdout

    report = json.loads(verify_command(seeded_file, "--json").stdout)
    assert (report["ok"], report["first_bad_position"], report["count"]) == (False, 12, 11)


def test_verify_names_a_deleted_position(seeded_file: Path) -> None:
    _tamper(
        seeded_file,
        "DROP TRIGGER events_are_append_only_delete",
        "DELETE FROM events WHERE position = 20",
    )
    result = verify_command(seeded_file, "--json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert (report["ok"], report["first_bad_position"]) == (False, 20)
    assert "position 20 is missing" in report["problem"]


def test_verify_notices_events_removed_from_the_end(seeded_file: Path) -> None:
    async def build_projections() -> None:
        store = await open_store(f"sqlite:///{seeded_file}")
        try:
            await (await runner_for(store)).catch_up()
        finally:
            await store.close()

    asyncio.run(build_projections())
    _tamper(
        seeded_file,
        "DROP TRIGGER events_are_append_only_delete",
        "DELETE FROM events WHERE position > 27",
    )
    result = verify_command(seeded_file)
    assert result.returncode == 1
    assert result.stdout.startswith(
        "chain BROKEN at position 28: the log ends at position 27, but projection"
    )
    assert "had applied it up to position 29: events were removed from its end" in result.stdout
    assert "(27 events verified before it)" in result.stdout
    # and the projections' listing does not pass it off as lag 0
    environment = {name: value for name, value in os.environ.items() if name != "LEADERLOG_DB"}
    listing = subprocess.run(
        [str(LEADERLOG), "--db", f"sqlite:///{seeded_file}", "projections", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
        check=True,
    )
    statuses = {status["name"]: status for status in json.loads(listing.stdout)}
    assert statuses["leadership"]["problem"] == (
        "applied the log up to position 29, beyond its end: events were removed from its end, "
        "or it was replaced (see leaderlog verify)"
    )
    assert statuses["leadership"]["lag"] is None


def test_verify_notices_an_edited_envelope_field(seeded_file: Path) -> None:
    _tamper(
        seeded_file,
        "DROP TRIGGER events_are_append_only_update",
        "UPDATE events SET actor = 'someone-else' WHERE position = 29",
    )
    result = verify_command(seeded_file)
    assert result.returncode == 1
    assert result.stdout.startswith("chain BROKEN at position 29:")


def test_opening_the_store_restores_the_triggers(seeded_file: Path) -> None:
    _tamper(seeded_file, "DROP TRIGGER events_are_append_only_update")
    assert verify_command(seeded_file).returncode == 0
    connection = sqlite3.connect(seeded_file)
    try:
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            connection.execute("UPDATE events SET actor = 'mallory' WHERE position = 1")
    finally:
        connection.close()
