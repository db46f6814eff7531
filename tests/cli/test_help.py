"""Every command's help, as an 80-column terminal shows it."""

from __future__ import annotations

import re

import click
import pytest
from click.shell_completion import ShellComplete
from click.testing import CliRunner

import leaderlog.cli.projection_commands  # noqa: F401  (registers the commands on main)
from leaderlog.cli import main


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            found += _commands(command, (*path, name))
        else:
            found.append((*path, name))
    return found


COMMANDS = _commands(main)


def _help(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(main, [*path, "--help"], terminal_width=80)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("path", COMMANDS, ids=lambda path: " ".join(path) or "leaderlog")
def test_help_fits_80_columns_with_an_example(path: tuple[str, ...]) -> None:
    text = _help(path)
    assert not [line for line in text.splitlines() if len(line) > 80], text
    assert "\n  Example:\n" in text, text
    # An option's name is not cut at one of its hyphens ("--forwarded-" / "allow-ips").
    assert not re.search(r"--[a-z-]+-\n", text), text


@pytest.mark.parametrize(
    "path", [path for path in COMMANDS if not path or path == ("token",)], ids=["root", "token"]
)
def test_command_lists_show_whole_summaries(path: tuple[str, ...]) -> None:
    # click cuts a command's first sentence to fit ("Who recorded what, from which source,
    # and when; every..."): each command's summary is short enough to be shown whole.
    listing = _help(path).partition("Commands:\n")[2]
    assert listing.strip()
    assert "..." not in listing, listing


def test_completion_after_an_option_given_twice_still_offers_the_options() -> None:
    # given a command line that repeats an option (which a run refuses)
    typed = ["state", "--org", "ice", "--org", "dhs"]
    # when the shell asks what may follow "--"
    completing = ShellComplete(main, {}, "leaderlog", "_LEADERLOG_COMPLETE")
    offered = [item.value for item in completing.get_completions(typed, "--")]
    # then the command's options are offered, not a usage error raised in the shell
    assert "--json" in offered
