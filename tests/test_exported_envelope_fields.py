"""An exported envelope (a line of ``leaderlog export``) is taken for one only when its fields
are what an export writes: position and version positive integers, schema_version a positive
integer (not true), hash exactly 64 lower-case hex digits. And a line in the current schema
version is stored as its event's data, not byte for byte as given: only an older schema
version's data is kept as it was stored."""

from __future__ import annotations

from typing import Any

import pytest

from leaderlog.errors import RecordError
from leaderlog.events import parse_held_record, parse_record
from tests.test_events import exported_envelope as envelope


def test_the_smallest_values_an_export_writes_are_accepted() -> None:
    # given the first event of a log, as exported: position 1, version 1, schema_version 1
    line = envelope(position=1, version=1, schema_version=1, hash="a" * 64)

    # when it is parsed
    record = parse_record(line)

    # then it is taken as an envelope, keeping its id
    assert str(record.event_id) == line["event_id"]
    assert record.exported_hash == "a" * 64


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"position": 0}, "position must be a positive integer, got 0"),
        ({"position": -1}, "position must be a positive integer, got -1"),
        ({"position": True}, "position must be a positive integer, got True"),
        ({"version": 0}, "version must be a positive integer, got 0"),
        ({"version": True}, "version must be a positive integer, got True"),
        ({"schema_version": True}, "schema_version must be a positive integer"),
        ({"schema_version": -1}, "schema_version must be a positive integer"),
        ({"hash": "0" * 65}, "hash must be 64 lowercase hexadecimal digits"),
        ({"hash": "0" * 64 + "\n"}, "hash must be 64 lowercase hexadecimal digits"),
        ({"hash": "0" * 63}, "hash must be 64 lowercase hexadecimal digits"),
        ({"hash": "A" * 64}, "hash must be 64 lowercase hexadecimal digits"),
    ],
    ids=[
        "position-0",
        "position-negative",
        "position-true",
        "version-0",
        "version-true",
        "schema-version-true",
        "schema-version-negative",
        "hash-too-long",
        "hash-newline-after",
        "hash-too-short",
        "hash-upper-case",
    ],
)
def test_an_envelope_field_no_export_writes_is_refused(changes: dict[str, Any], says: str) -> None:
    # given an exported envelope with one field an export never writes
    line = envelope(**changes)

    # when it is parsed
    with pytest.raises(RecordError) as caught:
        parse_record(line)

    # then it is refused under the schema rule, naming the field
    assert caught.value.rule == "schema"
    assert says in str(caught.value)


def test_a_current_schema_version_line_is_stored_as_its_event_s_data() -> None:
    # given an export line in the current schema version whose data is not in the form the
    # log stores (a name with spaces around it, a date without its qualifier)
    line = envelope(
        type="source.registered",
        stream="source-s",
        schema_version=2,
        data={
            "source": "s",
            "url": "https://example.org/s",
            "publisher": "  Publisher  ",
            "published": {"date": "2025-05-01"},
        },
    )

    # when it is read as the write path holds it
    held = parse_held_record(line)

    # then no older stored shape is kept, and the data stored is the event's own
    assert held.stored_as is None
    assert parse_record(line).stored_as is None
    assert held.schema_version == 2
    assert held.stored_data == {
        "source": "s",
        "url": "https://example.org/s",
        "publisher": "Publisher",
        "published": {"date": "2025-05-01", "qualifier": "on"},
    }
