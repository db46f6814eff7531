"""``leaderlog feed`` and ``leaderlog serve``: arguments, errors, and where seeds come from."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from click.testing import CliRunner

from leaderlog.cli import serve_commands
from leaderlog.cli._app import main
from leaderlog.log import EventLog, load_seeds
from tests.conftest import ROOT, SEEDS


async def _seed(url: str) -> None:
    log = await EventLog.open(url)
    try:
        await load_seeds(log, SEEDS)
    finally:
        await log.close()


def test_feed_writes_a_document_and_refuses_bad_arguments(sqlite_url: str) -> None:
    asyncio.run(_seed(sqlite_url))
    runner = CliRunner()
    written = runner.invoke(
        main, ["--db", sqlite_url, "feed", "--format", "json", "--lang", "pt-BR"]
    )
    assert written.exit_code == 0, written.output
    assert b'"language": "pt"' in written.stdout_bytes
    assert b'"feed_url": "http://127.0.0.1:8000/feeds/all.json?lang=pt"' in written.stdout_bytes
    cases = {
        ("--scope", "planet:earth"): (2, "is not one of all, org:ID"),
        ("--lang", "tlh"): (2, "is not offered"),
        ("--format", "xml"): (2, "'xml' is not one of"),
        ("--base-url", "ftp://example.org"): (2, "http:// or https://"),
        ("--scope", "org:atlantis"): (1, "unknown organisation 'atlantis'"),
        ("--scope", "person:hammer"): (1, "'hammer'; did you mean robert-hammer (Robert Hammer,"),
        ("--page", "1"): (1, "the feed is complete"),
    }
    for arguments, (status, message) in cases.items():
        result = runner.invoke(main, ["--db", sqlite_url, "feed", *arguments])
        assert result.exit_code == status, arguments
        assert message in result.stderr, (arguments, result.stderr)


def test_seeds_come_from_the_working_folder_when_it_has_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    assert serve_commands.seeds_folder() == Path("seeds")
    monkeypatch.chdir(tmp_path)
    found = serve_commands.seeds_folder()
    # Elsewhere only a packaged copy can be used (an editable install has none).
    assert found is None or any(found.glob("*.jsonl"))


def test_serve_is_documented() -> None:
    result = CliRunner().invoke(main, ["serve", "--help"])
    assert result.exit_code == 0
    for option in ("--host", "--port", "--no-seed"):
        assert option in result.output
