"""The event vocabulary: payload validation, fuzzy dates, ids, the JSON Schema and upcasting."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from leaderlog.errors import RecordError
from leaderlog.events import (
    EVENT_TYPES,
    SLUG_PATTERN,
    ClaimCorrected,
    FuzzyDate,
    RecordedEvent,
    SourceRegistered,
    content_event_id,
    event_from_stored,
    event_schema,
    new_event_id,
    parse_event,
    parse_held_record,
    parse_record,
    parse_record_fields,
)
from leaderlog.log import EventLog
from leaderlog.store import NewEvent, open_store

SEED_FILE = Path(__file__).resolve().parent.parent / "seeds" / "ice-leadership-2025-05.jsonl"

ATTRIBUTION = {"kind": "anonymous", "parties": ["White House", "ICE"]}

# One complete, valid payload per event type (optional fields included where they exist).
GOOD: dict[str, dict[str, Any]] = {
    "org.registered": {
        "org": "ice",
        "name": "Immigration and Customs Enforcement",
        "short_name": "ICE",
        "parent": "dhs",
        "labels": {"en": "Immigration and Customs Enforcement", "zh-Hans": "移民和海关执法局"},
    },
    "org.updated": {"org": "ice", "short_name": "ICE"},
    "post.defined": {
        "post": "ice-hsi-ead",
        "org": "ice-hsi",
        "title": "Executive Associate Director",
        "aliases": ["HSI director"],
        "labels": {"en": "Executive Associate Director (HSI)"},
    },
    "post.updated": {"post": "ice-hsi-ead", "aliases": ["HSI director", "HSI EAD"]},
    "person.registered": {
        "person": "robert-hammer",
        "name": "Robert Hammer",
        "aliases": ["Robert J. Hammer"],
    },
    "person.updated": {"person": "robert-hammer", "name": "Robert J. Hammer"},
    "source.registered": {
        "source": "fox-2025-05",
        "url": "https://www.foxnews.com/politics/ice-leadership-shake-up",
        "publisher": "Fox News",
        "title": "ICE leadership shake-up",
        "published": {"date": "2025-05-29", "qualifier": "on"},
        "language": "en",
    },
    "claim.reported": {
        "claim": "fox-genalo-retirement",
        "source": "fox-2025-05",
        "kind": "departure",
        "person": "kenneth-genalo",
        "post": "ice-ero-ead",
        "capacity": "acting",
        "cause": "retirement",
        "effective": {"date": None, "qualifier": "on", "text": "soon"},
        "modality": "expected",
        "attribution": ATTRIBUTION,
        "quote": "The changes include the retirement of Kenneth Genalo",
        "locator": "body",
    },
    "claim.confirmed": {
        "claim": "fox-genalo-retirement",
        "source": "fox-2025-05",
        "effective": {"date": "2025-06", "qualifier": "about"},
    },
    "claim.corrected": {
        "claim": "fox-genalo-retirement",
        "changes": {"capacity": "permanent", "cause": None},
        "reason": "The agency says he was the permanent director.",
    },
    "claim.disputed": {
        "claim": "fox-hammer-caption",
        "reason": "The caption says acting, the body does not.",
        "conflicts_with": ["fox-hammer-body"],
    },
    "claim.retracted": {"claim": "fox-genalo-retirement", "reason": "The outlet withdrew it."},
    "comment.requested": {"source": "fox-2025-05", "org": "ice", "outcome": "no_response"},
}

STREAMS = {
    "org.registered": "org-ice",
    "org.updated": "org-ice",
    "post.defined": "post-ice-hsi-ead",
    "post.updated": "post-ice-hsi-ead",
    "person.registered": "person-robert-hammer",
    "person.updated": "person-robert-hammer",
    "source.registered": "source-fox-2025-05",
    "claim.reported": "claim-fox-genalo-retirement",
    "claim.confirmed": "claim-fox-genalo-retirement",
    "claim.corrected": "claim-fox-genalo-retirement",
    "claim.disputed": "claim-fox-hammer-caption",
    "claim.retracted": "claim-fox-genalo-retirement",
    "comment.requested": "source-fox-2025-05",
}

# The smallest payload each type accepts: only the required fields.
MINIMAL: dict[str, dict[str, Any]] = {
    "org.registered": {"org": "ice", "name": "ICE"},
    "post.defined": {"post": "p", "org": "ice", "title": "Director"},
    "person.registered": {"person": "x", "name": "X"},
    "source.registered": {"source": "s", "url": "http://example.org/a", "publisher": "P"},
    "claim.reported": {
        "claim": "c",
        "source": "s",
        "kind": "incumbency",
        "person": "x",
        "post": "p",
        "capacity": "unspecified",
        "modality": "occurred",
        "attribution": {"kind": "outlet"},
    },
    "claim.confirmed": {"claim": "c", "source": "s"},
    "claim.corrected": {"claim": "c", "changes": {"modality": "occurred"}, "reason": "r"},
    "claim.disputed": {"claim": "c", "reason": "r"},
    "claim.retracted": {"claim": "c", "reason": "r"},
    "comment.requested": {"source": "s", "org": "ice", "outcome": "declined"},
}


def with_(payload: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A copy of ``payload`` with fields replaced (a value of ``...`` removes the field)."""
    result = dict(payload)
    for name, value in changes.items():
        if value is ...:
            result.pop(name, None)
        else:
            result[name] = value
    return result


def refused(event_type: str, data: object) -> RecordError:
    with pytest.raises(RecordError) as caught:
        parse_event(event_type, data)
    return caught.value


# --- good payloads ----------------------------------------------------------------------------


def test_every_event_type_has_a_good_payload_here() -> None:
    assert set(GOOD) == set(EVENT_TYPES)


@pytest.mark.parametrize("event_type", sorted(GOOD))
def test_good_payload_validates(event_type: str) -> None:
    event = parse_event(event_type, GOOD[event_type])
    assert event.type == event_type
    assert event.stream() == STREAMS[event_type]
    # What is stored reads back as the same event.
    assert parse_event(event_type, event.data()) == event


@pytest.mark.parametrize("event_type", sorted(MINIMAL))
def test_minimal_payload_validates(event_type: str) -> None:
    event = parse_event(event_type, MINIMAL[event_type])
    stored = event.data()
    assert {name: stored[name] for name in MINIMAL[event_type]} == {
        name: value | {"parties": []} if name == "attribution" else value
        for name, value in MINIMAL[event_type].items()
    }
    assert parse_event(event_type, stored) == event


def _held_examples() -> list[dict[str, Any]]:
    """Records of every type, with every field and with the fewest, as an import reads them;
    a correction clearing a field with null, and the seeds."""
    records = [
        {"type": event_type, "data": data}
        for examples in (GOOD, MINIMAL)
        for event_type, data in sorted(examples.items())
    ]
    cleared = {"claim": "c", "changes": {"cause": None, "quote": "q"}, "reason": "r"}
    records.append({"type": "claim.corrected", "data": cleared})
    lines = SEED_FILE.read_text().splitlines()
    return records + [json.loads(line) for line in lines if line.strip()]


@pytest.mark.parametrize("raw", _held_examples(), ids=lambda raw: raw["type"])
def test_a_held_record_makes_its_event_again_as_validating_made_it(raw: dict[str, Any]) -> None:
    # given a record as an import holds it, its event model let go
    held = parse_held_record(raw)
    fields = parse_record_fields(raw)
    # then the event made again from its stored data is the one validating made
    event = held.event
    assert event == fields.event
    assert type(event) is type(fields.event)
    assert event.data() == fields.event.data()
    assert event.stream() == fields.event.stream()
    changes = getattr(event, "changes", None)
    if changes is not None:
        assert changes.model_fields_set == fields.event.changes.model_fields_set
    assert held.fields() == fields
    assert (held.type, held.schema_version) == (event.type, event.schema_version)


# --- bad payloads -----------------------------------------------------------------------------


@pytest.mark.parametrize("event_type", sorted(MINIMAL))
def test_each_required_field_is_required(event_type: str) -> None:
    for name in MINIMAL[event_type]:
        error = refused(event_type, with_(MINIMAL[event_type], **{name: ...}))
        assert error.rule == "schema"
        assert name in error.message and "required field missing" in error.message


@pytest.mark.parametrize("event_type", sorted(GOOD))
def test_unknown_data_field_is_refused(event_type: str) -> None:
    error = refused(event_type, with_(GOOD[event_type], colour="blue"))
    assert error.rule == "schema"
    assert "colour: unknown field" in error.message


def test_an_unknown_field_is_answered_with_the_fields_the_type_takes() -> None:
    # An organisation update has no date of effect, and a post does not move: the error said
    # only "unknown field", not what such a record can say.
    error = refused("org.updated", {"org": "ice", "effective": {"date": "2026-10-01"}})
    assert (
        "data.effective: unknown field (org.updated takes org, name, short_name, parent, labels)"
    ) in error.message
    error = refused("post.updated", {"post": "ice-hsi-ead", "org": "ice"})
    assert "(post.updated takes post, title, aliases, labels)" in error.message


@pytest.mark.parametrize(
    ("event_type", "data", "said"),
    [
        (
            "source.registered",
            {"source": "s-1", "url": "", "publisher": "X"},
            "data.url: '' is not a web address: http:// or https://, then the host",
        ),
        (
            "source.registered",
            {"source": "s-1", "url": "https://x.example/", "publisher": "X", "language": "arabic"},
            "data.language: 'arabic' is not a language tag: en, fr, pt-BR, zh-Hans",
        ),
        (
            "org.registered",
            {"org": "o-1", "name": "X", "labels": {"zh_Hans": "X"}},
            "'zh_Hans' is not a language tag",
        ),
    ],
)
def test_an_address_or_a_language_tag_of_another_form_is_said_in_a_sentence(
    event_type: str, data: dict[str, Any], said: str
) -> None:
    # the pattern itself ('^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$') was the message
    error = refused(event_type, data)
    assert said in error.message and "pattern" not in error.message


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("effective", "2026-08-19", 'must be a JSON object such as {"date": "2025-05-29"'),
        ("attribution", "anonymous", 'must be a JSON object such as {"kind": "official"'),
        ("attribution", {"kind": "anonymous", "parties": "two officials"}, "must be a list"),
        ("quote", 5, "must be text (a JSON string)"),
    ],
)
def test_a_value_of_another_json_type_is_said_in_json_s_words(
    field: str, value: object, said: str
) -> None:
    # pydantic's "a valid dictionary or instance of FuzzyDate", "a valid tuple": Python's
    # words, for a value written in JSON
    error = refused("claim.reported", with_(GOOD["claim.reported"], **{field: value}))
    assert said in error.message
    assert "instance of" not in error.message and "tuple" not in error.message


@pytest.mark.parametrize(
    ("event_type", "field", "value"),
    [
        ("claim.reported", "kind", "promotion"),
        ("claim.reported", "capacity", "temporary"),
        ("claim.reported", "cause", "fired"),
        ("claim.reported", "modality", "confirmed"),
        ("claim.reported", "attribution", {"kind": "secret", "parties": []}),
        ("claim.reported", "locator", "footnote"),
        ("claim.reported", "effective", {"date": "2025", "qualifier": "circa"}),
        ("comment.requested", "outcome", "ignored"),
        ("claim.corrected", "changes", {"capacity": "temporary"}),
    ],
)
def test_enumerations_are_closed(event_type: str, field: str, value: object) -> None:
    error = refused(event_type, with_(GOOD[event_type], **{field: value}))
    assert error.rule == "schema"
    assert field in error.message


@pytest.mark.parametrize(
    "slug",
    [
        "Robert-Hammer",
        "a" * 65,
        "-hammer",
        "hämmer",
        "robert hammer",
        "robert_hammer",
        "",
        "hammer\n",
    ],
)
@pytest.mark.parametrize(
    ("event_type", "field"),
    [
        ("person.registered", "person"),
        ("org.registered", "org"),
        ("org.registered", "parent"),
        ("post.defined", "org"),
        ("claim.reported", "claim"),
        ("claim.reported", "source"),
        ("claim.disputed", "conflicts_with"),
    ],
)
def test_bad_slugs_are_refused(event_type: str, field: str, slug: str) -> None:
    value: object = [slug] if field == "conflicts_with" else slug
    error = refused(
        event_type, with_(GOOD.get(event_type, MINIMAL.get(event_type, {})), **{field: value})
    )
    assert error.rule == "schema"
    assert field in error.message
    # in words, not as the pattern
    assert "is not an id: 1-64 of a-z, 0-9 and '-', starting with a letter or digit" in (
        error.message
    )
    assert "pattern" not in error.message


def test_a_long_bad_slug_is_shown_cut_short() -> None:
    error = refused("person.registered", {"person": "X" * 5000, "name": "N"})
    assert error.message == (
        "person.registered: data.person: 'XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"
        "... is not an id: 1-64 of a-z, 0-9 and '-', starting with a letter or digit"
    )


@pytest.mark.parametrize("slug", ["a", "0", "a" * 64, "ice-hsi-ead", "2025-05-fox"])
def test_good_slugs_are_accepted(slug: str) -> None:
    assert (
        parse_event("person.registered", {"person": slug, "name": "N"}).stream() == f"person-{slug}"
    )


@pytest.mark.parametrize(
    ("event_type", "data", "words"),
    [
        ("org.registered", {"org": "ice", "name": "ICE", "parent": "ice"}, "own parent"),
        ("org.updated", {"org": "ice"}, "at least one"),
        ("org.updated", {"org": "ice", "parent": "ice"}, "own parent"),
        ("post.updated", {"post": "p"}, "at least one"),
        ("person.updated", {"person": "x"}, "at least one"),
        ("org.updated", {"org": "ice", "name": None}, "name cannot be null"),
        ("post.updated", {"post": "p", "title": None, "labels": {}}, "title cannot be null"),
        ("person.updated", {"person": "x", "aliases": None, "name": None}, "aliases, name cannot"),
        ("claim.corrected", {"claim": "c", "changes": {}, "reason": "r"}, "at least one"),
        (
            "claim.corrected",
            {"claim": "c", "changes": {"source": None}, "reason": "r"},
            "source cannot be null: every claim has a source",
        ),
        (
            "claim.corrected",
            {"claim": "c", "changes": {"source": "X!"}, "reason": "r"},
            "not an id",
        ),
        ("claim.disputed", {"claim": "c", "reason": "r", "conflicts_with": ["c"]}, "itself"),
        ("claim.reported", with_(GOOD["claim.reported"], kind="appointment"), "cause"),
        ("claim.reported", with_(GOOD["claim.reported"], kind="incumbency"), "cause"),
        ("person.registered", {"person": "x", "name": "   "}, "name"),
        ("person.registered", {"person": "x", "name": "X" * 301}, "name"),
        ("person.registered", {"person": "x", "name": "X\u0000"}, "U+0000"),
        ("person.registered", {"person": "x", "name": "X\u001b[31m"}, "U+001B"),
        ("person.registered", {"person": "x", "name": "X\u0085Y"}, "U+0085"),
        ("person.registered", {"person": "x", "name": "\u00a0\u200b"}, "visible character"),
        ("person.registered", {"person": "x", "name": "\u202e\u2066"}, "visible character"),
        ("person.registered", {"person": "x", "name": "\u3164\u115f\u1160"}, "visible"),
        ("person.registered", {"person": "x", "name": "\uffa0 \u034f"}, "visible character"),
        ("person.registered", {"person": "x", "name": "\u2800\u2800"}, "visible character"),
        ("person.registered", {"person": "x", "name": "\ufe0f\U000e0100"}, "visible"),
        ("person.registered", {"person": "x", "name": 42}, "name"),
        ("person.registered", {"person": "x", "name": "X", "aliases": "X"}, "aliases"),
        ("claim.reported", with_(GOOD["claim.reported"], quote="q" * 5001), "quote"),
        ("source.registered", with_(GOOD["source.registered"], url="javascript:alert(1)"), "url"),
        ("source.registered", with_(GOOD["source.registered"], url="ftp://x.org/a"), "url"),
        ("source.registered", with_(GOOD["source.registered"], language="English"), "language"),
        ("org.registered", with_(GOOD["org.registered"], labels={"EN!": "x"}), "labels"),
        ("claim.reported", with_(GOOD["claim.reported"], attribution="anonymous"), "attribution"),
    ],
)
def test_payload_rules(event_type: str, data: dict[str, Any], words: str) -> None:
    error = refused(event_type, data)
    assert error.rule == "schema"
    assert words in error.message


def test_an_invisible_name_already_stored_is_read_as_it_is() -> None:
    stored = event_from_stored("person.registered", 1, {"person": "x", "name": "\u200b"})
    assert stored.data()["name"] == "\u200b"


def test_a_source_address_without_a_host_already_stored_is_read_as_it_is() -> None:
    data = {"source": "s", "url": "https:///example.org/story", "publisher": "Paper"}
    assert event_from_stored("source.registered", 2, data).data()["url"] == data["url"]
    with pytest.raises(RecordError, match="names no host"):
        parse_event("source.registered", data)


def test_a_source_address_holding_a_byte_order_mark_is_refused_but_read_if_stored() -> None:
    # given an address a byte order mark was copied into, as earlier versions accepted it
    data = {"source": "s", "url": "https://example.org/a\ufeffb", "publisher": "Paper"}
    # then an import refuses it, saying what to delete, and a stored one reads as it is
    with pytest.raises(RecordError, match=r"cannot hold U\+FEFF \(an invisible byte order mark\)"):
        parse_event("source.registered", data)
    assert event_from_stored("source.registered", 2, data).data()["url"] == data["url"]


@pytest.mark.parametrize("character", ["\u200e", "\u200f", "\u202a", "\u202e", "\u2066", "\u2069"])
def test_a_source_address_holding_a_bidirectional_formatting_character_is_refused(
    character: str,
) -> None:
    # given an address an invisible bidirectional formatting character makes read as another
    data = {"source": "s", "url": f"https://example.org/{character}gpj.exe", "publisher": "P"}
    # then an import refuses it, naming the character, and a stored one reads as it is
    code = f"U\\+{ord(character):04X}"
    with pytest.raises(RecordError, match=f"cannot hold {code} \\(an invisible bidirectional"):
        parse_event("source.registered", data)
    assert event_from_stored("source.registered", 2, data).data()["url"] == data["url"]
    # while other letters outside ASCII are an address's own
    parse_event("source.registered", {**data, "url": "https://bücher.example/führer\u200d"})


def test_an_empty_update_already_stored_reads_as_changing_nothing() -> None:
    # Written before nulls were refused: its null was dropped, and nothing was left.
    stored = event_from_stored("org.updated", 1, {"org": "ice"})
    assert stored.data() == {"org": "ice"}
    with pytest.raises(RecordError, match="at least one"):
        parse_event("org.updated", {"org": "ice"})


def test_control_characters_allowed_only_as_ordinary_whitespace() -> None:
    event = parse_event("claim.retracted", {"claim": "c", "reason": "line one\nline\ttwo"})
    assert event.data()["reason"] == "line one\nline\ttwo"


@pytest.mark.parametrize("event_type", [None, 42, "claim.deleted", "Claim.Reported", ""])
def test_unknown_types_are_refused(event_type: object) -> None:
    error = refused(event_type, {"claim": "c"})  # type: ignore[arg-type]
    assert error.rule == "type"
    assert "unknown event type" in error.message


@pytest.mark.parametrize("data", [None, [], "x", 1, [["claim", "c"]]])
def test_data_must_be_an_object(data: object) -> None:
    assert refused("claim.retracted", data).rule == "schema"


def test_type_inside_data_is_refused() -> None:
    error = refused("person.registered", {"person": "x", "name": "X", "type": "org.registered"})
    assert "data.type" in error.message


# --- fuzzy dates ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("date", "precision", "earliest", "latest"),
    [
        ("2025-05-29", "day", dt.date(2025, 5, 29), dt.date(2025, 5, 29)),
        ("2024-02-29", "day", dt.date(2024, 2, 29), dt.date(2024, 2, 29)),
        ("2025-05", "month", dt.date(2025, 5, 1), dt.date(2025, 5, 31)),
        ("2025-02", "month", dt.date(2025, 2, 1), dt.date(2025, 2, 28)),
        ("2024-02", "month", dt.date(2024, 2, 1), dt.date(2024, 2, 29)),
        ("2025-04", "month", dt.date(2025, 4, 1), dt.date(2025, 4, 30)),
        ("2025-12", "month", dt.date(2025, 12, 1), dt.date(2025, 12, 31)),
        ("2025", "year", dt.date(2025, 1, 1), dt.date(2025, 12, 31)),
        (None, "unknown", None, None),
    ],
)
def test_fuzzy_date_range(
    date: str | None, precision: str, earliest: dt.date | None, latest: dt.date | None
) -> None:
    fuzzy = FuzzyDate(date=date)
    assert fuzzy.precision == precision
    assert fuzzy.earliest() == earliest
    assert fuzzy.latest() == latest


def test_unknown_date_keeps_the_words() -> None:
    fuzzy = FuzzyDate.model_validate({"date": None, "text": "soon"})
    assert (fuzzy.precision, fuzzy.text, fuzzy.qualifier) == ("unknown", "soon", "on")


@pytest.mark.parametrize(
    "date",
    [
        "2025-02-30",
        "2025-02-29",
        "2025-04-31",
        "2025-13",
        "2025-00",
        "2025-05-00",
        "2025-05-32",
        "soon",
        "",
        "25-05-29",
        "2025/05/29",
        "2025-5-29",
        "2025-05-29T00:00:00",
        "0999",
        " 2025",
        "2024\n",
        "\u0662\u0660\u0662\u0665-\u0660\u0665-\u0662\u0669",  # Arabic-Indic digits
        "\uff11\uff19\uff19\uff19-\uff11\uff12",  # fullwidth digits
    ],
)
def test_impossible_or_malformed_dates_are_refused(date: str) -> None:
    data = with_(GOOD["claim.reported"], effective={"date": date})
    error = refused("claim.reported", data)
    assert error.rule == "schema"
    assert "effective.date" in error.message


def test_a_date_in_other_digits_already_stored_is_read_as_it_was_accepted() -> None:
    # Early development versions took any script's digits and a final newline.
    data = with_(GOOD["claim.reported"], effective={"date": "\u0662\u0660\u0662\u0665"})
    stored = event_from_stored("claim.reported", 1, data)
    assert stored.data()["effective"]["date"] == "\u0662\u0660\u0662\u0665"
    with_newline = with_(GOOD["claim.reported"], effective={"date": "2024\n"})
    assert event_from_stored("claim.reported", 1, with_newline).data()["effective"]["date"]
    with pytest.raises(RecordError):
        event_from_stored("claim.reported", 1, with_(data, effective={"date": "2025-13"}))


def test_dates_must_be_strings() -> None:
    error = refused("claim.confirmed", {"claim": "c", "source": "s", "effective": {"date": 2025}})
    assert "effective.date" in error.message


def test_fuzzy_date_qualifiers() -> None:
    for qualifier in ("on", "about", "before", "after"):
        event = parse_event(
            "claim.confirmed",
            {"claim": "c", "source": "s", "effective": {"date": "2025", "qualifier": qualifier}},
        )
        assert event.data()["effective"] == {"date": "2025", "qualifier": qualifier}


# --- ids --------------------------------------------------------------------------------------


def test_content_ids_are_stable_uuid5() -> None:
    record = {"type": "claim.reported", "data": GOOD["claim.reported"]}
    first = parse_record(record).event_id
    again = parse_record(json.loads(json.dumps(record))).event_id
    assert first == again
    assert first.version == 5
    assert first == content_event_id(parse_event("claim.reported", GOOD["claim.reported"]))


def test_content_ids_ignore_key_order() -> None:
    data = GOOD["claim.reported"]
    reordered = {key: data[key] for key in reversed(list(data))}
    reordered["attribution"] = {"parties": ATTRIBUTION["parties"], "kind": ATTRIBUTION["kind"]}
    assert list(reordered) != list(data)
    assert (
        parse_record({"type": "claim.reported", "data": data}).event_id
        == parse_record({"data": reordered, "type": "claim.reported"}).event_id
    )


def test_content_ids_change_with_content() -> None:
    base = {"type": "person.registered", "data": {"person": "x", "name": "X"}}
    other_name = {"type": "person.registered", "data": {"person": "x", "name": "Y"}}
    other_type = {"type": "person.updated", "data": {"person": "x", "name": "X"}}
    ids = {parse_record(record).event_id for record in (base, other_name, other_type)}
    assert len(ids) == 3


def test_content_ids_ignore_meta_and_expected_version() -> None:
    base = {"type": "person.registered", "data": {"person": "x", "name": "X"}}
    decorated = {**base, "meta": {"correlation": "abc"}, "expected_version": "no_stream"}
    assert parse_record(base).event_id == parse_record(decorated).event_id


def test_content_id_is_fixed_forever() -> None:
    # Changing the namespace or the canonical form would re-append every imported file.
    record = parse_record({"type": "person.registered", "data": {"person": "x", "name": "X"}})
    canonical = '{"data":{"aliases":[],"name":"X","person":"x"},"type":"person.registered"}'
    namespace = uuid.UUID("5b0f4a52-3c6e-4a8e-9d43-6c1e8f1f2a10")
    assert record.event_id == uuid.uuid5(namespace, canonical)


def test_explicit_event_id_is_kept() -> None:
    chosen = uuid.uuid4()
    record = parse_record(
        {"type": "person.registered", "data": {"person": "x", "name": "X"}, "event_id": str(chosen)}
    )
    assert record.event_id == chosen


@pytest.mark.parametrize("event_id", ["not-a-uuid", "1234", 42, "g" * 32])
def test_event_id_must_be_a_uuid(event_id: object) -> None:
    with pytest.raises(RecordError, match="not a UUID"):
        parse_record(
            {
                "type": "person.registered",
                "data": {"person": "x", "name": "X"},
                "event_id": event_id,
            }
        )


def test_new_ids_are_time_ordered_uuid7() -> None:
    ids = [new_event_id() for _ in range(5000)]
    assert {event_id.version for event_id in ids} == {7}
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)
    assert ids == sorted(ids, key=lambda event_id: event_id.bytes)


# --- records ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "rule"),
    [
        ([], "schema"),
        ("person.registered", "schema"),
        ({"data": {"person": "x", "name": "X"}}, "schema"),
        ({"type": "person.registered"}, "schema"),
        ({"type": "person.registered", "data": {"person": "x", "name": "X"}, "extra": 1}, "schema"),
        ({"type": "person.registered", "data": {"person": "x", "name": "X"}, "meta": []}, "schema"),
        ({"type": "person.registered", "data": {"person": "x", "name": "X"}, "meta": ""}, "schema"),
        (
            {
                "type": "person.registered",
                "data": {"person": "x", "name": "X"},
                "meta": {"padding": "x" * 5000},
            },
            "size",
        ),
        (
            {
                "type": "person.registered",
                "data": {"person": "x", "name": "X"},
                "expected_version": -1,
            },
            "expected_version",
        ),
        (
            {
                "type": "person.registered",
                "data": {"person": "x", "name": "X"},
                "expected_version": True,
            },
            "expected_version",
        ),
        (
            {
                "type": "person.registered",
                "data": {"person": "x", "name": "X"},
                "expected_version": "latest",
            },
            "expected_version",
        ),
        (
            {
                "type": "person.registered",
                "data": {"person": "x", "name": "X"},
                "expected_version": 1.5,
            },
            "expected_version",
        ),
    ],
)
def test_bad_records_are_refused(record: object, rule: str) -> None:
    with pytest.raises(RecordError) as caught:
        parse_record(record)
    assert caught.value.rule == rule


def test_a_record_field_named_by_other_than_a_string_is_refused_as_unknown() -> None:
    # A library caller's dictionary: a key JSON cannot hold, beside the ones it can.
    record = {"type": "person.registered", "data": {"person": "x", "name": "X"}, 1: 2, "z": 3}
    with pytest.raises(RecordError) as caught:
        parse_record(record)
    assert caught.value.rule == "schema"
    assert "unknown record field(s): 1, z" in str(caught.value)


@pytest.mark.parametrize("expected", [0, 3, "no_stream", "any"])
def test_expected_version_values(expected: object) -> None:
    record = parse_record(
        {
            "type": "person.registered",
            "data": {"person": "x", "name": "X"},
            "expected_version": expected,
        }
    )
    assert record.expected_version == expected


def exported_envelope(**changes: Any) -> dict[str, Any]:
    envelope: dict[str, Any] = {
        "position": 7,
        "stream": "person-x",
        "version": 1,
        "event_id": str(uuid.uuid4()),
        "type": "person.registered",
        "schema_version": 1,
        "data": {"person": "x", "name": "X"},
        "recorded_at": "2025-05-29T12:00:00.000000Z",
        "actor": "seed",
        "meta": {},
        "hash": "0" * 64,
    }
    return with_(envelope, **changes)


def test_an_exported_envelope_without_an_actor_is_recorded_as_imported() -> None:
    envelope = exported_envelope()
    del envelope["actor"]
    assert parse_record(envelope).actor == "import"


def test_exported_envelope_keeps_id_time_and_actor() -> None:
    envelope = exported_envelope()
    record = parse_record(envelope)
    assert str(record.event_id) == envelope["event_id"]
    assert record.recorded_at == dt.datetime(2025, 5, 29, 12, tzinfo=dt.UTC)
    assert record.actor == "seed"


@pytest.mark.parametrize(
    ("changes", "rule"),
    [
        ({"stream": "person-y"}, "stream"),
        ({"schema_version": 99}, "schema_version"),
        ({"schema_version": 0}, "schema"),
        ({"schema_version": "1"}, "schema"),
        ({"recorded_at": "yesterday"}, "schema"),
        ({"recorded_at": "2025-05-29T12:00:00"}, "schema"),
        ({"recorded_at": ...}, "schema"),
        ({"recorded_at": "2024-01-01T00:00Z"}, "schema"),
        ({"recorded_at": "20240101T000002Z"}, "schema"),
        ({"recorded_at": "2024-W01-1T00:00:05Z"}, "schema"),
        ({"recorded_at": 1717000000}, "schema"),
        ({"surprise": 1}, "schema"),
        # an actor an earlier version let through: kept as it was, never made "import"
        ({"actor": ""}, "actor"),
        ({"actor": "Desk"}, "actor"),
        ({"actor": 7}, "actor"),
        # JSON values that are no event type, and cannot even be looked up as one
        ({"type": ["person.registered"]}, "type"),
        ({"type": {"person.registered": 1}}, "type"),
    ],
)
def test_bad_exported_envelopes_are_refused(changes: dict[str, Any], rule: str) -> None:
    with pytest.raises(RecordError) as caught:
        parse_record(exported_envelope(**changes))
    assert caught.value.rule == rule


@pytest.mark.parametrize(
    "recorded_at",
    ["2025-05-29T12:00:00Z\n", "2025-05-29T12:00:00+00:60", "2025-05-29T12:00:00-05:99"],
)
def test_an_exported_time_with_a_final_newline_or_offset_minutes_past_59_is_refused(
    recorded_at: str,
) -> None:
    # given an exported envelope whose recorded_at is no RFC 3339 time: a line feed after
    # it, or an offset of 60 or more minutes (which fromisoformat reads, "+00:99" as +01:39)
    # when it is read, then it is refused rather than recorded at another time than it says
    with pytest.raises(RecordError) as caught:
        parse_record(exported_envelope(recorded_at=recorded_at))
    assert caught.value.rule == "schema"
    assert "recorded_at" in str(caught.value)


@pytest.mark.parametrize("lost", ["hash", "position"])
def test_an_exported_envelope_missing_its_hash_or_position_says_so(lost: str) -> None:
    envelope = exported_envelope()
    del envelope[lost]
    with pytest.raises(RecordError) as caught:
        parse_record(envelope)
    assert caught.value.rule == "schema"
    assert f"an exported envelope needs both position and hash, and this one has no {lost}" in (
        str(caught.value)
    )


# --- the JSON Schema --------------------------------------------------------------------------


def _seed_records() -> list[dict[str, Any]]:
    lines = SEED_FILE.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_schema_structure() -> None:
    schema = event_schema()
    json.dumps(schema)  # plain JSON all the way down
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    branches = {branch["title"]: branch for branch in schema["oneOf"]}
    assert set(branches) == set(EVENT_TYPES)
    for event_type, branch in branches.items():
        assert branch["properties"]["type"] == {"const": event_type}
        assert branch["required"] == ["type", "data"]
        assert branch["additionalProperties"] is False
        data = branch["properties"]["data"]
        assert "type" not in data["properties"]
        assert "type" not in data.get("required", [])
        assert data.get("additionalProperties") is False
        required = set(data.get("required", []))
        if event_type in MINIMAL:
            assert required == set(MINIMAL[event_type])
    for reference in _references(schema):
        name = reference.removeprefix("#/$defs/")
        assert name in schema["$defs"], reference
    claim = branches["claim.reported"]["properties"]["data"]["properties"]
    assert set(_enum_values(claim["kind"])) == {"appointment", "departure", "incumbency"}


def _references(node: object) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [ref for value in node.values() for ref in _references(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _references(value)]
    return []


def _enum_values(node: dict[str, Any]) -> list[object]:
    if "enum" in node:
        return list(node["enum"])
    return [value for option in node.get("anyOf", []) for value in _enum_values(option)]


def _schema_validator() -> Any:
    jsonschema_rs = pytest.importorskip("jsonschema_rs")
    return jsonschema_rs.Draft202012Validator(event_schema())


def test_schema_accepts_every_seed_record() -> None:
    validator = _schema_validator()
    for record in _seed_records():
        assert validator.is_valid(record), record
    for event_type, data in GOOD.items():
        assert validator.is_valid({"type": event_type, "data": data, "expected_version": 0})


def test_schema_and_import_both_take_null_for_a_key_left_out() -> None:
    record = {
        "type": "person.registered",
        "data": {"person": "x", "name": "X"},
        "event_id": None,
        "expected_version": None,
        "meta": None,
    }
    assert _schema_validator().is_valid(record)
    parsed = parse_record(record)
    assert (parsed.expected_version, parsed.meta) == (None, {})


@pytest.mark.parametrize(
    "record",
    [
        {"type": "claim.deleted", "data": {"claim": "c"}},
        {"data": {"person": "x", "name": "X"}},
        {"type": "person.registered"},
        {"type": "person.registered", "data": {"person": "x"}},
        {"type": "person.registered", "data": {"person": "x", "name": "X", "age": 3}},
        {"type": "person.registered", "data": {"person": "X!", "name": "X"}},
        {"type": "person.registered", "data": {"person": "x", "name": "X"}, "extra": 1},
        {"type": "person.registered", "data": {"person": "x", "name": "X"}, "expected_version": -1},
        {"type": "comment.requested", "data": with_(GOOD["comment.requested"], outcome="ignored")},
        {"type": "claim.reported", "data": with_(GOOD["claim.reported"], kind="promotion")},
        {"type": "claim.reported", "data": with_(GOOD["claim.reported"], modality=...)},
        {"type": "source.registered", "data": with_(GOOD["source.registered"], url="mailto:x")},
        {"type": "org.registered", "data": {"org": "x", "name": "X", "labels": {"EN": "X"}}},
        {"type": "person.registered", "data": {"person": "x", "name": "\u3000"}},
        {"type": "person.registered", "data": {"person": "x", "name": "Tom\u0007"}},
        {"type": "person.registered", "data": {"person": "x", "name": "Tom\ufffe"}},
        {"type": "org.updated", "data": {"org": "x", "name": None}},
        {"type": "person.registered", "data": {"person": "x", "name": "\u200b\ufeff"}},
        {"type": "person.registered", "data": {"person": "x", "name": "\u3164\u2800\ufe0f"}},
        {"type": "person.updated", "data": {"person": "x", "aliases": None}},
        {
            "type": "source.registered",
            "data": with_(GOOD["source.registered"], published={"date": "2025-5"}),
        },
    ],
)
def test_schema_refuses_bad_records(record: dict[str, Any]) -> None:
    assert not _schema_validator().is_valid(record)


# --- upcasting -----------------------------------------------------------------------------

OLD_SOURCE = {
    "source": "fox-2025-05",
    "url": "https://www.foxnews.com/politics/ice-leadership-shake-up",
    "publisher": "Fox News",
    "published": "2025-05-29",
}


def test_source_registered_is_at_schema_version_2() -> None:
    assert SourceRegistered.schema_version == 2


def test_old_source_shape_is_upcast_on_read() -> None:
    event = event_from_stored("source.registered", 1, OLD_SOURCE)
    assert isinstance(event, SourceRegistered)
    assert event.published == FuzzyDate(date="2025-05-29", qualifier="on")
    assert event.published is not None and event.published.precision == "day"


def test_recorded_event_decodes_old_shape() -> None:
    recorded = RecordedEvent(
        position=1,
        stream="source-fox-2025-05",
        version=1,
        event_id=uuid.uuid4(),
        type="source.registered",
        schema_version=1,
        data=OLD_SOURCE,
        recorded_at=dt.datetime(2025, 5, 29, tzinfo=dt.UTC),
        actor="seed",
        hash="0" * 64,
    )
    event = recorded.event()
    assert isinstance(event, SourceRegistered)
    assert event.published == FuzzyDate(date="2025-05-29")
    # The stored data itself is never rewritten.
    assert recorded.data["published"] == "2025-05-29"


def test_old_shape_without_published_still_reads() -> None:
    data = {key: value for key, value in OLD_SOURCE.items() if key != "published"}
    event = event_from_stored("source.registered", 1, data)
    assert isinstance(event, SourceRegistered) and event.published is None


def test_current_shape_is_not_upcast_again() -> None:
    current = {**OLD_SOURCE, "published": {"date": "2025-05", "qualifier": "about"}}
    event = event_from_stored("source.registered", 2, current)
    assert isinstance(event, SourceRegistered)
    assert event.published == FuzzyDate(date="2025-05", qualifier="about")


def test_old_shape_with_impossible_date_is_still_refused() -> None:
    with pytest.raises(RecordError, match=r"published\.date"):
        event_from_stored("source.registered", 1, {**OLD_SOURCE, "published": "2025-02-30"})


def test_newer_schema_version_than_known_is_refused() -> None:
    with pytest.raises(RecordError) as caught:
        event_from_stored("person.registered", 2, {"person": "x", "name": "X"})
    assert caught.value.rule == "schema_version"


def test_exported_old_shape_is_upcast_on_import() -> None:
    record = parse_record(
        exported_envelope(
            stream="source-fox-2025-05",
            type="source.registered",
            schema_version=1,
            data=OLD_SOURCE,
        )
    )
    assert isinstance(record.event, SourceRegistered)
    assert record.event.published == FuzzyDate(date="2025-05-29")


async def test_old_shape_row_in_sqlite_reads_back_upcast(sqlite_url: str) -> None:
    store = await open_store(sqlite_url)
    try:
        await store.append(
            [
                NewEvent(
                    event_id=uuid.uuid4(),
                    stream="source-fox-2025-05",
                    type="source.registered",
                    schema_version=1,
                    data=OLD_SOURCE,
                )
            ],
            expected={"source-fox-2025-05": "no_stream"},
            actor="seed",
        )
    finally:
        await store.close()

    async with await EventLog.open(sqlite_url) as log:
        report = await log.store.verify()
        assert report.ok and report.count == 1
        (recorded,) = await log.events()
        assert (recorded.schema_version, recorded.data["published"]) == (1, "2025-05-29")
        event = recorded.event()
        assert isinstance(event, SourceRegistered)
        assert event.published == FuzzyDate(date="2025-05-29")
        # The domain rules read the old shape too: the source can be cited.
        await log.import_lines(
            [
                json.dumps({"type": "org.registered", "data": {"org": "ice", "name": "ICE"}}),
                json.dumps({"type": "post.defined", "data": MINIMAL["post.defined"]}),
                json.dumps({"type": "person.registered", "data": MINIMAL["person.registered"]}),
                json.dumps(
                    {
                        "type": "claim.reported",
                        "data": with_(MINIMAL["claim.reported"], source="fox-2025-05"),
                    }
                ),
            ],
            actor="test",
        )
        assert (await log.store.verify()).count == 5


def test_a_wrong_optional_value_is_not_also_said_to_be_not_none() -> None:
    with pytest.raises(RecordError) as caught:
        parse_event("person.updated", {"person": "p", "name": "A\x00B"})
    assert caught.value.message == (
        "person.updated: data.name: control character U+0000 is not allowed in text"
    )


def test_a_correction_may_attribute_its_claim_to_another_source_beside_its_own() -> None:
    # given a correction naming the claim's new source and, beside changes, its own source
    data = {
        "claim": "c",
        "changes": {"source": "wire"},
        "reason": "Misattributed: the wire reported it.",
        "source": "fox",
    }
    event = parse_event("claim.corrected", data)
    assert isinstance(event, ClaimCorrected)
    # then the two stay apart, and the stored payload keeps both as given
    assert (event.changes.source, event.source) == ("wire", "fox")
    assert event.data() == data
    assert event.schema_version == 1
    # and the published schema offers the new source as an id, never null, told apart from
    # the correction's own source
    schema = event_schema()
    changes = schema["$defs"]["ClaimChanges"]["properties"]["source"]
    assert changes["type"] == "string" and changes["pattern"] == SLUG_PATTERN
    assert "not the correction's own source" in changes["description"].lower()
    corrected = next(b for b in schema["oneOf"] if b["title"] == "claim.corrected")
    own = corrected["properties"]["data"]["properties"]["source"]
    assert "changes.source" in own["description"]
    record = {"type": "claim.corrected", "data": data}
    assert _schema_validator().is_valid(record)
    nulled = {"type": "claim.corrected", "data": {**data, "changes": {"source": None}}}
    assert not _schema_validator().is_valid(nulled)


@pytest.mark.parametrize(
    ("event_type", "data", "said"),
    [
        (
            "person.updated",
            {"person": "x", "aliases": [f"a{n}" for n in range(51)]},
            "person.updated: data.aliases: Tuple should have at most 50 items after validation, "
            "not 51",
        ),
        (
            "org.updated",
            {"org": "x", "labels": {"en": ""}},
            "org.updated: data.labels.en: text must hold a visible character, not only spaces "
            "or format characters",
        ),
    ],
)
def test_a_refused_field_of_an_update_is_named_by_its_path_alone(
    event_type: str, data: dict[str, Any], said: str
) -> None:
    # not by the branch of its type pydantic tried ("data.aliases.tuple[function-after[...]]"),
    # nor with "data.aliases.none: Input should be None" beside it, though null is refused
    with pytest.raises(RecordError) as refused:
        parse_event(event_type, data)
    assert str(refused.value) == said
