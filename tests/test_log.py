"""EventLog end to end on a real SQLite file: rules, atomic batches, group commit, idempotency."""

from __future__ import annotations

import asyncio
import bz2
import datetime as dt
import gzip
import io
import json
import lzma
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from leaderlog import events as events_module
from leaderlog._json import canonical_bytes
from leaderlog.errors import (
    AppendRefused,
    BatchError,
    ConcurrencyError,
    DuplicateEventError,
    RecordError,
    StoreError,
    StoreUnavailable,
)
from leaderlog.events import (
    Event,
    OrgRegistered,
    OrgUpdated,
    PersonRegistered,
    PersonUpdated,
    PostDefined,
    Record,
    content_event_id,
    format_time,
    new_event_id,
    parse_event,
    parse_record,
    parse_record_fields,
)
from leaderlog.log import (
    MAX_LINE_TEXT_BYTES,
    MAX_RECORD_BYTES,
    AppendOutcome,
    EventLog,
    ParsedRecords,
    load_seeds,
    parse_lines,
    parse_records,
    read_lines,
)
from leaderlog.store.base import AppendGuard, NewEvent, utc_now

SEEDS = Path(__file__).resolve().parent.parent / "seeds"

SOURCE = "fox-ice-shakeup-2025-05"
HAMMER_BODY = "fox-ice-shakeup-2025-05-hammer-hsi-body"


def line(event_type: str, **data: Any) -> str:
    return json.dumps({"type": event_type, "data": data})


def claim(name: str, **changes: Any) -> Event:
    data: dict[str, Any] = {
        "claim": name,
        "source": SOURCE,
        "kind": "incumbency",
        "person": "derek-gordon",
        "post": "ice-hsi-dsac",
        "capacity": "unspecified",
        "modality": "occurred",
        "attribution": {"kind": "outlet"},
    }
    return parse_event("claim.reported", {**data, **changes})


def confirm(name: str) -> Event:
    return parse_event("claim.confirmed", {"claim": name, "source": SOURCE})


def retract(name: str) -> Event:
    return parse_event("claim.retracted", {"claim": name, "reason": "Withdrawn by the outlet."})


async def snapshot(log: EventLog) -> tuple[int, str]:
    report = await log.store.verify()
    assert report.ok, report
    return report.count, report.head_hash


async def test_seeds_import_idempotently(sqlite_url: str) -> None:
    async with await EventLog.open(sqlite_url) as log:
        first = await load_seeds(log, SEEDS)
        assert (first.appended, first.already_present) == (29, 0)
        assert first.positions == tuple(range(1, 30))
        before = await snapshot(log)
        second = await load_seeds(log, SEEDS)
        assert (second.appended, second.already_present) == (0, 29)
        assert second.positions == first.positions
        assert await snapshot(log) == before
        # a folder that is not there is said, not taken for one without seeds
        for missing in (SEEDS / "nothing-here", SEEDS / "ice-leadership-2025-05.jsonl"):
            with pytest.raises(FileNotFoundError, match="does not exist or is not a folder"):
                await load_seeds(log, missing)

    # A fresh instance (empty cache) agrees.
    async with await EventLog.open(sqlite_url) as log:
        third = await load_seeds(log, SEEDS)
        assert (third.appended, third.already_present) == (0, 29)
        assert await snapshot(log) == before


async def test_seeded_envelopes(seeded_log: EventLog) -> None:
    events = await seeded_log.events()
    assert [event.position for event in events] == list(range(1, 30))
    assert {event.actor for event in events} == {"seed"}
    assert len({event.event_id for event in events}) == 29
    assert all(event.event_id.version == 5 for event in events)
    versions: dict[str, int] = {}
    for event in events:
        versions[event.stream] = versions.get(event.stream, 0) + 1
        assert event.version == versions[event.stream]
        assert event.stream == event.event().stream()


async def test_a_batch_with_one_bad_record_writes_nothing(seeded_log: EventLog) -> None:
    before = await snapshot(seeded_log)
    lines = [
        line("person.registered", person="tom-homan", name="Tom Homan"),
        line("org.registered", org="cbp", name="Customs and Border Protection", parent="dhs"),
        line("post.defined", post="cbp-commissioner", org="cbp", title="Commissioner"),
        line("claim.confirmed", claim="no-such-claim", source=SOURCE),
        line("person.registered", person="rodney-scott", name="Rodney Scott"),
    ]
    with pytest.raises(BatchError) as caught:
        await seeded_log.import_lines(lines, actor="test")
    (problem,) = caught.value.problems
    assert (problem.where, problem.rule) == ("line 4", "reference")
    assert await snapshot(seeded_log) == before
    assert await seeded_log.store.read_stream("person-tom-homan") == []

    # The good part alone then goes in, and nothing of the failed attempt lingers.
    outcome = await seeded_log.import_lines(lines[:3] + lines[4:], actor="test")
    assert outcome.positions == (30, 31, 32, 33)


async def test_every_problem_of_a_batch_is_reported(seeded_log: EventLog) -> None:
    before = await snapshot(seeded_log)
    lines = [
        line("claim.retracted", claim="nobody", reason="r"),
        "{not json",
        line("person.registered", person="Upper", name="U"),
        line("claim.confirmed", claim=HAMMER_BODY, source="nowhere"),
    ]
    with pytest.raises(BatchError) as caught:
        parse_lines(lines)
    assert [(p.where, p.rule) for p in caught.value.problems] == [
        ("line 2", "json"),
        ("line 3", "schema"),
    ]
    with pytest.raises(BatchError) as caught:
        await seeded_log.import_lines([lines[0], lines[3]], actor="test")
    assert [(p.where, p.rule) for p in caught.value.problems] == [
        ("line 1", "reference"),
        ("line 2", "reference"),
    ]
    assert await snapshot(seeded_log) == before


async def test_a_refused_batch_also_names_a_stream_it_would_create_twice(sqlite_url: str) -> None:
    async with await EventLog.open(sqlite_url) as writer:
        await load_seeds(writer, SEEDS)
    # a fresh log knows nothing yet: a record creating a stream is not looked up before
    # appending (the store's expected version catches it), but when the batch is refused
    # anyway, that record is named too
    async with await EventLog.open(sqlite_url) as log:
        lines = [
            line("claim.retracted", claim="nobody", reason="r"),
            line("org.registered", org="dhs", name="DHS again"),
        ]
        with pytest.raises(BatchError) as caught:
            await log.import_lines(lines, actor="test")
        assert [(p.where, p.rule) for p in caught.value.problems] == [
            ("line 1", "reference"),
            ("line 2", "unique"),
        ]


async def test_references_within_one_batch(sqlite_url: str) -> None:
    lines = [
        line("org.registered", org="dhs", name="DHS"),
        line("org.registered", org="cbp", name="CBP", parent="dhs"),
        line("post.defined", post="cbp-commissioner", org="cbp", title="Commissioner"),
        line("person.registered", person="rodney-scott", name="Rodney Scott"),
        line("source.registered", source="src", url="https://example.org/x", publisher="P"),
        json.dumps(
            {
                "type": "claim.reported",
                "data": {
                    "claim": "scott-cbp",
                    "source": "src",
                    "kind": "appointment",
                    "person": "rodney-scott",
                    "post": "cbp-commissioner",
                    "capacity": "permanent",
                    "modality": "announced",
                    "attribution": {"kind": "official", "parties": ["CBP"]},
                },
            }
        ),
        line("claim.confirmed", claim="scott-cbp", source="src"),
        line("claim.retracted", claim="scott-cbp", reason="Wrong person."),
    ]
    async with await EventLog.open(sqlite_url) as log:
        outcome = await log.import_lines(lines, actor="test")
        assert outcome.positions == tuple(range(1, 9))
        claim_events = await log.store.read_stream("claim-scott-cbp")
        assert [(e.version, e.type) for e in claim_events] == [
            (1, "claim.reported"),
            (2, "claim.confirmed"),
            (3, "claim.retracted"),
        ]
        # Replaying the same lines is idempotent: the confirmation is already there.
        assert (await log.import_lines(lines[-2:], actor="test")).positions == (7, 8)
        # A new confirmation (other content, so another id) meets the final retraction.
        with pytest.raises(BatchError) as caught:
            await log.import_lines(
                [
                    line("person.registered", person="x", name="X"),
                    line("claim.confirmed", claim="scott-cbp", source="src", quote="Confirmed."),
                ],
                actor="test",
            )
        assert [(p.where, p.rule) for p in caught.value.problems] == [("line 2", "claim_live")]
        assert await log.store.count() == 8


async def test_a_retraction_is_final_within_its_own_batch(sqlite_url: str) -> None:
    async with await EventLog.open(sqlite_url) as log:
        await load_seeds(log, SEEDS)
        with pytest.raises(BatchError) as caught:
            await log.import_lines(
                [
                    line("claim.retracted", claim=HAMMER_BODY, reason="Withdrawn."),
                    line("claim.confirmed", claim=HAMMER_BODY, source=SOURCE),
                ],
                actor="test",
            )
        assert [(p.where, p.rule) for p in caught.value.problems] == [("line 2", "claim_live")]
        assert await log.store.count() == 29


async def test_a_reference_to_a_later_line_is_refused(sqlite_url: str) -> None:
    async with await EventLog.open(sqlite_url) as log:
        with pytest.raises(BatchError) as caught:
            await log.import_lines(
                [
                    line("org.registered", org="cbp", name="CBP", parent="dhs"),
                    line("org.registered", org="dhs", name="DHS"),
                ],
                actor="test",
            )
        assert [(p.where, p.rule) for p in caught.value.problems] == [("line 1", "reference")]
        assert await log.store.count() == 0


async def test_a_reference_to_a_record_later_in_the_batch_says_to_put_that_one_first(
    sqlite_url: str,
) -> None:
    async with await EventLog.open(sqlite_url) as log:
        with pytest.raises(BatchError) as caught:
            await log.import_lines(
                [
                    line("org.registered", org="dhs", name="DHS"),
                    line("post.defined", post="p", org="ice", title="T"),
                    line("org.registered", org="ice", name="ICE", parent="dhs"),
                ],
                actor="test",
            )
        (problem,) = caught.value.problems
        assert str(problem) == (
            "line 2: post.defined refers to org 'ice', which does not exist (a post belongs to "
            "a registered org); line 3 registers it: put that record first"
        )
        assert problem.rule == "reference"


async def test_a_reference_to_a_refused_record_earlier_in_the_batch_says_it_was_refused(
    sqlite_url: str,
) -> None:
    async with await EventLog.open(sqlite_url) as log:
        with pytest.raises(BatchError) as caught:
            await log.import_lines(
                [
                    line("org.registered", org="ice", name="ICE", parent="dsh"),
                    line("post.defined", post="p", org="ice", title="T"),
                ],
                actor="test",
            )
        assert [str(problem) for problem in caught.value.problems] == [
            "line 1: org.registered refers to org 'dsh', which does not exist (the parent "
            "must be registered)",
            "line 2: post.defined refers to org 'ice', which does not exist (a post belongs to "
            "a registered org); line 1 registers it, but is refused",
        ]
        assert await log.store.count() == 0


async def test_registering_again_what_a_record_above_registers_names_that_record(
    sqlite_url: str,
) -> None:
    async with await EventLog.open(sqlite_url) as log:
        await log.import_lines([line("person.registered", person="ann", name="Ann")], actor="test")
        with pytest.raises(BatchError) as caught:
            await log.import_lines(
                [
                    line("person.registered", person="bo", name="Bo"),
                    line("person.registered", person="cy", name="Cy"),
                    line("person.registered", person="bo", name="Bo again"),
                    line("person.registered", person="ann", name="Ann again"),
                ],
                actor="test",
            )
        # the repeat within the batch names the record above; the one stored before, none
        assert [str(problem) for problem in caught.value.problems] == [
            "line 3: person.registered: person 'bo' already exists (person ids are unique); "
            "line 1 registers it too",
            "line 4: person.registered: person 'ann' already exists (person ids are unique)",
        ]
        assert await log.store.count() == 1


async def test_a_refusal_names_every_rule_each_record_breaks(sqlite_url: str) -> None:
    async with await EventLog.open(sqlite_url) as log:
        with pytest.raises(BatchError) as caught:
            await log.import_lines(
                [
                    line("org.registered", org="dhs", name="DHS"),
                    line("post.defined", post="p", org="nowhere", title="T"),
                    line("comment.requested", source="no-source", org="no-org", outcome="declined"),
                ],
                actor="test",
            )
        assert [(p.where, p.rule, p.message.split(",")[0]) for p in caught.value.problems] == [
            ("line 2", "reference", "post.defined refers to org 'nowhere'"),
            ("line 3", "reference", "comment.requested refers to source 'no-source'"),
            ("line 3", "reference", "comment.requested refers to org 'no-org'"),
        ]
        assert await log.store.count() == 0


async def test_group_commit_of_100_concurrent_appends(seeded_log: EventLog) -> None:
    names = [f"gordon-dsac-{index:03d}" for index in range(100)]
    outcomes = await asyncio.gather(
        *(seeded_log.append_events([claim(name)], actor="test") for name in names)
    )
    positions = [position for outcome in outcomes for position in outcome.positions]
    assert all(outcome.appended == 1 for outcome in outcomes)
    assert sorted(positions) == list(range(30, 130))
    report = await seeded_log.store.verify()
    assert (report.ok, report.count, report.head_position) == (True, 129, 129)
    stored = {event.position: event for event in await seeded_log.events(after=29)}
    for name, outcome in zip(names, outcomes, strict=True):
        (position,) = outcome.positions
        assert stored[position].stream == f"claim-{name}"
        assert stored[position].event_id.version == 7
        assert stored[position].version == 1
    # Concurrent callers shared transactions: fewer distinct commit times than callers.
    assert len({event.recorded_at for event in stored.values()}) < 100


async def test_concurrent_batches_fail_alone(seeded_log: EventLog) -> None:
    good = [seeded_log.append_events([claim(f"ok-{index}")], actor="test") for index in range(5)]
    bad = seeded_log.append_events([claim("bad", post="no-such-post")], actor="test")
    duplicate = seeded_log.append_events([claim(HAMMER_BODY)], actor="test")
    results = await asyncio.gather(*good, bad, duplicate, return_exceptions=True)
    assert all(not isinstance(result, BaseException) for result in results[:5])
    assert isinstance(results[5], BatchError) and results[5].problems[0].rule == "reference"
    assert isinstance(results[6], BatchError) and results[6].problems[0].rule == "unique"
    report = await seeded_log.store.verify()
    assert (report.ok, report.count) == (True, 34)


async def test_a_batch_with_meta_json_cannot_hold_fails_alone(seeded_log: EventLog) -> None:
    # a record built by hand cannot even be made with such a meta
    with pytest.raises(RecordError, match="'meta' cannot be written as JSON"):
        Record(event=claim("odd-record"), event_id=uuid.uuid4(), meta={"at": {3}})
    good = [seeded_log.append_events([claim(f"fine-{index}")], actor="test") for index in range(3)]
    bad = seeded_log.append_events([claim("odd-meta")], actor="test", meta={"seen": {1, 2}})
    results = await asyncio.gather(*good, bad, return_exceptions=True)
    assert all(not isinstance(result, BaseException) for result in results[:3]), results
    for refused in results[3:]:
        assert isinstance(refused, BatchError), refused
        assert "'meta' cannot be written as JSON" in str(refused)
    assert (await seeded_log.store.count()) == 29 + 3


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        ({"score": float("nan")}, "would not read back as given"),
        ({"at": dt.datetime(2025, 1, 1)}, "would not read back as given"),
        ({"pair": (1, 2)}, "would not read back as given"),
        ({"id": uuid.UUID(int=5)}, "would not read back as given"),
        ({1: "number key"}, "cannot be written as JSON"),
        ({"big": 2**70}, "cannot be written as JSON"),
        ({"deep": json.loads("[" * 80 + "]" * 80)}, "nested deeper than 64 levels"),
        (["not", "an", "object"], "must be a JSON object"),
    ],
    ids=["nan", "datetime", "tuple", "uuid", "int-key", "huge-int", "deep", "list"],
)
async def test_meta_that_would_not_export_and_import_again_is_refused(
    seeded_log: EventLog, meta: Any, message: str
) -> None:
    before = await seeded_log.store.head()
    with pytest.raises(BatchError, match=message):
        await seeded_log.append_events([claim("with-meta")], actor="test", meta=meta)
    assert await seeded_log.store.head() == before


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda log: log.append_events(claim("alone"), actor="test"), "not ClaimReported"),
        (lambda log: log.append_events(None, actor="test"), "not NoneType"),
        (lambda log: log.append_events([claim("x")], actor=None), "actor None must be"),
        (lambda log: log.append_events([claim("x")], actor="Bad Name"), "actor 'Bad Name'"),
        (
            lambda log: log.append_records(
                [
                    Record(event=claim("x"), event_id=uuid.uuid4()),
                    Record(event=claim("y"), event_id=uuid.uuid4()),
                ],
                actor="t",
                labels=["one"],
            ),
            "labels must name each record: 1 given for 2 records",
        ),
        (
            lambda log: log.append_records(
                [
                    Record(event=claim("x"), event_id=uuid.uuid4()),
                    Record(event=claim("y"), event_id=uuid.uuid4()),
                ],
                actor="t",
                labels="ab",
            ),
            r"labels must be a list of str \(one per record\), not str",
        ),
        (
            lambda log: log.import_lines([{"type": "org.registered"}], actor="t"),
            "lines must be text or bytes .JSON Lines., not dict; append JSON values already "
            "read with append_raw",
        ),
        (lambda log: log.import_lines("", actor="Bad Name"), "actor 'Bad Name'"),
    ],
    ids=[
        "one-event-not-a-list",
        "none",
        "actor-none",
        "actor-malformed",
        "labels-short",
        "labels-text",
        "lines-parsed",
        "import-actor-malformed",
    ],
)
async def test_misused_append_calls_are_batch_errors_that_say_what_was_wanted(
    seeded_log: EventLog, call: Any, message: str
) -> None:
    with pytest.raises(BatchError, match=message):
        await call(seeded_log)
    assert await seeded_log.store.count() == 29


async def test_concurrent_appends_to_one_stream_stay_in_order(seeded_log: EventLog) -> None:
    await seeded_log.append_events([claim("busy")], actor="test")
    await asyncio.gather(
        *(seeded_log.append_events([confirm("busy")], actor="test") for _ in range(20))
    )
    stream = await seeded_log.store.read_stream("claim-busy")
    assert [event.version for event in stream] == list(range(1, 22))
    assert (await seeded_log.store.verify()).ok


async def test_same_event_id_with_other_content_is_a_conflict(
    seeded_log: EventLog, sqlite_url: str
) -> None:
    event_id = uuid.uuid4()
    first = Record(event=claim("genuine"), event_id=event_id)
    outcome = await seeded_log.append_records([first], actor="test")
    before = await snapshot(seeded_log)

    # The same id and content again is fine: the original position comes back.
    again = await seeded_log.append_records([first], actor="test")
    assert (again.positions, again.appended) == (outcome.positions, 0)

    impostor = Record(event=claim("impostor"), event_id=event_id)
    with pytest.raises(DuplicateEventError) as caught:
        await seeded_log.append_records([impostor], actor="test")
    assert caught.value.position == outcome.positions[0]
    assert await snapshot(seeded_log) == before

    # Also when the instance has never seen the id (fresh cache, another process).
    async with await EventLog.open(sqlite_url) as other:
        with pytest.raises(DuplicateEventError):
            await other.append_records([impostor], actor="test")
    assert await snapshot(seeded_log) == before


async def test_an_event_id_stored_with_other_content_is_told_after_the_rules(
    seeded_log: EventLog,
) -> None:
    # given an event id already stored
    event_id = uuid.uuid4()
    await seeded_log.append_records(
        [Record(event=claim("genuine"), event_id=event_id)], actor="test"
    )
    before = await snapshot(seeded_log)
    # when a batch reuses it with other content, and another of its records breaks a rule
    batch = [
        Record(event=claim("impostor"), event_id=event_id),
        Record(event=PersonUpdated(person="nobody", name="X"), event_id=uuid.uuid4()),
    ]
    # then the rule is what is told, as for a stale expected version: a writer told only
    # of the id would fix it and be refused again for the rule
    with pytest.raises(BatchError) as caught:
        await seeded_log.append_records(batch, actor="test")
    assert [(problem.where, problem.rule) for problem in caught.value.problems] == [
        ("record 1", "reference")
    ]
    # and once the batch keeps the rules, the id's conflict
    with pytest.raises(DuplicateEventError):
        await seeded_log.append_records(batch[:1], actor="test")
    assert await snapshot(seeded_log) == before


async def test_a_record_built_by_hand_is_held_to_what_parsing_checks(
    seeded_log: EventLog,
) -> None:
    before = await snapshot(seeded_log)
    person = PersonRegistered(person="hand-made", name="Hand Made")
    victim = PersonRegistered(person="victim", name="Victim")
    old_shape = {"source": "hand", "url": "https://e.org/a", "publisher": "P"}
    source = parse_event("source.registered", {**old_shape, "published": {"date": "2025-05-01"}})
    cases = {
        "placeholder id": (Record(event=person, event_id=uuid.UUID(int=0)), "event_id", "nil or"),
        "another's content id": (
            Record(event=person, event_id=content_event_id(victim)),
            "event_id",
            "content-derived (version 5) id, but not this record's",
        ),
        "actor": (Record(event=person, event_id=uuid.uuid4(), actor="Bad Actor!"), "actor", "1-"),
        "time without offset": (
            Record(event=person, event_id=uuid.uuid4(), recorded_at=dt.datetime(2025, 1, 1)),
            "schema",
            "UTC offset",
        ),
        "older shape of nothing": (
            Record(event=person, event_id=uuid.uuid4(), stored_as=(1, {"junk": 1})),
            "schema",
            "older schema version (person.registered has none), got 1",
        ),
        "older shape not this event's": (
            Record(
                event=source,
                event_id=uuid.uuid4(),
                stored_as=(1, {**old_shape, "published": "2025-06-01"}),
            ),
            "schema",
            "not this event's data",
        ),
        "older shape refused": (
            Record(event=source, event_id=uuid.uuid4(), stored_as=(1, {"source": "hand"})),
            "schema",
            "stored_as: ",
        ),
    }
    for name, (record, rule, words) in cases.items():
        with pytest.raises(BatchError) as caught:
            await seeded_log.append_records([record], actor="test")
        (problem,) = caught.value.problems
        assert (problem.where, problem.rule) == ("record 0", rule), name
        assert words in problem.message, (name, problem.message)
    # a parsed record changed as a frozen model is, by a copy, is held to them too
    parsed = parse_record({"type": "person.registered", "data": person.data()})
    for changes in ({"event_id": uuid.UUID(int=0)}, {"actor": "Bad Actor!"}):
        with pytest.raises(BatchError):
            await seeded_log.append_records([parsed.model_copy(update=changes)], actor="test")
    single = Record(event=person, event_id=uuid.uuid4())
    with pytest.raises(BatchError, match="records must be a list of Record, not Record"):
        await seeded_log.append_records(single, actor="test")  # type: ignore[arg-type]
    assert await snapshot(seeded_log) == before
    # while an older shape that is the event's own, as an export of an older version has, is
    # stored as it is
    exported = Record(
        event=source, event_id=uuid.uuid4(), stored_as=(1, {**old_shape, "published": "2025-05-01"})
    )
    (position,) = (await seeded_log.append_records([exported], actor="test")).positions
    stored = await seeded_log.store.read_all(after=position - 1, limit=1)
    assert (stored[0].schema_version, stored[0].data["published"]) == (1, "2025-05-01")


@pytest.mark.parametrize("expected", [-1, True, "1", 1.0], ids=["negative", "bool", "str", "float"])
async def test_an_expected_version_parsing_refuses_is_refused_on_a_record_built_by_hand(
    seeded_log: EventLog, expected: object
) -> None:
    # derek-gordon is at version 1: each of these would be taken for it (or fail as stale).
    before = await snapshot(seeded_log)
    update = parse_event("person.updated", {"person": "derek-gordon", "aliases": ["D. G."]})
    with pytest.raises(RecordError) as caught:
        Record(event=update, event_id=uuid.uuid4(), expected_version=expected)
    assert caught.value.rule == "expected_version"
    parsed = parse_record({"type": "person.updated", "data": update.data()})
    with pytest.raises(RecordError):
        parsed.model_copy(update={"expected_version": expected})
    fields = parse_record_fields({"type": "person.updated", "data": update.data()})
    by_hand = ParsedRecords([fields._replace(expected_version=expected)], ["line 1"])
    with pytest.raises(BatchError) as refused:
        await seeded_log.append_parsed(by_hand, actor="test")
    assert [(p.where, p.rule) for p in refused.value.problems] == [("line 1", "expected_version")]
    assert await snapshot(seeded_log) == before


async def test_a_stream_holding_text_the_rules_now_refuse_can_still_be_appended_to(
    sqlite_url: str,
) -> None:
    # Written as an earlier version accepted them (a noncharacter, a control character in a
    # quote), or by another tool through the store: the rules read such events as readers do.
    async with await EventLog.open(sqlite_url) as log:
        await load_seeds(log, SEEDS)
        reported = {**claim("old-quote").data(), "quote": "Said so\x07", "kind": "departure"}
        await log.store.append(
            [
                NewEvent(
                    new_event_id(),
                    "person-old",
                    "person.registered",
                    1,
                    {"person": "old", "name": "Old\ufffe"},
                ),
                NewEvent(
                    new_event_id(),
                    "claim-old-quote",
                    "claim.reported",
                    1,
                    {**reported, "cause": "retirement"},
                ),
            ],
            actor="tool",
        )
    async with await EventLog.open(sqlite_url) as log:
        fixed = parse_event("person.updated", {"person": "old", "name": "Old"})
        # Still a departure with a cause: a correction to an appointment must clear it.
        wrong = parse_event(
            "claim.corrected",
            {"claim": "old-quote", "changes": {"kind": "appointment"}, "reason": "r"},
        )
        with pytest.raises(
            BatchError,
            match='would have a cause but is not a departure \\(clear it with "cause": null',
        ):
            await log.append_events([wrong], actor="test")
        retracted = parse_event("claim.retracted", {"claim": "old-quote", "reason": "denied"})
        outcome = await log.append_events([fixed, retracted], actor="test")
        assert outcome.appended == 2
        assert (await log.store.verify()).ok


async def test_same_event_id_twice_in_one_batch_is_refused(seeded_log: EventLog) -> None:
    before = await snapshot(seeded_log)
    event_id = uuid.uuid4()
    for second in (claim("two"), claim("one")):
        batch = [
            Record(event=claim("one"), event_id=event_id),
            Record(event=second, event_id=event_id),
        ]
        with pytest.raises(BatchError) as caught:
            await seeded_log.append_records(batch, actor="test")
        assert [(p.where, p.rule) for p in caught.value.problems] == [("record 1", "event_id")]
        assert "record 0" in caught.value.problems[0].message
    assert await snapshot(seeded_log) == before


async def test_reimporting_records_with_explicit_ids_is_idempotent(seeded_log: EventLog) -> None:
    raw = [
        {"type": "claim.reported", "data": claim("with-id").data(), "event_id": str(uuid.uuid4())},
        {
            "type": "claim.confirmed",
            "data": confirm("with-id").data(),
            "event_id": str(uuid.uuid4()),
        },
    ]
    first = await seeded_log.append_raw(raw, actor="test")
    second = await seeded_log.append_raw(raw, actor="test")
    assert (first.appended, second.appended, second.already_present) == (2, 0, 2)
    assert first.positions == second.positions == (30, 31)


async def test_expected_version_is_checked(seeded_log: EventLog) -> None:
    update = parse_event("person.updated", {"person": "derek-gordon", "aliases": ["D. Gordon"]})
    outcome = await seeded_log.append_events([update], actor="test", expected_version=1)
    assert outcome.appended == 1
    before = await snapshot(seeded_log)

    for stale in (1, 5, "no_stream"):
        with pytest.raises(ConcurrencyError) as caught:
            await seeded_log.append_events([update], actor="test", expected_version=stale)
        assert (caught.value.stream, caught.value.actual) == ("person-derek-gordon", 2)
        assert await snapshot(seeded_log) == before

    assert (await seeded_log.append_events([update], actor="test", expected_version=2)).appended
    assert (await seeded_log.append_events([update], actor="test", expected_version="any")).appended


async def test_expected_version_in_records(seeded_log: EventLog) -> None:
    before = await snapshot(seeded_log)
    lines = [
        json.dumps(
            {"type": "claim.reported", "data": claim("new").data(), "expected_version": "no_stream"}
        ),
        json.dumps(
            {
                "type": "person.updated",
                "data": {"person": "derek-gordon", "name": "Derek N. Gordon"},
                "expected_version": 3,
            }
        ),
    ]
    with pytest.raises(ConcurrencyError) as caught:
        await seeded_log.import_lines(lines, actor="test")
    assert caught.value.where == "line 2"
    assert await snapshot(seeded_log) == before
    fixed = [lines[0], lines[1].replace('"expected_version": 3', '"expected_version": 1')]
    assert (await seeded_log.import_lines(fixed, actor="test")).appended == 2


async def test_a_batch_breaking_a_rule_is_refused_for_it_before_a_stale_expected_version(
    seeded_log: EventLog,
) -> None:
    before = await snapshot(seeded_log)
    stale = _renames(5)[0]
    unknown = json.dumps({"type": "claim.retracted", "data": {"claim": "nope", "reason": "x"}})
    for lines, where in (([stale, unknown], "line 2"), ([unknown, stale], "line 1")):
        with pytest.raises(BatchError) as caught:
            await seeded_log.import_lines(lines, actor="test")
        assert [(p.where, p.rule) for p in caught.value.problems] == [(where, "reference")]
    # The first stale version is the one told, once the rules pass.
    with pytest.raises(ConcurrencyError) as conflict:
        await seeded_log.import_lines(_renames(1, 7, 9), actor="test")
    assert (conflict.value.where, conflict.value.actual) == ("line 2", 2)
    assert await snapshot(seeded_log) == before


def _renames(*expected: object) -> list[str]:
    """One ``person.updated`` line per expected version, all on derek-gordon's stream (at 1)."""
    return [
        json.dumps(
            {
                "type": "person.updated",
                "data": {"person": "derek-gordon", "name": f"Derek Gordon {index}"},
                **({} if version is None else {"expected_version": version}),
            }
        )
        for index, version in enumerate(expected)
    ]


@pytest.mark.parametrize(
    ("expected", "where", "actual"),
    [
        ((1, 1), "line 2", 2),
        (("any", "no_stream"), "line 2", 2),
        ((None, 1), "line 2", 2),
        ((1, 2, 2), "line 3", 3),
    ],
)
async def test_each_records_expected_version_counts_the_records_before_it_in_the_batch(
    seeded_log: EventLog, expected: tuple[object, ...], where: str, actual: int
) -> None:
    before = await snapshot(seeded_log)
    with pytest.raises(ConcurrencyError) as caught:
        await seeded_log.import_lines(_renames(*expected), actor="test")
    assert (caught.value.where, caught.value.actual) == (where, actual)
    assert await snapshot(seeded_log) == before
    assert (await seeded_log.import_lines(_renames(1, 2, "any", 4), actor="test")).appended == 4


async def test_another_instance_retracts_and_this_one_notices(
    seeded_log: EventLog, sqlite_url: str
) -> None:
    # The first instance has the claim cached as live (the seeds were appended through it).
    await seeded_log.append_events([confirm(HAMMER_BODY)], actor="test")

    async with await EventLog.open(sqlite_url) as other:
        await other.append_events([retract(HAMMER_BODY)], actor="other")

    before = await snapshot(seeded_log)
    with pytest.raises(BatchError) as caught:
        await seeded_log.append_events([confirm(HAMMER_BODY)], actor="test")
    assert caught.value.problems[0].rule == "claim_live"
    with pytest.raises(BatchError):
        await seeded_log.append_events([retract(HAMMER_BODY)], actor="test")
    assert await snapshot(seeded_log) == before
    stream = await seeded_log.store.read_stream(f"claim-{HAMMER_BODY}")
    assert [event.type for event in stream] == [
        "claim.reported",
        "claim.confirmed",
        "claim.retracted",
    ]


async def test_two_instances_writing_one_stream_keep_versions_contiguous(
    seeded_log: EventLog, sqlite_url: str
) -> None:
    async with await EventLog.open(sqlite_url) as other:
        await asyncio.gather(
            *(
                log.append_events([confirm(HAMMER_BODY)], actor=f"writer-{index % 2}")
                for index, log in enumerate([seeded_log, other] * 10)
            )
        )
        # Both see the same claim state afterwards, whoever wrote last.
        await other.append_events([retract(HAMMER_BODY)], actor="other")
    with pytest.raises(BatchError):
        await seeded_log.append_events([confirm(HAMMER_BODY)], actor="test")
    stream = await seeded_log.store.read_stream(f"claim-{HAMMER_BODY}")
    assert [event.version for event in stream] == list(range(1, 23))
    assert (await seeded_log.store.verify()).ok


async def test_a_move_decided_while_another_writer_moves_an_ancestor_is_decided_again(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given two top-level organisations, and two writers on one log
    async with await EventLog.open(sqlite_url) as this, await EventLog.open(sqlite_url) as other:
        await this.append_events(
            [OrgRegistered(org="p", name="P"), OrgRegistered(org="q", name="Q")], actor="t"
        )
        append_batches = this.store.append_batches

        async def the_other_writer_first(batches: Any, progress: Any = None) -> Any:
            # when the other writer puts q under p after this one decided p under q
            monkeypatch.setattr(this.store, "append_batches", append_batches)
            await other.append_events([OrgUpdated(org="q", parent="p")], actor="other")
            return await append_batches(batches, progress)

        monkeypatch.setattr(this.store, "append_batches", the_other_writer_first)
        # then this move is decided again on the tree as it now is, and refused
        with pytest.raises(BatchError) as caught:
            await this.append_events([OrgUpdated(org="p", parent="q")], actor="t")
        assert caught.value.problems[0].rule == "org_cycle"
        stored = [(event.stream, event.data) for event in await this.store.read_all()]
    assert stored[-1] == ("org-q", {"org": "q", "parent": "p"})
    assert len(stored) == 3


async def test_a_claim_is_not_held_up_by_edits_of_the_person_post_and_source_it_names(
    seeded_log: EventLog, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Those it only needs to exist, and once there they are there for good: a writer that
    keeps editing them (every time this one is about to commit) changes nothing it read."""
    async with await EventLog.open(sqlite_url) as other:
        append_batches = seeded_log.store.append_batches
        edits = iter(range(100))

        async def another_writer_edits_first(batches: Any, progress: Any = None) -> Any:
            edit = next(edits)
            await other.append_raw(
                [
                    {
                        "type": "person.updated",
                        "data": {"person": "derek-gordon", "aliases": [f"D. Gordon {edit}"]},
                    },
                    {
                        "type": "post.updated",
                        "data": {"post": "ice-hsi-ead", "aliases": [f"HSI head {edit}"]},
                    },
                    {
                        "type": "comment.requested",
                        "data": {"source": SOURCE, "org": "ice", "outcome": "no_response"},
                        "event_id": str(uuid.uuid4()),
                    },
                ],
                actor="other",
            )
            return await append_batches(batches, progress)

        monkeypatch.setattr(seeded_log.store, "append_batches", another_writer_edits_first)
        outcome = await seeded_log.append_events(
            [claim("gordon-named-again", post="ice-hsi-ead")], actor="test"
        )
    # appended at its first try, right after the other writer's first edit
    assert outcome.appended == 1
    assert next(edits) == 1


async def test_a_batch_worn_out_by_other_writers_is_told_to_try_again_not_of_a_version(
    seeded_log: EventLog, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given another writer that moves an organisation every time this one is about to commit
    async with await EventLog.open(sqlite_url) as other:
        await other.append_events([OrgRegistered(org="elsewhere", name="Elsewhere")], actor="o")
        append_batches = seeded_log.store.append_batches
        moves = iter(["elsewhere", "dhs"] * 10)

        async def another_writer_moves_first(batches: Any, progress: Any = None) -> Any:
            await other.append_events([OrgUpdated(org="ice", parent=next(moves))], actor="o")
            return await append_batches(batches, progress)

        monkeypatch.setattr(seeded_log.store, "append_batches", another_writer_moves_first)
        # when this one defines a post under that organisation, giving no expected version,
        # then, each try decided again and refused for the move, it is told to try again
        with pytest.raises(StoreUnavailable) as caught:
            await seeded_log.append_events(
                [PostDefined(post="ice-new-post", org="ice", title="New post")], actor="t"
            )
    assert str(caught.value) == (
        "other writers kept changing org-ice, which this batch rests on, while it was "
        "decided (6 tries); nothing was written: try again"
    )
    assert await seeded_log.store.read_stream("post-ice-new-post") == []


async def test_after_its_own_append_a_log_does_not_ask_the_store_for_its_head(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a log whose last append was its own
    await seeded_log.append_events([claim("first-of-two")], actor="test")
    asked: list[object] = []
    head = seeded_log.store.head

    async def counted_head() -> tuple[int, str]:
        asked.append(None)
        return await head()

    monkeypatch.setattr(seeded_log.store, "head", counted_head)
    # when it appends again, and again
    await seeded_log.append_events([claim("second-of-two")], actor="test")
    await seeded_log.append_events([confirm("second-of-two")], actor="test")
    # then it decided on what it knew: one thread hop per append, not two
    assert asked == []
    assert await snapshot(seeded_log)


async def test_a_refusal_on_what_a_log_last_knew_is_decided_again_on_other_writers_events(
    seeded_log: EventLog, sqlite_url: str
) -> None:
    # given a log refused a claim naming a person nobody had registered
    with pytest.raises(BatchError) as caught:
        await seeded_log.append_events([claim("newcomer-named", person="newcomer")], actor="t")
    assert caught.value.problems[0].rule == "reference"
    # when another writer registers that person
    async with await EventLog.open(sqlite_url) as other:
        await other.append_raw(
            {"type": "person.registered", "data": {"person": "newcomer", "name": "New Comer"}},
            actor="other",
        )
    # then the same claim, decided again on what the other writer stored, is appended
    outcome = await seeded_log.append_events(
        [claim("newcomer-named", person="newcomer")], actor="t"
    )
    assert outcome.appended == 1


async def test_an_append_on_a_claim_another_writer_retracted_meanwhile_is_refused(
    seeded_log: EventLog, sqlite_url: str
) -> None:
    # given a log that reported a claim itself (so it knows the claim as live)
    await seeded_log.append_events([claim("short-lived")], actor="t")
    # when another writer retracts it, and this log then confirms it
    async with await EventLog.open(sqlite_url) as other:
        await other.append_events([retract("short-lived")], actor="other")
    with pytest.raises(BatchError) as caught:
        await seeded_log.append_events([confirm("short-lived")], actor="t")
    # then the confirmation is refused for the retraction, and nothing is written
    assert caught.value.problems[0].rule == "claim_live"
    stream = await seeded_log.store.read_stream("claim-short-lived")
    assert [event.type for event in stream] == ["claim.reported", "claim.retracted"]


async def test_an_append_cancelled_while_it_waits_for_its_group_is_not_written(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a group being written, held until released
    release = asyncio.Event()
    append_batches = seeded_log.store.append_batches

    async def held(batches: Any, progress: Any = None) -> Any:
        await release.wait()
        return await append_batches(batches, progress)

    monkeypatch.setattr(seeded_log.store, "append_batches", held)
    first = asyncio.create_task(seeded_log.append_events([claim("first-in")], actor="t"))
    await asyncio.sleep(0.01)
    # when an append queued behind it is cancelled (as a timeout does)
    second = asyncio.create_task(seeded_log.append_events([claim("given-up")], actor="t"))
    await asyncio.sleep(0.01)
    second.cancel()
    release.set()
    # then the first is written, and the one given up is not
    assert (await first).appended == 1
    with pytest.raises(asyncio.CancelledError):
        await second
    # (an append after it is answered once what was queued before it is written)
    await seeded_log.append_events([claim("queued-after")], actor="t")
    streams = [event.stream for event in await seeded_log.store.read_all()]
    assert "claim-first-in" in streams and "claim-given-up" not in streams


async def test_an_append_cancelled_while_its_group_is_decided_is_left_out_of_it(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a group whose decision waits on the store (idempotency lookups of record ids)
    looking_up = asyncio.Event()
    release = asyncio.Event()
    find_event_ids = seeded_log.store.find_event_ids

    async def slow(ids: Any) -> Any:
        looking_up.set()
        await release.wait()
        return await find_event_ids(ids)

    monkeypatch.setattr(seeded_log.store, "find_event_ids", slow)
    given_up = Record(event=claim("given-up"), event_id=uuid.uuid4())
    kept = Record(event=confirm("given-up"), event_id=uuid.uuid4())
    other = Record(event=claim("kept-on"), event_id=uuid.uuid4())
    cancelled = asyncio.create_task(seeded_log.append_records([given_up], actor="t"))
    # a record of the same group resting on the cancelled one
    resting = asyncio.create_task(seeded_log.append_records([kept], actor="t"))
    unrelated = asyncio.create_task(seeded_log.append_records([other], actor="t"))
    await looking_up.wait()
    # when the first caller stops waiting meanwhile
    cancelled.cancel()
    release.set()
    # then the group is decided again without it: what rested on it is refused, the rest
    # is written, and the given-up claim is not
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    with pytest.raises(BatchError):
        await resting
    assert (await unrelated).appended == 1
    await seeded_log.append_events([claim("queued-after")], actor="t")
    streams = [event.stream for event in await seeded_log.store.read_all()]
    assert "claim-kept-on" in streams and "claim-given-up" not in streams


async def test_an_append_reports_its_progress_checking_then_writing(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given records enough for several reports
    monkeypatch.setattr("leaderlog.log._PROGRESS_STEP", 100)
    records = [
        parse_record({"type": "org.registered", "data": {"org": f"org-{n}", "name": f"Org {n}"}})
        for n in range(450)
    ]
    reports: list[tuple[str, int, int]] = []
    async with await EventLog.open(sqlite_url) as log:
        # when they are appended with a progress callback
        outcome = await log.append_records(
            records, actor="t", progress=lambda *report: reports.append(report)
        )
    assert outcome.appended == 450
    # then the rules are checked, forward only, to the last record, and then the rows written
    stages = [stage for stage, _, _ in reports]
    checking = [(done, total) for stage, done, total in reports if stage == "checking"]
    writing = [(done, total) for stage, done, total in reports if stage == "writing"]
    assert stages == sorted(stages)  # "checking" before "writing"
    assert checking == [(100, 450), (200, 450), (300, 450), (400, 450), (450, 450)]
    assert writing[-1] == (900, 900)
    assert [done for done, _ in writing] == sorted({done for done, _ in writing})


async def test_an_append_cancelled_while_its_rules_are_checked_stops_the_check(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a large batch, checked in several turns of the event loop
    monkeypatch.setattr("leaderlog.log._PROGRESS_STEP", 100)
    monkeypatch.setattr("leaderlog.log._DECIDED_BETWEEN_TURNS", 50)
    records = [
        parse_record({"type": "org.registered", "data": {"org": f"org-{n}", "name": f"Org {n}"}})
        for n in range(1000)
    ]
    reports: list[tuple[str, int, int]] = []
    async with await EventLog.open(sqlite_url) as log:

        def cancel_at_the_first_report(stage: str, done: int, total: int) -> None:
            reports.append((stage, done, total))
            appending.cancel()

        appending = asyncio.create_task(
            log.append_records(records, actor="t", progress=cancel_at_the_first_report)
        )
        # when its caller stops waiting while the rules are checked (as a Ctrl-C does)
        with pytest.raises(asyncio.CancelledError):
            await appending
        # then the check stops there, short of the other records, and nothing is written
        assert reports == [("checking", 100, 1000)]
        assert await log.store.read_all() == []
        # and the log goes on appending
        outcome = await log.append_records(records[:1], actor="t")
        assert outcome.appended == 1


async def test_writing_progress_is_each_caller_s_own_and_ends_full_once_written(
    seeded_log: EventLog, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("leaderlog.log._PROGRESS_STEP", 1)
    monkeypatch.setattr("leaderlog.store.base.PROGRESS_STEP", 1)
    reports: dict[str, list[tuple[str, int, int]]] = {"a": [], "b": [], "again": []}

    def records(prefix: str, count: int) -> list[Record]:
        return [
            Record(
                event=PostDefined(post=f"{prefix}-{n}", org="ice", title="T"), event_id=uuid.uuid4()
            )
            for n in range(count)
        ]

    def noting(name: str) -> Any:
        return lambda *report: reports[name].append(report)

    first, second = records("a", 3), records("b", 5)
    async with await EventLog.open(sqlite_url) as other:
        append_batches = seeded_log.store.append_batches
        moved = iter([True])

        async def another_writer_moves_once(batches: Any, progress: Any = None) -> Any:
            # given another writer that moves the organisation once, before the first commit
            if next(moved, False):
                await other.append_events([OrgUpdated(org="ice", parent="dhs")], actor="o")
            return await append_batches(batches, progress)

        monkeypatch.setattr(seeded_log.store, "append_batches", another_writer_moves_once)
        # when two callers append together, and their group is decided and written again
        await asyncio.gather(
            seeded_log.append_records(first, actor="t", progress=noting("a")),
            seeded_log.append_records(second, actor="t", progress=noting("b")),
        )
    # then each hears of its own records' steps, only forward, ending full
    for name, count in (("a", 3), ("b", 5)):
        writing = [(done, total) for stage, done, total in reports[name] if stage == "writing"]
        assert {total for _, total in writing} == {2 * count}, writing
        assert [done for done, _ in writing] == sorted({done for done, _ in writing}), writing
        assert writing[-1] == (2 * count, 2 * count)
    # and an append of records all stored already ends full too, writing nothing
    outcome = await seeded_log.append_records(first, actor="t", progress=noting("again"))
    assert outcome.appended == 0
    assert [report for report in reports["again"] if report[0] == "writing"][-1] == (
        "writing",
        6,
        6,
    )


async def test_an_append_the_store_refuses_is_not_shown_written_beside_one_that_is(
    seeded_log: EventLog,
) -> None:
    # given an append whose guard always refuses it, batched with one that is written
    reports: list[tuple[str, int, int]] = []
    always = AppendGuard("SELECT 1", (), lambda _: AppendRefused("refused by guard"))
    records = [Record(event=claim(f"guarded-{n}"), event_id=uuid.uuid4()) for n in range(3)]
    refused, written = await asyncio.gather(
        seeded_log.append_records(
            records, actor="t", guard=always, progress=lambda *report: reports.append(report)
        ),
        seeded_log.append_events([claim("beside-the-guarded")], actor="t"),
        return_exceptions=True,
    )
    # then the refused one's writing never reached its end
    assert isinstance(refused, AppendRefused)
    assert isinstance(written, AppendOutcome) and written.appended == 1
    assert ("writing", 6, 6) not in reports


async def test_a_failing_progress_callback_fails_no_append(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a progress callback that raises, and another caller batched with it
    monkeypatch.setattr("leaderlog.log._PROGRESS_STEP", 1)
    handled: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _, context: handled.append(context))
    calls: list[str] = []

    def broken(stage: str, done: int, total: int) -> None:
        calls.append(stage)
        raise RuntimeError("the bar broke")

    records = [Record(event=claim(f"with-bar-{n}"), event_id=uuid.uuid4()) for n in range(3)]
    # when both append
    with_bar, other = await asyncio.gather(
        seeded_log.append_records(records, actor="t", progress=broken),
        seeded_log.append_events([claim("beside-it")], actor="t"),
    )
    # then both are written; the callback was called once, its error handed to the loop
    assert (with_bar.appended, other.appended) == (3, 1)
    assert calls == ["checking"]
    assert [str(context["exception"]) for context in handled] == ["the bar broke"]


async def test_a_refused_append_reports_no_writing(seeded_log: EventLog) -> None:
    reports: list[tuple[str, int, int]] = []
    records = [
        parse_record({"type": "org.registered", "data": {"org": "new", "name": "New"}}),
        parse_record(
            {"type": "post.defined", "data": {"post": "p", "org": "nowhere", "title": "T"}}
        ),
    ]
    before = await snapshot(seeded_log)
    with pytest.raises(BatchError):
        await seeded_log.append_records(
            records, actor="t", progress=lambda *report: reports.append(report)
        )
    assert [stage for stage, _, _ in reports] == []
    assert await snapshot(seeded_log) == before
    # nor when it is batched with an append that is written
    refused, written = await asyncio.gather(
        seeded_log.append_records(
            records, actor="t", progress=lambda *report: reports.append(report)
        ),
        seeded_log.append_events([claim("written-beside-it")], actor="t"),
        return_exceptions=True,
    )
    assert isinstance(refused, BatchError)
    assert isinstance(written, AppendOutcome) and written.appended == 1
    assert [stage for stage, _, _ in reports] == []


async def test_append_raw_labels_records(seeded_log: EventLog) -> None:
    with pytest.raises(BatchError) as caught:
        await seeded_log.append_raw(
            [
                {"type": "person.registered", "data": {"person": "ok", "name": "OK"}},
                {"type": "person.registered", "data": {"person": "BAD", "name": "Bad"}},
            ],
            actor="test",
        )
    assert [(p.where, p.rule) for p in caught.value.problems] == [("record 1", "schema")]
    with pytest.raises(BatchError):
        await seeded_log.append_raw([], actor="test")
    assert (await seeded_log.store.count()) == 29


async def test_export_envelopes_reimport_into_another_file(
    seeded_log: EventLog, tmp_path: Path
) -> None:
    envelopes = [event.envelope() for event in await seeded_log.events()]
    records = [parse_record(envelope) for envelope in envelopes]
    async with await EventLog.open(f"sqlite:///{tmp_path / 'copy.db'}") as copy:
        outcome = await copy.append_records(records, actor="import")
        assert outcome.appended == 29
        copied = [event.envelope() for event in await copy.events()]
    assert copied == envelopes


def test_parse_lines_skips_blank_lines() -> None:
    records, labels = parse_lines(["", line("person.registered", person="x", name="X"), "  \n"])
    assert labels == ["line 2"]
    assert records[0].stream == "person-x"


async def test_positions_of_a_batch_mixing_new_and_stored_records(seeded_log: EventLog) -> None:
    seed_lines = (SEEDS / "ice-leadership-2025-05.jsonl").read_text(encoding="utf-8").splitlines()
    stored, _ = parse_lines(seed_lines[:2])
    # Enough new records that new positions overlap the indices of the stored ones.
    fresh = [
        Record(
            event=parse_event("person.registered", {"person": f"p{i}", "name": "P"}),
            event_id=uuid.uuid4(),
        )
        for i in range(30)
    ]
    outcome = await seeded_log.append_records(
        [*fresh[:15], stored[0], *fresh[15:], stored[1]], actor="test"
    )
    assert outcome.positions == (*range(30, 45), 1, *range(45, 60), 2)
    assert (outcome.appended, outcome.already_present) == (30, 2)
    assert (await seeded_log.store.verify()).count == 59


async def test_the_same_file_imported_twice_at_once(sqlite_url: str) -> None:
    seed_lines = (SEEDS / "ice-leadership-2025-05.jsonl").read_text(encoding="utf-8").splitlines()
    async with await EventLog.open(sqlite_url) as log:
        first, second, third = await asyncio.gather(
            *(log.import_lines(seed_lines, actor="test") for _ in range(3))
        )
        assert first.positions == second.positions == third.positions == tuple(range(1, 30))
        assert (first.appended, second.appended, third.appended) == (29, 0, 0)
        assert (await log.store.verify()).count == 29


async def test_a_caller_that_stops_waiting_does_not_fail_its_group(seeded_log: EventLog) -> None:
    impatient = asyncio.ensure_future(seeded_log.append_events([claim("impatient")], actor="test"))
    patient = [
        asyncio.ensure_future(seeded_log.append_events([claim(f"patient-{n}")], actor="test"))
        for n in range(5)
    ]
    await asyncio.sleep(0)  # all six are queued for the same group
    impatient.cancel()
    outcomes = await asyncio.gather(*patient)
    assert all(outcome.appended == 1 for outcome in outcomes)
    assert (await seeded_log.store.verify()).ok


def _the_log_s_writer(*callers: asyncio.Task[Any]) -> asyncio.Task[Any]:
    """The one task running besides the test and the given callers: the log's writer."""
    (writer,) = asyncio.all_tasks() - {asyncio.current_task(), *callers}
    return writer


async def test_a_writer_cancelled_while_writing_says_so_and_leaves_no_append_waiting(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = await EventLog.open(sqlite_url)
    await log.append_events([PersonRegistered(person="first", name="First")], actor="t")
    # given a group being written, held there, and an append queued behind it
    writing = asyncio.Event()
    append_batches = log.store.append_batches

    async def held(batches: Any, progress: Any = None) -> Any:
        writing.set()
        await asyncio.Event().wait()
        return await append_batches(batches, progress)

    monkeypatch.setattr(log.store, "append_batches", held)
    in_group = asyncio.create_task(
        log.append_events([PersonRegistered(person="held", name="Held")], actor="t")
    )
    await writing.wait()
    monkeypatch.setattr(log.store, "append_batches", append_batches)
    queued = asyncio.create_task(
        log.append_events([PersonRegistered(person="queued", name="Queued")], actor="t")
    )
    await asyncio.sleep(0)
    # when the log's own writer task is cancelled (as a shutdown cancelling every task does)
    _the_log_s_writer(in_group, queued).cancel()
    # then the group it was writing is told what happened, and that it may have been written
    with pytest.raises(StoreError) as stopped:
        await in_group
    assert "writer task was stopped (cancelled) while this batch was written" in str(stopped)
    assert "may have been committed or not" in str(stopped.value)
    # the append queued behind it is not left waiting: another writer appends it
    async with asyncio.timeout(30):  # a hang would otherwise stop the whole test run
        assert (await queued).appended == 1
    # and the log closes as usual
    await log.close()
    async with await EventLog.open(sqlite_url) as reopened:
        streams = [event.stream for event in await reopened.store.read_all()]
    assert streams == ["person-first", "person-queued"]


async def test_a_writer_cancelled_while_checking_says_nothing_was_written(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = await EventLog.open(sqlite_url)
    # given a group being checked, held while the store looks up its records' ids
    looking_up = asyncio.Event()

    async def held(ids: Any) -> Any:
        looking_up.set()
        await asyncio.Event().wait()

    monkeypatch.setattr(log.store, "find_event_ids", held)
    record = Record(event=PersonRegistered(person="held", name="Held"), event_id=uuid.uuid4())
    in_group = asyncio.create_task(log.append_records([record], actor="t"))
    await looking_up.wait()
    # when the log's writer task is cancelled
    _the_log_s_writer(in_group).cancel()
    # then its group is told that nothing was written
    with pytest.raises(StoreError, match=r"stopped \(cancelled\) while this batch was checked: "):
        await in_group
    # and the log closes, with nothing appended
    await log.close()
    async with await EventLog.open(sqlite_url) as reopened:
        assert await reopened.store.read_all() == []


async def test_a_writer_cancelled_before_it_began_leaves_no_append_waiting(
    sqlite_url: str,
) -> None:
    async with await EventLog.open(sqlite_url) as log:
        # given an append whose writer task has not run yet
        queued = asyncio.create_task(
            log.append_events([PersonRegistered(person="queued", name="Queued")], actor="t")
        )
        await asyncio.sleep(0)
        # when that writer is cancelled before its first step
        _the_log_s_writer(queued).cancel()
        # then another writer appends it
        async with asyncio.timeout(30):
            assert (await queued).appended == 1


async def test_a_claim_reported_elsewhere_is_refused_though_this_instance_never_loaded_it(
    seeded_log: EventLog, sqlite_url: str
) -> None:
    # New claims are appended without loading their stream first (the append expects no
    # stream); a claim another instance already reported must still break the unique rule.
    async with await EventLog.open(sqlite_url) as other:
        await other.append_events([claim("reported-elsewhere")], actor="other")
    before = await snapshot(seeded_log)
    with pytest.raises(BatchError) as caught:
        await seeded_log.append_events([claim("reported-elsewhere")], actor="test")
    assert caught.value.problems[0].rule == "unique"
    assert await snapshot(seeded_log) == before
    # And one that nobody reported goes in without a detour.
    assert (await seeded_log.append_events([claim("new-here")], actor="test")).appended == 1


async def test_append_events_refuses_what_is_not_an_event_model(seeded_log: EventLog) -> None:
    before = await snapshot(seeded_log)
    with pytest.raises(BatchError) as caught:
        await seeded_log.append_events([{"type": "claim.reported"}], actor="test")  # type: ignore[list-item]
    assert caught.value.problems[0].rule == "schema"
    assert await snapshot(seeded_log) == before


def test_a_line_in_another_encoding_is_named_as_not_utf8() -> None:
    record = {"type": "person.registered", "data": {"person": "z", "name": "Zo\u00eb"}}
    latin1 = json.dumps(record, ensure_ascii=False).encode("latin-1")
    with pytest.raises(BatchError) as raised:
        parse_lines([line("person.registered", person="x", name="X").encode(), latin1])
    (problem,) = raised.value.problems
    column = latin1.index(b"\xeb") + 1
    assert str(problem) == (
        f"line 2: not UTF-8 text (byte 0xEB at column {column}); save the file as UTF-8"
    )


@pytest.mark.parametrize(
    ("compress", "tool"),
    [(gzip.compress, "gzip"), (bz2.compress, "bzip2"), (lzma.compress, "xz")],
)
def test_a_compressed_file_is_named_as_such_not_as_another_encoding(
    compress: Any, tool: str
) -> None:
    # given an export kept compressed, read line by line as import reads a file
    text = (line("person.registered", person="x", name="X") + "\n").encode() * 50
    lines = io.BytesIO(compress(text)).readlines()
    # when it is parsed
    with pytest.raises(BatchError) as raised:
        parse_lines(lines)
    # then the error says it is compressed and how to import it, not to save it as UTF-8
    (problem,) = raised.value.problems
    assert str(problem) == (
        f"line 1: the file is {tool}-compressed; decompress it first "
        f"({tool} -dc FILE | leaderlog import -)"
    )


def test_text_that_merely_starts_like_a_compressed_file_is_refused_as_json() -> None:
    with pytest.raises(BatchError) as raised:
        parse_lines([b"BZh9 is not JSON\n"])
    assert "not valid JSON" in str(raised.value.problems[0])


async def test_events_from_a_generator_are_all_appended(seeded_log: EventLog) -> None:
    people = (parse_event("person.registered", {"person": f"g{n}", "name": "G"}) for n in range(3))
    outcome = await seeded_log.append_events(people, actor="desk")  # type: ignore[arg-type]
    assert (outcome.positions, outcome.appended) == ((30, 31, 32), 3)


async def test_no_entry_point_stores_a_record_too_large_to_export(seeded_log: EventLog) -> None:
    before = await snapshot(seeded_log)
    big = "\U0001f600" * 300
    post = {
        "type": "post.defined",
        "data": {
            "post": "bigpost",
            "org": "ice",
            "title": big,
            "aliases": [f"{big[:-3]}{n}" for n in range(50)],
            "labels": {f"x{chr(97 + n // 26)}{chr(97 + n % 26)}": big for n in range(50)},
        },
    }
    with pytest.raises(BatchError) as caught:
        await seeded_log.append_raw(post, actor="desk")
    ((where, rule, message),) = [(p.where, p.rule, p.message) for p in caught.value.problems]
    assert (where, rule) == ("record 0", "size")
    assert message.endswith(f"bytes; at most {MAX_RECORD_BYTES}")
    with pytest.raises(BatchError, match="at most"):
        await seeded_log.append_events([parse_record(post).event], actor="desk")
    assert await snapshot(seeded_log) == before


def test_changing_a_frozen_event_validates_the_result() -> None:
    person = parse_event("person.registered", {"person": "template", "name": "Template"})
    assert person.model_copy(update={"name": "Jane"}).name == "Jane"  # type: ignore[union-attr]
    with pytest.raises(ValidationError, match="should match pattern"):
        person.model_copy(update={"person": "Jane Doe"})
    with pytest.raises(ValidationError):
        type(person).model_construct(person="Bad Slug", name="")


def test_an_event_log_busy_in_one_event_loop_refuses_another(sqlite_url: str) -> None:
    """Two threads, each with its own loop, sharing one EventLog: the second is told to open
    its own instead of waiting forever for answers the first loop's writer cannot give it."""
    log = asyncio.run(EventLog.open(sqlite_url))
    outcomes: dict[str, set[str]] = {}

    def append_from_a_thread(name: str) -> None:
        async def appends() -> list[object]:
            people = [
                parse_event("person.registered", {"person": f"{name}-{n}", "name": "P"})
                for n in range(50)
            ]
            return await asyncio.wait_for(
                asyncio.gather(
                    *(log.append_events([person], actor="t") for person in people),
                    return_exceptions=True,
                ),
                30,
            )

        outcomes[name] = {type(outcome).__name__ for outcome in asyncio.run(appends())}

    threads = [threading.Thread(target=append_from_a_thread, args=(n,)) for n in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    asyncio.run(log.close())
    # every caller got an answer: appended, or told to use its own EventLog
    assert set().union(*outcomes.values()) <= {"AppendOutcome", "RuntimeError"}
    assert "TimeoutError" not in set().union(*outcomes.values())


async def test_library_arguments_of_the_wrong_shape_are_named(
    seeded_log: EventLog, tmp_path: Path
) -> None:
    person = parse_event("person.registered", {"person": "shape", "name": "S"})
    for bad in ("bogus", -1, True, 1.5):
        with pytest.raises(BatchError, match="expected_version must be"):
            await seeded_log.append_events([person], actor="t", expected_version=bad)  # type: ignore[arg-type]
    # a whole text of lines, and a path given as a string, are read as such
    text = line("person.registered", person="text-1", name="T") + "\n"
    text += line("person.registered", person="text-2", name="T") + "\n"
    assert (await seeded_log.import_lines(text, actor="t")).appended == 2
    path = tmp_path / "one.jsonl"
    path.write_text(line("person.registered", person="from-path", name="P") + "\n")
    assert (await seeded_log.import_file(str(path), actor="t")).appended == 1


async def test_an_exported_event_of_an_older_schema_version_is_stored_as_it_was(
    sqlite_url: str, tmp_path: Path
) -> None:
    """Upcast to be checked, but stored with its own version and bytes: stored events are never
    rewritten, so a copy keeps the hash chain and importing the export again adds nothing."""
    async with await EventLog.open(sqlite_url) as log:
        await load_seeds(log, SEEDS)
        envelopes = [event.envelope() for event in await log.events()]
    old_data = {
        "source": "old-src",
        "url": "https://example.org/old",
        "publisher": "Old",
        "published": "2025-05-01",
    }
    envelopes.append(
        {
            **envelopes[-1],
            "position": 30,
            "stream": "source-old-src",
            "version": 1,
            "event_id": str(uuid.uuid4()),
            "type": "source.registered",
            "schema_version": 1,
            "data": old_data,
            # Not past: the hash it carries is not the one this chain gives it (see
            # test_an_import_keeps_times_from_the_past_only_for_a_copy_of_the_log_itself).
            "recorded_at": format_time(utc_now() + dt.timedelta(minutes=1)),
        }
    )
    lines = [json.dumps(envelope) for envelope in envelopes]
    async with await EventLog.open(f"sqlite:///{tmp_path / 'copy.db'}") as copy:
        assert (await copy.import_lines(lines, actor="import")).appended == 30
        stored = (await copy.events())[-1]
        assert (stored.schema_version, stored.data) == (1, old_data)
        again = await copy.import_lines(lines, actor="import")
        assert (again.appended, again.already_present) == (0, 30)


async def test_an_exported_event_keeps_an_id_derived_from_its_content_as_stored(
    sqlite_url: str,
) -> None:
    """A content id derived when an older shape was current still names that content; one
    derived from other content is refused, as it is on a new record."""
    old_data = {
        "source": "old",
        "url": "https://example.org/o",
        "publisher": "O",
        "published": "2025-05-01",
    }
    derived = uuid.uuid5(
        events_module._CONTENT_NAMESPACE,
        canonical_bytes({"type": "source.registered", "data": old_data}).decode(),
    )
    envelope = {
        "position": 1,
        "stream": "source-old",
        "version": 1,
        "event_id": str(derived),
        "type": "source.registered",
        "schema_version": 1,
        "data": old_data,
        # Not past: a time from the past is kept only with the hash the chain gives it.
        "recorded_at": format_time(utc_now() + dt.timedelta(minutes=1)),
        "actor": "seed",
        "meta": {},
        "hash": "0" * 64,
    }
    async with await EventLog.open(sqlite_url) as log:
        assert (await log.import_lines([json.dumps(envelope)], actor="import")).appended == 1
        other = {**envelope, "data": {**old_data, "publisher": "Other"}}
        with pytest.raises(BatchError) as caught:
            await log.import_lines([json.dumps(other)], actor="import")
        assert [(p.where, p.rule) for p in caught.value.problems] == [("line 1", "event_id")]


@pytest.mark.parametrize("separator", ["\u2028", "\u2029"])
async def test_one_text_of_lines_is_split_at_line_feeds_only(
    sqlite_url: str, separator: str
) -> None:
    """JSON strings may hold these as they are; str.splitlines() would split records there."""
    name = f"A{separator}B"
    record = {"type": "person.registered", "data": {"person": "n1", "name": name}}
    text = json.dumps(record, ensure_ascii=False) + "\r\n"
    async with await EventLog.open(sqlite_url) as log:
        assert (await log.import_lines(text, actor="cli")).appended == 1
        assert (await log.import_lines(text.encode(), actor="cli")).already_present == 1
        (stored,) = await log.events()
        assert stored.data["name"] == name


@pytest.mark.parametrize("lines", ["{}\r{}\r", b"{}\r{}\r"], ids=["text", "bytes"])
async def test_lines_ending_in_a_carriage_return_alone_are_named_as_such(
    sqlite_url: str, lines: str | bytes
) -> None:
    async with await EventLog.open(sqlite_url) as log:
        with pytest.raises(BatchError, match="end in a carriage return alone") as raised:
            await log.import_lines(lines, actor="cli")
        assert raised.value.problems[0].where == "line 1"
        assert await log.store.count() == 0


def test_an_integer_too_large_to_keep_is_refused_not_rounded() -> None:
    # orjson alone reads it as the float 1.2345678901234568e+29, silently
    record = {"type": "person.registered", "data": {"person": "big", "name": "B"}}
    big = json.dumps({**record, "meta": {"n": 123456789012345678901234567890}})
    with pytest.raises(BatchError) as raised:
        parse_lines([big])
    (problem,) = raised.value.problems
    assert problem.rule == "json"
    assert "integer 123456789012345678901234567890 is out of range" in str(problem)
    # the largest 64-bit values, and long digit runs inside strings, are read as they are
    fits = json.dumps({**record, "meta": {"n": 2**64 - 1, "text": "1" * 30}})
    ((stored,), _) = parse_lines([fits])
    assert stored.meta == {"n": 2**64 - 1, "text": "1" * 30}


async def test_a_large_refused_batch_is_decided_a_few_times_not_once_per_record(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each decision covers the whole batch: loading the streams it lacked one per decision
    made refusing 100,000 records take hours."""
    decisions = 0
    decide = EventLog._decide

    def counted(self: EventLog, *arguments: Any) -> Any:
        nonlocal decisions
        decisions += 1
        return decide(self, *arguments)

    monkeypatch.setattr(EventLog, "_decide", counted)
    lines = [line("org.registered", org=f"o-{index}", name=f"O {index}") for index in range(300)]
    lines.append(line("org.registered", org="late", name="L", parent="nowhere"))
    async with await EventLog.open(sqlite_url) as log:
        with pytest.raises(BatchError, match=r"line 301: .*'nowhere'"):
            await log.import_lines(lines, actor="test")
        assert await log.store.count() == 0
    assert decisions <= 3


class EndlessLine(io.RawIOBase):
    """An endless file of ``fill`` without a line feed (``/dev/zero``) that counts what is
    read."""

    def __init__(self, fill: bytes = b"\0") -> None:
        self.read_bytes = 0
        self.fill = fill

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.read_bytes > 512 * 1024 * 1024:
            raise AssertionError("read on and on")
        buffer[:] = self.fill * len(buffer)
        self.read_bytes += len(buffer)
        return len(buffer)


def test_a_line_too_long_is_refused_without_being_read_whole() -> None:
    long_line = b"x" * (3 * MAX_LINE_TEXT_BYTES) + b"\n"
    good = b'{"type": "person.registered", "data": {"person": "p", "name": "P"}}\n'
    lines = list(read_lines(io.BufferedReader(io.BytesIO(long_line + good))))
    assert len(lines) == 2 and MAX_LINE_TEXT_BYTES < len(lines[0]) <= MAX_LINE_TEXT_BYTES + 6
    assert lines[1] == good
    with pytest.raises(BatchError, match="line 1: line is larger") as refused:
        parse_lines(lines)
    assert len(refused.value.problems) == 1  # the second line is read and is fine

    endless = EndlessLine()
    (cut,) = read_lines(io.BufferedReader(endless))
    assert len(cut) == MAX_LINE_TEXT_BYTES + 6 and endless.read_bytes < 128 * 1024 * 1024


def test_the_size_limit_counts_neither_line_end_nor_byte_order_mark() -> None:
    bom = b"\xef\xbb\xbf"
    longest = bom + b"x" * MAX_LINE_TEXT_BYTES + b"\r\n"
    (line,) = read_lines(io.BufferedReader(io.BytesIO(longest)))
    assert line == longest  # read whole: the mark and the CRLF are not cut into
    with pytest.raises(BatchError) as at_the_limit:
        parse_lines([line])
    assert [problem.rule for problem in at_the_limit.value.problems] == ["json"]
    with pytest.raises(BatchError) as beyond:
        parse_lines([b"x" * (MAX_LINE_TEXT_BYTES + 1) + b"\n"])
    assert [problem.rule for problem in beyond.value.problems] == ["size"]


def test_a_line_that_is_not_json_is_told_where_and_why_in_the_writer_s_words() -> None:
    lines = [
        '{"type": "claim.reported", "data": {"claim": "gordon-acting-hsi",',  # wrapped
        '  "kind": "appointment"}}',
        "not json",
        '{"type": "person.registered",}',
        '{"type": "person.registered", "data": ' + "[" * 2000 + "]" * 2000 + "}",
    ]
    with pytest.raises(BatchError) as caught:
        parse_lines(lines)
    assert [str(problem) for problem in caught.value.problems] == [
        "line 1: not valid JSON: it ends before its JSON value does; each record must be on "
        "one line",
        "line 2: not valid JSON: unexpected content after document at column 9",
        "line 3: not valid JSON: unexpected text where a JSON value should be at column 1",
        "line 4: not valid JSON: trailing comma is not allowed at column 29",
        "line 5: not valid JSON: nested deeper than 64 levels",
    ]


def test_parsed_records_name_each_record_by_its_line_and_file() -> None:
    # given two files read, the first with a blank line
    person = '{{"type": "person.registered", "data": {{"person": "{0}", "name": "{0}"}}}}'
    first = parse_records([person.format("ann"), "", person.format("bob")])
    assert first.labels == ["line 1", "line 3"]
    # when they are taken in, named by file
    parsed = ParsedRecords()
    parsed.add(first, "a.jsonl")
    parsed.add(parse_records([person.format("cy")]), "b.jsonl")
    # then each record is named by its file and line, as a list of text would name it
    assert parsed.labels == ["a.jsonl line 1", "a.jsonl line 3", "b.jsonl line 1"]
    assert (parsed.labels[1], parsed.labels[-1]) == ("a.jsonl line 3", "b.jsonl line 1")
    assert list(parsed.labels)[1:] == parsed.labels[1:] == ["a.jsonl line 3", "b.jsonl line 1"]
    parsed.labels[0] = "record 0"
    parsed.labels.append("record 3")
    assert parsed.labels == ["record 0", "a.jsonl line 3", "b.jsonl line 1", "record 3"]
    assert parsed.labels.pop() == "record 3" and len(parsed.labels) == len(parsed) == 3


async def test_records_put_into_parsed_records_by_hand_are_checked_when_appended(
    seeded_log: EventLog,
) -> None:
    # given records parse_records read, and one built by hand whose stored_as is not its own
    parsed = parse_records(
        [json.dumps({"type": "person.registered", "data": {"person": "ann-lee", "name": "A"}})]
    )
    forged = parse_record_fields(
        {"type": "person.registered", "data": {"person": "bob-roe", "name": "B"}}
    )._replace(stored_as=(1, {"person": "someone-else", "name": "B"}))
    before = await seeded_log.store.head()
    # when the forged record is put among the parsed ones, or appended on its own
    parsed.records.append(forged)
    parsed.labels.append("line 2")
    for batch in (parsed, ParsedRecords([forged], ["record 0"])):
        # then it is checked as a Record built by hand is, and nothing is written
        with pytest.raises(BatchError, match=r"(line 2|record 0).*stored_as"):
            await seeded_log.append_parsed(batch, actor="test")
        assert await seeded_log.store.head() == before
    # while the parsed records alone append as they are
    parsed.records.pop()
    parsed.labels.pop()
    assert (await seeded_log.append_parsed(parsed, actor="test")).appended == 1


async def test_a_move_under_a_deep_organisation_loads_its_ancestors_at_once(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a chain of 60 organisations stored, and a writer that has loaded none of them
    async with await EventLog.open(sqlite_url) as writer:
        chain = [OrgRegistered(org="c0", name="C 0"), OrgRegistered(org="lone", name="Lone")]
        chain += [
            OrgRegistered(org=f"c{i}", name=f"C {i}", parent=f"c{i - 1}") for i in range(1, 60)
        ]
        await writer.append_events(chain, actor="t")
    async with await EventLog.open(sqlite_url) as this:
        decide = this._decide
        decided = 0

        async def counted(*args: Any) -> Any:
            nonlocal decided
            decided += 1
            return await decide(*args)

        monkeypatch.setattr(this, "_decide", counted)
        # when an organisation is moved under the deepest one
        await this.append_events([OrgUpdated(org="lone", parent="c59")], actor="t")
        # then the batch is decided a few times, not once per level of the chain
        assert decided <= 3
        # and a move that would make a cycle through the chain is still refused
        with pytest.raises(BatchError) as caught:
            await this.append_events([OrgUpdated(org="c0", parent="lone")], actor="t")
        assert caught.value.problems[0].rule == "org_cycle"
