"""The ``audit`` projection: every event indexed by source, publisher, actor, type and time.

Tables (prefixed ``p_audit_``):

- ``events``: one row per event. ``source`` is the event's own source when it names one,
  otherwise (a correction or retraction without a source) its claim's source as of that
  event: the one that reported it, or the one a correction attributed it to since (a
  correction without a source of its own that attributes the claim anew is found under
  the new source); ``publisher`` is that source's publisher. A request for comment also has
  its ``org`` and ``outcome`` ("did not respond", in the article's words, is ``no_response``).
- ``claims``: each claim's current source, status and attribution kind, so "claims from
  anonymous sources that were later retracted" is a join, not a scan of the log.
- ``sources``: publisher, URL and title of every source.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from leaderlog.events import RecordedEvent
from leaderlog.projections._sql import chunks, marks
from leaderlog.projections.base import Projection, ProjectionTransaction, payload, recorded_time
from leaderlog.projections.claim_versions import STATUS_AFTER

__all__ = ["AuditProjection"]

# The columns of p_audit_claims, in order.
_CLAIM_COLUMNS = ("claim", "source", "publisher", "attribution", "status", "person", "post")


class AuditProjection(Projection):
    name = "audit"
    version = 2

    def schema(self) -> Sequence[str]:
        return (
            "CREATE TABLE IF NOT EXISTS p_audit_sources (source TEXT PRIMARY KEY, "
            "publisher TEXT NOT NULL, url TEXT NOT NULL, title TEXT)",
            "CREATE TABLE IF NOT EXISTS p_audit_claims (claim TEXT PRIMARY KEY, "
            "source TEXT NOT NULL, publisher TEXT, attribution TEXT NOT NULL, "
            "status TEXT NOT NULL, person TEXT NOT NULL, post TEXT NOT NULL)",
            "CREATE TABLE IF NOT EXISTS p_audit_events (position BIGINT PRIMARY KEY, "
            "event_id TEXT NOT NULL, type TEXT NOT NULL, stream TEXT NOT NULL, claim TEXT, "
            "source TEXT, publisher TEXT, actor TEXT NOT NULL, recorded_at TEXT NOT NULL, "
            "org TEXT, outcome TEXT)",
        )

    def query_indexes(self) -> Sequence[str]:
        indexes = [
            f"CREATE INDEX IF NOT EXISTS p_audit_events_{column} "
            f"ON p_audit_events ({column}, position)"
            for column in ("type", "claim", "source", "publisher", "actor", "recorded_at")
        ]
        indexes += [
            f"CREATE INDEX IF NOT EXISTS p_audit_claims_{column} ON p_audit_claims ({column})"
            for column in ("status", "attribution")
        ]
        return indexes

    def tables(self) -> Sequence[str]:
        return ("p_audit_sources", "p_audit_claims", "p_audit_events")

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        if not events:
            return
        decoded = [(recorded, payload(recorded)) for recorded in events]
        publishers: dict[str, str] = {}
        new_sources: list[tuple[str, str, str, str | None]] = []
        claim_ids: set[str] = set()
        source_ids: set[str] = set()
        for recorded, data in decoded:
            if recorded.type == "source.registered":
                publishers[data["source"]] = data["publisher"]
                new_sources.append(
                    (data["source"], data["publisher"], data["url"], data.get("title"))
                )
            elif recorded.type in STATUS_AFTER and recorded.type != "claim.reported":
                claim_ids.add(data["claim"])
            named = data.get("source")
            if named:
                source_ids.add(named)
            attributed = _attributed(recorded.type, data)
            if attributed:
                source_ids.add(attributed)
        claims = await _load_claims(tx, claim_ids)
        source_ids -= publishers.keys()
        for chunk in chunks(sorted(source_ids)):
            for known, publisher in await tx.fetchall(
                "SELECT source, publisher FROM p_audit_sources "
                f"WHERE source IN ({marks(len(chunk))})",
                chunk,
            ):
                publishers[known] = publisher

        rows: list[tuple[Any, ...]] = []
        changed: dict[str, list[Any]] = {}
        for recorded, data in decoded:
            kind = recorded.type
            claim: str | None = None
            source: str | None = data.get("source")
            if kind == "claim.reported":
                claim = data["claim"]
                claims[claim] = [
                    claim,
                    source,
                    publishers.get(data["source"]),
                    data["attribution"]["kind"],
                    "reported",
                    data["person"],
                    data["post"],
                ]
                changed[claim] = claims[claim]
            elif kind in STATUS_AFTER:
                claim = data["claim"]
                row = claims[claim]
                row[4] = STATUS_AFTER[kind]
                if kind == "claim.corrected":
                    changes = data["changes"]
                    if changes.get("attribution") is not None:
                        row[3] = changes["attribution"]["kind"]
                    row[5] = changes.get("person") or row[5]
                    row[6] = changes.get("post") or row[6]
                    if attributed := changes.get("source"):
                        row[1], row[2] = attributed, publishers.get(attributed)
                changed[claim] = row
                if source is None:
                    # No source of its own: the claim's article answers "from where".
                    source = row[1]
                    publishers.setdefault(source, row[2])
            rows.append(
                (
                    recorded.position,
                    str(recorded.event_id),
                    kind,
                    recorded.stream,
                    claim,
                    source,
                    publishers.get(source) if source else None,
                    recorded.actor,
                    recorded_time(recorded),
                    data.get("org") if kind == "comment.requested" else None,
                    data.get("outcome"),
                )
            )
        if new_sources:
            await tx.executemany(
                "INSERT INTO p_audit_sources (source, publisher, url, title) VALUES (?, ?, ?, ?)",
                new_sources,
            )
        if changed:
            updates = ", ".join(f"{column} = excluded.{column}" for column in _CLAIM_COLUMNS[1:])
            await tx.executemany(
                f"INSERT INTO p_audit_claims ({', '.join(_CLAIM_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(_CLAIM_COLUMNS))}) "
                f"ON CONFLICT (claim) DO UPDATE SET {updates}",
                list(changed.values()),
            )
        await tx.executemany(
            "INSERT INTO p_audit_events (position, event_id, type, stream, claim, source, "
            "publisher, actor, recorded_at, org, outcome) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )


def _attributed(kind: str, data: dict[str, Any]) -> str | None:
    """The source a correction attributes its claim to from then on, if it names one."""
    changes = data.get("changes") if kind == "claim.corrected" else None
    return changes.get("source") if isinstance(changes, dict) else None


async def _load_claims(tx: ProjectionTransaction, claim_ids: set[str]) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for chunk in chunks(sorted(claim_ids)):
        for row in await tx.fetchall(
            f"SELECT {', '.join(_CLAIM_COLUMNS)} FROM p_audit_claims "
            f"WHERE claim IN ({marks(len(chunk))})",
            chunk,
        ):
            found[row[0]] = list(row)
    return found
