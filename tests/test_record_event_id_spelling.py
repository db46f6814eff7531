"""A record's own ``event_id`` is a UUID in its standard 8-4-4-4-12 spelling and nothing else:
not braces, a ``urn:uuid:`` prefix or anything after it, which Python's UUID parser would
also read, but JSON Schema's ``"format": "uuid"`` and other readers of the record would not."""

from __future__ import annotations

import pytest

from leaderlog.errors import RecordError
from leaderlog.events import parse_record

UUID = "0196f2a4-7c3e-7b21-9a4d-2f0c8e1b5a77"


def record(event_id: str) -> dict[str, object]:
    return {
        "type": "person.registered",
        "data": {"person": "id-spelling", "name": "Id Spelling"},
        "event_id": event_id,
    }


def test_the_standard_spelling_is_kept() -> None:
    # given a record with a version 7 UUID in its standard spelling
    # when it is parsed
    parsed = parse_record(record(UUID))

    # then the id is that UUID
    assert str(parsed.event_id) == UUID


@pytest.mark.parametrize(
    "event_id",
    [
        UUID + "}",
        "{" + UUID + "}",
        "urn:uuid:" + UUID,
        UUID + "\n",
        UUID + " ",
        UUID + "0",
        UUID.upper() + "-",
    ],
    ids=[
        "closing-brace",
        "braces",
        "urn",
        "newline-after",
        "space-after",
        "digit-after",
        "dash-after",
    ],
)
def test_a_uuid_with_anything_around_it_is_refused(event_id: str) -> None:
    # given a record whose event_id holds a valid UUID and something more
    # when it is parsed
    with pytest.raises(RecordError) as caught:
        parse_record(record(event_id))

    # then it is refused as not a UUID, under the schema rule (never another exception)
    assert caught.value.rule == "schema"
    assert "is not a UUID (8-4-4-4-12 hexadecimal digits)" in str(caught.value)
