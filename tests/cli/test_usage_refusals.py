"""Usage mistakes the command line must refuse, or explain, as it does their close cousins."""

from __future__ import annotations

import io
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from leaderlog.cli import _terminal, main
from tests.cli.test_serve_commands import occupied_port
from tests.conftest import SEEDS, invoke, ok


@pytest.fixture
def seeded_url(sqlite_url: str) -> str:
    for seed_file in sorted(SEEDS.glob("*.jsonl")):
        ok(invoke(sqlite_url, "import", str(seed_file)))
    return sqlite_url


@pytest.mark.parametrize(
    "base_url", ["http://example.com/#", "http://example.com/sub#", "http://example.com/?#"]
)
def test_feed_refuses_a_base_url_with_an_empty_fragment(seeded_url: str, base_url: str) -> None:
    # An empty fragment is still a fragment: the feed's paths would follow the "#", and every
    # link would point at the base address (http://example.com/#/feeds/all.atom).
    result = invoke(seeded_url, "feed", "--base-url", base_url)
    assert result.exit_code == 2, result.stdout
    assert "without ?query or #fragment" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("arguments", "command"),
    [
        (["token", "create", "alice", "--db", "sqlite:///x.db"], "token create"),
        (["token", "list", "--db=sqlite:///x.db"], "token list"),
        (["token", "revoke", "--db", "sqlite:///x.db", "alice"], "token revoke"),
    ],
)
def test_db_after_a_subcommand_of_a_group_names_the_whole_command(
    arguments: list[str], command: str
) -> None:
    # "leaderlog --db URL create ..." would be no command at all.
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code == 2
    assert f"Error: --db goes before the command: leaderlog --db URL {command} ..." in (
        result.stderr
    )


def test_token_list_shows_a_name_an_earlier_version_let_end_in_a_newline_on_one_line(
    sqlite_url: str, tmp_path: Path
) -> None:
    # Versions that matched names with re.match let "bob\n" through create: listed as it is,
    # it would end its line early and leave its times on a line of their own.
    ok(invoke(sqlite_url, "token", "create", "alice"))
    with sqlite3.connect(tmp_path / "leaderlog.db") as connection:
        connection.execute(
            "INSERT INTO write_tokens VALUES ('bob\n', 'x', '2026-01-01T00:00:00.000000Z', NULL)"
        )
    lines = ok(invoke(sqlite_url, "token", "list")).splitlines()
    assert len(lines) == 2
    assert lines[1].startswith("bob\\n ")
    assert lines[1].endswith("created 2026-01-01T00:00:00.000000Z  live")


@pytest.mark.parametrize("base_url", ["http://example.com:0", "https://example.com:000/feeds"])
def test_feed_refuses_a_base_url_on_port_0_as_serve_refuses_it(
    seeded_url: str, base_url: str
) -> None:
    # No reader can reach port 0: every link of the document would lead nowhere.
    result = invoke(seeded_url, "feed", "--base-url", base_url)
    assert result.exit_code == 2, result.stdout
    assert "give a port from 1 to 65535, not 0" in result.stderr
    # (on a port taken, so that serve taking it would end at once, not serve for ever)
    with occupied_port() as port:
        served = invoke(seeded_url, "serve", "--port", str(port), "--public-url", base_url)
    assert served.exit_code == 2
    assert "is not an http(s) address" in served.stderr


@pytest.mark.parametrize("kind", ["org", "person", "post"])
def test_feed_refuses_a_scope_longer_than_any_id_as_state_and_history_do(
    seeded_url: str, kind: str
) -> None:
    # Looked up, it was repeated whole in one error line (100,000 characters here).
    subject = "a" * 100_000
    result = invoke(seeded_url, "feed", "--scope", f"{kind}:{subject}")
    assert result.exit_code == 2, result.stderr[:200]
    assert "its id is 100000 characters long; no id is longer than 64" in result.stderr
    assert subject not in result.stderr
    option = invoke(seeded_url, "history", f"--{kind}", subject)
    assert option.exit_code == 2
    assert "is 100000 characters long; no id is longer than 64" in option.stderr


def test_a_file_name_with_a_line_break_is_shown_escaped_when_refused(
    sqlite_url: str, tmp_path: Path
) -> None:
    # given a file name holding a line break, naming no file, and a folder named so
    folder = tmp_path / "dir\nx"
    folder.mkdir()
    for given in (str(tmp_path / "no\nfile"), str(folder)):
        # when imported, then the refusal names it on one line, as a problem line would
        result = invoke(sqlite_url, "import", given)
        assert result.exit_code == 2, result.stderr
        (said,) = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
        assert given.replace("\n", "\\n") in said, result.stderr


def test_db_after_serve_also_names_the_variable_scripts_run_reads() -> None:
    # scripts/run passes its arguments to serve: "--db" before the command is out of reach.
    result = CliRunner().invoke(main, ["serve", "--db", "sqlite:///x.db"])
    assert result.exit_code == 2
    assert (
        "Error: --db goes before the command: leaderlog --db URL serve ..., "
        "or set LEADERLOG_DB=URL (as in LEADERLOG_DB=URL leaderlog serve)"
    ) in " ".join(result.stderr.split())


@pytest.mark.parametrize(
    ("environment", "drawn"),
    [
        ({"FORCE_COLOR": "1"}, "False"),
        ({"FORCE_COLOR": "0"}, "False"),
        ({"TTY_COMPATIBLE": "1"}, "True"),
    ],
)
def test_progress_bars_are_drawn_on_terminals_only_whatever_force_color_says(
    environment: dict[str, str], drawn: str
) -> None:
    # rich takes FORCE_COLOR (any value) for a terminal: CI systems that set it for colours
    # got bars, escape codes and carriage returns in their logs and pipes
    program = "from leaderlog.cli._terminal import err_console as e; print(e.is_terminal)"
    others = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    finished = subprocess.run(
        [sys.executable, "-c", program],
        env={**others, **environment},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert finished.stdout.strip() == drawn


def test_a_command_reading_a_file_runs_with_its_standard_input_closed(tmp_path: Path) -> None:
    # import FILE looked at stdin to tell "-" from the files: with stdin closed it failed
    # with a Python trace
    records = tmp_path / "records.jsonl"
    records.write_text(
        '{"type": "person.registered", "data": {"person": "zed", "name": "Zed"}}\n',
        encoding="utf-8",
    )
    leaderlog = Path(sys.executable).with_name("leaderlog")
    finished = subprocess.run(
        [str(leaderlog), "--db", f"sqlite:///{tmp_path / 'x.db'}", "import", str(records)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
        preexec_fn=lambda: os.close(0),
    )
    assert (finished.returncode, finished.stdout) == (0, "appended 1, already present 0\n")


def test_a_database_name_the_locale_cannot_write_is_refused_in_one_line(tmp_path: Path) -> None:
    # a UTF-8 name in a C locale with UTF-8 mode off: import ended in a Python trace, and the
    # other commands said the existing file did not exist
    folder = tmp_path / "\u65e5"
    folder.mkdir()
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG"))},
        "LC_ALL": "C",
        "PYTHONUTF8": "0",
    }
    leaderlog = Path(sys.executable).with_name("leaderlog")
    url = f"sqlite:///{tmp_path}/%E6%97%A5/n.db"
    for command in (["import", str(SEEDS / "ice-leadership-2025-05.jsonl")], ["state"]):
        finished = subprocess.run(
            [str(leaderlog), "--db", url, *command],
            env=environment,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert finished.returncode == 2, finished.stderr
        assert "its name cannot be written in this system's encoding for file names" in (
            finished.stderr
        )
        assert "Traceback" not in finished.stderr
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize(
    ("arguments", "usage"),
    [
        (["state", "--org"], "Usage: leaderlog state [OPTIONS]"),
        (["audit", "--status"], "Usage: leaderlog audit [OPTIONS]"),
        (["import", "--actor"], "Usage: leaderlog import [OPTIONS] FILE..."),
        (["feed", "--scope"], "Usage: leaderlog feed [OPTIONS]"),
        (["--db"], "Usage: leaderlog [OPTIONS] COMMAND [ARGS]..."),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else "",
)
def test_an_option_given_without_its_value_is_shown_with_the_commands_usage(
    arguments: list[str], usage: str
) -> None:
    # Forgetting a value is the commonest usage mistake; click's parser raises it without the
    # command, so it came out as a bare "Error:" line, unlike every other usage mistake.
    result = CliRunner().invoke(main, arguments, prog_name="leaderlog")
    assert result.exit_code == 2
    assert result.stderr.startswith(usage), result.stderr
    assert "--help' for help." in result.stderr
    assert "requires an argument" in result.stderr
    assert result.stdout == ""


def test_a_closed_stream_is_no_terminal_to_draw_bars_on(monkeypatch: pytest.MonkeyPatch) -> None:
    # given no TTY_COMPATIBLE saying either way, and a stream that has been closed
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    closed = io.StringIO()
    closed.close()
    # when it is asked whether it redraws lines, then it does not (its isatty() raises)
    assert _terminal._a_terminal(closed) is False


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (
            ["claim", "some-claim", "--as-of", "2025-06-01"],
            "No such option '--as-of' for leaderlog claim: it is an option of state",
        ),
        (
            ["audit", "--org", "ice"],
            "No such option '--org' for leaderlog audit: it is an option of history and state",
        ),
        (
            ["state", "--base-url", "http://example.com/"],
            "No such option '--base-url' for leaderlog state: it is an option of feed",
        ),
    ],
)
def test_an_option_of_another_command_is_named_as_such_not_matched_by_its_spelling(
    arguments: list[str], said: str
) -> None:
    # click alone guesses by spelling: "claim --as-of" got "Did you mean '--json'?".
    result = CliRunner().invoke(main, arguments, prog_name="leaderlog")
    assert result.exit_code == 2
    assert f"Error: {said}\n" in result.stderr
    assert "Did you mean" not in result.stderr
    assert f"Usage: leaderlog {arguments[0]} [OPTIONS]" in result.stderr


def test_an_option_no_command_takes_keeps_clicks_suggestion() -> None:
    result = CliRunner().invoke(main, ["state", "--jsn"])
    assert result.exit_code == 2
    assert "Error: No such option '--jsn'. Did you mean '--json'?" in result.stderr


@pytest.mark.parametrize(
    ("arguments", "shown"),
    [
        (["events", "\x1b[2J"], "Got unexpected extra argument (\\x1b[2J)"),
        (["events", "a\rb"], "Got unexpected extra argument (a\\rb)"),
        (["claim", "x", "\u202eb"], "Got unexpected extra argument (\\u202eb)"),
    ],
)
def test_an_argument_click_quotes_as_typed_is_shown_escaped(
    sqlite_url: str, arguments: list[str], shown: str
) -> None:
    # Given an extra argument with a control or bidirectional formatting character, which
    # click quotes in its refusal as typed, when the command refuses it, then the refusal
    # shows it escaped, as every other line is: a CR would overwrite the message, and an
    # escape sequence would vanish from it off a terminal ("Got unexpected extra argument ()").
    result = invoke(sqlite_url, *arguments)
    assert result.exit_code == 2
    assert shown in result.stderr
    assert not any(character in result.stderr for character in "\x1b\r\u202e")
