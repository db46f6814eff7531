"""Records written with ``\\uXXXX`` escapes (Python's ``json.dumps`` writes every non-ASCII
character so by default): ``import`` and the write API count a record as it is stored, so
both accept the same records and refuse the same ones, in the same words."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from leaderlog.http import create_app
from leaderlog.log import MAX_RECORD_BYTES, EventLog
from tests.conftest import invoke
from tests.http.server import create_token, running, seeded_database
from tests.http.test_write_record_size_limit import post_of_size
from tests.test_log_escaped_line_size import escaped_in_full


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    """(base URL, database URL, token) of a server on a seeded log."""
    url = seeded_database(tmp_path_factory.mktemp("escaped"))
    token = asyncio.run(create_token(url, "escaper"))
    with running(create_app(url)) as base:
        yield base, url, token


def post(base: str, token: str, text: str) -> httpx.Response:
    return httpx.post(
        f"{base}/api/events",
        content=text.encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        timeout=30,
    )


def last_event(url: str) -> tuple[int, dict[str, Any]]:
    """The log's head position and the data of its last event."""

    async def read() -> tuple[int, dict[str, Any]]:
        async with await EventLog.open(url) as log:
            position, _ = await log.store.head()
            event = await log.store.get(position)
            assert event is not None
            return position, dict(event.data)

    return asyncio.run(read())


def imported(folder: Path, text: str) -> tuple[str, int, tuple[int, dict[str, Any]]]:
    """``leaderlog import`` of ``text`` as one line into a fresh seeded log: its output,
    exit code, and the log's head and last event's data afterwards."""
    url = seeded_database(folder)
    path = folder / "records.jsonl"
    path.write_text(text + "\n")
    result = invoke(url, "import", str(path))
    return result.output, result.exit_code, last_event(url)


def many_cyrillic_aliases() -> dict[str, Any]:
    """A person with 50 aliases of 300 Cyrillic characters: 30 KB stored, 90 KB escaped."""
    alias = "Алексей Николаевич Иванов-Петровский " * 9
    aliases = [alias[:297] + f"{n:03d}" for n in range(50)]
    data = {"person": "ivanov", "name": "Алексей Иванов", "aliases": aliases}
    return {"type": "person.registered", "data": data}


@pytest.mark.parametrize(
    ("record", "written"),
    [
        (many_cyrillic_aliases(), json.dumps),
        (post_of_size("escaped-at-the-limit", MAX_RECORD_BYTES), json.dumps),
        (post_of_size("escaped-in-full-at-the-limit", MAX_RECORD_BYTES), escaped_in_full),
    ],
    ids=["cyrillic-aliases", "at-the-limit", "every-character-escaped"],
)
def test_an_escaped_record_within_the_limit_is_accepted_by_import_as_over_http(
    server: tuple[str, str, str], tmp_path: Path, record: dict[str, Any], written: Any
) -> None:
    base, url, token = server
    text = written(record)
    assert len(text) > 64 * 1024  # longer than its stored form, which is within the limit
    answer = post(base, token, text)
    assert answer.status_code == 201, answer.text
    output, code, (_, data) = imported(tmp_path, text)
    assert code == 0, output
    assert data == last_event(url)[1] == record["data"]


def test_an_escaped_record_over_the_limit_is_refused_by_both_in_the_same_words(
    server: tuple[str, str, str], tmp_path: Path
) -> None:
    base, url, token = server
    before = last_event(url)
    text = json.dumps(post_of_size("escaped-over-the-limit", MAX_RECORD_BYTES + 1))
    answer = post(base, token, text)
    assert answer.status_code == 422, answer.text
    (problem,) = answer.json()["problems"]
    message = f"record is {MAX_RECORD_BYTES + 1} bytes; at most {MAX_RECORD_BYTES}"
    assert (problem["where"], problem["rule"], problem["message"]) == ("record 0", "size", message)
    assert last_event(url) == before

    (tmp_path / "untouched").mkdir()
    seeded = last_event(seeded_database(tmp_path / "untouched"))
    output, code, after = imported(tmp_path, text)
    assert code != 0
    assert f"line 1: {message} [rule: size]" in output
    assert after == seeded  # nothing written
