"""Property: for random valid logs, incremental state = rebuilt state = a plain fold of events.

Each example builds a real SQLite log from random valid records appended in random batches
(catching the projections up after each), then checks three ways of getting the state agree:
the incrementally maintained projections, the projections after ``rebuild``, and a direct
fold of the events up to a random position with the pure rules.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import tempfile
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leaderlog.errors import UnknownEntity
from leaderlog.events import PostDefined, SourceRegistered, format_time
from leaderlog.log import EventLog
from leaderlog.projections import BUILTIN, ProjectionRunner, Queries
from leaderlog.projections.claim_versions import fuzzy, latest_versions
from leaderlog.projections.leadership_rules import post_state, tenures
from tests.projections.logs import append, record
from tests.projections.test_runner import dump

ORGS = [("root", None), ("branch", "root"), ("leaf", "branch")]
POSTS = [("chief", "root"), ("deputy", "branch"), ("head", "leaf")]
PEOPLE = ["ann", "bob", "cyd", "dee"]
SOURCES = [("daily", "2025-03-04"), ("weekly", "2025-04"), ("annual", "2025"), ("blog", None)]
START = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)

dates = st.one_of(
    st.none(),
    st.builds(
        lambda date, qualifier: {"date": date, "qualifier": qualifier},
        st.sampled_from(["2025-02-10", "2025-03", "2025-04-30", "2025", "2024-12"]),
        st.sampled_from(["on", "about", "before", "after"]),
    ),
    st.just({"date": None, "text": "soon"}),
)


def base_records(
    source_fields: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The organisations, posts, people and sources claims refer to; each source published
    under its own name, unless ``source_fields`` gives it other fields."""
    found = []
    for org, parent in ORGS:
        data: dict[str, Any] = {"org": org, "name": org.title()}
        if parent:
            data["parent"] = parent
        found.append(record("org.registered", **data))
    for post, org in POSTS:
        found.append(record("post.defined", post=post, org=org, title=post.title()))
    for person in PEOPLE:
        found.append(record("person.registered", person=person, name=person.title()))
    for source, published in SOURCES:
        data = {"source": source, "url": f"https://example.com/{source}", "publisher": source}
        data.update((source_fields or {}).get(source, {}))
        if published:
            data["published"] = {"date": published}
        found.append(record("source.registered", **data))
    return found


@st.composite
def claim_records(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A valid sequence of claim events (and a few entity updates)."""
    found: list[dict[str, Any]] = []
    claims: dict[str, str] = {}  # live claim -> kind
    everything: list[str] = []
    for number in range(draw(st.integers(min_value=1, max_value=14))):
        live = sorted(claims)
        step = draw(
            st.sampled_from(
                ["report"] * 3
                + (["confirm", "correct", "dispute", "retract"] if live else [])
                + ["update"]
            )
        )
        if step == "report":
            claim = f"c{number}"
            kind = draw(st.sampled_from(["appointment", "departure", "incumbency"]))
            data: dict[str, Any] = {
                "claim": claim,
                "source": draw(st.sampled_from([s for s, _ in SOURCES])),
                "kind": kind,
                "person": draw(st.sampled_from(PEOPLE)),
                "post": draw(st.sampled_from([p for p, _ in POSTS])),
                "capacity": draw(
                    st.sampled_from(["permanent", "acting", "interim", "unspecified"])
                ),
                "modality": draw(st.sampled_from(["occurred", "announced", "expected", "rumored"])),
                "attribution": {"kind": draw(st.sampled_from(["official", "anonymous", "outlet"]))},
            }
            effective = draw(dates)
            if effective is not None:
                data["effective"] = effective
            if kind == "departure":
                data["cause"] = draw(st.sampled_from(["retirement", "reassignment", "unknown"]))
            found.append(record("claim.reported", **data))
            claims[claim] = kind
            everything.append(claim)
        elif step == "confirm":
            claim = draw(st.sampled_from(live))
            # Every record says something new, so no two share a content-derived event id.
            data = {
                "claim": claim,
                "source": draw(st.sampled_from([s for s, _ in SOURCES])),
                "quote": f"confirmed, step {number}",
            }
            effective = draw(dates)
            if effective is not None:
                data["effective"] = effective
            found.append(record("claim.confirmed", **data))
        elif step == "correct":
            claim = draw(st.sampled_from(live))
            changes: dict[str, Any] = {}
            for name, values in (
                ("person", PEOPLE),
                ("post", [p for p, _ in POSTS]),
                ("capacity", ["permanent", "acting", "unspecified"]),
                ("modality", ["occurred", "expected"]),
            ):
                if draw(st.booleans()):
                    changes[name] = draw(st.sampled_from(values))
            if draw(st.booleans()):
                changes["effective"] = draw(dates)
            if draw(st.booleans()):
                # Sources of every kind of published date: a change without a date of its
                # own then counts from another source's.
                changes["source"] = draw(st.sampled_from([s for s, _ in SOURCES]))
            if draw(st.booleans()) or not changes:
                kind = draw(st.sampled_from(["appointment", "departure", "incumbency"]))
                changes["kind"] = kind
                changes["cause"] = "unknown" if kind == "departure" else None
                claims[claim] = kind
            found.append(
                record("claim.corrected", claim=claim, changes=changes, reason=f"fix {number}")
            )
        elif step == "dispute":
            claim = draw(st.sampled_from(live))
            others = [other for other in everything if other != claim]
            conflicts = (
                draw(st.lists(st.sampled_from(others), max_size=2, unique=True)) if others else []
            )
            found.append(
                record(
                    "claim.disputed", claim=claim, reason=f"no {number}", conflicts_with=conflicts
                )
            )
        elif step == "retract":
            claim = draw(st.sampled_from(live))
            found.append(record("claim.retracted", claim=claim, reason=f"wrong {number}"))
            del claims[claim]
        else:
            person = draw(st.sampled_from(PEOPLE))
            found.append(record("person.updated", person=person, name=f"{person.title()} {number}"))
    return found


def _unnamed(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{key: value for key, value in item.items() if key != "name"} for item in items]


def _without_names(state: dict[str, Any]) -> dict[str, Any]:
    return {**state, "holders": _unnamed(state["holders"]), "pending": _unnamed(state["pending"])}


async def _fold_up_to(log: EventLog, position: int, as_of: dt.date) -> dict[str, Any]:
    """The straightforward way: decode the events up to ``position`` and fold them."""
    events = [event for event in await log.store.read_all() if event.position <= position]
    published: dict[str, Any] = {}
    posts: dict[str, bool] = {}
    folded = []
    for recorded in events:
        event = recorded.event()
        if isinstance(event, SourceRegistered):
            published[event.source] = fuzzy(event.data().get("published"))
        if isinstance(event, PostDefined):
            posts[event.post] = True
        folded.append(
            (
                recorded.position,
                format_time(recorded.recorded_at),
                recorded.actor,
                event.type,
                event.data(),
            )
        )
    by_post: dict[str, list[Any]] = defaultdict(list)
    every_claim = latest_versions(folded, published)
    for version in every_claim.values():
        by_post[version.post].append(version)
    return {
        post: {
            "state": post_state(by_post.get(post, []), as_of, every_claim),
            "tenures": tenures(by_post.get(post, [])),
        }
        for post in sorted(posts)
    }


async def _check(
    folder: Path,
    batches: list[list[dict[str, Any]]],
    pages: tuple[int, int],
    probe: tuple[int, int],
) -> None:
    async with await EventLog.open(f"sqlite:///{folder / 'log.db'}") as log:
        runner = ProjectionRunner(log.store, [cls() for cls in BUILTIN.values()], page=pages[0])
        moment = START
        for batch in batches:
            moment += dt.timedelta(hours=7)
            await append(log, batch, recorded_at=moment, actor="prop")
            await runner.catch_up()
        incremental = await dump(log.store, runner.projections)
        head, _ = await log.store.head()

        # incremental == rebuilt
        rebuilt_runner = ProjectionRunner(
            log.store, [cls() for cls in BUILTIN.values()], page=pages[1]
        )
        await rebuilt_runner.rebuild()
        assert await dump(log.store, runner.projections) == incremental

        # rebuilt == a plain fold up to a chosen position, for a chosen effective date
        position = probe[0] % (head + 1)
        as_of = dt.date(2024, 12, 1) + dt.timedelta(days=probe[1])
        expected = await _fold_up_to(log, position, as_of)
        queries = Queries(log.store)
        state = await queries.state(as_of=as_of, known_at=position)
        answered = {
            post["post"]["post"]: _without_names(
                {key: post[key] for key in ("holders", "pending", "vacancy", "conflicts")}
            )
            for post in state["posts"]
        }
        assert answered == {post: found["state"] for post, found in expected.items()}
        # and a subtree's state is its posts' in the whole state, disputes linked across
        # the subtree's edge included
        for org, _ in ORGS:
            try:
                scoped = await queries.state(org=org, as_of=as_of, known_at=position)
            except UnknownEntity:
                continue  # not registered yet at that position
            for post in scoped["posts"]:
                shown = {key: post[key] for key in ("holders", "pending", "vacancy", "conflicts")}
                assert _without_names(shown) == answered[post["post"]["post"]], (org, post)
        for post, found in expected.items():
            history = await queries.history(post=post, known_at=position)
            strip = {"name", "post_title", "org"}
            got = [{k: v for k, v in t.items() if k not in strip} for t in history["tenures"]]
            assert sorted(got, key=repr) == sorted(found["tenures"], key=repr)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    claims=claim_records(),
    cuts=st.lists(st.integers(min_value=0, max_value=30), max_size=4),
    pages=st.tuples(st.integers(min_value=1, max_value=9), st.integers(min_value=1, max_value=50)),
    probe=st.tuples(
        st.integers(min_value=0, max_value=1000), st.integers(min_value=0, max_value=400)
    ),
)
def test_incremental_equals_rebuild_equals_fold(
    claims: list[dict[str, Any]], cuts: list[int], pages: tuple[int, int], probe: tuple[int, int]
) -> None:
    records = [*base_records(), *claims]
    edges = sorted({0, len(records), *(min(cut, len(records)) for cut in cuts)})
    batches = [records[start:end] for start, end in itertools.pairwise(edges) if end > start]
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(_check(Path(folder), batches, pages, probe))
