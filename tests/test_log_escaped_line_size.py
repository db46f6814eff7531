"""What import reads of a line and how it counts a record's size: a record is counted as
stored (its compact UTF-8 JSON, escapes counted as the characters they stand for), as the
write API counts it, and a line is read only up to what the largest record takes with every
character escaped; a longer one is refused without being read whole."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest

from leaderlog.errors import BatchError
from leaderlog.log import MAX_LINE_BYTES, MAX_LINE_TEXT_BYTES, EventLog, parse_lines, read_lines
from tests.test_log import EndlessLine

BYTE_ORDER_MARK = b"\xef\xbb\xbf"
GOOD = b'{"type": "person.registered", "data": {"person": "after", "name": "After"}}\n'


def padded_person(length: int) -> bytes:
    """A ``person.registered`` line of exactly ``length`` bytes (line end not counted): its
    name escaped character by character, then spaces, which JSON allows between tokens."""
    head = '{"type":"person.registered","data":{"person":"padded","name":"' + "\\u0041" * 40
    head += '"}'
    return (head + " " * (length - len(head) - 1) + "}").encode()


def escaped_in_full(value: Any) -> str:
    """``value`` as JSON with every character of every string written as a ``\\uXXXX`` escape
    (characters beyond the BMP as two), the longest form a writer can give them."""
    if isinstance(value, str):
        units = value.encode("utf-16-be")
        escaped = (f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2))
        return '"' + "".join(escaped) + '"'
    if isinstance(value, dict):
        members = (f"{escaped_in_full(key)}:{escaped_in_full(item)}" for key, item in value.items())
        return "{" + ",".join(members) + "}"
    if isinstance(value, list):
        return "[" + ",".join(escaped_in_full(item) for item in value) + "]"
    return json.dumps(value)


def imported(tmp_path: Path, content: bytes) -> tuple[list[tuple[str, str, str]], int]:
    """The problems (where, rule, message) of importing ``content`` into a fresh SQLite log,
    and how many events the log holds afterwards."""
    path = tmp_path / "records.jsonl"
    path.write_bytes(content)

    async def run() -> tuple[list[tuple[str, str, str]], int]:
        async with await EventLog.open(f"sqlite:///{tmp_path / 'log.db'}") as log:
            problems: list[tuple[str, str, str]] = []
            try:
                await log.import_file(path, actor="cli")
            except BatchError as refused:
                problems = [(p.where, p.rule, p.message) for p in refused.problems]
            position, _ = await log.store.head()
            return problems, position

    return asyncio.run(run())


def test_a_line_at_the_reading_cap_is_read_whole_and_imported(tmp_path: Path) -> None:
    line = BYTE_ORDER_MARK + padded_person(MAX_LINE_TEXT_BYTES) + b"\r\n"
    (read,) = read_lines(io.BufferedReader(io.BytesIO(line)))
    assert read == line  # neither the mark nor the CRLF count against the cap
    assert imported(tmp_path, line + GOOD) == ([], 2)


def test_a_line_one_byte_beyond_the_cap_is_refused_unread_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    line = padded_person(MAX_LINE_TEXT_BYTES + 1) + b"\n"
    problems, events = imported(tmp_path, GOOD + line + GOOD.replace(b"after", b"later"))
    assert problems == [
        (
            "line 2",
            "size",
            f"line is larger than {MAX_LINE_TEXT_BYTES} bytes: a record is at most "
            f"{MAX_LINE_BYTES} bytes, and six times that with every character escaped",
        )
    ]
    assert events == 0


def test_a_line_far_beyond_the_cap_is_not_read_whole() -> None:
    huge = b" " * (8 * MAX_LINE_TEXT_BYTES) + b"\n"
    first, second = read_lines(io.BufferedReader(io.BytesIO(huge + GOOD)))
    assert MAX_LINE_TEXT_BYTES < len(first) <= MAX_LINE_TEXT_BYTES + 6
    assert second == GOOD
    endless = EndlessLine(b" ")
    (cut,) = read_lines(io.BufferedReader(endless))
    assert len(cut) == MAX_LINE_TEXT_BYTES + 6 and endless.read_bytes < 128 * 1024 * 1024
    with pytest.raises(BatchError) as refused:
        parse_lines([cut])
    assert [(p.where, p.rule) for p in refused.value.problems] == [("line 1", "size")]


def test_a_record_is_counted_by_its_stored_bytes_not_by_its_escapes() -> None:
    # given a person whose aliases, escaped as json.dumps writes them, take 90 KB of text
    aliases = [("Алексей Николаевич Иванов-Петровский " * 9)[:297] + f"{n:03d}" for n in range(50)]
    data = {"person": "ivanov", "name": "Иванов", "aliases": aliases}
    line = json.dumps({"type": "person.registered", "data": data})
    assert len(line.encode()) > MAX_LINE_BYTES
    (parsed,), _ = parse_lines([line.encode() + b"\n"])
    assert list(parsed.event.model_dump()["aliases"]) == aliases


def test_a_record_over_the_limit_as_stored_is_refused_however_it_is_written() -> None:
    # given a record whose stored form is one byte over the limit, written compactly
    empty = {"type": "person.registered", "data": {"person": "p", "name": ""}}
    name = "P" * (MAX_LINE_BYTES + 1 - len(json.dumps(empty, separators=(",", ":"))))
    record = {"type": "person.registered", "data": {"person": "p", "name": name}}
    compact = json.dumps(record, separators=(",", ":"))
    assert len(compact) == MAX_LINE_BYTES + 1
    for text in (compact, json.dumps(record, indent=None), escaped_in_full(record)):
        with pytest.raises(BatchError) as refused:
            parse_lines([text.encode() + b"\n"])
        assert [str(problem) for problem in refused.value.problems] == [
            f"line 1: record is larger than {MAX_LINE_BYTES} bytes"
        ], text[:80]
