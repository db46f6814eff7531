"""The overview says how sure each holder's holding is, as ``leaderlog state`` does.

A tenure's status (``/api/state`` gives it per holder) is disputed while any of its claims is,
else confirmed once any was, else reported. The page says the first two after the holder's
name, in the page's language and in the language's own brackets, with the holder's capacity
where there is one; a holding merely reported, as most are, is left unsaid. The words are
text in the holder's cell, read by a screen reader as they are shown.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import httpx
import pytest

from leaderlog.events import ClaimConfirmed
from leaderlog.feeds import LANGUAGES
from leaderlog.feeds._i18n import language
from leaderlog.http import create_app
from tests.http.server import running, seeded_database

FOX = "fox-ice-shakeup-2025-05"
# One of the two claims that Kenneth Genalo acts as ERO's executive associate director.
GENALO_ERO = f"{FOX}-genalo-ero-body"
GENALO = "Kenneth Genalo"
HAMMER = "Robert Hammer"
GORDON = "Derek Gordon"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The seeds (Robert Hammer's holding disputed, Derek Gordon's reported), with Kenneth
    Genalo's acting holding confirmed by the seeds' own source."""
    url = seeded_database(
        tmp_path_factory.mktemp("holder-status"), ClaimConfirmed(claim=GENALO_ERO, source=FOX)
    )
    with running(create_app(url)) as address:
        yield address


def _text(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def _holders(base: str, client: httpx.Client, lang: str) -> dict[str, tuple[str, str]]:
    """Each ICE post's holders cell, as HTML and as the text a reader hears, by the name of
    its (one) holder."""
    response = client.get(f"{base}/", params={"org": "ice", "lang": lang})
    assert response.status_code == 200
    leadership = response.text.split('<section id="leadership">', 1)[1].split("</section>", 1)[0]
    cells = re.findall(r'<tr><th scope="row">.*?</th><td>(.*?)</td>', leadership)
    assert len(cells) == 3, cells
    return {_text(re.findall(r"<bdi>(.*?)</bdi>", cell)[0]): (cell, _text(cell)) for cell in cells}


def test_the_status_of_a_confirmed_or_disputed_holding_follows_the_holder_s_name(
    base: str, client: httpx.Client
) -> None:
    holders = _holders(base, client, "en")
    assert holders[HAMMER] == ("<bdi>Robert Hammer</bdi> (disputed)", "Robert Hammer (disputed)")
    # with the capacity, as two facts
    assert holders[GENALO][1] == "Kenneth Genalo (acting, confirmed)"
    # and a holding only reported, as most are, says nothing of it
    assert holders[GORDON][1] == "Derek Gordon"


@pytest.mark.parametrize(
    ("lang", "disputed", "confirmed"),
    [
        (
            "fr",
            "Robert Hammer (information contestée)",
            "Kenneth Genalo (par intérim, information confirmée)",
        ),
        ("de", "Robert Hammer (strittig)", "Kenneth Genalo (kommissarisch, bestätigt)"),
        ("ru", "Robert Hammer (оспаривается)", "Kenneth Genalo (и. \u043e., подтверждено)"),
        # in the language's own brackets and between its own commas
        ("ja", "Robert Hammer\uff08異論あり\uff09", "Kenneth Genalo\uff08代行、確認済み\uff09"),
        (
            "zh-Hans",
            "Robert Hammer\uff08有争议\uff09",
            "Kenneth Genalo\uff08代理\uff0c已确认\uff09",
        ),
    ],
)
def test_the_status_is_said_in_the_page_s_language(
    base: str, client: httpx.Client, lang: str, disputed: str, confirmed: str
) -> None:
    holders = _holders(base, client, lang)
    assert holders[HAMMER][1] == disputed
    assert holders[GENALO][1] == confirmed
    assert holders[GORDON][1] == "Derek Gordon"


@pytest.mark.parametrize("lang", LANGUAGES[1:])
def test_every_language_has_its_own_words_for_the_status(
    base: str, client: httpx.Client, lang: str
) -> None:
    holders = _holders(base, client, lang)
    words = language(lang)
    for holder, status in ((HAMMER, "disputed"), (GENALO, "confirmed")):
        said = words._(status)
        assert said != status, (lang, status)
        # as text in the holder's own cell, not a colour or an attribute
        assert said in holders[holder][1], (lang, holder)
        assert html.escape(said) in holders[holder][0].split("</bdi>", 1)[1], (lang, holder)


@pytest.mark.parametrize(
    ("lang", "acting", "filled"),
    [
        ("en", "acting", "filled"),
        ("de", "kommissarisch besetzt", "besetzt"),
        ("ru", "временно занята", "занята"),
        ("fr", "pourvu par intérim", "pourvu"),
        # a label like the column's others, not a clipped sentence
        ("ja", "代行者あり", "在任者あり"),
        ("hi", "कार्यवाहक द्वारा भरा हुआ", "भरा हुआ"),
    ],
)
def test_a_post_filled_by_an_acting_holder_says_so_of_the_post(
    base: str, client: httpx.Client, lang: str, acting: str, filled: str
) -> None:
    """The vacancy column says how the post is filled, in words of its own, where it used
    the capacity's word for a person (German "kommissarisch", alone)."""
    response = client.get(f"{base}/", params={"org": "ice", "lang": lang})
    rows = re.findall(r'<tr><th scope="row">.*?</th><td>(.*?)</td><td>(.*?)</td>', response.text)
    vacancy = {_text(re.findall(r"<bdi>(.*?)</bdi>", cell)[0]): _text(word) for cell, word in rows}
    assert vacancy[GENALO] == acting
    assert vacancy[HAMMER] == filled


def test_a_pending_change_says_when_it_is_to_take_effect(base: str, client: httpx.Client) -> None:
    # an announcement of years ago read as today's news: the column gave no date
    page = client.get(f"{base}/", params={"org": "ice-hsi"}).text
    pending = re.findall(r"<li>(.*?)</li>", page.split("<tbody>", 1)[1].split("</tbody>", 1)[0])
    gordon = [item for item in pending if "Derek Gordon" in item]
    assert gordon, pending
    # the source's words isolated, in the page's own language here (see
    # test_pages_a11y_date_words_language)
    assert (
        '<br><small>Effective: date unknown (\u201c<span dir="auto">soon</span>\u201d).</small>'
        in html.unescape(gordon[0])
    )
    french = client.get(f"{base}/", params={"org": "ice-hsi", "lang": "fr"}).text
    assert "<small>Date d\u2019effet\u00a0: date inconnue" in html.unescape(french)
