"""Chinese and Japanese set sentences one after another with no space after their own full
stops; a sentence that ends in Latin text (a writer's reason in English, say) is set apart
from the next by a space, where the next ran into it ("…without saying acting.矛盾する主張…")."""

from __future__ import annotations

import json

import pytest

from leaderlog.events import ClaimCorrected, ClaimDisputed
from leaderlog.feeds import FeedRequest, FeedService, Scope, language
from leaderlog.feeds._text import isolated_text
from leaderlog.log import EventLog
from tests.feeds.logs import BASE, GENALO_RETIREMENT, HAMMER_BODY, html_words, project

# The seeds' dispute of Hammer's acting capacity ends with this, in English.
_SEEDED_REASON_END = "without saying acting."
_CJK = ["ja", "zh-Hans"]


async def _texts(service: FeedService, scope: str, tag: str, words: str) -> list[str]:
    """What a reader reads of the claim whose text holds ``words``: the JSON Feed item's
    summary and content_text, its content's HTML as text, and the page's recent change."""
    request = FeedRequest(Scope.parse(scope), "json", tag, BASE, None, explicit_lang=True)
    (item,) = [
        item
        for item in json.loads((await service.render(request)).body)["items"]
        if words in item["summary"]
    ]
    (change,) = [
        change
        for change in await service.recent(50, tag, scope)
        if words in html_words(change.summary_html)
    ]
    return [
        item["summary"],
        item["content_text"],
        html_words(item["content_html"]),
        html_words(change.summary_html),
    ]


def _opening(tag: str, message: str, **values: str) -> str:
    """How ``message`` opens in ``tag``: its words before its first value."""
    return language(tag)._(message, **{name: "\x00" for name in values}).partition("\x00")[0]


@pytest.mark.parametrize("tag", _CJK)
async def test_the_sentence_after_an_english_reason_does_not_run_into_it(
    seeded_log: EventLog, tag: str
) -> None:
    # given the seeds: Hammer's acting capacity disputed, for a reason given in English
    service = await project(seeded_log)
    # when a reader reads the dispute in Chinese or Japanese
    texts = await _texts(service, "person:robert-hammer", tag, _SEEDED_REASON_END)
    # then the claims it conflicts with are a sentence of their own, after a space
    conflicts = _opening(tag, "Conflicts with: {claims}.", claims="")
    for text in texts:
        assert f"{_SEEDED_REASON_END} {conflicts}" in text, text


@pytest.mark.parametrize("tag", _CJK)
async def test_what_a_correction_changed_is_set_apart_from_its_english_reason(
    seeded_log: EventLog, tag: str
) -> None:
    # given Hammer's capacity corrected, for a reason given in English
    await seeded_log.append_events(
        [
            ClaimCorrected(
                claim=HAMMER_BODY,
                changes={"capacity": "permanent"},
                reason="The memo says permanent, not acting.",
            )
        ],
        actor="test",
    )
    service = await project(seeded_log)
    # when a reader reads the correction in Chinese or Japanese
    texts = await _texts(service, "person:robert-hammer", tag, "not acting.")
    # then what it changed is a sentence of its own, after a space
    changed = _opening(
        tag, "Changed {field}: {before} \u2192 {after}.", field="", before="", after=""
    )
    for text in texts:
        assert f"not acting. {changed}" in text, text


@pytest.mark.parametrize("tag", _CJK)
async def test_sentences_ending_in_their_own_full_stop_are_not_spaced(
    seeded_log: EventLog, tag: str
) -> None:
    # given a dispute whose reason is written in the reader's language, with its full stop,
    # and a correction whose English reason has none
    reason = {"ja": "記事の本文と矛盾する。", "zh-Hans": "与正文矛盾。"}[tag]
    await seeded_log.append_events(
        [
            ClaimDisputed(claim=GENALO_RETIREMENT, reason=reason, conflicts_with=[HAMMER_BODY]),
            ClaimCorrected(
                claim=HAMMER_BODY, changes={"capacity": "permanent"}, reason="He resigned"
            ),
        ],
        actor="test",
    )
    service = await project(seeded_log)
    # when a reader reads them in Chinese or Japanese
    disputed = await _texts(service, "person:kenneth-genalo", tag, reason)
    corrected = await _texts(service, "person:robert-hammer", tag, "He resigned")
    # then the sentences follow their full stops with no space, as before
    conflicts = _opening(tag, "Conflicts with: {claims}.", claims="")
    changed = _opening(
        tag, "Changed {field}: {before} \u2192 {after}.", field="", before="", after=""
    )
    for text in disputed:
        assert f"{reason}{conflicts}" in text, text
        assert "\u3002 " not in text, text
    for text in corrected:
        assert f"He resigned\u3002{changed}" in text, text


@pytest.mark.parametrize("tag", ["en", "fr", "ru", "hi"])
async def test_other_languages_still_space_sentences_once(seeded_log: EventLog, tag: str) -> None:
    # given the seeds' dispute, for a reason given in English
    service = await project(seeded_log)
    # when a reader reads it in a language that spaces its sentences
    texts = await _texts(service, "person:robert-hammer", tag, _SEEDED_REASON_END)
    # then one space sets the next sentence apart, as before
    conflicts = _opening(tag, "Conflicts with: {claims}.", claims="")
    for text in texts:
        assert f"{_SEEDED_REASON_END} {conflicts}" in text, text


_ARABIC_ENDED = "\u0627\u0644\u0645\u0635\u062f\u0631 \u0645\u062e\u0637\u0626."


@pytest.mark.parametrize(
    ("sentences", "markup", "joined"),
    [
        # Latin text, its letters or digits or its punctuation, then the next sentence
        (["He resigned.", "次。"], False, "He resigned. 次。"),
        (["Seen in 2025", "次。"], False, "Seen in 2025 次。"),
        (["(see above)", "次。"], False, "(see above) 次。"),
        # cut short with an ellipsis
        (["He resigned and\u2026", "次。"], False, "He resigned and\u2026 次。"),
        # a right-to-left reason ended in its own script, isolated in plain text
        ([isolated_text(_ARABIC_ENDED), "次。"], False, f"{isolated_text(_ARABIC_ENDED)} 次。"),
        # in HTML, what the markup shows
        (
            ['<span dir="auto">He resigned.</span>', "次。"],
            True,
            '<span dir="auto">He resigned.</span> 次。',
        ),
        (["Tom &amp; Jerry", "次。"], True, "Tom &amp; Jerry 次。"),
        # sentences ending in the language's own punctuation, quotation marks included
        (["原因。", "次。"], False, "原因。次。"),
        (["引用\uff1a「He resigned.」", "次。"], False, "引用\uff1a「He resigned.」次。"),
        (["中文\u2026", "次。"], False, "中文\u2026次。"),
        (['<span dir="auto">原因。</span>', "次。"], True, '<span dir="auto">原因。</span>次。'),
    ],
)
def test_japanese_spaces_a_sentence_only_after_latin_text(
    sentences: list[str], markup: bool, joined: str
) -> None:
    assert language("ja").sentences(sentences, markup=markup) == joined
