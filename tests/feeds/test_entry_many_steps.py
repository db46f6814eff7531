"""A claim of very many steps (confirmed from article after article, corrected over and over)
keeps a feed entry of bounded size: its doc holds the latest steps and counts the earlier
ones, and its history tells the latest after a line counting the rest, with a link to the
claim's answer, which has them all. Each stored version of the entry once held every step so
far: 1,000 steps took 212 MB of docs, and every feed held an entry of every step."""

from __future__ import annotations

from leaderlog._json import loads
from leaderlog.events import ClaimConfirmed, ClaimCorrected, Event, SourceRegistered
from leaderlog.log import EventLog
from leaderlog.projections.feed_entries import VERSIONS
from tests.feeds.logs import BASE, GENALO_RETIREMENT, project
from tests.feeds.test_date_words_language import _genalo_item, french_dated_confirmation

STEPS = 60


def _steps(count: int, first: int = 1) -> list[Event]:
    """``count`` steps of Genalo's retirement, each from an article of its own: confirmations
    and corrections in turn."""
    events: list[Event] = []
    for number in range(first, first + count):
        source = f"wire-{number}"
        events.append(
            SourceRegistered(
                source=source,
                url=f"https://wire.example/{number}",
                publisher="Wire",
                title=f"Article {number}",
                language="en",
            )
        )
        if number % 2:
            events.append(ClaimConfirmed(claim=GENALO_RETIREMENT, source=source))
        else:
            capacity = "interim" if number % 4 else "acting"
            events.append(
                ClaimCorrected(
                    claim=GENALO_RETIREMENT,
                    changes={"capacity": capacity},
                    reason=f"Article {number} says {capacity}.",
                    source=source,
                )
            )
    return events


async def test_each_stored_version_of_a_claim_of_many_steps_keeps_its_latest_steps(
    seeded_log: EventLog,
) -> None:
    # given Genalo's retirement, confirmed and corrected 60 times, each from a new article
    await seeded_log.append_events(_steps(STEPS), actor="test")
    # when the feed entries are projected
    await project(seeded_log)
    # then no stored version holds more than the latest 10 steps, so the entry's versions
    # take storage in proportion to its steps, not to their square
    rows = await seeded_log.store.query(
        f"SELECT doc FROM {VERSIONS} WHERE claim = ? ORDER BY position", (GENALO_RETIREMENT,)
    )
    docs = [loads(row[0]) for row in rows]
    assert len(docs) == STEPS + 1
    kept = [[s for s in doc["events"] if s["type"] != "claim.reported"] for doc in docs]
    assert max(len(steps) for steps in kept) == 10
    assert max(len(row[0]) for row in rows) < 2 * len(rows[11][0])
    # and the latest counts the 50 steps before them
    assert docs[-1]["earlier"] == {"steps": 50}
    assert docs[-1]["events"][-1]["source"]["id"] == f"wire-{STEPS}"


async def test_a_feed_entry_of_many_steps_tells_the_latest_and_counts_the_rest(
    seeded_log: EventLog,
) -> None:
    # given Genalo's retirement, confirmed and corrected 60 times
    await seeded_log.append_events(_steps(STEPS), actor="test")
    # when its feed entry is read
    item = await _genalo_item(seeded_log, "en")
    text, content = item["content_text"], item["content_html"]
    # then it tells the latest 10 steps, after a line counting the 50 before them
    assert "Earlier steps not shown: 50." in text
    assert text.count("Wire: Article") == 10
    assert "Wire: Article 51" in text and "Wire: Article 60" in text
    # and in HTML the count links to the claim's answer, which has every step
    assert (
        f'Earlier steps not shown: <a href="{BASE}/api/claims/{GENALO_RETIREMENT}">50</a>.'
        in content
    )
    assert content.count("<li>") < 20


async def test_a_claim_of_few_steps_tells_them_all(seeded_log: EventLog) -> None:
    # given Genalo's retirement, confirmed and corrected 10 times
    await seeded_log.append_events(_steps(10), actor="test")
    # when its feed entry is read
    item = await _genalo_item(seeded_log, "en")
    # then every step is told, and no line counts earlier ones
    assert item["content_text"].count("Wire: Article") == 10
    assert "Wire: Article 1" in item["content_text"]
    assert "Earlier steps" not in item["content_text"]


async def test_the_count_of_earlier_steps_is_in_the_feed_s_language(
    seeded_log: EventLog,
) -> None:
    # given Genalo's retirement with 1,010 steps
    await seeded_log.append_events(_steps(1010), actor="test")
    # when its entry is read in French
    item = await _genalo_item(seeded_log, "fr")
    # then the count is written the French way, after a no-break space before the colon
    assert (
        "\u00c9tapes ant\u00e9rieures non affich\u00e9es\u00a0: 1\u202f000."
        in (item["content_text"])
    )


async def test_a_dated_confirmation_s_words_keep_their_language_once_its_step_is_dropped(
    seeded_log: EventLog,
) -> None:
    # given a French source confirming the English report with a date in its own words
    await seeded_log.append_events(
        french_dated_confirmation(),
        actor="test",
    )
    # and 20 steps after it, none of which gives another date
    await seeded_log.append_events(_steps(20), actor="test")
    # when the entry is read in English, the confirmation no longer among its steps
    item = await _genalo_item(seeded_log, "en")
    assert "Le Journal" not in item["content_text"]
    # then the date's words are still marked as French
    assert '<span lang="fr" dir="auto">d\u00e9but juillet</span>' in item["content_html"]
