"""`leaderlog schema` against what import accepts: a record the schema lets through must not
be refused whatever the log holds, and a record the program accepts must pass the schema.

Given the seeded log, when a record is checked against the schema and imported, then both
give the same answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from leaderlog.events import event_schema
from tests.conftest import SEEDS, invoke, ok

SOURCE = "fox-ice-shakeup-2025-05"
# A live appointment (no cause) and a live departure (cause retirement) from the seeds.
APPOINTMENT = "fox-ice-shakeup-2025-05-gordon-hsi-acting"
DEPARTURE = "fox-ice-shakeup-2025-05-genalo-retirement"

REPORTED: dict[str, Any] = {
    "claim": "new-claim",
    "source": SOURCE,
    "kind": "departure",
    "person": "derek-gordon",
    "post": "ice-hsi-ead",
    "capacity": "acting",
    "modality": "expected",
    "attribution": {"kind": "anonymous", "parties": ["ICE"]},
}


def person(**extra: Any) -> dict[str, Any]:
    return {"type": "person.registered", "data": {"person": "new-person", "name": "N"}, **extra}


def reported(**changes: Any) -> dict[str, Any]:
    return {"type": "claim.reported", "data": {**REPORTED, **changes}}


def effective(date: str) -> dict[str, Any]:
    return reported(effective={"date": date})


def corrected(claim: str, **changes: Any) -> dict[str, Any]:
    data = {"claim": claim, "changes": changes, "reason": "The article was misread."}
    return {"type": "claim.corrected", "data": data}


def source(url: str) -> dict[str, Any]:
    data = {"source": "new-source", "url": url, "publisher": "Paper"}
    return {"type": "source.registered", "data": data}


def named(name: str) -> dict[str, Any]:
    return person(data={"person": "new-person", "name": name})


def org_updated(**changes: Any) -> dict[str, Any]:
    return {"type": "org.updated", "data": {"org": "ice-hsi", **changes}}


# --- given / when / then ----------------------------------------------------------------------


@pytest.fixture
def seeded(sqlite_url: str) -> str:
    for seed_file in sorted(SEEDS.glob("*.jsonl")):
        ok(invoke(sqlite_url, "import", str(seed_file)))
    return sqlite_url


def schema_accepts(record: dict[str, Any]) -> bool:
    jsonschema_rs = pytest.importorskip("jsonschema_rs")
    # Formats are annotations only in draft 2020-12: a validator need not check them.
    return bool(jsonschema_rs.Draft202012Validator(event_schema()).is_valid(record))


def import_accepts(url: str, record: dict[str, Any], tmp_path: Path) -> bool:
    records = tmp_path / "record.jsonl"
    records.write_text(json.dumps(record) + "\n", encoding="utf-8")
    return invoke(url, "import", str(records)).exit_code == 0


REFUSED_WHATEVER_THE_LOG_HOLDS = [
    pytest.param(person(event_id="not-a-uuid"), id="event_id not a uuid"),
    pytest.param(person(event_id="00000000-0000-0000-0000-000000000000"), id="nil event_id"),
    pytest.param(person(event_id="ffffffff-ffff-ffff-ffff-ffffffffffff"), id="max event_id"),
    pytest.param(person(expected_version=2**64), id="expected_version past 64 bits"),
    pytest.param({"type": "org.updated", "data": {"org": "ice"}}, id="org.updated of nothing"),
    pytest.param({"type": "post.updated", "data": {"post": "ice-hsi-ead"}}, id="post.updated"),
    pytest.param({"type": "person.updated", "data": {"person": "derek-gordon"}}, id="person"),
    pytest.param(corrected(APPOINTMENT), id="correction of nothing"),
    pytest.param(reported(kind="appointment", cause="retirement"), id="cause on appointment"),
    pytest.param(reported(kind="incumbency", cause="unknown"), id="cause on incumbency"),
    pytest.param(effective("2025-02-30"), id="february 30"),
    pytest.param(effective("2023-02-29"), id="february 29 of a common year"),
    pytest.param(effective("1900-02-29"), id="february 29 of a century"),
    pytest.param(effective("2025-04-31"), id="april 31"),
    pytest.param(effective("2025-05-00"), id="day 0"),
    pytest.param(effective("2025-05-32"), id="day 32"),
    pytest.param(effective("2025-13"), id="month 13"),
    pytest.param(effective("2025-00"), id="month 0"),
    pytest.param(effective("0999"), id="year 999"),
    pytest.param(corrected(APPOINTMENT, kind=None), id="kind cleared"),
    pytest.param(corrected(APPOINTMENT, person=None), id="person cleared"),
    pytest.param(corrected(APPOINTMENT, post=None), id="post cleared"),
    pytest.param(corrected(APPOINTMENT, capacity=None), id="capacity cleared"),
    pytest.param(corrected(APPOINTMENT, modality=None), id="modality cleared"),
    pytest.param(corrected(APPOINTMENT, attribution=None), id="attribution cleared"),
    pytest.param(
        corrected(DEPARTURE, kind="appointment", cause="retirement"),
        id="correction to an appointment keeping its cause",
    ),
    pytest.param(org_updated(name=None), id="org name cleared"),
    pytest.param(org_updated(labels=None), id="org labels cleared"),
    pytest.param(org_updated(name=None, parent=None), id="org name cleared beside its parent"),
    # an address with no host: no feed or page could link to it
    pytest.param(source("https:///example.org/story"), id="url with a slash too many"),
    pytest.param(source("https://?story=1"), id="url with a query and no host"),
    pytest.param(source("http://#top"), id="url with a fragment and no host"),
    # control characters and noncharacters, in an address as in any text
    pytest.param(source("https://example.org/a\x7fb"), id="url with DEL"),
    pytest.param(source("https://example.org/a\x00b"), id="url with NUL"),
    pytest.param(source("https://example.org/a\x80b"), id="url with a C1 control"),
    pytest.param(source("https://example.org/a\ufffeb"), id="url with a noncharacter"),
    # a byte order mark: whitespace to the schema's ECMA \s, not to Python's strip
    pytest.param(source("https://example.org/a\ufeffb"), id="url with a byte order mark"),
    pytest.param(source("\ufeffhttps://example.org/a"), id="url after a byte order mark"),
    pytest.param(source("https://example.org/a\ufeff"), id="url before a byte order mark"),
    # bidirectional formatting characters, which RFC 3987 forbids in addresses
    pytest.param(
        source("https://example.org/\u202egpj.exe"), id="url with a right-to-left override"
    ),
    pytest.param(source("https://exa\u200emple.org/"), id="url host with a left-to-right mark"),
    pytest.param(source("https://\u2066example.org/"), id="url host after an isolate"),
    # text checked as given, not after its ends are stripped
    pytest.param(named("N" * 300 + "\n"), id="300-character name and a newline"),
    pytest.param(named(" " + "N" * 300), id="300-character name after a space"),
    pytest.param(named("N\x0b"), id="name ending in a vertical tab"),
    pytest.param(named("N\x85"), id="name ending in NEL"),
]


@pytest.mark.parametrize("record", REFUSED_WHATEVER_THE_LOG_HOLDS)
def test_the_schema_refuses_what_import_always_refuses(
    seeded: str, record: dict[str, Any], tmp_path: Path
) -> None:
    assert not import_accepts(seeded, record, tmp_path)
    assert not schema_accepts(record)


ACCEPTED = [
    pytest.param(person(event_id="0196f3c2-7d1e-7a3b-9c4d-5e6f7a8b9c0d"), id="uuid7 event_id"),
    pytest.param(reported(cause="retirement"), id="cause on departure"),
    pytest.param(reported(kind="appointment", cause=None), id="null cause on appointment"),
    pytest.param(effective("2024-02-29"), id="february 29 of a leap year"),
    pytest.param(effective("2000-02-29"), id="february 29 of 2000"),
    pytest.param(effective("2025-12-31"), id="december 31"),
    pytest.param(effective("2025-04-30"), id="april 30"),
    pytest.param(effective("1000"), id="year 1000"),
    pytest.param(effective("9999-12"), id="december 9999"),
    pytest.param(corrected(DEPARTURE, cause=None), id="cause cleared"),
    pytest.param(corrected(DEPARTURE, kind="appointment", cause=None), id="cause cleared too"),
    pytest.param(corrected(DEPARTURE, kind="departure", cause="removal"), id="new cause"),
    pytest.param(corrected(APPOINTMENT, quote=None, locator=None), id="quote cleared"),
    pytest.param(corrected(APPOINTMENT, effective=None), id="effective cleared"),
    pytest.param(org_updated(parent=None), id="org parent cleared"),
    pytest.param(org_updated(short_name=None), id="org short name cleared"),
    pytest.param(org_updated(parent=None, short_name=None), id="org parent and short name"),
    pytest.param(source("https://example.org/story?id=1#top"), id="url"),
    pytest.param(source("http://[2001:db8::1]:8080/x"), id="url with an IPv6 host"),
    # surrounding spaces, which import strips
    pytest.param(source(" https://example.org/a "), id="url between spaces"),
    pytest.param(named(" " + "N" * 298 + "\n"), id="name of 300 characters with its ends"),
]


@pytest.mark.parametrize("record", ACCEPTED)
def test_the_schema_accepts_what_import_accepts(
    seeded: str, record: dict[str, Any], tmp_path: Path
) -> None:
    assert import_accepts(seeded, record, tmp_path)
    assert schema_accepts(record)
