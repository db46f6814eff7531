"""How a refused batch is told: the same answer whatever the EventLog has cached (its rules
first, then a stale expected version or an event id stored with other content), and a record
given twice in one import named as such."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from leaderlog.errors import BatchError, ConcurrencyError, DuplicateEventError
from leaderlog.events import PersonRegistered, PersonUpdated, Record
from leaderlog.log import EventLog, load_seeds
from tests.conftest import invoke, ok

SEEDS = Path(__file__).resolve().parent.parent / "seeds"


async def head(log: EventLog) -> tuple[int, str]:
    report = await log.store.verify()
    assert report.ok, report
    return report.count, report.head_hash


async def test_a_stored_person_registered_again_beside_a_stale_version_is_told_the_rule(
    sqlite_url: str,
) -> None:
    # given a person registered in the seeds
    async with await EventLog.open(sqlite_url) as seeding:
        await load_seeds(seeding, SEEDS)
        before = await head(seeding)
    batch = [
        Record(
            event=PersonRegistered(person="derek-gordon", name="Someone Else"),
            event_id=uuid.uuid4(),
        ),
        Record(
            event=PersonUpdated(person="kristi-noem", name="K. Noem"),
            event_id=uuid.uuid4(),
            expected_version=7,
        ),
    ]
    # when a log that has not looked at her yet (a new process) is given a batch that
    # registers her again and expects another stream at a stale version
    async with await EventLog.open(sqlite_url) as fresh:
        with pytest.raises(BatchError) as caught:
            await fresh.append_records(batch, actor="test")
        # then the rule is told first, as a log that had her cached tells it: fixing only the
        # version would be refused again for the rule
        assert [(problem.where, problem.rule) for problem in caught.value.problems] == [
            ("record 0", "unique")
        ]
        assert await head(fresh) == before
        # and once the batch keeps the rules, the stale version
        with pytest.raises(ConcurrencyError):
            await fresh.append_records(batch[1:], actor="test")
        assert await head(fresh) == before


async def test_an_id_reused_for_the_same_new_person_gets_one_answer_from_every_log(
    sqlite_url: str,
) -> None:
    # given a person registered under an id of the writer's own
    event_id = uuid.uuid4()
    first = Record(event=PersonRegistered(person="reused", name="First"), event_id=event_id)
    again = Record(event=PersonRegistered(person="reused", name="Second"), event_id=event_id)
    async with await EventLog.open(sqlite_url) as writer:
        await load_seeds(writer, SEEDS)
        await writer.append_records([first], actor="test")
        before = await head(writer)
        # when the same id comes again with other content, to the log that wrote it
        with pytest.raises(BatchError) as warm:
            await writer.append_records([again], actor="test")
    # and to a log in another process, which has not looked at the person yet
    async with await EventLog.open(sqlite_url) as fresh:
        with pytest.raises(BatchError) as cold:
            await fresh.append_records([again], actor="test")
        assert await head(fresh) == before
    # then both tell the same rule
    assert str(cold.value) == str(warm.value)
    assert [problem.rule for problem in cold.value.problems] == ["unique"]


async def test_an_id_reused_for_an_update_is_still_a_conflict(sqlite_url: str) -> None:
    # given an update appended under an id of the writer's own
    event_id = uuid.uuid4()
    update = Record(event=PersonUpdated(person="derek-gordon", name="D. Gordon"), event_id=event_id)
    async with await EventLog.open(sqlite_url) as writer:
        await load_seeds(writer, SEEDS)
        await writer.append_records([update], actor="test")
        before = await head(writer)
    # when a fresh log is given other content under that id, breaking no rule
    other = Record(event=PersonUpdated(person="derek-gordon", name="Derek G."), event_id=event_id)
    async with await EventLog.open(sqlite_url) as fresh:
        # then it is the id's conflict, nothing written
        with pytest.raises(DuplicateEventError):
            await fresh.append_records([other], actor="test")
        assert await head(fresh) == before


def test_a_record_given_twice_in_one_import_is_told_as_a_repeat(
    sqlite_url: str, tmp_path: Path
) -> None:
    # given a log
    ok(invoke(sqlite_url, "import", str(SEEDS / "ice-leadership-2025-05.jsonl")))
    before = ok(invoke(sqlite_url, "verify"))
    # when a file moves an organisation away and back, its last record repeating its first
    move = {"type": "org.updated", "data": {"org": "ice-hsi", "parent": "dhs"}}
    back = {"type": "org.updated", "data": {"org": "ice-hsi", "parent": "ice"}}
    records = tmp_path / "moves.jsonl"
    records.write_text("".join(json.dumps(record) + "\n" for record in (move, back, move)))
    result = invoke(sqlite_url, "import", str(records))
    # then the repeat is refused, naming both lines and saying how to append it on purpose
    # (the writer gave no event id: one derived from the content is all they could be told)
    assert result.exit_code == 1
    assert "line 3: the same record as line 1" in result.stderr, result.stderr
    assert "give it an event_id of its own" in result.stderr
    assert "[rule: event_id]" in result.stderr
    assert ok(invoke(sqlite_url, "verify")) == before


def test_an_id_given_to_two_records_of_one_import_is_told_as_such(
    sqlite_url: str, tmp_path: Path
) -> None:
    ok(invoke(sqlite_url, "import", str(SEEDS / "ice-leadership-2025-05.jsonl")))
    before = ok(invoke(sqlite_url, "verify"))
    event_id = str(uuid.uuid4())
    records = tmp_path / "two.jsonl"
    records.write_text(
        "".join(
            json.dumps({"type": "person.registered", "data": data, "event_id": event_id}) + "\n"
            for data in ({"person": "one", "name": "One"}, {"person": "two", "name": "Two"})
        )
    )
    result = invoke(sqlite_url, "import", str(records))
    assert result.exit_code == 1
    assert f"line 2: event id {event_id} is already used by line 1" in result.stderr
    assert ok(invoke(sqlite_url, "verify")) == before
