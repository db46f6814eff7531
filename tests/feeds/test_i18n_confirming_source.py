"""A confirmation names the source that confirmed the claim as its source. Russian said
"Подтверждено {date}: {source}.", which read a source's name and title as what was
confirmed: "...: ICE: ICE announces leadership changes (...)"."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from leaderlog.feeds import LANGUAGES, FeedRequest, FeedService, Scope, language
from leaderlog.log import EventLog
from tests.feeds.logs import BASE, GENALO_RETIREMENT, confirm, html_words, project

_SOURCE = "ICE: ICE announces leadership changes (2 июня 2025\u202f\u0433.)"


def test_a_russian_confirmation_introduces_its_source_as_the_source() -> None:
    # given a confirmation by a source whose title ends with its date
    russian = language("ru")
    # when it is said in Russian
    said = russian._(
        "Confirmed on {date} by {source}.",
        date=russian.date(dt.date(2026, 12, 6)),
        source=_SOURCE,
    )
    # then the source is introduced as the source
    assert said == f"Подтверждено 6 декабря 2026\u202f\u0433., источник: {_SOURCE}."


@pytest.mark.parametrize("tag", LANGUAGES)
def test_no_language_puts_the_confirming_source_after_a_bare_colon(tag: str) -> None:
    # when a confirmation by a source is said
    said = language(tag)._("Confirmed on {date} by {source}.", date="D", source="S")
    # then words say who confirmed it: the date and the source are not set apart by a colon
    # alone, as a label is from what it labels
    assert "D: S" not in said and "D\uff1aS" not in said


async def _confirmed(service: FeedService, tag: str) -> tuple[str, str, str]:
    """The confirmed claim's summary and content in the feed, and its summary on a page."""
    request = FeedRequest(Scope.parse("person:kenneth-genalo"), "json", tag, BASE, None)
    status = language(tag)._("Confirmed")
    (item,) = [
        item
        for item in json.loads((await service.render(request)).body)["items"]
        if item["title"].startswith(status)
    ]
    (change,) = [
        change
        for change in await service.recent(50, tag, "person:kenneth-genalo")
        if html_words(change.title_html).startswith(status)
    ]
    return item["summary"], item["content_html"], change.summary_html


async def test_a_russian_reader_reads_who_confirmed_the_claim(seeded_log: EventLog) -> None:
    # given the retirement confirmed by Fox News
    await confirm(seeded_log, GENALO_RETIREMENT)
    service = await project(seeded_log)
    # when a reader reads it in Russian
    summary, content, page = await _confirmed(service, "ru")
    # then the summary, the content's history and the page's recent change each name Fox
    # News as the source of the confirmation
    confirmed_by = ", источник: Fox News (около мая 2025\u202f\u0433.)."
    assert confirmed_by in summary
    assert "\u202f\u0433.: Fox News" not in summary
    assert confirmed_by in html_words(content)
    assert confirmed_by in html_words(page)
