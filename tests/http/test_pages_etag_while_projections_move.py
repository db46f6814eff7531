"""An overview page says the leadership its ETag names, even when the leadership projection
moves on (another writer's events applied) between the tag and the page being written."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from leaderlog.http import _pages as pages_module
from leaderlog.http import app as app_module
from leaderlog.http import create_app
from leaderlog.projections.leadership import LeadershipProjection
from tests.http.server import confirm_as_another_writer, running, seeded_database
from tests.projections.logs import GORDON_ACTING


@pytest.mark.parametrize("address", ["/", "/?org=ice"])
def test_a_page_written_while_the_leadership_moves_on_says_what_its_etag_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, address: str
) -> None:
    url = seeded_database(tmp_path)
    # The server's own follower is left waiting: only the other process moves a projection.
    monkeypatch.setattr(app_module, "_POLL_SECONDS", 3600.0)
    write = pages_module._overview_page

    moved: list[bool] = []

    async def overview_page(*arguments: Any) -> Any:
        # given the page's tag worked out, when the leadership moves on before it is written
        if not moved:
            moved.append(True)
            await asyncio.to_thread(
                confirm_as_another_writer, url, GORDON_ACTING, projecting=[LeadershipProjection()]
            )
        return await write(*arguments)

    with running(create_app(url)) as base, httpx.Client(timeout=30) as client:
        tag_position = _tagged_position(client.head(f"{base}{address}").headers["etag"])
        monkeypatch.setattr(pages_module, "_overview_page", overview_page)
        page = client.get(f"{base}{address}", headers={"Accept-Language": "fr"})
        # then the page, kept and tagged, shows the leadership as known where its tag says
        assert page.status_code == 200
        tagged = _tagged_position(page.headers["etag"])
        assert tagged == tag_position
        shown = re.search(r"position (\d+)", page.text)
        assert shown is not None and int(shown.group(1)) == tagged
        # and a reader holding it gets the leadership that moved on, under a tag of its own
        again = client.get(
            f"{base}{address}",
            headers={"Accept-Language": "fr", "If-None-Match": page.headers["etag"]},
        )
        assert again.status_code == 200
        assert _tagged_position(again.headers["etag"]) == tag_position + 1
        assert f"position {tag_position + 1}" in again.text


def _tagged_position(etag: str) -> int:
    return int(etag.removeprefix('W/"').split("-", 1)[0])
