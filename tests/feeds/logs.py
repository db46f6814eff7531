"""Real logs for feed tests: the seeds, generated claims, lifecycle events and hostile text."""

from __future__ import annotations

import html
import re
import uuid
from collections.abc import Sequence
from typing import Any

from leaderlog.events import (
    Attribution,
    ClaimConfirmed,
    ClaimCorrected,
    ClaimReported,
    ClaimRetracted,
    Event,
    FuzzyDate,
    PersonRegistered,
    PersonUpdated,
    SourceRegistered,
    new_event_id,
)
from leaderlog.feeds import FeedFormat, FeedRequest, FeedService, Scope
from leaderlog.log import EventLog
from leaderlog.projections.feed_entries import FeedEntriesProjection
from leaderlog.projections.runner import ProjectionRunner
from leaderlog.store import NewEvent

FOX = "fox-ice-shakeup-2025-05"
HAMMER_CAPTION = f"{FOX}-hammer-hsi-caption"
HAMMER_BODY = f"{FOX}-hammer-hsi-body"
GENALO_RETIREMENT = f"{FOX}-genalo-retirement"
SEED_CLAIMS = 10
BASE = "http://feeds.test"

SCRIPT = "<script>alert('x')</script> & <b>bold</b>"
RTL = "\u05d3\u05d5\u05d3 \u05dc\u05d5\u05d9 \u0645\u062d\u0645\u062f \u202eevil\u202c"
EMOJI = "Ana \U0001f469\u200d\U0001f4bc \u2603 \U0001f1fa\U0001f1f8"
CONTROL = "Bad\x00Name\x07with\x1bcontrols\x7f\x85end"
# What a decoder leaves of bytes it could not read (U+FFFD): the write path accepts it.
MISDECODED = "Mis\ufffdread text"
LONG = "Very Long Name " * 2000

# Accepted by the write path, and each once mishandled by a feed (see add_markup):
MARKUP_NAME = "Tom <b>Tag</b>"
SCRIPT_QUOTE = "see <script>alert(1)</script> now"
# Source addresses (as stored) and the URI each must be linked as.
ADDRESSES = {
    "amp": ("https://example.org/a?a=1&b=2", "https://example.org/a?a=1&b=2"),
    "apos": ("https://example.org/a?d='s'", "https://example.org/a?d='s'"),
    "iri": ("https://example.org/\u00fcn\u00efcode", "https://example.org/%C3%BCn%C3%AFcode"),
    "angle": ("https://example.org/a?b=<2>&f=]]>", "https://example.org/a?b=%3C2%3E&f=%5D%5D%3E"),
    "braces": ("https://example.org/a?x={1}|^`\\", "https://example.org/a?x=%7B1%7D%7C%5E%60%5C"),
    "idn": (
        "https://b\u00fccher.example/stra\u00dfe?q=\u65e5\u672c#frag<ment>",
        "https://xn--bcher-kva.example/stra%C3%9Fe?q=%E6%97%A5%E6%9C%AC#frag%3Cment%3E",
    ),
    # IDNA 2008 as browsers resolve it, not IDNA 2003 (which makes it strasse.de).
    "idn2008": ("https://stra\u00dfe.de/a", "https://xn--strae-oqa.de/a"),
    "final-sigma": (
        "https://\u1f40\u03b4\u03c5\u03c3\u03c3\u03b5\u03cd\u03c2.gr/",
        "https://xn--pxac3bcak3d8526a.gr/",
    ),
    # A user name and password are never published, nor taken for the host.
    "credentials": ("https://user:secret@example.net/path", "https://example.net/path"),
    "deceptive-user": ("http://www.ice.gov@evil.example/news", "http://evil.example/news"),
    # Hosts that could pass for others are read in their xn-- form as well (see
    # test_lookalike_hosts_are_shown_in_their_ascii_form).
    "lookalike-mixed": ("https://p\u0430ypal.com/login", "https://xn--pypal-4ve.com/login"),
    "lookalike-whole": (
        "https://\u0430\u0440\u0440\u04cf\u0435.com/",
        "https://xn--80ak6aa92e.com/",
    ),
}


# A source in French, to confirm an English source's claim in other words.
FRENCH_SOURCE = SourceRegistered(
    source="le-journal-1",
    url="https://journal.example/genalo",
    publisher="Le Journal",
    language="fr",
)
FRENCH_WORDS = "Le d\u00e9part de Genalo est confirm\u00e9"


def html_words(markup: str) -> str:
    """What HTML reads as: its text without its tags."""
    return html.unescape(re.sub(r"<[^>]*>", "", markup))


async def project(log: EventLog) -> FeedService:
    """Bring the feed entries up to date and return a feed service over them."""
    await ProjectionRunner(log.store, [FeedEntriesProjection()]).catch_up()
    return FeedService(log.store, poll_interval=0)


def generated_claim(index: int, *, person: str | None = None, post: str = "ice-hsi-ead") -> Event:
    return ClaimReported(
        claim=f"gen-{index}",
        source=FOX,
        kind=("appointment", "departure", "incumbency")[index % 3],
        person=person or f"person-{index}",
        post=post,
        capacity=("acting", "permanent", "unspecified", "interim")[index % 4],
        cause="retirement" if index % 3 == 1 else None,
        effective=FuzzyDate(date=f"2025-0{index % 9 + 1}", qualifier="about"),
        modality=("occurred", "expected", "announced", "rumored")[index % 4],
        attribution=Attribution(kind="anonymous", parties=("ICE",)),
        quote=f"Quote number {index}.",
        locator="body",
    )


async def add_claims(log: EventLog, first: int, count: int, *, batch: int = 40) -> None:
    """Register ``count`` people with one claim each (ids ``gen-<n>``), in a few batches."""
    events: list[Event] = []
    for index in range(first, first + count):
        events.append(PersonRegistered(person=f"person-{index}", name=f"Person {index}"))
        events.append(generated_claim(index))
    for start in range(0, len(events), batch * 2):
        await log.append_events(events[start : start + batch * 2], actor="test")


async def correct(log: EventLog, claim: str, **changes: Any) -> None:
    await log.append_events(
        [ClaimCorrected(claim=claim, changes=changes, reason="The memo was misread.")],
        actor="test",
    )


async def retract(log: EventLog, claim: str) -> None:
    await log.append_events(
        [ClaimRetracted(claim=claim, reason="The outlet withdrew the story.", source=FOX)],
        actor="test",
    )


async def confirm(log: EventLog, claim: str) -> None:
    await log.append_events(
        [ClaimConfirmed(claim=claim, source=FOX, effective=FuzzyDate(date="2025-06-02"))],
        actor="test",
    )


def _raw(stream: str, event_type: str, data: dict[str, Any], version: int = 1) -> NewEvent:
    return NewEvent(
        event_id=new_event_id(),
        stream=stream,
        type=event_type,
        schema_version=version,
        data=data,
    )


async def add_hostile(log: EventLog) -> list[str]:
    """Hostile people and claims; returns the claim ids.

    Text the write path accepts goes through it; what it refuses (control characters, names
    far over the limit, a javascript: address) is appended straight to the store, as a
    corrupted or foreign log might hold it.
    """
    accepted: list[Event] = [
        PersonRegistered(person="hostile-script", name=SCRIPT),
        PersonRegistered(person="hostile-rtl", name=RTL),
        PersonRegistered(person="hostile-emoji", name=EMOJI),
    ]
    claims: list[str] = []
    for person in ("hostile-script", "hostile-rtl", "hostile-emoji"):
        claims.append(f"claim-{person}")
        accepted.append(
            ClaimReported(
                claim=f"claim-{person}",
                source=FOX,
                kind="appointment",
                person=person,
                post="ice-hsi-ead",
                capacity="acting",
                modality="rumored",
                attribution=Attribution(kind="named", parties=(SCRIPT, RTL, MISDECODED)),
                quote=f"{SCRIPT} {RTL} {EMOJI} {MISDECODED}",
                locator="caption",
            )
        )
    await log.append_events(accepted, actor="test")
    refused: Sequence[NewEvent] = [
        _raw(
            "person-hostile-control",
            "person.registered",
            {"person": "hostile-control", "name": CONTROL},
        ),
        _raw("person-hostile-long", "person.registered", {"person": "hostile-long", "name": LONG}),
        _raw(
            "source-hostile-source",
            "source.registered",
            {
                "source": "hostile-source",
                "url": "javascript:alert(1)",
                "publisher": CONTROL + SCRIPT,
                "title": LONG,
                "language": 'en"><script>',
            },
            version=2,
        ),
    ]
    for person in ("hostile-control", "hostile-long"):
        claims.append(f"claim-{person}")
        refused = [
            *refused,
            _raw(
                f"claim-claim-{person}",
                "claim.reported",
                {
                    "claim": f"claim-{person}",
                    "source": "hostile-source",
                    "kind": "departure",
                    "person": person,
                    "post": "ice-hsi-ead",
                    "capacity": "acting",
                    "cause": "resignation",
                    "effective": {"date": "2025-13-45", "qualifier": "about", "text": CONTROL},
                    "modality": "expected",
                    "attribution": {"kind": "anonymous", "parties": [CONTROL, LONG]},
                    "quote": CONTROL + SCRIPT + LONG,
                    "locator": "headline",
                },
            ),
        ]
    await log.store.append(refused, actor="test")
    retracted = _raw(
        "claim-claim-hostile-control",
        "claim.retracted",
        {"claim": "claim-hostile-control", "reason": CONTROL + SCRIPT},
    )
    await log.store.append([retracted], actor="test")
    return claims


def _incumbency(claim: str, person: str, source: str = FOX, quote: str | None = None) -> Event:
    return ClaimReported(
        claim=claim,
        source=source,
        kind="incumbency",
        person=person,
        post="ice-hsi-ead",
        capacity="unspecified",
        modality="occurred",
        attribution=Attribution(kind="outlet"),
        quote=quote,
        locator="body" if quote else None,
    )


async def add_markup(log: EventLog) -> None:
    """Text the write path accepts that looks like markup, and source addresses with
    characters a URI cannot carry as they are: claim ``addr-<key>`` (person ``addr-<key>``)
    per :data:`ADDRESSES`, ``markup-name`` (person ``markup-name``, :data:`MARKUP_NAME`) and
    ``markup-quote`` (person ``markup-quote``, quoting :data:`SCRIPT_QUOTE`)."""
    events: list[Event] = []
    for key, (url, _) in ADDRESSES.items():
        events.append(SourceRegistered(source=f"src-{key}", url=url, publisher="Example"))
        events.append(PersonRegistered(person=f"addr-{key}", name=f"Ann {key.title()}"))
        events.append(_incumbency(f"addr-{key}", f"addr-{key}", source=f"src-{key}"))
    events += [
        PersonRegistered(person="markup-name", name=MARKUP_NAME),
        _incumbency("markup-name", "markup-name"),
        PersonRegistered(person="markup-quote", name="Quinn"),
        _incumbency("markup-quote", "markup-quote", quote=SCRIPT_QUOTE),
    ]
    await log.append_events(events, actor="test")


async def add_sourced_claim(log: EventLog, key: str, url: str, language: str | None = None) -> None:
    """A source ``src-<key>`` at ``url``, written in ``language``, and claim ``<key>`` of
    person ``<key>`` reported by it."""
    await log.append_events(
        [
            SourceRegistered(source=f"src-{key}", url=url, publisher="Example", language=language),
            PersonRegistered(person=key, name=f"Ann {key.title()}"),
            _incumbency(key, key, source=f"src-{key}"),
        ],
        actor="test",
    )


async def rename(log: EventLog, person: str, name: str) -> None:
    await log.append_events([PersonUpdated(person=person, name=name)], actor="test")


def claim_event_id(events: Sequence[Any], claim: str) -> uuid.UUID:
    """The event id of a claim's ``claim.reported`` event among recorded events."""
    for event in events:
        if event.type == "claim.reported" and event.data.get("claim") == claim:
            found: uuid.UUID = event.event_id
            return found
    raise LookupError(claim)


async def rendered(
    service: FeedService,
    scope: str,
    fmt: FeedFormat = "atom",
    lang: str = "en",
    page: int | None = None,
) -> bytes:
    """A feed document as served at ``BASE``, its language asked for."""
    request = FeedRequest(Scope.parse(scope), fmt, lang, BASE, page, explicit_lang=True)
    return (await service.render(request)).body


def shown(detail: Any) -> str:
    """What a reader shows of a feedparser text construct: HTML is read as HTML."""
    value = str(detail["value"])
    return html.unescape(value) if detail["type"] == "text/html" else value


async def a_claim_arrives(log: EventLog) -> None:
    """A claim appended and its feed entry projected, as another server's write would be."""
    await add_claims(log, 0, 1)
    await ProjectionRunner(log.store, [FeedEntriesProjection()]).catch_up()


def recent_read_as_a_claim_arrives(log: EventLog, service: FeedService) -> Any:
    """The service's reader of recent entries, its first read overtaken by a claim arriving;
    to set in place of ``service.reader.recent``."""
    read_entries = service.reader.recent
    moves = [1]

    async def recent_while_a_claim_arrives(scope: str, limit: int) -> list[dict[str, Any]]:
        if moves:
            moves.pop()
            await a_claim_arrives(log)
        return await read_entries(scope, limit)

    return recent_while_a_claim_arrives
