"""Quoted words in a claim's history carry their source's language, as the report's do.

A confirming source's words and a corrected quote are quoted words too: in an entry's HTML
content a screen reader reads them in the voice their ``lang`` gives, and on a page the
same, where the page's language is another (WCAG 3.1.2).
"""

from __future__ import annotations

import json
import re

from leaderlog.events import ClaimConfirmed
from leaderlog.feeds import FeedRequest, Scope
from leaderlog.feeds._i18n import language
from leaderlog.feeds._text import recent_change
from leaderlog.log import EventLog
from tests.feeds.logs import (
    BASE,
    FRENCH_SOURCE,
    FRENCH_WORDS,
    GENALO_RETIREMENT,
    correct,
    project,
)

CORRECTED_WORDS = "Genalo will retire at the end of the month"


async def _genalo_content(log: EventLog, lang: str) -> str:
    service = await project(log)
    request = FeedRequest(
        Scope.parse("person:kenneth-genalo"), "json", lang, BASE, None, explicit_lang=True
    )
    items = json.loads((await service.render(request)).body)["items"]
    (item,) = [item for item in items if "Genalo" in item["title"] and "retire" in str(item)]
    return str(item["content_html"])


def _history_list(content: str) -> str:
    return content.split("<ul>")[-1]


async def _confirm_in_french(log: EventLog) -> None:
    await log.append_events(
        [
            FRENCH_SOURCE,
            ClaimConfirmed(
                claim=GENALO_RETIREMENT, source=FRENCH_SOURCE.source, quote=FRENCH_WORDS
            ),
        ],
        actor="test",
    )


async def test_a_confirming_source_s_words_in_the_history_are_marked_with_its_language(
    seeded_log: EventLog,
) -> None:
    await _confirm_in_french(seeded_log)
    history = _history_list(await _genalo_content(seeded_log, "en"))
    assert f'<span lang="fr" dir="auto">{FRENCH_WORDS}</span>' in history
    # as the report's quote is, even in the feed's own language: a reader may show the
    # content away from the feed that says which language it is in
    history = _history_list(await _genalo_content(seeded_log, "fr"))
    assert f'<span lang="fr" dir="auto">{FRENCH_WORDS}</span>' in history


async def test_a_corrected_quote_is_marked_with_its_source_s_language(
    seeded_log: EventLog,
) -> None:
    await correct(seeded_log, GENALO_RETIREMENT, quote=CORRECTED_WORDS)
    history = _history_list(await _genalo_content(seeded_log, "de"))
    # the seeds' source writes in English; both the quote before and after are its words
    marked = re.findall(r'<span lang="en" dir="auto">([^<]*)</span>', history)
    assert CORRECTED_WORDS in marked
    assert any(words.startswith("The changes include the retirement") for words in marked)


async def test_a_page_marks_a_corrected_quote_only_where_the_page_s_language_differs(
    seeded_log: EventLog,
) -> None:
    await correct(seeded_log, GENALO_RETIREMENT, quote=CORRECTED_WORDS)
    service = await project(seeded_log)
    (latest,) = [
        doc for doc in await service.reader.recent("all", 50) if doc["claim"] == GENALO_RETIREMENT
    ]
    # the history's sentences come after the correction's reason
    french = recent_change(latest, language("fr")).summary_html.rsplit("misread.", 1)[1]
    english = recent_change(latest, language("en")).summary_html.rsplit("misread.", 1)[1]
    assert f'<span lang="en" dir="auto">{CORRECTED_WORDS}</span>' in french
    assert f'<span dir="auto">{CORRECTED_WORDS}</span>' in english
