"""The commands over the projections as their ``--help`` shows them."""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

import leaderlog.cli.projection_commands  # noqa: F401  (registers the commands on main)
from leaderlog.cli import main
from leaderlog.log import EventLog, load_seeds
from tests.conftest import ROOT, SEEDS


def help_examples(command: str) -> list[list[str]]:
    """The arguments of each ``leaderlog`` line under the command's "Example:"."""
    text = CliRunner().invoke(main, [command, "--help"]).stdout
    lines = text.partition("Example:\n")[2].partition("\n\n")[0].splitlines()
    assert lines, f"leaderlog {command} --help shows no example"
    return [shlex.split(line.partition(">")[0])[1:] for line in lines]


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
