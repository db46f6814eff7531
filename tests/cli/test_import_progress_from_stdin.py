"""`import -` reads a pipe whose size is not known in advance: on a terminal, once a
megabyte has been read, a bar counts the bytes read so far, as the bar of a file counts them
against its size; a file redirected to stdin is measured like any other file."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import leaderlog.cli.log_commands as log_commands
from leaderlog.cli import main
from tests.cli.terminal import drawn_on_a_terminal
from tests.conftest import SEEDS


def _seed_lines() -> bytes:
    return b"".join(path.read_bytes() for path in sorted(SEEDS.glob("*.jsonl")))


def _drawn(screen_text: str) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", screen_text)


def test_import_from_a_pipe_shows_the_bytes_read_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    lines = _seed_lines()
    screen = drawn_on_a_terminal(monkeypatch)
    # given stdin counted as large enough for a bar, whose size cannot be known
    monkeypatch.setattr(log_commands, "_PROGRESS_THRESHOLD", len(lines) // 2)
    # when it is imported
    result = CliRunner().invoke(main, ["--db", url, "import", "-"], input=lines)
    # then it is imported as from a file, and a bar counted the bytes read
    assert result.exit_code == 0, result.stderr
    assert "appended 29" in result.stdout
    drawn = _drawn(screen.getvalue())
    # (up to the whole input, with no end known in advance)
    assert re.search(rf"reading .* {len(lines) / 1000:.1f}/\? kB", drawn), drawn


def test_import_from_a_small_pipe_draws_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    screen = drawn_on_a_terminal(monkeypatch)
    result = CliRunner().invoke(main, ["--db", url, "import", "-"], input=_seed_lines())
    assert result.exit_code == 0, result.stderr
    assert screen.getvalue() == ""


def test_a_file_redirected_to_stdin_is_measured_against_its_size(tmp_path: Path) -> None:
    path = tmp_path / "seeds.jsonl"
    path.write_bytes(_seed_lines())
    with path.open("rb") as handle:
        handle.readline()  # what was read before counts out of what is left
        assert log_commands._stdin_size(handle) == path.stat().st_size - handle.tell()


def test_a_pipe_on_stdin_has_no_size_known_in_advance() -> None:
    reading, writing = os.pipe()
    os.write(writing, _seed_lines()[:1000])
    os.close(writing)
    with os.fdopen(reading, "rb") as handle:
        assert log_commands._stdin_size(handle) is None
