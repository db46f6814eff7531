"""Early development versions took text that is nothing but Unicode noncharacters (a name of
"\\ufffe", an alias of "\\uffff"). Such a log is read as it is, so the stream holding that text
can still be appended to, the update that corrects it first of all."""

from __future__ import annotations

from leaderlog.events import new_event_id, parse_event, readable_event
from leaderlog.log import EventLog
from leaderlog.store.base import NewEvent

SOURCE = "fox-ice-shakeup-2025-05"


def _claim(claim: str, quote: str, party: str) -> dict[str, object]:
    return {
        "claim": claim,
        "source": SOURCE,
        "kind": "incumbency",
        "person": "kenneth-genalo",
        "post": "ice-ero-ead",
        "capacity": "acting",
        "modality": "occurred",
        "attribution": {"kind": "anonymous", "parties": [party]},
        "quote": quote,
    }


async def test_a_stream_whose_text_is_only_noncharacters_can_still_be_appended_to(
    seeded_log: EventLog,
) -> None:
    stored = [
        (
            "person-nc",
            "person.registered",
            {"person": "nc", "name": "\ufffe", "aliases": ["\uffff"]},
        ),
        ("claim-nc-quote", "claim.reported", _claim("nc-quote", " \ufdd0 ", "\U0010ffff")),
    ]
    await seeded_log.store.append(
        [NewEvent(new_event_id(), stream, kind, 1, data) for stream, kind, data in stored],
        actor="cli",
    )

    corrections = [
        parse_event("person.updated", {"person": "nc", "name": "Nora Cole", "aliases": []}),
        parse_event("claim.confirmed", {"claim": "nc-quote", "source": SOURCE}),
        parse_event("claim.retracted", {"claim": "nc-quote", "reason": "withdrawn"}),
    ]
    outcome = await seeded_log.append_events(corrections, actor="test")
    assert outcome.appended == 3
    assert (await seeded_log.store.verify()).ok


def test_text_of_only_refused_characters_reads_as_replacement_characters() -> None:
    event = readable_event(
        "person.registered", 1, {"person": "nc", "name": "\ufffe", "aliases": [" \x07 "]}
    )
    assert event.model_dump(include={"name", "aliases"}) == {
        "name": "\ufffd",
        "aliases": ("\ufffd",),
    }
