"""The feed entries read model: one entry per claim, versioned so archive pages can be frozen.

Each claim becomes one feed entry whose id is ``urn:uuid:<event id of its claim.reported>``,
so it never changes across rebuilds, hosts and formats. After every event of a claim the
entry's full render input (a JSON *doc*) is stored as a new version; an archive page can then
be rendered "as known at position P" and stays byte-identical once it is full. An entry's
current doc is its version at ``last_position``: docs are the bulk of this model, so none is
stored twice.

The names and labels of people, posts, organisations and sources are copied into the doc when
a claim event happens. A later rename therefore changes no existing entry: feed readers only
see an entry change when its claim changes (its ``updated`` moves with it).

Every entry joins the scopes it ever belonged to — ``all``, ``person:<id>``, ``post:<id>``
and ``org:<id>`` for its organisation and each ancestor — with a rank in the order it joined.
Membership is never withdrawn (a correction that moves a claim to another person leaves it in
the first person's feed, where the correction is news), so archive pages never reshuffle.

Archive page ``n`` of a scope holds ranks ``50(n-1)+1 .. 50n`` and is frozen once rank
``50n + 1`` exists. An entry that changes while its rank lies on a frozen page is filed again
under the scope's next rank (its old filing is kept, *superseded*, for the frozen page): so
the newest version of every entry is on a page that is not frozen, or is the version a frozen
page shows, and a reader rebuilding a feed from its archives never keeps a stale version.

Stored payloads are read as plain data, never re-validated: the renderer must cope with
whatever the log holds, including text the write path would refuse.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from leaderlog._json import dumps, loads
from leaderlog.events import RecordedEvent, format_time
from leaderlog.projections._feed_entry_fold import (
    CLAIM_EVENTS,
    ENTITY_EVENTS,
    Clock,
    Entity,
    Entry,
    Page,
    apply_claim,
    apply_entity,
    as_text,
    path_text,
    payload,
    referenced_entities,
)
from leaderlog.projections.base import Projection, ProjectionTransaction

__all__ = [
    "CLOCK",
    "CURRENT_DOC",
    "ENTITIES",
    "ENTRIES",
    "HEADS",
    "PAGE_SIZE",
    "SCOPES",
    "VERSIONS",
    "FeedEntriesProjection",
]

ENTITIES = "p_feed_entries_entities"
ENTRIES = "p_feed_entries_current"
VERSIONS = "p_feed_entries_versions"
SCOPES = "p_feed_entries_scopes"
HEADS = "p_feed_entries_heads"
CLOCK = "p_feed_entries_clock"
# Joined to ENTRIES (as ``c``): the entry's current doc, as ``v.doc``.
CURRENT_DOC = f"JOIN {VERSIONS} v ON v.claim = c.claim AND v.position = c.last_position"
# Keep IN (...) lists well under every backend's parameter limit.
_CHUNK = 500
# Entries per archive page (RFC 5005 paging, see leaderlog.feeds).
PAGE_SIZE = 50


def _chunks(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


class FeedEntriesProjection(Projection):
    name: ClassVar[str] = "feed_entries"
    version: ClassVar[int] = 15

    def schema(self) -> Sequence[str]:
        return (
            f"CREATE TABLE IF NOT EXISTS {ENTITIES} (kind TEXT NOT NULL, id TEXT NOT NULL, "
            "position BIGINT NOT NULL, recorded_at TEXT NOT NULL, path TEXT, doc TEXT NOT NULL, "
            "PRIMARY KEY (kind, id, position))",
            f"CREATE TABLE IF NOT EXISTS {ENTRIES} (claim TEXT PRIMARY KEY, seq BIGINT NOT NULL, "
            "reported_position BIGINT NOT NULL, last_position BIGINT NOT NULL, "
            "last_recorded_at TEXT NOT NULL, person TEXT, post TEXT, org TEXT, org_path TEXT)",
            f"CREATE TABLE IF NOT EXISTS {VERSIONS} (claim TEXT NOT NULL, "
            "position BIGINT NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (claim, position))",
            f"CREATE TABLE IF NOT EXISTS {SCOPES} (scope TEXT NOT NULL, claim TEXT NOT NULL, "
            "rank BIGINT NOT NULL, joined_position BIGINT NOT NULL, joined_at TEXT NOT NULL, "
            "last_position BIGINT NOT NULL, superseded INTEGER NOT NULL DEFAULT 0, "
            "PRIMARY KEY (scope, rank))",
            f"CREATE INDEX IF NOT EXISTS {SCOPES}_claim ON {SCOPES} (claim)",
            f"CREATE TABLE IF NOT EXISTS {CLOCK} (name TEXT PRIMARY KEY, "
            "position BIGINT NOT NULL, stamp TEXT NOT NULL)",
            f"CREATE TABLE IF NOT EXISTS {HEADS} (scope TEXT PRIMARY KEY, "
            "entries BIGINT NOT NULL, last_position BIGINT NOT NULL, "
            "last_recorded_at TEXT NOT NULL)",
        )

    def query_indexes(self) -> Sequence[str]:
        # Applying never reads these: ranks are counted from HEADS, and entries are only
        # listed by seq, rank or recency when a feed is served; entities by kind and position
        # when a page or the OPML asks whether any has changed since they were last read.
        return (
            f"CREATE INDEX IF NOT EXISTS {ENTITIES}_moved ON {ENTITIES} (kind, position)",
            f"CREATE INDEX IF NOT EXISTS {ENTRIES}_seq ON {ENTRIES} (seq)",
            f"CREATE INDEX IF NOT EXISTS {SCOPES}_recent ON {SCOPES} (scope, last_position)",
        )

    def tables(self) -> Sequence[str]:
        return (ENTITIES, ENTRIES, VERSIONS, SCOPES, HEADS, CLOCK)

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        relevant = [e for e in events if e.type in ENTITY_EVENTS or e.type in CLAIM_EVENTS]
        if not relevant:
            return
        clock = Clock()
        for name, position, stamp in await tx.fetchall(
            f"SELECT name, position, stamp FROM {CLOCK} WHERE name IN ('clock', 'entry_clock')"
        ):
            moment = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
            if name == "clock":
                clock.position, clock.text, clock.last = int(position), stamp, moment
            else:
                clock.last_entry = moment
        # A move in the organisation tree rewrites paths across the subtree, so it is applied
        # on its own, between the runs of ordinary events around it.
        run: list[RecordedEvent] = []
        for recorded in relevant:
            if recorded.type == "org.updated" and "parent" in recorded.data:
                await self._apply_run(tx, run, clock)
                run = []
                await self._apply_move(tx, recorded, clock)
            else:
                run.append(recorded)
        await self._apply_run(tx, run, clock)
        if not clock.text:
            return
        kept = [("clock", clock.position, clock.text)]
        if clock.last_entry is not None:
            kept.append(("entry_clock", clock.position, format_time(clock.last_entry)))
        await tx.executemany(
            f"INSERT INTO {CLOCK} (name, position, stamp) VALUES (?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET position = excluded.position, stamp = excluded.stamp",
            kept,
        )

    # --- ordinary events -------------------------------------------------------------------

    async def _apply_run(
        self, tx: ProjectionTransaction, events: Sequence[RecordedEvent], clock: Clock
    ) -> None:
        if not events:
            return
        page = Page(clock=clock)
        payloads = [(recorded, payload(recorded)) for recorded in events]
        claims = {str(data.get("claim")) for r, data in payloads if r.type in CLAIM_EVENTS}
        await self._load_entries(tx, page, claims)
        # Every feed an entry ever joined shows its changes, so all of them move with it.
        await self._load_memberships(tx, page, sorted(claims))
        await self._load_entities(tx, page, referenced_entities(payloads, page.entries.values()))
        # Entries are numbered in the order they appear. Not from the "all" scope's count,
        # which also counts entries filed again: that would number them by page boundaries.
        rows = await tx.fetchall(f"SELECT position FROM {CLOCK} WHERE name = 'entries'")
        page.next_seq = (int(rows[0][0]) if rows else 0) + 1
        first_seq = page.next_seq
        for recorded, data in payloads:
            if recorded.type in ENTITY_EVENTS:
                apply_entity(page, recorded, data)
            else:
                apply_claim(page, recorded, data)
        await _write(tx, page)
        if page.next_seq != first_seq:
            await tx.execute(
                f"INSERT INTO {CLOCK} (name, position, stamp) VALUES ('entries', ?, '') "
                "ON CONFLICT (name) DO UPDATE SET position = excluded.position",
                (page.next_seq - 1,),
            )

    async def _load_entries(self, tx: ProjectionTransaction, page: Page, claims: set[str]) -> None:
        for chunk in _chunks(sorted(claims)):
            marks = ",".join("?" * len(chunk))
            for row in await tx.fetchall(
                f"SELECT c.claim, c.seq, c.reported_position, c.person, c.post, c.org, "
                f"c.org_path, v.doc FROM {ENTRIES} c {CURRENT_DOC} WHERE c.claim IN ({marks})",
                chunk,
            ):
                page.entries[row[0]] = Entry(
                    claim=row[0],
                    seq=int(row[1]),
                    reported_position=int(row[2]),
                    person=row[3],
                    post=row[4],
                    org=row[5],
                    org_path=[part for part in (row[6] or "").split("/") if part],
                    doc=loads(row[7]),
                )

    async def _load_memberships(
        self, tx: ProjectionTransaction, page: Page, claims: Sequence[str]
    ) -> None:
        for chunk in _chunks(claims):
            marks = ",".join("?" * len(chunk))
            for scope, claim, rank in await tx.fetchall(
                f"SELECT scope, claim, rank FROM {SCOPES} WHERE claim IN ({marks}) "
                "AND superseded = 0",
                chunk,
            ):
                page.memberships.setdefault(claim, set()).add(scope)
                page.ranks[(scope, claim)] = int(rank)

    async def _load_entities(
        self, tx: ProjectionTransaction, page: Page, wanted: set[tuple[str, str]]
    ) -> None:
        await self._load_latest(tx, page, wanted)
        # A post names its organisation, which is only known once the post is loaded.
        orgs = {
            ("org", str(entity.doc.get("org")))
            for entity in page.entities.values()
            if entity.kind == "post" and entity.doc.get("org")
        }
        await self._load_latest(tx, page, orgs - page.entities.keys())

    async def _load_latest(
        self, tx: ProjectionTransaction, page: Page, wanted: set[tuple[str, str]]
    ) -> None:
        by_kind: dict[str, list[str]] = {}
        for kind, entity_id in sorted(wanted):
            by_kind.setdefault(kind, []).append(entity_id)
        for kind, ids in by_kind.items():
            for chunk in _chunks(ids):
                marks = ",".join("?" * len(chunk))
                for row in await tx.fetchall(
                    f"SELECT id, position, recorded_at, doc FROM {ENTITIES} "
                    f"WHERE kind = ? AND id IN ({marks})",
                    [kind, *chunk],
                ):
                    known = page.entities.get((kind, row[0]))
                    if known is None or known.position < int(row[1]):
                        page.entities[(kind, row[0])] = Entity(
                            kind, row[0], int(row[1]), row[2], loads(row[3])
                        )

    # --- moves in the organisation tree ----------------------------------------------------

    async def _apply_move(
        self, tx: ProjectionTransaction, recorded: RecordedEvent, clock: Clock
    ) -> None:
        data = payload(recorded)
        org = str(data.get("org"))
        page = Page(clock=clock)
        await self._load_latest(tx, page, {("org", org)})
        parent = as_text(data.get("parent"))
        if parent:
            await self._load_latest(tx, page, {("org", parent)})
        current = page.entities.get(("org", org))
        old_path: list[str] = list(current.doc.get("path", [org])) if current else [org]
        apply_entity(page, recorded, data)
        new_path: list[str] = page.entities[("org", org)].doc["path"]
        if new_path == old_path:
            await _write(tx, page)
            return
        at = page.clock.stamp(recorded)
        # Descendants move with it: their paths keep the part below ``org``. Only an org's
        # newest version says where it is now: an older one under the old path belongs to
        # an org that has moved away since.
        old_prefix = path_text(old_path)
        rows = await tx.fetchall(
            f"SELECT e.id, e.doc FROM {ENTITIES} e "
            "WHERE e.kind = 'org' AND e.path LIKE ? AND e.id <> ? AND e.position = "
            f"(SELECT MAX(n.position) FROM {ENTITIES} n WHERE n.kind = 'org' AND n.id = e.id)",
            [old_prefix + "%", org],
        )
        for descendant, doc in sorted((str(row[0]), loads(row[1])) for row in rows):
            path = list(doc.get("path", []))
            if path[: len(old_path)] != old_path:
                continue
            moved = Entity(
                "org",
                descendant,
                recorded.position,
                at,
                {**doc, "path": new_path + path[len(old_path) :]},
            )
            page.entities[("org", descendant)] = moved
            page.entity_versions.append(moved)
        # Entries under the subtree join the scopes of their new ancestors.
        entry_rows = await tx.fetchall(
            f"SELECT claim, org_path FROM {ENTRIES} WHERE org_path LIKE ? ORDER BY seq",
            [old_prefix + "%"],
        )
        await self._load_memberships(tx, page, [row[0] for row in entry_rows])
        updates: list[tuple[str, str]] = []
        for claim, stored_path in entry_rows:
            path = [part for part in stored_path.split("/") if part]
            if path[: len(old_path)] != old_path:
                continue
            moved_path = new_path + path[len(old_path) :]
            updates.append((path_text(moved_path), claim))
            joined = page.memberships.setdefault(claim, set())
            for ancestor in moved_path:
                if f"org:{ancestor}" not in joined:
                    joined.add(f"org:{ancestor}")
                    page.joins.append((f"org:{ancestor}", claim, recorded.position, at))
                    page.bump(f"org:{ancestor}", recorded.position, at, joined=1)
        await _write(tx, page)
        if updates:
            await tx.executemany(f"UPDATE {ENTRIES} SET org_path = ? WHERE claim = ?", updates)


async def _write(tx: ProjectionTransaction, page: Page) -> None:
    if page.entity_versions:
        await tx.executemany(
            f"INSERT INTO {ENTITIES} (kind, id, position, recorded_at, path, doc) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (kind, id, position) DO UPDATE SET "
            "recorded_at = excluded.recorded_at, path = excluded.path, doc = excluded.doc",
            [
                (
                    e.kind,
                    e.id,
                    e.position,
                    e.recorded_at,
                    path_text(e.doc.get("path", [])) if e.kind == "org" else None,
                    dumps(e.doc),
                )
                for e in page.entity_versions
            ],
        )
    if page.versions:
        await tx.executemany(
            f"INSERT INTO {VERSIONS} (claim, position, doc) VALUES (?, ?, ?) "
            "ON CONFLICT (claim, position) DO UPDATE SET doc = excluded.doc",
            page.versions,
        )
    changed = [page.entries[claim] for claim in page.touched]
    if changed:
        await tx.executemany(
            f"INSERT INTO {ENTRIES} (claim, seq, reported_position, last_position, "
            "last_recorded_at, person, post, org, org_path) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (claim) DO UPDATE SET "
            "last_position = excluded.last_position, "
            "last_recorded_at = excluded.last_recorded_at, person = excluded.person, "
            "post = excluded.post, org = excluded.org, org_path = excluded.org_path",
            [
                (
                    e.claim,
                    e.seq,
                    e.reported_position,
                    e.doc["position"],
                    e.doc["updated"],
                    e.person,
                    e.post,
                    e.org,
                    path_text(e.org_path),
                )
                for e in changed
            ],
        )
    if page.joins or page.changes:
        await _file(tx, page)
    updates = [
        (position, claim)
        for claim, position in page.touched.items()
        if not (page.entries[claim].is_new and page.entries[claim].reported_position == position)
    ]
    if updates:
        await tx.executemany(
            f"UPDATE {SCOPES} SET last_position = ? WHERE claim = ? AND last_position < ? "
            "AND superseded = 0",
            [(position, claim, position) for position, claim in updates],
        )
    if page.heads:
        await tx.executemany(
            f"INSERT INTO {HEADS} (scope, entries, last_position, last_recorded_at) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (scope) DO UPDATE SET "
            f"entries = {HEADS}.entries + excluded.entries, "
            "last_position = excluded.last_position, "
            "last_recorded_at = excluded.last_recorded_at",
            [(scope, head[0], head[1], head[2]) for scope, head in sorted(page.heads.items())],
        )


async def _file(tx: ProjectionTransaction, page: Page) -> None:
    """Hand out ranks, in log order: one to each join, and one to each change of an entry
    whose rank lies on a frozen archive page (see the module docstring)."""
    # A scope's rank count is its entry count in HEADS (written after this, so still the
    # page's starting count) plus what this page has filed so far.
    counts: dict[str, int] = {}
    scopes = sorted({item[0] for item in (*page.joins, *page.changes)})
    for chunk in _chunks(scopes):
        marks = ",".join("?" * len(chunk))
        for scope, entries in await tx.fetchall(
            f"SELECT scope, entries FROM {HEADS} WHERE scope IN ({marks})", chunk
        ):
            counts[scope] = int(entries)
    # Each membership's current rank, as loaded with the memberships (changes only happen to
    # entries whose memberships were loaded, or that joined in this page).
    filed = page.ranks
    rows: list[tuple[Any, ...]] = []
    superseded: list[tuple[int, str, int]] = []
    events = [(item, False) for item in page.joins] + [(item, True) for item in page.changes]
    events.sort(key=lambda event: event[0][2])
    for (scope, claim, position, at), is_change in events:
        count = counts.get(scope, 0)
        if is_change:
            rank = filed.get((scope, claim))
            if rank is None or count <= -(-rank // PAGE_SIZE) * PAGE_SIZE:
                continue  # its page is still open: the change shows there
            superseded.append((position, scope, rank))
            page.heads[scope][0] += 1
        counts[scope] = filed[(scope, claim)] = count + 1
        rows.append((scope, claim, count + 1, position, at, position))
    if rows:
        await tx.executemany(
            f"INSERT INTO {SCOPES} (scope, claim, rank, joined_position, joined_at, "
            "last_position) VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )
    if superseded:
        # After the inserts: a filing superseded in this page may have been made in it too.
        # Its last position becomes the moment it was superseded, whatever changes before
        # it this page holds: so the row does not depend on where pages began.
        await tx.executemany(
            f"UPDATE {SCOPES} SET superseded = 1, last_position = ? WHERE scope = ? AND rank = ?",
            superseded,
        )
