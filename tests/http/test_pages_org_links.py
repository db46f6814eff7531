"""A reader reaches every organisation's page from the overview, and its parents from it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from leaderlog.http import create_app
from tests.http.server import running, seeded_database


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    with running(create_app(seeded_database(tmp_path))) as base:
        yield base


def _section(markup: str, name: str) -> str:
    return markup.split(f'<section id="{name}">', 1)[1].split("</section>", 1)[0]


def _heading_links(markup: str) -> dict[str, str]:
    """Each leadership heading's organisation and the address it links to ("" for none)."""
    found = {}
    for org_id, inside in re.findall(r'<h3 id="org-([^"]+)">(.*?)</h3>', markup):
        link = re.match(r'<a href="([^"]*)">', inside)
        found[org_id] = link.group(1) if link else ""
    return found


def test_each_organisation_heading_of_the_overview_links_to_its_page(
    server: str, client: httpx.Client
) -> None:
    # given the seeds, whose five posts the overview shows organisation by organisation
    # when a reader opens the overview, in French as asked in the address
    markup = client.get(f"{server}/?lang=fr").text
    # then every organisation's heading links to that organisation's page, in that language
    links = _heading_links(_section(markup, "leadership"))
    assert links
    assert links == {org_id: f"{server}/?org={org_id}&amp;lang=fr" for org_id in links}


def test_an_organisation_s_page_links_its_parents_and_not_itself(
    server: str, client: httpx.Client
) -> None:
    # when a reader opens HSI's page (under ICE, under DHS)
    markup = client.get(f"{server}/?org=ice-hsi").text
    leadership = _section(markup, "leadership")
    # then it links the organisations above it, outermost first, after "All organisations"
    (paragraph,) = [part for part in leadership.split("</p>") if "All organisations" in part]
    trail = re.findall(r'<a href="([^"]*)">', paragraph)
    assert trail == [f"{server}/", f"{server}/?org=dhs", f"{server}/?org=ice"]
    # and its own heading is not a link to the page the reader is on
    assert _heading_links(leadership) == {"ice-hsi": ""}


@pytest.mark.parametrize(
    ("org", "trail"),
    [
        (
            "ice-hsi",
            "All organisations / Department of Homeland Security / "
            "Immigration and Customs Enforcement",
        ),
        ("ice", "All organisations / Department of Homeland Security"),
        ("dhs", "All organisations"),
    ],
)
def test_an_organisation_s_trail_names_those_above_it_and_ends_before_its_own_name(
    server: str, client: httpx.Client, org: str, trail: str
) -> None:
    # when a reader opens an organisation's page
    leadership = _section(client.get(f"{server}/", params={"org": org}).text, "leadership")
    # then the line leading back to the overview names the organisations above it,
    # outermost first, and not the one the page is about, whose name heads the page
    (line,) = [part for part in leadership.split("</p>") if "All organisations" in part]
    assert re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", line)).strip() == trail
