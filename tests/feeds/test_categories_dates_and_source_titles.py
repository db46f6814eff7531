"""What a feed says of a change in every format: its categories' codes and labels, when it
was last modified, and the title of its link to the source."""

from __future__ import annotations

import datetime as dt
import json

import feedparser
import pytest

from leaderlog.events import Attribution, ClaimReported, PersonRegistered, SourceRegistered
from leaderlog.log import EventLog
from tests.feeds.logs import add_claims, confirm, project, rendered, shown


async def test_categories_keep_their_code_as_term_and_are_labelled_in_the_feed_s_language(
    seeded_log: EventLog,
) -> None:
    # given the seeds, whose claims are appointments, departures...
    service = await project(seeded_log)
    # when the feed of everything is read in French and in English
    by_language: dict[str, set[tuple[str, str]]] = {}
    for lang in ("fr", "en"):
        parsed = feedparser.parse(await rendered(service, "all", "atom", lang))
        by_language[lang] = {(tag.term, tag.label) for e in parsed.entries for tag in e.tags}
    # then each category's term is the same code in both, and only its label is translated
    terms = {term for term, _ in by_language["en"]}
    assert {term for term, _ in by_language["fr"]} == terms
    assert {"appointment", "departure", "reported"} <= terms
    assert ("appointment", "Appointment") in by_language["en"]
    assert ("appointment", "Appointment") not in by_language["fr"]
    french = dict(by_language["fr"])
    assert french["appointment"] != "appointment"
    # and JSON Feed tags are the labels a reader shows
    document = json.loads(await rendered(service, "all", "json", "fr"))
    tags = {tag for item in document["items"] for tag in item["tags"]}
    assert french["appointment"] in tags and "appointment" not in tags


async def test_a_json_feed_item_s_date_modified_is_its_latest_change_as_in_atom(
    seeded_log: EventLog,
) -> None:
    # given a claim confirmed after it was reported
    await add_claims(seeded_log, 0, 1)
    await confirm(seeded_log, "gen-0")
    service = await project(seeded_log)
    # when its person's feed is read as JSON Feed and as Atom
    (item,) = json.loads(await rendered(service, "person:person-0", "json"))["items"]
    (entry,) = feedparser.parse(await rendered(service, "person:person-0", "atom")).entries
    # then the item is modified when the entry is updated, after it was published
    modified = dt.datetime.fromisoformat(item["date_modified"].replace("Z", "+00:00"))
    published = dt.datetime.fromisoformat(item["date_published"].replace("Z", "+00:00"))
    assert modified > published
    assert modified.timetuple()[:6] == entry.updated_parsed[:6]
    assert published.timetuple()[:6] == entry.published_parsed[:6]


@pytest.mark.parametrize(
    ("publisher", "title"),
    [
        ("Smith & Wesson Daily", "Smith & Wesson Daily"),
        ("Tom <b>Tag</b> News", None),
        ("AT&#38;T Wire", None),
    ],
)
async def test_a_source_link_is_titled_by_its_publisher_unless_the_name_reads_as_markup(
    seeded_log: EventLog, publisher: str, title: str | None
) -> None:
    # given a claim reported by a source of that publisher
    await seeded_log.append_events(
        [
            SourceRegistered(source="src-pub", url="https://example.org/pub", publisher=publisher),
            PersonRegistered(person="pub", name="Ann Pub"),
            ClaimReported(
                claim="pub",
                source="src-pub",
                kind="incumbency",
                person="pub",
                post="ice-hsi-ead",
                capacity="unspecified",
                modality="occurred",
                attribution=Attribution(kind="outlet"),
            ),
        ],
        actor="test",
    )
    service = await project(seeded_log)
    # when the person's feed is read as Atom
    atom = await rendered(service, "person:pub", "atom")
    (entry,) = feedparser.parse(atom).entries
    # then the link to the source is titled with the publisher's name only where no reader
    # or validator could take that name, in an attribute that cannot say it is HTML, for markup
    (alternate,) = [link for link in entry.links if link.rel == "alternate"]
    assert alternate.href == "https://example.org/pub"
    assert alternate.get("title") == title
    # and the summary names the publisher either way
    assert publisher in shown(entry.summary_detail)
