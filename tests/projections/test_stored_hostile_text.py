"""Stored text the write path would refuse (written by another tool) must not stop projections."""

from __future__ import annotations

from leaderlog.events import new_event_id
from leaderlog.log import EventLog
from leaderlog.projections import Queries, runner_for
from leaderlog.store import NewEvent


async def test_control_characters_and_long_text_in_the_store_are_read_not_fatal(
    seeded_log: EventLog,
) -> None:
    store = seeded_log.store
    hostile_name = "Eve\x00\x1b[31m <script>alert(1)</script> \u202e" + "x" * 6000
    claim = {
        "claim": "hostile-claim",
        "source": "fox-ice-shakeup-2025-05",
        "kind": "incumbency",
        "person": "kenneth-genalo",
        "post": "ice-ero-ead",
        "capacity": "acting",
        "modality": "occurred",
        "attribution": {"kind": "anonymous", "parties": [hostile_name]},
        "quote": hostile_name,
    }
    written = [
        (
            "person.updated",
            "person-kenneth-genalo",
            {"person": "kenneth-genalo", "name": hostile_name},
        ),
        (
            "org.registered",
            "org-hostile",
            {"org": "hostile", "name": hostile_name, "parent": "ice"},
        ),
        ("claim.reported", "claim-hostile-claim", claim),
    ]
    await store.append(
        [NewEvent(new_event_id(), stream, kind, 1, data) for kind, stream, data in written],
        actor="other-tool",
    )

    runner = await runner_for(store)
    await runner.catch_up()

    statuses = await runner.status()
    head, _ = await store.head()
    assert all(status.checkpoint == head for status in statuses)
    history = await Queries(store).history(person="kenneth-genalo")
    assert "\x00" not in str(history)
