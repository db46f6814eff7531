"""What an entry says, sentence by sentence, in every format and language: quotations end
their sentence, a confirmation's quoted words are shown, and each catalog keeps its
language's typography."""

from __future__ import annotations

import json

import feedparser
import pytest
from babel.messages.pofile import read_po

from leaderlog.events import ClaimConfirmed
from leaderlog.feeds import LANGUAGES
from leaderlog.feeds._i18n import catalog_path
from leaderlog.log import EventLog
from tests.feeds.logs import FOX, GENALO_RETIREMENT, html_words, project, rendered

# The end of the seeds' disputed caption quote, and the first words of the dispute after it
# (dated by its source alone, which the seeds date only "about May 2025").
_CAPTION_END = "acting executive associate director"
_DISPUTED = {
    "en": "\u201d. Disputed: ",
    "es": "\u00bb. Cuestionado: ",
    "fr": "\u00a0\u00bb. Contest\u00e9\u00a0: ",
    "de": "\u201c. Bestritten: ",
    "it": "\u00bb. Contestato: ",
    "pt": "\u201d. Contestado: ",
    "ru": "\u00bb. \u041e\u0441\u043f\u043e\u0440\u0435\u043d\u043e: ",
    "zh-Hans": "\u201d\u3002",
    "hi": "\u201d\u0964 ",
    "ja": "\u300d\u3002",
}
_CONFIRMING_WORDS = "ICE confirmed Genalo retires at the end of June"


def _items(body: bytes) -> list[dict[str, str]]:
    items: list[dict[str, str]] = json.loads(body)["items"]
    return items


@pytest.mark.parametrize("tag", LANGUAGES)
async def test_a_quotation_ends_its_sentence_before_the_entry_s_history(
    seeded_log: EventLog, tag: str
) -> None:
    # given the seeds, whose caption quote is disputed: the dispute follows the quotation
    service = await project(seeded_log)
    (item,) = [
        item
        for item in _items(await rendered(service, "person:robert-hammer", "json", tag))
        if _CAPTION_END in item["summary"]
    ]
    # then the quotation ends with the language's full stop, not running into the dispute
    assert _CAPTION_END + _DISPUTED[tag] in item["summary"]
    # and so does the page's list of recent changes, which says it in HTML
    (change,) = [
        change
        for change in await service.recent(50, tag, "person:robert-hammer")
        if _CAPTION_END in change.summary_html
    ]
    assert f"{_CAPTION_END}</span>{_DISPUTED[tag]}" in change.summary_html


async def test_quoted_words_that_end_a_sentence_get_no_second_full_stop(
    seeded_log: EventLog,
) -> None:
    # given the seeds, whose body quote about Hammer ends with its own full stop
    service = await project(seeded_log)
    for tag in ("en", "ja"):
        for item in _items(await rendered(service, "all", "json", tag)):
            summary = item["summary"]
            # then no quotation gets a second one after its closing mark
            assert ".\u201d." not in summary and "\u3002\u300d\u3002" not in summary
            assert ".\u300d\u3002" not in summary


async def test_a_confirmation_shows_the_words_it_quotes_in_every_format(
    seeded_log: EventLog,
) -> None:
    # given a claim confirmed by a source that quotes its own words
    await seeded_log.append_events(
        [ClaimConfirmed(claim=GENALO_RETIREMENT, source=FOX, quote=_CONFIRMING_WORDS)],
        actor="test",
    )
    service = await project(seeded_log)
    # then every format shows them, in the entry's history after the confirmation
    confirmed = f"by Fox News (about May 2025). Quote: \u201c{_CONFIRMING_WORDS}\u201d."
    (item,) = [
        item
        for item in _items(await rendered(service, "person:kenneth-genalo", "json"))
        if item["title"].startswith("Confirmed")
    ]
    assert confirmed in item["summary"] and confirmed in item["content_text"]
    assert confirmed in html_words(item["content_html"])
    assert (
        f'\u201c<span lang="en" dir="auto">{_CONFIRMING_WORDS}</span>\u201d'
        in (item["content_html"])
    )
    for fmt in ("atom", "rss"):
        parsed = feedparser.parse(await rendered(service, "person:kenneth-genalo", fmt))
        assert not parsed.bozo
        (entry,) = [e for e in parsed.entries if e.title.startswith("Confirmed")]
        assert confirmed in entry.summary and confirmed in html_words(entry.content[0].value)
    # and in each language, in its own quotation marks
    (french,) = [
        item
        for item in _items(await rendered(service, "person:kenneth-genalo", "json", "fr"))
        if item["title"].startswith("Confirm\u00e9")
    ]
    assert f"Citation\u00a0: \u00ab\u00a0{_CONFIRMING_WORDS}\u00a0\u00bb." in french["summary"]
    # as does the page's list of recent changes
    (change,) = [
        change
        for change in await service.recent(50, "en", "person:kenneth-genalo")
        if _CONFIRMING_WORDS in change.summary_html
    ]
    assert f'Quote: \u201c<span dir="auto">{_CONFIRMING_WORDS}</span>\u201d.' in (
        change.summary_html
    )


def _translations(tag: str) -> dict[str, str]:
    with catalog_path(tag).open("rb") as handle:
        return {str(m.id): str(m.string) for m in read_po(handle) if m.id}


def test_french_punctuation_is_kept_on_the_line_of_the_word_before_it() -> None:
    # French sets a space before ":", ";", "!", "?" and "»" and after "«": a no-break one,
    # so that a line never starts with the mark (as every other French message has it)
    for message, translated in _translations("fr").items():
        for mark in (" :", " ;", " !", " ?", " \u00bb", "\u00ab "):
            assert mark not in translated, (message, translated)


def test_italian_apostrophes_are_typographic_as_in_every_other_italian_message() -> None:
    for message, translated in _translations("it").items():
        assert "'" not in translated, (message, translated)
