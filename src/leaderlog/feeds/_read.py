"""Reads of the feed entries read model (never a replay of the log)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from leaderlog._json import loads
from leaderlog.errors import BuiltByAnotherVersion, StoreError
from leaderlog.projections.feed_entries import (
    CLOCK,
    CURRENT_DOC,
    ENTITIES,
    ENTRIES,
    HEADS,
    SCOPES,
    VERSIONS,
    FeedEntriesProjection,
)
from leaderlog.store import EventStore
from leaderlog.store.base import checked_store

__all__ = ["EntityRow", "FeedReader", "Head", "PageInfo"]

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
# Keep IN (...) lists well under every backend's parameter limit.
_CHUNK = 500


def parse_time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(dt.UTC)


@dataclass(frozen=True, slots=True)
class Head:
    """A scope's size and the last event its subscription document depends on."""

    entries: int
    position: int
    recorded_at: dt.datetime


@dataclass(frozen=True, slots=True)
class PageInfo:
    """Where a full archive page was frozen: the position at which the next page began."""

    position: int
    recorded_at: dt.datetime


@dataclass(frozen=True, slots=True)
class EntityRow:
    kind: str
    id: str
    doc: dict[str, Any]
    position: int
    # The stamp of the event at ``position``, as the feeds date it.
    at: dt.datetime


class FeedReader:
    def __init__(self, store: EventStore) -> None:
        self.store = checked_store(store, "FeedService")

    async def checkpoint(self) -> int | None:
        """The feed entries' checkpoint (None before they were ever built); raises
        :class:`BuiltByAnotherVersion` while another leaderlog version's build is in the tables."""
        try:
            rows = await self.store.query(
                "SELECT position, version FROM projection_checkpoints WHERE name = ?",
                (FeedEntriesProjection.name,),
            )
        except StoreError:
            raise
        except Exception:
            # The checkpoint table appears with the first catch-up; until then nothing is known.
            return None
        if not rows:
            return None
        if int(rows[0][1]) != FeedEntriesProjection.version:
            # Nothing changes them back but this version's rebuild (its restart does).
            raise BuiltByAnotherVersion(
                f"the feed entries were built by another leaderlog version ({rows[0][1]}; "
                f"this one reads {FeedEntriesProjection.version}); run one version against a "
                "database",
                public="the feeds were rebuilt by another version of leaderlog; this server "
                "cannot answer from them until it is restarted",
            )
        return int(rows[0][0])

    async def clock(self) -> tuple[int, dt.datetime]:
        """The position and stamp of the last event the feeds took in (0 and 1970 before any)."""
        rows = await self.store.query(f"SELECT position, stamp FROM {CLOCK} WHERE name = 'clock'")
        return (int(rows[0][0]), parse_time(rows[0][1])) if rows else (0, EPOCH)

    async def latest_stamp(self) -> dt.datetime:
        """The latest time any document of the feeds is dated by: the last event's stamp, or
        the last entry's, which a burst of claims puts ahead of it (1970 before any)."""
        rows = await self.store.query(
            f"SELECT stamp FROM {CLOCK} WHERE name IN ('clock', 'entry_clock')"
        )
        return max((parse_time(row[0]) for row in rows), default=EPOCH)

    async def head(self, scope: str) -> Head | None:
        """The scope's head; None for a subject the feeds do not know. The scope of every
        claim is there before its first claim: empty, and dated by the last event the feeds
        took in (the organisations and people that come first), as it has no entry to be
        dated by; 1970 only while the log is empty."""
        rows = await self.store.query(
            f"SELECT entries, last_position, last_recorded_at FROM {HEADS} WHERE scope = ?",
            (scope,),
        )
        if not rows:
            return Head(0, *await self.clock()) if scope == "all" else None
        return Head(int(rows[0][0]), int(rows[0][1]), parse_time(rows[0][2]))

    async def entity(
        self, kind: str, entity_id: str, at: int | None = None
    ) -> dict[str, Any] | None:
        """The entity's doc as known at position ``at`` (now when None)."""
        rows = await self.store.query(
            f"SELECT doc FROM {ENTITIES} WHERE kind = ? AND id = ? AND position <= ? "
            "ORDER BY position DESC LIMIT 1",
            (kind, entity_id, at if at is not None else 2**62),
        )
        return loads(rows[0][0]) if rows else None

    async def entities_moved(self, kinds: Sequence[str], at: int | None = None) -> int:
        """The position of the last event that changed an entity of these kinds, up to
        ``at`` (now when None); 0 before any. :meth:`entities` answers the same at every
        position from there until the next such event."""
        # A MAX a kind, each the end of that kind's run in the (kind, position) index: asked
        # over ``kind IN (...)`` and ordered by position, SQLite, which plans without
        # statistics, read every entity of those kinds and sorted them, on every request.
        each = " UNION ALL ".join(
            [f"SELECT MAX(position) AS moved FROM {ENTITIES} WHERE kind = ? AND position <= ?"]
            * len(kinds)
        )
        bound = at if at is not None else 2**62
        rows = await self.store.query(
            f"SELECT MAX(moved) FROM ({each}) AS kinds",
            [value for kind in kinds for value in (kind, bound)],
        )
        return int(rows[0][0] or 0)

    async def entities(self, kinds: Sequence[str], at: int | None = None) -> list[EntityRow]:
        """The doc of every entity of these kinds as known at position ``at`` (now when
        None), by kind then id, each with the position it was last changed at."""
        marks = ",".join("?" * len(kinds))
        rows = await self.store.query(
            f"SELECT e.kind, e.id, e.doc, e.position, e.recorded_at FROM {ENTITIES} e "
            f"WHERE e.kind IN ({marks}) "
            f"AND e.position = (SELECT MAX(l.position) FROM {ENTITIES} l "
            "WHERE l.kind = e.kind AND l.id = e.id AND l.position <= ?)",
            (*kinds, at if at is not None else 2**62),
        )
        # Sorted here: ORDER BY would follow a PostgreSQL database's collation.
        rows = sorted(rows, key=lambda row: (str(row[0]), str(row[1])))
        return [
            EntityRow(row[0], row[1], loads(row[2]), int(row[3]), parse_time(row[4]))
            for row in rows
        ]

    async def recent(self, scope: str, limit: int) -> list[dict[str, Any]]:
        """The current docs of the ``limit`` entries of a scope changed most recently."""
        # The entries are picked in a subquery with a LIMIT before their docs are joined:
        # PostgreSQL estimates the join to the current version (on claim and position at
        # once) at one row, and joined first, reading every current version of the log and
        # sorting them all to keep 20 (half a second for the whole log's scope at 200,000
        # events), where SQLite walks the scope's index. The LIMIT bounds what it expects.
        rows = await self.store.query(
            f"SELECT v.doc FROM (SELECT claim, last_position, rank FROM {SCOPES} "
            "WHERE scope = ? AND superseded = 0 ORDER BY last_position DESC, rank DESC "
            f"LIMIT ?) s JOIN {ENTRIES} c ON c.claim = s.claim {CURRENT_DOC} "
            "ORDER BY s.last_position DESC, s.rank DESC",
            (scope, limit),
        )
        return [loads(row[0]) for row in rows]

    async def current(self, claims: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The current doc of each of ``claims`` the feeds know, by claim."""
        found: dict[str, dict[str, Any]] = {}
        for first in range(0, len(claims), _CHUNK):
            chunk = claims[first : first + _CHUNK]
            rows = await self.store.query(
                f"SELECT c.claim, v.doc FROM {ENTRIES} c {CURRENT_DOC} "
                f"WHERE c.claim IN ({','.join('?' * len(chunk))})",
                tuple(chunk),
            )
            found.update((str(claim), loads(doc)) for claim, doc in rows)
        return found

    async def page_info(self, scope: str, first: int, last: int) -> PageInfo | None:
        rows = await self.store.query(
            f"SELECT joined_position, joined_at FROM {SCOPES} WHERE scope = ? "
            "AND rank BETWEEN ? AND ? ORDER BY joined_position DESC LIMIT 1",
            (scope, first, last),
        )
        return PageInfo(int(rows[0][0]), parse_time(rows[0][1])) if rows else None

    async def page(self, scope: str, first: int, last: int, at: int | None) -> list[dict[str, Any]]:
        """Docs of ranks ``first..last``, newest first: as known at ``at``, or current."""
        # The page's entries are picked first, as in recent(): a rank range estimated as
        # wide as in any scope would also have PostgreSQL compile the query (JIT).
        entries = (
            f"(SELECT claim, rank FROM {SCOPES} WHERE scope = ? AND rank BETWEEN ? AND ? "
            "ORDER BY rank DESC LIMIT ?) s"
        )
        picked = (scope, first, last, max(0, last - first + 1))
        if at is None:
            rows = await self.store.query(
                f"SELECT v.doc FROM {entries} JOIN {ENTRIES} c ON c.claim = s.claim "
                f"{CURRENT_DOC} ORDER BY s.rank DESC",
                picked,
            )
        else:
            rows = await self.store.query(
                f"SELECT (SELECT v.doc FROM {VERSIONS} v WHERE v.claim = s.claim "
                "AND v.position <= ? ORDER BY v.position DESC LIMIT 1) "
                f"FROM {entries} ORDER BY s.rank DESC",
                (at, *picked),
            )
        return [loads(row[0]) for row in rows if row[0] is not None]
