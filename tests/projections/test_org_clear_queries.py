"""State, history and suggestions after org.updated clears a parent or a short name.

Given the seeds and an update making an organisation top-level or taking its short name away,
when the leadership is asked for as known now and as known before it, then each answer has the
tree and the names of its position.
"""

from __future__ import annotations

from typing import Any

import pytest

from leaderlog.errors import UnknownEntity
from leaderlog.log import EventLog
from leaderlog.projections import ProjectionRunner, runner_for
from tests.projections.logs import SEED_COUNT, append, current, record
from tests.projections.test_runner import builtins, dump

HSI_POSTS = {"ice-hsi-ead", "ice-hsi-dsac"}
ICE_POSTS = {"ice-ero-ead", *HSI_POSTS}


def posts_of(answer: dict[str, Any]) -> set[str]:
    return {str(item["post"]["post"]) for item in answer["posts"]}


def tenure_posts(answer: dict[str, Any]) -> set[str]:
    return {str(tenure["post"]) for tenure in answer["tenures"]}


async def test_a_top_level_org_leaves_its_former_parents_answers_from_then_on(
    seeded_log: EventLog,
) -> None:
    # given HSI made top-level, its short name taken away, after the seeds
    (cleared,) = await append(
        seeded_log, [record("org.updated", org="ice-hsi", parent=None, short_name=None)]
    )
    queries = await current(seeded_log)
    # then ICE's and DHS's state and history no longer hold HSI's posts
    for former in ("ice", "dhs"):
        now = await queries.state(org=former, as_of="2025-06-15")
        assert not posts_of(now) & HSI_POSTS, former
        assert not tenure_posts(await queries.history(org=former)) & HSI_POSTS, former
        # but they do as known before the update
        then = await queries.state(org=former, as_of="2025-06-15", known_at=cleared - 1)
        assert posts_of(then) >= HSI_POSTS, former
        assert tenure_posts(await queries.history(org=former, known_at=SEED_COUNT)) >= HSI_POSTS
    assert posts_of(await queries.state(org="ice")) == {"ice-ero-ead"}
    # and HSI answers as a top-level organisation without a short name
    own = await queries.state(org="ice-hsi", as_of="2025-06-15")
    assert own["org"] == {
        "org": "ice-hsi",
        "name": "Homeland Security Investigations",
        "short_name": None,
        "parent": None,
    }
    assert posts_of(own) == HSI_POSTS
    assert tenure_posts(await queries.history(org="ice-hsi")) >= HSI_POSTS
    before = await queries.state(org="ice-hsi", known_at=SEED_COUNT)
    assert (before["org"]["short_name"], before["org"]["parent"]) == ("HSI", "ice")
    # and the whole state still holds every post
    assert posts_of(await queries.state(as_of="2025-06-15")) >= ICE_POSTS


async def test_a_top_level_org_takes_its_subtree_along(seeded_log: EventLog) -> None:
    # given ICE made top-level, then put back under DHS
    (cleared,) = await append(seeded_log, [record("org.updated", org="ice", parent=None)])
    queries = await current(seeded_log)
    assert posts_of(await queries.state(org="dhs")) == {"dhs-secretary"}
    assert posts_of(await queries.state(org="ice")) == ICE_POSTS
    assert (await queries.state(org="ice-hsi"))["org"]["parent"] == "ice"
    assert (await queries.state(org="ice"))["org"]["short_name"] == "ICE"
    (back,) = await append(seeded_log, [record("org.updated", org="ice", parent="dhs")])
    queries = await current(seeded_log)
    assert posts_of(await queries.state(org="dhs")) >= ICE_POSTS
    # and each position answers with the tree of its own
    assert posts_of(await queries.state(org="dhs", known_at=cleared - 1)) >= ICE_POSTS
    assert posts_of(await queries.state(org="dhs", known_at=cleared)) == {"dhs-secretary"}
    assert posts_of(await queries.state(org="dhs", known_at=back)) >= ICE_POSTS


async def test_a_cleared_short_name_is_no_longer_suggested(seeded_log: EventLog) -> None:
    # given an organisation whose short name is not in its id
    await append(
        seeded_log,
        [record("org.registered", org="oversight", name="Oversight Board", short_name="OVB")],
    )
    queries = await current(seeded_log)
    with pytest.raises(UnknownEntity, match="did you mean oversight"):
        await queries.state(org="OVB")
    # when the short name is cleared
    await append(seeded_log, [record("org.updated", org="oversight", short_name=None)])
    queries = await current(seeded_log)
    # then it is suggested by its name, and no longer by the short name
    with pytest.raises(UnknownEntity) as caught:
        await queries.state(org="OVB")
    assert "did you mean" not in str(caught.value)
    with pytest.raises(UnknownEntity, match=r"did you mean oversight \(Oversight Board\)"):
        await queries.state(org="Oversight")


async def test_incremental_rows_equal_a_rebuild_after_clearings(seeded_log: EventLog) -> None:
    # given projections caught up after each of several moves and clearings
    runner = await runner_for(seeded_log.store)
    await runner.catch_up()
    batches = [
        [record("org.updated", org="ice-hsi", parent=None, short_name=None)],
        [record("org.updated", org="ice", parent=None)],
        [record("org.updated", org="ice-hsi", parent="dhs", short_name="HSI")],
        [
            record("org.updated", org="ice", parent="white-house"),
            record("org.updated", org="ice", short_name=None, parent=None),
        ],
    ]
    for batch in batches:
        await append(seeded_log, batch)
        await runner.catch_up()
    incremental = await dump(seeded_log.store, runner.projections)
    # when everything is rebuilt in small pages, then the rows are the same
    await ProjectionRunner(seeded_log.store, builtins(), page=2).rebuild()
    assert await dump(seeded_log.store, runner.projections) == incremental
    queries = await current(seeded_log)
    assert posts_of(await queries.state(org="dhs")) == {"dhs-secretary", *HSI_POSTS}
    assert (await queries.state(org="ice"))["org"]["parent"] is None
