"""Conflicts across posts: a claim on one post whose latest dispute names a claim on another
brings the conflict into that other post's state, though that dispute came after an earlier
one naming nothing (the projection links each dispute by the claims it names itself)."""

from __future__ import annotations

from leaderlog.log import EventLog
from tests.projections.logs import append, at, current, published_source, record
from tests.projections.test_conflicts_latest_dispute import held


async def test_a_later_dispute_naming_a_claim_on_another_post_shows_in_that_posts_state(
    sqlite_url: str,
) -> None:
    # given x holding p (in org a) and, by another source, q (in org b)
    records = [
        record("org.registered", org="a", name="A"),
        record("org.registered", org="b", name="B"),
        record("post.defined", post="p", org="a", title="P"),
        record("post.defined", post="q", org="b", title="Q"),
        record("person.registered", person="x", name="X"),
        published_source("early", "2025-03-10"),
        published_source("late", "2025-06-01"),
        held("holding", "early", post="p"),
        held("elsewhere", "late", post="q"),
        # when the claim on q is disputed first naming nothing, then naming the one on p
        record("claim.disputed", claim="elsewhere", reason="first doubt"),
        record(
            "claim.disputed",
            claim="elsewhere",
            reason="second doubt",
            conflicts_with=["holding"],
        ),
    ]
    async with await EventLog.open(sqlite_url) as log:
        await append(log, records, recorded_at=at("2025-07-01T00:00:00Z"))
        queries = await current(log)
        state = await queries.state(org="a", as_of="2025-06-15")
    # then org a's post lists the conflict its claim is in, with the latest reason
    (post,) = state["posts"]
    assert post["conflicts"] == [
        {
            "kind": "disputed",
            "claims": ["elsewhere", "holding"],
            "persons": ["x"],
            "reason": "second doubt",
        }
    ]
