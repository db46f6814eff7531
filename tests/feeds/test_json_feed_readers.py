"""What JSON Feed readers rely on beyond the spec's musts.

- Every item has a ``url`` (the spec wants one "regardless"; Feedbin's parser refuses a whole
  feed over an item without one): the source's page, else the claim's own address.
- The feed's author is given as JSON Feed 1.0's ``author`` too, the only member readers of
  1.0 (feedparser's, Feedbin's) read.
- A full archive page, which never changes again, is ``expired``; nothing else is.
"""

from __future__ import annotations

import json
from typing import Any

from leaderlog.feeds import PAGE_SIZE, FeedRequest, FeedService, Scope
from leaderlog.log import EventLog
from tests.feeds.logs import BASE, SEED_CLAIMS, add_claims, add_sourced_claim, project


async def _json(service: FeedService, scope: str, page: int | None = None) -> dict[str, Any]:
    request = FeedRequest(Scope.parse(scope), "json", "en", BASE, page)
    document: dict[str, Any] = json.loads((await service.render(request)).body)
    return document


async def test_an_item_whose_source_cannot_be_linked_has_the_claim_s_own_address(
    seeded_log: EventLog,
) -> None:
    # given a claim whose source's address holds a backslash in its host: no link to it
    await add_sourced_claim(seeded_log, "unlinked", "https://a\\b.example/x")
    service = await project(seeded_log)
    (item,) = (await _json(service, "person:unlinked"))["items"]
    # then its url is the claim's own, as every other item has one
    assert item["url"] == f"{BASE}/api/claims/unlinked"
    assert all("url" in item for item in (await _json(service, "all"))["items"])


async def test_the_feed_s_author_is_given_the_1_0_way_too(seeded_log: EventLog) -> None:
    document = await _json(await project(seeded_log), "all")
    assert document["authors"] == [{"name": "leaderlog"}]
    assert document["author"] == {"name": "leaderlog"}


async def test_only_a_full_archive_page_is_expired(seeded_log: EventLog) -> None:
    # given two full archive pages and a third one being filled
    await add_claims(seeded_log, 0, 2 * PAGE_SIZE + 1 - SEED_CLAIMS)
    service = await project(seeded_log)
    assert [(await _json(service, "all", page)).get("expired") for page in (1, 2, 3)] == [
        True,
        True,
        None,
    ]
    assert "expired" not in await _json(service, "all")
