"""Property: audit, history and claim answers equal a brute-force reading of the raw log.

Each example builds a real SQLite log from random valid records (claims, corrections that move
a claim to another source, persons renamed, organisations moved in the tree, requests for
comment) appended in batches by several actors at recorded times hours apart. The reference
answers are worked out from ``store.read_all()`` with plain loops, and compared with
:class:`Queries`:

- ``audit`` with random combinations of every filter, walked page by page;
- ``claim`` as known at a random position: every step in order, with its source, actor and
  recorded time;
- ``history`` of each person, post and organisation as known at a random position: which
  claims it reads (the organisation tree as it then was) and the names as they then were.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from leaderlog.errors import UnknownEntity
from leaderlog.events import format_time
from leaderlog.log import EventLog
from leaderlog.projections import BUILTIN, InvalidQuery, ProjectionRunner, Queries
from leaderlog.projections import queries as queries_module
from leaderlog.projections.claim_versions import STATUS_AFTER, ClaimVersion, latest_versions
from leaderlog.projections.leadership_rules import changes_to_come_order, ordered_tenures
from tests.answer_schemas import assert_documented
from tests.projections.logs import append, record
from tests.projections.test_property import ORGS, POSTS, base_records, claim_records
from tests.store import postgres_schema

# Two sources share a publisher, so that a publisher filter is not a source filter.
SOURCES = [
    ("daily", "2025-03-04", "Daily Press"),
    ("weekly", "2025-04", "Daily Press"),
    ("annual", "2025", "Annual Review"),
    ("blog", None, "Blogger"),
]
ACTORS = ["cli", "desk", "alice"]
START = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
BATCH_STEP = dt.timedelta(hours=7)


def _base_records() -> list[dict[str, Any]]:
    return base_records(
        {
            source: {"publisher": publisher, "title": f"The {source} story"}
            for source, _, publisher in SOURCES
        }
    )


@st.composite
def more_records(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Claims, with requests for comment, renamed posts and organisations moved in between."""
    found = list(draw(claim_records()))
    for item in found:
        if item["type"] != "claim.corrected":
            continue
        # A correction published by a source of its own, or one that attributes the claim
        # anew: both move what the audit finds it under.
        if draw(st.booleans()):
            item["data"]["source"] = draw(st.sampled_from([s for s, _, _ in SOURCES]))
        if draw(st.booleans()):
            kind = draw(st.sampled_from(["official", "named", "anonymous", "outlet"]))
            item["data"]["changes"]["attribution"] = {"kind": kind, "parties": ["Someone"]}
    for number in range(draw(st.integers(min_value=0, max_value=4))):
        extra = draw(st.sampled_from(["comment", "move", "title"]))
        if extra == "comment":
            added = record(
                "comment.requested",
                source=draw(st.sampled_from([s for s, _, _ in SOURCES])),
                org=draw(st.sampled_from([o for o, _ in ORGS])),
                outcome=draw(st.sampled_from(["no_response", "declined", "denied", "confirmed"])),
            )
            # Asked again later: the same record, so an id of its own.
            added["event_id"] = str(draw(st.uuids(version=4)))
        elif extra == "move":
            # "leaf" under the root, back under "branch", or on top of a tree of its own;
            # an event id of its own, as a move back repeats an earlier record.
            added = record("org.updated", org="leaf", parent=draw(st.sampled_from([None, "root"])))
            added["event_id"] = str(draw(st.uuids(version=4)))
        else:
            post = draw(st.sampled_from([p for p, _ in POSTS]))
            added = record("post.updated", post=post, title=f"{post.title()} {number}")
        found.insert(draw(st.integers(min_value=0, max_value=len(found))), added)
    return found


class Reference:
    """What the raw log says, read with plain loops."""

    def __init__(self, events: list[Any]) -> None:
        self.events = events
        self.head = events[-1].position if events else 0

    def upto(self, position: int) -> list[Any]:
        return [event for event in self.events if event.position <= position]

    # --- audit ---------------------------------------------------------------------------

    def audit_rows(self) -> list[dict[str, Any]]:
        sources: dict[str, dict[str, Any]] = {}
        claim_source: dict[str, str] = {}
        status: dict[str, str] = {}
        attribution: dict[str, str] = {}
        rows = []
        for event in self.events:
            data = event.data
            claim = data.get("claim") if event.type in STATUS_AFTER else None
            source = data.get("source")
            if event.type == "source.registered":
                sources[data["source"]] = data
            if claim is not None:
                status[claim] = STATUS_AFTER[event.type]
                if event.type == "claim.reported":
                    claim_source[claim] = data["source"]
                    attribution[claim] = data["attribution"]["kind"]
                if event.type == "claim.corrected":
                    changes = data["changes"]
                    if changes.get("source"):
                        claim_source[claim] = changes["source"]
                    if changes.get("attribution"):
                        attribution[claim] = changes["attribution"]["kind"]
                if source is None:
                    source = claim_source[claim]
            rows.append(
                {
                    "position": event.position,
                    "event_id": str(event.event_id),
                    "type": event.type,
                    "stream": event.stream,
                    "recorded_at": format_time(event.recorded_at),
                    "actor": event.actor,
                    "claim": claim,
                    "source": source,
                    "publisher": sources[source]["publisher"] if source else None,
                    "url": sources[source]["url"] if source else None,
                    "title": sources[source].get("title") if source else None,
                    "org": data.get("org") if event.type == "comment.requested" else None,
                    "outcome": data.get("outcome"),
                }
            )
        for row in rows:
            # Status and attribution are the claim's now, not as of the event.
            row["claim_status"] = status.get(row["claim"]) if row["claim"] else None
            row["attribution"] = attribution.get(row["claim"]) if row["claim"] else None
        return rows

    def audit(self, filters: dict[str, Any]) -> list[dict[str, Any]]:
        def matches(row: dict[str, Any]) -> bool:
            for name in ("source", "publisher", "actor", "type"):
                if name in filters and row[name] != filters[name]:
                    return False
            if "status" in filters and row["claim_status"] != filters["status"]:
                return False
            if "attribution" in filters and row["attribution"] != filters["attribution"]:
                return False
            moment = row["recorded_at"]
            if "recorded_from" in filters and moment < filters["recorded_from"]:
                return False
            return not ("recorded_to" in filters and moment > filters["recorded_to"])

        return [row for row in self.audit_rows() if matches(row)]

    # --- claims --------------------------------------------------------------------------

    def claim_steps(self, claim: str, position: int) -> list[dict[str, Any]]:
        return [
            {
                "position": event.position,
                "type": event.type,
                "status": STATUS_AFTER[event.type],
                "recorded_at": format_time(event.recorded_at),
                "actor": event.actor,
                "source": event.data.get("source"),
            }
            for event in self.upto(position)
            if event.type in STATUS_AFTER and event.data["claim"] == claim
        ]

    def comments(self, sources: set[str], position: int) -> list[dict[str, Any]]:
        return [
            {
                "position": event.position,
                "source": event.data["source"],
                "org": event.data["org"],
                "outcome": event.data["outcome"],
            }
            for event in self.upto(position)
            if event.type == "comment.requested" and event.data["source"] in sources
        ]

    # --- history -------------------------------------------------------------------------

    def versions(self, position: int) -> dict[str, ClaimVersion]:
        published: dict[str, Any] = {}
        folded = []
        for event in self.upto(position):
            if event.type == "source.registered":
                published[event.data["source"]] = event.data.get("published")
            folded.append(
                (
                    event.position,
                    format_time(event.recorded_at),
                    event.actor,
                    event.type,
                    event.data,
                )
            )
        return latest_versions(folded, published)

    def entities(self, position: int) -> dict[str, dict[str, Any]]:
        """Each organisation's parent, each post's org and title, each person's name."""
        parents: dict[str, str | None] = {}
        posts: dict[str, dict[str, str]] = {}
        names: dict[str, str] = {}
        for event in self.upto(position):
            data = event.data
            if event.type == "org.registered":
                parents[data["org"]] = data.get("parent")
            elif event.type == "org.updated" and "parent" in data:
                parents[data["org"]] = data["parent"]
            elif event.type == "post.defined":
                posts[data["post"]] = {"org": data["org"], "title": data["title"]}
            elif event.type == "post.updated" and "title" in data:
                posts[data["post"]]["title"] = data["title"]
            elif event.type in ("person.registered", "person.updated") and "name" in data:
                names[data["person"]] = data["name"]
        return {"parents": parents, "posts": posts, "names": names}

    def subtree(self, org: str, parents: dict[str, str | None]) -> set[str]:
        found = set()
        for candidate in parents:
            walk: str | None = candidate
            while walk is not None:
                if walk == org:
                    found.add(candidate)
                    break
                walk = parents[walk]
        return found

    def history(
        self,
        position: int,
        *,
        person: str | None = None,
        post: str | None = None,
        org: str | None = None,
    ) -> dict[str, Any]:
        every = self.versions(position)
        known = self.entities(position)
        if org is not None:
            orgs = self.subtree(org, known["parents"])
            posts = {p for p, found in known["posts"].items() if found["org"] in orgs}
        groups: dict[tuple[str, str], list[ClaimVersion]] = defaultdict(list)
        for version in every.values():
            if person is not None and version.person != person:
                continue
            if post is not None and version.post != post:
                continue
            if org is not None and version.post not in posts:
                continue
            groups[(version.post, version.person)].append(version)
        cited = {source for group in groups.values() for v in group for source in v.sources}
        found_tenures, waiting = ordered_tenures(groups.values())
        waiting.sort(key=changes_to_come_order)
        for item in (*found_tenures, *waiting):
            item["name"] = known["names"].get(item["person"])
            item["post_title"] = known["posts"][item["post"]]["title"]
            item["org"] = known["posts"][item["post"]]["org"]
        return {"tenures": found_tenures, "pending": waiting, "sources": cited}


def _page_through(answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for answer in answers for event in answer["events"]]


async def _walk_audit(queries: Queries, filters: dict[str, Any], limit: int) -> list[Any]:
    pages = []
    after = 0
    while True:
        answer = await queries.audit(**filters, after=after, limit=limit)
        pages.append(answer)
        assert len(answer["events"]) <= limit
        if answer["next_after"] is None:
            break
        # A page that says more follows is full, and what follows is not empty.
        assert len(answer["events"]) == limit
        after = answer["next_after"]
    return _page_through(pages)


async def _check(
    url: str,
    batches: list[list[dict[str, Any]]],
    actors: list[str],
    asked: list[dict[str, Any]],
    probe: int,
) -> None:
    async with await EventLog.open(url) as log:
        runner = ProjectionRunner(log.store, [cls() for cls in BUILTIN.values()], page=3)
        moment = START
        for number, batch in enumerate(batches):
            moment += BATCH_STEP
            await append(log, batch, recorded_at=moment, actor=actors[number % len(actors)])
            await runner.catch_up()
        reference = Reference(await log.store.read_all())
        queries = Queries(log.store)
        rows = reference.audit_rows()
        used_actors = {row["actor"] for row in rows}
        times = sorted({row["recorded_at"] for row in rows})

        # --- audit: every event, then every filter and combinations of them, page by page
        everything = await queries.audit(limit=10_000)
        assert everything == {"filters": {}, "events": rows, "next_after": None}
        for wanted in asked:
            filters = dict(wanted["filters"])
            if filters.get("actor") not in (None, *used_actors):
                with pytest.raises(UnknownEntity):
                    await queries.audit(**filters)
                continue
            for bound, pick in (("recorded_from", "from_index"), ("recorded_to", "to_index")):
                if pick in wanted:
                    spot = times[wanted[pick] % len(times)]
                    shift = dt.timedelta(microseconds=wanted.get(f"{pick}_shift", 0))
                    filters[bound] = format_time(
                        dt.datetime.fromisoformat(spot.replace("Z", "+00:00")) + shift
                    )
            if (
                "recorded_from" in filters
                and "recorded_to" in filters
                and filters["recorded_from"] > filters["recorded_to"]
            ):
                try:
                    await queries.audit(**filters)
                except InvalidQuery:
                    continue
                raise AssertionError(f"{filters} was not refused")
            expected = reference.audit(filters)
            got = await _walk_audit(queries, filters, wanted["limit"])
            assert got == expected, filters
            # Found by reading the events in log order, as for many matching claims (see
            # Queries._scan_for_claims), the pages are the same.
            saved = queries_module._SCAN_FROM_CLAIMS
            queries_module._SCAN_FROM_CLAIMS = 1
            try:
                assert await _walk_audit(queries, filters, wanted["limit"]) == expected, filters
            finally:
                queries_module._SCAN_FROM_CLAIMS = saved
            whole = await queries.audit(**filters, limit=10_000)
            assert_documented("AuditAnswer", whole)
            assert whole["events"] == expected
            assert whole["next_after"] is None
            shown = {
                "from" if name == "recorded_from" else "to" if name == "recorded_to" else name: v
                for name, v in filters.items()
            }
            assert whole["filters"] == shown

        # --- claims, as known at a position
        position = probe % (reference.head + 1)
        known = reference.entities(position)
        claims = sorted({e.data["claim"] for e in reference.events if e.type == "claim.reported"})
        for claim in claims:
            steps = reference.claim_steps(claim, position)
            if not steps:
                try:
                    await queries.claim(claim, known_at=position)
                except UnknownEntity as error:
                    assert "it was reported at position" in str(error)
                    continue
                raise AssertionError(f"{claim} answered before it was reported")
            answer = await queries.claim(claim, known_at=position)
            assert_documented("ClaimAnswer", answer)
            keys = ("position", "type", "status", "recorded_at", "actor", "source")
            assert [{k: step[k] for k in keys} for step in answer["lifecycle"]] == steps
            assert answer["status"] == steps[-1]["status"]
            assert answer["known_at"]["position"] == position
            # The other claims whose latest dispute, as known then, names this one.
            disputed_by = sorted(
                (
                    {
                        "claim": other.claim,
                        "position": other.disputes[-1]["position"],
                        "source": other.disputes[-1]["source"],
                        "reason": other.disputes[-1]["reason"],
                    }
                    for other in reference.versions(position).values()
                    if other.status == "disputed" and claim in other.disputes[-1]["conflicts_with"]
                ),
                key=lambda dispute: (dispute["position"], dispute["claim"]),
            )
            assert answer["disputed_by"] == disputed_by
            cited = {s for s in answer["current"]["sources"]} | {
                step["source"] for step in steps if step["source"]
            }
            # Requests for comment are those of the claim's own sources.
            assert answer["comments"] == reference.comments(cited, position)
            cited |= {dispute["source"] for dispute in disputed_by if dispute["source"]}
            assert set(answer["sources"]) == cited
            # Named as known then, the person and post the claim is about now.
            version = reference.versions(position)[claim]
            assert answer["current"]["person"] == version.person
            assert answer["current"]["name"] == known["names"][version.person]
            assert answer["current"]["post_title"] == known["posts"][version.post]["title"]

        # --- histories, as known at a position
        subjects = [("person", p) for p in known["names"]]
        subjects += [("post", p) for p in known["posts"]]
        subjects += [("org", o) for o in known["parents"]]
        for kind, subject in subjects:
            named: dict[str, Any] = {kind: subject}
            expected_history = reference.history(position, **named)
            answer = await queries.history(**named, known_at=position)
            assert_documented("HistoryAnswer", answer)
            assert answer["tenures"] == expected_history["tenures"], (kind, subject)
            assert answer["pending"] == expected_history["pending"], (kind, subject)
            assert set(answer["sources"]) == expected_history["sources"], (kind, subject)
            if kind == "org":
                rest, pending, tenures = await queries.history_in_parts(
                    org=subject, known_at=position
                )
                assert list(tenures) == answer["tenures"]
                assert rest == {key: answer[key] for key in ("subject", "known_at", "sources")}
                assert list(pending) == answer["pending"]


def _audit_question() -> st.SearchStrategy[dict[str, Any]]:
    filters = st.fixed_dictionaries(
        {},
        optional={
            "source": st.sampled_from([s for s, _, _ in SOURCES]),
            "publisher": st.sampled_from(sorted({p for _, _, p in SOURCES})),
            "actor": st.sampled_from(ACTORS),
            "type": st.sampled_from(
                [
                    "claim.reported",
                    "claim.confirmed",
                    "claim.corrected",
                    "claim.disputed",
                    "claim.retracted",
                    "comment.requested",
                    "source.registered",
                    "person.updated",
                ]
            ),
            "status": st.sampled_from(list(dict.fromkeys(STATUS_AFTER.values()))),
            "attribution": st.sampled_from(["official", "anonymous", "outlet", "named"]),
        },
    )
    return st.fixed_dictionaries(
        {"filters": filters, "limit": st.integers(min_value=1, max_value=7)},
        optional={
            "from_index": st.integers(min_value=0, max_value=20),
            "from_index_shift": st.sampled_from([-1, 0, 1]),
            "to_index": st.integers(min_value=0, max_value=20),
            "to_index_shift": st.sampled_from([-1, 0, 1]),
        },
    )


_SETTINGS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# One example: the records after the base ones, where the batches are cut, who writes
# them, the audit questions asked and which position is probed.
_EXAMPLES = st.fixed_dictionaries(
    {
        "more": more_records(),
        "cuts": st.lists(st.integers(min_value=0, max_value=40), max_size=4),
        "actors": st.lists(st.sampled_from(ACTORS), min_size=1, max_size=3),
        "asked": st.lists(_audit_question(), min_size=1, max_size=6),
        "probe": st.integers(min_value=0, max_value=1000),
    }
)


def _batches(more: list[dict[str, Any]], cuts: list[int]) -> list[list[dict[str, Any]]]:
    records = [*_base_records(), *more]
    edges = sorted({0, len(records), *(min(cut, len(records)) for cut in cuts)})
    return [records[start:end] for start, end in itertools.pairwise(edges) if end > start]


async def _check_example(url: str, example: dict[str, Any]) -> None:
    batches = _batches(example["more"], example["cuts"])
    await _check(url, batches, example["actors"], example["asked"], example["probe"])


def _two_claims_one_disputing_the_other() -> dict[str, Any]:
    """c2 disputes c1, then c3 disputes c1 and is retracted, probed at the head: only c2's
    dispute of c1 holds. The source of c2's dispute asks for comment."""

    def reported(claim: str, person: str) -> dict[str, Any]:
        return record(
            "claim.reported",
            claim=claim,
            source="daily",
            kind="incumbency",
            person=person,
            post="chief",
            capacity="permanent",
            modality="occurred",
            attribution={"kind": "outlet"},
        )

    more = [
        reported("c1", "ann"),
        reported("c2", "bob"),
        reported("c3", "cyd"),
        record("claim.disputed", claim="c2", reason="no", source="weekly", conflicts_with=["c1"]),
        record("claim.disputed", claim="c3", reason="not so", conflicts_with=["c1", "c2"]),
        record("claim.retracted", claim="c3", reason="wrong"),
        # asked by the disputing claim's source alone: not one of c1's requests for comment
        record("comment.requested", source="weekly", org=ORGS[0][0], outcome="no_response"),
    ]
    return {
        "more": more,
        "cuts": [],
        "actors": ["cli"],
        "asked": [{"filters": {"type": "claim.disputed"}, "limit": 3}],
        "probe": len(_base_records()) + len(more),
    }


@settings(_SETTINGS, max_examples=30)
@given(example=_EXAMPLES)
@example(example=_two_claims_one_disputing_the_other())
def test_audit_history_and_claims_equal_a_reading_of_the_log(example: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(_check_example(f"sqlite:///{Path(folder) / 'log.db'}", example))


@settings(
    _SETTINGS,
    max_examples=8,
    # The fixture gives the server's URL only; each example makes a schema of its own.
    suppress_health_check=[*_SETTINGS.suppress_health_check, HealthCheck.function_scoped_fixture],
)
@given(example=_EXAMPLES)
def test_on_postgresql_too(postgres_url: str, example: dict[str, Any]) -> None:
    async def run() -> None:
        async with postgres_schema(postgres_url) as url:
            await _check_example(url, example)

    asyncio.run(run())
