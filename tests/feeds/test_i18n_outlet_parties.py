"""An attribution to the outlet's own reporting names the outlets it gives, as the other kinds
of attribution name their parties: "Attribution: the outlet's own reporting (Axios).", where
the parties were dropped, though the claim command and the API keep them."""

from __future__ import annotations

import json

import pytest

from leaderlog.events import Attribution, ClaimReported, PersonRegistered
from leaderlog.feeds import LANGUAGES, FeedRequest, Scope, language
from leaderlog.feeds._text import _attribution
from leaderlog.log import EventLog
from tests.feeds.logs import BASE, FOX, html_words, project

ONE = {
    "en": "the outlet's own reporting (Axios)",
    "de": "eigene Berichterstattung des Mediums (Axios)",
    "es": "información propia del medio (Axios)",
    "fr": "informations propres au média (Axios)",
    "it": "resoconto della testata stessa (Axios)",
    "pt": "reportagem do próprio veículo (Axios)",
    "ru": "собственная информация издания (Axios)",
    "zh-Hans": "该媒体自身的报道\uff08Axios\uff09",
    "hi": "प्रकाशन की अपनी रिपोर्टिंग (Axios)",
    "ja": "媒体自身の報道\uff08Axios\uff09",
}
# Japanese says one outlet or several alike.
SEVERAL = {
    "en": "the outlets' own reporting (Axios and Politico)",
    "de": "eigene Berichterstattung der Medien (Axios und Politico)",
    "es": "información propia de los medios (Axios y Politico)",
    "fr": "informations propres aux médias (Axios et Politico)",
    "it": "resoconto delle testate stesse (Axios e Politico)",
    "pt": "reportagem dos próprios veículos (Axios e Politico)",
    "ru": "собственная информация изданий (Axios и Politico)",
    "zh-Hans": "这些媒体自身的报道\uff08Axios和Politico\uff09",
    "hi": "प्रकाशनों की अपनी रिपोर्टिंग (Axios और Politico)",
}


@pytest.mark.parametrize("tag", LANGUAGES)
def test_the_outlet_s_own_reporting_names_the_outlet(tag: str) -> None:
    said = _attribution({"kind": "outlet", "parties": ["Axios"]}, language(tag))
    assert said == ONE[tag]


@pytest.mark.parametrize("tag", sorted(SEVERAL))
def test_several_outlets_own_reporting_is_said_in_the_plural(tag: str) -> None:
    said = _attribution({"kind": "outlet", "parties": ["Axios", "Politico"]}, language(tag))
    assert said == SEVERAL[tag]


def test_the_outlet_s_own_reporting_without_parties_is_said_as_before() -> None:
    for value in ({"kind": "outlet"}, {"kind": "outlet", "parties": []}):
        assert _attribution(value, language("en")) == "the outlet's own reporting"


async def test_a_reader_reads_which_outlet_reported_it(seeded_log: EventLog) -> None:
    # given a claim reported on the word of Axios's own reporting
    await seeded_log.append_events(
        [
            PersonRegistered(person="ana-ruiz", name="Ana Ruiz"),
            ClaimReported(
                claim="ruiz-ead",
                source=FOX,
                kind="incumbency",
                person="ana-ruiz",
                post="ice-hsi-ead",
                capacity="acting",
                modality="occurred",
                attribution=Attribution(kind="outlet", parties=("Axios",)),
            ),
        ],
        actor="test",
    )
    service = await project(seeded_log)
    # when a reader reads it in the feed and on a page
    request = FeedRequest(Scope.parse("person:ana-ruiz"), "json", "en", BASE, None)
    (item,) = json.loads((await service.render(request)).body)["items"]
    (change,) = await service.recent(5, "en", "person:ana-ruiz")
    # then the summary, the content and the page name Axios
    said = "Attribution: the outlet's own reporting (Axios)."
    assert said in item["summary"]
    assert said in html_words(item["content_html"])
    assert said in html_words(change.summary_html)
