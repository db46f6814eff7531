"""French drops the vowel of "de" before a word that starts with one, an apostrophe in its
place ("Nomination d'Isabelle Ortiz au poste d'Agent spécial"), never "de Isabelle"."""

from __future__ import annotations

import html
import json
import re

from leaderlog.events import Attribution, ClaimReported, PersonRegistered
from leaderlog.feeds import FeedRequest, FeedService, Scope
from leaderlog.log import EventLog
from tests.feeds.logs import BASE, FOX, project

# The seeds' French label of the post ice-hsi-dsac.
_AGENT = "Agent sp\u00e9cial adjoint responsable (HSI)"


async def _items(service: FeedService, scope: str) -> list[dict[str, str]]:
    request = FeedRequest(Scope.parse(scope), "json", "fr", BASE, None)
    items: list[dict[str, str]] = json.loads((await service.render(request)).body)["items"]
    return items


def _words(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]*>", "", markup))


async def test_de_is_elided_before_a_name_a_title_or_a_party_that_starts_with_a_vowel(
    seeded_log: EventLog,
) -> None:
    # given Isabelle Ortiz appointed to a post whose French label starts with a vowel, on
    # the word of ICE and DHS
    await seeded_log.append_events(
        [
            PersonRegistered(person="isabelle-ortiz", name="Isabelle Ortiz"),
            ClaimReported(
                claim="ortiz-dsac",
                source=FOX,
                kind="appointment",
                person="isabelle-ortiz",
                post="ice-hsi-dsac",
                capacity="acting",
                modality="occurred",
                attribution=Attribution(kind="official", parties=["ICE", "DHS"]),
            ),
        ],
        actor="test",
    )
    service = await project(seeded_log)
    (item,) = await _items(service, "person:isabelle-ortiz")
    said = f"Nomination d\u2019Isabelle Ortiz au poste d\u2019{_AGENT} (par int\u00e9rim)"
    # then the title, the summary and the content elide it
    assert item["title"] == f"Rapport\u00e9\u00a0: {said}"
    assert item["summary"].startswith(f"{said}.")
    assert "Attribution\u00a0: d\u00e9claration officielle d\u2019ICE et DHS." in item["summary"]
    assert said in _words(item["content_html"])
    assert "d\u00e9claration officielle d\u2019ICE et DHS." in _words(item["content_html"])
    # and so does the page's list of recent changes, which isolates each name in HTML
    (change,) = await service.recent(5, "fr", "person:isabelle-ortiz")
    assert _words(change.title_html) == f"Rapport\u00e9\u00a0: {said}"
    assert 'd\u2019<span dir="auto">Isabelle Ortiz</span>' in change.summary_html


async def test_de_stays_whole_before_a_consonant_and_an_h(seeded_log: EventLog) -> None:
    # given the seeds: Derek Gordon holds the post, Robert Hammer is expected to leave his
    service = await project(seeded_log)
    titles = [item["title"] for item in await _items(service, "all")]
    # then "de" is elided before the post's label alone
    assert f"Rapport\u00e9\u00a0: Derek Gordon occupe le poste d\u2019{_AGENT}" in titles
    assert any(title.startswith("Attendu\u00a0: D\u00e9part de Robert Hammer") for title in titles)
    assert not any("d\u2019Hammer" in title or "de Agent" in title for title in titles)
