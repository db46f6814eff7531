"""org.updated clears an organisation's parent or short name with null.

Given an update that gives ``"parent": null`` or ``"short_name": null``, when it is read,
stored, decided and appended, then the null is kept as a change (a top-level organisation,
one without a short name) while a field left out stays out, as it always was.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from leaderlog.domain import OrgState, referenced_streams, referenced_streams_in
from leaderlog.errors import RecordError
from leaderlog.events import (
    content_event_id,
    event_from_stored,
    event_schema,
    parse_event,
    parse_held_record,
    parse_record,
)
from leaderlog.log import EventLog
from tests.test_domain import (
    DHS,
    HSI,
    ICE,
    WHITE_HOUSE,
    event,
    given,
    then_accepted,
    then_refused,
)


def schema_accepts(record: dict[str, Any]) -> bool:
    jsonschema_rs = pytest.importorskip("jsonschema_rs")
    return bool(jsonschema_rs.Draft202012Validator(event_schema()).is_valid(record))


# --- the event --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        {"org": "ice", "parent": None},
        {"org": "ice", "short_name": None},
        {"org": "ice", "parent": None, "short_name": None, "name": "ICE"},
    ],
)
def test_a_null_parent_or_short_name_is_a_change_stored_as_null(data: dict[str, Any]) -> None:
    update = parse_event("org.updated", data)
    assert update.data() == data
    assert schema_accepts({"type": "org.updated", "data": data})


def test_a_field_left_out_stays_out_and_keeps_its_content_id() -> None:
    # Events stored before clearing was possible keep their data, so their derived ids.
    renamed = parse_event("org.updated", {"org": "ice", "name": "ICE"})
    moved = parse_event("org.updated", {"org": "ice", "parent": "dhs"})
    assert renamed.data() == {"org": "ice", "name": "ICE"}
    assert moved.data() == {"org": "ice", "parent": "dhs"}
    assert content_event_id(renamed) == uuid.UUID("493feb35-7844-5abb-8154-b36e6b1b2de3")
    assert content_event_id(moved) == uuid.UUID("c73d562d-5ca1-57d7-a97b-fb2d5a9f8953")
    assert "parent" not in event_from_stored("org.updated", 1, renamed.data()).model_fields_set


def test_clearing_is_another_record_than_leaving_out() -> None:
    cleared = parse_event("org.updated", {"org": "ice", "name": "ICE", "parent": None})
    renamed = parse_event("org.updated", {"org": "ice", "name": "ICE"})
    assert content_event_id(cleared) != content_event_id(renamed)


def test_a_stored_null_reads_back_as_a_clearing() -> None:
    stored = event_from_stored("org.updated", 1, {"org": "ice", "parent": None})
    assert "parent" in stored.model_fields_set
    assert stored.data() == {"org": "ice", "parent": None}


def test_a_record_held_for_writing_keeps_the_null() -> None:
    raw = {"type": "org.updated", "data": {"org": "ice", "short_name": None}}
    held = parse_held_record(raw)
    assert held.stored_data == {"org": "ice", "short_name": None}
    assert held.event.data() == {"org": "ice", "short_name": None}
    assert held.event_id == parse_record(raw).event_id


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"org": "ice", "name": None}, "name cannot be null"),
        ({"org": "ice", "labels": None, "parent": None}, "labels cannot be null"),
        ({"org": "ice"}, "at least one"),
    ],
)
def test_name_and_labels_still_cannot_be_null_and_an_update_changes_something(
    data: dict[str, Any], words: str
) -> None:
    with pytest.raises(RecordError, match=words):
        parse_event("org.updated", data)
    assert not schema_accepts({"type": "org.updated", "data": data})


@pytest.mark.parametrize(
    ("event_type", "data"),
    [
        ("post.updated", {"post": "p", "title": None}),
        ("person.updated", {"person": "x", "name": None}),
    ],
)
def test_other_updates_still_cannot_clear(event_type: str, data: dict[str, Any]) -> None:
    with pytest.raises(RecordError):
        parse_event(event_type, data)
    assert not schema_accepts({"type": event_type, "data": data})


def test_a_copy_of_an_update_does_not_clear_what_it_left_out() -> None:
    update = parse_event("org.updated", {"org": "ice", "name": "ICE", "labels": {"en": "ICE"}})
    copy = update.model_copy(update={"name": "Immigration and Customs Enforcement"})
    assert copy.data() == {
        "org": "ice",
        "name": "Immigration and Customs Enforcement",
        "labels": {"en": "ICE"},
    }


# --- the rules --------------------------------------------------------------------------------


def test_clearing_the_parent_makes_the_org_top_level() -> None:
    states = then_accepted((DHS, ICE, HSI), event("org.updated", org="ice", parent=None))
    assert states["org-ice"] == OrgState("ice", None)
    assert states["org-ice-hsi"] == OrgState("ice-hsi", "ice")


def test_clearing_the_short_name_leaves_the_parent() -> None:
    states = then_accepted((DHS, ICE), event("org.updated", org="ice", short_name=None))
    assert states["org-ice"] == OrgState("ice", "dhs")


def test_clearing_what_an_org_does_not_have_is_accepted_as_setting_the_same_parent_is() -> None:
    then_accepted((DHS, ICE), event("org.updated", org="ice", parent="dhs"))
    then_accepted((DHS,), event("org.updated", org="dhs", parent=None))
    then_accepted((WHITE_HOUSE,), event("org.updated", org="white-house", short_name=None))


def test_only_a_registered_org_is_cleared() -> None:
    error = then_refused((DHS,), event("org.updated", org="ice", parent=None), "reference")
    assert "org 'ice'" in error.message


def test_a_cycle_is_checked_against_the_tree_after_a_clearing() -> None:
    # While ICE is under DHS, DHS may not move under HSI; once ICE is top-level, it may.
    move = event("org.updated", org="dhs", parent="ice-hsi")
    then_refused((DHS, ICE, HSI), move, "org_cycle")
    then_accepted((DHS, ICE, HSI, event("org.updated", org="ice", parent=None)), move)


def test_a_move_after_a_clearing_is_followed() -> None:
    history = (
        DHS,
        ICE,
        WHITE_HOUSE,
        event("org.updated", org="ice", parent=None),
        event("org.updated", org="ice", parent="white-house"),
    )
    assert given(*history)["org-ice"] == OrgState("ice", "white-house")


def test_a_clearing_reads_only_its_own_stream() -> None:
    cleared = event("org.updated", org="ice", parent=None)
    assert referenced_streams(cleared) == {"org-ice"}
    assert referenced_streams_in("org.updated", cleared.data()) == {"org-ice"}


# --- through the log --------------------------------------------------------------------------


async def test_the_log_stores_the_null_and_takes_the_same_record_once(
    seeded_log: EventLog,
) -> None:
    record = {"type": "org.updated", "data": {"org": "ice-hsi", "parent": None}}
    first = await seeded_log.append_records([parse_record(record)], actor="test")
    again = await seeded_log.append_records([parse_record(record)], actor="test")
    assert again.positions == first.positions
    (stored,) = await seeded_log.store.read_all(after=first.positions[0] - 1, limit=1)
    assert stored.data == {"org": "ice-hsi", "parent": None}
    # and the organisation, top-level now, may take its former parent as a child
    under = {"type": "org.updated", "data": {"org": "ice", "parent": "ice-hsi"}}
    moved = await seeded_log.append_records([parse_record(under)], actor="test")
    assert moved.positions == (first.positions[0] + 1,)
