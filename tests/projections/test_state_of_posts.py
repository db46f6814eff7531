"""``Queries.state_of_posts``: the state of posts named one by one, as ``state`` gives them."""

from __future__ import annotations

import pytest

from leaderlog.log import EventLog
from leaderlog.projections import InvalidQuery
from tests.projections.logs import current


async def test_posts_named_get_the_answer_their_organisation_s_state_gives(
    seeded_log: EventLog,
) -> None:
    queries = await current(seeded_log)
    # given ICE's state as known at position 20, in June 2025
    whole = await queries.state(org="ice", as_of="2025-06-15", known_at=20)
    by_post = {answer["post"]["post"]: answer for answer in whole["posts"]}
    # when two of its posts are asked for by name, in an order of the caller's
    named = await queries.state_of_posts(["ice-hsi-ead", "ice-ero-ead"], "2025-06-15", 20)
    # then each is answered as in the whole, in the order asked, on the same two time axes
    assert [answer["post"]["post"] for answer in named["posts"]] == ["ice-hsi-ead", "ice-ero-ead"]
    assert named["posts"] == [by_post["ice-hsi-ead"], by_post["ice-ero-ead"]]
    assert (named["as_of"], named["known_at"]) == (whole["as_of"], whole["known_at"])
    assert named["org"] is None


async def test_a_post_not_known_then_is_left_out(seeded_log: EventLog) -> None:
    queries = await current(seeded_log)
    named = await queries.state_of_posts(["no-such-post", "ice-ero-ead"], known_at=1)
    assert named["posts"] == []  # at position 1 not even ERO's post is defined
    named = await queries.state_of_posts(["no-such-post", "ice-ero-ead", "ice-ero-ead"])
    assert [answer["post"]["post"] for answer in named["posts"]] == ["ice-ero-ead"]


async def test_posts_given_as_text_or_with_a_bad_id_are_refused(seeded_log: EventLog) -> None:
    queries = await current(seeded_log)
    with pytest.raises(InvalidQuery, match="list of ids"):
        await queries.state_of_posts("ice-ero-ead")
    with pytest.raises(InvalidQuery):
        await queries.state_of_posts(["bad\nid"])
