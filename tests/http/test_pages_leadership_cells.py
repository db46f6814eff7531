"""What each cell of a post's row in the leadership tables says, in the page's language.

The seeds hold no post that is vacant, no interim holder and no pending change a source
disputes; this log adds one of each:

- a post nobody holds says so in its holders' column ("none"), not with an empty cell that
  reads as if the page failed to say;
- an interim holder is said to be one, as an acting holder is;
- a pending change whose claim is disputed leads with "Disputed", not with how the source
  first put it ("Expected"), as its feed entry does;
- a pending change says in what capacity the person is to take or leave the post.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from lxml import html as lxml_html

from leaderlog.events import (
    Attribution,
    ClaimDisputed,
    ClaimReported,
    FuzzyDate,
    PersonRegistered,
    PostDefined,
)
from leaderlog.http import create_app
from tests.http.server import running, seeded_database
from tests.projections.logs import FOX, HAMMER_REASSIGNMENT

DENIED = "Denied by ICE."


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The seeds, with ERO's deputy director gone, an interim special agent in charge of HSI
    and Robert Hammer's expected reassignment disputed."""
    url = seeded_database(
        tmp_path_factory.mktemp("cells"),
        PostDefined(post="ice-ero-deputy", org="ice-ero", title="Deputy Director"),
        ClaimReported(
            claim="ero-deputy-left",
            source=FOX,
            kind="departure",
            person="derek-gordon",
            post="ice-ero-deputy",
            capacity="permanent",
            modality="occurred",
            effective=FuzzyDate(date="2025-01-02"),
            attribution=Attribution(kind="outlet"),
        ),
        PostDefined(post="ice-hsi-sac", org="ice-hsi", title="Special Agent in Charge"),
        PersonRegistered(person="pat-interim", name="Pat Interim"),
        ClaimReported(
            claim="hsi-sac-interim",
            source=FOX,
            kind="incumbency",
            person="pat-interim",
            post="ice-hsi-sac",
            capacity="interim",
            modality="occurred",
            attribution=Attribution(kind="outlet"),
        ),
        ClaimDisputed(claim=HAMMER_REASSIGNMENT, reason=DENIED),
    )
    with running(create_app(url)) as address:
        yield address


def _rows(base: str, client: httpx.Client, lang: str) -> dict[str, list[lxml_html.HtmlElement]]:
    """ICE's leadership rows, by the post heading each: its four cells."""
    response = client.get(f"{base}/", params={"org": "ice", "lang": lang})
    assert response.status_code == 200
    document = lxml_html.document_fromstring(response.text)
    rows = {}
    for table in document.get_element_by_id("leadership").iter("table"):
        for row in table.find("tbody"):
            heading, *cells = list(row)
            rows[heading.text_content()] = cells
    return rows


def _said(element: lxml_html.HtmlElement) -> str:
    return re.sub(r"\s+", " ", element.text_content()).strip()


@pytest.mark.parametrize(
    ("lang", "none", "vacant"), [("en", "none", "vacant"), ("de", "keine", "unbesetzt")]
)
def test_a_post_nobody_holds_says_none_in_its_holders_column(
    base: str, client: httpx.Client, lang: str, none: str, vacant: str
) -> None:
    # given ERO's deputy director, whose only holder left
    # when a reader opens ICE's page
    holders, vacancy, _, _ = _rows(base, client, lang)["Deputy Director"]
    # then its holders' column says that no one holds it, in the page's language
    assert (_said(holders), _said(vacancy)) == (none, vacant)


@pytest.mark.parametrize(
    ("lang", "said"),
    [
        ("en", "Pat Interim (interim)"),
        ("de", "Pat Interim (übergangsweise)"),
        ("ja", "Pat Interim\uff08暫定\uff09"),
    ],
)
def test_an_interim_holder_is_said_to_be_one_after_their_name(
    base: str, client: httpx.Client, lang: str, said: str
) -> None:
    # given HSI's special agent in charge, held in the interim
    # when a reader opens ICE's page
    holders, *_ = _rows(base, client, lang)["Special Agent in Charge"]
    # then the holder's name is followed by their capacity, as an acting holder's is
    assert _said(holders) == said


@pytest.mark.parametrize(
    ("lang", "disputed", "expected"),
    [("en", "Disputed: ", "Expected: "), ("de", "Umstritten: ", "Erwartet: ")],
)
def test_a_pending_change_whose_claim_is_disputed_leads_with_disputed(
    base: str, client: httpx.Client, lang: str, disputed: str, expected: str
) -> None:
    # given Robert Hammer's expected reassignment, disputed since it was reported
    # when a reader opens ICE's page
    rows = _rows(base, client, lang)
    (pending,) = [cells[2] for cells in rows.values() if "Robert Hammer" in _said(cells[0])]
    items = [_said(item) for item in pending.iter("li")]
    # then that pending change says it is disputed, and Derek Gordon's, undisputed, that it
    # is expected
    (hammer,) = [item for item in items if "Robert Hammer" in item]
    (gordon,) = [item for item in items if "Derek Gordon" in item]
    assert hammer.startswith(disputed) and gordon.startswith(expected)


def _headline(item: lxml_html.HtmlElement) -> str:
    """A pending change's headline: its item's text before the line saying when."""
    when = item.find("small")
    return _said(item).removesuffix(_said(when) if when is not None else "").strip()


@pytest.mark.parametrize(
    ("lang", "appointment", "retirement"),
    [
        (
            "en",
            "Expected: Appointment of Derek Gordon as Executive Associate Director (HSI) (acting)",
            "Expected: Departure of Kenneth Genalo as Executive Associate Director (ERO) "
            "(acting, retirement)",
        ),
        (
            "de",
            "Erwartet: Derek Gordon wird Exekutiver stellvertretender Direktor (HSI) "
            "(kommissarisch)",
            "Erwartet: Kenneth Genalo scheidet als Exekutiver stellvertretender Direktor (ERO) "
            "aus (kommissarisch, Ruhestand)",
        ),
    ],
)
def test_a_pending_change_says_in_what_capacity_it_is_to_be_made(
    base: str, client: httpx.Client, lang: str, appointment: str, retirement: str
) -> None:
    # given the seeds' acting appointment of Derek Gordon and Kenneth Genalo's retirement
    # from the post he holds as acting director
    # when a reader opens ICE's page
    pending = [
        _headline(item)
        for cells in _rows(base, client, lang).values()
        for item in cells[2].iter("li")
    ]
    # then each says the capacity, with the cause where there is one
    assert appointment in pending and retirement in pending
