"""Claim versions: what one claim says after each of its events. Pure, no I/O.

:func:`evolve_claim` turns a ``claim.*`` event into the claim's next :class:`ClaimVersion`:
its current fields, its status, and the dates it counts from. The leadership projection stores
every version with the log position it became known at, which gives the second time axis
("as known at T"); :mod:`.leadership_rules` folds versions into leadership state.

Events are read as stored payloads (plain JSON, brought to the current schema by
:func:`~leaderlog.events.upcast`): they were validated when appended, and a rebuild over
millions of events cannot afford to validate them again.

How dates are read (DESIGN.md, "Projections"):

- A fuzzy date counts from the last day it can mean (:func:`counts_from`). Qualifiers move
  that day: ``before 2025-06`` counts from 2025-05-31, ``after 2025-06`` from 2025-07-01.
- An ``occurred`` change, or an incumbency, with an unknown date counts from the published
  date of its source (read the same way); when that is unknown too, from the day it was
  recorded.
- ``announced``, ``expected`` and ``rumored`` changes take effect only once confirmed, or
  corrected to ``occurred``. A confirmation's own date wins over the reported one, and a
  later correction of the effective date wins over both; without any, the confirming
  source's published date (else the day the confirmation was recorded) is used; a
  correction without a source keeps the report's.
- A correction that attributes the claim to another source (``changes.source``) makes the
  claim count from that source's published date where it counted from the reporting one's.
"""

from __future__ import annotations

import calendar
import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from leaderlog.domain import ALWAYS_REPORTED

__all__ = [
    "CLAIM_EVENT_TYPES",
    "STATUS_AFTER",
    "ClaimVersion",
    "FuzzyJSON",
    "anchor_day",
    "counts_from",
    "earliest_day",
    "evolve_claim",
    "fuzzy",
    "latest_versions",
    "shown_anchor",
]

# A claim's status after each event that can happen to it.
STATUS_AFTER = {
    "claim.reported": "reported",
    "claim.confirmed": "confirmed",
    "claim.corrected": "corrected",
    "claim.disputed": "disputed",
    "claim.retracted": "retracted",
}
CLAIM_EVENT_TYPES = frozenset(STATUS_AFTER)
# A fuzzy date as JSON: {"date": "2025" | "2025-05" | "2025-05-29" | None, "qualifier", "text"};
# an *anchor* is one with a "basis": effective, confirmed, published or recorded.
FuzzyJSON = Mapping[str, Any]
PublishedLookup = Callable[[str], FuzzyJSON | None]

_ONE_DAY = dt.timedelta(days=1)


def _range(value: str) -> tuple[dt.date, dt.date] | None:
    """The first and last day a date can mean; None for one no calendar has (a log edited
    behind the store, or written before dates were checked: read as an unknown date)."""
    try:
        return _days(value)
    except (ValueError, OverflowError):
        return None


def _days(value: str) -> tuple[dt.date, dt.date]:
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
    days = None if date is None or date.get("date") is None else _range(str(date["date"]))
    if date is None or days is None:
        return None
    first, last = days
    qualifier = date.get("qualifier", "on")
    if qualifier == "before":
        return first - _ONE_DAY
    if qualifier == "after":
        # "after 9999-12-31" has no next day to name; the last one is the nearest answer.
        return last + _ONE_DAY if last < dt.date.max else dt.date.max
    return last


def earliest_day(date: FuzzyJSON | None) -> dt.date | None:
    """The first day something dated ``date`` may have happened (``before`` has none: the
    earliest representable day). None when the date is unknown."""
    days = None if date is None or date.get("date") is None else _range(str(date["date"]))
    if date is None or days is None:
        return None
    first, last = days
    qualifier = date.get("qualifier", "on")
    if qualifier == "before":
        return dt.date.min
    if qualifier == "after":
        return last + _ONE_DAY if last < dt.date.max else dt.date.max
    return first


def fuzzy(date: FuzzyJSON | None) -> dict[str, Any] | None:
    """A stored fuzzy date with all three keys (stored payloads leave out empty ones)."""
    if date is None:
        return None
    return {
        "date": date.get("date"),
        "qualifier": date.get("qualifier", "on"),
        "text": date.get("text"),
    }


def _known(date: FuzzyJSON | None) -> bool:
    return date is not None and date.get("date") is not None


class ClaimVersion:
    """A claim as known from ``known_from`` until the claim's next event.

    It wraps its JSON document (``doc``), which is what the projection stores, so versions
    cost one copy to evolve and nothing to store or load. Treat it as immutable.
    """

    __slots__ = ("_effect_day", "doc")

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        # Folding asks for the day over and over; the document never changes, so keep it.
        self._effect_day: dt.date | bool | None = False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClaimVersion) and other.doc == self.doc

    def __repr__(self) -> str:
        return f"ClaimVersion({self.doc!r})"

    # The reported fields (as corrected so far).
    @property
    def claim(self) -> str:
        return str(self.doc["claim"])

    @property
    def source(self) -> str:
        return str(self.doc["source"])

    @property
    def kind(self) -> str:
        return str(self.doc["kind"])

    @property
    def person(self) -> str:
        return str(self.doc["person"])

    @property
    def post(self) -> str:
        return str(self.doc["post"])

    @property
    def capacity(self) -> str:
        return str(self.doc["capacity"])

    @property
    def cause(self) -> str | None:
        found: str | None = self.doc["cause"]
        return found

    @property
    def modality(self) -> str:
        return str(self.doc["modality"])

    @property
    def attribution(self) -> dict[str, Any]:
        found: dict[str, Any] = self.doc["attribution"]
        return found

    # The lifecycle so far.
    @property
    def status(self) -> str:
        return str(self.doc["status"])

    @property
    def confirmed(self) -> bool:
        return bool(self.doc["confirmed"])

    @property
    def sources(self) -> list[str]:
        found: list[str] = self.doc["sources"]
        return found

    @property
    def disputes(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.doc["disputes"]
        return found

    @property
    def reported_position(self) -> int:
        return int(self.doc["reported_position"])

    @property
    def known_from(self) -> int:
        return int(self.doc["step"]["position"])

    @property
    def step(self) -> dict[str, Any]:
        """The event that produced this version: position, type, status, recorded_at, actor,
        source and its details (effective, quote, changes, reason, conflicts_with)."""
        found: dict[str, Any] = self.doc["step"]
        return found

    @property
    def live(self) -> bool:
        return bool(self.doc["status"] != "retracted")

    @property
    def takes_effect(self) -> bool:
        doc = self.doc
        return bool(
            doc["status"] != "retracted" and (doc["modality"] == "occurred" or doc["confirmed"])
        )

    def _effect_anchor(self) -> dict[str, Any] | None:
        if not self.takes_effect:
            return None
        doc = self.doc
        if _known(doc["confirmed_effective"]):
            return {**doc["confirmed_effective"], "basis": "confirmed"}
        if _known(doc["effective"]):
            return {**doc["effective"], "basis": "effective"}
        anchor: dict[str, Any] | None = doc["effect_anchor"]
        return anchor

    def effect_date(self) -> dict[str, Any] | None:
        """The anchor the change takes effect from, or None while it is only expected."""
        return shown_anchor(self._effect_anchor())

    def effect_day(self) -> dt.date | None:
        """The day the change counts as in effect from; None while it is only expected."""
        day = self._effect_day
        if day is False:
            day = self._effect_day = anchor_day(self._effect_anchor())
        assert day is None or isinstance(day, dt.date)
        return day

    def earliest_effect_day(self) -> dt.date | None:
        """The first day the change may have taken effect; None while it is only expected.

        A change without a date of its own counts from when its source was out, but may have
        happened at any time before: its earliest day is the first there is. One that takes
        effect by a confirmation alone was reported as still to come, so it did not happen
        before that report was out (a return confirmed after its person left is a new tenure,
        not the one that ended)."""
        anchor = self._effect_anchor()
        latest = self.effect_day()
        if anchor is None or latest is None:
            return None
        earliest = dt.date.min
        if anchor.get("basis") not in ("published", "recorded"):
            earliest = earliest_day(anchor) or latest
        if self.doc["modality"] != "occurred":
            earliest = max(earliest, self.report_out_from())
        return min(earliest, latest)

    def dated_by_its_source(self) -> bool:
        """Whether the change has no date of its own, and counts from its source's."""
        anchor = self._effect_anchor()
        return anchor is not None and anchor.get("basis") in ("published", "recorded")

    def report_out_from(self) -> dt.date:
        """The first day the claim's report may have been out: its source's published date,
        when the source gives one (a recorded day only says it was out by then)."""
        reported = shown_anchor(self.doc["reported_anchor"])
        if reported is None or reported.get("basis") != "published":
            return dt.date.min
        return earliest_day(reported) or dt.date.min

    def earliest_stated_day(self) -> dt.date | None:
        """The first day the claim's own date (as confirmed, else as reported) may mean,
        whether or not the change is in effect; None when it gives no date."""
        doc = self.doc
        date = (
            doc["confirmed_effective"] if _known(doc["confirmed_effective"]) else doc["effective"]
        )
        return earliest_day(date)

    def reported_day(self) -> dt.date:
        day = anchor_day(self.doc["reported_anchor"])
        assert day is not None
        return day


def anchor_day(anchor: FuzzyJSON | None) -> dt.date | None:
    """The day an anchor counts from: a source's published date counts at the latest from
    the day the log recorded something from it (it was out by then, however vague its date)."""
    day = counts_from(anchor)
    published_by = anchor.get("published_by") if anchor is not None else None
    if day is not None and published_by is not None:
        day = min(day, dt.date.fromisoformat(published_by))
    return day


def shown_anchor(anchor: FuzzyJSON | None) -> dict[str, Any] | None:
    """An anchor as answers show it: its date, its basis and, for a date known only from a
    report, the source whose report it is.

    A published date that begins after the day the log recorded something from the source
    (a mistyped year, say) cannot be when the source was out: the rules count from the
    recorded day, and the answer shows that day, as ``recorded``. A vaguer date that takes
    the recorded day in ("2025") is shown as given."""
    if anchor is None:
        return None
    published_by = anchor.get("published_by")
    if published_by is not None:
        earliest = earliest_day(anchor)
        if earliest is not None and dt.date.fromisoformat(published_by) < earliest:
            recorded = {"date": published_by, "qualifier": "on", "text": None}
            return {**recorded, "basis": "recorded", "source": anchor.get("source")}
    return {
        key: value for key, value in anchor.items() if key not in ("published_by", "counted_from")
    }


def _sooner(anchor: FuzzyJSON, than: FuzzyJSON) -> bool:
    """Whether a confirmation's ``anchor`` shows the change sooner than ``than``. Of two that
    count from the same day, one from a published date (not a recording), then the source
    first by id, is taken, so that the answer does not hang on which the log recorded first."""

    def order(of: FuzzyJSON) -> tuple[dt.date, bool, str]:
        # A published date after the day the log recorded the source (a mistyped year) is
        # shown as that recorded day: it is no published date to prefer.
        shown = shown_anchor(of) or {}
        return (
            anchor_day(of) or dt.date.max,
            shown.get("basis") != "published",
            of.get("source") or "",
        )

    return order(anchor) < order(than)


def _anchor(source: str | None, recorded_at: str, published: PublishedLookup) -> dict[str, Any]:
    """When the event from ``source`` shows the change: when that source was out, else when
    the log recorded it. The source is named, since it need not be the one that reported the
    claim (a confirmation without a date counts from when the confirming source was out)."""
    date = published(source) if source else None
    if date is not None and date.get("date") is not None:
        return {
            **(fuzzy(date) or {}),
            "basis": "published",
            "source": source,
            "published_by": recorded_at[:10],
        }
    anchor = {"date": recorded_at[:10], "qualifier": "on", "text": None, "basis": "recorded"}
    return {**anchor, "source": source} if source else anchor


def _reported_anchor(
    source: str | None, recorded_at: str, published: PublishedLookup
) -> dict[str, Any]:
    """The anchor of the report itself, marked as such: an effect counting from it moves with
    it when a correction attributes the claim anew, and a confirmation's anchor may hold the
    same date and basis."""
    return {**_anchor(source, recorded_at, published), "counted_from": "report"}


def _with_source(sources: list[str], source: str | None) -> list[str]:
    return sources if source is None or source in sources else [*sources, source]


def _reattribute(doc: dict[str, Any], source: str, published: PublishedLookup) -> None:
    """Count the claim from ``source``, to which a correction attributes it, as if it had
    reported the claim: a date-less change counts from when the source that reported it was
    out, and the source it was wrongly attributed to says nothing about that. The old source
    stays among ``sources``, as the report that named it stays in the lifecycle."""
    doc["sources"] = _with_source(doc["sources"], source)
    before = doc["reported_anchor"]
    # The day the report was recorded, which both kinds of reported anchor keep.
    recorded_day = str(before.get("published_by") or before["date"])
    reported = _reported_anchor(source, recorded_day, published)
    # An effect counted from the report moves with it; one counted from a confirmation
    # (or a correction's source) rests on that other source and stays.
    if doc["effect_anchor"] == before:
        doc["effect_anchor"] = reported
    doc["reported_anchor"] = reported


def evolve_claim(
    previous: ClaimVersion | None,
    event_type: str,
    data: Mapping[str, Any],
    *,
    position: int,
    recorded_at: str,
    actor: str,
    published: PublishedLookup,
) -> ClaimVersion:
    """The claim's version after a ``claim.*`` event (its stored payload ``data``).

    ``recorded_at`` is the event's RFC 3339 time; ``published`` gives a source's published
    date as JSON (None when unknown).
    """
    source: str | None = data.get("source")
    detail: dict[str, Any]
    if event_type == "claim.reported":
        reported = _reported_anchor(source, recorded_at, published)
        doc: dict[str, Any] = {
            "claim": data["claim"],
            "reported_position": position,
            "source": source,
            "kind": data["kind"],
            "person": data["person"],
            "post": data["post"],
            "capacity": data["capacity"],
            "cause": data.get("cause"),
            "effective": fuzzy(data.get("effective")),
            "modality": data["modality"],
            "attribution": {
                "kind": data["attribution"]["kind"],
                "parties": list(data["attribution"].get("parties", ())),
            },
            "quote": data.get("quote"),
            "locator": data.get("locator"),
            "status": "reported",
            "confirmed": False,
            "confirmed_effective": None,
            "sources": [source],
            "disputes": [],
            "reported_anchor": reported,
            "effect_anchor": reported if data["modality"] == "occurred" else None,
            # When the soonest confirming source was out: what the change counts from once
            # it is only to come and confirmed without a date, whenever that came.
            "confirmed_anchor": None,
        }
        detail = {}
    elif previous is None:
        raise ValueError(f"{event_type} for claim {data.get('claim')!r} before its report")
    else:
        doc = dict(previous.doc)
        doc["sources"] = _with_source(previous.sources, source)
        if event_type == "claim.confirmed":
            effective = fuzzy(data.get("effective"))
            detail = {"effective": effective, "quote": data.get("quote")}
            doc["confirmed"] = True
            if _known(effective):
                doc["confirmed_effective"] = effective
            first = doc["confirmed_anchor"]
            anchor = _anchor(source, recorded_at, published)
            if first is None or _sooner(anchor, first):
                # Confirmed without a date by several sources, the change had happened by
                # the time the first of them was out, whichever the log recorded first.
                doc["confirmed_anchor"] = anchor
                counted_from_it = first is not None and doc["effect_anchor"] == first
                if counted_from_it and doc["modality"] != "occurred":
                    doc["effect_anchor"] = anchor
            if doc["effect_anchor"] is None:
                doc["effect_anchor"] = doc["confirmed_anchor"]
        elif event_type == "claim.corrected":
            changes = data["changes"]
            detail = {"changes": dict(changes), "reason": data["reason"]}
            # Every changed field is a reported field of the same name; null clears it, except
            # where every claim has one (refused since, but a log may hold older such events).
            for name, value in changes.items():
                if value is None and name in ALWAYS_REPORTED:
                    continue
                doc[name] = fuzzy(value) if name == "effective" else value
            attributed = changes.get("source")
            if attributed and attributed != previous.source:
                _reattribute(doc, attributed, published)
            if "effective" in changes:
                # The correction is the newer word on the date, over a confirmation's too.
                doc["confirmed_effective"] = None
            # Corrected to having occurred: the change counts as one reported so, from the
            # correction's source, else the report's, as when a confirmation comes after the
            # correction rather than before it (a confirmation without a date counts only
            # for a change still to come).
            occurred_now = doc["modality"] == "occurred" != previous.doc["modality"]
            if doc["modality"] != "occurred" and not doc["confirmed"]:
                doc["effect_anchor"] = None
            elif doc["modality"] != "occurred" == previous.doc["modality"]:
                # Corrected to a change still to come, once confirmed: it counts from the
                # confirmation, as when the correction comes before the confirmation (the
                # report, only of a change to come, says nothing of when it happened).
                doc["effect_anchor"] = doc["confirmed_anchor"]
            elif doc["effect_anchor"] is None or occurred_now:
                doc["effect_anchor"] = (
                    _anchor(source, recorded_at, published) if source else doc["reported_anchor"]
                )
        elif event_type == "claim.disputed":
            conflicts = list(data.get("conflicts_with", ()))
            detail = {"reason": data["reason"], "conflicts_with": conflicts}
            doc["disputes"] = [
                *previous.disputes,
                {
                    "reason": data["reason"],
                    "conflicts_with": conflicts,
                    "source": source,
                    "position": position,
                },
            ]
        elif event_type == "claim.retracted":
            detail = {"reason": data["reason"]}
        else:
            raise ValueError(f"{event_type} is not a claim event")
    status = STATUS_AFTER[event_type]
    doc["status"] = status
    doc["step"] = {
        "position": position,
        "type": event_type,
        "status": status,
        "recorded_at": recorded_at,
        "actor": actor,
        "source": source,
        **detail,
    }
    return ClaimVersion(doc)


def latest_versions(
    events: Iterable[tuple[int, str, str, str, Mapping[str, Any]]],
    published: Mapping[str, FuzzyJSON | None],
) -> dict[str, ClaimVersion]:
    """Fold ``(position, recorded_at, actor, type, data)`` events into each claim's version."""
    claims: dict[str, ClaimVersion] = {}
    for position, recorded_at, actor, event_type, data in events:
        if event_type not in CLAIM_EVENT_TYPES:
            continue
        claim = str(data["claim"])
        claims[claim] = evolve_claim(
            claims.get(claim),
            event_type,
            data,
            position=position,
            recorded_at=recorded_at,
            actor=actor,
            published=published.get,
        )
    return claims
