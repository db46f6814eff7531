"""A page asked for while the leadership projection cannot be read (its checkpoint gone, as
between a rebuild's start and its first page, or never built) says so, in the page's
language, rather than that no leadership has been recorded, on a day left blank."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from leaderlog.errors import ProjectionError
from leaderlog.http import create_app
from leaderlog.projections import Queries
from leaderlog.projections.base import not_built
from tests.http.server import running, seeded_database

UNREADABLE = {
    "en": "The leadership cannot be read at the moment; try again shortly.",
    "ja": "現在、指導部の情報を読み込めません。しばらくしてからもう一度お試しください。",
}


def _leadership_unreadable(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on, the leadership projection's checkpoint cannot be read."""
    checkpoint = Queries._checkpoint

    async def unreadable(self: Queries, name: str) -> int:
        if name == "leadership":
            raise ProjectionError(not_built(name))
        return await checkpoint(self, name)

    monkeypatch.setattr(Queries, "_checkpoint", unreadable)


@pytest.mark.parametrize("address", ["/", "/?org=ice"])
@pytest.mark.parametrize("language", sorted(UNREADABLE))
def test_a_page_says_the_leadership_cannot_be_read_while_it_cannot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, address: str, language: str
) -> None:
    # Given a server on the seeds, whose leadership projection then cannot be read
    with running(create_app(seeded_database(tmp_path))) as base:
        _leadership_unreadable(monkeypatch)
        # When a page is asked for
        page = httpx.get(f"{base}{address}", headers={"Accept-Language": language}, timeout=30)
    # Then it says so, in its language, says no situation, and is not tagged to be kept
    assert page.status_code == 200
    assert UNREADABLE[language] in page.text
    assert "No leadership has been recorded yet." not in page.text
    assert "log position" not in page.text and "ETag" not in page.headers
    # and the rest of the page is there: the recent changes from the feeds
    assert "Gordon" in page.text


def test_an_organisations_page_lists_its_own_changes_while_the_leadership_cannot_be_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a server on the seeds, whose leadership projection then cannot be read
    with running(create_app(seeded_database(tmp_path))) as base:
        _leadership_unreadable(monkeypatch)
        # When ERO's page is asked for
        page = httpx.get(f"{base}/?org=ice-ero", timeout=30)
    # Then it is still ERO's page: its title, and the changes of its feed only (not the
    # Secretary of Homeland Security's, which the whole log's list begins with)
    assert UNREADABLE["en"] in page.text
    assert "<title>Enforcement and Removal Operations" in page.text
    assert "Genalo" in page.text
    assert "Kristi Noem" not in page.text
