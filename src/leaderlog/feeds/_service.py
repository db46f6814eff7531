"""Feed documents on demand, with validators and a cache of rendered bytes.

A request is first *described* (which position it depends on, hence its ETag and
Last-Modified) from a small in-memory view of the scope heads; only when the client does not
already hold that version is the document rendered, or taken from the cache of rendered
documents keyed by (scope, format, language, page, base URL, position). A warm GET is two
dictionary lookups.

The heads view is dropped whenever the projection's checkpoint moves; the checkpoint is read
at most every ``poll_interval`` seconds, or at once after :meth:`FeedService.invalidate`.
"""

from __future__ import annotations

import asyncio
import bisect
import datetime as dt
import functools
import gzip
import hashlib
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from email.utils import format_datetime
from typing import Any

from leaderlog._version import leaderlog_version
from leaderlog.errors import FeedError, FeedNotFound, ProjectionError, StoreUnavailable
from leaderlog.feeds import _text
from leaderlog.feeds._address import web_uri, with_lowercase_scheme
from leaderlog.feeds._document import Feed, RecentChange
from leaderlog.feeds._i18n import N_, language, resolve
from leaderlog.feeds._json_feed import render_json
from leaderlog.feeds._opml import Outline, dated_opml, opml_parts
from leaderlog.feeds._paging import (
    FORMATS,
    MEDIA_TYPES,
    PAGE_SIZE,
    SUBJECT_KINDS,
    FeedFormat,
    Scope,
    archive_links,
    feed_url,
    is_complete,
    is_full,
    page_count,
    page_url,
    rank_range,
)
from leaderlog.feeds._read import EPOCH, FeedReader, Head
from leaderlog.feeds._render import render_atom, render_rss
from leaderlog.projections.base import not_built
from leaderlog.projections.feed_entries import FeedEntriesProjection
from leaderlog.store import EventStore

__all__ = [
    "Directory",
    "FeedNotFound",
    "FeedRequest",
    "FeedService",
    "Rendered",
    "Validators",
    "named_subject",
]

# Bump when the rendering changes, so validators handed out before no longer match. The
# feed entries projection's version is part of every validator too: a change to what it
# stores changes documents, and must change their validators with them.
RENDER_VERSION = 34
_RENDERING = (RENDER_VERSION, FeedEntriesProjection.version)
SUBSCRIPTION_CACHE = "public, max-age=300"
FULL_ARCHIVE_CACHE = "public, max-age=31536000, immutable"
_REBUILDING = "the feeds are being rebuilt; try again shortly"
_CATCHING_UP = "the feeds are catching up with the log; try again shortly"
_CHANGING = "this feed is changing too fast to be read whole; try again shortly"
# Renders of a document begun again because its scope moved while it was read.
_RENDER_TRIES = 8


class _Moved(Exception):
    """The scope moved on while its document was read: the entries read may be newer than
    the validators the document would be sent with."""


# Fixed forever: feed ids derive from it.
_FEED_NAMESPACE = uuid.UUID("0f1d5f7e-3b0a-4c55-9a57-7a4b7b0f7c11")
_CACHE_BYTES = 64 * 1024 * 1024
# Arrivals remembered for Last-Modified (see FeedService._dated); older ones go back to their
# stamps, seconds to minutes after they were new.
_ARRIVALS_KEPT = 1024
# Requests remembered between two moves of the log (each is a few hundred bytes).
_DESCRIBED_LIMIT = 10_000
# Twelve hex digits of the chain's hash tell apart two logs at one position (see log_hash).
_HASH_IN_TAG = 12
_HASHES_KEPT = 4096
# What every feed is about: the OPML lists them, the overview links to them.
_SUBJECTS = ("org", "person", "post")
# Share of ``cache_bytes`` kept for the OPML's outlines, which outlive moves of the log.
_OUTLINES_SHARE = 4


def _page_number(page: int) -> str:
    """A page number as a 404 names it: whole up to 20 digits (more than any feed has
    pages), else its first digits and how many there are, not thousands of them."""
    digits = str(page)
    return digits if len(digits) <= 20 else f"{digits[:20]}... ({len(digits):,} digits)"


def _dated_and_compressed(parts: tuple[bytes, bytes], stamp: dt.datetime) -> tuple[bytes, bytes]:
    body = dated_opml(parts, stamp)
    # mtime=0 keeps the compressed bytes as reproducible as the document.
    return body, gzip.compress(body, compresslevel=6, mtime=0)


def named_subject(text: str) -> FeedNotFound | None:
    """For a scope that names its subject some other way than by id (``org:ICE``,
    ``person:Robert J. Hammer``): the error whose :meth:`~FeedNotFound.explained` names the
    ids probably meant; None when ``text`` names no subject at all."""
    kind, _, named = text.partition(":")
    if kind not in SUBJECT_KINDS or not named.strip():
        return None
    entity = SUBJECT_KINDS[kind]
    return FeedNotFound(f"unknown {entity} {named!r}", Scope(kind, named))  # type: ignore[arg-type]


@functools.lru_cache(maxsize=64)
def _feed_base(address: str) -> str:
    """The address feed paths are appended to: an ``http(s)`` URI without a trailing slash,
    or :class:`FeedError`."""
    base = web_uri(with_lowercase_scheme(address).rstrip("/")) if isinstance(address, str) else None
    if base is None or "?" in base or "#" in base:
        raise FeedError(
            f"feeds need the http:// or https:// address they are served under, without"
            f" ?query or #fragment, as their base; not {address!r}"
        )
    return base


@dataclass(frozen=True, slots=True)
class FeedRequest:
    """One feed document asked for: whose feed (``scope``), in which format (``atom``,
    ``rss`` or ``json``) and language (one of :data:`LANGUAGES`), with its links made from
    ``base_url``; ``page`` an archive page (None: the subscription document).

    Raises :class:`FeedError` for an unknown format or a base that is no http(s) address,
    and :class:`UnknownLanguage` for a language not offered, as it is made."""

    scope: Scope
    format: FeedFormat
    lang: str
    base_url: str
    page: int | None = None
    # Whether the language was asked for in the address (it then stays in every link).
    explicit_lang: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.scope, Scope):
            # A text ("org:ice") would fail deep in the rendering, on its missing .key.
            raise TypeError(
                f"scope must be a Scope (Scope.parse({self.scope!r:.80})), "
                f"not {type(self.scope).__name__}"
            )
        if self.format not in FORMATS:
            raise FeedError(f"unknown feed format {self.format!r}; known: {', '.join(FORMATS)}")
        # Held to what --lang and --base-url take, for a request made without them: a tag in
        # any case or with a region (RFC 5646, 2.1.1), an address with a trailing slash.
        object.__setattr__(self, "lang", resolve(self.lang))
        object.__setattr__(self, "base_url", _feed_base(self.base_url))

    @property
    def link_lang(self) -> str | None:
        return self.lang if self.explicit_lang else None


@dataclass(frozen=True, slots=True)
class Validators:
    """What a conditional GET is answered from, without rendering anything."""

    position: int
    etag: str
    last_modified: dt.datetime
    cache_control: str
    last_modified_http: str = field(init=False)

    def __post_init__(self) -> None:
        text = format_datetime(self.last_modified.replace(microsecond=0), usegmt=True)
        object.__setattr__(self, "last_modified_http", text)

    @property
    def final(self) -> bool:
        """Whether the document never changes again (a full archive page)."""
        return self.cache_control == FULL_ARCHIVE_CACHE


@dataclass(frozen=True, slots=True)
class Rendered:
    """A feed document: its bytes (and gzipped), media type, the validators a conditional
    GET is answered from, and the language it is written in."""

    body: bytes
    gzipped: bytes
    media_type: str
    validators: Validators
    language: str
    # Room for a server to keep what it derives from the document (e.g. its headers).
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Directory:
    """Every organisation, person and post as known from ``position`` (the last event that
    changed one of them) until the next such event: by kind, each ``(id, doc)`` in id order.

    Shared by every request that reads it until then, so nothing may change its docs.
    ``memo`` is room for what a reader derives from them alone (the organisations in tree
    order, a page's list of feeds), which stays right exactly as long as they do."""

    position: int
    kinds: Mapping[str, Sequence[tuple[str, dict[str, Any]]]]
    # The stamp of the event at ``position`` (1970 before any).
    stamp: dt.datetime
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)


def _page_org(kind: str, entity_id: str | None, doc: Mapping[str, Any] | None) -> str | None:
    """The organisation whose page (``/?org=``) shows a feed's subject: an organisation's
    own, a post's organisation (which lists its holders, on a large log too, where the
    overview lists only organisations); None, the overview, for a person or every claim."""
    if kind == "org":
        return entity_id
    if kind == "post" and doc is not None:
        org = doc.get("org")
        return org if isinstance(org, str) and org else None
    return None


class FeedService:
    """Renders feed documents from the ``feed_entries`` read model of ``store`` (see
    :meth:`render`, and :meth:`describe` for validators alone), keeping the documents it
    rendered lately, up to ``cache_bytes``, until the log moves on; whether it has is read
    at most every ``poll_interval`` seconds."""

    def __init__(
        self,
        store: EventStore,
        *,
        poll_interval: float = 0.25,
        cache_bytes: int = _CACHE_BYTES,
    ) -> None:
        self.reader = FeedReader(store)
        self.poll_interval = poll_interval
        self.cache_bytes = cache_bytes
        self._checked = -1.0
        self._checkpoint: int | None = None
        self._served = 0
        self._rebuilding = False
        self._generation = 0
        self._heads: dict[str, Head | None] = {}
        self._described: dict[FeedRequest, Validators] = {}
        self._clock: tuple[int, dt.datetime] | None = None
        # (position before, position after, when this service first saw them), oldest first.
        self._arrivals: list[tuple[int, int, dt.datetime]] = []
        # The latest time the wall clock has said (see _now).
        self._clock_reached: dt.datetime | None = None
        self._floor: dt.datetime | None = None
        self._taken_through: int | None = None
        self._frozen_pages: dict[tuple[str, int], tuple[int, dt.datetime]] = {}
        self._rendered: OrderedDict[tuple[Any, ...], Rendered] = OrderedDict()
        self._rendered_bytes = 0
        self._inflight: dict[tuple[Any, ...], asyncio.Future[Rendered]] = {}
        self._directory: Directory | None = None
        self._outlines: OrderedDict[tuple[Any, ...], tuple[bytes, bytes]] = OrderedDict()
        self._outlines_bytes = 0
        self._generator_version = leaderlog_version()
        # The chain's hash at each position an ETag names lately (see log_hash).
        self._log_hashes: OrderedDict[int, str] = OrderedDict()

    # --- freshness ---------------------------------------------------------------------------

    def invalidate(self) -> None:
        """Look at the projection again on the next request (call after appending)."""
        self._checked = -1.0

    def applied(self, position: int) -> None:
        """The feed projection has applied the log up to ``position``, as its follower or a
        writer waiting for its own event has just seen: those events arrive now, not when
        the next reader asks (see :meth:`_dated`), and the projection is looked at again on
        the next request."""
        if not self._rebuilding:
            self._took_in(position)
        self._checked = -1.0

    def log_replaced(self, head: int) -> None:
        """The log no longer holds what the feeds were read from: events were removed from
        its end, or another log was put in its place (a runner found so and is rebuilding its
        projections from this one, which ends at ``head``). Nothing read or rendered before is
        served again, and the feeds say they are being rebuilt until the feed projection has
        applied this log up to ``head``, however much shorter it is than what was served."""
        self._served = head
        self._rebuilding = True
        self._checkpoint = None
        self._checked = -1.0
        self._forget(documents=True)

    async def log_hash(self, position: int) -> str:
        """A short form of the chain's hash at ``position``, which an ETag names beside the
        position: the hash chain ties it to every event up to there, so two logs that differ
        by then (one restored from an older copy and written again, or two servers' logs that
        went apart) never give one tag to different documents."""
        found = self._log_hashes.get(position)
        if found is not None:
            self._log_hashes.move_to_end(position)
            return found
        if position <= 0:
            return "0"
        event = await self.reader.store.get(position)
        if event is None:
            # Cut short, and no runner has found so yet: not kept, as the log may grow there
            # again; what is there then gets its own hash.
            return "gone"
        found = event.hash[:_HASH_IN_TAG]
        self._log_hashes[position] = found
        while len(self._log_hashes) > _HASHES_KEPT:
            self._log_hashes.popitem(last=False)
        return found

    def _now(self) -> dt.datetime:
        """The wall clock, never earlier than it has said before.

        A clock stepped back (NTP, say) leaves the log's head ahead of it, and the store
        stamps new events with the head's time: in the second of the last Last-Modified sent
        (see :meth:`_dated`). Dated by when they arrive on a clock that never goes back, they
        fall after every date this service may have sent."""
        now = dt.datetime.now(dt.UTC)
        reached = self._clock_reached
        if reached is not None and now < reached:
            return reached
        self._clock_reached = now
        return now

    async def _arrivals_floor(self) -> None:
        """Set the earliest an arrival is dated (see :meth:`_dated`) at a first look (a start,
        or once a rebuild is through) that finds the log dated ahead of the clock: the second
        after its latest date. That second may have been sent as Last-Modified before, by this
        server before a restart or by another, and with the clock stepped back since, the
        store stamps what comes next within it; dated by the clock, it would stay there."""
        if self._floor is not None:
            return
        latest = await self.reader.latest_stamp()
        self._floor = EPOCH
        if self._now() < latest:
            self._floor = latest.replace(microsecond=0) + dt.timedelta(seconds=1)

    async def _fresh(self) -> None:
        # Read on every request, as each may send a Last-Modified whose second is over by
        # the clock's time then (see _now).
        self._now()
        now = time.monotonic()
        # While a rebuild runs, every request looks again: its end is served at once.
        if now - self._checked < self.poll_interval and not self._rebuilding:
            return
        self._checked = now
        checkpoint = await self._unless_rebuilding()
        if checkpoint is not None:
            self._took_in(checkpoint)
            await self._arrivals_floor()
        if checkpoint != self._checkpoint:
            self._checkpoint = checkpoint
            # Reads begun before this point may be older than the checkpoint: they are not
            # remembered (see the generation checks below). Rendered documents are keyed by
            # position, so they stay valid.
            self._forget(documents=False)

    def _took_in(self, position: int) -> None:
        """Remember when the events up to ``position`` reached this service, which may be
        well after they were stamped: see :meth:`_dated`. What it finds at its first look
        (or after a rebuild) was there before it: no arrival of its own."""
        before = self._taken_through
        if before is not None and position <= before:
            return
        self._taken_through = position
        if before is not None:
            self._arrivals.append((before, position, self._now()))
            if len(self._arrivals) > 2 * _ARRIVALS_KEPT:
                # Merged, not forgotten: dated by its stamp again, a change that arrived after
                # its second was over would share that second with the copy a reader got
                # before it, and be answered 304. The merged arrival dates each position it
                # covers by the latest of their moments: later, never earlier.
                dropped = self._arrivals[:-_ARRIVALS_KEPT]
                merged = (dropped[0][0], dropped[-1][1], dropped[-1][2])
                self._arrivals[:] = [merged, *self._arrivals[-_ARRIVALS_KEPT:]]

    def _dated(self, position: int, stamp: dt.datetime) -> dt.datetime:
        """A document's Last-Modified: its last event's stamp, or the moment this service
        took that event in (no earlier than :meth:`_arrivals_floor`), whichever is later.

        Another process's write reaches this service only as it polls the projection, up to
        about a second after its stamp, when the stamp's second may be over and already sent
        as another version's Last-Modified: dated by the stamp alone, the changed document
        would be answered ``304`` to that If-Modified-Since. What was there when the service
        started keeps its stamp, as a restart should not move every date. Older arrivals are
        merged (see :meth:`_took_in`), so a date may move later, never earlier: a document
        kept from before is sent with its new date (see :meth:`_kept`). A position read
        beyond the projection's checkpoint as last polled (it moved on meanwhile) arrives
        now.
        """
        self._took_in(position)
        index = bisect.bisect_left(self._arrivals, position, key=lambda arrival: arrival[1])
        if index < len(self._arrivals):
            before, _, seen = self._arrivals[index]
            if before < position:
                return max(stamp, seen, self._floor or EPOCH)
        return stamp

    async def _unless_rebuilding(self) -> int | None:
        """The feed projection's checkpoint; raises :class:`StoreUnavailable` while it is
        behind what this service has served already.

        That is a rebuild (by ``leaderlog rebuild``, say): its partial tables would make feeds
        lose entries, or look complete and empty, to readers and caches alike. Everything read
        since it began may be partial, so nothing read before it ends is kept.
        """
        checkpoint = await self.reader.checkpoint()
        if checkpoint is None and not self._served:
            # Never built: there are no tables to read (a server builds them before serving).
            raise ProjectionError(not_built(FeedEntriesProjection.name))
        if (checkpoint or 0) < self._served:
            # Reads that overlap may end out of order: a rebuild is one the log still shows
            # when read again.
            checkpoint = await self.reader.checkpoint()
        if (checkpoint or 0) < self._served:
            if not self._rebuilding:
                self._rebuilding = True
                self._checkpoint = None
                self._forget(documents=True)
            raise StoreUnavailable(_REBUILDING, public=_REBUILDING)
        if not checkpoint and (await self.reader.store.head())[0] > 0:
            # Not one event taken in yet (a rebuild's start, or a projection that cannot
            # apply the log): empty feeds marked complete would tell readers and caches that
            # every entry is gone.
            raise StoreUnavailable(_CATCHING_UP, public=_CATCHING_UP)
        if self._rebuilding:
            self._rebuilding = False
            self._checkpoint = None
            self._forget(documents=True)
        self._served = checkpoint or 0
        return checkpoint

    def _forget(self, *, documents: bool) -> None:
        """Drop what was read from the projection; with ``documents``, the rendered ones and
        frozen page positions too (a rebuild may have read them half-built)."""
        self._generation += 1
        self._heads.clear()
        self._described.clear()
        self._clock = None
        if documents:
            self._arrivals.clear()
            self._taken_through = None
            self._floor = None
            self._log_hashes.clear()
            self._frozen_pages.clear()
            self._rendered.clear()
            self._rendered_bytes = 0
            # Keyed by position like the documents: read half-built, or from another log.
            self._directory = None
            self._outlines.clear()
            self._outlines_bytes = 0

    async def head(self, scope: Scope) -> Head:
        """The scope's head; raises :class:`FeedNotFound` for an unknown subject."""
        await self._fresh()
        key = scope.key
        if key in self._heads:
            found = self._heads[key]
        else:
            generation = self._generation
            found = await self.reader.head(key)
            # Unknown ids are not remembered: anyone can ask for endlessly many.
            if generation == self._generation and found is not None:
                self._heads[key] = found
        if found is None:
            raise FeedNotFound(f"unknown {scope.subject_kind} {scope.id!r}", scope)
        return found

    # --- validators --------------------------------------------------------------------------

    def _variant(self, request: FeedRequest) -> str:
        described = "|".join(
            str(part)
            for part in (
                _RENDERING,
                request.scope.key,
                request.format,
                request.lang,
                request.page,
                request.base_url,
                request.explicit_lang,
            )
        )
        return hashlib.sha256(described.encode()).hexdigest()[:16]

    async def lookup(self, request: FeedRequest) -> tuple[Validators, Rendered | None]:
        """The request's validators and, when cached, its document: the warm path."""
        validators = await self.describe(request)
        return validators, self._kept((request, validators.position), validators)

    async def describe(self, request: FeedRequest) -> Validators:
        """Validators of the document a request gets; raises :class:`FeedNotFound`."""
        await self._fresh()
        known = self._described.get(request)
        if known is not None:
            return known
        generation = self._generation
        try:
            validators = await self._describe(request)
        except FeedNotFound as missing:
            checkpoint = await self._unless_rebuilding()
            # A page not taken in yet, rather than never there: events are stored beyond the
            # checkpoint (another server may already link to it).
            backlog = (await self.reader.store.head())[0] - (checkpoint or 0)
            # Each event files an entry in a scope at most once: a page further on than the
            # events still to take in could fill is never there (a crawler is not sent back).
            if (
                missing.scope is None
                and backlog > 0
                and (
                    missing.entries is None
                    or request.page is None
                    or request.page <= page_count(missing.entries + backlog)
                )
            ):
                raise StoreUnavailable(_CATCHING_UP, public=_CATCHING_UP) from None
            # A subject registered in the log but not taken in yet (an import in another
            # process a moment ago): a reader told 404 may drop its subscription.
            scope = missing.scope
            if (
                scope is not None
                and backlog > 0
                and scope.subject_kind is not None
                and scope.id is not None
                # The log's streams are named as the scopes are: org-ice, person-..., post-...
                and await self.reader.store.read_stream(f"{scope.kind}-{scope.id}")
            ):
                raise StoreUnavailable(_CATCHING_UP, public=_CATCHING_UP) from None
            raise
        # Read over several queries: a rebuild begun meanwhile may have emptied the tables.
        await self._unless_rebuilding()
        if generation == self._generation:
            if len(self._described) >= _DESCRIBED_LIMIT:
                self._described.clear()
            self._described[request] = validators
        return validators

    async def _describe(self, request: FeedRequest) -> Validators:
        head = await self.head(request.scope)
        position, cache = head.position, SUBSCRIPTION_CACHE
        moment = self._dated(head.position, head.recorded_at)
        if request.page is not None:
            if not 1 <= request.page <= page_count(head.entries):
                pages = page_count(head.entries)
                raise FeedNotFound(
                    f"archive page {_page_number(request.page)} does not exist "
                    + (f"(this feed has {pages})" if pages else "(the feed is complete)"),
                    entries=head.entries,
                )
            if is_full(request.page, head.entries):
                position, moment = await self._frozen(request.scope, request.page)
                cache = FULL_ARCHIVE_CACHE
        etag = f'W/"{position}-{await self.log_hash(position)}-{self._variant(request)}"'
        return Validators(position, etag, moment, cache)

    async def _frozen(self, scope: Scope, page: int) -> tuple[int, dt.datetime]:
        """Where a full page froze (the first entry of the next page joined); it never
        moves, so it is remembered for good."""
        key = (scope.key, page)
        if key not in self._frozen_pages:
            first, last = rank_range(page)
            info = await self.reader.page_info(scope.key, first, last + 1)
            if info is None:
                raise FeedNotFound(f"archive page {_page_number(page)} does not exist")
            self._frozen_pages[key] = (info.position, info.recorded_at)
        return self._frozen_pages[key]

    # --- documents ---------------------------------------------------------------------------

    async def render(self, request: FeedRequest) -> Rendered:
        """The document for a request (from the cache when its position has not moved).

        Its entries are read over several queries while the projection may move on: a
        document whose scope moved meanwhile is read again at the new position, so that what
        is sent always matches its ETag (a subscription document marked complete and missing
        an entry would make readers drop it).

        Raises :class:`FeedNotFound` for a scope or archive page that does not exist,
        :class:`ProjectionError` while the feed entries were never built, and
        :class:`StoreUnavailable` when the database cannot answer (or the log keeps moving
        while the document is read). A document asked for right after the projection
        moved on may still be the one before for up to ``poll_interval`` seconds: call
        :meth:`invalidate` after catching up to see it at once."""
        for _ in range(_RENDER_TRIES):
            try:
                return await self._render_at_its_position(request)
            except _Moved:
                self._forget(documents=False)
        raise StoreUnavailable(_CHANGING, public=_CHANGING)

    async def _render_at_its_position(self, request: FeedRequest) -> Rendered:
        validators = await self.describe(request)

        async def render() -> Rendered:
            rendered = await self._render(request, validators)
            # As in describe: a document read while a rebuild began is neither sent nor kept.
            await self._unless_rebuilding()
            return rendered

        return await self._rendered_once((request, validators.position), validators, render)

    async def _rendered_once(
        self,
        key: tuple[Any, ...],
        validators: Validators,
        render: Callable[[], Awaitable[Rendered]],
    ) -> Rendered:
        """The document kept under ``key``, else ``render``'s, kept: requests arriving while
        it is rendered share that one rendering rather than each render it again."""
        cached = self._kept(key, validators)
        if cached is not None:
            return cached
        pending = self._inflight.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[Rendered] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            rendered = await render()
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # retrieved here, so an unawaited future logs nothing
            raise
        finally:
            self._inflight.pop(key, None)
        future.set_result(rendered)
        self._remember(key, rendered)
        return rendered

    def _kept(self, key: tuple[Any, ...], validators: Validators) -> Rendered | None:
        """The document kept under ``key``, with ``validators``: dated later since it was
        rendered (see :meth:`_dated`), it is sent with the date a ``304`` gives, or a reader
        holding the earlier date would be sent it again at every poll. Its bytes say the
        stamp, not that date, and stay as they are."""
        cached = self._rendered.get(key)
        if cached is None:
            return None
        if cached.validators != validators:
            cached = self._rendered[key] = replace(cached, validators=validators, memo={})
        self._rendered.move_to_end(key)
        return cached

    def _remember(self, key: tuple[Any, ...], rendered: Rendered) -> None:
        size = len(rendered.body) + len(rendered.gzipped)
        if size > self.cache_bytes:
            return
        self._rendered[key] = rendered
        self._rendered_bytes += size
        while self._rendered_bytes > self.cache_bytes:
            _, dropped = self._rendered.popitem(last=False)
            self._rendered_bytes -= len(dropped.body) + len(dropped.gzipped)

    async def _render(self, request: FeedRequest, validators: Validators) -> Rendered:
        feed = await self.document(request, validators)
        writer = {"atom": render_atom, "rss": render_rss, "json": render_json}[request.format]
        body = writer(feed)
        return Rendered(
            body=body,
            # mtime=0 keeps the compressed bytes as reproducible as the document.
            gzipped=gzip.compress(body, compresslevel=6, mtime=0),
            media_type=f"{MEDIA_TYPES[request.format]}; charset=utf-8",
            validators=validators,
            language=request.lang,
        )

    async def document(self, request: FeedRequest, validators: Validators) -> Feed:
        """The format-neutral document (see :mod:`._document`) for a request."""
        scope, lang = request.scope, language(request.lang)
        head = await self.head(scope)
        frozen_at = validators.position if validators.cache_control == FULL_ARCHIVE_CACHE else None
        if request.page is None:
            docs = await self.reader.recent(scope.key, PAGE_SIZE)
        else:
            docs = await self.reader.page(scope.key, *rank_range(request.page), frozen_at)
        subject = None
        if scope.kind != "all" and scope.id is not None:
            subject = await self.reader.entity(scope.kind, scope.id, frozen_at)
        if frozen_at is None:
            # Read as it is now: it must still be what the validators describe.
            now = await self.reader.head(scope.key)
            if {head.position, now.position if now else 0} != {validators.position}:
                raise _Moved
        if scope.kind == "all":
            title = lang._(N_("Leadership changes"))
        else:
            name = _text.scope_name(scope.kind, subject, scope.id or "", lang)
            title = lang._(N_("Leadership changes: {name}"), name=_text.isolated_text(name))
        if request.page is not None:
            title = lang._(N_("{title} (archive page {page})"), title=title, page=str(request.page))
        links = archive_links(
            request.base_url,
            scope,
            request.format,
            page=request.page,
            entries=head.entries,
            lang=request.link_lang,
        )
        feed_id = uuid.uuid5(_FEED_NAMESPACE, f"{scope.key}|{request.lang}")
        return Feed(
            id=f"urn:uuid:{feed_id}",
            title=title,
            subtitle=lang._(
                N_(
                    "Reported leadership changes, one entry per claim, with status, "
                    "attribution and sources."
                )
            ),
            language=request.lang,
            # The stamp, not a later Last-Modified (see _dated): every server writes the same
            # document for a position.
            updated=validators.last_modified if frozen_at is not None else head.recorded_at,
            self_url=feed_url(
                request.base_url,
                scope,
                request.format,
                page=request.page,
                lang=request.link_lang,
            ),
            # The page in the feed's own language, whatever the browser opening it would ask for.
            home_url=page_url(
                request.base_url, _page_org(scope.kind, scope.id, subject), lang=request.lang
            ),
            author="leaderlog",
            generator="leaderlog",
            generator_version=self._generator_version,
            entries=tuple(_text.entry(doc, lang, request.base_url) for doc in docs),
            archive=request.page is not None,
            final=frozen_at is not None,
            complete=request.page is None and is_complete(head.entries),
            prev_archive=links.prev_archive,
            next_archive=links.next_archive,
            current=links.current,
        )

    # --- the list of every feed ----------------------------------------------------------------

    async def directory(self, at: int | None = None) -> Directory:
        """Every organisation, person and post as known at position ``at`` (now when None).

        Most events change none of them (claims, sources): the list read last is handed out
        again as long as no later one did, which one indexed query tells, where reading
        them all took most of the time of a page or OPML rendered after an append."""
        generation = self._generation
        moved = await self.reader.entities_moved(_SUBJECTS, at)
        known = self._directory
        if known is not None and known.position == moved:
            return known
        kinds: dict[str, list[tuple[str, dict[str, Any]]]] = {kind: [] for kind in _SUBJECTS}
        rows = await self.reader.entities(_SUBJECTS, at=at)
        for row in rows:
            kinds[row.kind].append((row.id, row.doc))
        # Dated by the rows themselves, which one statement reads as of one moment, not by
        # ``moved``: a rebuild begun between the two reads leaves fewer rows than ``moved``
        # had, and once through it changes them last at ``moved`` again.
        last = max(rows, key=lambda row: row.position, default=None)
        found = (
            Directory(last.position, kinds, last.at)
            if last is not None
            else Directory(0, kinds, EPOCH)
        )
        if generation == self._generation:
            self._directory = found
        return found

    async def opml(
        self, lang: str, base_url: str, fmt: FeedFormat = "atom", explicit_lang: bool = False
    ) -> Rendered:
        """Every feed as OPML; it changes when an organisation, person or post does, and is
        dated by the last event that changed one: a claim leaves it as it was."""
        await self._fresh()
        clock = self._clock
        if clock is None:
            generation = self._generation
            clock = await self.reader.clock()
            if generation == self._generation:
                self._clock = clock
        # As known at the position the feeds are served at, however far the projection has
        # moved since.
        directory = await self.directory(clock[0])
        # As in render: outlines read while a rebuild began are neither sent nor kept.
        await self._unless_rebuilding()
        position, stamp = directory.position, directory.stamp
        key = ("opml", lang, base_url, fmt, explicit_lang, position)
        digest = hashlib.sha256(repr((_RENDERING, *key[:-1])).encode()).hexdigest()[:16]
        # Last-Modified may be later than the stamp (see _dated); the document itself says
        # the stamp, so that every server writes the same bytes for a position.
        last_modified = self._dated(position, stamp)
        etag = f'W/"{position}-{await self.log_hash(position)}-{digest}"'
        validators = Validators(position, etag, last_modified, SUBSCRIPTION_CACHE)
        return await self._rendered_once(
            key,
            validators,
            lambda: self._render_opml(lang, base_url, fmt, explicit_lang, validators, directory),
        )

    async def _render_opml(
        self,
        lang: str,
        base_url: str,
        fmt: FeedFormat,
        explicit_lang: bool,
        validators: Validators,
        directory: Directory,
    ) -> Rendered:
        generation = self._generation
        outlines_key = ("opml", lang, base_url, fmt, explicit_lang, directory.position)
        # Built and compressed on a worker thread: for every feed of a large log (100,000
        # organisations take seconds) the event loop would stand still, every other request
        # with it.
        parts = self._outlines.get(outlines_key)
        if parts is None:
            parts = await asyncio.to_thread(
                self._opml_parts, lang, base_url, fmt, explicit_lang, directory
            )
            if generation == self._generation:
                self._keep_outlines(outlines_key, parts)
        else:
            self._outlines.move_to_end(outlines_key)
        body, gzipped = await asyncio.to_thread(_dated_and_compressed, parts, directory.stamp)
        return Rendered(body, gzipped, "text/x-opml; charset=utf-8", validators, lang)

    def _opml_parts(
        self, lang: str, base_url: str, fmt: FeedFormat, explicit_lang: bool, directory: Directory
    ) -> tuple[bytes, bytes]:
        language_ = language(lang)
        link_lang = lang if explicit_lang else None
        groups: dict[str, list[Outline]] = {kind: [] for kind in _SUBJECTS}
        for kind in _SUBJECTS:
            for entity_id, doc in directory.kinds[kind]:
                scope = Scope(kind, entity_id)  # type: ignore[arg-type]
                groups[kind].append(
                    Outline(
                        text=_text.scope_name(kind, doc, entity_id, language_),
                        url=feed_url(base_url, scope, fmt, lang=link_lang),
                        html_url=page_url(base_url, _page_org(kind, entity_id, doc), lang=lang),
                        language=lang,
                    )
                )
        everything = Outline(
            text=language_._(N_("Leadership changes")),
            url=feed_url(base_url, Scope("all"), fmt, lang=link_lang),
            html_url=page_url(base_url, lang=lang),
            language=lang,
        )
        outlines = [
            everything,
            Outline(language_._(N_("Organisations")), children=groups["org"]),
            Outline(language_._(N_("People")), children=groups["person"]),
            Outline(language_._(N_("Posts")), children=groups["post"]),
        ]
        return opml_parts(language_._(N_("leaderlog feeds")), outlines)

    def _keep_outlines(self, key: tuple[Any, ...], parts: tuple[bytes, bytes]) -> None:
        limit = self.cache_bytes // _OUTLINES_SHARE
        size = len(parts[0]) + len(parts[1])
        if size > limit:
            return
        self._outlines[key] = parts
        self._outlines_bytes += size
        while self._outlines_bytes > limit:
            _, (head, tail) = self._outlines.popitem(last=False)
            self._outlines_bytes -= len(head) + len(tail)

    async def recent(self, limit: int, lang: str, scope: str = "all") -> list[RecentChange]:
        """The claims of ``scope`` changed most recently, as pages list them."""
        language_ = language(lang)
        return [
            _text.recent_change(doc, language_) for doc in await self.reader.recent(scope, limit)
        ]
