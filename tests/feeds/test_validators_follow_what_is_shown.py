"""A feed's validators move with what it shows of its subject: an update of what no feed
shows (a person's or post's aliases, an organisation's short name) leaves every subscriber's
copy current, the list of every feed (/opml) included, where it sent them all the same
document again under a new ETag."""

from __future__ import annotations

from leaderlog.events import Event, OrgUpdated, PersonUpdated, PostUpdated
from leaderlog.feeds import FeedRequest, FeedService, Scope, Validators
from leaderlog.log import EventLog
from leaderlog.projections.feed_entries import FeedEntriesProjection
from leaderlog.projections.runner import ProjectionRunner
from tests.feeds.logs import BASE, project

SCOPES = ("person:robert-hammer", "post:ice-hsi-ead", "org:ice", "org:ice-hsi")


async def _validators(service: FeedService) -> dict[str, tuple[Validators, bytes]]:
    answers = {}
    for scope in SCOPES:
        rendered = await service.render(FeedRequest(Scope.parse(scope), "atom", "en", BASE, None))
        answers[scope] = (rendered.validators, rendered.body)
    # The list of every feed too, which names each organisation, post and person.
    opml = await service.opml("en", BASE)
    answers["opml"] = (opml.validators, opml.body)
    return answers


async def _appended(log: EventLog, event: Event) -> None:
    await log.append_events([event], actor="test")
    await ProjectionRunner(log.store, [FeedEntriesProjection()]).catch_up()


async def test_updates_of_what_no_feed_shows_leave_every_feed_as_it_was(
    seeded_log: EventLog,
) -> None:
    service = await project(seeded_log)
    before = await _validators(service)
    # when only aliases and a short name change
    await _appended(seeded_log, PersonUpdated(person="robert-hammer", aliases=("R. J. Hammer",)))
    await _appended(seeded_log, PostUpdated(post="ice-hsi-ead", aliases=("HSI chief",)))
    await _appended(seeded_log, OrgUpdated(org="ice", short_name="I.C.E."))
    # then each feed is the same document under the same validators
    assert await _validators(service) == before


async def test_updates_of_what_a_feed_shows_move_its_validators(seeded_log: EventLog) -> None:
    service = await project(seeded_log)
    before = await _validators(service)
    await _appended(seeded_log, PersonUpdated(person="robert-hammer", name="Robert J. Hammer"))
    await _appended(seeded_log, PostUpdated(post="ice-hsi-ead", title="Director, HSI"))
    await _appended(seeded_log, OrgUpdated(org="ice", name="Immigration & Customs Enforcement"))
    after = await _validators(service)
    for scope in ("person:robert-hammer", "post:ice-hsi-ead", "org:ice", "opml"):
        assert after[scope][0].etag != before[scope][0].etag, scope
        assert after[scope][1] != before[scope][1], scope
