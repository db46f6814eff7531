"""Feeds, the OPML and pages after org.updated clears a parent or a short name.

Given the seeds and an update making HSI top-level without a short name, when its claims and
the subjects are read, then new claims are in HSI's own feed and no longer its former
parents', and the directory pages and the OPML read from has it top-level.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from leaderlog._json import loads
from leaderlog.events import Event, parse_event
from leaderlog.feeds import FeedService
from leaderlog.feeds._paging import Scope
from leaderlog.feeds._service import FeedRequest
from leaderlog.http import create_app
from leaderlog.log import EventLog
from tests.feeds.logs import BASE, generated_claim, project
from tests.http.server import running, seeded_database
from tests.http.test_pages import _leadership_text, _section

CLEARED = parse_event("org.updated", {"org": "ice-hsi", "parent": None, "short_name": None})


def person(index: int) -> Event:
    return parse_event("person.registered", {"person": f"person-{index}", "name": f"P {index}"})


async def quotes(service: FeedService, scope: str) -> set[str]:
    request = FeedRequest(Scope.parse(scope), "json", "en", BASE, explicit_lang=True)
    items: list[dict[str, Any]] = loads((await service.render(request)).body)["items"]
    return {item["content_html"] for item in items}


def has_quote(contents: set[str], index: int) -> bool:
    return any(f"Quote number {index}." in content for content in contents)


async def test_claims_after_the_update_are_in_the_org_s_feed_only(seeded_log: EventLog) -> None:
    # given a claim about an HSI post before the update, and one after it
    await seeded_log.append_events([person(1), generated_claim(1)], actor="test")
    await seeded_log.append_events([CLEARED], actor="test")
    await seeded_log.append_events([person(2), generated_claim(2)], actor="test")
    service = await project(seeded_log)
    # then HSI's feed has both
    own = await quotes(service, "org:ice-hsi")
    assert has_quote(own, 1) and has_quote(own, 2)
    # and its former parents' feeds only the one from before (an entry never leaves a feed)
    for former in ("org:ice", "org:dhs"):
        contents = await quotes(service, former)
        assert has_quote(contents, 1) and not has_quote(contents, 2), former
    assert has_quote(await quotes(service, "all"), 2)


async def test_the_subjects_have_it_top_level_without_its_short_name(
    seeded_log: EventLog,
) -> None:
    service = await project(seeded_log)
    before = dict((await service.directory()).kinds["org"])["ice-hsi"]
    await seeded_log.append_events([CLEARED], actor="test")
    service = await project(seeded_log)
    directory = await service.directory()
    after = dict(directory.kinds["org"])["ice-hsi"]
    assert (before["path"], before["parent"]) == (["dhs", "ice", "ice-hsi"], "ice")
    assert (after["path"], after["parent"]) == (["ice-hsi"], None)
    # No feed shows a short name, so none is kept for them.
    assert "short_name" not in before and "short_name" not in after
    # and as known before the update, where it was
    earlier = await service.directory(directory.position - 1)
    assert dict(earlier.kinds["org"])["ice-hsi"]["path"] == ["dhs", "ice", "ice-hsi"]
    opml = (await service.opml("en", BASE)).body
    assert b"/feeds/org/ice-hsi.atom" in opml


def test_pages_show_it_apart_from_its_former_parent(tmp_path: Path) -> None:
    url = seeded_database(tmp_path, CLEARED)
    with running(create_app(url)) as base, httpx.Client(timeout=30) as client:
        ice = client.get(f"{base}/?org=ice")
        hsi = client.get(f"{base}/?org=ice-hsi")
    assert (ice.status_code, hsi.status_code) == (200, 200)
    # ICE's page lists neither HSI's feed nor its leadership; HSI's own page does
    assert f'href="{base}/feeds/org/ice-hsi.atom"' not in _section(ice.text, "feeds")
    assert "Robert Hammer" not in _leadership_text(ice.text)
    assert "Kenneth Genalo" in _leadership_text(ice.text)
    assert f'href="{base}/feeds/org/ice-hsi.atom"' in _section(hsi.text, "feeds")
    assert "Robert Hammer" in _leadership_text(hsi.text)
