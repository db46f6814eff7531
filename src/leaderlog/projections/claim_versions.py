"""Claim versions: what one claim says after each of its events. Pure, no I/O.

:func:`evolve_claim` turns a ``claim.*`` event into the claim's next :class:`ClaimVersion`:
its current fields, its status, and the dates it counts from. The leadership projection stores
every version with the log position it became known at, which gives the second time axis
("as known at T"); :mod:`.leadership_rules` folds versions into leadership state.

How dates are read (DESIGN.md, "Projections"):

- A fuzzy date counts from the last day it can mean (:func:`counts_from`). Qualifiers move
  that day: ``before 2025-06`` counts from 2025-05-31, ``after 2025-06`` from 2025-07-01.
- An ``occurred`` change, or an incumbency, with an unknown date counts from the published
  date of its source (read the same way); when that is unknown too, from the day it was
  recorded.
- ``announced``, ``expected`` and ``rumored`` changes take effect only once confirmed, or
  corrected to ``occurred``. A confirmation's own date wins over the reported one; without
  either, the confirming source's published date (else the day the confirmation was
  recorded) is used; a correction without a source keeps the report's.
"""

from __future__ import annotations

import calendar
import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from leaderlog.events import (
    ClaimConfirmed,
    ClaimCorrected,
    ClaimDisputed,
    ClaimReported,
    ClaimRetracted,
    Event,
)

__all__ = [
    "CLAIM_EVENT_TYPES",
    "Anchor",
    "ClaimVersion",
    "FuzzyJSON",
    "Step",
    "claim_of",
    "counts_from",
    "evolve_claim",
    "fuzzy_json",
    "latest_versions",
    "version_from_json",
]

CLAIM_EVENT_TYPES = frozenset(
    {"claim.reported", "claim.confirmed", "claim.corrected", "claim.disputed", "claim.retracted"}
)
Basis = Literal["effective", "confirmed", "published", "recorded"]
# A fuzzy date as JSON: {"date": "2025" | "2025-05" | "2025-05-29" | None, "qualifier", "text"}.
FuzzyJSON = Mapping[str, Any]
PublishedLookup = Callable[[str], FuzzyJSON | None]

_ONE_DAY = dt.timedelta(days=1)


def _range(value: str) -> tuple[dt.date, dt.date]:
    parts = [int(part) for part in value.split("-")]
    if len(parts) == 1:
        return dt.date(parts[0], 1, 1), dt.date(parts[0], 12, 31)
    if len(parts) == 2:
        last = calendar.monthrange(parts[0], parts[1])[1]
        return dt.date(parts[0], parts[1], 1), dt.date(parts[0], parts[1], last)
    day = dt.date(parts[0], parts[1], parts[2])
    return day, day


def counts_from(date: FuzzyJSON | None) -> dt.date | None:
    """The first day on which something dated ``date`` certainly lies in the past.

    That is the last day the date can mean (``before`` ends the day before the range starts;
    ``after`` only starts the day after it ends). None when the date is unknown.
    """
    if date is None or date.get("date") is None:
        return None
    first, last = _range(str(date["date"]))
    qualifier = date.get("qualifier", "on")
    if qualifier == "before":
        return first - _ONE_DAY
    if qualifier == "after":
        return last + _ONE_DAY
    return last


def _known_date(date: FuzzyJSON | None) -> bool:
    return date is not None and date.get("date") is not None


@dataclass(frozen=True, slots=True)
class Anchor:
    """The date an undated change counts from, and where that date came from."""

    date: Mapping[str, Any]
    basis: Basis

    def as_json(self) -> dict[str, Any]:
        return {**self.date, "basis": self.basis}


@dataclass(frozen=True, slots=True)
class Step:
    """The event that produced a claim version (one step of the claim's lifecycle)."""

    position: int
    type: str
    status: str
    recorded_at: str
    actor: str
    source: str | None
    detail: Mapping[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "type": self.type,
            "status": self.status,
            "recorded_at": self.recorded_at,
            "actor": self.actor,
            "source": self.source,
            **self.detail,
        }


@dataclass(frozen=True, slots=True)
class ClaimVersion:
    """A claim as known from ``step.position`` until the claim's next event."""

    claim: str
    reported_position: int
    source: str
    kind: str
    person: str
    post: str
    capacity: str
    cause: str | None
    effective: Mapping[str, Any] | None
    modality: str
    attribution: Mapping[str, Any]
    quote: str | None
    locator: str | None
    status: str
    confirmed: bool
    confirmed_effective: Mapping[str, Any] | None
    sources: tuple[str, ...]
    disputes: tuple[Mapping[str, Any], ...]
    reported_anchor: Anchor
    effect_anchor: Anchor | None
    step: Step

    @property
    def known_from(self) -> int:
        return self.step.position

    @property
    def live(self) -> bool:
        return self.status != "retracted"

    @property
    def takes_effect(self) -> bool:
        return self.live and (self.modality == "occurred" or self.confirmed)

    def effect_date(self) -> Anchor | None:
        """The date the change takes effect from, or None while it is only expected."""
        if not self.takes_effect:
            return None
        if _known_date(self.confirmed_effective):
            assert self.confirmed_effective is not None
            return Anchor(self.confirmed_effective, "confirmed")
        if _known_date(self.effective):
            assert self.effective is not None
            return Anchor(self.effective, "effective")
        return self.effect_anchor

    def effect_day(self) -> dt.date | None:
        anchor = self.effect_date()
        return counts_from(anchor.date) if anchor else None

    def reported_day(self) -> dt.date:
        day = counts_from(self.reported_anchor.date)
        assert day is not None
        return day

    def as_json(self) -> dict[str, Any]:
        """Every field, as stored in the projection (see :func:`version_from_json`)."""
        return {
            "claim": self.claim,
            "reported_position": self.reported_position,
            "source": self.source,
            "kind": self.kind,
            "person": self.person,
            "post": self.post,
            "capacity": self.capacity,
            "cause": self.cause,
            "effective": self.effective,
            "modality": self.modality,
            "attribution": self.attribution,
            "quote": self.quote,
            "locator": self.locator,
            "status": self.status,
            "confirmed": self.confirmed,
            "confirmed_effective": self.confirmed_effective,
            "sources": list(self.sources),
            "disputes": list(self.disputes),
            "reported_anchor": self.reported_anchor.as_json(),
            "effect_anchor": self.effect_anchor.as_json() if self.effect_anchor else None,
            "step": self.step.as_json(),
        }


def _anchor_from_json(value: Mapping[str, Any]) -> Anchor:
    date = {key: item for key, item in value.items() if key != "basis"}
    return Anchor(date, value["basis"])


def version_from_json(value: Mapping[str, Any]) -> ClaimVersion:
    step = dict(value["step"])
    base = {key: step.pop(key) for key in ("position", "type", "status", "recorded_at", "actor")}
    source = step.pop("source")
    effect = value["effect_anchor"]
    return ClaimVersion(
        claim=value["claim"],
        reported_position=value["reported_position"],
        source=value["source"],
        kind=value["kind"],
        person=value["person"],
        post=value["post"],
        capacity=value["capacity"],
        cause=value["cause"],
        effective=value["effective"],
        modality=value["modality"],
        attribution=value["attribution"],
        quote=value["quote"],
        locator=value["locator"],
        status=value["status"],
        confirmed=value["confirmed"],
        confirmed_effective=value["confirmed_effective"],
        sources=tuple(value["sources"]),
        disputes=tuple(value["disputes"]),
        reported_anchor=_anchor_from_json(value["reported_anchor"]),
        effect_anchor=_anchor_from_json(effect) if effect else None,
        step=Step(source=source, detail=step, **base),
    )


# --- evolving a claim -------------------------------------------------------------------------


def fuzzy_json(value: Any) -> dict[str, Any] | None:
    """A :class:`~leaderlog.events.FuzzyDate` (or None) as JSON with all three keys."""
    return None if value is None else dict(value.model_dump(mode="json"))


def _anchor_of(source: str | None, recorded_at: str, published: PublishedLookup) -> Anchor:
    date = published(source) if source else None
    if _known_date(date):
        assert date is not None
        return Anchor(date, "published")
    return Anchor({"date": recorded_at[:10], "qualifier": "on"}, "recorded")


def _with_source(sources: tuple[str, ...], source: str | None) -> tuple[str, ...]:
    return sources if source is None or source in sources else (*sources, source)


def evolve_claim(
    previous: ClaimVersion | None,
    event: Event,
    *,
    position: int,
    recorded_at: str,
    actor: str,
    published: PublishedLookup,
) -> ClaimVersion:
    """The claim's version after ``event`` (a ``claim.*`` event) recorded at ``position``.

    ``published`` gives a source's published date as JSON (None when unknown).
    """
    if isinstance(event, ClaimReported):
        reported = _anchor_of(event.source, recorded_at, published)
        version = ClaimVersion(
            claim=event.claim,
            reported_position=position,
            source=event.source,
            kind=event.kind,
            person=event.person,
            post=event.post,
            capacity=event.capacity,
            cause=event.cause,
            effective=fuzzy_json(event.effective),
            modality=event.modality,
            attribution=event.attribution.model_dump(mode="json"),
            quote=event.quote,
            locator=event.locator,
            status="reported",
            confirmed=False,
            confirmed_effective=None,
            sources=(event.source,),
            disputes=(),
            reported_anchor=reported,
            effect_anchor=reported if event.modality == "occurred" else None,
            step=Step(position, event.type, "reported", recorded_at, actor, event.source),
        )
        return version
    if previous is None:
        raise ValueError(f"{event.type} for claim {claim_of(event)!r} before its report")
    step_source: str | None
    detail: dict[str, Any]
    if isinstance(event, ClaimConfirmed):
        step_source = event.source
        effective = fuzzy_json(event.effective)
        detail = {"effective": effective, "quote": event.quote}
        version = replace(
            previous,
            status="confirmed",
            confirmed=True,
            sources=_with_source(previous.sources, event.source),
        )
        if _known_date(effective):
            version = replace(version, confirmed_effective=effective)
        if previous.effect_anchor is None:
            anchor = _anchor_of(event.source, recorded_at, published)
            version = replace(version, effect_anchor=anchor)
    elif isinstance(event, ClaimCorrected):
        step_source = event.source
        changes = event.changes.model_dump(mode="json", exclude_unset=True)
        detail = {"changes": changes, "reason": event.reason}
        # Every changed field is a reported field of the same name; null clears it.
        version = replace(
            previous,
            **changes,
            status="corrected",
            sources=_with_source(previous.sources, event.source),
        )
        if version.modality != "occurred" and not version.confirmed:
            version = replace(version, effect_anchor=None)
        elif previous.effect_anchor is None:
            anchor = (
                _anchor_of(event.source, recorded_at, published)
                if event.source
                else previous.reported_anchor
            )
            version = replace(version, effect_anchor=anchor)
    elif isinstance(event, ClaimDisputed):
        step_source = event.source
        dispute = {
            "reason": event.reason,
            "conflicts_with": list(event.conflicts_with),
            "source": event.source,
            "position": position,
        }
        detail = {"reason": event.reason, "conflicts_with": list(event.conflicts_with)}
        version = replace(
            previous,
            status="disputed",
            disputes=(*previous.disputes, dispute),
            sources=_with_source(previous.sources, event.source),
        )
    elif isinstance(event, ClaimRetracted):
        step_source = event.source
        detail = {"reason": event.reason}
        version = replace(
            previous, status="retracted", sources=_with_source(previous.sources, event.source)
        )
    else:
        raise ValueError(f"{event.type} is not a claim event")
    step = Step(position, event.type, version.status, recorded_at, actor, step_source, detail)
    return replace(version, step=step)


def claim_of(event: Event) -> str | None:
    """The claim a ``claim.*`` event is about, None for any other event."""
    if isinstance(
        event, ClaimReported | ClaimConfirmed | ClaimCorrected | ClaimDisputed | ClaimRetracted
    ):
        return event.claim
    return None


def latest_versions(
    events: Iterable[tuple[int, str, str, Event]], published: Mapping[str, FuzzyJSON | None]
) -> dict[str, ClaimVersion]:
    """Fold ``(position, recorded_at, actor, event)`` claim events into each claim's version."""
    claims: dict[str, ClaimVersion] = {}
    for position, recorded_at, actor, event in events:
        claim_id = claim_of(event)
        if claim_id is None:
            continue
        claims[claim_id] = evolve_claim(
            claims.get(claim_id),
            event,
            position=position,
            recorded_at=recorded_at,
            actor=actor,
            published=published.get,
        )
    return claims
