"""A writer's reason in a right-to-left script is isolated without the full stop that ends
the sentence around it.

"Disputed on May 8, 2025: <Arabic reason>." is an English sentence: its full stop belongs to
it, at its right end. Isolated with the reason, the stop took the reason's direction and was
shown at the reason's left end, in the middle of the line (in HTML and in plain text alike).
"""

from __future__ import annotations

import json

import pytest

from leaderlog.events import ClaimDisputed, ClaimRetracted
from leaderlog.feeds import FeedRequest, FeedService, Scope
from leaderlog.feeds._text import isolated_text
from leaderlog.log import EventLog
from tests.feeds.logs import BASE, FOX, GENALO_RETIREMENT, HAMMER_BODY, project

ARABIC = (
    "\u0627\u0644\u0645\u0635\u062f\u0631 \u0644\u0627 \u064a\u0630\u0643\u0631 \u0630\u0644\u0643"
)
# A reason that ends a sentence of its own keeps its stop, and takes no second one.
ENDED = "\u05d4\u05de\u05e7\u05d5\u05e8 \u05e9\u05d2\u05d5\u05d9."


async def _service(log: EventLog) -> FeedService:
    await log.append_events(
        [
            ClaimDisputed(claim=GENALO_RETIREMENT, reason=ARABIC),
            ClaimRetracted(claim=HAMMER_BODY, reason=ENDED, source=FOX),
        ],
        actor="test",
    )
    return await project(log)


async def _items(service: FeedService, scope: str, lang: str) -> list[dict[str, str]]:
    request = FeedRequest(Scope.parse(scope), "json", lang, BASE, None, explicit_lang=True)
    items: list[dict[str, str]] = json.loads((await service.render(request)).body)["items"]
    return items


@pytest.mark.parametrize(("tag", "stop"), [("en", "."), ("ja", "\u3002"), ("fr", ".")])
async def test_the_stop_after_a_right_to_left_reason_is_outside_its_isolate(
    seeded_log: EventLog, tag: str, stop: str
) -> None:
    service = await _service(seeded_log)
    (item,) = [
        item
        for item in await _items(service, "person:kenneth-genalo", tag)
        if ARABIC in item["summary"]
    ]
    # in plain text: the summary
    assert f"{isolated_text(ARABIC)}{stop}" in item["summary"]
    assert f"{ARABIC}{stop}\u2069" not in item["summary"]
    # in HTML: the content's history, and the list of recent changes on a page
    assert f'<span dir="auto">{ARABIC}</span>{stop}' in item["content_html"]
    (change,) = [
        change
        for change in await service.recent(50, tag, "person:kenneth-genalo")
        if ARABIC in change.summary_html
    ]
    assert f'<span dir="auto">{ARABIC}</span>{stop}' in change.summary_html


async def test_a_reason_that_ends_its_own_sentence_takes_no_second_stop(
    seeded_log: EventLog,
) -> None:
    service = await _service(seeded_log)
    (item,) = [
        item
        for item in await _items(service, "person:robert-hammer", "en")
        if ENDED in item["summary"]
    ]
    assert f"{isolated_text(ENDED)} " in item["summary"]
    (change,) = [
        change
        for change in await service.recent(50, "en", "person:robert-hammer")
        if ENDED in change.summary_html
    ]
    assert f'<span dir="auto">{ENDED}</span> ' in change.summary_html
    assert f"{ENDED}</span>." not in change.summary_html
