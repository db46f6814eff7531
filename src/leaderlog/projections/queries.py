"""Read the projections: leadership state, history, claim lifecycles and audit queries.

:class:`Queries` is the library API the CLI and the HTTP layer share. Every method returns
plain JSON-able dicts (the shapes are in each docstring), reads indexed projection tables
only, and never replays the log. Call :meth:`ProjectionRunner.catch_up` first when answers
must include the latest appends.

Errors: :class:`UnknownEntity` (no such org, post, person or claim) and :class:`InvalidQuery`
(a bad date, time, position or filter); both are :class:`~leaderlog.errors.ProjectionError`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import heapq
import re
from collections import defaultdict
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from difflib import SequenceMatcher
from functools import partial
from operator import itemgetter
from typing import Any, Literal, TypeVar

from leaderlog._json import canonical_bytes, loads
from leaderlog.errors import (
    BuiltByAnotherVersion,
    InvalidQuery,
    ProjectionError,
    RecordError,
    StoreError,
    UnknownEntity,
    UnreadableEvent,
)
from leaderlog.events import EVENT_TYPES, format_time
from leaderlog.projections._collector import few_collections
from leaderlog.projections._sql import chunks, marks
from leaderlog.projections._words import TAIL_LENGTH, search_form
from leaderlog.projections.audit import AuditProjection
from leaderlog.projections.base import not_built, payload
from leaderlog.projections.claim_versions import ClaimVersion
from leaderlog.projections.leadership import OPEN, LeadershipProjection
from leaderlog.projections.leadership_rules import (
    ChangeToComeOrder,
    TenureOrder,
    changes_to_come_order,
    dispute_links,
    keyed_tenures,
    ordered_tenures,
    post_state,
)
from leaderlog.projections.query_input import (
    CONTROL_CHARACTERS,
    MAX_NAME_LENGTH,
    NOT_UTF8_TEXT,
    Refusals,
    check_name_filters,
    check_names,
    echoed,
    parse_day,
    parse_known_at,
    parse_time,
)
from leaderlog.store.base import EventStore, checked_store, storable

__all__ = ["AUDIT_FILTERS", "EntityKind", "Queries"]

# Each exact-match audit filter and the column it compares.
_AUDIT_COLUMNS = {
    "source": "e.source",
    "publisher": "e.publisher",
    "actor": "e.actor",
    "type": "e.type",
    "status": "c.status",
    "attribution": "c.attribution",
}
AUDIT_FILTERS = (*_AUDIT_COLUMNS, "from", "to")
# Filters on the claim an event is about, and how many matching claims make reading the
# events in log order the faster way to a page (see Queries._scan_for_claims).
_T = TypeVar("_T")
_CLAIM_FILTERS = ("status", "attribution")
_SCAN_FROM_CLAIMS = 2000
# Claim versions beyond which a state or history is worked out on a worker thread: on a large
# log, decoding them and folding every post takes seconds of CPU, during which a server's
# event loop would answer nothing else (not even /healthz). Decoding and folding a version
# takes 35-60 us, a hop 60-90 us: below this, the loop is held about 10 ms at most, and
# above it the hop costs under 2% of the work.
_OFF_LOOP_VERSIONS = 200
# Posts whose states are worked out together: a whole large log's state is answered a part
# at a time, so that only one part's claims are held at once.
_STATE_PART = 100
# Posts from which an answer is worked out with the garbage collector held back: tens of
# thousands of claims folded, hundreds of thousands of tenures kept.
_MANY_POSTS = 1000
_AUDIT_KEYS = (
    "position",
    "event_id",
    "type",
    "stream",
    "recorded_at",
    "actor",
    "claim",
    "claim_status",
    "attribution",
    "source",
    "publisher",
    "url",
    "title",
    "org",
    "outcome",
)
CLAIM_STATUSES = ("reported", "confirmed", "corrected", "disputed", "retracted")
ATTRIBUTION_KINDS = ("official", "named", "anonymous", "outlet")
MAX_AUDIT_LIMIT = 10_000

# Where to look for what a user may have meant by an unknown id: the table, its id column,
# and the human-facing columns shown beside a suggestion (aliases are stored as JSON text).
EntityKind = Literal["organisation", "post", "person"]
_LOOKUPS: dict[EntityKind, tuple[str, str, tuple[str, ...]]] = {
    "organisation": ("p_leadership_orgs", "org", ("short_name", "name")),
    "post": ("p_leadership_posts", "post", ("title", "aliases")),
    "person": ("p_leadership_persons", "person", ("name", "aliases")),
}
_SUGGESTIONS = 5
# How alike (difflib's ratio) a mistyped id and an entity's id or name must be to suggest it:
# one letter off in eight is 0.93, two in ten 0.8; "ice" and "dhs" are not alike at all.
_LIKE_ENOUGH = 0.8
# Index lookups for a mistyped id at most (half for its starts, the rest for its words): an
# error anyone can ask for over HTTP, a 404 page's too.
_MISTYPED_LOOKUPS = 12
_WORDS = re.compile(r"[^\W_]+")
# Ids or sources read per word of an unknown one, and the words (the longest) looked up: a
# word common to more of them narrows the suggestions less, but never reads more.
_CANDIDATES = 300
_WORDS_LOOKED_UP = 3


# The version of each built-in projection these queries read the tables of.
_VERSIONS_READ = {
    LeadershipProjection.name: LeadershipProjection.version,
    AuditProjection.name: AuditProjection.version,
}

_VERSIONS = "SELECT doc FROM p_leadership_claim_versions WHERE "
# Versions of one claim read at once for its answer (see Queries.claim).
_CLAIM_VERSIONS_PAGE = 100
_KNOWN = " AND known_from <= ? AND known_to > ?"


# What a lookup of entities by a start of their words finds: each id with its labels and
# its texts in search form; and whether that is all there are.
_Found = tuple[list[tuple[str, list[str], list[str]]], bool]


class Queries:
    """Answers over the built-in projections of one store."""

    def __init__(self, store: EventStore) -> None:
        self.store = checked_store(store, "Queries")

    # --- the two time axes -------------------------------------------------------------------

    async def _checkpoint(self, name: str) -> int:
        try:
            rows = await self.store.query(
                "SELECT position, version FROM projection_checkpoints WHERE name = ?", (name,)
            )
        except StoreError:
            raise  # the store is closed, busy or gone: not a missing projection
        except Exception as error:  # the table itself is missing: nothing was ever projected
            raise ProjectionError(not_built(name)) from error
        if not rows:
            raise ProjectionError(not_built(name))
        position, version = int(rows[0][0]), int(rows[0][1])
        if version != _VERSIONS_READ[name]:
            # Another leaderlog (older or newer, on the same database) rebuilt it its way:
            # its tables are not the shape these queries read.
            # Nothing changes them back but this version's rebuild (its restart does): an
            # invitation to try again shortly would have clients poll in vain.
            raise BuiltByAnotherVersion(
                f"the {name} projection was built by another leaderlog version ({version}; "
                f"this one reads {_VERSIONS_READ[name]}); run one version against a database",
                public=f"the {name} projection was rebuilt by another version of leaderlog; "
                "this server cannot answer from it until it is restarted",
            )
        return position

    async def resolve_known_at(self, known_at: int | str | dt.date | None) -> dict[str, Any]:
        """``{"position", "recorded_through"}`` for a position, an RFC 3339 time, or now.

        A time T means the last position such that the whole log up to it was recorded at or
        before T.
        """
        head = await self._checkpoint("leadership")
        wanted = parse_known_at(known_at)
        if wanted is None:
            position = head
        elif isinstance(wanted, int):
            if wanted > head:
                log_head, _ = await self.store.head()
                if wanted <= log_head:
                    await self._unless_stopped_after(head)
                    # Appended and answered already, but not yet applied: a moment's wait.
                    raise ProjectionError(
                        f"known-at position {wanted} is in the log but not projected yet "
                        f"(projections are at {head}); {_NOT_APPLIED_YET}"
                    )
                raise _beyond_the_head(wanted, log_head)
            position = wanted
        else:
            rows = await self.store.query(
                "SELECT position FROM p_leadership_clock WHERE recorded_at > ? "
                "ORDER BY recorded_at, position LIMIT 1",
                (format_time(wanted),),
            )
            if rows:
                position = int(rows[0][0]) - 1
            else:
                position = head
                # Events recorded by then but not applied yet would be missing from the
                # answer, which would change later for the same past moment.
                (following,) = await self.store.read_all(after=head, limit=1) or (None,)
                if following is not None and following.recorded_at <= wanted:
                    raise ProjectionError(
                        f"known-at {format_time(wanted)} takes in position "
                        f"{following.position}, which is in the log but not projected yet "
                        f"(projections are at {head}); {_NOT_APPLIED_YET}"
                    )
        rows = await self.store.query(
            "SELECT recorded_at FROM p_leadership_clock WHERE position <= ? "
            "ORDER BY position DESC LIMIT 1",
            (position,),
        )
        return {"position": position, "recorded_through": rows[0][0] if rows else None}

    async def check_known_at(self, known_at: int | str | dt.date | None) -> None:
        """Refuse a ``known_at`` no answer can take: one of no form a position or time has,
        or a position beyond the log's head. It reads the log's head only, not the
        projections, so a caller refuses the mistake before bringing them up to date."""
        wanted = parse_known_at(known_at)
        if isinstance(wanted, int):
            head, _ = await self.store.head()
            if wanted > head:
                raise _beyond_the_head(wanted, head)

    # --- checking a question's values before asking it ---------------------------------------
    # Each refuses, without the store, the values of one kind of question that no log could
    # answer, as the question itself would: a caller refuses a mistake at once rather than
    # once the projections are up to date, which can take minutes on a large log.

    @staticmethod
    def check_state(
        org: str | None = None,
        as_of: dt.date | str | None = None,
        known_at: int | str | dt.date | None = None,
    ) -> None:
        refusals = Refusals()
        refusals.check(check_names, org=org)
        if as_of is not None:
            refusals.check(parse_day, as_of, "as-of")
        refusals.check(parse_known_at, known_at)
        refusals.raise_any()

    @staticmethod
    def check_history(
        *,
        person: str | None = None,
        post: str | None = None,
        org: str | None = None,
        known_at: int | str | dt.date | None = None,
    ) -> None:
        refusals = Refusals()
        for name, value in (("person", person), ("post", post), ("org", org)):
            refusals.check(check_names, **{name: value})
        refusals.check(parse_known_at, known_at)
        if sum(1 for value in (person, post, org) if value is not None) != 1:
            refusals.refuse("give exactly one of person, post or org")
        refusals.raise_any()

    @staticmethod
    def check_claim(claim_id: str, known_at: int | str | dt.date | None = None) -> None:
        if not isinstance(claim_id, str):
            raise InvalidQuery(f"claim must be text, got {claim_id!r:.80}", parameter="claim")
        refusals = Refusals()
        refusals.check(check_names, claim=claim_id)
        refusals.check(parse_known_at, known_at)
        refusals.raise_any()

    @staticmethod
    def check_audit(
        *,
        source: str | None = None,
        publisher: str | None = None,
        actor: str | None = None,
        type: str | None = None,
        status: str | None = None,
        attribution: str | None = None,
        recorded_from: str | dt.date | None = None,
        recorded_to: str | dt.date | None = None,
        after: int = 0,
        limit: int = 500,
    ) -> tuple[dt.datetime | None, dt.datetime | None]:
        """As the others; returns the recorded range given (from, to), read. Every value
        is checked, and all those refused are said together (see :class:`Refusals`)."""
        refusals = Refusals()
        refusals.check(check_names, source=source)
        # An actor an earlier version let through may hold a line break, and is queried too.
        refusals.check(check_name_filters, publisher=publisher)
        refusals.check(check_name_filters, actor=actor)
        known = {"type": EVENT_TYPES, "status": CLAIM_STATUSES, "attribution": ATTRIBUTION_KINDS}
        for name, value in (("type", type), ("status", status), ("attribution", attribution)):
            refusals.check(_check_one_of, name, value, known[name])
        for name, number in (("limit", limit), ("after", after)):
            refusals.check(_check_whole_number, name, number)
        if isinstance(limit, int) and not 1 <= limit <= MAX_AUDIT_LIMIT:
            refusals.refuse(f"limit must be between 1 and {MAX_AUDIT_LIMIT}", "limit")
        if isinstance(after, int) and after < 0:
            refusals.refuse("after must be a position (0 or more)", "after")
        start = (
            None
            if recorded_from is None
            else refusals.check(parse_time, recorded_from, "from", end_of_day=False)
        )
        end = (
            None
            if recorded_to is None
            else refusals.check(parse_time, recorded_to, "to", end_of_day=True)
        )
        if start is not None and end is not None and start > end:
            # Most likely the two were swapped; an empty answer would hide that.
            refusals.refuse(
                f"from ({format_time(start)}) is after to ({format_time(end)}): "
                "no time is in that range",
                "from",
                against="to",
            )
        refusals.raise_any()
        return start, end

    # --- lookups -----------------------------------------------------------------------------

    async def _entity(
        self, kind: EntityKind, given: str, columns: str, known: int | None
    ) -> tuple[Any, ...]:
        """The entity's version as known at position ``known`` (None: now), or the error."""
        table, id_column, _ = _LOOKUPS[kind]
        at = _at(known)
        rows = await self.store.query(
            f"SELECT {columns} FROM {table} WHERE {id_column} = ?{_KNOWN}", (given, at, at)
        )
        if rows:
            return tuple(rows[0])
        registered = await self.store.query(
            f"SELECT MIN(known_from) FROM {table} WHERE {id_column} = ?", (given,)
        )
        if registered and registered[0][0] is not None:
            raise UnknownEntity(
                f"{kind} {given!r} is not known at position {known}: "
                f"it was registered at position {int(registered[0][0])}"
            )
        raise await self._noting_lag(await self.unknown(kind, given))

    async def _noting_lag(
        self, error: UnknownEntity, projection: str = "leadership"
    ) -> UnknownEntity:
        """``error``, saying so when the projection has not applied the whole log: what was
        appended since is in the log, but not known to the answers yet."""
        applied = await self._checkpoint(projection)
        head, _ = await self.store.head()
        if applied >= head:
            return error
        await self._unless_stopped_after(applied)
        return UnknownEntity(
            f"{error} (the {projection} projection has applied the log up to position "
            f"{applied} of {head}: what was appended since is not answered yet; "
            f"{_NOT_APPLIED_YET})",
            error.suggestions,
        )

    async def _org(self, org: str, known: int | None = None) -> dict[str, Any]:
        org_id, name, short_name, parent = await self._entity(
            "organisation", org, "org, name, short_name, parent", known
        )
        return {
            "org": org_id,
            "name": name,
            "short_name": short_name,
            "parent": parent,
        }

    async def unknown(self, kind: EntityKind, given: str) -> UnknownEntity:
        """The error for an id that does not exist, naming what the user may have meant:
        current entities whose id, name, short name, title or an alias has a word starting
        with ``given`` (ignoring case and accents), e.g. ``ice-ero`` for ``ero`` or
        ``robert-hammer`` for ``Hammer``; those it names exactly first, then by id.

        Found through the index of where each word starts (the leadership projection's
        ``tails``): a few hundred entities at most are read, however long the log.
        The feeds use it for unknown scopes too.
        """
        message = f"unknown {kind} {given!r}"
        # Compared in one form (composed, case-folded in every script): "MÖFA" finds "möfa".
        wanted = search_form(given.strip())
        if (
            not _lookup_key(wanted)
            or len(wanted) > MAX_NAME_LENGTH
            or CONTROL_CHARACTERS.search(wanted)
            or NOT_UTF8_TEXT.search(wanted)
        ):
            return UnknownEntity(message)
        near: list[tuple[bool, str, str]] = []
        entities, _ = await self._starting_with(kind, wanted)
        for found, names, forms in entities:
            if any(_at_a_word_start(wanted, form) for form in forms):
                near.append((wanted not in forms, found, ", ".join(names)))
        if near:
            return _did_you_mean(
                message, [(found, label) for _, found, label in sorted(near)[:_SUGGESTIONS]]
            )
        return _did_you_mean(message, await self._mistyped(kind, wanted))

    async def _starting_with(
        self, kind: EntityKind, wanted: str, known: Collection[str] = ()
    ) -> tuple[list[tuple[str, list[str], list[str]]], bool]:
        """Current entities one of whose words starts with ``wanted``, a few hundred at
        most, leaving out those ``known`` already: each id with its names, and those in
        :func:`search_form` after the id's; and whether they are all there are (fewer were
        found than a lookup reads at most)."""
        table, id_column, label_columns = _LOOKUPS[kind]
        rows = await self.store.query(
            "SELECT entity FROM p_leadership_tails "
            f"WHERE kind = ? AND tail >= ? AND tail < ? ORDER BY tail LIMIT {_CANDIDATES}",
            (id_column, *_tail_range(wanted)),
        )
        entities: list[tuple[str, list[str], list[str]]] = []
        unseen = sorted({str(row[0]) for row in rows} - set(known))
        for chunk in chunks(unseen):
            for found, *labels in await self.store.query(
                f"SELECT {id_column}, {', '.join(label_columns)} FROM {table} "
                f"WHERE {id_column} IN ({marks(len(chunk))}) AND known_to = ?",
                (*chunk, OPEN),
            ):
                names = _entity_names(dict(zip(label_columns, labels, strict=True)))
                entities.append((found, names, [search_form(text) for text in (found, *names)]))
        return entities, len(rows) < _CANDIDATES

    async def _mistyped(self, kind: EntityKind, wanted: str) -> list[tuple[str, str]]:
        """Entities of ``kind`` ``wanted`` reads as a mistyping of: see :func:`_mistyped`."""

        async def starting_with(start: str, known: Collection[str]) -> _Found:
            return await self._starting_with(kind, start, known)

        return await _mistyped(wanted, starting_with)

    async def _sources_starting_with(self, wanted: str, known: Collection[str] = ()) -> _Found:
        """As :meth:`_starting_with`, of sources (by id, publisher or title), labelled by
        their publisher."""
        rows = await self.store.query(
            "SELECT DISTINCT source FROM (SELECT source FROM p_audit_source_tails "
            f"WHERE tail >= ? AND tail < ? ORDER BY tail LIMIT {_CANDIDATES}) AS found",
            _tail_range(wanted),
        )
        sources: list[tuple[str, list[str], list[str]]] = []
        unseen = sorted({str(row[0]) for row in rows} - set(known))
        for chunk in chunks(unseen):
            for found, publisher, title in await self.store.query(
                "SELECT source, publisher, title FROM p_audit_sources "
                f"WHERE source IN ({marks(len(chunk))})",
                chunk,
            ):
                texts = [str(text) for text in (found, publisher, title) if text]
                sources.append((found, [str(publisher)], [search_form(text) for text in texts]))
        return sources, len(rows) < _CANDIDATES

    async def _unknown_claim(self, given: str, known: int) -> UnknownEntity:
        """The error for a claim id not known at position ``known``: when the claim was
        reported later, say so; otherwise name the claims known then in whose id every word
        given (ignoring case) starts a part, e.g. ``...-genalo-retirement`` for
        ``genalo retirement`` or ``hammer-hsi``.

        Found through the index of where each part of an id starts (the audit projection's
        ``claim_tails``): a few hundred ids at most are read per word, however long the log.
        """
        rows = await self.store.query(
            "SELECT MIN(known_from) FROM p_leadership_claim_versions WHERE claim = ?", (given,)
        )
        if rows and rows[0][0] is not None:
            return UnknownEntity(
                f"claim {given!r} is not known at position {known}: "
                f"it was reported at position {int(rows[0][0])}"
            )
        message = f"unknown claim {given!r}"
        words = list(dict.fromkeys(search_form(given).split()))
        if not words or not all(_lookup_key(word) for word in words):
            return UnknownEntity(message)
        await self._checkpoint("audit")
        found = await self._claims_starting(words)
        exact = search_form(given.strip())
        meant = sorted(
            (
                claim
                for claim, reported in found.items()
                if reported <= known and all(_at_a_word_start(word, claim) for word in words)
            ),
            key=lambda claim: (claim != exact, claim),
        )
        if not meant and len(words) == 1:
            # No id has parts starting so: a mistyped one ("fox-ice-shakup-...") is found as
            # a mistyped person or source is.
            async def starting_with(start: str, seen: Collection[str]) -> _Found:
                rows = await self.store.query(
                    "SELECT claim, reported FROM p_audit_claim_tails "
                    f"WHERE tail >= ? AND tail < ? ORDER BY tail LIMIT {_CANDIDATES}",
                    _tail_range(start),
                )
                ids = {str(claim) for claim, reported in rows if int(reported) <= known}
                complete = len(rows) < _CANDIDATES
                return [(claim, [claim], [claim]) for claim in sorted(ids - set(seen))], complete

            meant = [claim for claim, _ in await _mistyped(exact, starting_with)]
        # The versions known then, a few at a time: a claim the leadership projection has
        # not applied yet (it may lag the audit one) has none, and is passed over.
        suggestions: list[tuple[str, str]] = []
        for start in range(0, len(meant), _SUGGESTIONS):
            wanted = meant[start : start + _SUGGESTIONS]
            rows = await self.store.query(
                f"{_VERSIONS}claim IN ({marks(len(wanted))}){_KNOWN}", (*wanted, known, known)
            )
            docs = {doc["claim"]: doc for doc in (loads(row[0]) for row in rows)}
            suggestions += [
                (claim, f"{doc['kind']} of {doc['person']} at {doc['post']}")
                for claim in wanted
                if (doc := docs.get(claim)) is not None
            ]
            if len(suggestions) >= _SUGGESTIONS:
                break
        return _did_you_mean(message, suggestions[:_SUGGESTIONS])

    async def _claims_starting(self, words: Sequence[str]) -> dict[str, int]:
        """Claims (with the position each was reported at) a part of whose id starts with one
        of ``words``, at most ``_CANDIDATES`` or so: all those of the first of the longest few
        words that starts parts of no more ids than that; when each starts parts of more, the
        ids read for each of them that all have in common. The caller checks every word."""
        common: dict[str, int] | None = None
        for word in sorted(words, key=len, reverse=True)[:_WORDS_LOOKED_UP]:
            rows = await self.store.query(
                "SELECT claim, reported FROM p_audit_claim_tails "
                f"WHERE tail >= ? AND tail < ? ORDER BY tail LIMIT {_CANDIDATES + 1}",
                _tail_range(word),
            )
            found = {str(claim): int(reported) for claim, reported in rows}
            if len(rows) <= _CANDIDATES:
                return found
            common = (
                found
                if common is None
                else {claim: reported for claim, reported in common.items() if claim in found}
            )
        return common or {}

    async def _posts(self, *, org: str, known: int | None = None) -> list[dict[str, Any]]:
        """The posts of an org's subtree (every post when ``org`` is ``"*"``) as known then."""
        at = _at(known)
        sql = (
            "SELECT p.post, p.title, p.org, o.name FROM p_leadership_posts p "
            "JOIN p_leadership_orgs o ON o.org = p.org AND o.known_from <= ? AND o.known_to > ? "
            "WHERE p.known_from <= ? AND p.known_to > ?"
        )
        parameters: list[Any] = [at, at, at, at]
        if org != "*":
            sql += (
                f" AND p.org IN (SELECT org FROM p_leadership_org_tree WHERE ancestor = ?{_KNOWN})"
            )
            parameters += [org, at, at]
        # Sorted here, by code point: ORDER BY follows a PostgreSQL database's collation
        # (en_US puts "a1" before "a-c"), and answers must not depend on the backend.
        rows = sorted(await self.store.query(sql, parameters), key=lambda row: str(row[0]))
        return [
            {"post": post_id, "title": title, "org": org_id, "org_name": org_name}
            for post_id, title, org_id, org_name in rows
        ]

    async def _post(self, post: str, known: int | None = None) -> dict[str, Any]:
        post_id, title, org = await self._entity("post", post, "post, title, org", known)
        org_name = (await self._org(org, known))["name"]
        return {"post": post_id, "title": title, "org": org, "org_name": org_name}

    async def _person(self, person: str, known: int | None = None) -> dict[str, Any]:
        person_id, name, aliases = await self._entity(
            "person", person, "person, name, aliases", known
        )
        return {"person": person_id, "name": name, "aliases": loads(aliases)}

    async def _names(self, people: Iterable[str], known: int | None) -> dict[str, str]:
        found: dict[str, str] = {}
        at = _at(known)
        for chunk in chunks(sorted(set(people))):
            rows = await self.store.query(
                "SELECT person, name FROM p_leadership_persons "
                f"WHERE person IN ({marks(len(chunk))}){_KNOWN}",
                (*chunk, at, at),
            )
            found.update({str(person): str(name) for person, name in rows})
        return found

    async def _post_titles(
        self, posts: Iterable[str], known: int | None
    ) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        at = _at(known)
        for chunk in chunks(sorted(set(posts))):
            rows = await self.store.query(
                "SELECT p.post, p.title, p.org, o.name FROM p_leadership_posts p "
                "JOIN p_leadership_orgs o ON o.org = p.org "
                "AND o.known_from <= ? AND o.known_to > ? "
                f"WHERE p.post IN ({marks(len(chunk))}) AND p.known_from <= ? AND p.known_to > ?",
                (at, at, *chunk, at, at),
            )
            for post, title, org, org_name in rows:
                found[post] = {"post": post, "title": title, "org": org, "org_name": org_name}
        return found

    async def _sources(self, sources: Iterable[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for chunk in chunks(sorted(set(sources))):
            rows = await self.store.query(
                "SELECT source, url, publisher, title, published, language "
                f"FROM p_leadership_sources WHERE source IN ({marks(len(chunk))})",
                chunk,
            )
            for source, url, publisher, title, published, language in rows:
                found[source] = {
                    "source": source,
                    "url": url,
                    "publisher": publisher,
                    "title": title,
                    "published": loads(published) if published else None,
                    "language": language,
                }
        return found

    async def _versions(
        self, column: str, values: Sequence[str], position: int
    ) -> list[ClaimVersion]:
        found: list[ClaimVersion] = []
        for chunk in chunks(list(values)):
            rows = await self.store.query(
                f"{_VERSIONS}{column} IN ({marks(len(chunk))}){_KNOWN}",
                (*chunk, position, position),
            )
            found += await _decoded(rows)
        return found

    # --- leadership state --------------------------------------------------------------------

    async def situation(
        self,
        as_of: dt.date | str | None = None,
        known_at: int | str | dt.date | None = None,
    ) -> dict[str, Any]:
        """The two axes a state answers on: ``{"as_of": "2025-05-20", "known_at": {...}}``.

        ``as_of`` defaults to today (UTC); ``known_at`` is resolved as in :meth:`state`.
        """
        day = parse_day(as_of, "as-of") if as_of is not None else dt.datetime.now(dt.UTC).date()
        return {"as_of": day.isoformat(), "known_at": await self.resolve_known_at(known_at)}

    async def state(
        self,
        org: str | None = None,
        as_of: dt.date | str | None = None,
        known_at: int | str | dt.date | None = None,
        *,
        max_posts: int | None = None,
    ) -> dict[str, Any]:
        """Who holds each post on ``as_of`` (default today, UTC) as known at ``known_at``.

        ``org`` limits the answer to that organisation's subtree. ``known_at`` is a position,
        an RFC 3339 time, or None for everything projected so far. Returns::

            {"as_of": "2025-05-20",
             "known_at": {"position": 42, "recorded_through": "2025-...Z"},
             "org": {"org", "name", "short_name", "parent"} | None,
             "posts": [{"post": {"post", "title", "org", "org_name"},
                        "holders": [{"person", "name", "capacity", "since", "status",
                                     "claims"}],
                        "pending": [{"claim", "kind", "person", "name", "capacity", "cause",
                                     "effective", "modality", "status", "attribution",
                                     "sources", "reported"}],
                        "vacancy": "filled" | "acting" | "vacant" | "unknown",
                        "conflicts": [{"kind", "claims", "persons", "reason"}]}]}

        ``since`` and ``reported`` are fuzzy dates with a ``basis`` saying where they come from
        (see :mod:`leaderlog.projections.leadership_rules` for the rules). With ``max_posts``,
        a question about more posts than that is refused (:class:`InvalidQuery`) before any
        claim is read: a server answers per organisation on a large log.
        """
        header, parts = await self.state_in_parts(org, as_of, known_at, max_posts=max_posts)
        return {**header, "posts": [post async for part in parts for post in part]}

    async def state_in_parts(
        self,
        org: str | None = None,
        as_of: dt.date | str | None = None,
        known_at: int | str | dt.date | None = None,
        *,
        max_posts: int | None = None,
    ) -> tuple[dict[str, Any], AsyncIterator[list[dict[str, Any]]]]:
        """:meth:`state` as ``{"as_of", "known_at", "org"}`` and its posts a few hundred at a
        time, each part worked out from its own posts' claims when it is asked for: the whole
        log's state holds a fraction of its claims in memory at once, not all of them.

        Every mistake in the question (an unknown ``org``, too many posts for ``max_posts``)
        is raised here, before any part is asked for.
        """
        self.check_state(org, as_of, known_at)
        situation = await self.situation(as_of, known_at)
        day = dt.date.fromisoformat(situation["as_of"])
        position = situation["known_at"]["position"]
        scope = await self._org(org, position) if org is not None else None
        posts = await self._posts(org=org or "*", known=position)
        _check_post_count(posts, org, max_posts, "state")

        async def parts() -> AsyncIterator[list[dict[str, Any]]]:
            for first in range(0, len(posts), _STATE_PART):
                # Held back while a part is worked out only: a caller may stop between parts.
                with few_collections(len(posts), _MANY_POSTS):
                    part = await self._post_states(
                        posts[first : first + _STATE_PART], day, position
                    )
                yield part

        return {**situation, "org": scope}, parts()

    async def state_of_posts(
        self,
        posts: Sequence[str],
        as_of: dt.date | str | None = None,
        known_at: int | str | dt.date | None = None,
    ) -> dict[str, Any]:
        """:meth:`state` for the ``posts`` named, in the order given, wherever each belongs:
        what a page showing part of a large organisation asks for, where the organisation's
        whole subtree would read every claim in it. ``"org"`` is None; a post not known at
        ``known_at`` is left out (a caller's list may be newer than the position asked for).
        """
        if isinstance(posts, str) or not isinstance(posts, Iterable):
            raise InvalidQuery(f"posts must be a list of ids, got {posts!r:.80}")
        for post in posts:
            check_names(post=post)
        self.check_state(None, as_of, known_at)
        situation = await self.situation(as_of, known_at)
        position = situation["known_at"]["position"]
        known = await self._post_titles(posts, position)
        shaped = [known[post] for post in dict.fromkeys(posts) if post in known]
        day = dt.date.fromisoformat(situation["as_of"])
        return {**situation, "org": None, "posts": await self._post_states(shaped, day, position)}

    async def _post_states(
        self, posts: Sequence[dict[str, Any]], day: dt.date, position: int
    ) -> list[dict[str, Any]]:
        """The state on ``day`` of each of ``posts``, as known at ``position``."""
        versions = await self._versions("post", [post["post"] for post in posts], position)
        linked = await self._linked_elsewhere(versions, position)

        def fold() -> list[dict[str, Any]]:
            by_post: dict[str, list[ClaimVersion]] = defaultdict(list)
            for version in versions:
                by_post[version.post].append(version)
            links = dispute_links([*versions, *linked])
            return [
                {"post": post, **post_state(by_post.get(post["post"], []), day, links)}
                for post in posts
            ]

        answers = await _worked_out(len(versions), fold)
        names = await self._names(
            (
                item["person"]
                for answer in answers
                for item in (*answer["holders"], *answer["pending"])
            ),
            position,
        )
        for answer in answers:
            for item in (*answer["holders"], *answer["pending"]):
                item["name"] = names.get(item["person"])
        return answers

    async def _linked_elsewhere(
        self, versions: Sequence[ClaimVersion], position: int
    ) -> list[ClaimVersion]:
        """The claims not among ``versions`` that disputes link to them, known at
        ``position``: those a dispute names, those whose dispute names one, and so on through
        the links."""
        known = {version.claim for version in versions}
        found: list[ClaimVersion] = []
        frontier = list(versions)
        while frontier:
            named = {
                other
                for version in frontier
                if version.status == "disputed"
                for other in version.disputes[-1]["conflicts_with"]
            }
            more = await self._versions("claim", sorted(named - known), position)
            more += await self._naming([version.claim for version in frontier], position)
            frontier = []
            for version in more:
                if version.claim not in known:
                    known.add(version.claim)
                    found.append(version)
                    frontier.append(version)
        return found

    async def _naming(self, claims: Sequence[str], position: int) -> list[ClaimVersion]:
        """The disputed claims whose latest dispute, known at ``position``, names one of
        ``claims``."""
        found: list[ClaimVersion] = []
        for chunk in chunks(list(claims)):
            rows = await self.store.query(
                "SELECT v.doc FROM p_leadership_dispute_links l "
                "JOIN p_leadership_claim_versions v "
                "ON v.claim = l.claim AND v.known_from = l.known_from "
                f"WHERE l.named IN ({marks(len(chunk))}) "
                "AND v.known_from <= ? AND v.known_to > ?",
                (*chunk, position, position),
            )
            found += await _decoded(rows)
        return found

    # --- history -----------------------------------------------------------------------------

    async def history(
        self,
        *,
        person: str | None = None,
        post: str | None = None,
        org: str | None = None,
        known_at: int | str | dt.date | None = None,
        max_posts: int | None = None,
    ) -> dict[str, Any]:
        """Every tenure of a person, a post, or the posts of an org subtree (give exactly one).

        Returns::

            {"subject": {"person": ...} | {"post": ...} | {"org": ...},
             "known_at": {"position", "recorded_through"},
             "tenures": [{"person", "name", "post", "post_title", "org", "capacity",
                          "start", "end", "cause", "ended_by", "status", "evidence"}],
             "pending": [{"claim", "kind", "person", "name", "post", ...}],
             "sources": {source id: {"source", "url", "publisher", "title", "published",
                                     "language"}}}

        ``start``/``end`` are fuzzy dates with a ``basis``; ``start`` is None when only the
        end is known, ``end`` None while the tenure lasts. ``evidence`` lists the claims.
        With ``max_posts``, an org subtree of more posts than that is refused
        (:class:`InvalidQuery`) before any claim is read, as :meth:`state` refuses it.
        """
        self.check_history(person=person, post=post, org=org, known_at=known_at)
        if org is not None:
            # Answered whole: its changes and tenures are kept as they are, not as text.
            rest, pending, org_tenures = await self._org_history(
                org, known_at, max_posts, None, compact=False
            )
            return {**rest, "pending": list(pending), "tenures": list(org_tenures)}
        known = await self.resolve_known_at(known_at)
        position = known["position"]
        subject: dict[str, Any]
        if person is not None:
            subject = {"person": await self._person(person, position)}
            versions = await self._versions("person", [person], position)
        else:
            assert post is not None
            subject = {"post": await self._post(post, position)}
            versions = await self._versions("post", [post], position)
        groups: dict[tuple[str, str], list[ClaimVersion]] = defaultdict(list)
        for version in versions:
            if person is None or version.person == person:
                groups[(version.post, version.person)].append(version)
        # A person or post with thousands of claims takes seconds to fold: the event loop
        # answers other requests meanwhile.
        found_tenures, waiting = await _worked_out(
            len(versions), lambda: ordered_tenures(groups.values())
        )
        waiting.sort(key=changes_to_come_order)
        await self._label(position, found_tenures, waiting)
        sources = await self._sources(source for version in versions for source in version.sources)
        return {
            "subject": subject,
            "known_at": known,
            "tenures": found_tenures,
            "pending": waiting,
            "sources": sources,
        }

    async def history_in_parts(
        self,
        *,
        org: str,
        known_at: int | str | dt.date | None = None,
        max_posts: int | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> tuple[dict[str, Any], Iterator[dict[str, Any]], Iterator[dict[str, Any]]]:
        """:meth:`history` of an org subtree as ``{"subject", "known_at", "sources"}``, its
        changes to come and its tenures, each in order, one at a time.

        The subtree's claims are read and folded a few hundred posts at a time, and each
        change and tenure kept as compact JSON until its turn: a history of thousands of
        posts holds a part's claims and its answer's text in memory, not every claim, change
        and tenure as Python objects at once. Every mistake in the question is raised here.
        ``progress`` is called after each part with the posts worked out and their number.
        """
        return await self._org_history(org, known_at, max_posts, progress, compact=True)

    async def _org_history(
        self,
        org: str,
        known_at: int | str | dt.date | None,
        max_posts: int | None,
        progress: Callable[[int, int], None] | None,
        *,
        compact: bool,
    ) -> tuple[dict[str, Any], Iterator[dict[str, Any]], Iterator[dict[str, Any]]]:
        """:meth:`history_in_parts`; ``compact``: each change and tenure is kept as compact
        JSON until its turn, else as it is (for an answer that holds them all anyway)."""
        keep: Callable[[dict[str, Any]], Any] = canonical_bytes if compact else _as_is
        read_back: Callable[[Any], dict[str, Any]] = loads if compact else _as_is
        self.check_history(org=org, known_at=known_at)
        known = await self.resolve_known_at(known_at)
        position = known["position"]
        subject = {"org": await self._org(org, position)}
        posts = await self._posts(org=org, known=position)
        _check_post_count(posts, org, max_posts, "history")
        parts: list[list[tuple[TenureOrder, Any]]] = []
        waiting: list[tuple[ChangeToComeOrder, Any]] = []
        sources: dict[str, dict[str, Any]] = {}
        with few_collections(len(posts), _MANY_POSTS):
            for first in range(0, len(posts), _STATE_PART):
                part = [item["post"] for item in posts[first : first + _STATE_PART]]
                versions = await self._versions("post", part, position)
                # A part of thousands of claims takes a fraction of a second to fold: the
                # event loop answers other requests meanwhile.
                keyed, part_waiting = await _worked_out(
                    len(versions), partial(_keyed_tenures_of, versions)
                )
                await self._label(position, [answer for _, answer in keyed], part_waiting)
                parts.append([(order, keep(answer)) for order, answer in keyed])
                waiting += [(changes_to_come_order(item), keep(item)) for item in part_waiting]
                cited = (source for version in versions for source in version.sources)
                sources.update(await self._sources(cited))
                if progress is not None:
                    progress(min(first + _STATE_PART, len(posts)), len(posts))
        rest = {"subject": subject, "known_at": known, "sources": dict(sorted(sources.items()))}
        if compact:
            changes, tenures = _in_order(waiting, parts, read_back)
            return rest, changes, tenures

        def whole() -> tuple[Iterator[dict[str, Any]], Iterator[dict[str, Any]]]:
            changes, tenures = _in_order(waiting, parts, read_back)
            return iter(list(changes)), iter(list(tenures))

        # Answered whole, so put in order at once: the tens of thousands of changes and
        # tenures of a large subtree take a tenth of a second to sort and merge.
        changes, tenures = await _worked_out(len(waiting) + sum(map(len, parts)), whole)
        return rest, changes, tenures

    async def _label(self, known: int, *groups: list[dict[str, Any]]) -> None:
        """Name each item's person and post as they were known at position ``known``."""
        items = [item for group in groups for item in group]
        names = await self._names((item["person"] for item in items), known)
        posts = await self._post_titles((item["post"] for item in items), known)
        for item in items:
            item["name"] = names.get(item["person"])
            known_post = posts.get(item["post"], {})
            item["post_title"] = known_post.get("title")
            item["org"] = known_post.get("org")

    # --- claims ------------------------------------------------------------------------------

    async def claim(
        self, claim_id: str, known_at: int | str | dt.date | None = None
    ) -> dict[str, Any]:
        """One claim's lifecycle: reported, then confirmed / corrected / disputed / retracted.

        Returns::

            {"claim": id, "status": "reported" | ..., "known_at": {...},
             "current": {"source", "kind", "person", "name", "post", "post_title", "org",
                         "capacity", "cause", "effective", "modality", "attribution",
                         "quote", "locator", "confirmed", "confirmed_effective", "sources",
                         "disputes", "reported_position", "counts_from"},
             "lifecycle": [{"position", "type", "status", "recorded_at", "actor", "source",
                            ...details of the step: effective, quote, changes, reason,
                            conflicts_with}],
             "disputed_by": [{"claim", "position", "source", "reason"}],
             "sources": {source id: {"source", "url", "publisher", "title", ...}},
             "comments": [{"position", "source", "org", "outcome"}]}

        ``disputed_by`` are the other claims whose latest dispute, known then, names this
        one (their own lifecycles hold the rest), in the order they were disputed.
        ``comments`` are the requests for comment its sources recorded ("did not respond").
        ``counts_from`` is the date the change takes effect from, as ``state`` counts it, with
        its ``basis`` (``effective``, ``confirmed``, or for a change without a date
        ``published`` or ``recorded``); None while it is only expected, or retracted.
        """
        self.check_claim(claim_id, known_at)
        known = await self.resolve_known_at(known_at)
        # Every version holds the claim's whole state so far (its sources, its disputes), so
        # a claim of thousands of steps has versions adding up to the square of its steps
        # (5,000 steps: 138 MB of JSON, 1.2 GB decoded at once): they are read a page at a
        # time, and only each one's step kept, and the latest whole. Versions known by then
        # never change, so the pages agree.
        lifecycle: list[dict[str, Any]] = []
        doc: dict[str, Any] = {}
        after = -1
        while True:
            rows = await self.store.query(
                "SELECT known_from, doc FROM p_leadership_claim_versions WHERE claim = ? "
                "AND known_from <= ? AND known_from > ? ORDER BY known_from LIMIT ?",
                (claim_id, known["position"], after, _CLAIM_VERSIONS_PAGE),
            )
            if not rows and after < 0:
                raise await self._noting_lag(await self._unknown_claim(claim_id, known["position"]))
            for known_from, text in rows:
                doc = loads(text)
                lifecycle.append(doc["step"])
                after = int(known_from)
            if len(rows) < _CLAIM_VERSIONS_PAGE:
                break
        latest = ClaimVersion(doc)
        hidden = (
            "claim",
            "status",
            "step",
            "reported_anchor",
            "effect_anchor",
            "confirmed_anchor",
        )
        current = {key: value for key, value in latest.doc.items() if key not in hidden}
        current["counts_from"] = latest.effect_date()
        await self._label(known["position"], [current])
        disputed_by = _disputes_naming(claim_id, await self._naming([claim_id], known["position"]))
        own = [*latest.sources, *(step["source"] for step in lifecycle if step["source"])]
        sources = await self._sources(
            [*own, *(dispute["source"] for dispute in disputed_by if dispute["source"])]
        )
        return {
            "claim": claim_id,
            "status": latest.status,
            "known_at": known,
            "current": current,
            "lifecycle": lifecycle,
            "disputed_by": disputed_by,
            "sources": sources,
            # Those of its own sources: another claim's dispute is that claim's story.
            "comments": await self._comments(
                [source for source in sources if source in own], known["position"]
            ),
        }

    async def _comments(self, sources: Sequence[str], position: int) -> list[dict[str, Any]]:
        """The requests for comment these sources recorded up to ``position``, in log order."""
        if not sources:
            return []
        await self._checkpoint("audit")
        rows = await self.store.query(
            "SELECT position, source, org, outcome FROM p_audit_events "
            f"WHERE type = 'comment.requested' AND source IN ({marks(len(sources))}) "
            "AND position <= ? ORDER BY position",
            (*sources, position),
        )
        keys = ("position", "source", "org", "outcome")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    # --- audit -------------------------------------------------------------------------------

    async def audit(
        self,
        *,
        source: str | None = None,
        publisher: str | None = None,
        actor: str | None = None,
        type: str | None = None,
        status: str | None = None,
        attribution: str | None = None,
        recorded_from: str | dt.date | None = None,
        recorded_to: str | dt.date | None = None,
        after: int = 0,
        limit: int = 500,
    ) -> dict[str, Any]:
        """Events matching every filter given, oldest first, ``limit`` at a time.

        ``status`` and ``attribution`` are the current status and attribution kind of the
        event's claim; ``source`` is the event's own source, or its claim's. ``recorded_from``
        and ``recorded_to`` (RFC 3339, or a date: the whole day, UTC) bound the recorded time
        inclusively. Page on with ``after=next_after``. Returns::

            {"filters": {...the filters given...},
             "events": [{"position", "event_id", "type", "stream", "recorded_at", "actor",
                         "claim", "claim_status", "attribution", "source", "publisher",
                         "url", "title"}],
             "next_after": position | None}
        """
        start, end = self.check_audit(
            source=source,
            publisher=publisher,
            actor=actor,
            type=type,
            status=status,
            attribution=attribution,
            recorded_from=recorded_from,
            recorded_to=recorded_to,
            after=after,
            limit=limit,
        )
        applied = await self._checkpoint("audit")
        # A misspelt source or publisher would answer "no events" as if there were none.
        try:
            if source is not None:
                await self._check_source(source)
            if publisher is not None:
                await self._check_publisher(publisher)
            if actor is not None:
                await self._check_actor(actor)
        except UnknownEntity as error:
            raise await self._noting_lag(error, "audit") from None
        conditions = ["e.position > ?"]
        parameters: list[Any] = [storable(after)]
        filters: dict[str, Any] = {}
        given = {
            "source": source,
            "publisher": publisher,
            "actor": actor,
            "type": type,
            "status": status,
            "attribution": attribution,
        }
        scan = await self._scan_for_claims(status, attribution)
        for name, value in given.items():
            if value is not None:
                column = _AUDIT_COLUMNS[name]
                if scan and name in _CLAIM_FILTERS:
                    # An expression, not the column: no index can serve it.
                    column = f"{column} || ''"
                conditions.append(f"{column} = ?")
                parameters.append(value)
                filters[name] = value
        if start is not None:
            conditions.append("e.recorded_at >= ?")
            parameters.append(format_time(start))
            filters["from"] = format_time(start)
        if end is not None:
            conditions.append("e.recorded_at <= ?")
            parameters.append(format_time(end))
            filters["to"] = format_time(end)
        if not await self._any_combination(type, status, attribution):
            return {"filters": filters, "events": [], "next_after": None}
        # Recorded times never go backwards along the log, so within a recorded range the
        # (recorded_at, position) index gives log order without sorting the whole range.
        ranged = start is not None or end is not None
        order = "e.recorded_at, e.position" if ranged else "e.position"
        rows = await self.store.query(
            "SELECT e.position, e.event_id, e.type, e.stream, e.recorded_at, e.actor, e.claim, "
            "c.status, c.attribution, e.source, e.publisher, s.url, s.title, e.org, e.outcome "
            "FROM p_audit_events e LEFT JOIN p_audit_claims c ON c.claim = e.claim "
            "LEFT JOIN p_audit_sources s ON s.source = e.source "
            f"WHERE {' AND '.join(conditions)} ORDER BY {order} LIMIT ?",
            # One more than asked for: whether anything follows (a page that is just full
            # must not send the reader on to an empty one).
            (*parameters, limit + 1),
        )
        events = [dict(zip(_AUDIT_KEYS, row, strict=True)) for row in rows[:limit]]
        next_after = events[-1]["position"] if len(rows) > limit else None
        if next_after is None:
            # The last page: not while the log goes on past an event the projection cannot
            # read, which would look like the log's end.
            await self._unless_stopped_after(applied)
        return {"filters": filters, "events": events, "next_after": next_after}

    async def _unless_stopped_after(self, applied: int) -> None:
        """:class:`UnreadableEvent` when the event after ``applied`` is one this version
        cannot read (a newer leaderlog wrote it): the projections stopped before it, and
        no wait gets them past it, as a lag of moments would."""
        try:
            for recorded in await self.store.read_all(after=applied, limit=1):
                payload(recorded)
        except RecordError as error:
            raise UnreadableEvent(
                applied + 1,
                f"{error.message}; answers stop before it: run the leaderlog version that wrote it",
            ) from None

    async def _check_source(self, source: str) -> None:
        if await self.store.query("SELECT 1 FROM p_audit_sources WHERE source = ?", (source,)):
            return
        message = f"unknown source {source!r}"
        wanted = search_form(source.strip())
        if not _lookup_key(wanted):
            raise UnknownEntity(message)
        # The sources with a word starting as the text given does (id, publisher or title),
        # through the index of where their words start: a bounded few, however many there are.
        found, _ = await self._sources_starting_with(wanted)
        near = sorted(
            (source, names[0])
            for source, names, forms in found
            if any(_at_a_word_start(wanted, form) for form in forms)
        )
        if not near:
            near = await _mistyped(wanted, self._sources_starting_with)  # closest first
        raise _did_you_mean(message, near[:_SUGGESTIONS])

    async def _check_publisher(self, publisher: str) -> None:
        # From the publishers' own small table: grouping the sources reads every one.
        if await self.store.query(
            "SELECT 1 FROM p_audit_publishers WHERE publisher = ?", (publisher,)
        ):
            return
        rows = await self.store.query("SELECT publisher, sources FROM p_audit_publishers")
        counted = _counted(rows, "source")
        raise _did_you_mean(
            f"no source has the publisher {publisher!r} (publishers are matched exactly)",
            _near(publisher, [(suggestion, (suggestion[0],)) for suggestion in counted]),
        )

    async def _check_actor(self, actor: str) -> None:
        """An actor that appended nothing is an error, as an unknown source is: most often a
        misspelt name, or the wrong one (an import records ``cli`` unless told otherwise)."""
        if await self.store.query("SELECT 1 FROM p_audit_actors WHERE actor = ?", (actor,)):
            return
        # From the actors' own small table: grouping the events reads every one.
        rows = await self.store.query("SELECT actor, events FROM p_audit_actors")
        # In code-point order: ORDER BY would follow a PostgreSQL database's collation, and
        # so name other actors first there than on SQLite.
        counted = _counted(sorted(rows, key=lambda row: str(row[0])), "event")
        near = _near(actor, [(suggestion, (suggestion[0],)) for suggestion in counted])
        message = f"no event was appended by the actor {actor!r} (actors are matched exactly)"
        if near or not counted:
            raise _did_you_mean(message, near)
        listed = ", ".join(f"{name} ({label})" for name, label in counted[:_SUGGESTIONS])
        more = f" and {len(counted) - _SUGGESTIONS} more" if len(counted) > _SUGGESTIONS else ""
        raise UnknownEntity(f"{message}; the actors are {listed}{more}")

    async def _any_combination(
        self, type: str | None, status: str | None, attribution: str | None
    ) -> bool:
        """Whether any event has this type whose claim has this status and attribution (each
        None: any). Asked of the counts of each combination: through the indexes, an event
        type combined with a claim filter that no claim of it meets reads every event of
        the type (hundreds of thousands on a large log) to find none."""
        wanted = {"type": type, "status": status, "attribution": attribution}
        given = {name: value for name, value in wanted.items() if value is not None}
        if not given.keys() & set(_CLAIM_FILTERS):
            return True  # one index answers an event type alone
        where = " AND ".join(f"{name} = ?" for name in given)
        rows = await self.store.query(
            f"SELECT 1 FROM p_audit_combinations WHERE {where} LIMIT 1", list(given.values())
        )
        return bool(rows)

    async def _scan_for_claims(self, status: str | None, attribution: str | None) -> bool:
        """Whether to find events of claims with this status and attribution by reading the
        events in order, rather than through the claims' own index.

        The index gives every event of every such claim, which must then be sorted before the
        first page is known: fine for a few claims, seconds for the tens of thousands of
        retracted ones in a large log. Past ``_SCAN_FROM_CLAIMS`` claims, matching events are
        common enough that reading in log order fills a page sooner.
        """
        wanted = {"status": status, "attribution": attribution}
        given = {name: value for name, value in wanted.items() if value is not None}
        if not given:
            return False
        where = " AND ".join(f"{name} = ?" for name in given)
        rows = await self.store.query(
            f"SELECT count(*) FROM (SELECT 1 FROM p_audit_claims WHERE {where} "
            f"LIMIT {_SCAN_FROM_CLAIMS}) AS matching",
            list(given.values()),
        )
        return int(rows[0][0]) >= _SCAN_FROM_CLAIMS


def _beyond_the_head(wanted: int, head: int) -> InvalidQuery:
    message = f"known-at position {wanted} is beyond the log's head ({head})"
    # A day written without its dashes (20250529) reads as a position.
    digits = str(wanted)
    if len(digits) == 8:
        try:
            day = dt.date(int(digits[:4]), int(digits[4:6]), int(digits[6:]))
        except ValueError:
            pass
        else:
            message += f"; for a time, write the day as {day.isoformat()}"
    return InvalidQuery(message, parameter="known_at")


def _as_is(value: Any) -> Any:
    return value


def _disputes_naming(claim: str, disputing: Sequence[ClaimVersion]) -> list[dict[str, Any]]:
    """The latest dispute of each of ``disputing`` that names ``claim``, oldest first."""
    found = [
        {
            "claim": version.claim,
            "position": dispute["position"],
            "source": dispute["source"],
            "reason": dispute["reason"],
        }
        for version in disputing
        for dispute in version.disputes[-1:]
        if claim in dispute["conflicts_with"]
    ]
    return sorted(found, key=lambda dispute: (dispute["position"], dispute["claim"]))


def _keyed_tenures_of(
    versions: Iterable[ClaimVersion],
) -> tuple[list[tuple[TenureOrder, dict[str, Any]]], list[dict[str, Any]]]:
    """:func:`keyed_tenures` of ``versions``, one group per post and person."""
    groups: dict[tuple[str, str], list[ClaimVersion]] = defaultdict(list)
    for version in versions:
        groups[(version.post, version.person)].append(version)
    return keyed_tenures(groups.values())


def _in_order(
    waiting: list[tuple[ChangeToComeOrder, Any]],
    parts: Sequence[Iterable[tuple[TenureOrder, Any]]],
    read_back: Callable[[Any], dict[str, Any]],
) -> tuple[Iterator[dict[str, Any]], Iterator[dict[str, Any]]]:
    """A history's changes to come (sorted here, by their keys) and its tenures (merged from
    ``parts``, each sorted by its keys), in order, each read back as it is reached."""
    waiting.sort(key=itemgetter(0))
    # A post lies in one part, so tenures tied on their day, post and person come from
    # one part, in its order: the merge keeps it, as one sort of them all would.
    merged = heapq.merge(*parts, key=itemgetter(0))
    return (read_back(kept) for _, kept in waiting), (read_back(kept) for _, kept in merged)


def _check_post_count(
    posts: Sequence[dict[str, Any]], org: str | None, max_posts: int | None, command: str
) -> None:
    """Refuse a question about more than ``max_posts`` posts, saying how to ask instead."""
    if max_posts is not None and (
        not isinstance(max_posts, int) or isinstance(max_posts, bool) or max_posts < 1
    ):
        raise InvalidQuery(f"max_posts must be a whole number of at least 1, got {max_posts!r:.80}")
    if max_posts is None or len(posts) <= max_posts:
        return
    at_once = f"at most {max_posts} {'is' if max_posts == 1 else 'are'} answered at once"
    if org is None:
        # No parameter was given: the question as a whole is too large.
        raise InvalidQuery(
            f"{len(posts)} posts are known in the log; {at_once}: ask for one organisation "
            "and its subtree (org=ID)"
        )
    # Already one subtree: only its parts, or the CLI (no cap), can answer; and when the
    # organisation's own posts are too many, no part of it can.
    cli = f"`leaderlog {command} --org {org}`, which has no such cap"
    own = sum(1 for post in posts if post["org"] == org)
    if own <= max_posts:
        where = f"under {org!r}"
        ask = f"ask for each of its sub-organisations (org=ID), or run {cli}"
    else:
        mine = "all its own" if own == len(posts) else f"{own} of them its own"
        where, ask = f"under {org!r}, {mine}", f"run {cli}"
    raise InvalidQuery(f"{len(posts)} posts are known {where}; {at_once}: {ask}", parameter="org")


# What to do about events appended but not applied yet, for whoever reads the message.
_NOT_APPLIED_YET = (
    "a server applies new events within moments, a library caller with ProjectionRunner.catch_up()"
)


def _at(known: int | None) -> int:
    """The position a version must be valid at: ``known``, or (None) the current one."""
    return OPEN - 1 if known is None else known


async def _mistyped(
    wanted: str, starting_with: Callable[[str, Collection[str]], Awaitable[_Found]]
) -> list[tuple[str, str]]:
    """What ``wanted`` reads as a mistyping of (a letter doubled, dropped, swapped or wrong, a
    hyphen left out: ``ice-hsii``, ``robert-hamer``, ``kennet-genalo``, ``whitehouse``),
    among what ``starting_with`` finds by a start of one of its words shared with it, then
    scored: those whose id or a name is most like it, closest first.

    Its first three letters are looked up first, then one more at a time until a lookup
    finds every entity starting so (a longer start finds only some of those), then each
    of its later words: a typo in one word leaves the others to find it by. A dozen
    lookups at most, each an index range; most texts like no entity at all and are
    told apart by their lengths alone, before any letter is compared."""
    candidates: dict[str, tuple[list[str], list[str]]] = {}
    words = [word for word in _WORDS.findall(wanted)[1:] if len(word) >= 3]
    starts = [wanted[:cut] for cut in range(3, len(wanted))]
    lookups = 0
    for start in starts:
        found, complete = await starting_with(start, candidates)
        candidates.update((entity, (names, forms)) for entity, names, forms in found)
        lookups += 1
        if complete or lookups >= _MISTYPED_LOOKUPS // 2:
            break
    for word in words[: _MISTYPED_LOOKUPS - lookups]:
        found, _ = await starting_with(word, candidates)
        candidates.update((entity, (names, forms)) for entity, names, forms in found)
    matcher = SequenceMatcher(b=wanted, autojunk=False)
    scored = []
    for entity, (names, forms) in candidates.items():
        likeness = 0.0
        for form in forms:
            matcher.set_seq1(form)
            if matcher.real_quick_ratio() >= _LIKE_ENOUGH and matcher.quick_ratio() >= (
                _LIKE_ENOUGH
            ):
                likeness = max(likeness, matcher.ratio())
        if likeness >= _LIKE_ENOUGH:
            scored.append((-likeness, entity, ", ".join(names)))
    return [(entity, label) for _, entity, label in sorted(scored)[:_SUGGESTIONS]]


def _check_one_of(name: str, value: object, known: Collection[str]) -> None:
    """Refuse a filter ``value`` that is not one of the ``known`` values of ``name``."""
    if value is None:
        return
    # A list of them would otherwise fail as unhashable, or be "unknown" as a whole.
    if not isinstance(value, str):
        raise InvalidQuery(f"{name} must be text, got {value!r:.80}", parameter=name)
    if value not in known:
        listed = sorted(known) if name == "type" else known
        raise InvalidQuery(
            f"unknown {_FILTER_WORDS[name]} {echoed(value)}; known: {', '.join(listed)}",
            parameter=name,
        )


_FILTER_WORDS = {"type": "event type", "status": "status", "attribution": "attribution"}


def _check_whole_number(name: str, number: object) -> None:
    if isinstance(number, bool) or not isinstance(number, int):
        raise InvalidQuery(f"{name} must be a whole number, got {number!r}", parameter=name)


def _near(
    given: str, candidates: Sequence[tuple[tuple[str, str], Sequence[str | None]]]
) -> list[tuple[str, str]]:
    """The suggestions (id and label) one of whose texts contains ``given``, compared as
    names are (:func:`search_form`), the first few in code point order."""
    wanted = _spaced_once(given)
    if not wanted:
        return []
    found = [
        suggestion
        for suggestion, texts in candidates
        if any(wanted in _spaced_once(text) for text in texts if text)
    ]
    if not found:
        # "Fox Newz": as like one of its texts as a mistyped id is.
        matcher = SequenceMatcher(b=wanted, autojunk=False)
        for suggestion, texts in candidates:
            for text in texts:
                matcher.set_seq1(_spaced_once(text or ""))
                if matcher.real_quick_ratio() >= _LIKE_ENOUGH and matcher.ratio() >= _LIKE_ENOUGH:
                    found.append(suggestion)
                    break
    return sorted(found)[:_SUGGESTIONS]


def _spaced_once(text: str) -> str:
    """``text`` as names are compared (:func:`search_form`), each run of spaces one space:
    "Capitol  Ledger" is the one publisher "Capitol Ledger"."""
    return " ".join(search_form(text).split())


def _lookup_key(word: str) -> str:
    """What of ``word`` (in :func:`search_form`) a word of a text starts with: from its first
    letter or digit on (a leading ``-`` or ``(`` comes before the word it is found at)."""
    for start, character in enumerate(word):
        if character.isalnum():
            return word[start:]
    return ""


def _tail_range(word: str) -> tuple[bytes, bytes]:
    """The tails (see :func:`word_tails`) starting with ``word``: at least the first, below
    the second. No byte of UTF-8 is 0xFF, so none follows a prefix and reaches it."""
    key = _lookup_key(word)[:TAIL_LENGTH].encode()
    return key, key + b"\xff"


def _at_a_word_start(word: str, text: str) -> bool:
    """Whether ``text`` holds ``word`` (both in :func:`search_form`) where one of its words
    starts: the first letter or digit of ``word`` is the first of a word of ``text``."""
    lead = len(word) - len(_lookup_key(word))
    found = text.find(word)
    while found >= 0:
        start = found + lead
        if start == 0 or not text[start - 1].isalnum():
            return True
        found = text.find(word, found + 1)
    return False


def _counted(rows: Sequence[Sequence[Any]], noun: str) -> list[tuple[str, str]]:
    """(name, count) rows as suggestions: each name with how many ``noun``s it has."""
    return [(row[0], f"{row[1]} {noun}{'s' if row[1] != 1 else ''}") for row in rows]


def _did_you_mean(message: str, suggestions: Sequence[tuple[str, str]]) -> UnknownEntity:
    """``message``, followed by the suggested ids (each with its label), if there are any."""
    if not suggestions:
        return UnknownEntity(message)
    described = [f"{found} ({label})" for found, label in suggestions]
    if len(described) > 1:
        options = f"{', '.join(described[:-1])} or {described[-1]}"
    else:
        options = described[0]
    return UnknownEntity(f"{message}; did you mean {options}?", [found for found, _ in suggestions])


def _entity_names(columns: Mapping[str, str | None]) -> list[str]:
    """An entity's names, short name, title and aliases (as JSON in ``aliases``), each once."""
    names: list[str] = []
    for column, value in columns.items():
        if value is None:
            continue
        for name in loads(value) if column == "aliases" else [value]:
            if name not in names:
                names.append(name)
    return names


async def _decoded(rows: Sequence[tuple[Any, ...]]) -> list[ClaimVersion]:
    """The claim versions of ``(doc,)`` rows (on a worker thread when there are many)."""
    return await _worked_out(len(rows), lambda: [ClaimVersion(loads(doc)) for (doc,) in rows])


async def _worked_out(items: int, work: Callable[[], _T]) -> _T:
    """``work()``, on a worker thread when it goes through more than ``_OFF_LOOP_VERSIONS``
    items: a server's event loop answers other requests meanwhile."""
    return await asyncio.to_thread(work) if items > _OFF_LOOP_VERSIONS else work()
