"""`verify` reads the whole chain, a minute or so on a log of a million events: on a terminal,
a bar shows how far it has got, as the other long commands' bars do."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import leaderlog.cli.log_commands as log_commands
from leaderlog.cli import main
from leaderlog.log import EventLog, load_seeds
from leaderlog.store import base as store_base
from tests.cli.terminal import drawn_on_a_terminal
from tests.conftest import SEEDS


def _seeded(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"

    async def load() -> None:
        async with await EventLog.open(url) as log:
            await load_seeds(log, SEEDS)

    asyncio.run(load())
    return url


def test_verify_reports_its_progress_page_by_page_up_to_the_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given the seeds (29 events), read 10 at a time
    url = _seeded(tmp_path)
    monkeypatch.setattr(store_base, "_VERIFY_PAGE", 10)
    reported: list[tuple[int, int]] = []

    async def verify() -> store_base.VerifyReport:
        async with await EventLog.open(url, create=False) as log:
            return await log.store.verify(lambda done, head: reported.append((done, head)))

    # when the chain is verified
    report = asyncio.run(verify())
    # then each page is reported, against the head, ending with every event verified
    assert report.ok
    assert reported == [(10, 29), (20, 29), (29, 29)]


def test_verify_shows_a_bar_on_a_terminal_for_a_large_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _seeded(tmp_path)
    screen = drawn_on_a_terminal(monkeypatch)
    # given a log too small for a bar, then one counted as large enough
    quiet = CliRunner().invoke(main, ["--db", url, "verify"])
    assert quiet.exit_code == 0, quiet.stderr
    assert screen.getvalue() == ""
    monkeypatch.setattr(log_commands, "PROGRESS_THRESHOLD", 20)
    shown = CliRunner().invoke(main, ["--db", url, "verify"])
    # then a bar counts the events verified, and the answer is the same
    assert shown.exit_code == 0, shown.stderr
    assert shown.stdout == quiet.stdout
    assert shown.stdout.startswith("chain OK, 29 events")
    drawn = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", screen.getvalue())
    assert re.search(r"verifying the chain .* 29/29 events", drawn), drawn


def test_verify_draws_its_bar_on_a_terminal_narrower_than_66_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given the seeds, counted as a large log, and a terminal of 60 columns
    url = _seeded(tmp_path)
    screen = drawn_on_a_terminal(monkeypatch, width=60)
    monkeypatch.setattr(log_commands, "PROGRESS_THRESHOLD", 20)
    # when the chain is verified
    shown = CliRunner().invoke(main, ["--db", url, "verify"])
    # then the bar's label is cut (not its "{task.description}" format, a ValueError), and
    # the chain is reported
    assert shown.exit_code == 0, shown.exception
    assert shown.stdout.startswith("chain OK, 29 events")
    drawn = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", screen.getvalue())
    assert re.search(r"verifying... .*29/29 events", drawn), drawn
