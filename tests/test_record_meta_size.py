"""A record's ``meta``: at most 4096 bytes as stored (its canonical JSON), that many included."""

from __future__ import annotations

from typing import Any

import pytest

from leaderlog._json import canonical_bytes
from leaderlog.errors import RecordError
from leaderlog.events import check_meta, parse_record

LIMIT = 4096


def record_with_meta(note_length: int) -> dict[str, Any]:
    return {
        "type": "person.registered",
        "data": {"person": "meta-size", "name": "Meta Size"},
        "meta": {"note": "n" * note_length},
    }


def note_length_for(total: int) -> int:
    # {"note":"..."} in canonical JSON: 11 bytes besides the note itself.
    return total - len(canonical_bytes({"note": ""}))


def test_meta_of_exactly_the_limit_is_accepted() -> None:
    # given a record whose meta, as stored, is exactly 4096 bytes
    record = record_with_meta(note_length_for(LIMIT))
    assert len(canonical_bytes(record["meta"])) == LIMIT

    # when it is parsed
    parsed = parse_record(record)

    # then the meta is kept as given (the limit is "at most", not "less than")
    assert parsed.meta == record["meta"]
    assert check_meta(record["meta"]) == record["meta"]


def test_meta_one_byte_over_the_limit_is_refused_as_size() -> None:
    # given a record whose meta, as stored, is 4097 bytes
    record = record_with_meta(note_length_for(LIMIT + 1))

    # when it is parsed
    with pytest.raises(RecordError) as caught:
        parse_record(record)

    # then it is refused under the size rule, saying the limit
    assert caught.value.rule == "size"
    assert f"larger than {LIMIT} bytes" in str(caught.value)
