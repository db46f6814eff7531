"""A date's words are the source's own, and carry its language in HTML (WCAG 3.1.2).

A source may give a change's date in words alone ("soon") or beside it ("early July"): in a
French feed's HTML content English words without ``lang`` are read by a screen reader with a
French voice. They are marked with the language of the source whose words they are (a dated
confirmation's, else the report's), and isolated in their own direction, as quoted words
are; plain-text fields stay plain text, and words of a source of no known language are left
unmarked.
"""

from __future__ import annotations

import json
from typing import Any

from leaderlog.events import ClaimConfirmed, Event, FuzzyDate
from leaderlog.feeds import FeedRequest, Scope
from leaderlog.feeds._i18n import language
from leaderlog.feeds._text import entry
from leaderlog.log import EventLog
from tests.feeds.logs import BASE, FRENCH_SOURCE, GENALO_RETIREMENT, correct, project

FRENCH_DATE_WORDS = "d\u00e9but juillet"


def french_dated_confirmation() -> list[Event]:
    """A French source confirming the seeds' English report of Genalo's retirement, dated in
    its own words."""
    return [
        FRENCH_SOURCE,
        ClaimConfirmed(
            claim=GENALO_RETIREMENT,
            source=FRENCH_SOURCE.source,
            effective=FuzzyDate(date="2025-07", text=FRENCH_DATE_WORDS),
        ),
    ]


async def _genalo_item(log: EventLog, lang: str) -> dict[str, Any]:
    service = await project(log)
    request = FeedRequest(
        Scope.parse("person:kenneth-genalo"), "json", lang, BASE, None, explicit_lang=True
    )
    items = json.loads((await service.render(request)).body)["items"]
    (item,) = [item for item in items if "retire" in str(item) and "Genalo" in item["title"]]
    return dict(item)


async def test_an_english_source_s_date_in_words_is_marked_english_in_a_french_feed(
    seeded_log: EventLog,
) -> None:
    # given the seeds' English report, dating Genalo's retirement only "soon"
    # when its entry is read in French
    item = await _genalo_item(seeded_log, "fr")
    # then the HTML content marks the words as English, isolated in their own direction
    assert (
        'date inconnue (\u00ab\u00a0<span lang="en" dir="auto">soon</span>\u00a0\u00bb)'
        in (item["content_html"])
    )
    # and the plain-text fields stay plain text
    for field in ("summary", "content_text"):
        assert "date inconnue (\u00ab\u00a0soon\u00a0\u00bb)" in item[field]
        assert "<" not in item[field]


async def test_the_words_are_marked_even_in_the_feed_s_own_language(
    seeded_log: EventLog,
) -> None:
    # given the seeds' English report dated "soon"
    # when its entry is read in English
    item = await _genalo_item(seeded_log, "en")
    # then they are marked all the same, as the content's quote is: a reader may show the
    # content away from the feed that says which language it is in
    assert '<span lang="en" dir="auto">soon</span>' in item["content_html"]


async def test_a_french_confirmation_s_date_words_are_marked_french(
    seeded_log: EventLog,
) -> None:
    # given a French source confirming the English report with a date in its own words
    await seeded_log.append_events(
        french_dated_confirmation(),
        actor="test",
    )
    # when the entry is read in English
    item = await _genalo_item(seeded_log, "en")
    # then the date's words are the confirming source's: marked French, not English
    assert f'<span lang="fr" dir="auto">{FRENCH_DATE_WORDS}</span>' in item["content_html"]
    assert FRENCH_DATE_WORDS in item["summary"] and "<" not in item["summary"]


async def test_a_corrected_date_s_words_are_marked_in_the_history(
    seeded_log: EventLog,
) -> None:
    # given a correction of the English report's date, still in words
    await correct(seeded_log, GENALO_RETIREMENT, effective={"date": None, "text": "this summer"})
    # when the entry is read in German
    content = (await _genalo_item(seeded_log, "de"))["content_html"]
    # then the words before and after, in the history's "changed" line, are the source's
    history = content.split("<ul>")[-1]
    assert '<span lang="en" dir="auto">soon</span>' in history
    assert '<span lang="en" dir="auto">this summer</span>' in history


def test_words_of_a_source_of_unknown_language_are_left_unmarked() -> None:
    # given a claim dated in words by a source that gives no language
    doc = {
        "claim": "c1",
        "published": "2025-06-01T00:00:00Z",
        "updated": "2025-06-01T00:00:00Z",
        "fields": {"kind": "appointment", "effective": {"date": None, "text": "bient\u00f4t"}},
        "person": {"id": "p", "name": "P"},
        "post": {"id": "q", "title": "Q"},
        "source": {"id": "s", "publisher": "S"},
        "events": [],
    }
    # when its entry is written
    written = entry(doc, language("en"), BASE)
    # then the words are quoted and isolated, but say no language
    assert '(\u201c<span dir="auto">bient\u00f4t</span>\u201d)' in written.content_html
    assert "lang=" not in written.content_html
