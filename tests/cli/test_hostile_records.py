"""Hostile input to ``leaderlog import``: refused with the line and the rule, the log unchanged.

Every case is imported into a copy of one seeded database (one claim already retracted), then
``leaderlog verify --json`` must show the same count and head hash as before.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from leaderlog.cli import main
from leaderlog.events import content_event_id, parse_event, parse_record
from leaderlog.log import EventLog, load_seeds

ROOT = Path(__file__).resolve().parents[2]
SEED_FILE = ROOT / "seeds" / "ice-leadership-2025-05.jsonl"

SOURCE = "fox-ice-shakeup-2025-05"
LIVE_CLAIM = f"{SOURCE}-hammer-hsi-body"
RETRACTED_CLAIM = f"{SOURCE}-genalo-ero-caption"
INCUMBENCY_CLAIM = f"{SOURCE}-noem-dhs-secretary"


def record(event_type: str, data: dict[str, Any], **fields: Any) -> str:
    return json.dumps({"type": event_type, "data": data, **fields}, ensure_ascii=False)


def person(slug: str = "tom-homan", **data: Any) -> str:
    return record("person.registered", {"person": slug, "name": "Tom Homan", **data})


def claim_data(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "claim": "homan-border-czar",
        "source": SOURCE,
        "kind": "appointment",
        "person": "derek-gordon",
        "post": "ice-hsi-ead",
        "capacity": "acting",
        "modality": "expected",
        "attribution": {"kind": "anonymous", "parties": ["White House"]},
        "quote": "expected to take over",
        "locator": "body",
    }
    data.update(changes)
    return {name: value for name, value in data.items() if value is not ...}


def claim(**changes: Any) -> str:
    return record("claim.reported", claim_data(**changes))


def confirm(claim_id: str, **data: Any) -> str:
    return record("claim.confirmed", {"claim": claim_id, "source": SOURCE, **data})


def retract(claim_id: str, reason: str = "The outlet withdrew it.") -> str:
    return record("claim.retracted", {"claim": claim_id, "reason": reason})


def seed_line(number: int) -> dict[str, Any]:
    line: dict[str, Any] = json.loads(
        SEED_FILE.read_text(encoding="utf-8").splitlines()[number - 1]
    )
    return line


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def export_envelope(**changes: Any) -> str:
    envelope: dict[str, Any] = {
        "position": 1,
        "stream": "person-tom-homan",
        "version": 1,
        "event_id": str(uuid.uuid4()),
        "type": "person.registered",
        "schema_version": 1,
        "data": {"person": "tom-homan", "name": "Tom Homan"},
        "recorded_at": "2025-05-29T12:00:00.000000Z",
        "actor": "seed",
        "meta": {},
        "hash": "0" * 64,
    }
    envelope.update(changes)
    return json.dumps(envelope)


@dataclass(frozen=True)
class Hostile:
    name: str
    lines: list[str | bytes]
    line: int
    rule: str

    def content(self) -> bytes:
        return (
            b"\n".join(
                line if isinstance(line, bytes) else line.encode("utf-8") for line in self.lines
            )
            + b"\n"
        )


GOOD = person()  # a valid first line: it must not be written either

CASES = [
    # --- not a record at all
    Hostile("not-json", [GOOD, "this is not json"], 2, "json"),
    Hostile("truncated-json", [GOOD, person("tom-2")[:-7]], 2, "json"),
    Hostile(
        "invalid-utf8",
        [GOOD, b'{"type":"person.registered","data":{"name":"\xff\xfe"}}'],
        2,
        "json",
    ),
    Hostile("latin-1-line", [GOOD, person("t2", name="Zo\u00eb").encode("latin-1")], 2, "json"),
    Hostile("utf-16-file", [GOOD.encode("utf-16"), person("t2").encode("utf-16-le")], 1, "json"),
    Hostile(
        "byte-order-mark-on-a-later-line",
        [GOOD, b"\xef\xbb\xbf" + person("t2").encode("utf-8")],
        2,
        "json",
    ),
    Hostile("raw-nul-in-string", [GOOD, '{"type":"x","data":{"name":"a\x00b"}}'], 2, "json"),
    Hostile("array-instead-of-object", [GOOD, json.dumps([json.loads(person("t2"))])], 2, "schema"),
    Hostile("number-instead-of-object", [GOOD, "42"], 2, "schema"),
    Hostile("null-instead-of-object", [GOOD, "null"], 2, "schema"),
    Hostile("deeply-nested-arrays", [GOOD, nested(10_000)], 2, "json"),
    Hostile(
        # The second reading (for long integers) must not recurse past Python's limit.
        "nested-990-deep-around-a-long-number",
        [
            GOOD,
            '{"type":"person.registered","data":{"person":"t2","name":"T"},"meta":{"x":'
            + "[" * 990
            + '"1234567890123456789012"'
            + "]" * 990
            + "}}",
        ],
        2,
        "json",
    ),
    Hostile(
        # Readers disagree on which one counts: a checking proxy could see another record.
        "a-name-twice-in-one-object",
        [GOOD, '{"type":"person.registered","data":{"person":"t2","person":"t3","name":"T"}}'],
        2,
        "json",
    ),
    Hostile(
        "type-given-twice",
        [
            GOOD,
            '{"type":"org.registered","type":"person.registered","data":{"person":"t2",'
            '"name":"T"}}',
        ],
        2,
        "json",
    ),
    Hostile(
        "deeply-nested-data",
        [GOOD, '{"type":"person.registered","data":' + '{"a":' * 5000 + "1" + "}" * 5001],
        2,
        "json",
    ),
    Hostile(
        "meta-nested-300-deep",
        [
            GOOD,
            '{"type":"person.registered","data":{"person":"t2","name":"T"},"meta":'
            + '{"a":' * 300
            + "1"
            + "}" * 301,
        ],
        2,
        "json",
    ),
    # --- record shape
    Hostile("unknown-type", [GOOD, record("person.deleted", {"person": "tom-homan"})], 2, "type"),
    Hostile(
        "missing-type", [GOOD, json.dumps({"data": {"person": "x", "name": "X"}})], 2, "schema"
    ),
    Hostile("missing-data", [GOOD, json.dumps({"type": "person.registered"})], 2, "schema"),
    Hostile(
        "data-not-object",
        [GOOD, json.dumps({"type": "person.registered", "data": "x"})],
        2,
        "schema",
    ),
    Hostile(
        "data-null", [GOOD, json.dumps({"type": "person.registered", "data": None})], 2, "schema"
    ),
    Hostile(
        "extra-record-field",
        [GOOD, record("person.registered", {"person": "t2", "name": "T"}, colour="blue")],
        2,
        "schema",
    ),
    Hostile("extra-data-field", [GOOD, person("t2", colour="blue")], 2, "schema"),
    Hostile("type-inside-data", [GOOD, person("t2", type="person.registered")], 2, "schema"),
    Hostile("missing-required-field", [GOOD, claim(modality=...)], 2, "schema"),
    Hostile("empty-update", [GOOD, record("org.updated", {"org": "ice"})], 2, "schema"),
    Hostile(
        "non-uuid-event-id", [GOOD, person("t2")[:-1] + ', "event_id": "not-a-uuid"}'], 2, "schema"
    ),
    Hostile(
        # Many writers send it for "no id": the first would take it, the rest get conflicts.
        "nil-uuid-event-id",
        [GOOD, person("t2")[:-1] + ', "event_id": "00000000-0000-0000-0000-000000000000"}'],
        2,
        "event_id",
    ),
    Hostile(
        "braced-event-id",
        [GOOD, person("t2")[:-1] + ', "event_id": "{12345678-1234-4234-8234-123456789abc}"}'],
        2,
        "schema",
    ),
    Hostile(
        "event-id-as-a-number",
        [GOOD, person("t2")[:-1] + ', "event_id": 1234567890123456789}'],
        2,
        "schema",
    ),
    Hostile(
        "meta-not-object",
        [GOOD, record("person.registered", {"person": "t2", "name": "T"}, meta=[1])],
        2,
        "schema",
    ),
    Hostile(
        "oversized-meta",
        [GOOD, record("person.registered", {"person": "t2", "name": "T"}, meta={"x": "y" * 5000})],
        2,
        "size",
    ),
    # --- enumerations
    Hostile("bad-kind", [GOOD, claim(kind="promotion")], 2, "schema"),
    Hostile("bad-capacity", [GOOD, claim(capacity="temporary")], 2, "schema"),
    Hostile("bad-cause", [GOOD, claim(kind="departure", cause="fired")], 2, "schema"),
    Hostile("bad-modality", [GOOD, claim(modality="certain")], 2, "schema"),
    Hostile("bad-attribution-kind", [GOOD, claim(attribution={"kind": "secret"})], 2, "schema"),
    Hostile("bad-locator", [GOOD, claim(locator="footnote")], 2, "schema"),
    Hostile(
        "bad-outcome",
        [GOOD, record("comment.requested", {"source": SOURCE, "org": "ice", "outcome": "ignored"})],
        2,
        "schema",
    ),
    # --- slugs
    Hostile("slug-uppercase", [GOOD, person("Tom-Homan")], 2, "schema"),
    Hostile("slug-65-chars", [GOOD, person("t" * 65)], 2, "schema"),
    Hostile("slug-leading-dash", [GOOD, person("-tom")], 2, "schema"),
    Hostile("slug-unicode", [GOOD, person("tóm-homan")], 2, "schema"),
    Hostile("slug-with-space", [GOOD, claim(post="ice hsi ead")], 2, "schema"),
    # --- dates
    Hostile("date-february-30", [GOOD, claim(effective={"date": "2025-02-30"})], 2, "schema"),
    Hostile("date-month-13", [GOOD, claim(effective={"date": "2025-13"})], 2, "schema"),
    Hostile("date-words", [GOOD, claim(effective={"date": "soon"})], 2, "schema"),
    Hostile(
        "date-old-shape-in-new-record",
        [
            GOOD,
            record(
                "source.registered",
                {
                    "source": "s2",
                    "url": "https://x.org/a",
                    "publisher": "P",
                    "published": "2025-05-29",
                },
            ),
        ],
        2,
        "schema",
    ),
    # --- text
    Hostile("quote-6000-chars", [GOOD, claim(quote="q" * 6000)], 2, "schema"),
    Hostile("line-over-64-kib", [GOOD, person("t2", aliases=["a" * 200] * 400)], 2, "size"),
    Hostile("nul-in-text", [GOOD, person("t2", name="Tom\u0000Homan")], 2, "schema"),
    Hostile("escape-in-text", [GOOD, claim(quote="\u001b[2J\u001b[31mrewritten")], 2, "schema"),
    Hostile("next-line-in-text", [GOOD, claim(quote="expected\u0085to take over")], 2, "schema"),
    Hostile("noncharacter-in-text", [GOOD, claim(quote="x \ufffe y")], 2, "schema"),
    Hostile("plane-noncharacter", [GOOD, person("t2", name="Tom\U0010ffff")], 2, "schema"),
    Hostile(
        "javascript-url",
        [
            GOOD,
            record(
                "source.registered",
                {"source": "s2", "url": "javascript:alert(1)", "publisher": "P"},
            ),
        ],
        2,
        "schema",
    ),
    # --- versions and ids
    Hostile(
        "expected-version-word",
        [GOOD, person("t2")[:-1] + ', "expected_version": "latest"}'],
        2,
        "expected_version",
    ),
    Hostile(
        "expected-version-negative",
        [GOOD, person("t2")[:-1] + ', "expected_version": -1}'],
        2,
        "expected_version",
    ),
    Hostile(
        "expected-version-stale",
        [
            GOOD,
            record(
                "person.updated",
                {"person": "derek-gordon", "name": "D. Gordon"},
                expected_version=7,
            ),
        ],
        2,
        "expected_version",
    ),
    Hostile(
        "expected-version-no-stream-on-existing",
        [
            GOOD,
            record(
                "person.updated",
                {"person": "derek-gordon", "name": "D. Gordon"},
                expected_version="no_stream",
            ),
        ],
        2,
        "expected_version",
    ),
    Hostile(
        "event-id-reused-with-other-content",
        [
            GOOD,
            record(
                "person.registered",
                {"person": "someone-else", "name": "Someone Else"},
                event_id=str(parse_record(seed_line(13)).event_id),
            ),
        ],
        2,
        "event_id",
    ),
    Hostile(
        # The id a later record will be given, squatted before it arrives.
        "content-derived-id-of-a-record-not-yet-imported",
        [
            GOOD,
            record(
                "org.registered",
                {"org": "zzz", "name": "Squatter"},
                event_id=str(
                    content_event_id(parse_event("org.registered", {"org": "x", "name": "X"}))
                ),
            ),
        ],
        2,
        "event_id",
    ),
    Hostile(
        "event-id-twice-in-file",
        [
            GOOD,
            person("t2")[:-1] + ', "event_id": "00000000-0000-4000-8000-00000000000a"}',
            person("t3")[:-1] + ', "event_id": "00000000-0000-4000-8000-00000000000a"}',
        ],
        3,
        "event_id",
    ),
    Hostile(
        "export-with-wrong-stream",
        [GOOD, export_envelope(stream="person-someone-else")],
        2,
        "stream",
    ),
    Hostile(
        "export-from-the-future", [GOOD, export_envelope(schema_version=99)], 2, "schema_version"
    ),
    Hostile(
        # An envelope keeps its id: not one derived from another record's content.
        "export-envelope-squatting-a-content-derived-id",
        [
            GOOD,
            export_envelope(
                event_id=str(
                    content_event_id(parse_event("person.registered", {"person": "x", "name": "X"}))
                )
            ),
        ],
        2,
        "event_id",
    ),
    Hostile("export-position-not-a-number", [GOOD, export_envelope(position="x")], 2, "schema"),
    Hostile("export-hash-not-a-hash", [GOOD, export_envelope(hash=5)], 2, "schema"),
    # --- domain rules
    Hostile("unknown-source", [GOOD, claim(source="cnn-2025-05")], 2, "reference"),
    Hostile("unknown-person", [GOOD, claim(person="tom-homan-jr")], 2, "reference"),
    Hostile("unknown-post", [GOOD, claim(post="border-czar")], 2, "reference"),
    Hostile(
        "unknown-org-parent",
        [GOOD, record("org.registered", {"org": "cbp", "name": "CBP", "parent": "doj"})],
        2,
        "reference",
    ),
    Hostile("unknown-claim", [GOOD, confirm("no-such-claim")], 2, "reference"),
    Hostile(
        "org-own-parent",
        [GOOD, record("org.registered", {"org": "cbp", "name": "CBP", "parent": "cbp"})],
        2,
        "schema",
    ),
    Hostile(
        "org-cycle",
        [GOOD, record("org.updated", {"org": "dhs", "parent": "ice-hsi"})],
        2,
        "org_cycle",
    ),
    Hostile("claim-reported-again", [GOOD, claim(claim=LIVE_CLAIM)], 2, "unique"),
    Hostile(
        "claim-reported-twice-in-file", [GOOD, claim(), claim(quote="said twice")], 3, "unique"
    ),
    Hostile("person-registered-again", [GOOD, person("derek-gordon")], 2, "unique"),
    Hostile("cause-on-appointment", [GOOD, claim(cause="retirement")], 2, "schema"),
    Hostile(
        "cause-added-by-correction",
        [
            GOOD,
            record(
                "claim.corrected",
                {"claim": INCUMBENCY_CLAIM, "changes": {"cause": "removal"}, "reason": "r"},
            ),
        ],
        2,
        "cause_kind",
    ),
    Hostile(
        "correction-clears-a-person",
        [
            GOOD,
            record(
                "claim.corrected",
                {"claim": LIVE_CLAIM, "changes": {"person": None}, "reason": "r"},
            ),
        ],
        2,
        "correction",
    ),
    Hostile(
        "correction-clears-kind-and-attribution",
        [
            GOOD,
            record(
                "claim.corrected",
                {
                    "claim": LIVE_CLAIM,
                    "changes": {"kind": None, "attribution": None},
                    "reason": "r",
                },
            ),
        ],
        2,
        "correction",
    ),
    Hostile(
        "confirm-after-retract-in-file",
        [GOOD, retract(LIVE_CLAIM), confirm(LIVE_CLAIM)],
        3,
        "claim_live",
    ),
    Hostile("confirm-a-retracted-claim", [GOOD, confirm(RETRACTED_CLAIM)], 2, "claim_live"),
    Hostile(
        "retract-twice-in-file",
        [GOOD, retract(LIVE_CLAIM), retract(LIVE_CLAIM, "Again.")],
        3,
        "claim_live",
    ),
    Hostile(
        "retract-a-retracted-claim", [GOOD, retract(RETRACTED_CLAIM, "Again.")], 2, "claim_live"
    ),
    Hostile(
        "dispute-a-retracted-claim",
        [GOOD, record("claim.disputed", {"claim": RETRACTED_CLAIM, "reason": "r"})],
        2,
        "claim_live",
    ),
    Hostile("good-line-then-bad-line", [GOOD, person("t2"), person("t3", name="")], 3, "schema"),
    Hostile("bad-line-after-blank-lines", ["", GOOD, "   ", "{"], 4, "json"),
]


@pytest.fixture(scope="module")
def seeded_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seeds, plus one retracted claim; built once and copied for every case."""
    path = tmp_path_factory.mktemp("seeded") / "leaderlog.db"

    async def build() -> None:
        async with await EventLog.open(f"sqlite:///{path}") as log:
            await load_seeds(log, SEED_FILE.parent)
            retraction = parse_event(
                "claim.retracted", {"claim": RETRACTED_CLAIM, "reason": "The caption was wrong."}
            )
            await log.append_events([retraction], actor="test")

    asyncio.run(build())
    return path


@pytest.fixture
def database(seeded_database: Path, tmp_path: Path) -> str:
    copy = tmp_path / "leaderlog.db"
    shutil.copyfile(seeded_database, copy)
    return f"sqlite:///{copy}"


def verify(runner: CliRunner, url: str) -> dict[str, Any]:
    result = runner.invoke(main, ["--db", url, "verify", "--json"])
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    assert report["ok"] is True
    return report


def schema(url: str) -> list[tuple[str, str]]:
    connection = sqlite3.connect(url.removeprefix("sqlite:///"))
    try:
        return sorted(connection.execute("SELECT type, name FROM sqlite_master").fetchall())
    finally:
        connection.close()


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 30
    assert len({case.name for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_hostile_input_is_refused_and_changes_nothing(
    case: Hostile, database: str, tmp_path: Path
) -> None:
    runner = CliRunner()
    before = verify(runner, database)
    assert before["count"] == 30
    tables = schema(database)

    path = tmp_path / "hostile.jsonl"
    path.write_bytes(case.content())
    result = runner.invoke(main, ["--db", database, "import", str(path)])

    assert result.exit_code != 0
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert f"line {case.line}:" in result.stderr
    assert f"[rule: {case.rule}]" in result.stderr
    # Every refusal says so in the same words, whatever found it (reading, rules or store).
    assert result.stderr.startswith("error: 1 problem(s), nothing written\n"), result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert verify(runner, database) == before
    assert schema(database) == tables  # not even a table of its own (the write tokens')
