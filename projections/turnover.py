"""Turnover per organisation: how many tenures, how long they last, how many are acting.

A user projection, loaded by name: ``leaderlog rebuild turnover`` builds it once, and from
then on the query commands, ``rebuild`` and servers keep it current. Read it with plain SQL::

    SELECT org, tenures, average_days, acting_share FROM p_turnover_orgs ORDER BY org;

It keeps its own copy of what it needs (sources, each claim's current version) because a
projection must not read another projection's tables: they may stand at other positions.
Tenures come from the same rules as ``leaderlog history`` (leaderlog.projections.leadership_rules).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from leaderlog.events import RecordedEvent
from leaderlog.projections.base import (
    Projection,
    ProjectionTransaction,
    chunks,
    marks,
    payload,
    recorded_time,
)
from leaderlog.projections.claim_versions import (
    CLAIM_EVENT_TYPES,
    ClaimVersion,
    FuzzyJSON,
    evolve_claim,
    fuzzy,
)
from leaderlog.projections.leadership_rules import ACTING_CAPACITIES, fold_tenures

__all__ = ["PROJECTION", "TurnoverProjection"]


class TurnoverProjection(Projection):
    name = "turnover"
    # 3: counted with the rules that read a departure reported twice as one end and never
    # let report order decide; 4: rival departures give way to a confirmed one; 5: a claim
    # attributed anew on a later page counts from its new source's published date; 6: a
    # tenure lasts from and to the days the rules count it from (a vaguely published date
    # at the latest from the day it was recorded); 7: rival departures not yet confirmed end
    # one tenure, not a second one of which only the end is known; 8: a change that takes
    # effect by a confirmation alone did not happen before its source was published (a
    # confirmed return after a departure is a new tenure); 9: only a holding certainly
    # after the earlier of two disputed departures makes them two ends.
    version = 9

    def schema(self) -> Sequence[str]:
        return (
            "CREATE TABLE IF NOT EXISTS p_turnover_sources (source TEXT PRIMARY KEY, "
            "published TEXT)",
            "CREATE TABLE IF NOT EXISTS p_turnover_posts (post TEXT PRIMARY KEY, "
            "org TEXT NOT NULL, tenures BIGINT NOT NULL, closed BIGINT NOT NULL, "
            "total_days BIGINT NOT NULL, acting BIGINT NOT NULL)",
            "CREATE INDEX IF NOT EXISTS p_turnover_posts_org ON p_turnover_posts (org)",
            "CREATE TABLE IF NOT EXISTS p_turnover_claims (claim TEXT PRIMARY KEY, "
            "post TEXT NOT NULL, doc TEXT NOT NULL)",
            # apply reloads every claim of a changed post, so it needs this index itself.
            "CREATE INDEX IF NOT EXISTS p_turnover_claims_post ON p_turnover_claims (post)",
            "CREATE TABLE IF NOT EXISTS p_turnover_orgs (org TEXT PRIMARY KEY, "
            "tenures BIGINT NOT NULL, closed BIGINT NOT NULL, average_days DOUBLE PRECISION, "
            "acting BIGINT NOT NULL, acting_share DOUBLE PRECISION)",
        )

    def tables(self) -> Sequence[str]:
        return ("p_turnover_sources", "p_turnover_posts", "p_turnover_claims", "p_turnover_orgs")

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        published: dict[str, FuzzyJSON | None] = {}
        sources: list[tuple[str, str | None]] = []
        posts: list[tuple[str, str]] = []
        claim_events: list[RecordedEvent] = []
        for recorded in events:
            if recorded.type in CLAIM_EVENT_TYPES:
                claim_events.append(recorded)
            elif recorded.type == "source.registered":
                data = payload(recorded)
                date = fuzzy(data.get("published"))
                published[data["source"]] = date
                sources.append((data["source"], json.dumps(date) if date else None))
            elif recorded.type == "post.defined":
                data = payload(recorded)
                posts.append((data["post"], data["org"]))
        if sources:
            await tx.executemany(
                "INSERT INTO p_turnover_sources (source, published) VALUES (?, ?)", sources
            )
        if posts:
            await tx.executemany(
                "INSERT INTO p_turnover_posts (post, org, tenures, closed, total_days, acting) "
                "VALUES (?, ?, 0, 0, 0, 0)",
                posts,
            )
        if claim_events:
            changed = await _apply_claims(tx, claim_events, published)
            await _recount(tx, changed)


async def _apply_claims(
    tx: ProjectionTransaction,
    claim_events: Sequence[RecordedEvent],
    published: dict[str, FuzzyJSON | None],
) -> set[str]:
    """Store each claim's latest version; returns the posts whose claims changed."""
    decoded = [(recorded, payload(recorded)) for recorded in claim_events]
    ids = sorted({data["claim"] for _, data in decoded})
    current: dict[str, ClaimVersion] = {}
    for chunk in chunks(ids):
        for (doc,) in await tx.fetchall(
            f"SELECT doc FROM p_turnover_claims WHERE claim IN ({marks(len(chunk))})", chunk
        ):
            version = ClaimVersion(json.loads(doc))
            current[version.claim] = version
    wanted = {data["source"] for _, data in decoded if data.get("source")}
    # A correction attributing its claim to another source counts from that one's date.
    wanted |= {
        data["changes"]["source"]
        for _, data in decoded
        if isinstance(data.get("changes"), dict) and data["changes"].get("source")
    }
    for chunk in chunks(sorted(source for source in wanted if source not in published)):
        for source, date in await tx.fetchall(
            "SELECT source, published FROM p_turnover_sources "
            f"WHERE source IN ({marks(len(chunk))})",
            chunk,
        ):
            published[source] = json.loads(date) if date else None
    changed: set[str] = set()
    for recorded, data in decoded:
        claim = data["claim"]
        previous = current.get(claim)
        if previous is not None:
            changed.add(previous.post)
        current[claim] = evolve_claim(
            previous,
            recorded.type,
            data,
            position=recorded.position,
            recorded_at=recorded_time(recorded),
            actor=recorded.actor,
            published=published.get,
        )
        changed.add(current[claim].post)
    await tx.executemany(
        "INSERT INTO p_turnover_claims (claim, post, doc) VALUES (?, ?, ?) "
        "ON CONFLICT (claim) DO UPDATE SET post = excluded.post, doc = excluded.doc",
        [(claim, current[claim].post, json.dumps(current[claim].doc)) for claim in ids],
    )
    return changed


async def _recount(tx: ProjectionTransaction, posts: set[str]) -> None:
    """Recompute the tenure counts of the changed posts, then of their organisations."""
    by_post: dict[str, list[ClaimVersion]] = defaultdict(list)
    for chunk in chunks(sorted(posts)):
        for (doc,) in await tx.fetchall(
            f"SELECT doc FROM p_turnover_claims WHERE post IN ({marks(len(chunk))})", chunk
        ):
            version = ClaimVersion(json.loads(doc))
            by_post[version.post].append(version)
    rows: list[tuple[int, int, int, int, str]] = []
    for post in sorted(posts):
        found = fold_tenures(by_post.get(post, []))
        closed = [
            (tenure.end_day, tenure.start_day)
            for tenure in found
            if tenure.start is not None and tenure.end is not None
        ]
        days = sum(max((end - start).days, 0) for end, start in closed if end and start)
        acting = sum(1 for tenure in found if tenure.capacity() in ACTING_CAPACITIES)
        rows.append((len(found), len(closed), days, acting, post))
    await tx.executemany(
        "UPDATE p_turnover_posts SET tenures = ?, closed = ?, total_days = ?, acting = ? "
        "WHERE post = ?",
        rows,
    )
    orgs: list[Any] = []
    for chunk in chunks(sorted(posts)):
        orgs += await tx.fetchall(
            "SELECT org, SUM(tenures), SUM(closed), SUM(total_days), SUM(acting) "
            "FROM p_turnover_posts WHERE org IN (SELECT org FROM p_turnover_posts "
            f"WHERE post IN ({marks(len(chunk))})) GROUP BY org",
            chunk,
        )
    await tx.executemany(
        "INSERT INTO p_turnover_orgs (org, tenures, closed, average_days, acting, acting_share) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (org) DO UPDATE SET tenures = excluded.tenures, "
        "closed = excluded.closed, average_days = excluded.average_days, "
        "acting = excluded.acting, acting_share = excluded.acting_share",
        [
            (
                org,
                int(count),
                int(closed),
                float(days) / int(closed) if closed else None,
                int(acting),
                float(acting) / int(count) if count else None,
            )
            for org, count, closed, days, acting in orgs
        ],
    )


PROJECTION = TurnoverProjection
