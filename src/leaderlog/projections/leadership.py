"""The ``leadership`` projection: entities, claim versions on two time axes, and a clock.

Tables (all prefixed ``p_leadership_``):

- ``orgs``, ``posts``, ``persons``: every version of every entity, valid for known positions
  ``known_from <= T < known_to`` (:data:`OPEN` while current), so names, titles and parents
  read as known at T; the first version's ``known_from`` is where it was registered.
- ``tails``: where each word of an organisation's, post's or person's id, names, short name,
  title and aliases starts, what follows it (as the audit projection keeps them:
  :func:`~leaderlog.projections._words.word_tails`, compared as names are, at most
  ``TAIL_LENGTH`` characters, as UTF-8 bytes), with the ``kind`` of ``entity`` (``org``,
  ``post`` or ``person``), for the entities' current versions only, so that what a user meant
  by an unknown id is found by a range of an index (the tails starting with the text given)
  rather than by reading every entity.
- ``sources``: the sources (never updated) and the position they were registered at.
- ``org_tree``: one row per (ancestor, org) pair, each org being its own ancestor too, valid
  for the same kind of known range, so an org's subtree as known at T is one index lookup
  whatever the depth, and a move does not rewrite what was known before it.
- ``claim_versions``: every version of every claim, valid for known positions
  ``known_from <= T < known_to`` (:data:`OPEN` while current). A row is the claim's full
  version as JSON (see :mod:`.claim_versions`) with ``post`` and ``person`` as columns so
  "the claims of these posts, as known at T" is an index range per post. The rows of one
  claim are also its lifecycle.
- ``clock``: the positions at which the recorded time of the log reached a new high. The log's
  high-water recorded time never decreases, so "as known at time T" maps to the last position
  recorded at or before T with one index probe, even when imported events carry older times.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from leaderlog._json import dumps, loads
from leaderlog.events import RecordedEvent
from leaderlog.projections._sql import chunks, marks
from leaderlog.projections._words import word_tails
from leaderlog.projections.base import Projection, ProjectionTransaction, payload, recorded_time
from leaderlog.projections.claim_versions import (
    CLAIM_EVENT_TYPES,
    ClaimVersion,
    FuzzyJSON,
    evolve_claim,
    fuzzy,
)

__all__ = ["OPEN", "LeadershipProjection"]

# known_to of a claim's current version: later than any position.
OPEN = 2**62


def _json(value: Any) -> str | None:
    return None if value is None else dumps(value)


def _given(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields an update gives, of those no update clears: None there is left out."""
    return {field: value for field, value in fields.items() if value is not None}


class LeadershipProjection(Projection):
    name = "leadership"
    version = 14

    def schema(self) -> Sequence[str]:
        return (
            "CREATE TABLE IF NOT EXISTS p_leadership_orgs (org TEXT NOT NULL, "
            "known_from BIGINT NOT NULL, known_to BIGINT NOT NULL, name TEXT NOT NULL, "
            "short_name TEXT, parent TEXT, labels TEXT, PRIMARY KEY (org, known_from))",
            "CREATE TABLE IF NOT EXISTS p_leadership_org_tree (ancestor TEXT NOT NULL, "
            "org TEXT NOT NULL, known_from BIGINT NOT NULL, known_to BIGINT NOT NULL, "
            "PRIMARY KEY (ancestor, org, known_from))",
            # apply looks up an org's ancestors when an organisation registers or moves.
            "CREATE INDEX IF NOT EXISTS p_leadership_org_tree_org "
            "ON p_leadership_org_tree (org, ancestor)",
            "CREATE TABLE IF NOT EXISTS p_leadership_posts (post TEXT NOT NULL, "
            "known_from BIGINT NOT NULL, known_to BIGINT NOT NULL, org TEXT NOT NULL, "
            "title TEXT NOT NULL, aliases TEXT NOT NULL, labels TEXT, "
            "PRIMARY KEY (post, known_from))",
            "CREATE TABLE IF NOT EXISTS p_leadership_persons (person TEXT NOT NULL, "
            "known_from BIGINT NOT NULL, known_to BIGINT NOT NULL, name TEXT NOT NULL, "
            "aliases TEXT NOT NULL, PRIMARY KEY (person, known_from))",
            # One table for the three kinds: a table of each, p_leadership_post_tails say,
            # would take the names of a user projection called leadership_post. The key
            # serves apply too: the words a renamed entity no longer has are deleted.
            "CREATE TABLE IF NOT EXISTS p_leadership_tails (kind TEXT NOT NULL, "
            "tail BYTEA NOT NULL, entity TEXT NOT NULL, PRIMARY KEY (kind, tail, entity))",
            "CREATE TABLE IF NOT EXISTS p_leadership_sources (source TEXT PRIMARY KEY, "
            "url TEXT NOT NULL, publisher TEXT NOT NULL, title TEXT, published TEXT, "
            "language TEXT, position BIGINT NOT NULL)",
            "CREATE TABLE IF NOT EXISTS p_leadership_claim_versions (claim TEXT NOT NULL, "
            "known_from BIGINT NOT NULL, known_to BIGINT NOT NULL, post TEXT NOT NULL, "
            "person TEXT NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (claim, known_from))",
            "CREATE TABLE IF NOT EXISTS p_leadership_clock (position BIGINT PRIMARY KEY, "
            "recorded_at TEXT NOT NULL)",
            # Which disputed claim version names which claim: a post's state finds the
            # disputes on other posts that name its claims (those of a version known at T).
            "CREATE TABLE IF NOT EXISTS p_leadership_dispute_links (named TEXT NOT NULL, "
            "claim TEXT NOT NULL, known_from BIGINT NOT NULL, "
            "PRIMARY KEY (named, claim, known_from))",
        )

    def query_indexes(self) -> Sequence[str]:
        return (
            "CREATE INDEX IF NOT EXISTS p_leadership_posts_org "
            "ON p_leadership_posts (org, known_from)",
            "CREATE INDEX IF NOT EXISTS p_leadership_claim_versions_post "
            "ON p_leadership_claim_versions (post, known_from)",
            "CREATE INDEX IF NOT EXISTS p_leadership_claim_versions_person "
            "ON p_leadership_claim_versions (person, known_from)",
            "CREATE INDEX IF NOT EXISTS p_leadership_clock_time "
            "ON p_leadership_clock (recorded_at, position)",
        )

    def tables(self) -> Sequence[str]:
        return (
            "p_leadership_orgs",
            "p_leadership_org_tree",
            "p_leadership_posts",
            "p_leadership_persons",
            "p_leadership_tails",
            "p_leadership_sources",
            "p_leadership_claim_versions",
            "p_leadership_clock",
            "p_leadership_dispute_links",
        )

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        if not events:
            return
        page = _Page()
        for recorded in events:
            kind = recorded.type
            if kind in CLAIM_EVENT_TYPES:
                page.claim_events.append(recorded)
                continue
            data = payload(recorded)
            position = recorded.position
            if kind in ("org.registered", "org.updated"):
                # Rare, and a move rewires a whole subtree: flush and apply it at once.
                await page.flush_entities(tx)
                await _apply_org(tx, kind, data, position)
            elif kind == "post.defined":
                page.posts.register(
                    data["post"],
                    position,
                    (
                        data["org"],
                        data["title"],
                        dumps(data.get("aliases", [])),
                        _json(data.get("labels")),
                    ),
                )
            elif kind == "post.updated":
                page.posts.update(
                    data["post"],
                    position,
                    _given(
                        {
                            "title": data.get("title"),
                            "aliases": _json(data.get("aliases")),
                            "labels": _json(data.get("labels")),
                        }
                    ),
                )
            elif kind == "person.registered":
                page.persons.register(
                    data["person"], position, (data["name"], dumps(data.get("aliases", [])))
                )
            elif kind == "person.updated":
                page.persons.update(
                    data["person"],
                    position,
                    _given({"name": data.get("name"), "aliases": _json(data.get("aliases"))}),
                )
            elif kind == "source.registered":
                published = fuzzy(data.get("published"))
                page.published[data["source"]] = published
                page.sources.append(
                    (
                        data["source"],
                        data["url"],
                        data["publisher"],
                        data.get("title"),
                        _json(published),
                        data.get("language"),
                        position,
                    )
                )
        await page.flush_entities(tx)
        await _apply_claims(tx, page)
        await _advance_clock(tx, events)


_ADD_TAIL = "INSERT INTO p_leadership_tails (kind, tail, entity) VALUES (?, ?, ?)"


class _Versions:
    """One versioned entity table's registrations and updates from a page, in log order.

    The entity's current version also has its word starts in ``p_leadership_tails`` (of the
    kind ``key``): those of the id and of the ``searched`` fields (an ``aliases`` field holds
    a JSON list).
    """

    def __init__(
        self, table: str, key: str, fields: tuple[str, ...], searched: tuple[str, ...]
    ) -> None:
        self.table, self.key, self.fields = table, key, fields
        self._searched = [fields.index(name) for name in searched]
        self.registered: list[tuple[Any, ...]] = []
        self.updates: list[tuple[str, int, dict[str, Any]]] = []

    def _tails(self, key: str, values: Sequence[Any]) -> list[bytes]:
        """The word starts of an entity with these field ``values``."""
        names: list[str] = []
        for index in self._searched:
            value = values[index]
            if self.fields[index] == "aliases":
                names.extend(loads(value) if value else ())
            elif value:
                names.append(str(value))
        return word_tails(key, *names)

    def register(self, key: str, position: int, values: tuple[Any, ...]) -> None:
        self.registered.append((key, position, OPEN, *values))

    def update(self, key: str, position: int, changes: dict[str, Any]) -> None:
        """``changes`` maps the fields an update gives to their new values (None clears
        one); the fields it leaves out stay as they were."""
        self.updates.append((key, position, changes))

    async def flush(self, tx: ProjectionTransaction) -> None:
        # A registration comes before the updates of its entity, so it is inserted first.
        columns = f"{self.key}, known_from, known_to, {', '.join(self.fields)}"
        insert = f"INSERT INTO {self.table} ({columns}) VALUES ({marks(3 + len(self.fields))})"
        if self.registered:
            await tx.executemany(insert, self.registered)
            await tx.executemany(
                _ADD_TAIL,
                [
                    (self.key, tail, row[0])
                    for row in self.registered
                    for tail in self._tails(row[0], row[3:])
                ],
            )
        if self.updates:
            await self._apply_updates(tx, columns, insert)
        self.registered, self.updates = [], []

    async def _apply_updates(self, tx: ProjectionTransaction, columns: str, insert: str) -> None:
        keys = sorted({key for key, _, _ in self.updates})
        current: dict[str, list[Any]] = {}
        for chunk in chunks(keys):
            for row in await tx.fetchall(
                f"SELECT {columns} FROM {self.table} "
                f"WHERE {self.key} IN ({marks(len(chunk))}) AND known_to = ?",
                (*chunk, OPEN),
            ):
                current[str(row[0])] = list(row)
        before = dict(current)
        new_rows: dict[tuple[str, int], list[Any]] = {}
        closing: list[tuple[int, str, int]] = []
        for key, position, changes in self.updates:
            previous = current[key]
            unsaved = new_rows.get((key, previous[1]))
            if unsaved is not None:
                unsaved[2] = position
            else:
                closing.append((position, key, previous[1]))
            values = [
                changes.get(field, old)
                for field, old in zip(self.fields, previous[3:], strict=True)
            ]
            current[key] = new_rows[(key, position)] = [key, position, OPEN, *values]
        if closing:
            await tx.executemany(
                f"UPDATE {self.table} SET known_to = ? WHERE {self.key} = ? AND known_from = ?",
                closing,
            )
        await tx.executemany(insert, list(new_rows.values()))
        # The words of each entity as it was before the page and as it is after it: most
        # updates change none of them (labels, a parent).
        gone: list[tuple[str, bytes, str]] = []
        added: list[tuple[str, bytes, str]] = []
        for key in keys:
            was = set(self._tails(key, before[key][3:]))
            now = set(self._tails(key, current[key][3:]))
            gone += [(self.key, tail, key) for tail in sorted(was - now)]
            added += [(self.key, tail, key) for tail in sorted(now - was)]
        if gone:
            await tx.executemany(
                "DELETE FROM p_leadership_tails WHERE kind = ? AND tail = ? AND entity = ?", gone
            )
        if added:
            await tx.executemany(_ADD_TAIL, added)


class _Page:
    """Rows collected from one page, written a table at a time."""

    def __init__(self) -> None:
        self.posts = _Versions(
            "p_leadership_posts",
            "post",
            ("org", "title", "aliases", "labels"),
            ("title", "aliases"),
        )
        self.persons = _Versions(
            "p_leadership_persons", "person", ("name", "aliases"), ("name", "aliases")
        )
        self.sources: list[tuple[Any, ...]] = []
        self.published: dict[str, FuzzyJSON | None] = {}
        self.claim_events: list[RecordedEvent] = []

    async def flush_entities(self, tx: ProjectionTransaction) -> None:
        await self.posts.flush(tx)
        await self.persons.flush(tx)
        if self.sources:
            await tx.executemany(
                "INSERT INTO p_leadership_sources (source, url, publisher, title, published, "
                "language, position) VALUES (?, ?, ?, ?, ?, ?, ?)",
                self.sources,
            )
        self.sources = []


async def _apply_org(
    tx: ProjectionTransaction, kind: str, data: dict[str, Any], position: int
) -> None:
    org, parent = data["org"], data.get("parent")
    orgs = _Versions(
        "p_leadership_orgs",
        "org",
        ("name", "short_name", "parent", "labels"),
        ("name", "short_name"),
    )
    if kind == "org.registered":
        labels = _json(data.get("labels"))
        orgs.register(org, position, (data["name"], data.get("short_name"), parent, labels))
        await orgs.flush(tx)
        await tx.execute(
            "INSERT INTO p_leadership_org_tree (ancestor, org, known_from, known_to) "
            "VALUES (?, ?, ?, ?)",
            (org, org, position, OPEN),
        )
        if parent:
            await tx.execute(
                "INSERT INTO p_leadership_org_tree (ancestor, org, known_from, known_to) "
                "SELECT ancestor, ?, ?, ? FROM p_leadership_org_tree "
                "WHERE org = ? AND known_to = ?",
                (org, position, OPEN, parent, OPEN),
            )
        return
    changes = _given({"name": data.get("name"), "labels": _json(data.get("labels"))})
    # A short name or parent given as null clears it: the organisation goes without a
    # short name, or becomes top-level.
    changes.update((field, data[field]) for field in ("short_name", "parent") if field in data)
    orgs.update(org, position, changes)
    await orgs.flush(tx)
    if "parent" not in data:
        return
    # Detach the subtree from its old ancestors (as known until now), then hang it under
    # the new parent's (none when it becomes top-level).
    await tx.execute(
        "UPDATE p_leadership_org_tree SET known_to = ? WHERE known_to = ? "
        "AND org IN (SELECT org FROM p_leadership_org_tree WHERE ancestor = ? AND known_to = ?) "
        "AND ancestor IN (SELECT ancestor FROM p_leadership_org_tree "
        "WHERE org = ? AND ancestor <> ? AND known_to = ?)",
        (position, OPEN, org, OPEN, org, org, OPEN),
    )
    if parent is None:
        return
    await tx.execute(
        "INSERT INTO p_leadership_org_tree (ancestor, org, known_from, known_to) "
        "SELECT above.ancestor, below.org, ?, ? FROM p_leadership_org_tree above, "
        "p_leadership_org_tree below WHERE above.org = ? AND above.known_to = ? "
        "AND below.ancestor = ? AND below.known_to = ?",
        (position, OPEN, parent, OPEN, org, OPEN),
    )


async def _published_dates(
    tx: ProjectionTransaction, page: _Page, sources: set[str]
) -> dict[str, FuzzyJSON | None]:
    known = dict(page.published)
    missing = sorted(sources - known.keys())
    for chunk in chunks(missing):
        for source, published in await tx.fetchall(
            "SELECT source, published FROM p_leadership_sources "
            f"WHERE source IN ({marks(len(chunk))})",
            chunk,
        ):
            known[source] = loads(published) if published else None
    return known


async def _apply_claims(tx: ProjectionTransaction, page: _Page) -> None:
    if not page.claim_events:
        return
    decoded = [(recorded, payload(recorded)) for recorded in page.claim_events]
    claim_ids = sorted({data["claim"] for _, data in decoded})
    sources = {data["source"] for _, data in decoded if data.get("source")}
    # A correction attributing its claim to another source counts from that one's date.
    sources |= {
        data["changes"]["source"]
        for _, data in decoded
        if isinstance(data.get("changes"), dict) and data["changes"].get("source")
    }
    current: dict[str, ClaimVersion] = {}
    for chunk in chunks(claim_ids):
        for (doc,) in await tx.fetchall(
            "SELECT doc FROM p_leadership_claim_versions "
            f"WHERE claim IN ({marks(len(chunk))}) AND known_to = ?",
            (*chunk, OPEN),
        ):
            version = ClaimVersion(loads(doc))
            current[version.claim] = version
    published = await _published_dates(tx, page, sources)

    new_rows: dict[tuple[str, int], list[Any]] = {}
    closing: list[tuple[int, str, int]] = []
    links: list[tuple[str, str, int]] = []
    for recorded, data in decoded:
        claim = data["claim"]
        previous = current.get(claim)
        version = evolve_claim(
            previous,
            recorded.type,
            data,
            position=recorded.position,
            recorded_at=recorded_time(recorded),
            actor=recorded.actor,
            published=published.get,
        )
        if previous is not None:
            row = new_rows.get((claim, previous.known_from))
            if row is not None:
                row[2] = recorded.position
            else:
                closing.append((recorded.position, claim, previous.known_from))
        new_rows[(claim, recorded.position)] = [
            claim,
            recorded.position,
            OPEN,
            version.post,
            version.person,
            version.doc,
        ]
        current[claim] = version
        if version.status == "disputed":
            links += [
                (named, claim, recorded.position)
                for named in dict.fromkeys(version.disputes[-1]["conflicts_with"])
            ]
    if closing:
        await tx.executemany(
            "UPDATE p_leadership_claim_versions SET known_to = ? "
            "WHERE claim = ? AND known_from = ?",
            closing,
        )
    for row in new_rows.values():
        row[5] = dumps(row[5])
    await tx.executemany(
        "INSERT INTO p_leadership_claim_versions (claim, known_from, known_to, post, person, "
        "doc) VALUES (?, ?, ?, ?, ?, ?)",
        list(new_rows.values()),
    )
    if links:
        await tx.executemany(
            "INSERT INTO p_leadership_dispute_links (named, claim, known_from) VALUES (?, ?, ?)",
            links,
        )


async def _advance_clock(tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
    rows = await tx.fetchall(
        "SELECT recorded_at FROM p_leadership_clock ORDER BY position DESC LIMIT 1"
    )
    high = str(rows[0][0]) if rows else ""
    highs: list[tuple[int, str]] = []
    for recorded in events:
        stamp = recorded_time(recorded)
        if stamp > high:
            high = stamp
            highs.append((recorded.position, stamp))
    if highs:
        await tx.executemany(
            "INSERT INTO p_leadership_clock (position, recorded_at) VALUES (?, ?)", highs
        )
