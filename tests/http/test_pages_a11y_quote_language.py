"""Quoted words on a page are marked with their source's language (WCAG 3.1.2).

A page's recent changes quote sources in their own words: on a French page an English quote
without ``lang`` is read by a screen reader with a French voice. The source's language is
known; the quoted words say it where it is not the page's, as the feeds' HTML content does,
and keep their own direction.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import httpx
import pytest

from leaderlog.events import ClaimConfirmed
from leaderlog.http import create_app
from tests.feeds.logs import FRENCH_SOURCE, FRENCH_WORDS, GENALO_RETIREMENT
from tests.http.server import running, seeded_database

# The start of one of the seeds' quotes, from the English source.
ENGLISH_WORDS = "The changes include the retirement of Kenneth Genalo"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url = seeded_database(
        tmp_path_factory.mktemp("quotes"),
        FRENCH_SOURCE,
        ClaimConfirmed(claim=GENALO_RETIREMENT, source=FRENCH_SOURCE.source, quote=FRENCH_WORDS),
    )
    with running(create_app(url)) as address:
        yield address


def _changes(base: str, client: httpx.Client, lang: str) -> str:
    response = client.get(f"{base}/", params={"lang": lang})
    assert response.status_code == 200
    return response.text.split('<section id="changes">', 1)[1].split("</section>", 1)[0]


def _opening_tags(changes: str, words: str) -> list[str]:
    """The tags that open each element holding quoted ``words`` directly."""
    return re.findall(rf"(<span[^>]*>){re.escape(html.escape(words))}", changes)


def test_an_english_quote_on_a_french_page_is_marked_english(
    base: str, client: httpx.Client
) -> None:
    opening = _opening_tags(_changes(base, client, "fr"), ENGLISH_WORDS)
    assert opening
    # in its own language, and still isolated in its own direction
    assert set(opening) == {'<span lang="en" dir="auto">'}


def test_a_confirming_source_s_quote_is_marked_with_that_source_s_language(
    base: str, client: httpx.Client
) -> None:
    opening = _opening_tags(_changes(base, client, "en"), FRENCH_WORDS)
    assert opening
    assert set(opening) == {'<span lang="fr" dir="auto">'}


def test_quoted_words_in_the_page_s_own_language_need_no_mark(
    base: str, client: httpx.Client
) -> None:
    english = _opening_tags(_changes(base, client, "en"), ENGLISH_WORDS)
    french = _opening_tags(_changes(base, client, "fr"), FRENCH_WORDS)
    assert english and french
    assert set(english) == set(french) == {'<span dir="auto">'}


def test_only_the_quoted_words_are_marked(base: str, client: httpx.Client) -> None:
    # the words around them, names included, are in the page's language or their own
    changes = _changes(base, client, "fr")
    marked = re.findall(r"<[^>]* lang=[^>]*>", changes)
    assert marked
    assert set(marked) == {'<span lang="en" dir="auto">'}
