"""The HTML overview as a reader meets it: what a page lists, and how it repeats names and ids."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from leaderlog.events import (
    Attribution,
    ClaimReported,
    OrgRegistered,
    PersonRegistered,
    PostDefined,
)
from leaderlog.http import _pages as pages
from leaderlog.http import create_app
from tests.http.server import running, seeded_database


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """A server over the seeds that writes every page anew (a test below changes how many
    posts make a page list organisations)."""
    app = create_app(seeded_database(tmp_path))
    with running(app) as base:
        app.state.services.pages.limit = 0
        yield base


def _section(html: str, name: str) -> str:
    return html.split(f'<section id="{name}">', 1)[1].split("</section>", 1)[0]


def _cells(html: str, column: int) -> list[str]:
    """The HTML of one column's cells in the leadership tables."""
    rows = re.findall(r'<tr><th scope="row">(.*?)</td></tr>', _section(html, "leadership"))
    return [row.replace("</th><td>", "</td><td>").split("</td><td>")[column] for row in rows]


def _org_feeds(html: str) -> set[str]:
    return set(re.findall(r'/feeds/org/([a-z0-9-]+)\.atom"', _section(html, "feeds")))


def test_a_large_organisation_s_page_lists_the_feeds_of_its_subtree_only(
    server: str, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a log whose five posts count as many, and ICE's three posts below it as well
    monkeypatch.setattr(pages, "OVERVIEW_POSTS", 2)
    # when the overview and then ICE's page are read (in that order, and the other way round)
    for first, then in (("/", "/?org=ice"), ("/?org=ice", "/")):
        for address in (first, then):
            response = client.get(f"{server}{address}")
            assert response.status_code == 200, address
            if address == "/":
                # then the overview lists every organisation's feeds
                assert _org_feeds(response.text) == {
                    "dhs",
                    "ice",
                    "ice-ero",
                    "ice-hsi",
                    "white-house",
                }
            else:
                # and ICE's page the feeds of the organisations it lists, as a smaller
                # organisation's page does: not DHS's or the White House's
                assert _org_feeds(response.text) == {"ice", "ice-ero", "ice-hsi"}


def test_a_holder_s_long_name_is_cut_as_the_page_cuts_it_everywhere_else(
    tmp_path: Path, client: httpx.Client
) -> None:
    # given a person with a name of 300 characters, the most a name may have, holding a post
    name = "Maximiliana " * 25
    events = [
        PersonRegistered(person="max", name=name),
        ClaimReported(
            claim="max-dsac",
            source="fox-ice-shakeup-2025-05",
            kind="appointment",
            person="max",
            post="ice-hsi-dsac",
            capacity="permanent",
            modality="expected",
            attribution=Attribution(kind="outlet"),
        ),
        ClaimReported(
            claim="max-dhs",
            source="fox-ice-shakeup-2025-05",
            kind="incumbency",
            person="max",
            post="dhs-secretary",
            capacity="permanent",
            modality="occurred",
            attribution=Attribution(kind="outlet"),
        ),
    ]
    with running(create_app(seeded_database(tmp_path, *events))) as base:
        page = client.get(f"{base}/?org=dhs").text + client.get(f"{base}/?org=ice-hsi").text
    # when the page names them: in the feeds' list, a pending change, and as a holder
    shown = re.findall(r"<(?:bdi|span dir=\"auto\")>(Maximiliana[^<]*)<", page)
    # then it names them the same way each time: cut short, with an ellipsis
    assert len(shown) >= 3
    assert {len(text) for text in shown} == {200}
    assert all(text.endswith("\u2026") for text in shown)
    assert any("Maximiliana" in cell for cell in _cells(page, 1))


@pytest.mark.parametrize("asked", ["ice ", " ice", "ice-hsi "])
def test_an_unknown_id_with_a_space_at_an_end_is_not_shown_as_a_known_one(
    server: str, client: httpx.Client, asked: str
) -> None:
    # given an id copied with a space at one end, which names no organisation
    response = client.get(f"{server}/", params={"org": asked})
    assert response.status_code == 404
    # then the page does not seem to say that the organisation without it does not exist:
    # the id is written out, its space within its quotes
    said = re.search(r"No organisation has the id <bdi>(.*?)</bdi>", response.text)
    assert said is not None
    assert html.unescape(said.group(1)) == repr(asked)
    # and the organisation meant is linked
    assert f'href="{server}/?org={asked.strip()}"' in _section(response.text, "leadership")


def _title(page: str) -> str:
    found = re.search(r"<title>(.*?)</title>", page)
    assert found is not None
    return html.unescape(found.group(1))


def test_an_organisation_s_page_is_titled_with_its_name_in_the_page_s_language(
    server: str, client: httpx.Client
) -> None:
    # tabs, bookmarks and screen readers told one organisation's page from another by nothing
    overview = _title(client.get(f"{server}/").text)
    assert overview == "Who leads what, as reported"
    assert _title(client.get(f"{server}/?org=ice").text) == (
        "Immigration and Customs Enforcement \u2014 Who leads what, as reported"
    )
    assert _title(client.get(f"{server}/?org=ice&lang=fr").text) == (
        "Service de l'immigration et des douanes \u2014 "
        "Qui dirige quoi, d\u2019apr\u00e8s les m\u00e9dias"
    )
    # an unknown organisation's page names none, and says it was not found
    assert _title(client.get(f"{server}/?org=nothing-here").text) == (
        f"Page not found \u2014 {overview}"
    )


def test_the_overview_shows_each_organisation_s_leadership_after_the_one_it_belongs_to(
    tmp_path: Path, client: httpx.Client
) -> None:
    # given Customs and Border Protection under DHS, an id that sorts before DHS's own
    url = seeded_database(
        tmp_path,
        OrgRegistered(org="cbp", name="Customs and Border Protection", parent="dhs"),
        PostDefined(post="cbp-commissioner", org="cbp", title="Commissioner"),
    )
    with running(create_app(url)) as base:
        # when a reader opens the overview
        leadership = _section(client.get(f"{base}/").text, "leadership")
    # then each organisation's table follows the one it belongs to, as the tree reads from
    # the top: DHS, then what is under it, then the White House
    order = re.findall(r'<h3 id="org-([^"]+)">', leadership)
    assert order == ["dhs", "cbp", "ice-ero", "ice-hsi", "white-house"]


@pytest.mark.parametrize(
    ("per_page", "listed", "whole"),
    [
        (5, ["dhs", "ice", "ice-ero", "ice-hsi", "white-house"], True),
        (4, ["dhs", "white-house"], False),
    ],
)
def test_a_tree_that_just_fits_on_a_page_is_listed_whole_and_a_larger_one_by_its_top(
    server: str,
    client: httpx.Client,
    monkeypatch: pytest.MonkeyPatch,
    per_page: int,
    listed: list[str],
    whole: bool,
) -> None:
    # given the seeds' five organisations, their posts counted as many, and a page of five
    # organisations (or of four)
    monkeypatch.setattr(pages, "OVERVIEW_POSTS", 2)
    monkeypatch.setattr(pages, "ORGS_PER_PAGE", per_page)
    # when a reader opens the overview
    page = client.get(f"{server}/").text
    leadership = _section(page, "leadership")
    # then five to a page lists every one of them, the whole tree; four, those at the top,
    # each linking to the organisations within it
    assert re.findall(r'<li><a href="[^"?]*\?org=([a-z-]+)">', leadership) == listed
    assert ("listed on its page" not in leadership) is whole
    # on one page either way, which needs no saying which of them it shows
    assert 'class="pager"' not in page and "Organisations 1 to" not in leadership


def test_a_large_organisation_with_none_below_it_lists_no_organisations(
    server: str, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given HSI's two posts, counted as more than a page shows, and no organisation below it
    monkeypatch.setattr(pages, "OVERVIEW_POSTS", 1)
    # when a reader opens its page
    leadership = _section(client.get(f"{server}/?org=ice-hsi").text, "leadership")
    # then it shows its own posts' leadership
    assert "Robert Hammer" in leadership and "Derek Gordon" in leadership
    # and no list of organisations to choose from, which would hold only itself
    assert "Choose an organisation" not in leadership and '<ul class="orgs">' not in leadership
    assert "?org=ice-hsi" not in leadership
