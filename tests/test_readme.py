"""The documentation's code runs as written: the README's commands and Python examples, and
the example projection in projections/README.md."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from click.testing import CliRunner

import leaderlog.cli.projection_commands  # noqa: F401  (registers the commands on main)
import tests.conftest
from leaderlog.cli import main
from leaderlog.errors import StoreUnavailable
from leaderlog.log import EventLog
from tests.conftest import ROOT, SEEDS, free_port, ok

README = ROOT / "README.md"
PROJECTIONS_README = ROOT / "projections" / "README.md"


class Command(NamedTuple):
    line: int
    arguments: list[str]
    redirect: str | None
    expected: list[str]


# A curl that posts a file to the write API, made here through the library as the token's
# writer would be recorded (the write API itself is tested over HTTP in tests/http).
_POSTED = re.compile(r".*-d @(?P<file>\S+) \S*/api/events")
_ECHOED = re.compile(r"echo '(?P<text>[^']*)' > (?P<file>\S+)$")
WRITE_API = "(write API)"
WRITE_FILE = "(echo)"


def _post_as_last_token(file: Path, tokens: list[str]) -> None:
    async def post() -> None:
        async with await EventLog.open() as log:
            await log.append_raw(json.loads(file.read_text(encoding="utf-8")), actor=tokens[-1])

    asyncio.run(post())


def readme_commands() -> list[Command]:
    """Every ``leaderlog`` command of the README's code blocks, in order, with the output a
    ``$ `` console block shows after it. Pipelines are left out (they need PostgreSQL)."""
    lines = README.read_text(encoding="utf-8").splitlines()
    commands: list[Command] = []
    fenced = False
    for number, text in enumerate(lines, start=1):
        if text.startswith("```"):
            fenced = not fenced
            continue
        shown = text.removeprefix("$ ").removeprefix("    ")
        if fenced and (posted := _POSTED.match(shown)):
            commands.append(Command(number, [WRITE_API, posted["file"]], None, []))
            continue
        if fenced and (echoed := _ECHOED.match(shown)):
            commands.append(Command(number, [WRITE_FILE, echoed["file"], echoed["text"]], None, []))
            continue
        if text.startswith("T=$("):  # the README keeps the token a command prints
            shown = text.removeprefix("T=$(").removesuffix(")")
        if not (fenced or text.startswith("    ")) or not shown.startswith("leaderlog "):
            continue
        if "|" in shown:
            continue
        words = shlex.split(shown, comments=True)[1:]
        redirect = None
        if ">" in words:
            words, redirect = words[: words.index(">")], words[-1]
        expected = []
        if text.startswith("$ "):
            for following in lines[number:]:
                if following.startswith(("$ ", "```")):
                    break
                expected.append(following)
        commands.append(Command(number, words, redirect, expected))
    return commands


def test_the_readme_commands_run_as_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LEADERLOG_DB", raising=False)
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(ROOT / "projections"))
    shutil.copytree(SEEDS, tmp_path / "seeds")
    commands = readme_commands()
    assert len(commands) >= 25
    said: dict[str, str] = {}
    tokens: list[str] = []
    for command in commands:
        if command.arguments[0] == WRITE_API:
            _post_as_last_token(tmp_path / command.arguments[1], tokens)
            continue
        if command.arguments[0] == WRITE_FILE:
            (tmp_path / command.arguments[1]).write_text(command.arguments[2] + "\n")
            continue
        if command.arguments[:2] == ["token", "create"]:
            tokens.append(command.arguments[2])
        result = CliRunner().invoke(main, command.arguments)
        where = f"README.md:{command.line} leaderlog {shlex.join(command.arguments)}"
        if any(line.startswith("error: ") for line in command.expected):
            assert result.exit_code == 1, where
            assert result.stderr.splitlines() == command.expected, where
            continue
        assert result.exit_code == 0, f"{where}\n{result.output}{result.stderr}"
        for line in command.expected:
            assert line in result.stdout, where
        if command.redirect:
            (tmp_path / command.redirect).write_bytes(result.stdout_bytes)
        said.setdefault(shlex.join(command.arguments), result.stdout)
    # what the first block's comments promise
    imported = "import seeds/ice-leadership-2025-05.jsonl"
    assert said[imported].strip() == "appended 29, already present 0"
    assert said["verify"].startswith("chain OK, 29 events, head hash ")
    assert said["--db sqlite:///other.db import log.jsonl"].strip() == (
        "appended 29, already present 0"
    )


CHAIN_CHECK = "# check_chain.py"


def python_blocks(path: Path) -> list[str]:
    """The Python examples, but for the chain checker (a script, not a library example)."""
    blocks = re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.DOTALL)
    return [block for block in blocks if not block.startswith(CHAIN_CHECK)]


def test_the_readme_chain_check_recomputes_an_export_as_verify_does(tmp_path: Path) -> None:
    (script,) = re.findall(
        rf"```python\n({CHAIN_CHECK}.*?)```", README.read_text(encoding="utf-8"), re.DOTALL
    )
    (tmp_path / "check_chain.py").write_text(script, encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'log.db'}"
    runner = CliRunner()
    ok(runner.invoke(main, ["--db", url, "import", *map(str, sorted(SEEDS.glob("*.jsonl")))]))
    hostile = {
        "type": "claim.retracted",
        "data": {
            "claim": "fox-ice-shakeup-2025-05-genalo-retirement",
            "reason": '</script>\t\u00e9 \U0001f600 \u2028 \u202e "quoted" \\',
        },
    }
    (tmp_path / "more.jsonl").write_text(json.dumps(hostile) + "\n", encoding="utf-8")
    ok(runner.invoke(main, ["--db", url, "import", str(tmp_path / "more.jsonl")]))
    export = ok(runner.invoke(main, ["--db", url, "export"]))
    verified = ok(runner.invoke(main, ["--db", url, "verify"]))

    def check(text: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(tmp_path / "check_chain.py")],
            input=text,
            capture_output=True,
            text=True,
            encoding="utf-8",
        )

    checked = check(export)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip() == verified.strip().splitlines()[-1]

    broken = check(export.replace("</script>", "<script>", 1))
    assert broken.returncode == 1 and "chain BROKEN at position 30" in broken.stderr


async def run_example(code: str, where: Path) -> dict[str, Any]:
    """Run an example written for an async REPL (top-level await); returns its variables."""
    wrapped = "async def example():\n" + textwrap.indent(code, "    ") + "    return locals()\n"
    namespace: dict[str, Any] = {}
    exec(compile(wrapped, str(where), "exec"), namespace)
    found: dict[str, Any] = await namespace["example"]()
    return found


async def test_the_readme_python_examples_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    library, queries, feeds = python_blocks(README)
    monkeypatch.chdir(tmp_path)
    shutil.copytree(SEEDS, tmp_path / "seeds")

    # Run before the log is written (or in another folder), the reading examples say
    # so rather than make an empty log and answer from it.
    for reading in (queries, feeds):
        with pytest.raises(StoreUnavailable, match="does not exist"):
            await run_example(reading, README)
    assert not (tmp_path / "leaderlog.db").exists()

    await run_example(library, README)
    assert "ok=True, count=30" in capsys.readouterr().out

    found = await run_example(queries, README)
    state = found["state"]
    assert state["known_at"]["position"] == 22
    posts = {post["post"]["post"]: post for post in state["posts"]}
    assert posts["ice-ero-ead"]["holders"][0]["person"] == "kenneth-genalo"

    capsys.readouterr()
    await run_example(feeds, README)
    assert capsys.readouterr().out.startswith('application/atom+xml; charset=utf-8 W/"')


def test_the_example_user_projection_is_built_and_kept_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (module,) = python_blocks(PROJECTIONS_README)
    folder = tmp_path / "projections"
    folder.mkdir()
    (folder / "claims_per_publisher.py").write_text(module, encoding="utf-8")
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(folder))
    monkeypatch.delenv("LEADERLOG_DB", raising=False)
    database = tmp_path / "readme.db"
    url = f"sqlite:///{database}"

    def invoke(*args: str, stdin: str | None = None) -> str:
        return ok(CliRunner().invoke(main, ["--db", url, *args], input=stdin))

    def counts() -> list[tuple[str, int]]:
        with sqlite3.connect(database) as connection:
            return connection.execute(
                "SELECT publisher, claims FROM p_claims_per_publisher_counts"
            ).fetchall()

    invoke("import", str(SEEDS / "ice-leadership-2025-05.jsonl"))
    invoke("rebuild", "claims_per_publisher")
    assert counts() == [("Fox News", 10)]

    # one more claim from the same article: the next query brings the projection up to date
    another = (
        '{"type": "claim.reported", "data": {"claim": "another", '
        '"source": "fox-ice-shakeup-2025-05", "kind": "incumbency", "person": "derek-gordon", '
        '"post": "ice-hsi-dsac", "capacity": "unspecified", "modality": "occurred", '
        '"attribution": {"kind": "outlet", "parties": ["Fox News"]}}}\n'
    )
    invoke("import", "-", stdin=another)
    assert counts() == [("Fox News", 10)]
    invoke("state", "--org", "ice-hsi")
    listed = invoke("projections")
    assert re.search(r"^claims_per_publisher\s+1\s+30\s+30\s+0$", listed, re.MULTILINE), listed
    assert counts() == [("Fox News", 11)]


def test_the_readme_move_brings_user_projections_up_on_the_new_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a log whose example projection is built, moved into a new database by export and import
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(ROOT / "projections"))
    monkeypatch.delenv("LEADERLOG_DB", raising=False)
    old, new = f"sqlite:///{tmp_path / 'old.db'}", f"sqlite:///{tmp_path / 'new.db'}"

    def invoke(url: str, *args: str, stdin: str | None = None) -> str:
        return ok(CliRunner().invoke(main, ["--db", url, *args], input=stdin))

    invoke(old, "import", str(SEEDS / "ice-leadership-2025-05.jsonl"))
    invoke(old, "rebuild", "turnover")
    invoke(new, "import", "-", stdin=invoke(old, "export"))
    text = README.read_text(encoding="utf-8")
    move = text[text.index("To move a log to another database") :]
    move = move[: move.index("\n\n")]
    rebuild = re.findall(r"`leaderlog (rebuild[^`]*)`", move)[0]

    # when the rebuild the README gives for that step runs there
    invoke(new, *shlex.split(rebuild))

    # then the user projection is built on the new database too
    listed = invoke(new, "projections")
    assert re.search(r"^turnover\s+\d+\s+29\s+29\s+0$", listed, re.MULTILINE), listed


def _layout_block() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Project layout") :]
    return section.split("```")[1]


def test_the_project_layout_names_every_module_and_top_level_folder() -> None:
    # given the Project layout block, a first map for a new contributor
    layout = _layout_block()
    named = {word.rstrip(":,") for word in layout.split()}
    # when listing the package's modules and folders, and the checkout's top-level folders
    package = ROOT / "src" / "leaderlog"
    modules = {
        f"{entry.name}/" if entry.is_dir() else entry.name
        for entry in package.iterdir()
        if entry.name != "__pycache__" and (entry.is_dir() or entry.suffix == ".py")
    }
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    folders = {f"{path.split('/')[0]}/" for path in tracked if "/" in path}
    # then each of them is there, and every path it names exists
    missing = sorted(
        name
        for name in modules | folders
        if not any(word == name or word.startswith(name) for word in named)
    )
    assert not missing, f"the Project layout does not name {missing}"
    for line in layout.splitlines():
        # A path starts a line: at the checkout's top level, or two spaces in for the package.
        entry = re.match(r"( {2})?([\w./]+(?:/|\.py))(?:\s|$)", line)
        if entry:
            base = package if entry[1] else ROOT
            path = entry[2]
            assert (base / path).exists(), f"the Project layout names {path}, which is not there"


def test_postgres_tests_look_for_the_server_leaderlog_test_postgres_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given LEADERLOG_TEST_POSTGRES naming a port no server answers on
    url = f"postgresql://postgres@127.0.0.1:{free_port()}/test"
    monkeypatch.setattr(tests.conftest, "POSTGRES_URL", url)
    # when the PostgreSQL tests ask whether their server answers
    # then it is that server they ask about (they skip), not the default one
    assert not tests.conftest.postgres_reachable()
