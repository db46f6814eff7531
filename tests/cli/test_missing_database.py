"""A SQLite database that does not exist: commands that only read refuse it, leaving no file
behind; commands that write create it, but an import that is refused leaves none. An existing
but empty log says how to fill it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from click.testing import CliRunner

from leaderlog.cli import main
from leaderlog.cli._app import Context
from leaderlog.errors import BatchError, LeaderlogError
from leaderlog.events import PersonRegistered
from leaderlog.log import AppendOutcome, EventLog, parse_lines
from leaderlog.store import open_store
from tests.conftest import SEEDS
from tests.store import postgres_connection, postgres_schema

LEADERLOG = Path(sys.executable).parent / "leaderlog"
SEED_FILE = SEEDS / "ice-leadership-2025-05.jsonl"


def refusal(path: Path) -> str:
    return (
        f"error: database {path} does not exist: import records into it first "
        "(leaderlog import FILE), or name another with --db URL or LEADERLOG_DB\n"
    )


@pytest.mark.parametrize(
    "command",
    [
        ["state"],
        ["state", "--json"],
        ["history", "--org", "ice"],
        ["claim", "some-claim"],
        ["audit"],
        ["events"],
        ["verify"],
        ["export"],
        ["feed"],
        ["projections"],
        ["rebuild"],
        ["token", "list"],
        ["token", "revoke", "alice"],
    ],
)
def test_a_command_that_only_reads_refuses_a_missing_database_and_creates_none(
    tmp_path: Path, command: list[str]
) -> None:
    missing = tmp_path / "typo.db"
    result = CliRunner().invoke(main, ["--db", f"sqlite:///{missing}", *command])
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr == refusal(missing)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [["state"], ["events"], ["verify"], ["token", "list"]])
def test_a_command_that_only_reads_says_a_database_under_a_file_cannot_be_one(
    tmp_path: Path, command: list[str]
) -> None:
    # Not "does not exist: import records into it first", which an import would refuse too.
    notes = tmp_path / "notes.txt"
    notes.write_text("notes\n")
    result = CliRunner().invoke(main, ["--db", f"sqlite:///{notes / 'log.db'}", *command])
    assert result.exit_code == 1, result.output
    assert result.stderr == (
        f"error: cannot open SQLite database {notes / 'log.db'}: {notes} is a file, not a folder\n"
    )
    assert notes.read_text() == "notes\n"


def test_in_an_empty_folder_state_names_the_default_file_and_leaves_none(tmp_path: Path) -> None:
    environment = {name: value for name, value in os.environ.items() if name != "LEADERLOG_DB"}
    result = subprocess.run(
        [str(LEADERLOG), "state"],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert (result.stdout, result.stderr) == ("", refusal(tmp_path / "leaderlog.db"))
    assert list(tmp_path.iterdir()) == []


def test_the_database_named_by_the_environment_is_refused_the_same_way(tmp_path: Path) -> None:
    missing = tmp_path / "from-env.db"
    result = CliRunner().invoke(main, ["events"], env={"LEADERLOG_DB": f"sqlite:///{missing}"})
    assert result.exit_code == 1
    assert result.stderr == refusal(missing)
    assert not missing.exists()


@pytest.mark.parametrize(
    "command", [["import", str(SEED_FILE)], ["token", "create", "alice"]], ids=str
)
def test_a_command_that_writes_creates_the_database(tmp_path: Path, command: list[str]) -> None:
    created = tmp_path / "new.db"
    result = CliRunner().invoke(main, ["--db", f"sqlite:///{created}", *command])
    assert result.exit_code == 0, result.output
    assert list(tmp_path.iterdir()) == [created]  # nothing else, temporary or not
    verified = CliRunner().invoke(main, ["--db", f"sqlite:///{created}", "verify"])
    assert verified.exit_code == 0, verified.output


def test_a_file_named_in_bytes_that_are_not_utf8_is_created_by_import_or_not_at_all(
    tmp_path: Path,
) -> None:
    # Its temporary twin was named by a sqlite:/// URL, which cannot hold such bytes: the
    # import ended in a UnicodeEncodeError traceback.
    created = tmp_path / os.fsdecode(b"caf\xe9.db")
    url = f"sqlite:///{created}"
    refused = tmp_path / "refused.jsonl"
    refused.write_text(SEED_FILE.read_text(encoding="utf-8").splitlines()[-1] + "\n")
    result = CliRunner().invoke(main, ["--db", url, "import", str(refused)])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.stderr
    assert sorted(tmp_path.iterdir()) == [refused]
    result = CliRunner().invoke(main, ["--db", url, "import", str(SEED_FILE)])
    assert result.exit_code == 0, result.output
    assert sorted(tmp_path.iterdir()) == [created, refused]
    verified = CliRunner().invoke(main, ["--db", url, "verify"])
    assert verified.exit_code == 0, verified.output


def test_state_of_an_empty_log_says_how_to_fill_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"

    async def create_empty_log() -> None:
        async with await EventLog.open(url):
            pass

    asyncio.run(create_empty_log())
    listed = CliRunner().invoke(main, ["--db", url, "events"])
    assert (listed.exit_code, listed.stdout) == (0, "(no events)\n")
    result = CliRunner().invoke(main, ["--db", url, "state"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1:] == [
        "  (no posts: the log is empty; import records with leaderlog import FILE, or start "
        "leaderlog serve, which loads the seed article into an empty log)"
    ]
    # a log that has records but no posts known at that position just has none
    CliRunner().invoke(main, ["--db", url, "import", str(SEED_FILE)])
    # (and the events are listed with their actors in one column, past the longest id)
    lines = CliRunner().invoke(main, ["--db", url, "events"]).stdout.splitlines()
    assert len(lines) == 29 and {line.rindex(" cli") for line in lines} == {len(lines[0]) - 4}
    assert max(len(line.split()[3]) for line in lines) > 40
    # (no wider than the longest id: one space after it)
    longest = max(lines, key=lambda line: len(line.split()[3]))
    assert longest.endswith(f"{longest.split()[3]} cli")
    before = CliRunner().invoke(main, ["--db", url, "state", "--known-at", "1"])
    assert before.exit_code == 0, before.output
    assert before.stdout.splitlines()[1:] == ["  (no posts)"]


@pytest.mark.parametrize("command", [["verify"], ["state"], ["events"]])
def test_on_postgresql_a_schema_holding_no_log_is_refused_too(
    postgres_url: str, command: list[str]
) -> None:
    url = f"{postgres_url}?schema=no_log_{uuid.uuid4().hex[:12]}"
    result = CliRunner().invoke(main, ["--db", url, *command])
    assert result.exit_code == 1, result.output
    assert f"{url} holds no leaderlog log" in result.stderr  # ?schema= included
    assert "nothing was created" in result.stderr


# The second line retracts a claim that was never reported: a domain error, found only once
# the log is open.
REFUSED_RECORDS = (
    json.dumps({"type": "person.registered", "data": {"person": "x1", "name": "X"}})
    + "\n"
    + json.dumps({"type": "claim.retracted", "data": {"claim": "nope", "reason": "r"}})
    + "\n"
)


def test_a_refused_import_leaves_no_database_behind(tmp_path: Path) -> None:
    records = tmp_path / "bad.jsonl"
    records.write_text(REFUSED_RECORDS, encoding="utf-8")
    folder = tmp_path / "databases"
    folder.mkdir()
    database = folder / "bad1.db"
    # when an import into a database that does not exist is refused, as the user runs it
    result = subprocess.run(
        [str(LEADERLOG), "--db", f"sqlite:///{database}", "import", str(records)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert "line 2: claim.retracted refers to claim 'nope'" in result.stderr
    # then there is no database: no file, no -wal or -shm beside it, nothing temporary
    assert list(folder.iterdir()) == []
    # and verify says so rather than "chain OK, 0 events"
    verified = CliRunner().invoke(main, ["--db", f"sqlite:///{database}", "verify"])
    assert (verified.exit_code, verified.stderr) == (1, refusal(database))


def test_a_new_log_s_hidden_file_that_cannot_be_removed_is_named_with_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a folder in which the new log's hidden file cannot be removed once built (made
    # read-only meanwhile, say)
    folder = tmp_path / "databases"
    folder.mkdir()
    database = folder / "new.db"
    unlink = Path.unlink

    def refusing(path: Path, missing_ok: bool = False) -> None:
        if path.name.endswith(".leaderlog-new"):
            raise PermissionError(13, "Permission denied", str(path))
        unlink(path, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", refusing)
    # when a first import into it commits
    seeds = sorted(SEEDS.glob("*.jsonl"))
    result = CliRunner().invoke(main, ["--db", f"sqlite:///{database}", "import", *map(str, seeds)])
    # then the log is there, and the file left behind is named, with what to do
    assert result.exit_code == 0, result.output
    (hidden,) = [path for path in folder.iterdir() if path.name.endswith(".leaderlog-new")]
    assert (
        f"warning: could not remove {hidden} (Permission denied), left by the new log being "
        "built: it holds nothing the log has; delete it\n"
    ) in result.stderr
    assert sorted(path.name for path in folder.iterdir()) == sorted(["new.db", hidden.name])


def test_a_new_database_may_have_a_name_as_long_as_the_system_allows(tmp_path: Path) -> None:
    """The log is built under a temporary name beside it first, which must stay within the
    255 bytes a file name may have however long the database's own name is."""
    records = tmp_path / "bad.jsonl"
    records.write_text(REFUSED_RECORDS, encoding="utf-8")
    folder = tmp_path / "databases"
    folder.mkdir()
    database = folder / f"{'a' * 250}.db"
    url = f"sqlite:///{database}"
    refused = CliRunner().invoke(main, ["--db", url, "import", str(records)])
    assert refused.exit_code == 1, refused.output
    assert "line 2: claim.retracted refers to claim 'nope'" in refused.stderr
    assert list(folder.iterdir()) == []
    imported = CliRunner().invoke(
        main, ["--db", url, "import", *map(str, sorted(SEEDS.glob("*.jsonl")))]
    )
    assert imported.exit_code == 0, imported.output
    assert [path.name for path in folder.iterdir()] == [database.name]


def test_a_refused_import_into_a_file_without_a_log_leaves_the_file_as_it_was(
    tmp_path: Path,
) -> None:
    # given a SQLite file that another program keeps a table in
    shared = tmp_path / "shared.db"
    with contextlib.closing(sqlite3.connect(shared)) as connection, connection:
        connection.execute("CREATE TABLE other (x INTEGER)")
        connection.execute("INSERT INTO other VALUES (1)")
    # when an import into it is refused
    result = CliRunner().invoke(
        main, ["--db", f"sqlite:///{shared}", "import", "-"], input=REFUSED_RECORDS
    )
    assert result.exit_code == 1, result.output
    # then it holds its own table only, as before
    with contextlib.closing(sqlite3.connect(shared)) as connection:
        tables = connection.execute("SELECT name FROM sqlite_master").fetchall()
        assert tables == [("other",)]
        assert connection.execute("SELECT x FROM other").fetchall() == [(1,)]


def test_a_database_another_command_creates_meanwhile_gets_the_import(tmp_path: Path) -> None:
    """A first import is built under a temporary name: if the database appeared meanwhile,
    the import goes into that one, under its rules, and no temporary file is left."""
    database = tmp_path / "new.db"
    url = f"sqlite:///{database}"
    logs_created: list[bool] = []

    async def append(log: EventLog) -> AppendOutcome:
        if not logs_created:
            async with await EventLog.open(url) as other:  # another command, meanwhile
                await other.import_file(SEEDS / "ice-leadership-2025-05.jsonl", actor="cli")
        logs_created.append(log.store.created_log)
        return await log.append_events([PersonRegistered(person="x1", name="X")], actor="cli")

    outcome = asyncio.run(Context(url).append_to_log(append))

    assert outcome.positions == (30,)
    assert logs_created == [True, False]  # built anew, then appended to the one that appeared
    assert list(tmp_path.iterdir()) == [database]
    verified = CliRunner().invoke(main, ["--db", url, "verify"])
    assert verified.stdout.startswith("chain OK, 30 events")


def test_on_postgresql_a_refused_import_leaves_no_tables(postgres_url: str, tmp_path: Path) -> None:
    async def schema_objects(connection: asyncpg.Connection[asyncpg.Record], schema: str) -> Any:
        return (
            await connection.fetchval("SELECT 1 FROM pg_namespace WHERE nspname = $1", schema),
            sorted(
                row[0]
                for row in await connection.fetch(
                    "SELECT c.relname FROM pg_class c JOIN pg_namespace n "
                    "ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'",
                    schema,
                )
            ),
            await connection.fetchval(
                "SELECT COUNT(*) FROM pg_proc p JOIN pg_namespace n "
                "ON n.oid = p.pronamespace WHERE n.nspname = $1",
                schema,
            ),
        )

    def refused_import(url: str) -> None:
        result = CliRunner().invoke(main, ["--db", url, "import", "-"], input=REFUSED_RECORDS)
        assert result.exit_code == 1, result.output
        assert "[rule: reference]" in result.stderr

    def seeds_imported(url: str) -> None:
        result = CliRunner().invoke(
            main, ["--db", url, "import", str(SEEDS / "ice-leadership-2025-05.jsonl")]
        )
        assert result.exit_code == 0, result.output

    async def scenario() -> None:
        server = await asyncpg.connect(postgres_url)
        try:
            # a ?schema= that does not exist: the store would create it, and leaves none
            async with postgres_schema(postgres_url) as url:
                schema = url.rpartition("schema=")[2]
                await asyncio.to_thread(refused_import, url)
                assert await schema_objects(server, schema) == (None, [], 0)
            # a schema that exists with a table of its own: only that table is left
            async with postgres_schema(postgres_url) as url:
                schema = url.rpartition("schema=")[2]
                await server.execute(f'CREATE SCHEMA "{schema}"; CREATE TABLE "{schema}".other ()')
                await asyncio.to_thread(refused_import, url)
                assert await schema_objects(server, schema) == (1, ["other"], 0)
                # and a log that exists is kept, of course
                await asyncio.to_thread(seeds_imported, url)
                await asyncio.to_thread(refused_import, url)
                assert await server.fetchval(f'SELECT COUNT(*) FROM "{schema}".events') == 29
        finally:
            await server.close()

    asyncio.run(scenario())


def test_on_postgresql_an_import_whose_new_log_another_refused_import_dropped_is_decided_again(
    postgres_url: str,
) -> None:
    """Two first imports at once: the one that created the log is refused and drops it while
    the other has it open. The other is decided again on a log created anew, and answered on
    its own records, not with "the log is gone"."""

    async def scenario(records: str) -> tuple[int, AppendOutcome | Exception, int | None]:
        async with postgres_schema(postgres_url) as url:
            creator = await open_store(url)  # the first import's store, which created it
            calls = 0

            async def append(log: EventLog) -> AppendOutcome:
                nonlocal calls
                calls += 1
                if calls == 1:  # its import is refused meanwhile: it drops the empty log
                    assert await creator.discard_created_log()
                parsed, labels = parse_lines(records.splitlines())
                return await log.append_records(parsed, actor="cli", labels=labels)

            try:
                outcome: AppendOutcome | Exception = await Context(url).append_to_log(append)
            except LeaderlogError as error:
                outcome = error
            finally:
                await creator.close()
            async with postgres_connection(url) as connection:
                count = await connection.fetchval(
                    "SELECT COUNT(*) FROM pg_tables WHERE schemaname = current_schema() "
                    "AND tablename = 'events'"
                )
                events = await connection.fetchval("SELECT COUNT(*) FROM events") if count else None
            return calls, outcome, events

    good = (SEEDS / "ice-leadership-2025-05.jsonl").read_text(encoding="utf-8")
    calls, outcome, events = asyncio.run(scenario(good))
    assert calls == 2
    assert isinstance(outcome, AppendOutcome) and outcome.appended == 29
    assert events == 29

    calls, outcome, events = asyncio.run(scenario(REFUSED_RECORDS))
    assert calls == 2
    assert isinstance(outcome, BatchError)
    assert str(outcome).startswith("line 2: claim.retracted refers to claim 'nope'")
    assert events is None  # the log created anew is dropped in turn: nothing is left


def test_a_read_of_a_missing_database_named_in_capitals_is_refused_too(tmp_path: Path) -> None:
    # given a URL whose scheme is written in capitals, as the store takes it
    missing = tmp_path / "typo.db"
    # when a command that only reads is run on a file that does not exist
    result = CliRunner().invoke(main, ["--db", f"SQLITE:///{missing}", "events"])
    # then it is refused as a lower-case sqlite:/// URL is, and no empty database is left
    assert result.exit_code == 1, result.output
    assert result.stderr == refusal(missing)
    assert list(tmp_path.iterdir()) == []
