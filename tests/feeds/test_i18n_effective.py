"""When a change takes effect, in Russian: said without a tense the day may contradict, and
the sentence closed after the brackets whatever the date in them ends with."""

from __future__ import annotations

import json

from leaderlog.events import Attribution, ClaimReported, FuzzyDate, PersonRegistered
from leaderlog.feeds import FeedRequest, Scope, language
from leaderlog.log import EventLog
from tests.feeds.logs import BASE, FOX, project


async def test_russian_says_the_effective_day_without_a_tense(seeded_log: EventLog) -> None:
    # given an incumbency that took effect before 2008: "Вступает в силу" (takes effect)
    # would put it in the present
    await seeded_log.append_events(
        [
            PersonRegistered(person="sam-named", name="Sam Named"),
            ClaimReported(
                claim="sam-dsac",
                source=FOX,
                kind="incumbency",
                person="sam-named",
                post="ice-hsi-dsac",
                capacity="permanent",
                modality="occurred",
                effective=FuzzyDate(date="2008", qualifier="before"),
                attribution=Attribution(kind="outlet"),
            ),
        ],
        actor="test",
    )
    service = await project(seeded_log)
    request = FeedRequest(Scope.parse("person:sam-named"), "json", "ru", BASE, None)
    (item,) = json.loads((await service.render(request)).body)["items"]
    # then it is "the date of taking effect", as the field is named in corrections
    assert (
        "\u0414\u0430\u0442\u0430 \u0432\u0441\u0442\u0443\u043f\u043b\u0435\u043d\u0438\u044f "
        "\u0432 \u0441\u0438\u043b\u0443: \u0434\u043e 2008\u202f\u0433."
    ) in item["summary"]
    assert "\u0412\u0441\u0442\u0443\u043f\u0430\u0435\u0442" not in item["summary"]


def test_a_sentence_ending_with_a_date_in_brackets_keeps_its_stop() -> None:
    # the date's own point, within the brackets, ends the abbreviation for "year", not the
    # sentence (quoted words that end with a stop do end it)
    source = "Fox News (\u043e\u043a\u043e\u043b\u043e \u043c\u0430\u044f 2025\u202f\u0433.)"
    said = language("ru")._("Source: {source}.", source=source)
    assert said == f"\u0418\u0441\u0442\u043e\u0447\u043d\u0438\u043a: {source}."
    quoted = language("ru")._("Source: {source}.", source="\u00abAll change.\u00bb")
    assert quoted == "\u0418\u0441\u0442\u043e\u0447\u043d\u0438\u043a: \u00abAll change.\u00bb"
