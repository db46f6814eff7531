"""A feed whose subject is in the log but not yet taken in by the feeds: catching up, not
missing. A reader told 404 may drop the subscription; one told 503 tries again."""

from __future__ import annotations

import pytest

from leaderlog.errors import StoreUnavailable
from leaderlog.events import OrgRegistered, PersonRegistered, PostDefined
from leaderlog.feeds import FeedNotFound, FeedRequest, Scope
from leaderlog.log import EventLog
from tests.feeds.logs import BASE, project


def _request(scope: str) -> FeedRequest:
    return FeedRequest(Scope.parse(scope), "atom", "en", BASE, None, explicit_lang=True)


async def test_a_person_appended_but_not_taken_in_yet_is_catching_up_not_unknown(
    seeded_log: EventLog,
) -> None:
    # given feeds up to date with the seeds
    service = await project(seeded_log)
    # when another process registers a person, an organisation and a post the feeds have
    # not taken in yet
    await seeded_log.append_events(
        [
            PersonRegistered(person="zf-9", name="Z Nine"),
            OrgRegistered(org="zf-office", name="Z Office"),
            PostDefined(post="zf-office-head", org="zf-office", title="Head"),
        ],
        actor="desk",
    )
    # then their feeds are catching up, to be tried again, rather than unknown
    for scope in ("person:zf-9", "org:zf-office", "post:zf-office-head"):
        with pytest.raises(StoreUnavailable, match="catching up with the log"):
            await service.render(_request(scope))
    # while an id the log does not hold is unknown as ever
    with pytest.raises(FeedNotFound, match="unknown person 'nobody-at-all'"):
        await service.render(_request("person:nobody-at-all"))
    # and once taken in, the feed is served
    served = await project(seeded_log)
    assert b"<feed" in (await served.render(_request("person:zf-9"))).body
