"""``leaderlog token create|revoke|list``: the token on stdout once, errors on stderr."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any, cast

import pytest
from click.testing import CliRunner, Result

from leaderlog.cli import main
from leaderlog.cli.token_commands import _withdraw_unshown
from leaderlog.errors import StoreError, TokenError
from leaderlog.log import EventLog
from leaderlog.tokens import Tokens
from tests.cli.full_disk import to_a_full_disk


def leaderlog(url: str, *arguments: str) -> Result:
    return CliRunner().invoke(main, ["--db", url, *arguments])


def check(url: str, token: str) -> str:
    async def go() -> str:
        async with await EventLog.open(url) as log:
            return await Tokens(log.store).check(token)

    return asyncio.run(go())


def refused(result: Result, message: str) -> None:
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert message in result.stderr
    assert result.stderr.startswith("error: ")
    assert "Traceback" not in result.stderr


def listing(url: str) -> list[dict[str, Any]]:
    result = leaderlog(url, "token", "list", "--json")
    assert result.exit_code == 0, result.output
    found: list[dict[str, Any]] = json.loads(result.stdout)
    return found


def test_create_prints_only_the_token_on_stdout(sqlite_url: str) -> None:
    result = leaderlog(sqlite_url, "token", "create", "alice")
    assert result.exit_code == 0, result.output
    token = result.stdout.strip()
    assert result.stdout == token + "\n"  # T=$(leaderlog token create alice) gets just it
    assert token.startswith("ll_")
    assert "shown only this once" in result.stderr
    assert token not in result.stderr
    assert check(sqlite_url, token) == "alice"


def test_list_shows_names_and_states_never_tokens(sqlite_url: str) -> None:
    alice = leaderlog(sqlite_url, "token", "create", "alice").stdout.strip()
    bob = leaderlog(sqlite_url, "token", "create", "bob").stdout.strip()
    assert leaderlog(sqlite_url, "token", "revoke", "bob").exit_code == 0

    text = leaderlog(sqlite_url, "token", "list")
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["alice", "bob"]
    assert lines[0].endswith("live")
    assert "revoked" in lines[1]

    found = listing(sqlite_url)
    assert [(entry["name"], entry["revoked_at"] is None) for entry in found] == [
        ("alice", True),
        ("bob", False),
    ]
    assert set(found[0]) == {"name", "created_at", "revoked_at"}
    for token in (alice, bob):
        assert token not in text.stdout
        assert token not in json.dumps(found)


def test_list_of_no_tokens_is_empty(sqlite_url: str) -> None:
    async def create_empty_log() -> None:
        async with await EventLog.open(sqlite_url):
            pass

    asyncio.run(create_empty_log())
    assert listing(sqlite_url) == []


def test_revoke_stops_the_token_at_once(sqlite_url: str) -> None:
    token = leaderlog(sqlite_url, "token", "create", "alice").stdout.strip()
    result = leaderlog(sqlite_url, "token", "revoke", "alice")
    assert result.exit_code == 0, result.output
    assert "revoked" in result.stdout
    with pytest.raises(TokenError, match="revoked"):
        check(sqlite_url, token)


def test_revoke_then_create_gives_a_new_token(sqlite_url: str) -> None:
    old = leaderlog(sqlite_url, "token", "create", "alice").stdout.strip()
    leaderlog(sqlite_url, "token", "revoke", "alice")
    new = leaderlog(sqlite_url, "token", "create", "alice").stdout.strip()
    assert new.startswith("ll_")
    assert new != old
    assert check(sqlite_url, new) == "alice"


def test_list_keeps_a_revoked_token_whose_name_was_given_a_new_one(sqlite_url: str) -> None:
    leaderlog(sqlite_url, "token", "create", "alice")
    assert leaderlog(sqlite_url, "token", "revoke", "alice").exit_code == 0
    assert leaderlog(sqlite_url, "token", "create", "alice").exit_code == 0

    found = listing(sqlite_url)
    assert [(entry["name"], entry["revoked_at"] is None) for entry in found] == [
        ("alice", False),
        ("alice", True),
    ]
    assert found[0]["created_at"] <= found[0]["revoked_at"] <= found[1]["created_at"]
    lines = leaderlog(sqlite_url, "token", "list").stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["alice", "alice"]
    assert f"revoked {found[0]['revoked_at']}" in lines[0]
    assert lines[1].endswith("live")


def test_list_without_tokens_says_so(sqlite_url: str) -> None:
    async def create_the_log() -> None:
        async with await EventLog.open(sqlite_url):
            pass

    asyncio.run(create_the_log())
    text = leaderlog(sqlite_url, "token", "list")
    assert text.exit_code == 0, text.output
    assert text.stdout == "(no tokens: create one with leaderlog token create NAME)\n"
    assert listing(sqlite_url) == []


def test_create_twice_is_refused(sqlite_url: str) -> None:
    first = leaderlog(sqlite_url, "token", "create", "alice").stdout.strip()
    refused(leaderlog(sqlite_url, "token", "create", "alice"), "revoke it first")
    assert check(sqlite_url, first) == "alice"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("Alice", "token name 'Alice' must be 1-64 of a-z"),
        ("a b", "token name 'a b' must be 1-64 of a-z"),
        ("x" * 65, f"token name '{'x' * 65}' must be 1-64 of a-z"),
        ("seed", "token name 'seed' is reserved"),
    ],
)
def test_bad_names_are_a_usage_mistake_exit_2(tmp_path: Path, name: str, message: str) -> None:
    database = tmp_path / "leaderlog.db"
    result = leaderlog(f"sqlite:///{database}", "token", "create", name)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("Usage: ")
    assert f"Error: Invalid value for 'NAME': {message}" in result.stderr
    assert not database.exists()  # refused before the log was opened


def test_a_token_that_cannot_be_shown_is_revoked_so_the_name_gets_another(
    sqlite_url: str,
) -> None:
    # when the token cannot be printed (a full disk)
    lost = to_a_full_disk("--db", sqlite_url, "token", "create", "lost2")
    # then nobody has it, and nobody can use it
    assert lost.returncode == 1
    assert lost.stderr == (
        "error: cannot write the output: No space left on device; the token for 'lost2' was "
        "never shown, so it was revoked: create it again\n"
    )
    assert [entry["revoked_at"] is not None for entry in listing(sqlite_url)] == [True]
    # and the name gets a new one
    token = leaderlog(sqlite_url, "token", "create", "lost2").stdout.strip()
    assert check(sqlite_url, token) == "lost2"


def test_a_revocation_whose_report_cannot_be_written_says_it_was_done(sqlite_url: str) -> None:
    token = leaderlog(sqlite_url, "token", "create", "alice").stdout.strip()
    revoked = to_a_full_disk("--db", sqlite_url, "token", "revoke", "alice")
    assert revoked.returncode == 1
    assert revoked.stderr == (
        "error: cannot write the output: No space left on device; the token for 'alice' was "
        "revoked all the same\n"
    )
    with pytest.raises(TokenError, match="token revoked"):
        check(sqlite_url, token)


def test_revoking_unknown_or_revoked_names_is_refused(sqlite_url: str) -> None:
    leaderlog(sqlite_url, "token", "create", "alice")
    refused(leaderlog(sqlite_url, "token", "revoke", "nobody"), "no token named 'nobody'")
    leaderlog(sqlite_url, "token", "revoke", "alice")
    refused(leaderlog(sqlite_url, "token", "revoke", "alice"), "already revoked")


def test_revoking_a_name_in_bytes_that_are_not_utf8_is_a_usage_mistake(sqlite_url: str) -> None:
    leaderlog(sqlite_url, "token", "create", "alice")
    result = leaderlog(sqlite_url, "token", "revoke", "caf\udce9")
    assert result.exit_code == 2, result.output
    assert "token name 'caf\\udce9' holds bytes that are not UTF-8 text" in result.stderr
    assert [entry["revoked_at"] for entry in listing(sqlite_url)] == [None]


def test_the_database_can_come_from_the_environment(sqlite_url: str) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["token", "create", "alice"], env={"LEADERLOG_DB": sqlite_url})
    assert result.exit_code == 0, result.output
    assert check(sqlite_url, result.stdout.strip()) == "alice"


def test_postgres_tokens_work_through_the_cli(postgres_url: str) -> None:
    from tests.store import postgres_schema

    async def in_schema() -> None:
        async with postgres_schema(postgres_url) as url:
            await asyncio.to_thread(run_commands, url)

    def run_commands(url: str) -> None:
        token = leaderlog(url, "token", "create", "alice").stdout.strip()
        assert check(url, token) == "alice"
        assert leaderlog(url, "token", "revoke", "alice").exit_code == 0
        assert listing(url)[0]["revoked_at"] is not None

    asyncio.run(in_schema())


def test_help_shows_the_commands_with_examples() -> None:
    result = CliRunner().invoke(main, ["token", "--help"])
    assert result.exit_code == 0
    for command in ("create", "revoke", "list"):
        assert command in result.stdout
    assert "leaderlog token create alice" in result.stdout


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("Bad-Name", "token name 'Bad-Name' must be 1-64 of a-z"),
        ("alice\n", "token name 'alice\\n' must be 1-64 of a-z"),
        ("seed", "token name 'seed' is reserved"),
    ],
)
@pytest.mark.parametrize("log_exists", [True, False])
def test_revoking_a_name_create_refuses_is_the_same_usage_mistake(
    tmp_path: Path, name: str, message: str, log_exists: bool
) -> None:
    database = tmp_path / "leaderlog.db"
    url = f"sqlite:///{database}"
    if log_exists:
        assert leaderlog(url, "token", "create", "alice").exit_code == 0
    result = leaderlog(url, "token", "revoke", name)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("Usage: ")
    assert f"Error: Invalid value for 'NAME': {message}" in result.stderr
    assert database.exists() == log_exists
    if log_exists:
        assert [entry["revoked_at"] for entry in listing(url)] == [None]


def test_a_token_an_earlier_version_named_with_a_final_newline_can_still_be_revoked(
    sqlite_url: str, tmp_path: Path
) -> None:
    # Versions that matched names with re.match let "alice\n" through create.
    leaderlog(sqlite_url, "token", "create", "alice")
    with sqlite3.connect(tmp_path / "leaderlog.db") as connection:
        connection.execute(
            "INSERT INTO write_tokens VALUES ('bob\n', 'x', '2026-01-01T00:00:00.000000Z', NULL)"
        )
    result = leaderlog(sqlite_url, "token", "revoke", "bob\n")
    assert result.exit_code == 0, result.output
    assert [entry["revoked_at"] is None for entry in listing(sqlite_url)] == [True, False]


def test_revoking_a_name_create_refuses_where_no_log_is_is_the_usage_mistake_too(
    tmp_path: Path, postgres_url: str
) -> None:
    from tests.store import postgres_schema

    # another program's SQLite database, and a PostgreSQL schema, neither holding a log
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE notes (x)")

    async def in_schema() -> Result:
        async with postgres_schema(postgres_url) as url:
            return await asyncio.to_thread(leaderlog, url, "token", "revoke", "Bad-Name")

    results = [leaderlog(f"sqlite:///{other}", "token", "revoke", "Bad-Name")]
    results.append(asyncio.run(in_schema()))
    for result in results:
        assert result.exit_code == 2, result.output
        assert "Error: Invalid value for 'NAME': token name 'Bad-Name' must be" in result.stderr


def test_list_lines_up_the_times_of_names_of_different_lengths(sqlite_url: str) -> None:
    # given tokens with a short name and a longer one
    for name in ("al", "bartholomew"):
        assert leaderlog(sqlite_url, "token", "create", name).exit_code == 0
    # when they are listed as text
    listed = leaderlog(sqlite_url, "token", "list")
    assert listed.exit_code == 0, listed.output
    # then each name takes the same column width, so that the times line up
    lines = listed.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["al", "bartholomew"]
    assert {line.index(" created ") for line in lines} == {24}


def test_list_lines_up_the_times_beside_a_name_longer_than_its_column(sqlite_url: str) -> None:
    # given a token whose name is longer than the 24 characters shown for most
    long_name = "desk-of-the-international-editor"
    for name in ("al", long_name):
        assert leaderlog(sqlite_url, "token", "create", name).exit_code == 0
    # when they are listed as text, then the times still line up, after the longest name
    lines = leaderlog(sqlite_url, "token", "list").stdout.splitlines()
    assert {line.index(" created ") for line in lines} == {len(long_name)}


def test_a_token_not_shown_whose_revocation_fails_says_how_to_revoke_it() -> None:
    # given a token that could not be shown, and a store that refuses to revoke it
    class FailingRevoke:
        async def revoke(self, name: str) -> None:
            raise StoreError("database is locked")

    # when it is withdrawn
    said = asyncio.run(_withdraw_unshown(cast(Tokens, cast(Any, FailingRevoke())), "alice"))
    # then the user is told it is still live and how to put that right
    assert said == (
        "the token for 'alice' was created but not shown, and revoking it failed "
        "(database is locked): revoke it with leaderlog token revoke alice, then create it again"
    )


def test_token_list_as_json_is_indented_as_every_json_answer_is(sqlite_url: str) -> None:
    # given a token
    assert CliRunner().invoke(main, ["--db", sqlite_url, "token", "create", "alice"]).exit_code == 0
    # when tokens are listed as JSON
    listed = CliRunner().invoke(main, ["--db", sqlite_url, "token", "list", "--json"])
    # then the JSON is indented by two spaces, one member a line
    assert listed.exit_code == 0, listed.output
    assert listed.stdout.startswith('[\n  {\n    "created_at": ')
