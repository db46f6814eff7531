"""JSON Feed 1.1 says of ``version``: "This should appear at the very top". Readers that
sniff a document's first bytes to tell a JSON Feed from other JSON find it there; written
in sorted key order it came after every item, tens of kilobytes in."""

from __future__ import annotations

import json

from leaderlog.feeds import PAGE_SIZE, FeedRequest, Scope
from leaderlog.log import EventLog
from tests.feeds.logs import BASE, SEED_CLAIMS, add_claims, project

_VERSION = "https://jsonfeed.org/version/1.1"


def _keys(body: bytes) -> list[str]:
    pairs = json.loads(body, object_pairs_hook=lambda items: items)
    return [key for key, _ in pairs]


async def test_version_is_the_first_member_of_every_json_feed_document(
    seeded_log: EventLog,
) -> None:
    # Enough claims for an archived feed: a subscription document and two archive pages.
    await add_claims(seeded_log, 0, 2 * PAGE_SIZE + 1 - SEED_CLAIMS)
    service = await project(seeded_log)
    for page in (None, 1, 2, 3):
        request = FeedRequest(Scope.parse("all"), "json", "en", BASE, page)
        body = (await service.render(request)).body
        assert _keys(body)[0] == "version", page
        assert body.startswith(b'{\n  "version": "' + _VERSION.encode() + b'"'), page
