"""A date's words on a page are marked with their source's language (WCAG 3.1.2).

A pending change, and a recent change's summary, say when it takes effect in the source's
own words where the source gave no date ("soon"): on a French page English words without
``lang`` are read by a screen reader with a French voice. They say their language where it
is not the page's, as quoted words do, and keep their own direction.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from leaderlog.events import ClaimConfirmed, FuzzyDate
from leaderlog.http import create_app
from tests.feeds.logs import FRENCH_SOURCE, GENALO_RETIREMENT
from tests.http.server import running, seeded_database

# A French source's words for a date it confirms, far enough ahead to stay pending.
FRENCH_DATE_WORDS = "plus tard"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url = seeded_database(
        tmp_path_factory.mktemp("date-words"),
        FRENCH_SOURCE,
        ClaimConfirmed(
            claim=GENALO_RETIREMENT,
            source=FRENCH_SOURCE.source,
            effective=FuzzyDate(date="2999-07", text=FRENCH_DATE_WORDS),
        ),
    )
    with running(create_app(url)) as address:
        yield address


def _page(base: str, client: httpx.Client, lang: str, org: str = "ice") -> str:
    response = client.get(f"{base}/", params={"org": org, "lang": lang})
    assert response.status_code == 200
    return response.text


def _pending_column(page: str) -> str:
    """Every leadership table's rows, whose pending changes are the only dates in them."""
    return "".join(table.split("</tbody>", 1)[0] for table in page.split("<tbody>")[1:])


def _changes(page: str) -> str:
    return page.split('<section id="changes">', 1)[1].split("</section>", 1)[0]


def _opening_tags(part: str, words: str) -> set[str]:
    """The tags that open each element holding ``words`` directly."""
    return set(re.findall(rf"(<span[^>]*>){re.escape(words)}</span>", part))


def test_an_english_soon_on_a_french_page_is_marked_english(
    base: str, client: httpx.Client
) -> None:
    # given the seeds' English reports of changes to come "soon"
    # when a French page shows them
    page = _page(base, client, "fr")
    # then the pending changes and the recent changes say the words are English, each
    # isolated in its own direction
    assert _opening_tags(_pending_column(page), "soon") == {'<span lang="en" dir="auto">'}
    assert _opening_tags(_changes(page), "soon") == {'<span lang="en" dir="auto">'}


def test_a_soon_in_the_page_s_own_language_needs_no_mark(base: str, client: httpx.Client) -> None:
    # given the same English words
    # when an English page shows them
    page = _page(base, client, "en")
    # then the page's own language says theirs: they are only isolated
    assert _opening_tags(_pending_column(page), "soon") == {'<span dir="auto">'}
    assert _opening_tags(_changes(page), "soon") == {'<span dir="auto">'}


def test_a_confirming_source_s_date_words_are_marked_with_its_language(
    base: str, client: httpx.Client
) -> None:
    # given a French source's confirmation giving a date to come in its own words
    # when an English page shows the change, still to come
    page = _page(base, client, "en", org="ice-ero")
    # then its words are the confirming source's, in French, not the English report's
    assert _opening_tags(_pending_column(page), FRENCH_DATE_WORDS) == {
        '<span lang="fr" dir="auto">'
    }
    # and on a French page they need no mark
    french = _page(base, client, "fr", org="ice-ero")
    assert _opening_tags(_pending_column(french), FRENCH_DATE_WORDS) == {'<span dir="auto">'}
