"""The members of the API's answers, for the OpenAPI document only.

The routes send the queries' answers as they are (``leaderlog.projections.Queries``), not
through these models: they state what a client can rely on, so that one generated from
``/openapi.json`` has typed answers. Every object may hold members beyond those listed
(``additionalProperties`` is left open), so a member added later breaks no client; a member
listed without a default is required: always there, ``null`` where its type says so.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AuditAnswer",
    "ClaimAnswer",
    "Envelope",
    "Health",
    "HistoryAnswer",
    "StateAnswer",
    "Verification",
]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


# An RFC 3339 time as the log records it (2025-05-29T14:00:00.123456Z), and a day.
Time = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
Day = Annotated[str, Field(json_schema_extra={"format": "date"})]


class KnownAt(_Open):
    """The position the answer is as known at, and the time the log had recorded by then."""

    position: int
    recorded_through: Time | None


class FuzzyDate(_Open):
    """A date as a source gives it: ``2025-05-29``, ``2025-05`` or ``2025`` (or null with
    only words), how it is meant (``on``, ``about``, ``before``, ``after``) and its words."""

    date: str | None
    qualifier: str
    text: str | None


class CountedDate(FuzzyDate):
    """A date the state counts from, and why: ``effective``, ``confirmed``, ``published`` or
    ``recorded``."""

    basis: str
    source: str | None = Field(
        default=None,
        description="for basis published or recorded, the source whose report the date is "
        "(a confirmation's, when the change counts from it)",
    )


class Attribution(_Open):
    kind: str = Field(description="official, named, anonymous or outlet")
    parties: list[str]


class Source(_Open):
    source: str
    url: str
    publisher: str
    title: str | None
    published: FuzzyDate | None
    language: str | None


class Change(_Open):
    """A change to come (expected, announced or rumored, and not yet confirmed)."""

    claim: str
    kind: str
    person: str
    name: str | None
    capacity: str
    cause: str | None
    effective: FuzzyDate | None
    modality: str
    attribution: Attribution
    reported: CountedDate | None
    sources: list[str]
    status: str


class Holder(_Open):
    person: str
    name: str | None
    capacity: str
    since: CountedDate | None
    status: str = Field(description="reported, confirmed or disputed")
    claims: list[str]


class Conflict(_Open):
    # disputed, overlapping_permanent or overlapping_acting
    kind: str
    claims: list[str]
    persons: list[str]
    reason: str | None


class PostOfState(_Open):
    post: str
    title: str | None
    org: str | None
    org_name: str | None


class PostState(_Open):
    post: PostOfState
    holders: list[Holder]
    pending: list[Change]
    vacancy: str = Field(description="filled, acting, vacant or unknown")
    conflicts: list[Conflict]


class Org(_Open):
    org: str
    name: str
    short_name: str | None
    parent: str | None


class Person(_Open):
    person: str
    name: str
    aliases: list[str]


class StateAnswer(_Open):
    as_of: Day
    known_at: KnownAt
    org: Org | None = Field(description="the organisation asked for; null for all of them")
    posts: list[PostState]


class Evidence(_Open):
    claim: str
    kind: str
    capacity: str
    modality: str
    status: str
    source: str
    sources: list[str] = Field(
        description="every source that spoke of the claim: reported, confirmed, corrected, "
        "disputed or retracted it"
    )
    disputed_by: list[str] = Field(description="the sources of the claim's disputes")
    attribution: Attribution
    quote: str | None
    locator: str | None


class _PersonAtPost(_Open):
    """Who, at which post of which organisation, in which capacity."""

    person: str
    name: str | None
    post: str
    post_title: str | None
    org: str | None
    capacity: str


class Tenure(_PersonAtPost):
    start: CountedDate | None = Field(description="null when only the end is known")
    end: CountedDate | None = Field(description="null while the tenure lasts")
    cause: str | None
    ended_by: str | None
    status: str
    evidence: list[Evidence]


class ChangeOfHistory(Change):
    post: str
    post_title: str | None
    org: str | None


class PersonSubject(_Open):
    person: Person


class PostSubject(_Open):
    post: PostOfState


class OrgSubject(_Open):
    org: Org


class HistoryAnswer(_Open):
    subject: PersonSubject | PostSubject | OrgSubject = Field(
        description="the person, post or organisation asked for"
    )
    known_at: KnownAt
    tenures: list[Tenure]
    pending: list[ChangeOfHistory]
    sources: dict[str, Source]


class Dispute(_Open):
    claim: str
    position: int
    source: str | None
    reason: str


class Step(_Open):
    """One event of the claim's life, with what it says: ``effective`` and ``quote`` of a
    confirmation, ``changes`` of a correction, ``reason`` (and ``conflicts_with`` of a
    dispute); members a step does not have are absent."""

    position: int
    type: str
    status: str
    recorded_at: Time
    actor: str
    source: str | None
    effective: FuzzyDate | None = None
    quote: str | None = None
    changes: dict[str, Any] | None = Field(
        default=None, description="each field the correction set, with its new value"
    )
    reason: str | None = None
    conflicts_with: list[str] | None = None


class ClaimDispute(_Open):
    """One of the claim's own disputes."""

    position: int
    source: str | None
    reason: str
    conflicts_with: list[str]


class Comment(_Open):
    position: int
    source: str
    org: str
    outcome: str


class CurrentClaim(_PersonAtPost):
    source: str
    kind: str
    cause: str | None
    effective: FuzzyDate | None
    modality: str
    attribution: Attribution
    quote: str | None
    locator: str | None
    confirmed: bool
    confirmed_effective: FuzzyDate | None
    sources: list[str]
    disputes: list[ClaimDispute]
    reported_position: int
    counts_from: CountedDate | None = Field(
        description="the date the change takes effect from, as the state counts it; null "
        "while it is only expected, or retracted"
    )


class ClaimAnswer(_Open):
    claim: str
    status: str = Field(description="reported, confirmed, corrected, disputed or retracted")
    known_at: KnownAt
    current: CurrentClaim
    lifecycle: list[Step]
    disputed_by: list[Dispute] = Field(
        description="other claims whose latest dispute, known then, names this one"
    )
    sources: dict[str, Source]
    comments: list[Comment]


class AuditEvent(_Open):
    position: int
    event_id: str
    type: str
    stream: str
    actor: str
    recorded_at: Time
    claim: str | None
    claim_status: str | None
    attribution: str | None
    source: str | None
    publisher: str | None
    url: str | None
    title: str | None
    org: str | None
    outcome: str | None


class AuditAnswer(_Open):
    filters: dict[str, Any]
    events: list[AuditEvent]
    next_after: int | None = Field(description="the `after` of the next page; null at the end")


class Envelope(_Open):
    """A stored event: its record's ``data`` and where and how the log holds it."""

    position: int
    event_id: str
    stream: str
    version: int = Field(description="the event's number in its stream, from 1")
    type: str
    schema_version: int
    data: dict[str, Any]
    recorded_at: Time
    actor: str
    meta: dict[str, Any]
    hash: str = Field(description="SHA-256 of the event chained to the one before, in hex")


class Verification(_Open):
    """``count`` events checked, the last at ``head_position`` with ``head_hash`` (the
    log's head when ``ok``; else the last event before ``first_bad_position``)."""

    ok: bool
    count: int
    head_position: int
    head_hash: str
    first_bad_position: int | None
    problem: str | None


class ProjectionHealth(_Open):
    name: str
    version: int
    checkpoint: int
    lag: int
    error: str | None = Field(
        default=None, description="why it is left out or could not apply the log, if so"
    )


class Health(_Open):
    ok: bool
    head: int
    projections: list[ProjectionHealth]
