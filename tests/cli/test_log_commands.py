"""The log commands as a user runs them: the installed ``leaderlog`` in a child process.

Checks that need no process boundary run the same commands in-process (``CliRunner``).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, BinaryIO, cast

import pytest
from click.testing import CliRunner, Result
from rich.console import Console

import leaderlog.cli.token_commands as token_commands
from leaderlog._json import dumps
from leaderlog.cli import _app, _terminal, log_commands, main
from leaderlog.cli._app import _WholeWrites, interruptible, reported
from leaderlog.errors import (
    ConcurrencyError,
    DuplicateEventError,
    Interrupted,
    LeaderlogError,
    RecordedAtRefused,
    RecordError,
)
from leaderlog.events import event_schema, format_time, parse_record
from leaderlog.log import EventLog, parse_records
from leaderlog.store.base import GENESIS_HASH, chain_hash, envelope_bytes, utc_now
from tests.cli.full_disk import to_a_full_disk
from tests.cli.terminal import drawn_on_a_terminal

ROOT = Path(__file__).resolve().parents[2]
SEED_FILE = ROOT / "seeds" / "ice-leadership-2025-05.jsonl"
LEADERLOG = Path(sys.executable).parent / "leaderlog"
ENVELOPE_KEYS = {
    "position",
    "stream",
    "version",
    "event_id",
    "type",
    "schema_version",
    "data",
    "recorded_at",
    "actor",
    "meta",
    "hash",
}


def leaderlog(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    environment = {name: value for name, value in os.environ.items() if name != "LEADERLOG_DB"}
    environment.update(env or {})
    return subprocess.run(
        [str(LEADERLOG), *args],
        cwd=cwd,
        env=environment,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_log_flow(tmp_path: Path) -> None:
    """Import twice, list, verify, export, and import the export into another database."""
    first = leaderlog("import", str(SEED_FILE), cwd=tmp_path)
    assert ok(first) == "appended 29, already present 0\n"
    assert (tmp_path / "leaderlog.db").is_file()  # the default database
    second = leaderlog("import", str(SEED_FILE), cwd=tmp_path)
    assert ok(second) == "appended 0, already present 29\n"

    envelopes = json.loads(ok(leaderlog("events", "--json", cwd=tmp_path)))
    check_envelopes(envelopes)
    head = envelopes[-1]["hash"]
    assert ok(leaderlog("verify", cwd=tmp_path)) == f"chain OK, 29 events, head hash {head}\n"

    exported = ok(leaderlog("export", cwd=tmp_path))
    (tmp_path / "log.jsonl").write_text(exported, encoding="utf-8")
    assert [json.loads(line) for line in exported.splitlines()] == envelopes

    other = ["--db", "sqlite:///other.db"]
    imported = leaderlog(*other, "import", "log.jsonl", cwd=tmp_path)
    assert ok(imported) == "appended 29, already present 0\n"
    copied = json.loads(ok(leaderlog(*other, "events", "--json", cwd=tmp_path)))
    assert [(e["event_id"], e["hash"]) for e in copied] == [
        (e["event_id"], e["hash"]) for e in envelopes
    ]
    assert copied == envelopes  # times and actors travel too
    verified = ok(leaderlog(*other, "verify", cwd=tmp_path))
    assert verified == f"chain OK, 29 events, head hash {head}\n"

    piped = leaderlog("--db", "sqlite:///piped.db", "import", "-", cwd=tmp_path, stdin=exported)
    assert ok(piped) == "appended 29, already present 0\n"
    assert ok(leaderlog("--db", "sqlite:///piped.db", "export", cwd=tmp_path)) == exported


def check_envelopes(envelopes: list[dict[str, Any]]) -> None:
    assert [envelope["position"] for envelope in envelopes] == list(range(1, 30))
    seeds = [json.loads(line) for line in SEED_FILE.read_text(encoding="utf-8").splitlines()]
    versions: dict[str, int] = {}
    for envelope, seed in zip(envelopes, seeds, strict=True):
        assert set(envelope) == ENVELOPE_KEYS
        record = parse_record(seed)
        assert envelope["event_id"] == str(record.event_id)  # content-derived
        assert (envelope["type"], envelope["data"]) == (seed["type"], record.event.data())
        assert (envelope["stream"], envelope["actor"]) == (record.stream, "cli")
        versions[record.stream] = versions.get(record.stream, 0) + 1
        assert envelope["version"] == versions[record.stream]
        assert re.fullmatch(r"[0-9a-f]{64}", envelope["hash"])
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", envelope["recorded_at"])


def test_a_bad_record_on_stdin_names_line_and_rule(tmp_path: Path) -> None:
    lines = [
        json.dumps({"type": "person.registered", "data": {"person": "tom-homan", "name": "T"}}),
        json.dumps({"type": "claim.confirmed", "data": {"claim": "nope", "source": "nope"}}),
    ]
    result = leaderlog("import", "-", cwd=tmp_path, stdin="\n".join(lines) + "\n")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "nothing written" in result.stderr
    assert "line 2:" in result.stderr and "[rule: reference]" in result.stderr
    assert "Traceback" not in result.stderr
    # and the database it would have created does not exist, so verify says there is none
    assert list(tmp_path.iterdir()) == []
    assert "does not exist" in leaderlog("verify", cwd=tmp_path).stderr


def test_schema_is_json(tmp_path: Path) -> None:
    schema = json.loads(ok(leaderlog("schema", cwd=tmp_path)))
    assert schema == json.loads(json.dumps(event_schema()))
    assert len(schema["oneOf"]) == 13
    assert not (tmp_path / "leaderlog.db").exists()  # needs no database


def test_leaderlog_db_from_the_environment(tmp_path: Path) -> None:
    env = {"LEADERLOG_DB": "sqlite:///from-env.db"}
    assert ok(leaderlog("import", str(SEED_FILE), cwd=tmp_path, env=env)).startswith("appended 29")
    assert (tmp_path / "from-env.db").is_file()
    assert not (tmp_path / "leaderlog.db").exists()
    # --db wins over the environment.
    explicit = leaderlog("--db", "sqlite:///explicit.db", "verify", cwd=tmp_path, env=env)
    assert explicit.returncode == 1
    assert explicit.stderr.startswith(f"error: database {tmp_path / 'explicit.db'} does not exist")


@pytest.mark.parametrize(
    ("url", "words", "by_env"),
    [
        ("mysql://localhost/leaderlog", "unsupported database URL", False),
        ("sqlite:/leaderlog.db", "sqlite:///", False),
        ("postgresq://localhost/leaderlog", "unsupported database URL", True),
        ("", "the database URL is empty", False),
        ("sqlite:///x.db?mode=ro", "SQLite URLs take no query parameters", False),
        ("sqlite:///:memory:", "an in-memory SQLite database is not supported", True),
        ("postgresql://postgres@127.0.0.1:5432", "connects to no particular database", False),
        ("postgresql:/postgres@127.0.0.1/test", "postgresql: must go on with ://", False),
        ("file:leaderlog.db", "file: must go on with ://", True),
        # A name typed in Latin-1 reaches the command as bytes that are not UTF-8.
        ("postgresql://postgres@127.0.0.1:5432/caf\udce9", "bytes that are not UTF-8", False),
        ("postgresql://postgres@127.0.0.1:5432/te%00st", "holds a NUL character", False),
    ],
)
def test_a_malformed_database_url_is_a_usage_mistake(
    tmp_path: Path, url: str, words: str, by_env: bool
) -> None:
    if by_env:
        result = leaderlog("events", cwd=tmp_path, env={"LEADERLOG_DB": url})
    else:
        result = leaderlog("--db", url, "verify", cwd=tmp_path)
    assert result.returncode == 2
    # the usage and help of leaderlog itself, whose option --db is
    assert result.stderr.startswith("Usage: leaderlog [OPTIONS] COMMAND [ARGS]...\n")
    assert "Try 'leaderlog --help' for help." in result.stderr
    assert "Error: Invalid value for '--db' (or LEADERLOG_DB): " in result.stderr
    assert words in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_a_database_that_is_not_there_is_an_error_not_a_usage_mistake(tmp_path: Path) -> None:
    result = leaderlog("--db", "sqlite:///no/such/folder/leaderlog.db", "verify", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("error: ")
    assert "does not exist" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_command_that_needs_no_database_does_not_mind_a_malformed_url(tmp_path: Path) -> None:
    result = leaderlog("schema", cwd=tmp_path, env={"LEADERLOG_DB": "mysql://localhost/x"})
    assert result.returncode == 0, result.stderr
    assert '"claim.reported"' in result.stdout


# --- in-process ---------------------------------------------------------------------------


@pytest.fixture
def seeded_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    result = CliRunner().invoke(main, ["--db", url, "import", str(SEED_FILE)])
    assert result.exit_code == 0, result.output
    return url


def invoke(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_events_as_json_is_the_array_of_every_envelope(seeded_url: str) -> None:
    # written page by page, but the very text one array of them would be
    everything = invoke("--db", seeded_url, "events", "--json")
    envelopes = json.loads(everything)
    assert everything == dumps(envelopes, indent=True) + "\n"
    assert invoke("--db", seeded_url, "events", "--json", "--after", "29") == "[]\n"
    one = invoke("--db", seeded_url, "events", "--json", "--after", "3", "--limit", "1")
    assert one == dumps(envelopes[3:4], indent=True) + "\n"


def _unreadable(seeded_url: str, position: int) -> None:
    """The row at ``position`` edited behind the store's back into data that is not JSON."""
    with contextlib.closing(sqlite3.connect(seeded_url.removeprefix("sqlite:///"))) as database:
        database.execute("DROP TRIGGER events_are_append_only_update")
        database.execute("UPDATE events SET data = '{not json' WHERE position = ?", (position,))
        database.commit()


def test_events_as_json_stays_an_array_when_a_later_page_cannot_be_read(
    seeded_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    everything = json.loads(invoke("--db", seeded_url, "events", "--json"))
    _unreadable(seeded_url, 25)
    # Pages of 10: positions 1-20 are printed before the page holding 25 is read.
    monkeypatch.setattr(log_commands, "_EVENTS_PAGE", 10)
    result = CliRunner().invoke(main, ["--db", seeded_url, "events", "--json"])
    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout) == everything[:20]
    assert result.stderr.startswith("error: event at position 25 cannot be read: data ")
    assert result.stderr.endswith(
        "; the JSON array printed ends after position 20 (the events in it are complete)\n"
    )
    assert len(result.stderr.splitlines()) == 1


def test_events_as_json_prints_nothing_when_its_first_page_cannot_be_read(
    seeded_url: str,
) -> None:
    _unreadable(seeded_url, 5)
    result = CliRunner().invoke(main, ["--db", seeded_url, "events", "--json"])
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("error: event at position 5 cannot be read: data ")


def test_events_paging(seeded_url: str) -> None:
    everything = json.loads(invoke("--db", seeded_url, "events", "--json"))
    page = json.loads(
        invoke("--db", seeded_url, "events", "--json", "--after", "10", "--limit", "5")
    )
    assert page == everything[10:15]
    assert json.loads(invoke("--db", seeded_url, "events", "--json", "--after", "29")) == []
    beyond_storage = str(10**30)
    assert (
        json.loads(invoke("--db", seeded_url, "events", "--json", "--after", beyond_storage)) == []
    )
    assert json.loads(
        invoke("--db", seeded_url, "events", "--json", "--limit", beyond_storage)
    ) == (everything)


def test_events_as_text(seeded_url: str) -> None:
    lines = invoke("--db", seeded_url, "events", "--limit", "3").splitlines()
    assert len(lines) == 3
    assert lines[0].split()[0] == "1"
    assert "org.registered" in lines[0] and "dhs" in lines[0] and lines[0].endswith("cli")
    # the time is the stored one in full, so that --known-at it takes in the event
    envelopes = json.loads(invoke("--db", seeded_url, "events", "--json", "--limit", "3"))
    assert [line.split()[1] for line in lines] == [e["recorded_at"] for e in envelopes]


def test_events_and_verify_show_an_edited_row_escaped(seeded_url: str, tmp_path: Path) -> None:
    # An edited row (triggers dropped) is what events and verify are run to look at: its
    # stream, type and actor must not be able to print a line of their own or reorder one.
    forged = "\nchain OK, 29 events\r\u202e"
    with contextlib.closing(sqlite3.connect(tmp_path / "leaderlog.db")) as database:
        database.execute("DROP TRIGGER events_are_append_only_update")
        database.execute(
            "UPDATE events SET stream = ?, type = ?, actor = ? WHERE position = 28",
            (f"source-x{forged}", f"comment.requested{forged}", f"cli{forged}"),
        )
        database.commit()
    listed = invoke("--db", seeded_url, "events", "--after", "26")
    assert len(listed.splitlines()) == 3
    assert "\r" not in listed and "\u202e" not in listed
    assert r" x\nchain OK, 29 events\r\u202e " in listed
    assert r"comment.requested\nchain OK" in listed and r"cli\nchain OK" in listed
    verified = CliRunner().invoke(main, ["--db", seeded_url, "verify"])
    assert verified.exit_code == 1
    assert verified.stdout.startswith("chain BROKEN at position 28: stream source-x\\nchain OK")
    assert len(verified.stdout.splitlines()) == 1
    assert "\r" not in verified.stdout and "\u202e" not in verified.stdout


def test_verify_json(seeded_url: str) -> None:
    head = json.loads(invoke("--db", seeded_url, "events", "--json"))[-1]["hash"]
    assert json.loads(invoke("--db", seeded_url, "verify", "--json")) == {
        "ok": True,
        "count": 29,
        "head_position": 29,
        "head_hash": head,
        "first_bad_position": None,
        "problem": None,
    }


def test_verify_an_empty_log(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    asyncio.run(create_empty_log(url))
    assert invoke("--db", url, "verify") == f"chain OK, 0 events, head hash {'0' * 64}\n"


async def create_empty_log(url: str) -> None:
    async with await EventLog.open(url):
        pass


def test_import_counts_as_json(seeded_url: str) -> None:
    counts = json.loads(invoke("--db", seeded_url, "import", "--json", str(SEED_FILE)))
    assert counts == {"appended": 0, "already_present": 29}


def test_import_with_actor(seeded_url: str, tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(
        json.dumps({"type": "person.registered", "data": {"person": "tom-homan", "name": "T"}}),
        encoding="utf-8",
    )
    assert invoke("--db", seeded_url, "import", "--actor", "desk", str(path)) == (
        "appended 1, already present 0\n"
    )
    (last,) = json.loads(invoke("--db", seeded_url, "events", "--json", "--after", "29"))
    assert (last["position"], last["actor"], last["version"]) == (30, "desk", 1)


@pytest.mark.parametrize("actor", ["", "Desk", "evil\nname", "a b", "x" * 65])
def test_an_actor_that_is_not_one_short_name_is_a_usage_mistake_exit_2(
    seeded_url: str, tmp_path: Path, actor: str
) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps({"type": "person.registered", "data": {"person": "t", "name": "T"}}))
    result = CliRunner().invoke(main, ["--db", seeded_url, "import", "--actor", actor, str(path)])
    assert result.exit_code == 2
    assert result.stderr.startswith("Usage: main import [OPTIONS] FILE...\n")
    assert result.stderr.endswith(
        f"Error: Invalid value for '--actor': actor {actor!r} must be 1-64 of a-z, 0-9, '.', "
        "'_', '-', starting with a letter or digit\n"
    )
    assert invoke("--db", seeded_url, "verify").startswith("chain OK, 29 events")


def test_an_actor_refused_creates_no_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    record = json.dumps({"type": "person.registered", "data": {"person": "t", "name": "T"}})
    result = CliRunner().invoke(
        main, ["--db", url, "import", "--actor", "Bad Name", "-"], input=record
    )
    assert result.exit_code == 2
    assert list(tmp_path.iterdir()) == []


def import_an_edited_export(
    seeded_url: str, folder: Path, line: int, **changes: Any
) -> tuple[Result, Path, dict[str, Any]]:
    """Export the seeded log, change fields of one line's envelope, and import it into a new
    database: the result, that database's file and the edited envelope."""
    exported = invoke("--db", seeded_url, "export").splitlines()
    envelope = {**json.loads(exported[line - 1]), **changes}
    exported[line - 1] = json.dumps(envelope)
    path = folder / "log.jsonl"
    path.write_text("\n".join(exported) + "\n", encoding="utf-8")
    other = folder / "other.db"
    return (
        CliRunner().invoke(main, ["--db", f"sqlite:///{other}", "import", str(path)]),
        other,
        envelope,
    )


@pytest.mark.parametrize(
    ("lost", "said"),
    [
        (["hash"], "this one has no hash;"),
        (["position"], "this one has no position;"),
        (["hash", "position"], "this one has neither position nor hash;"),
    ],
)
def test_an_export_line_that_lost_its_hash_or_position_names_what_it_lacks(
    seeded_url: str, tmp_path: Path, lost: list[str], said: str
) -> None:
    exported = json.loads(invoke("--db", seeded_url, "export").splitlines()[2])
    for key in lost:
        del exported[key]
    path = tmp_path / "cut.jsonl"
    path.write_text(json.dumps(exported) + "\n", encoding="utf-8")
    other = tmp_path / "other.db"
    result = CliRunner().invoke(main, ["--db", f"sqlite:///{other}", "import", str(path)])
    assert result.exit_code == 1, result.output
    assert "line 1: unknown record field(s): " in result.stderr
    assert f"an exported envelope needs both position and hash, and {said}" in result.stderr
    assert not other.exists()


def test_an_export_line_with_a_bad_actor_is_refused_by_line(
    seeded_url: str, tmp_path: Path
) -> None:
    result, _, _ = import_an_edited_export(seeded_url, tmp_path, 4, actor="root\u202e")
    assert result.exit_code == 1
    assert "line 4: actor 'root\\u202e' must be" in result.stderr


def test_an_export_that_would_move_the_clock_back_is_refused_by_line(
    seeded_url: str, tmp_path: Path
) -> None:
    result, other, envelope = import_an_edited_export(
        seeded_url, tmp_path, 6, recorded_at="2000-01-01T00:00:00.000000Z"
    )
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"error: 1 problem(s), nothing written\n  line 6: event {envelope['event_id']}: "
        "recorded_at "
    )
    # with the way forward, which works
    assert result.stderr.endswith(
        "to append such records as new events, stamped now, give them without their envelope "
        "(only type, data, event_id and meta) [rule: recorded_at]\n"
    )
    assert not other.exists()
    keys = ("type", "data", "event_id", "meta")
    records = [
        json.dumps({key: value for key, value in json.loads(line).items() if key in keys})
        for line in (tmp_path / "log.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    (tmp_path / "records.jsonl").write_text("\n".join(records) + "\n", encoding="utf-8")
    assert invoke(
        "--db", f"sqlite:///{other}", "import", str(tmp_path / "records.jsonl")
    ).startswith("appended 29")


def rehashed(envelopes: list[dict[str, Any]]) -> list[str]:
    """Export lines with the hashes a log recorded as ``envelopes`` say would have: an
    export of such a log, as an import keeps the times of."""
    previous, lines = GENESIS_HASH, []
    for envelope in envelopes:
        fields = {key: envelope[key] for key in ENVELOPE_KEYS - {"hash"}}
        previous = chain_hash(
            previous, envelope_bytes(**{**fields, "event_id": uuid.UUID(envelope["event_id"])})
        )
        lines.append(json.dumps({**envelope, "hash": previous}))
    return lines


def test_an_import_keeps_times_from_the_past_only_for_a_copy_of_the_log_itself(
    seeded_url: str, tmp_path: Path
) -> None:
    # given a copy of the seeded log, and one more event in the original since
    copy = f"sqlite:///{tmp_path / 'copy.db'}"
    exported = tmp_path / "first.jsonl"
    exported.write_text(invoke("--db", seeded_url, "export"), encoding="utf-8")
    assert invoke("--db", copy, "import", str(exported)).startswith("appended 29")
    more = tmp_path / "more.jsonl"
    more.write_text(
        json.dumps({"type": "person.registered", "data": {"person": "p9", "name": "P Nine"}})
        + "\n",
        encoding="utf-8",
    )
    invoke("--db", seeded_url, "import", str(more))
    time.sleep(0.01)
    # then the copy takes the original's next export whole, times kept (a mirror catching up)
    exported.write_text(invoke("--db", seeded_url, "export"), encoding="utf-8")
    assert invoke("--db", copy, "import", str(exported)).startswith("appended 1, already")
    assert invoke("--db", copy, "verify") == invoke("--db", seeded_url, "verify")
    # but another log's event, recorded before now, cannot come in with its time: the copy
    # would say it knew the event then (answers "as known at" that moment would change)
    foreign = f"sqlite:///{tmp_path / 'foreign.db'}"
    invoke("--db", foreign, "import", str(more))
    (line,) = [
        envelope
        for envelope in invoke("--db", foreign, "export").splitlines()
        if '"person.registered"' in envelope
    ]
    # recorded after the copy's last event, but before the import
    moment = format_time(utc_now())
    time.sleep(0.01)
    late = {**json.loads(line), "recorded_at": moment}
    late["data"], late["stream"] = {"person": "p10", "name": "P Ten"}, "person-p10"
    del late["event_id"]
    path = tmp_path / "foreign.jsonl"
    path.write_text(json.dumps(late) + "\n", encoding="utf-8")
    before = invoke("--db", copy, "verify")
    refused = CliRunner().invoke(main, ["--db", copy, "import", str(path)])
    assert refused.exit_code == 1
    assert f"recorded_at {moment} is in the past" in refused.stderr
    assert "[rule: recorded_at]" in refused.stderr
    assert invoke("--db", copy, "verify") == before
    # without its time it is appended, stamped now
    plain = {"type": late["type"], "data": late["data"]}
    path.write_text(json.dumps(plain) + "\n", encoding="utf-8")
    assert invoke("--db", copy, "import", str(path)).startswith("appended 1")


def test_a_log_recorded_before_the_year_1000_reads_and_answers_for_its_times(
    seeded_url: str, tmp_path: Path
) -> None:
    """Times are stored with four-digit years: "999-..." was unreadable and compared
    wrongly with every later time."""
    early = "0999-01-01T00:00:00.000000Z"
    lines = rehashed(
        [
            {**json.loads(line), "recorded_at": early}
            for line in invoke("--db", seeded_url, "export").splitlines()
        ]
    )
    path = tmp_path / "early.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    other = f"sqlite:///{tmp_path / 'early.db'}"
    assert invoke("--db", other, "import", str(path)).startswith("appended 29")
    assert invoke("--db", other, "verify").startswith("chain OK, 29 events")
    stored = json.loads(invoke("--db", other, "events", "--json"))
    assert {event["recorded_at"] for event in stored} == {early}
    first = invoke("--db", other, "events", "--limit", "1")
    assert "     1  0999-01-01T00:00:00.000000Z  " in first
    before = json.loads(invoke("--db", other, "state", "--known-at", "0998-12-31", "--json"))
    assert before["known_at"]["position"] == 0
    assert json.loads(invoke("--db", other, "audit", "--from", "0999-01-01", "--json"))


def test_import_of_blank_lines_appends_nothing(seeded_url: str, tmp_path: Path) -> None:
    path = tmp_path / "blank.jsonl"
    path.write_text("\n  \n\n", encoding="utf-8")
    assert invoke("--db", seeded_url, "import", str(path)).startswith(
        "appended 0, already present 0"
    )


def test_a_file_saved_by_a_windows_editor_imports_the_same_records(
    seeded_url: str, tmp_path: Path
) -> None:
    # given the seed file with a UTF-8 byte order mark and CRLF line ends
    path = tmp_path / "windows.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + SEED_FILE.read_bytes().replace(b"\n", b"\r\n"))
    # then every record is the one already imported (same content, same id)
    assert invoke("--db", seeded_url, "import", str(path)).startswith(
        "appended 0, already present 29"
    )


def test_importing_a_missing_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    result = CliRunner().invoke(main, ["--db", url, "import", str(tmp_path / "missing.jsonl")])
    assert result.exit_code == 2
    assert "missing.jsonl" in result.stderr
    assert not (tmp_path / "leaderlog.db").exists()


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="Linux's /proc alone")
def test_a_file_that_fails_while_read_is_named_as_the_input(seeded_url: str) -> None:
    # given a file whose reading fails with an I/O error (as a failing disk's does)
    before = invoke("--db", seeded_url, "verify")
    # when it is imported, after a good file
    result = subprocess.run(
        [str(LEADERLOG), "--db", seeded_url, "import", str(SEED_FILE), "/proc/self/mem"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    # then the input is named, not the output, and nothing is written
    assert result.returncode == 1
    assert result.stderr == (
        "error: cannot read /proc/self/mem: Input/output error; nothing was written\n"
    )
    assert invoke("--db", seeded_url, "verify") == before


def test_a_read_error_of_any_kind_is_a_clear_error_not_a_traceback(
    seeded_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a file on a network file system that goes away while it is read
    path = tmp_path / "records.jsonl"
    path.write_bytes(SEED_FILE.read_bytes())
    before = invoke("--db", seeded_url, "verify")

    def stale(handle: BinaryIO) -> Any:
        yield handle.readline()
        raise OSError(116, "Stale file handle")

    monkeypatch.setattr(log_commands, "read_lines", stale)
    # when it is imported
    result = CliRunner().invoke(main, ["--db", seeded_url, "import", str(path)])
    # then the error names the file and the reason, and nothing is written
    assert result.exit_code == 1
    assert result.stderr == (f"error: cannot read {path}: Stale file handle; nothing was written\n")
    assert invoke("--db", seeded_url, "verify") == before


def test_output_that_cannot_be_written_is_a_clear_error(seeded_url: str) -> None:
    for command in (["export"], ["schema"], ["verify"], ["events", "--json"]):
        result = to_a_full_disk("--db", seeded_url, *command)
        assert result.returncode == 1, command
        assert result.stderr == "error: cannot write the output: No space left on device\n"


@pytest.mark.parametrize("command", [["--help"], ["--version"], ["import", "--help"]])
def test_help_and_version_that_cannot_be_written_are_a_clear_error(command: list[str]) -> None:
    result = to_a_full_disk(*command)
    assert result.returncode == 1
    assert result.stderr == "error: cannot write the output: No space left on device\n"


def test_an_import_whose_counts_cannot_be_written_says_what_it_appended(
    seeded_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps({"type": "person.registered", "data": {"person": "t", "name": "T"}}))
    # when the counts cannot be written, then the error says the records were appended
    first = to_a_full_disk("--db", seeded_url, "import", str(path))
    assert first.returncode == 1
    assert first.stderr == (
        "error: cannot write the output: No space left on device; the import was committed "
        "all the same: appended 1, already present 0\n"
    )
    assert invoke("--db", seeded_url, "verify").startswith("chain OK, 30 events")
    # and, importing the same again, that nothing was
    again = to_a_full_disk("--db", seeded_url, "import", "--json", str(path))
    assert again.returncode == 1
    assert again.stderr == (
        "error: cannot write the output: No space left on device; nothing was appended "
        "(already present 1)\n"
    )


def test_a_rebuild_whose_report_cannot_be_written_says_it_was_done(seeded_url: str) -> None:
    rebuilt = to_a_full_disk("--db", seeded_url, "rebuild", "audit")
    assert rebuilt.returncode == 1
    assert rebuilt.stderr == (
        "error: cannot write the output: No space left on device; audit rebuilt all the same, "
        "to position 29\n"
    )


def _organisations(count: int) -> str:
    return "".join(
        json.dumps({"type": "org.registered", "data": {"org": f"org-{n}", "name": f"Org {n} ü"}})
        + "\n"
        for n in range(count)
    )


def test_a_reader_that_goes_away_during_one_large_write_is_status_1(tmp_path: Path) -> None:
    # given a log whose events, as JSON, are one write of about a megabyte
    url = f"sqlite:///{tmp_path / 'big.db'}"
    ok(leaderlog("--db", url, "import", "-", cwd=tmp_path, stdin=_organisations(3000)))
    # when the reader takes a little of it and goes away (leaderlog events --json | head)
    process = subprocess.Popen(
        [str(LEADERLOG), "--db", url, "events", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.read(100)
    process.stdout.close()
    # then the rest is not taken for written: status 1, and no message (the reader left)
    assert process.wait(timeout=60) == 1
    assert process.stderr.read() == b""


def test_a_closed_standard_output_refuses_the_command(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    ok(leaderlog("--db", url, "import", "-", cwd=tmp_path, stdin=_organisations(1)))
    # a token printed to nowhere would be live and lost: it is not created at all
    closed = subprocess.run(
        [str(LEADERLOG), "--db", url, "token", "create", "gina"],
        capture_output=False,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=lambda: os.close(1),
    )
    assert closed.returncode == 1
    assert closed.stderr == "error: standard output is closed: nothing was done\n"
    assert ok(leaderlog("--db", url, "token", "list", "--json", cwd=tmp_path)).strip() == "[]"


def test_an_export_is_utf8_whatever_the_locale_says(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    ok(leaderlog("--db", url, "import", "-", cwd=tmp_path, stdin=_organisations(2)))
    for encoding in ("latin-1", "ascii"):
        exported = subprocess.run(
            [str(LEADERLOG), "--db", url, "export"],
            capture_output=True,
            env={**os.environ, "PYTHONIOENCODING": encoding},
            timeout=60,
            check=False,
        )
        assert exported.returncode == 0, exported.stderr
        assert "Org 0 ü" in exported.stdout.decode("utf-8")
        copy = f"sqlite:///{tmp_path / f'copy-{encoding}.db'}"
        again = leaderlog("--db", copy, "import", "-", cwd=tmp_path, stdin=exported.stdout.decode())
        assert ok(again) == "appended 2, already present 0\n"


def _waiting_to_read_stdin(pid: int) -> bool:
    """Whether the process is blocked reading its stdin (Linux: syscall 0, read, of fd 0)."""
    try:
        return Path(f"/proc/{pid}/syscall").read_text().startswith("0 0x0 ")
    except OSError:
        pytest.skip("needs /proc/PID/syscall")


def _interrupted_waiting_for_stdin(tmp_path: Path, interrupts: int) -> tuple[int, bytes]:
    """An import of stdin sent ``interrupts`` Ctrl-Cs at once while it waits to read."""
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    process = subprocess.Popen(
        [str(LEADERLOG), "--db", url, "import", "-"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 60
        while not _waiting_to_read_stdin(process.pid):
            assert time.monotonic() < deadline, "the import never read its stdin"
            time.sleep(0.05)
        for _ in range(interrupts):
            process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    return process.returncode, stderr


def test_ctrl_c_stops_an_import_waiting_for_stdin(tmp_path: Path) -> None:
    status, stderr = _interrupted_waiting_for_stdin(tmp_path, 1)
    assert status == 130
    assert stderr == b"interrupted: nothing was written: the records were still being read\n"
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_twice_stops_an_import_still_reading_and_writes_nothing(tmp_path: Path) -> None:
    status, stderr = _interrupted_waiting_for_stdin(tmp_path, 2)
    # The second may land once Python, ending, has given Ctrl-C back its default: then it
    # ends the process as killed by it, which a shell reports as the same 130.
    assert status in (130, -signal.SIGINT)
    assert stderr.startswith(b"interrupted: nothing was written: the records were still being")
    assert b"Traceback" not in stderr and b"Exception ignored" not in stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the drop itself
def test_a_ctrl_c_python_drops_while_records_are_read_still_stops_the_reading() -> None:
    # given a Ctrl-C raised where Python drops it (a finalizer), while lines are read
    class Finalized:
        def __del__(self) -> None:
            signal.raise_signal(signal.SIGINT)

    lines = io.BytesIO(b"".join(b"{}\n" for _ in range(100)))
    read = []
    with pytest.raises(KeyboardInterrupt), interruptible() as interrupted:
        for line in log_commands._lines_with_progress(lines, None, interrupted):
            read.append(line)
            if len(read) == 3:
                with contextlib.suppress(KeyboardInterrupt):
                    Finalized()
    # then the reading stops at the next line all the same
    assert interrupted() and len(read) == 3


def test_an_import_of_no_records_answers_in_json_when_asked(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    result = leaderlog("--db", url, "import", "--json", "-", cwd=tmp_path, stdin="\n\n")
    assert json.loads(ok(result)) == {"appended": 0, "already_present": 0}


def test_a_closed_stdin_is_a_clear_usage_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    closed = subprocess.run(
        [str(LEADERLOG), "--db", url, "import", "-"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=lambda: os.close(0),
    )
    assert closed.returncode == 2
    assert "Error: Invalid value for 'FILE...': standard input is closed" in closed.stderr
    assert "Traceback" not in closed.stderr


def organisations_file(path: Path, count: int) -> Path:
    """``path`` written with ``count`` records of new organisations."""
    path.write_text(
        "".join(
            json.dumps({"type": "org.registered", "data": {"org": f"org-{n}", "name": f"Org {n}"}})
            + "\n"
            for n in range(count)
        ),
        encoding="utf-8",
    )
    return path


def importing_a_big_file(folder: Path, url: str, count: int) -> subprocess.Popen[str]:
    """``leaderlog import`` of ``count`` new organisations, once its append has begun (the
    records checked, past the progress bar's lines)."""
    big = organisations_file(folder / "big.jsonl", count)
    process = subprocess.Popen(
        [str(LEADERLOG), "--db", url, "import", str(big)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    while not (line := process.stderr.readline()).startswith(f"appending {count} records"):
        assert line, "the import ended before its append began"
    return process


def test_ctrl_c_during_an_import_says_what_was_written(tmp_path: Path) -> None:
    """The import is one transaction: stopped while it commits, it is whole or absent, and
    the message says so (not click's bare 'Aborted!', and exit status 130)."""
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    count = 12_000
    process = importing_a_big_file(tmp_path, url, count)
    process.send_signal(signal.SIGINT)
    _, rest = process.communicate(timeout=120)
    assert process.returncode == 130, rest
    assert rest.startswith("interrupted: an import is one transaction"), rest
    # The import was the database's first: the database exists only if it was written whole.
    if (tmp_path / "leaderlog.db").exists():
        stored = json.loads(ok(leaderlog("--db", url, "verify", "--json", cwd=tmp_path)))
        assert stored["ok"] and stored["count"] == count
    assert sorted(path.name for path in tmp_path.iterdir()) in (
        ["big.jsonl"],
        ["big.jsonl", "leaderlog.db"],
    )


def test_ctrl_c_while_an_import_checks_its_rules_stops_the_check_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given an import on a terminal, whose rules are checked in several turns of the event loop
    drawn_on_a_terminal(monkeypatch)
    monkeypatch.setattr(log_commands, "_APPEND_BAR_THRESHOLD", 10)
    monkeypatch.setattr("leaderlog.log._PROGRESS_STEP", 100)
    monkeypatch.setattr("leaderlog.log._DECIDED_BETWEEN_TURNS", 50)
    big = organisations_file(tmp_path / "orgs.jsonl", 1000)
    checked: list[int] = []
    drawn = log_commands._append_bar

    @contextlib.contextmanager
    def ctrl_c_at_the_first_report(records: int) -> Any:
        with drawn(records) as bar:

            def report(stage: str, done: int, total: int) -> None:
                assert bar is not None
                bar(stage, done, total)
                if stage == "checking":
                    checked.append(done)
                    if len(checked) == 1:
                        signal.raise_signal(signal.SIGINT)

            yield report

    monkeypatch.setattr(log_commands, "_append_bar", ctrl_c_at_the_first_report)
    # when Ctrl-C is pressed while the rules are checked
    result = CliRunner().invoke(
        main, ["--db", f"sqlite:///{tmp_path / 'leaderlog.db'}", "import", str(big)]
    )
    # then the check stops there, short of the other records, and nothing is written
    assert result.exit_code == 130, result.output
    assert result.stderr.startswith("interrupted: an import is one transaction"), result.stderr
    assert checked == [100]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["orgs.jsonl"]


def test_ctrl_c_left_in_a_task_no_one_awaited_is_not_reported_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Landing in a task that reads ahead, Ctrl-C stopped the command, which said
    # "interrupted"; then the event loop printed its traceback, "Task exception was never
    # retrieved", under it. Other errors no one awaited are still reported.
    async def left_unawaited() -> None:
        loop = asyncio.get_running_loop()
        for error in (Interrupted(), RuntimeError("a bug")):
            loop.call_exception_handler(
                {"message": "Task exception was never retrieved", "exception": error}
            )

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        _app.run(left_unawaited)
    reported = [record.exc_info[1] for record in caplog.records if record.exc_info]
    assert [type(error) for error in reported] == [RuntimeError]


def test_a_ctrl_c_python_drops_while_a_command_runs_still_stops_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # given a command whose Ctrl-C lands where Python cannot raise it (a finalizer here; a
    # library's callback into Python, such as pydantic checking a pattern, does the same)
    class Finalized:
        def __del__(self) -> None:
            raise Interrupted

    went_on: list[str] = []

    async def command() -> None:
        Finalized()
        for _ in range(100):
            await asyncio.sleep(0)
        went_on.append("after the Ctrl-C")

    # when it runs
    with pytest.raises(SystemExit) as stopped:
        _app.run(command, interrupted="nothing was written")
    # then it stops as for any Ctrl-C, with no "Exception ignored" traceback
    assert stopped.value.code == 130
    assert went_on == []
    assert capsys.readouterr().err == "interrupted: nothing was written\n"


def test_a_second_ctrl_c_while_an_import_stops_ends_it_at_once(tmp_path: Path) -> None:
    """Pressed while the first one is closing the database, it interrupted the closing and
    left the process waiting on itself for good."""
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    ok(leaderlog("--db", url, "import", str(SEED_FILE), cwd=tmp_path))
    count = 40_000
    process = importing_a_big_file(tmp_path, url, count)
    process.send_signal(signal.SIGINT)
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    _, rest = process.communicate(timeout=60)
    # Ended at once: 130 as a shell reports it, whether the second Ctrl-C met leaderlog's
    # handler or came in Python's last moments, after it gave Ctrl-C back its default.
    assert process.returncode in (130, -signal.SIGINT), rest
    assert rest.startswith("interrupted: an import is one transaction"), rest
    # whole or not at all, as after one Ctrl-C
    stored = json.loads(ok(leaderlog("--db", url, "verify", "--json", cwd=tmp_path)))
    assert stored["ok"] and stored["count"] in (29, 29 + count)


def test_db_after_the_command_says_where_it_goes() -> None:
    result = CliRunner().invoke(main, ["events", "--db", "sqlite:///x.db"])
    assert result.exit_code == 2
    assert "Error: --db goes before the command: leaderlog --db URL events ..." in result.stderr


def test_several_files_import_as_one_transaction_naming_the_file_at_fault(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    extra = tmp_path / "extra.jsonl"
    extra.write_text(
        json.dumps({"type": "person.registered", "data": {"person": "zz", "name": "Z"}}) + "\n",
        encoding="utf-8",
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text(extra.read_text(encoding="utf-8") + '{"type": "bogus"}\n', encoding="utf-8")
    # one bad line in the second file: nothing of either is written
    refused = leaderlog("--db", url, "import", str(SEED_FILE), str(bad), cwd=tmp_path)
    assert refused.returncode == 1
    assert f"  {bad} line 2: a record needs 'type' and 'data' [rule: schema]" in refused.stderr
    assert not (tmp_path / "leaderlog.db").exists()  # refused before the log was opened
    # both good: appended in the order given
    assert ok(leaderlog("--db", url, "import", str(SEED_FILE), str(extra), cwd=tmp_path)) == (
        "appended 30, already present 0\n"
    )
    (last,) = json.loads(
        ok(leaderlog("--db", url, "events", "--json", "--after", "29", cwd=tmp_path))
    )
    assert last["stream"] == "person-zz"


def test_a_file_given_twice_to_one_import_is_a_usage_mistake(tmp_path: Path) -> None:
    # Its records would each be refused as repeating themselves, naming the file twice.
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / SEED_FILE.name).write_bytes(SEED_FILE.read_bytes())
    given = f"seeds/{SEED_FILE.name}"
    twice = leaderlog("--db", url, "import", given, f"./seeds/../{given}", cwd=tmp_path)
    assert twice.returncode == 2, twice.stderr
    assert twice.stderr.endswith(
        f"Error: Invalid value for 'FILE...': {given!r} is given twice (also as "
        f"'./seeds/../{given}'): give each file once\n"
    )
    stdin = leaderlog("--db", url, "import", "-", "-", cwd=tmp_path, stdin="")
    assert stdin.returncode == 2, stdin.stderr
    assert "'-' is given twice (also as '-'): give each file once" in stdin.stderr
    assert not (tmp_path / "leaderlog.db").exists()
    assert ok(leaderlog("--db", url, "import", given, cwd=tmp_path)) == (
        "appended 29, already present 0\n"
    )


@pytest.mark.parametrize(
    "arguments",
    [
        ["state", "--org", "ice", "--org", "dhs"],
        ["audit", "--limit", "1", "--limit=2"],
        ["events", "--after", "1", "--after", "1"],
        ["--db", "sqlite:///a.db", "state"],
    ],
    ids=" ".join,
)
def test_an_option_given_twice_is_refused_not_overridden(
    seeded_url: str, arguments: list[str]
) -> None:
    result = CliRunner().invoke(main, ["--db", seeded_url, *arguments])
    assert result.exit_code == 2
    option = next(argument for argument in arguments if argument.startswith("--"))
    assert f"Error: {option.split('=')[0]} is given more than once: give it once" in result.stderr


def test_a_flag_given_twice_is_still_the_flag(seeded_url: str) -> None:
    assert json.loads(invoke("--db", seeded_url, "events", "--json", "--json", "--limit", "1"))


def test_a_large_import_shows_bars_for_checking_its_rules_and_writing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a terminal, and an import above the size that shows bars while it appends
    screen = drawn_on_a_terminal(monkeypatch)
    monkeypatch.setattr(log_commands, "_APPEND_BAR_THRESHOLD", 10)
    big = organisations_file(tmp_path / "orgs.jsonl", 50)
    # when it is imported
    result = CliRunner().invoke(
        main, ["--db", f"sqlite:///{tmp_path / 'l.db'}", "import", str(big)]
    )
    # then both bars were drawn, and ended full
    assert result.exit_code == 0, result.output
    assert result.stdout == "appended 50, already present 0\n"
    drawn = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", screen.getvalue())
    assert re.search(r"checking rules \S+ +100%", drawn), drawn
    assert re.search(r"writing +\S+ +100%", drawn), drawn
    # the writing bar is drawn once writing begins, not empty while the rules are checked
    assert not re.search(r"writing +\S+ +0%", drawn), drawn


def test_a_bar_shows_100_percent_only_once_every_step_is_done(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given a terminal, and the bars of a large import
    screen = drawn_on_a_terminal(monkeypatch)
    with log_commands._append_bar(30_001) as advance:
        assert advance is not None
        # when all but one of its records are checked
        advance("checking", 30_000, 30_001)
        # and all but one of its writing steps done, 99.5% of them
        advance("writing", 199, 200)
    # then neither bar is shown full, each short of its last step
    drawn = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", screen.getvalue())
    assert re.search(r"checking rules \S+ +99%", drawn), drawn
    assert re.search(r"writing +\S+ +99%", drawn), drawn
    assert "100%" not in drawn


def test_a_terminal_that_cannot_redraw_gets_a_line_instead_of_bars(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    screen = io.StringIO()
    dumb = Console(file=screen, force_terminal=True, width=100, highlight=False)
    monkeypatch.setattr(type(dumb), "is_dumb_terminal", property(lambda _: True))
    monkeypatch.setattr(_terminal, "err_console", dumb)
    monkeypatch.setattr(log_commands, "_APPEND_BAR_THRESHOLD", 10)
    records = organisations_file(tmp_path / "orgs.jsonl", 50)
    result = CliRunner().invoke(
        main, ["--db", f"sqlite:///{tmp_path / 'l.db'}", "import", str(records)]
    )
    assert result.exit_code == 0, result.output
    assert "appending 50 records in one transaction..." in screen.getvalue()


def test_stopping_at_once_on_a_terminal_clears_the_bar_and_shows_the_cursor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given a terminal, where a progress bar may be drawn with the cursor hidden
    written: list[bytes] = []

    def stop(status: int) -> None:
        raise SystemExit(status)

    monkeypatch.setattr(_terminal, "err_console", Console(file=io.StringIO(), force_terminal=True))
    monkeypatch.setattr(os, "write", lambda _, data: written.append(data))
    monkeypatch.setattr(os, "_exit", stop)
    # when a second Ctrl-C stops the command at once
    with pytest.raises(SystemExit) as stopped:
        _app._stop_at_once("interrupted: nothing was written")
    # then the bar's line is cleared and the cursor shown before the message
    assert stopped.value.code == 130
    assert written == [
        b"\r\x1b[2K\x1b[?25hinterrupted: nothing was written (again: stopped at once)\n"
    ]


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (
            {"type": "person.registered", "person": "zed", "name": "Zed"},
            'unknown record field(s): name, person (an event\'s fields go inside "data": '
            '{"type": ..., "data": {"name": ..., "person": ...}})',
        ),
        (
            [{"type": "person.registered", "data": {"person": "zed", "name": "Zed"}}],
            "a record must be a JSON object, not a list (in a file, one record per line)",
        ),
    ],
    ids=["fields beside the type", "a JSON array"],
)
def test_a_first_record_written_in_another_shape_says_how_records_are_written(
    tmp_path: Path, line: object, said: str
) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    database = tmp_path / "new.db"
    result = CliRunner().invoke(main, ["--db", f"sqlite:///{database}", "import", str(path)])
    assert result.exit_code == 1, result.output
    assert f"line 1: {said} [rule: schema]" in result.stderr
    assert not database.exists()


@pytest.mark.parametrize(("bad", "rest"), [(50, []), (52, ["  ... and 2 more"])])
def test_an_import_lists_fifty_problems_and_counts_the_rest(
    tmp_path: Path, bad: int, rest: list[str]
) -> None:
    # given a file of lines that are not JSON
    path = tmp_path / "bad.jsonl"
    path.write_text("{not json\n" * bad, encoding="utf-8")
    database = tmp_path / "leaderlog.db"
    # when it is imported
    result = CliRunner().invoke(main, ["--db", f"sqlite:///{database}", "import", str(path)])
    # then every problem is counted, the first fifty are named by line, and the rest counted
    assert result.exit_code == 1, result.output
    lines = result.stderr.splitlines()
    assert lines[0] == f"error: {bad} problem(s), nothing written"
    assert [line.partition(":")[0] for line in lines[1:51]] == [
        f"  line {number}" for number in range(1, 51)
    ]
    assert lines[51:] == rest
    assert not database.exists()


def test_an_import_of_several_files_tells_the_problems_of_each(tmp_path: Path) -> None:
    # given two files with a bad line each, and a good one between them
    first = tmp_path / "first.jsonl"
    first.write_text('{"type": "bogus"}\n', encoding="utf-8")
    good = tmp_path / "good.jsonl"
    good.write_text(
        json.dumps({"type": "person.registered", "data": {"person": "zz", "name": "Z"}}) + "\n",
        encoding="utf-8",
    )
    last = tmp_path / "last.jsonl"
    last.write_text('\n{"type": "bogus"}\n', encoding="utf-8")
    database = tmp_path / "leaderlog.db"
    # when all three are imported at once
    result = CliRunner().invoke(
        main, ["--db", f"sqlite:///{database}", "import", str(first), str(good), str(last)]
    )
    # then the problems of both bad files are told, each under its file, and nothing is written
    assert result.exit_code == 1, result.output
    assert result.stderr == (
        "error: 2 problem(s), nothing written\n"
        f"  {first} line 1: a record needs 'type' and 'data' [rule: schema]\n"
        f"  {last} line 2: a record needs 'type' and 'data' [rule: schema]\n"
    )
    assert not database.exists()


def test_a_rule_broken_in_a_later_file_names_that_file_and_line(
    seeded_url: str, tmp_path: Path
) -> None:
    # given a good file and another whose second record confirms a claim that does not exist
    good = tmp_path / "good.jsonl"
    good.write_text(
        json.dumps({"type": "person.registered", "data": {"person": "zz", "name": "Z"}}) + "\n",
        encoding="utf-8",
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        good.read_text(encoding="utf-8").replace("zz", "yy")
        + json.dumps({"type": "claim.confirmed", "data": {"claim": "nope", "source": "nope"}})
        + "\n",
        encoding="utf-8",
    )
    before = invoke("--db", seeded_url, "verify")
    # when both are imported, the rule being one checked against the log as it is appended
    result = CliRunner().invoke(main, ["--db", seeded_url, "import", str(good), str(bad)])
    # then the problem names the file as well as the line, and nothing is written
    assert result.exit_code == 1, result.output
    said, *problems = result.stderr.splitlines()
    assert said == "error: 2 problem(s), nothing written"  # neither its claim nor its source
    assert [problem.startswith(f"  {bad} line 2: ") for problem in problems] == [True, True]
    assert all(problem.endswith(" [rule: reference]") for problem in problems)
    assert invoke("--db", seeded_url, "verify") == before


def test_an_import_of_no_records_says_so_and_creates_no_database(tmp_path: Path) -> None:
    # given a file of blank lines only
    path = tmp_path / "blank.jsonl"
    path.write_text("\n  \n\n", encoding="utf-8")
    database = tmp_path / "leaderlog.db"
    # when it is imported into a database that does not exist yet
    result = CliRunner().invoke(main, ["--db", f"sqlite:///{database}", "import", str(path)])
    # then it says there were no records, and leaves no empty database behind
    assert result.exit_code == 0, result.output
    assert result.stdout == "appended 0, already present 0 (no records)\n"
    assert sorted(child.name for child in tmp_path.iterdir()) == ["blank.jsonl"]


def test_events_after_the_last_position_says_there_are_none_after_it(seeded_url: str) -> None:
    assert invoke("--db", seeded_url, "events", "--after", "29") == (
        "(no events after position 29)\n"
    )
    assert invoke("--db", seeded_url, "events", "--after", str(10**30)) == (
        f"(no events after position {10**30})\n"
    )


@pytest.mark.parametrize("as_json", [[], ["--json"]], ids=["text", "json"])
def test_events_with_a_limit_reads_no_event_beyond_it(seeded_url: str, as_json: list[str]) -> None:
    # given a log whose fifth row was edited into one that cannot be read
    _unreadable(seeded_url, 5)
    # when the first four events are asked for
    result = CliRunner().invoke(main, ["--db", seeded_url, "events", "--limit", "4", *as_json])
    # then they are shown, the unreadable row beyond them untouched
    assert result.exit_code == 0, result.output
    if as_json:
        assert [event["position"] for event in json.loads(result.stdout)] == [1, 2, 3, 4]
    else:
        assert [line.split()[0] for line in result.stdout.splitlines()] == ["1", "2", "3", "4"]


def test_events_as_text_keep_the_actors_in_one_column_past_a_long_id(seeded_url: str) -> None:
    # given events whose ids are shorter and longer than 40 characters (27's is 42)
    lines = invoke("--db", seeded_url, "events", "--after", "24").splitlines()
    # then each actor starts at the same column, one space after the longest id
    assert len(lines) == 5
    assert {line.rindex(" cli") for line in lines} == {lines[2].rindex(" cli")}
    assert lines[2].endswith(" fox-ice-shakeup-2025-05-noem-dhs-secretary cli")


def test_events_as_text_have_their_columns_in_place(seeded_url: str) -> None:
    (envelope,) = json.loads(invoke("--db", seeded_url, "events", "--json", "--limit", "1"))
    # position right-aligned in 6, time, type in 18, id in at least 40, actor
    assert invoke("--db", seeded_url, "events", "--limit", "1") == (
        f"     1  {envelope['recorded_at']}  {'org.registered':<18} {'dhs':<40} cli\n"
    )


def _actor_edited(seeded_url: str, position: int) -> None:
    with contextlib.closing(sqlite3.connect(seeded_url.removeprefix("sqlite:///"))) as database:
        database.execute("DROP TRIGGER events_are_append_only_update")
        database.execute("UPDATE events SET actor = 'mallory' WHERE position = ?", (position,))
        database.commit()


def test_a_broken_chain_says_where_and_how_many_events_were_verified_before_it(
    seeded_url: str,
) -> None:
    # given a log whose 28th event's actor was edited behind its back
    _actor_edited(seeded_url, 28)
    # when it is verified
    result = CliRunner().invoke(main, ["--db", seeded_url, "verify"])
    # then the first bad position, the problem and the count before it are told, status 1
    assert result.exit_code == 1
    assert result.stdout == (
        "chain BROKEN at position 28: hash does not match the event's content and the "
        "previous hash (27 events verified before it)\n"
    )


def test_a_broken_chain_verified_as_json_is_status_1_too(seeded_url: str) -> None:
    _actor_edited(seeded_url, 28)
    result = CliRunner().invoke(main, ["--db", seeded_url, "verify", "--json"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert (report["ok"], report["first_bad_position"], report["count"]) == (False, 28, 27)


def test_a_ctrl_c_python_drops_once_every_record_is_read_still_stops_the_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given an import whose Ctrl-C lands where Python drops it (a finalizer, say), just as
    # the last of its records has been read
    def parsed_then_ctrl_c_dropped(lines: Any) -> Any:
        parsed = parse_records(lines)
        with contextlib.suppress(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        return parsed

    monkeypatch.setattr("leaderlog.cli.log_commands.parse_records", parsed_then_ctrl_c_dropped)
    database = tmp_path / "leaderlog.db"
    # when it runs
    result = CliRunner().invoke(main, ["--db", f"sqlite:///{database}", "import", str(SEED_FILE)])
    # then it stops there as for any Ctrl-C, before anything is written
    assert result.exit_code == 130, result.output
    assert result.stderr == "interrupted: nothing was written: the records were still being read\n"
    assert not database.exists()


def test_an_id_already_stored_with_other_content_names_the_line_that_reuses_it(
    seeded_url: str, tmp_path: Path
) -> None:
    # given a log holding a record appended under an id of the writer's own
    event_id = str(uuid.uuid4())
    first = tmp_path / "first.jsonl"
    first.write_text(
        json.dumps(
            {
                "type": "person.registered",
                "data": {"person": "p1", "name": "P"},
                "event_id": event_id,
            }
        )
        + "\n",
        encoding="utf-8",
    )
    assert invoke("--db", seeded_url, "import", str(first)) == "appended 1, already present 0\n"
    before = invoke("--db", seeded_url, "verify")
    # when a later import gives another record that id, on its second line
    second = tmp_path / "second.jsonl"
    second.write_text(
        json.dumps({"type": "person.registered", "data": {"person": "zz", "name": "Z"}})
        + "\n"
        + first.read_text(encoding="utf-8").replace('"p1"', '"p2"'),
        encoding="utf-8",
    )
    result = CliRunner().invoke(main, ["--db", seeded_url, "import", str(second)])
    # then the refusal names that line and the rule, as every refusal of a record does
    assert result.exit_code == 1, result.output
    assert result.stderr == (
        "error: 1 problem(s), nothing written\n"
        f"  line 2: event id {event_id} is already stored at position 30 with other content "
        "[rule: event_id]\n"
    )
    assert invoke("--db", seeded_url, "verify") == before


def test_a_refused_file_whose_name_holds_a_line_break_is_named_escaped(tmp_path: Path) -> None:
    # given two files to import, the bad one named with a line break and a right-to-left mark
    good = tmp_path / "good.jsonl"
    good.write_text("\n", encoding="utf-8")
    bad = tmp_path / "a\nerror: forged\u202e.jsonl"
    bad.write_text('{"type": "bogus"}\n', encoding="utf-8")
    database = tmp_path / "leaderlog.db"
    # when they are imported
    result = CliRunner().invoke(
        main, ["--db", f"sqlite:///{database}", "import", str(good), str(bad)]
    )
    # then the problem names the file on its own line, its name escaped
    assert result.exit_code == 1, result.output
    assert result.stderr == (
        "error: 1 problem(s), nothing written\n"
        f"  {tmp_path}/a\\nerror: forged\\u202e.jsonl line 1: a record needs 'type' and 'data' "
        "[rule: schema]\n"
    )


def test_events_as_json_stays_an_array_when_interrupted(
    seeded_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a listing that Ctrl-C stops once ten events are printed
    at_most = log_commands._at_most

    async def ctrl_c_after_ten(events: Any, limit: int | None) -> Any:
        printed = 0
        async for event in at_most(events, limit):
            if printed == 10:
                raise Interrupted
            yield event
            printed += 1

    monkeypatch.setattr("leaderlog.cli.log_commands._at_most", ctrl_c_after_ten)
    # when the events are listed as JSON
    result = CliRunner().invoke(main, ["--db", seeded_url, "events", "--json"])
    # then it stops as interrupted, what was printed still a JSON array of whole events
    assert result.exit_code == 130, result.output
    assert [event["position"] for event in json.loads(result.stdout)] == list(range(1, 11))
    assert result.stderr == "interrupted\n"


def test_schema_is_printed_indented_as_every_json_answer() -> None:
    assert invoke("schema") == dumps(event_schema(), indent=True) + "\n"


def test_ctrl_c_outside_the_command_s_event_loop_is_status_130(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given a command whose Ctrl-C lands before any event loop runs (schema has none)
    def interrupted() -> Any:
        raise Interrupted

    monkeypatch.setattr("leaderlog.cli.log_commands.event_schema", interrupted)
    # when it runs
    result = CliRunner().invoke(main, ["schema"])
    # then it says so, with the status a shell expects of Ctrl-C, and prints nothing else
    assert result.exit_code == 130, result.output
    assert (result.stdout, result.stderr) == ("", "interrupted\n")


def test_a_total_of_exactly_the_threshold_gets_a_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    # given a terminal, and bars drawn from 100 events on
    screen = drawn_on_a_terminal(monkeypatch)
    # when a piece of work of exactly 100 events reports its progress
    with _terminal.bars("events", 100) as show:
        show("rebuilding", 50, 100)
    # then its bar is drawn, as for anything larger
    drawn = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", screen.getvalue())
    assert re.search(r"rebuilding .* 50/100 events", drawn), drawn


def test_a_count_bar_on_no_terminal_writes_nothing_at_all(monkeypatch: pytest.MonkeyPatch) -> None:
    # given stderr that is a file, not a terminal
    screen = io.StringIO()
    monkeypatch.setattr(
        _terminal, "err_console", Console(file=screen, force_terminal=False, width=100)
    )
    # when a bar counts events there
    with _terminal.count_bar("rebuilding", start=0, total=10) as advance:
        advance(5, 10)
    # then nothing is written: neither a bar nor a blank line
    assert screen.getvalue() == ""


class _TakesNothing(io.RawIOBase):
    """An output whose reader has gone, as a pipe that takes no more bytes reports it."""

    def writable(self) -> bool:
        return True

    def write(self, data: object) -> int:
        return 0


def test_output_that_takes_none_of_a_write_is_a_broken_pipe_not_silence() -> None:
    # given standard output that accepts no more bytes
    whole = _WholeWrites(cast(BinaryIO, _TakesNothing()))
    # when a command writes to it, then the write fails as a broken pipe, never dropped
    with pytest.raises(BrokenPipeError):
        whole.write(b"{}\n")


def test_ctrl_c_before_a_command_starts_its_work_says_interrupted_and_exits_130(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given Ctrl-C pressed while a command checks its arguments, before it runs
    def pressed(name: str) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(token_commands, "check_token_name", pressed)
    # when the command is run
    result = CliRunner().invoke(main, ["--db", sqlite_url, "token", "revoke", "alice"])
    # then it says so and ends with the status a shell expects of Ctrl-C
    assert result.exit_code == 130
    assert result.stderr == "interrupted\n"


def test_a_message_for_a_closed_stderr_is_dropped_without_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given stderr closed (2>&-), where Python leaves sys.stderr None
    monkeypatch.setattr(sys, "stderr", None)
    # when a signal handler says something on it, then nothing is raised
    _app._said_on_stderr("\r\x1b[2K\x1b[?25h")


def test_output_is_utf8_whatever_encoding_python_was_given(sqlite_url: str) -> None:
    # given a log holding text beyond ASCII
    record = '{"type": "person.registered", "data": {"person": "zoe", "name": "Zo\u00eb"}}\n'
    imported = CliRunner().invoke(main, ["--db", sqlite_url, "import", "-"], input=record)
    assert imported.exit_code == 0, imported.output
    # when it is exported by a process whose standard output Python would write in ASCII
    exported = subprocess.run(
        [str(LEADERLOG), "--db", sqlite_url, "export"],
        env={**os.environ, "PYTHONIOENCODING": "ascii"},
        capture_output=True,
        timeout=60,
        check=False,
    )
    # then it is written, in UTF-8, as an export must be to import again
    assert exported.returncode == 0, exported.stderr
    assert '"name":"Zo\u00eb"'.encode() in exported.stdout


EVENT = uuid.UUID("00000000-0000-4000-8000-000000000001")


@pytest.mark.parametrize(
    ("error", "rule"),
    [
        (RecordError("a record needs 'type' and 'data'", where="line 1"), "schema"),
        (ConcurrencyError("person-p1", 3, 4), "expected_version"),
        (DuplicateEventError(EVENT, 7), "event_id"),
        (RecordedAtRefused(EVENT, "recorded_at is in the past"), "recorded_at"),
    ],
    ids=["record", "concurrency", "duplicate", "recorded_at"],
)
def test_a_single_refusal_is_one_error_line_naming_its_rule_and_exit_1(
    capsys: pytest.CaptureFixture[str], error: LeaderlogError, rule: str
) -> None:
    # given a command whose work is refused with one error, not a batch of them
    # when it is reported
    with pytest.raises(SystemExit) as ended, reported():
        raise error
    # then the command ends with status 1 and one line naming the rule broken
    assert ended.value.code == 1
    assert capsys.readouterr().err == f"error: {error} [rule: {rule}]\n"
