"""Folding events into feed entry docs: pure code, no SQL (see :mod:`.feed_entries`).

A :class:`Page` holds what one run of events changes — entity versions, entry versions, scope
joins and head moves — and :mod:`.feed_entries` writes it with a handful of statements.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from leaderlog._json import dumps
from leaderlog.domain import ALWAYS_REPORTED
from leaderlog.errors import RecordError
from leaderlog.events import RecordedEvent, format_time, upcast
from leaderlog.projections.claim_versions import STATUS_AFTER

__all__ = [
    "CLAIM_EVENTS",
    "ENTITY_EVENTS",
    "HISTORY_KEPT",
    "LIFECYCLE_STEPS",
    "Clock",
    "Entity",
    "Entry",
    "Page",
    "apply_claim",
    "apply_entity",
    "as_text",
    "effective_words_from",
    "path_text",
    "payload",
    "referenced_entities",
    "scopes_of",
]

ENTITY_EVENTS = {
    "org.registered": "org",
    "org.updated": "org",
    "post.defined": "post",
    "post.updated": "post",
    "person.registered": "person",
    "person.updated": "person",
    "source.registered": "source",
}
CLAIM_EVENTS = {
    "claim.reported",
    "claim.confirmed",
    "claim.corrected",
    "claim.disputed",
    "claim.retracted",
}
# The steps after a claim's report, which an entry's history shows.
LIFECYCLE_STEPS = CLAIM_EVENTS - {"claim.reported"}
# An entry's doc keeps only its claim's latest steps, and counts the ones before them: every
# version of the entry is stored whole, so a claim confirmed from article after article would
# otherwise take storage, and time to apply each step, growing with the square of its steps
# (1,000 steps: 212 MB of docs), and every feed holding it an entry of every step ever (the
# claim's API answer gives them all). The feeds show as many as are kept.
HISTORY_KEPT = 10
REPORTED_FIELDS = (
    "kind",
    "capacity",
    "cause",
    "effective",
    "modality",
    "attribution",
    "quote",
    "locator",
)
TICK = dt.timedelta(microseconds=1)
ENTRY_TICK = dt.timedelta(milliseconds=1)


def as_text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _labels(value: object) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {str(key): text for key, text in value.items() if isinstance(text, str)}


def scopes_of(person: str | None, post: str | None, org_path: Sequence[str]) -> list[str]:
    """Every scope an entry with this person, post and organisation path belongs to."""
    scopes = ["all"]
    if person:
        scopes.append(f"person:{person}")
    if post:
        scopes.append(f"post:{post}")
    scopes.extend(f"org:{org}" for org in org_path)
    return scopes


def path_text(path: Sequence[str]) -> str:
    """``/dhs/ice/ice-hsi/``: a prefix query finds a whole subtree."""
    return "/" + "".join(f"{org}/" for org in path) if path else "/"


def _millisecond(moment: dt.datetime) -> dt.datetime:
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


@dataclass
class Clock:
    """The time entries and feeds are stamped with: the recorded time, made strictly
    increasing.

    Events appended in one batch share their recorded time to the microsecond; feeds need
    distinct instants (readers sort and de-duplicate by them), so each event is stamped
    ``max(recorded_at, previous stamp + 1 µs)``. An entry's (a claim event's) stamp is
    moreover in a later millisecond than the entry before it: Atom writes dates to the
    millisecond, and the W3C Feed Validator warns of two entries with one ``atom:updated``.
    So claims recorded faster than one a millisecond (a large import) are dated ahead of the
    clock, a second for a thousand of them; other events (people, posts, organisations) are
    only ever a microsecond apart. The stamp depends only on the log up to the event, so
    rebuilds give the same stamps, and it equals the recorded time whenever events were
    recorded at different instants (and claims in different milliseconds).
    """

    last: dt.datetime | None = None
    last_entry: dt.datetime | None = None
    position: int = 0
    text: str = ""

    def stamp(self, recorded: RecordedEvent, *, entry: bool = False) -> str:
        if recorded.position == self.position:
            return self.text
        moment = recorded.recorded_at.astimezone(dt.UTC)
        if self.last is not None and moment <= self.last:
            moment = self.last + TICK
        if entry:
            latest = self.last_entry
            if latest is not None and _millisecond(moment) <= _millisecond(latest):
                moment = _millisecond(latest) + ENTRY_TICK
            self.last_entry = moment
        self.last, self.position, self.text = moment, recorded.position, format_time(moment)
        return self.text


@dataclass
class Entity:
    kind: str
    id: str
    position: int
    recorded_at: str
    doc: dict[str, Any]


@dataclass
class Entry:
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
class Page:
    """What one page of events changes, written with a handful of statements at the end."""

    entities: dict[tuple[str, str], Entity] = field(default_factory=dict)
    entity_versions: list[Entity] = field(default_factory=list)
    entries: dict[str, Entry] = field(default_factory=dict)
    versions: list[tuple[str, int, str]] = field(default_factory=list)
    # (scope, claim, position, recorded stamp): an entry joining a scope, and an entry of a
    # scope changing; in log order. Ranks are handed out from them when the page is written.
    joins: list[tuple[str, str, int, str]] = field(default_factory=list)
    changes: list[tuple[str, str, int, str]] = field(default_factory=list)
    touched: dict[str, int] = field(default_factory=dict)
    # Scopes each corrected or new claim already belongs to (membership is never withdrawn).
    memberships: dict[str, set[str]] = field(default_factory=dict)
    # The current rank of each loaded (scope, claim) membership; ranks are handed out when
    # the page is written.
    ranks: dict[tuple[str, str], int] = field(default_factory=dict)
    heads: dict[str, list[Any]] = field(default_factory=dict)
    next_seq: int = 1
    clock: Clock = field(default_factory=Clock)

    def bump(self, scope: str, position: int, recorded_at: str, joined: int = 0) -> None:
        head = self.heads.setdefault(scope, [0, position, recorded_at])
        head[0] += joined
        head[1], head[2] = position, recorded_at


def payload(recorded: RecordedEvent) -> dict[str, Any]:
    """The event's data in its current shape, as a copy the fold may change.

    An event a newer leaderlog wrote is refused, naming its position, as the other built-ins
    refuse it: its fields may mean what this version cannot tell, and an entry folded from a
    guess would be frozen on an archive page.
    """
    try:
        data = upcast(recorded.type, recorded.schema_version, recorded.data)
    except RecordError as error:
        raise error.located(f"event at position {recorded.position}") from None
    return data if isinstance(data, dict) else {}


def referenced_entities(
    payloads: Iterable[tuple[RecordedEvent, dict[str, Any]]], entries: Iterable[Entry]
) -> set[tuple[str, str]]:
    wanted: set[tuple[str, str]] = set()
    for recorded, data in payloads:
        kind = ENTITY_EVENTS.get(recorded.type)
        if kind is not None:
            wanted.add((kind, str(data.get(kind))))
            for key, other in (("parent", "org"), ("org", "org")):
                if as_text(data.get(key)):
                    wanted.add((other, str(data[key])))
            continue
        for key in ("source", "person", "post"):
            if as_text(data.get(key)):
                wanted.add((key, str(data[key])))
        changes = data.get("changes")
        if isinstance(changes, Mapping):
            for key in ("source", "person", "post"):
                if as_text(changes.get(key)):
                    wanted.add((key, str(changes[key])))
    for entry in entries:
        wanted.update(("org", org) for org in entry.org_path)
        # A change to the claim copies the names as they are by then (_copy_names).
        if entry.person:
            wanted.add(("person", entry.person))
        if entry.post:
            wanted.add(("post", entry.post))
    return wanted


def apply_entity(page: Page, recorded: RecordedEvent, data: dict[str, Any]) -> None:
    kind = ENTITY_EVENTS[recorded.type]
    entity_id = str(data.get(kind))
    known = page.entities.get((kind, entity_id))
    doc = dict(known.doc) if known else {}
    if kind == "org":
        # A short name, like aliases, is shown by no feed, so it is not kept here either.
        if "name" in data:
            doc["name"] = as_text(data["name"])
        if "labels" in data:
            doc["labels"] = _labels(data["labels"])
        if "parent" in data or "path" not in doc:
            parent = as_text(data.get("parent")) if "parent" in data else doc.get("parent")
            doc["parent"] = parent
            parent_entity = page.entities.get(("org", parent)) if parent else None
            parent_path = list(parent_entity.doc.get("path", [])) if parent_entity else []
            if parent and not parent_path:
                parent_path = [parent]
            doc["path"] = [*parent_path, entity_id]
    elif kind == "post":
        if "org" in data:
            doc["org"] = as_text(data["org"])
        if "title" in data:
            doc["title"] = as_text(data["title"])
        if "labels" in data:
            doc["labels"] = _labels(data["labels"])
    elif kind == "person":
        if "name" in data:
            doc["name"] = as_text(data["name"])
    else:
        for key in ("url", "publisher", "title", "language"):
            doc[key] = as_text(data.get(key))
        published = data.get("published")
        doc["published"] = dict(published) if isinstance(published, Mapping) else None
    if known is not None and known.doc == doc:
        # Nothing the feeds keep changed (only aliases or a short name): no new version, so
        # the list of every feed (/opml), dated by the last version, keeps its validators.
        return
    at = page.clock.stamp(recorded)
    entity = Entity(kind, entity_id, recorded.position, at, doc)
    page.entities[(kind, entity_id)] = entity
    page.entity_versions.append(entity)
    # The feed of this entity is titled after it, and its doc holds only what feeds show of
    # it, so a new version moves its feed on (an update of aliases alone left the doc as it
    # was, above). A source has no feed of its own.
    if kind != "source":
        page.bump(f"{kind}:{entity_id}", recorded.position, at)


def _person(page: Page, person: str) -> dict[str, Any]:
    entity = page.entities.get(("person", person))
    return {"id": person, "name": entity.doc.get("name") if entity else None}


def _post(page: Page, post: str) -> dict[str, Any]:
    entity = page.entities.get(("post", post))
    doc = entity.doc if entity else {}
    return {
        "id": post,
        "title": doc.get("title"),
        "labels": doc.get("labels", {}),
        "org": doc.get("org"),
    }


def _org(page: Page, org: str | None) -> dict[str, Any] | None:
    if not org:
        return None
    entity = page.entities.get(("org", org))
    doc = entity.doc if entity else {}
    return {
        "id": org,
        "name": doc.get("name"),
        "labels": doc.get("labels", {}),
        "path": list(doc.get("path", [org])),
    }


def _source(page: Page, source: str | None) -> dict[str, Any] | None:
    if not source:
        return None
    entity = page.entities.get(("source", source))
    return {"id": source, **(entity.doc if entity else {})}


def apply_claim(page: Page, recorded: RecordedEvent, data: dict[str, Any]) -> None:
    claim = as_text(data.get("claim"))
    if claim is None:
        return
    entry = page.entries.get(claim)
    at = page.clock.stamp(recorded, entry=True)
    step: dict[str, Any] = {"type": recorded.type, "position": recorded.position, "at": at}
    joins_before = len(page.joins)
    if recorded.type == "claim.reported":
        if entry is not None:
            return
        entry = _report(page, recorded, data, claim, at)
    elif entry is None:
        # Lifecycle events of an unknown claim cannot become an entry.
        return
    else:
        doc = entry.doc
        _copy_names(page, entry)
        if as_text(data.get("source")):
            step["source"] = _source(page, data["source"])
        if as_text(data.get("reason")):
            step["reason"] = data["reason"]
        # The status is the latest step's, as in the leadership and audit projections.
        doc["status"] = STATUS_AFTER[recorded.type]
        if recorded.type == "claim.confirmed":
            for key in ("effective", "quote"):
                if key in data:
                    step[key] = data[key]
            effective = data.get("effective")
            # Only a date replaces the one reported (as in the leadership projection): a
            # confirmation that gives none ("in the coming weeks") leaves it as it was.
            if isinstance(effective, Mapping) and effective.get("date") is not None:
                doc["fields"]["effective"] = dict(effective)
        elif recorded.type == "claim.corrected":
            step["changes"] = _correct(page, entry, data.get("changes"))
            # A claim corrected onto another person or post joins that feed, where it is news.
            _join(page, entry, recorded.position, at)
        elif recorded.type == "claim.disputed":
            conflicts = data.get("conflicts_with")
            if isinstance(conflicts, list):
                step["conflicts_with"] = [str(other) for other in conflicts]
    entry.doc["events"].append(step)
    _keep_recent(entry.doc)
    entry.doc["updated"] = at
    entry.doc["position"] = recorded.position
    page.versions.append((claim, recorded.position, dumps(entry.doc)))
    page.touched[claim] = recorded.position
    # Every feed the entry ever joined shows this change (membership is never withdrawn).
    joined_now = {join[0] for join in page.joins[joins_before:]}
    for scope in sorted(page.memberships.get(claim, set())):
        page.bump(scope, recorded.position, at)
        if scope not in joined_now:
            page.changes.append((scope, claim, recorded.position, at))


def _keep_recent(doc: dict[str, Any]) -> None:
    """Drop the steps before the latest ``HISTORY_KEPT``, keeping in ``doc["earlier"]`` how
    many lifecycle steps they were and what of them the entry still shows: whose words its
    effective date is in (``effective_source`` when a step's, see :func:`effective_words_from`)."""
    events: list[dict[str, Any]] = doc["events"]
    shown = sum(1 for step in events if step.get("type") in LIFECYCLE_STEPS)
    if shown <= HISTORY_KEPT:
        return
    cut = len(events)
    for _ in range(HISTORY_KEPT):
        cut -= 1
        while events[cut].get("type") not in LIFECYCLE_STEPS:
            cut -= 1
    dropped, doc["events"] = events[:cut], events[cut:]
    earlier: dict[str, Any] = doc.setdefault("earlier", {"steps": 0})
    earlier["steps"] += sum(1 for step in dropped if step.get("type") in LIFECYCLE_STEPS)
    from_claim, source = effective_words_from(dropped, earlier)
    if from_claim:
        earlier.pop("effective_source", None)
    else:
        earlier["effective_source"] = source


def effective_words_from(
    steps: Iterable[Mapping[str, Any]], earlier: Mapping[str, Any]
) -> tuple[bool, object]:
    """Whose words an entry's effective date is in after ``steps``, from what the steps
    ``earlier`` than them left: (True, None) for its claim's source (as it is by then), else
    (False, the source of the dated confirmation that gave the date, None if it named none).
    Only a dated confirmation replaces the date; a correction's words are its claim's
    source's, as a quote corrected is."""
    from_claim = "effective_source" not in earlier
    source: object = earlier.get("effective_source")
    for step in steps:
        kind = step.get("type")
        if kind == "claim.confirmed":
            effective = step.get("effective")
            if isinstance(effective, Mapping) and effective.get("date") is not None:
                from_claim, source = False, step.get("source")
        elif kind == "claim.corrected" and any(
            isinstance(change, Mapping)
            and change.get("field") == "effective"
            and change.get("before") != change.get("after")
            for change in step.get("changes", [])
        ):
            from_claim, source = True, None
    return from_claim, source


def _report(
    page: Page, recorded: RecordedEvent, data: dict[str, Any], claim: str, at: str
) -> Entry:
    person = as_text(data.get("person"))
    post = as_text(data.get("post"))
    post_doc = _post(page, post or "")
    org = _org(page, post_doc.get("org"))
    doc: dict[str, Any] = {
        "claim": claim,
        "id": f"urn:uuid:{recorded.event_id}",
        "seq": page.next_seq,
        "published": at,
        "status": "reported",
        "fields": {key: data[key] for key in REPORTED_FIELDS if key in data},
        "person": _person(page, person or ""),
        "post": post_doc,
        "org": org,
        "source": _source(page, as_text(data.get("source"))),
        "events": [],
    }
    entry = Entry(
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


def _copy_names(page: Page, entry: Entry) -> None:
    """Bring the entry's person name, post title and org name up to date: an entry shows the
    names as they were when its claim last changed. Which person, post and org it is about
    (and so the feeds it is in) stays as it was."""
    doc = entry.doc
    if entry.person and ("person", entry.person) in page.entities:
        doc["person"] = _person(page, entry.person)
    if entry.post and ("post", entry.post) in page.entities:
        current = _post(page, entry.post)
        doc["post"] = {**doc["post"], "title": current["title"], "labels": current["labels"]}
    org = doc.get("org")
    if entry.org and org and ("org", entry.org) in page.entities:
        current_org = _org(page, entry.org)
        if current_org is not None:
            names = {key: current_org[key] for key in ("name", "labels")}
            doc["org"] = {**org, **names}


def _join(page: Page, entry: Entry, position: int, at: str) -> None:
    joined = page.memberships.setdefault(entry.claim, set())
    for scope in scopes_of(entry.person, entry.post, entry.org_path):
        if scope not in joined:
            joined.add(scope)
            page.joins.append((scope, entry.claim, position, at))
            page.bump(scope, position, at, joined=1)


def _correct(page: Page, entry: Entry, changes: object) -> list[dict[str, Any]]:
    """Apply a correction; the list says what changed, before and after, for the entry."""
    if not isinstance(changes, Mapping):
        return []
    described: list[dict[str, Any]] = []
    fields = entry.doc["fields"]
    for key, value in changes.items():
        if key == "source" and as_text(value):
            # The entry links to, and names, the source the claim is attributed to now.
            before, after = entry.doc["source"], _source(page, str(value))
            entry.doc["source"] = after
        elif key == "person" and as_text(value):
            before, after = entry.doc["person"], _person(page, str(value))
            entry.doc["person"], entry.person = after, str(value)
        elif key == "post" and as_text(value):
            before, after = entry.doc["post"], _post(page, str(value))
            org = _org(page, after.get("org"))
            entry.doc["post"], entry.doc["org"], entry.post = after, org, str(value)
            entry.org = org["id"] if org else None
            entry.org_path = list(org["path"]) if org else []
        elif key in REPORTED_FIELDS:
            if value is None and key in ALWAYS_REPORTED:
                continue  # not a change (see leaderlog.domain.ALWAYS_REPORTED)
            before, after = fields.get(key), value
            if value is None:
                fields.pop(key, None)
            else:
                fields[key] = value
        else:
            continue
        described.append({"field": key, "before": before, "after": after})
    return described
