"""What a correction's history says changed, read in every language: a field emptied says so
in words that fit any field, quoted words that end a sentence get no second full stop, and
each field's name keeps its grammatical case."""

from __future__ import annotations

import json

import pytest

from leaderlog.feeds import LANGUAGES, FeedRequest, FeedService, Scope, language
from leaderlog.log import EventLog
from tests.feeds.logs import BASE, GENALO_RETIREMENT, correct, html_words, project

# The retirement's cause emptied: "none" agrees with no field's gender or case, and each
# language says it in words that fit them all (the German "Grund" is masculine, "Datum" and
# "Zitat" neuter; the Spanish, French, Italian and Portuguese cause and quote feminine).
_CAUSE_EMPTIED = {
    "en": "Changed cause: retirement \u2192 none.",
    "de": "Ge\u00e4ndert \u2013 Grund: Ruhestand \u2192 keine Angabe.",
    "es": "Cambio de causa: jubilaci\u00f3n \u2192 sin indicar.",
    "fr": "Modification \u2014 cause\u00a0: d\u00e9part \u00e0 la retraite \u2192 n\u00e9ant.",
    "it": "Modificato \u2013 causa: pensionamento \u2192 assente.",
    "pt": "Altera\u00e7\u00e3o de causa: aposentadoria \u2192 sem informa\u00e7\u00e3o.",
    "ru": "\u0418\u0437\u043c\u0435\u043d\u0435\u043d\u043e \u2014 "
    "\u043f\u0440\u0438\u0447\u0438\u043d\u0430: "
    "\u0432\u044b\u0445\u043e\u0434 \u043d\u0430 \u043f\u0435\u043d\u0441\u0438\u044e \u2192 "
    "\u043d\u0435\u0442.",
    "hi": "\u092c\u0926\u0932\u093e\u0935 \u2014 \u0915\u093e\u0930\u0923: "
    "\u0938\u0947\u0935\u093e\u0928\u093f\u0935\u0943\u0924\u094d\u0924\u093f \u2192 "
    "\u0915\u094b\u0908 \u0928\u0939\u0940\u0902\u0964",
    "ja": "\u7406\u7531\u3092\u5909\u66f4\uff1a\u9000\u8077 \u2192 \u306a\u3057\u3002",
    "zh-Hans": "\u5df2\u66f4\u6539\u539f\u56e0\uff1a\u9000\u4f11 \u2192 \u65e0\u3002",
}
_NEW_QUOTE = "He retires."


async def _summaries(service: FeedService, tag: str) -> tuple[str, str, str]:
    """The corrected claim's summary and content in the feed, and its summary on a page."""
    request = FeedRequest(Scope.parse("person:kenneth-genalo"), "json", tag, BASE, None)
    (item,) = [
        item
        for item in json.loads((await service.render(request)).body)["items"]
        if _NEW_QUOTE in item["summary"]
    ]
    (change,) = [
        change
        for change in await service.recent(50, tag, "person:kenneth-genalo")
        if _NEW_QUOTE in change.summary_html
    ]
    return item["summary"], item["content_html"], change.summary_html


@pytest.mark.parametrize("tag", LANGUAGES)
async def test_a_field_a_correction_empties_is_said_to_have_no_value_in_words_that_fit_it(
    seeded_log: EventLog, tag: str
) -> None:
    # given the retirement's cause corrected away
    await correct(seeded_log, GENALO_RETIREMENT, cause=None, quote=_NEW_QUOTE)
    service = await project(seeded_log)
    summary, content, page = await _summaries(service, tag)
    # then the history says the cause has none, in words that agree with it
    assert _CAUSE_EMPTIED[tag] in summary
    assert _CAUSE_EMPTIED[tag] in html_words(content)
    assert _CAUSE_EMPTIED[tag] in html_words(page)


@pytest.mark.parametrize("tag", LANGUAGES)
async def test_quoted_words_ending_their_sentence_end_the_change_line_without_a_second_stop(
    seeded_log: EventLog, tag: str
) -> None:
    # given a correction whose new quote ends with its own full stop
    await correct(seeded_log, GENALO_RETIREMENT, cause=None, quote=_NEW_QUOTE)
    service = await project(seeded_log)
    summary, content, page = await _summaries(service, tag)
    quoted = language(tag)._("\u201c{quote}\u201d", quote=_NEW_QUOTE)
    # then the line ends with the quotation marks, as the report's own quote does
    assert summary.endswith(f"\u2192 {quoted}")
    assert content.endswith("</li></ul>")
    assert html_words(content).endswith(f"\u2192 {quoted}")
    assert html_words(page).endswith(f"\u2192 {quoted}")


async def test_hindi_names_the_changed_field_in_the_case_its_words_take(
    seeded_log: EventLog,
) -> None:
    # given a correction of the modality, whose Hindi name is "कथन का प्रकार": before a
    # postposition ("में") it would have to become "कथन के प्रकार"
    await correct(seeded_log, GENALO_RETIREMENT, modality="occurred", quote=_NEW_QUOTE)
    service = await project(seeded_log)
    summary, _, _ = await _summaries(service, "hi")
    assert (
        "\u092c\u0926\u0932\u093e\u0935 \u2014 \u0915\u0925\u0928 \u0915\u093e "
        "\u092a\u094d\u0930\u0915\u093e\u0930: \u0905\u092a\u0947\u0915\u094d\u0937\u093f\u0924 "
        "\u2192 \u0918\u091f\u093f\u0924\u0964"
    ) in summary
    assert "\u092a\u094d\u0930\u0915\u093e\u0930 \u092e\u0947\u0902" not in summary
