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
- ``actors`` and ``publishers``: each actor with how many events it appended, each publisher
  with how many sources it has, so a misspelt one is answered with the few there are rather
  than by grouping every event or source.
- ``combinations``: how many claim events there are of each type whose claim now has each
  status and attribution kind, so a filter combining them that matches nothing is answered
  at once rather than by reading every event of the type. A claim keeps the types of its
  events (``types``, comma-separated) to move them along when its status or attribution
  changes.
- ``claim_tails`` and ``source_tails``: where each word of a claim id, or of a source's id,
  publisher or title, starts, what follows it (:func:`word_tails`: compared as names are, at
  most ``TAIL_LENGTH`` characters, kept as UTF-8 bytes so that every database orders them
  byte by byte), so that what a user meant by an unknown id is found by a range of an index
  (the tails starting with a word given) rather than by reading every id or source. A claim's
  tails keep the position it was reported at ("as known at" a position).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from leaderlog.events import RecordedEvent
from leaderlog.projections._sql import chunks, marks
from leaderlog.projections._words import word_tails
from leaderlog.projections.base import Projection, ProjectionTransaction, payload, recorded_time
from leaderlog.projections.claim_versions import STATUS_AFTER

__all__ = ["AuditProjection"]

# The columns of p_audit_claims, in order.
_CLAIM_COLUMNS = (
    "claim",
    "source",
    "publisher",
    "attribution",
    "status",
    "person",
    "post",
    "types",
)
# Indexes of the columns the combinations are counted by, in a p_audit_claims row.
_ATTRIBUTION, _STATUS, _TYPES = 3, 4, 7


class AuditProjection(Projection):
    name = "audit"
    version = 4

    def schema(self) -> Sequence[str]:
        return (
            "CREATE TABLE IF NOT EXISTS p_audit_sources (source TEXT PRIMARY KEY, "
            "publisher TEXT NOT NULL, url TEXT NOT NULL, title TEXT)",
            "CREATE TABLE IF NOT EXISTS p_audit_claims (claim TEXT PRIMARY KEY, "
            "source TEXT NOT NULL, publisher TEXT, attribution TEXT NOT NULL, "
            "status TEXT NOT NULL, person TEXT NOT NULL, post TEXT NOT NULL, "
            "types TEXT NOT NULL)",
            "CREATE TABLE IF NOT EXISTS p_audit_events (position BIGINT PRIMARY KEY, "
            "event_id TEXT NOT NULL, type TEXT NOT NULL, stream TEXT NOT NULL, claim TEXT, "
            "source TEXT, publisher TEXT, actor TEXT NOT NULL, recorded_at TEXT NOT NULL, "
            "org TEXT, outcome TEXT)",
            "CREATE TABLE IF NOT EXISTS p_audit_actors (actor TEXT PRIMARY KEY, "
            "events BIGINT NOT NULL)",
            "CREATE TABLE IF NOT EXISTS p_audit_publishers (publisher TEXT PRIMARY KEY, "
            "sources BIGINT NOT NULL)",
            "CREATE TABLE IF NOT EXISTS p_audit_combinations (type TEXT NOT NULL, "
            "status TEXT NOT NULL, attribution TEXT NOT NULL, events BIGINT NOT NULL, "
            "PRIMARY KEY (type, status, attribution))",
            "CREATE TABLE IF NOT EXISTS p_audit_claim_tails (tail BYTEA NOT NULL, "
            "claim TEXT NOT NULL, reported BIGINT NOT NULL)",
            "CREATE TABLE IF NOT EXISTS p_audit_source_tails (tail BYTEA NOT NULL, "
            "source TEXT NOT NULL)",
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
        indexes += [
            f"CREATE INDEX IF NOT EXISTS p_audit_{kind}_tails_tail ON p_audit_{kind}_tails (tail)"
            for kind in ("claim", "source")
        ]
        return indexes

    def tables(self) -> Sequence[str]:
        return (
            "p_audit_sources",
            "p_audit_claims",
            "p_audit_events",
            "p_audit_actors",
            "p_audit_publishers",
            "p_audit_combinations",
            "p_audit_claim_tails",
            "p_audit_source_tails",
        )

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
        claim_tails: list[tuple[bytes, str, int]] = []
        changed: dict[str, list[Any]] = {}
        actors: Counter[str] = Counter()
        combinations: Counter[tuple[str, str, str]] = Counter()
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
                    kind,
                ]
                combinations[(kind, "reported", data["attribution"]["kind"])] += 1
                changed[claim] = claims[claim]
                claim_tails += [(tail, claim, recorded.position) for tail in word_tails(claim)]
            elif kind in STATUS_AFTER:
                claim = data["claim"]
                row = claims[claim]
                before = (row[_STATUS], row[_ATTRIBUTION])
                row[4] = STATUS_AFTER[kind]
                if kind == "claim.corrected":
                    changes = data["changes"]
                    if changes.get("attribution") is not None:
                        row[3] = changes["attribution"]["kind"]
                    row[5] = changes.get("person") or row[5]
                    row[6] = changes.get("post") or row[6]
                    if attributed := changes.get("source"):
                        row[1], row[2] = attributed, publishers.get(attributed)
                _move_combinations(combinations, row, before, kind)
                changed[claim] = row
                if source is None:
                    # No source of its own: the claim's article answers "from where".
                    source = row[1]
                    publishers.setdefault(source, row[2])
            actors[recorded.actor] += 1
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
            await _add_counts(
                tx,
                "p_audit_publishers",
                ("publisher",),
                "sources",
                Counter(publisher for _, publisher, _, _ in new_sources),
            )
            await tx.executemany(
                "INSERT INTO p_audit_source_tails (tail, source) VALUES (?, ?)",
                [
                    (tail, source)
                    for source, publisher, _, title in new_sources
                    for tail in word_tails(source, publisher, title)
                ],
            )
        if claim_tails:
            await tx.executemany(
                "INSERT INTO p_audit_claim_tails (tail, claim, reported) VALUES (?, ?, ?)",
                claim_tails,
            )
        await _add_counts(tx, "p_audit_actors", ("actor",), "events", actors)
        await _add_counts(
            tx, "p_audit_combinations", ("type", "status", "attribution"), "events", combinations
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


def _move_combinations(
    combinations: Counter[tuple[str, str, str]],
    row: list[Any],
    before: tuple[str, str],
    kind: str,
) -> None:
    """Count the claim's events (``kind`` the newest) under its status and attribution now,
    no longer under those it had ``before``."""
    after = (row[_STATUS], row[_ATTRIBUTION])
    if after != before:
        for earlier in row[_TYPES].split(","):
            combinations[(earlier, *before)] -= 1
            combinations[(earlier, *after)] += 1
    combinations[(kind, *after)] += 1
    row[_TYPES] = f"{row[_TYPES]},{kind}"


async def _add_counts(
    tx: ProjectionTransaction,
    table: str,
    keys: Sequence[str],
    counted: str,
    added: Counter[Any],
) -> None:
    """Add ``added`` (keyed by ``keys``, a tuple of them when several) to the ``counted``
    column of ``table``; a row counting nothing any more goes, as a rebuild would not make it."""
    deltas = [
        (*(key if isinstance(key, tuple) else (key,)), delta)
        for key, delta in sorted(added.items())
        if delta
    ]
    if not deltas:
        return
    columns = ", ".join((*keys, counted))
    await tx.executemany(
        f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' * (len(keys) + 1))}) "
        f"ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {counted} = {table}.{counted} + "
        f"excluded.{counted}",
        deltas,
    )
    if any(delta < 0 for *_, delta in deltas):
        await tx.execute(f"DELETE FROM {table} WHERE {counted} = 0")


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
