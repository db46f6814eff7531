"""The feed entries read model: one entry per claim, versioned so archive pages can be frozen.

Each claim becomes one feed entry whose id is ``urn:uuid:<event id of its claim.reported>``,
so it never changes across rebuilds, hosts and formats. After every event of a claim the
entry's full render input (a JSON *doc*) is stored as a new version; an archive page can then
be rendered "as known at position P" and stays byte-identical once it is full.

The names and labels of people, posts, organisations and sources are copied into the doc when
a claim event happens. A later rename therefore changes no existing entry: feed readers only
see an entry change when its claim changes (its ``updated`` moves with it).

Every entry joins the scopes it ever belonged to — ``all``, ``person:<id>``, ``post:<id>``
and ``org:<id>`` for its organisation and each ancestor — with a rank in the order it joined.
Membership is never withdrawn (a correction that moves a claim to another person leaves it in
the first person's feed, where the correction is news), so archive pages never reshuffle.

Stored payloads are read as plain data, never re-validated: the renderer must cope with
whatever the log holds, including text the write path would refuse.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from leaderlog._json import dumps, loads
from leaderlog.errors import RecordError
from leaderlog.events import RecordedEvent, format_time, upcast
from leaderlog.projections.base import Projection, ProjectionTransaction

__all__ = [
    "ENTITIES",
    "ENTRIES",
    "HEADS",
    "SCOPES",
    "VERSIONS",
    "FeedEntriesProjection",
    "scopes_of",
]

ENTITIES = "p_feed_entries_entities"
ENTRIES = "p_feed_entries_current"
VERSIONS = "p_feed_entries_versions"
SCOPES = "p_feed_entries_scopes"
HEADS = "p_feed_entries_heads"

_ENTITY_EVENTS = {
    "org.registered": "org",
    "org.updated": "org",
    "post.defined": "post",
    "post.updated": "post",
    "person.registered": "person",
    "person.updated": "person",
    "source.registered": "source",
}
_CLAIM_EVENTS = {
    "claim.reported",
    "claim.confirmed",
    "claim.corrected",
    "claim.disputed",
    "claim.retracted",
}
_REPORTED_FIELDS = (
    "kind",
    "capacity",
    "cause",
    "effective",
    "modality",
    "attribution",
    "quote",
    "locator",
)
# Keep IN (...) lists well under every backend's parameter limit.
_CHUNK = 500


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _labels(value: object) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {str(key): text for key, text in value.items() if isinstance(text, str)}


def _chunks(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def scopes_of(person: str | None, post: str | None, org_path: Sequence[str]) -> list[str]:
    """Every scope an entry with this person, post and organisation path belongs to."""
    scopes = ["all"]
    if person:
        scopes.append(f"person:{person}")
    if post:
        scopes.append(f"post:{post}")
    scopes.extend(f"org:{org}" for org in org_path)
    return scopes


def _path_text(path: Sequence[str]) -> str:
    """``/dhs/ice/ice-hsi/``: a prefix query finds a whole subtree."""
    return "/" + "".join(f"{org}/" for org in path) if path else "/"


@dataclass
class _Entity:
    kind: str
    id: str
    position: int
    recorded_at: str
    doc: dict[str, Any]


@dataclass
class _Entry:
    claim: str
    seq: int
    reported_position: int
    doc: dict[str, Any]
    person: str | None
    post: str | None
    org: str | None
    org_path: list[str]
    is_new: bool = False


@dataclass
class _Page:
    """What one page of events changes, written with a handful of statements at the end."""

    entities: dict[tuple[str, str], _Entity] = field(default_factory=dict)
    entity_versions: list[_Entity] = field(default_factory=list)
    entries: dict[str, _Entry] = field(default_factory=dict)
    versions: list[tuple[str, int, str]] = field(default_factory=list)
    joins: list[tuple[str, str, int, str]] = field(default_factory=list)
    touched: dict[str, int] = field(default_factory=dict)
    # Scopes each corrected or new claim already belongs to (membership is never withdrawn).
    memberships: dict[str, set[str]] = field(default_factory=dict)
    heads: dict[str, list[Any]] = field(default_factory=dict)
    next_seq: int = 1

    def bump(self, scope: str, position: int, recorded_at: str, joined: int = 0) -> None:
        head = self.heads.setdefault(scope, [0, position, recorded_at])
        head[0] += joined
        head[1], head[2] = position, recorded_at


class FeedEntriesProjection(Projection):
    name: ClassVar[str] = "feed_entries"
    version: ClassVar[int] = 1

    def schema(self) -> Sequence[str]:
        return (
            f"CREATE TABLE IF NOT EXISTS {ENTITIES} (kind TEXT NOT NULL, id TEXT NOT NULL, "
            "position BIGINT NOT NULL, recorded_at TEXT NOT NULL, path TEXT, doc TEXT NOT NULL, "
            "PRIMARY KEY (kind, id, position))",
            f"CREATE INDEX IF NOT EXISTS {ENTITIES}_path ON {ENTITIES} (kind, path)",
            f"CREATE TABLE IF NOT EXISTS {ENTRIES} (claim TEXT PRIMARY KEY, seq BIGINT NOT NULL, "
            "reported_position BIGINT NOT NULL, last_position BIGINT NOT NULL, "
            "last_recorded_at TEXT NOT NULL, person TEXT, post TEXT, org TEXT, org_path TEXT, "
            "doc TEXT NOT NULL)",
            f"CREATE INDEX IF NOT EXISTS {ENTRIES}_seq ON {ENTRIES} (seq)",
            f"CREATE INDEX IF NOT EXISTS {ENTRIES}_org_path ON {ENTRIES} (org_path)",
            f"CREATE TABLE IF NOT EXISTS {VERSIONS} (claim TEXT NOT NULL, "
            "position BIGINT NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (claim, position))",
            f"CREATE TABLE IF NOT EXISTS {SCOPES} (scope TEXT NOT NULL, claim TEXT NOT NULL, "
            "rank BIGINT NOT NULL, joined_position BIGINT NOT NULL, joined_at TEXT NOT NULL, "
            "last_position BIGINT NOT NULL, PRIMARY KEY (scope, claim))",
            f"CREATE INDEX IF NOT EXISTS {SCOPES}_rank ON {SCOPES} (scope, rank)",
            f"CREATE INDEX IF NOT EXISTS {SCOPES}_recent ON {SCOPES} (scope, last_position)",
            f"CREATE INDEX IF NOT EXISTS {SCOPES}_claim ON {SCOPES} (claim)",
            f"CREATE TABLE IF NOT EXISTS {HEADS} (scope TEXT PRIMARY KEY, "
            "entries BIGINT NOT NULL, last_position BIGINT NOT NULL, "
            "last_recorded_at TEXT NOT NULL)",
        )

    def tables(self) -> Sequence[str]:
        return (ENTITIES, ENTRIES, VERSIONS, SCOPES, HEADS)

    async def apply(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        relevant = [e for e in events if e.type in _ENTITY_EVENTS or e.type in _CLAIM_EVENTS]
        # A move in the organisation tree rewrites paths across the subtree, so it is applied
        # on its own, between the runs of ordinary events around it.
        run: list[RecordedEvent] = []
        for recorded in relevant:
            if recorded.type == "org.updated" and "parent" in recorded.data:
                await self._apply_run(tx, run)
                run = []
                await self._apply_move(tx, recorded)
            else:
                run.append(recorded)
        await self._apply_run(tx, run)

    # --- ordinary events -------------------------------------------------------------------

    async def _apply_run(self, tx: ProjectionTransaction, events: Sequence[RecordedEvent]) -> None:
        if not events:
            return
        page = _Page()
        payloads = [(recorded, _payload(recorded)) for recorded in events]
        claims = {str(data.get("claim")) for r, data in payloads if r.type in _CLAIM_EVENTS}
        await self._load_entries(tx, page, claims)
        corrected = sorted(
            {str(data.get("claim")) for r, data in payloads if r.type == "claim.corrected"}
        )
        await self._load_memberships(tx, page, corrected)
        await self._load_entities(tx, page, _referenced_entities(payloads, page.entries.values()))
        rows = await tx.fetchall(f"SELECT entries FROM {HEADS} WHERE scope = 'all'")
        page.next_seq = (int(rows[0][0]) if rows else 0) + 1
        for recorded, data in payloads:
            if recorded.type in _ENTITY_EVENTS:
                _apply_entity(page, recorded, data)
            else:
                _apply_claim(page, recorded, data)
        await _write(tx, page)

    async def _load_entries(self, tx: ProjectionTransaction, page: _Page, claims: set[str]) -> None:
        for chunk in _chunks(sorted(claims)):
            marks = ",".join("?" * len(chunk))
            for row in await tx.fetchall(
                f"SELECT claim, seq, reported_position, person, post, org, org_path, doc "
                f"FROM {ENTRIES} WHERE claim IN ({marks})",
                chunk,
            ):
                page.entries[row[0]] = _Entry(
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
        self, tx: ProjectionTransaction, page: _Page, claims: Sequence[str]
    ) -> None:
        for chunk in _chunks(claims):
            marks = ",".join("?" * len(chunk))
            for scope, claim in await tx.fetchall(
                f"SELECT scope, claim FROM {SCOPES} WHERE claim IN ({marks})", chunk
            ):
                page.memberships.setdefault(claim, set()).add(scope)

    async def _load_entities(
        self, tx: ProjectionTransaction, page: _Page, wanted: set[tuple[str, str]]
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
        self, tx: ProjectionTransaction, page: _Page, wanted: set[tuple[str, str]]
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
                        page.entities[(kind, row[0])] = _Entity(
                            kind, row[0], int(row[1]), row[2], loads(row[3])
                        )

    # --- moves in the organisation tree ----------------------------------------------------

    async def _apply_move(self, tx: ProjectionTransaction, recorded: RecordedEvent) -> None:
        data = _payload(recorded)
        org = str(data.get("org"))
        page = _Page()
        await self._load_latest(tx, page, {("org", org)})
        parent = _text(data.get("parent"))
        if parent:
            await self._load_latest(tx, page, {("org", parent)})
        current = page.entities.get(("org", org))
        old_path: list[str] = list(current.doc.get("path", [org])) if current else [org]
        _apply_entity(page, recorded, data)
        new_path: list[str] = page.entities[("org", org)].doc["path"]
        if new_path == old_path:
            await _write(tx, page)
            return
        at = format_time(recorded.recorded_at)
        # Descendants move with it: their paths keep the part below ``org``.
        old_prefix = _path_text(old_path)
        rows = await tx.fetchall(
            f"SELECT id, position, recorded_at, doc FROM {ENTITIES} "
            "WHERE kind = 'org' AND path LIKE ? AND id <> ?",
            [old_prefix + "%", org],
        )
        latest: dict[str, tuple[int, dict[str, Any]]] = {}
        for row in rows:
            if row[0] not in latest or latest[row[0]][0] < int(row[1]):
                latest[row[0]] = (int(row[1]), loads(row[3]))
        for descendant, (_, doc) in sorted(latest.items()):
            path = list(doc.get("path", []))
            if path[: len(old_path)] != old_path:
                continue
            moved = _Entity(
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
        for claim, path_text in entry_rows:
            path = [part for part in path_text.split("/") if part]
            if path[: len(old_path)] != old_path:
                continue
            moved_path = new_path + path[len(old_path) :]
            updates.append((_path_text(moved_path), claim))
            joined = page.memberships.setdefault(claim, set())
            for ancestor in moved_path:
                if f"org:{ancestor}" not in joined:
                    joined.add(f"org:{ancestor}")
                    page.joins.append((f"org:{ancestor}", claim, recorded.position, at))
                    page.bump(f"org:{ancestor}", recorded.position, at, joined=1)
        await _write(tx, page)
        if updates:
            await tx.executemany(f"UPDATE {ENTRIES} SET org_path = ? WHERE claim = ?", updates)


# --- folding events into a page ------------------------------------------------------------


def _payload(recorded: RecordedEvent) -> dict[str, Any]:
    try:
        data = upcast(recorded.type, recorded.schema_version, recorded.data)
    except RecordError:
        # A payload from a newer leaderlog: read what is recognisable.
        data = dict(recorded.data)
    return data if isinstance(data, dict) else {}


def _referenced_entities(
    payloads: Iterable[tuple[RecordedEvent, dict[str, Any]]], entries: Iterable[_Entry]
) -> set[tuple[str, str]]:
    wanted: set[tuple[str, str]] = set()
    for recorded, data in payloads:
        kind = _ENTITY_EVENTS.get(recorded.type)
        if kind is not None:
            wanted.add((kind, str(data.get(kind))))
            for key, other in (("parent", "org"), ("org", "org")):
                if _text(data.get(key)):
                    wanted.add((other, str(data[key])))
            continue
        for key in ("source", "person", "post"):
            if _text(data.get(key)):
                wanted.add((key, str(data[key])))
        changes = data.get("changes")
        if isinstance(changes, Mapping):
            for key in ("person", "post"):
                if _text(changes.get(key)):
                    wanted.add((key, str(changes[key])))
    for entry in entries:
        wanted.update(("org", org) for org in entry.org_path)
    return wanted


def _apply_entity(page: _Page, recorded: RecordedEvent, data: dict[str, Any]) -> None:
    kind = _ENTITY_EVENTS[recorded.type]
    entity_id = str(data.get(kind))
    known = page.entities.get((kind, entity_id))
    doc = dict(known.doc) if known else {}
    if kind == "org":
        for key in ("name", "short_name"):
            if key in data:
                doc[key] = _text(data[key])
        if "labels" in data:
            doc["labels"] = _labels(data["labels"])
        if "parent" in data or "path" not in doc:
            parent = _text(data.get("parent")) if "parent" in data else doc.get("parent")
            doc["parent"] = parent
            parent_entity = page.entities.get(("org", parent)) if parent else None
            parent_path = list(parent_entity.doc.get("path", [])) if parent_entity else []
            if parent and not parent_path:
                parent_path = [parent]
            doc["path"] = [*parent_path, entity_id]
    elif kind == "post":
        if "org" in data:
            doc["org"] = _text(data["org"])
        if "title" in data:
            doc["title"] = _text(data["title"])
        if "labels" in data:
            doc["labels"] = _labels(data["labels"])
    elif kind == "person":
        if "name" in data:
            doc["name"] = _text(data["name"])
    else:
        for key in ("url", "publisher", "title", "language"):
            doc[key] = _text(data.get(key))
        published = data.get("published")
        doc["published"] = dict(published) if isinstance(published, Mapping) else None
    at = format_time(recorded.recorded_at)
    entity = _Entity(kind, entity_id, recorded.position, at, doc)
    page.entities[(kind, entity_id)] = entity
    page.entity_versions.append(entity)
    # The feed of this entity is titled after it, so its head moves with it.
    if kind != "source":
        page.bump(f"{kind}:{entity_id}", recorded.position, at)


def _person(page: _Page, person: str) -> dict[str, Any]:
    entity = page.entities.get(("person", person))
    return {"id": person, "name": entity.doc.get("name") if entity else None}


def _post(page: _Page, post: str) -> dict[str, Any]:
    entity = page.entities.get(("post", post))
    doc = entity.doc if entity else {}
    return {
        "id": post,
        "title": doc.get("title"),
        "labels": doc.get("labels", {}),
        "org": doc.get("org"),
    }


def _org(page: _Page, org: str | None) -> dict[str, Any] | None:
    if not org:
        return None
    entity = page.entities.get(("org", org))
    doc = entity.doc if entity else {}
    return {
        "id": org,
        "name": doc.get("name"),
        "short_name": doc.get("short_name"),
        "labels": doc.get("labels", {}),
        "path": list(doc.get("path", [org])),
    }


def _source(page: _Page, source: str | None) -> dict[str, Any] | None:
    if not source:
        return None
    entity = page.entities.get(("source", source))
    return {"id": source, **(entity.doc if entity else {})}


def _apply_claim(page: _Page, recorded: RecordedEvent, data: dict[str, Any]) -> None:
    claim = _text(data.get("claim"))
    if claim is None:
        return
    entry = page.entries.get(claim)
    at = format_time(recorded.recorded_at)
    step: dict[str, Any] = {"type": recorded.type, "position": recorded.position, "at": at}
    if recorded.type == "claim.reported":
        if entry is not None:
            return
        entry = _report(page, recorded, data, claim, at)
    elif entry is None:
        # Lifecycle events of an unknown claim cannot become an entry.
        return
    else:
        doc = entry.doc
        if _text(data.get("source")):
            step["source"] = _source(page, data["source"])
        if _text(data.get("reason")):
            step["reason"] = data["reason"]
        if recorded.type == "claim.confirmed":
            doc["status"] = "confirmed"
            for key in ("effective", "quote"):
                if key in data:
                    step[key] = data[key]
            if isinstance(data.get("effective"), Mapping):
                doc["fields"]["effective"] = dict(data["effective"])
        elif recorded.type == "claim.corrected":
            step["changes"] = _correct(page, entry, data.get("changes"))
            if doc["status"] not in ("confirmed", "disputed"):
                doc["status"] = "corrected"
            # A claim corrected onto another person or post joins that feed, where it is news.
            _join(page, entry, recorded.position, at)
        elif recorded.type == "claim.disputed":
            conflicts = data.get("conflicts_with")
            if isinstance(conflicts, list):
                step["conflicts_with"] = [str(other) for other in conflicts]
            if doc["status"] != "confirmed":
                doc["status"] = "disputed"
        elif recorded.type == "claim.retracted":
            doc["status"] = "retracted"
    entry.doc["events"].append(step)
    entry.doc["updated"] = at
    entry.doc["position"] = recorded.position
    page.versions.append((claim, recorded.position, dumps(entry.doc)))
    page.touched[claim] = recorded.position
    for scope in scopes_of(entry.person, entry.post, entry.org_path):
        page.bump(scope, recorded.position, at)


def _report(
    page: _Page, recorded: RecordedEvent, data: dict[str, Any], claim: str, at: str
) -> _Entry:
    person = _text(data.get("person"))
    post = _text(data.get("post"))
    post_doc = _post(page, post or "")
    org = _org(page, post_doc.get("org"))
    doc: dict[str, Any] = {
        "claim": claim,
        "id": f"urn:uuid:{recorded.event_id}",
        "seq": page.next_seq,
        "published": at,
        "status": "reported",
        "fields": {key: data[key] for key in _REPORTED_FIELDS if key in data},
        "person": _person(page, person or ""),
        "post": post_doc,
        "org": org,
        "source": _source(page, _text(data.get("source"))),
        "events": [],
    }
    entry = _Entry(
        claim=claim,
        seq=page.next_seq,
        reported_position=recorded.position,
        doc=doc,
        person=person,
        post=post,
        org=org["id"] if org else None,
        org_path=list(org["path"]) if org else [],
        is_new=True,
    )
    page.next_seq += 1
    page.entries[claim] = entry
    _join(page, entry, recorded.position, at)
    return entry


def _join(page: _Page, entry: _Entry, position: int, at: str) -> None:
    joined = page.memberships.setdefault(entry.claim, set())
    for scope in scopes_of(entry.person, entry.post, entry.org_path):
        if scope not in joined:
            joined.add(scope)
            page.joins.append((scope, entry.claim, position, at))
            page.bump(scope, position, at, joined=1)


def _correct(page: _Page, entry: _Entry, changes: object) -> list[dict[str, Any]]:
    """Apply a correction; the list says what changed, before and after, for the entry."""
    if not isinstance(changes, Mapping):
        return []
    described: list[dict[str, Any]] = []
    fields = entry.doc["fields"]
    for key, value in changes.items():
        if key == "person" and _text(value):
            before, after = entry.doc["person"], _person(page, str(value))
            entry.doc["person"], entry.person = after, str(value)
        elif key == "post" and _text(value):
            before, after = entry.doc["post"], _post(page, str(value))
            org = _org(page, after.get("org"))
            entry.doc["post"], entry.doc["org"], entry.post = after, org, str(value)
            entry.org = org["id"] if org else None
            entry.org_path = list(org["path"]) if org else []
        elif key in _REPORTED_FIELDS:
            before, after = fields.get(key), value
            if value is None:
                fields.pop(key, None)
            else:
                fields[key] = value
        else:
            continue
        described.append({"field": key, "before": before, "after": after})
    return described


async def _write(tx: ProjectionTransaction, page: _Page) -> None:
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
                    _path_text(e.doc.get("path", [])) if e.kind == "org" else None,
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
            "last_recorded_at, person, post, org, org_path, doc) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (claim) DO UPDATE SET "
            "last_position = excluded.last_position, "
            "last_recorded_at = excluded.last_recorded_at, person = excluded.person, "
            "post = excluded.post, org = excluded.org, org_path = excluded.org_path, "
            "doc = excluded.doc",
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
                    _path_text(e.org_path),
                    dumps(e.doc),
                )
                for e in changed
            ],
        )
    if page.joins:
        # Ranks are handed out in join order; the statement reads the rank before it.
        await tx.executemany(
            f"INSERT INTO {SCOPES} (scope, claim, rank, joined_position, joined_at, "
            "last_position) SELECT ?, ?, COALESCE(MAX(rank), 0) + 1, CAST(? AS BIGINT), "
            f"?, CAST(? AS BIGINT) FROM {SCOPES} WHERE scope = ? "
            "ON CONFLICT (scope, claim) DO NOTHING",
            [
                (scope, claim, position, at, position, scope)
                for scope, claim, position, at in page.joins
            ],
        )
    updates = [
        (position, claim)
        for claim, position in page.touched.items()
        if not (page.entries[claim].is_new and page.entries[claim].reported_position == position)
    ]
    if updates:
        await tx.executemany(
            f"UPDATE {SCOPES} SET last_position = ? WHERE claim = ? AND last_position < ?",
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
