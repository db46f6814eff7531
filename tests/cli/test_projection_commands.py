"""The commands over the projections as their ``--help`` shows them."""

from __future__ import annotations

import asyncio
import io
import os
import re
import select
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rich.console import Console

import leaderlog.cli.projection_commands as projection_commands  # registers the commands
from leaderlog._json import dumps
from leaderlog.cli import _app, _terminal, main
from leaderlog.cli._app import print_json_in_parts
from leaderlog.log import EventLog, load_seeds
from leaderlog.projections import BUILTIN, ProjectionRunner, Queries
from leaderlog.projections import queries as queries_module
from tests.cli.terminal import drawn_on_a_terminal
from tests.conftest import ROOT, SEEDS, invoke, ok
from tests.projections.logs import SEED_COUNT, SEED_FILE, seen_projection_module


def help_examples(command: str) -> list[list[str]]:
    """The arguments of each ``leaderlog`` line under the command's "Example:"."""
    text = CliRunner().invoke(main, [command, "--help"]).stdout
    lines = text.partition("Example:\n")[2].partition("\n\n")[0].splitlines()
    assert lines, f"leaderlog {command} --help shows no example"
    return [shlex.split(line.partition(">")[0], comments=True)[1:] for line in lines]


@pytest.mark.parametrize("loaded_by", ["serve", "import"])
@pytest.mark.parametrize("command", ["state", "history", "claim", "audit", "feed", "rebuild"])
def test_help_examples_run_on_the_seeds(
    command: str, loaded_by: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A user's first log holds the seeds, loaded by scripts/run's server (as actor `seed`)
    # or by `leaderlog import` (as `cli`): the examples answer on either.
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"

    async def load() -> None:
        async with await EventLog.open(url) as log:
            if loaded_by == "serve":
                await load_seeds(log, SEEDS)
            else:
                await log.import_file(SEEDS / "ice-leadership-2025-05.jsonl", actor="cli")

    asyncio.run(load())
    monkeypatch.setenv("LEADERLOG_PROJECTIONS", str(ROOT / "projections"))
    for arguments in help_examples(command):
        result = CliRunner().invoke(main, ["--db", url, *arguments])
        assert result.exit_code == 0, f"leaderlog {shlex.join(arguments)}\n{result.stderr}"
        assert result.stdout.strip(), f"leaderlog {shlex.join(arguments)} printed nothing"


def test_state_printed_a_part_at_a_time_reads_as_the_whole_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given the seeds, and their state worked out and printed a post at a time
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"

    async def load() -> dict[str, Any]:
        async with await EventLog.open(url) as log:
            await load_seeds(log, SEEDS)
            runner = ProjectionRunner(log.store, [cls() for cls in BUILTIN.values()])
            await runner.catch_up()
            return await Queries(log.store).state(as_of="2025-06-15")

    whole = asyncio.run(load())
    monkeypatch.setattr(queries_module, "_STATE_PART", 1)
    # then --json prints the very text the whole answer prints as, and the text output
    # lists every post once, in the same order
    printed = CliRunner().invoke(main, ["--db", url, "state", "--as-of", "2025-06-15", "--json"])
    assert printed.exit_code == 0, printed.stderr
    assert printed.stdout == dumps(whole, indent=True) + "\n"
    text = CliRunner().invoke(main, ["--db", url, "state", "--as-of", "2025-06-15"])
    titles = [line for line in text.stdout.splitlines() if line and not line.startswith(" ")]
    assert titles[1:] == [
        f"{post['post']['title']} ({post['post']['post']}, {post['post']['org_name']}): "
        f"{post['vacancy']}"
        for post in whole["posts"]
    ]


def test_an_org_history_worked_out_a_post_at_a_time_prints_as_the_whole_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given the seeds, with an earlier tenure at HSI (ordered first, by the day it counts
    # from), and DHS's history worked out in one part (its few posts)
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    earlier = [
        {
            "type": "claim.reported",
            "data": {
                "claim": f"earlier-{kind}",
                "source": "fox-ice-shakeup-2025-05",
                "kind": kind,
                "person": "derek-gordon",
                "post": "ice-hsi-ead",
                "capacity": "permanent",
                "effective": {"date": day, "qualifier": "on"},
                "modality": "occurred",
                "attribution": {"kind": "official", "parties": ["ICE"]},
                "quote": "Gordon is expected to become the acting director of HSI",
                "locator": "body",
            },
        }
        for kind, day in (("appointment", "2001-03-01"), ("departure", "2003-06-30"))
    ]

    async def load() -> dict[str, Any]:
        async with await EventLog.open(url) as log:
            await load_seeds(log, SEEDS)
            await log.import_lines([dumps(record) for record in earlier], actor="test")
            runner = ProjectionRunner(log.store, [cls() for cls in BUILTIN.values()])
            await runner.catch_up()
            return await Queries(log.store).history(org="dhs")

    whole = asyncio.run(load())
    posts = [tenure["post"] for tenure in whole["tenures"]]
    # (ordered by the day each counts from, which interleaves the posts)
    assert posts != sorted(posts) and len(set(posts)) > 2, posts
    # when it is worked out a post at a time, each post's tenures merged into their places
    monkeypatch.setattr(queries_module, "_STATE_PART", 1)
    printed = CliRunner().invoke(main, ["--db", url, "history", "--org", "dhs", "--json"])
    # then --json prints the very text of the whole answer
    assert printed.exit_code == 0, printed.stderr
    assert printed.stdout == dumps(whole, indent=True) + "\n"
    # and the text lists every tenure once, in the same order, then the changes to come
    text = CliRunner().invoke(main, ["--db", url, "history", "--org", "dhs"])
    assert text.exit_code == 0, text.stderr
    lines = text.stdout.splitlines()
    tenure_lines = [line for line in lines[1:] if not line.startswith(("      ", "  pending"))]
    assert [line.partition(":")[0] for line in tenure_lines] == [
        f"  {tenure['post_title']} ({tenure['post']})" for tenure in whole["tenures"]
    ]
    assert sum(line.startswith("  pending") for line in lines) == len(whole["pending"]) > 0


def test_a_large_org_history_shows_on_a_terminal_how_many_posts_are_worked_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given the seeds, on a terminal, and a history worked out a post at a time
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"

    async def load() -> None:
        async with await EventLog.open(url) as log:
            await load_seeds(log, SEEDS)

    asyncio.run(load())
    screen = drawn_on_a_terminal(monkeypatch)
    monkeypatch.setattr(queries_module, "_STATE_PART", 1)
    # when DHS's history is asked for, its posts few enough for no bar, then many enough
    quiet = CliRunner().invoke(main, ["--db", url, "history", "--org", "dhs"])
    assert quiet.exit_code == 0, quiet.stderr
    assert screen.getvalue() == ""
    monkeypatch.setattr(projection_commands, "HISTORY_BAR_POSTS", 2)
    shown = CliRunner().invoke(main, ["--db", url, "history", "--org", "dhs"])
    # then a bar counts the posts worked out, and the history printed is the same
    assert shown.exit_code == 0, shown.stderr
    assert shown.stdout == quiet.stdout
    drawn = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", screen.getvalue())
    assert re.search(r"working out the history of dhs .* \d+/\d+ posts", drawn), drawn


@pytest.mark.parametrize("sizes", [[], [0], [1], [2, 0, 3], [0, 0]])
@pytest.mark.parametrize(
    "head",
    [{}, {"a": 1, "b": {"c": [1, 2]}}, {"m": {}, "z": [], 'q\n"': {"deep": [{"x": None}]}}],
)
def test_json_printed_in_parts_is_the_text_printed_whole(
    sizes: list[int], head: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    items = [{"n": n, "nested": {"list": [n, "a\nb"], "empty": {}}} for n in range(sum(sizes))]

    async def parts(reverse: bool) -> AsyncIterator[list[dict[str, Any]]]:
        given = iter(items[::-1] if reverse else items)
        for size in sizes:
            yield [next(given) for _ in range(size)]

    # lists printed among the other keys, in their sorted places, however many they are
    for names in (["items"], ["0 first", "n middle", "zz last"]):
        lists = {name: parts(reverse=bool(number % 2)) for number, name in enumerate(names)}
        asyncio.run(print_json_in_parts(head, lists))
        whole = {
            **head,
            **{name: items[::-1] if number % 2 else items for number, name in enumerate(names)},
        }
        assert capsys.readouterr().out == dumps(whole, indent=True) + "\n"
    asyncio.run(print_json_in_parts({}, {}))
    assert capsys.readouterr().out == dumps({}, indent=True) + "\n"


def _read_until(screen: int, wanted: bytes, seconds: float) -> bytes:
    """What the terminal shows until ``wanted`` appears, or it closes, or time runs out."""
    seen = b""
    deadline = time.monotonic() + seconds
    while wanted not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([screen], [], [], 0.1)
        if not ready:
            continue
        try:
            chunk = os.read(screen, 65536)
        except OSError:  # the other side of the terminal has closed
            break
        if not chunk:
            break
        seen += chunk
    return seen


def test_sigterm_while_a_progress_bar_is_drawn_shows_the_cursor_again(tmp_path: Path) -> None:
    # given a log large enough for rebuild to draw its bar, on a terminal
    records = tmp_path / "orgs.jsonl"
    records.write_text(
        "".join(
            dumps({"type": "org.registered", "data": {"org": f"org-{n}", "name": f"Org {n}"}})
            + "\n"
            for n in range(12_000)
        ),
        encoding="utf-8",
    )
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    imported = CliRunner().invoke(main, ["--db", url, "import", str(records)])
    assert imported.exit_code == 0, imported.output
    screen, terminal = os.openpty()
    environment = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100"}
    environment.pop("NO_COLOR", None)
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "leaderlog"), "--db", url, "rebuild"],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        env=environment,
    )
    os.close(terminal)
    try:
        shown = _read_until(screen, b"\x1b[?25l", 60)
        assert b"\x1b[?25l" in shown, shown  # the bar is drawn, the cursor hidden
        # when the command is sent SIGTERM
        process.send_signal(signal.SIGTERM)
        shown += _read_until(screen, b"\x00never", 30)
        status = process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(screen)
    # then it is still ended by the signal, with the cursor shown again after the bar
    assert status == -signal.SIGTERM, shown
    after_the_bar = shown.rpartition(b"\x1b[?25l")[2]
    assert after_the_bar.endswith(b"\r\x1b[2K\x1b[?25h"), after_the_bar[-200:]


@pytest.mark.parametrize(("width", "label"), [(60, "rebuildin... "), (40, "rebuild... ")])
def test_a_progress_bar_on_a_narrow_terminal_cuts_its_label_not_its_count(
    monkeypatch: pytest.MonkeyPatch, width: int, label: str
) -> None:
    # "rebuilding leadership, audit, feed_entries" on 80 columns cut "20000/500000" short;
    # at 40 the bar itself gives way
    screen = io.StringIO()
    narrow = Console(file=screen, force_terminal=True, width=width, color_system=None)
    monkeypatch.setattr(_terminal, "err_console", narrow)
    bar = _terminal.progress_bar("rebuilding leadership, audit, feed_entries")
    bar.add_task("rebuilding", total=500_000, completed=20_000)
    bar.start()
    bar.refresh()
    bar.stop()
    drawn = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", screen.getvalue())
    assert "20000/500000 events" in drawn and label in drawn


def test_a_query_shows_a_bar_while_a_new_version_replays_the_whole_log(
    sqlite_url: str, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given the seeds, a user projection built at version 1, bars for 10 events or more
    ok(invoke(sqlite_url, "import", str(SEED_FILE)))
    (folder / "seen.py").write_text(seen_projection_module("seen", version=1), encoding="utf-8")
    ok(invoke(sqlite_url, "rebuild", "seen"))
    monkeypatch.setattr(projection_commands, "PROGRESS_THRESHOLD", 10)
    screen = drawn_on_a_terminal(monkeypatch)
    # when its module says version 2 (every event to apply again) and a query is asked
    (folder / "seen.py").write_text(seen_projection_module("seen", version=2), encoding="utf-8")
    ok(invoke(sqlite_url, "state", "--org", "ice"))
    # then a bar counts every event replayed, as serve's does (not the lag of 0)
    drawn = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", screen.getvalue())
    assert "updating projections" in drawn, drawn
    assert f"{SEED_COUNT}/{SEED_COUNT} events" in drawn, drawn


def test_a_rebuild_of_an_empty_log_gives_no_events_per_second(
    sqlite_url: str, folder: Path
) -> None:
    # given a database whose log holds no event
    async def create() -> None:
        log = await EventLog.open(sqlite_url)
        await log.close()

    asyncio.run(create())
    # when everything is rebuilt
    first = ok(invoke(sqlite_url, "rebuild")).splitlines()[0]
    # then it says it rebuilt to position 0, with no rate made of no events
    assert re.fullmatch(rf"rebuilt {', '.join(BUILTIN)} to position 0 in \d+\.\d s", first), first
    assert re.fullmatch(rf"rebuilt {', '.join(BUILTIN)} to position 0 in \d+\.\d s", first), first


def test_a_rebuild_on_a_terminal_shows_a_bar_naming_the_projections_it_rebuilds(
    sqlite_url: str, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given the seeds, on a terminal
    ok(invoke(sqlite_url, "import", str(SEED_FILE)))
    screen = drawn_on_a_terminal(monkeypatch)
    # when two projections are rebuilt
    ok(invoke(sqlite_url, "rebuild", "audit", "leadership"))
    # then a bar names them and counts the events replayed
    drawn = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", screen.getvalue())
    counted = rf"rebuilding audit, leadership .*{SEED_COUNT}/{SEED_COUNT} events"
    assert re.search(counted, drawn), drawn


def test_a_list_printed_in_parts_that_has_no_items_prints_as_an_empty_list(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # given a list whose parts hold no items
    async def nothing() -> AsyncIterator[Sequence[Any]]:
        yield []

    # when it is printed in parts beside other members
    asyncio.run(_app.print_json_in_parts({"org": "ice"}, {"posts": nothing()}))
    # then the text is the same as print_json gives for the whole value: "[]"
    assert capsys.readouterr().out == dumps({"org": "ice", "posts": []}, indent=True) + "\n"


def test_audit_lines_up_its_columns_beside_an_actor_longer_than_ten(
    sqlite_url: str, tmp_path: Path
) -> None:
    # given the seeds, and an event appended by an actor with a long (valid) name
    for seed_file in sorted(SEEDS.glob("*.jsonl")):
        ok(invoke(sqlite_url, "import", str(seed_file)))
    records = tmp_path / "one.jsonl"
    records.write_text(
        '{"type": "person.registered", "data": {"person": "zz", "name": "ZZ"}}\n',
        encoding="utf-8",
    )
    actor = "desk-of-the-international-editor"
    ok(invoke(sqlite_url, "import", "--actor", actor, str(records)))
    # when the audit lists it beside events appended by cli
    lines = ok(invoke(sqlite_url, "audit", "--after", str(SEED_COUNT - 2))).splitlines()
    # then the types start in one column on every line, after the longest actor
    assert len(lines) == 3
    starts = {line.index(line.split()[3]) for line in lines}
    assert starts == {lines[-1].index(actor) + len(actor) + 1}


@pytest.mark.parametrize("option", ["--person", "--post", "--org"])
def test_history_given_one_option_empty_says_only_that_it_is_empty(
    sqlite_url: str, option: str
) -> None:
    # given exactly one of the three options, given empty
    for seed_file in sorted(SEEDS.glob("*.jsonl")):
        ok(invoke(sqlite_url, "import", str(seed_file)))
    result = invoke(sqlite_url, "history", option, "")
    # then it is a usage mistake naming that option, and nothing else: the user gave exactly
    # one, which "give exactly one of person, post or org" would contradict
    assert result.exit_code == 2
    assert f"{option} must not be empty" in result.stderr
    assert "give exactly one" not in result.stderr
