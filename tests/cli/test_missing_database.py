"""A SQLite database that does not exist: commands that only read refuse it, leaving no file
behind; commands that write create it. An existing but empty log says how to fill it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from leaderlog.cli import main
from leaderlog.log import EventLog
from tests.conftest import SEEDS

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
    assert created.is_file()
    verified = CliRunner().invoke(main, ["--db", f"sqlite:///{created}", "verify"])
    assert verified.exit_code == 0, verified.output


def test_state_of_an_empty_log_says_how_to_fill_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"

    async def create_empty_log() -> None:
        async with await EventLog.open(url):
            pass

    asyncio.run(create_empty_log())
    result = CliRunner().invoke(main, ["--db", url, "state"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1:] == [
        "  (no posts: the log is empty; import records with leaderlog import FILE, or start "
        "leaderlog serve, which loads the seed article into an empty log)"
    ]
    # a log that has records but no posts known at that position just has none
    CliRunner().invoke(main, ["--db", url, "import", str(SEED_FILE)])
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
    assert "holds no leaderlog log" in result.stderr
    assert "nothing was created" in result.stderr
