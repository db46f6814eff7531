"""The leadership rules: claim versions of one post in, state and tenures out. Pure, no I/O.

:func:`post_state` answers "who holds this post on D" from the versions of its claims as known
at some T (see :mod:`.claim_versions` for how versions and their dates come about);
:func:`tenures` lists every tenure the claims show.

- A change is in effect on D when the day it counts from is on or before D.
- A pending change (not in effect yet: only expected, announced or rumored, or dated after
  D) is listed on D once its report counts as published by D.
- A retracted claim has no effect at all.
- An appointment or incumbency opens a tenure for its person, a departure closes it. Nothing
  closes a tenure implicitly, so two permanent holders at once stay visible as a conflict.
  One that may have taken effect by the day a departure of its person ended a tenure (its
  date is vaguer) is evidence of that tenure: only one certainly after it opens another,
  as does an incumbency without a date from a source out after a disputed departure (it
  says the person holds the post then, against the departure).
  An appointment in another specific capacity (acting, then permanent) starts a new tenure.
  A departure that may be the end already known (reported again, or more vaguely) is
  evidence of it; one only announced or expected is then no longer pending either.
  Departures of one person linked by disputes are rival reports of one end (unless the
  person took the post up again between them): the earliest ends the tenure, the others
  are its evidence, until one is confirmed; then the others give way.
  A change without a date of its own may have happened any time before its source was
  out. Report order never decides: on one day, departures come first, then the change that
  may have happened earliest, then acting before permanent. "unspecified" names no
  capacity: it never starts another role.
- A tenure's capacity is the latest specific capacity its evidence gives, from undisputed
  claims when there are any: "unspecified" never overrides "acting". The appointments and
  incumbencies come first; a departure's capacity counts only when they give none.
- A live claim whose latest step is a dispute is a conflict (while it bears on the state:
  about, or naming, a claim of a current holding, of a pending change, or of a holding
  after which nobody took the post up), as are overlapping permanent holders, and
  overlapping acting or interim ones, unless a departure of one of them not in effect yet
  may already have happened (its date is vaguer) and would end the role they hold. Claims
  linked by disputes are one conflict: every person involved, and the newest dispute's
  reason, whatever post the other claims are about.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from leaderlog.projections.claim_versions import ClaimVersion, earliest_day, shown_anchor

__all__ = [
    "ACTING_CAPACITIES",
    "OVERLAPPING_REASONS",
    "RULES_VERSION",
    "ChangeToComeOrder",
    "DisputeLinks",
    "Tenure",
    "TenureOrder",
    "changes_to_come_order",
    "dispute_links",
    "fold_tenures",
    "keyed_tenures",
    "ordered_tenures",
    "pending",
    "post_state",
    "tenures",
]

# Bumped with every change to what these rules answer from the same stored claim versions:
# the leadership projection's version moves only when its rows do, so validators of answers
# worked out with the rules (the pages' ETags) carry this one too.
RULES_VERSION = 9

#: Where a change to come is listed: first day reported, date as written, staying, claim.
ChangeToComeOrder = tuple[dt.date, str, bool, str]

ACTING_CAPACITIES = frozenset({"acting", "interim"})
# The conflicts of holders overlapping in one kind of capacity, and what each says.
_OVERLAPPING = (
    ("overlapping_permanent", frozenset({"permanent"})),
    ("overlapping_acting", ACTING_CAPACITIES),
)
OVERLAPPING_REASONS = {
    "overlapping_permanent": "more than one permanent holder at once",
    "overlapping_acting": "more than one acting or interim holder at once",
}


@dataclass(slots=True)
class Tenure:
    """One person's continuous holding of one post, with the claims that show it."""

    person: str
    post: str
    start: dict[str, Any] | None
    start_day: dt.date | None
    evidence: list[ClaimVersion]
    end: dict[str, Any] | None = None
    end_day: dt.date | None = None
    # The first day the end may have come: a repeat dated more exactly takes its place.
    end_earliest: dt.date | None = None
    cause: str | None = None
    ended_by: str | None = None

    @property
    def open(self) -> bool:
        return self.end is None

    def capacity(self) -> str:
        # The claims that opened or showed the tenure say what it was; a departure's
        # capacity only speaks when they do not.
        openers = [claim for claim in self.evidence if claim.kind != "departure"]
        for claims in (openers, self.evidence):
            undisputed = [claim for claim in claims if claim.status != "disputed"]
            for claim in reversed(undisputed or claims):
                if claim.capacity != "unspecified":
                    return claim.capacity
        return "unspecified"

    def status(self) -> str:
        if any(claim.status == "disputed" for claim in self.evidence):
            return "disputed"
        if any(claim.confirmed for claim in self.evidence):
            return "confirmed"
        return "reported"

    def as_json(self) -> dict[str, Any]:
        return {
            "person": self.person,
            "post": self.post,
            "capacity": self.capacity(),
            "start": self.start,
            "end": self.end,
            "cause": self.cause,
            "ended_by": self.ended_by,
            "status": self.status(),
            "evidence": [_evidence(claim) for claim in self.evidence],
        }


def _evidence(claim: ClaimVersion) -> dict[str, Any]:
    doc = claim.doc
    return {
        "claim": doc["claim"],
        "kind": doc["kind"],
        "capacity": doc["capacity"],
        "modality": doc["modality"],
        "status": doc["status"],
        "source": doc["source"],
        "sources": list(doc["sources"]),
        # The sources that disputed it are among its sources too (every source that spoke of
        # it), but not as ones that reported it: a reader must tell them apart.
        "disputed_by": list(
            dict.fromkeys(dispute["source"] for dispute in claim.disputes if dispute["source"])
        ),
        "attribution": doc["attribution"],
        "quote": doc["quote"],
        "locator": doc["locator"],
    }


def _in_effect(
    versions: Iterable[ClaimVersion],
    as_of: dt.date | None,
    superseded: set[str] | None = None,
) -> list[tuple[dt.date, ClaimVersion]]:
    """The changes in effect on ``as_of`` (None: ever), in the order they are folded;
    ``superseded``: the departures that give way, when already known."""
    versions = list(versions)
    if superseded is None:
        superseded = _superseded_departures(versions)
    changes = []
    for version in versions:
        day = version.effect_day()
        if day is not None and (as_of is None or day <= as_of) and version.claim not in superseded:
            changes.append((day, version))
    changes.sort(key=_chronological)
    return changes


def _rival_ends(versions: Sequence[ClaimVersion]) -> dict[str, str]:
    """Departures that are rival reports of one end, each mapped to its group's first member:
    departures of one person linked by disputes (directly or through others), unless the
    person took the post up again between them. Departures without a rival are left out."""
    departures = {v.claim: v for v in versions if v.kind == "departure" and v.live}
    if len(departures) < 2:
        return {}
    starts: dict[str, list[tuple[dt.date, dt.date]]] = {}
    for version in versions:
        day = _stated_day(version)
        if version.kind != "departure" and version.live and day is not None:
            starts.setdefault(version.person, []).append((_earliest_day(version) or day, day))
    leader: dict[str, str] = {}

    def root(name: str) -> str:
        while leader.setdefault(name, name) != name:
            name = leader[name]
        return name

    for claim in departures.values():
        for dispute in claim.disputes:
            for other_id in dispute["conflicts_with"]:
                other = departures.get(other_id)
                if other is not None and _one_end(claim, other, starts):
                    leader[root(other.claim)] = root(claim.claim)
    groups: dict[str, list[str]] = {}
    for name in departures:
        groups.setdefault(root(name), []).append(name)
    return {
        name: first for first, members in groups.items() if len(members) > 1 for name in members
    }


def _superseded_departures(
    versions: Sequence[ClaimVersion], rivals: Mapping[str, str] | None = None
) -> set[str]:
    """Departures that give way to a confirmed rival (see :func:`_rival_ends`): once one is
    confirmed, its date counts (the others would end the tenure early, and the confirmed one
    start and end another)."""
    if rivals is None:
        rivals = _rival_ends(versions)
    confirmed_groups = {rivals[v.claim] for v in versions if v.claim in rivals and v.confirmed}
    return {
        v.claim
        for v in versions
        if v.claim in rivals and rivals[v.claim] in confirmed_groups and not v.confirmed
    }


def _stated_day(claim: ClaimVersion) -> dt.date | None:
    """The day a change counts from, or for one not in effect, the first its date may mean."""
    return claim.effect_day() or claim.earliest_stated_day()


def _earliest_day(claim: ClaimVersion) -> dt.date | None:
    """The first day a change, in effect or not, may have happened or may happen."""
    if claim.effect_day() is not None:
        return claim.earliest_effect_day()
    return claim.earliest_stated_day()


def _one_end(
    first: ClaimVersion,
    second: ClaimVersion,
    starts: Mapping[str, list[tuple[dt.date, dt.date]]],
) -> bool:
    """Whether two departures may report one end: same person, and not taking the post up
    again in between (a return between them makes them two ends). Only a start certainly
    after the earlier departure is a return: one dated more vaguely ("about May" next to a
    departure on 30 May) may be the holding that departure ended."""
    if first.person != second.person:
        return False
    days = [day for day in (_stated_day(first), _stated_day(second)) if day is not None]
    if len(days) < 2:
        return True
    low, high = min(days), max(days)
    return not any(
        low < earliest and latest < high for earliest, latest in starts.get(first.person, ())
    )


# Of an acting and a permanent role counting from one day, the acting one came first.
_CAPACITY_ORDER = {"acting": 0, "interim": 0, "unspecified": 1, "permanent": 2}


def _chronological(item: tuple[dt.date, ClaimVersion]) -> tuple[Any, ...]:
    """The order changes are folded in, whatever order they were reported in: by the day
    each counts from; on one day, leaving before taking up, the one that may have happened
    earliest first, then acting before permanent, and last by claim id, so that no answer
    depends on the order of reports."""
    day, claim = item
    return (
        day,
        claim.kind != "departure",
        claim.earliest_effect_day() or dt.date.min,
        _CAPACITY_ORDER.get(claim.capacity, 1),
        claim.claim,
    )


def _fold(
    changes: Sequence[tuple[dt.date, ClaimVersion]], rivals: Mapping[str, str]
) -> list[Tenure]:
    """Every tenure the changes imply, in the order they started (open ones included);
    ``rivals``: the departures that are rival reports of one end (see :func:`_rival_ends`)."""
    found: list[Tenure] = []
    holding: dict[str, Tenure] = {}
    ended: dict[str, Tenure] = {}
    for day, claim in changes:
        current = holding.get(claim.person)
        anchor = claim.effect_date()
        if claim.kind == "departure":
            previous = ended.get(claim.person)
            if previous is not None and (
                _repeats_end(claim, previous, current)
                or (current is None and _rival_of(claim, previous, rivals))
            ):
                # The end already known, reported again (by another source, or more vaguely),
                # or a rival report of it that is not confirmed: evidence of it, not a second
                # tenure; its exact day and its cause, if it knows them better.
                previous.evidence.append(claim)
                if previous.cause in (None, "unknown") and claim.cause is not None:
                    previous.cause = claim.cause
                earliest = claim.earliest_effect_day()
                if (
                    day == previous.end_day
                    and earliest is not None
                    and earliest > (previous.end_earliest or dt.date.min)
                ):
                    previous.end, previous.end_earliest = anchor, earliest
                    previous.ended_by = claim.claim
                continue
            if current is None:
                # Only the end is known: the person held the post until this departure.
                current = Tenure(claim.person, claim.post, None, None, [])
                found.append(current)
            current.evidence.append(claim)
            current.end, current.end_day = anchor, day
            current.end_earliest = claim.earliest_effect_day()
            current.cause, current.ended_by = claim.cause, claim.claim
            holding.pop(claim.person, None)
            ended[claim.person] = current
            continue
        previous = ended.get(claim.person)
        if current is None and previous is not None and _before_end(claim, previous):
            # Dated more vaguely than the departure, it may well be the holding that the
            # departure ended ("X, who is leaving, heads..."): it is evidence of that tenure,
            # not a return. Only a change certainly after the departure opens a new one.
            previous.evidence.append(claim)
            if previous.start_day is None:
                previous.start_day = min(day, previous.end_day or day)
                # Unless it can only mean a day after the end: an undated holding counted
                # from a source out after the departure began some day before it, not "by"
                # the day that source was out.
                earliest = earliest_day(anchor)
                if previous.end_day is None or earliest is None or earliest <= previous.end_day:
                    previous.start = anchor
            continue
        if current is not None and claim.kind == "appointment" and _other_role(claim, current):
            current.end, current.end_day, current.ended_by = anchor, day, claim.claim
            current.end_earliest = claim.earliest_effect_day()
            ended[claim.person] = current
            current = None
        if current is None:
            current = Tenure(claim.person, claim.post, anchor, day, [])
            holding[claim.person] = current
            found.append(current)
        current.evidence.append(claim)
    return found


def _repeats_end(claim: ClaimVersion, previous: Tenure, current: Tenure | None) -> bool:
    """Whether a departure may be the end ``previous`` already has: dated so that it may have
    taken effect by then, and while the person holds the post again, in the capacity that
    ended there (an acting role left as the permanent appointment began)."""
    earliest = claim.earliest_effect_day()
    if earliest is None or previous.end_day is None or earliest > previous.end_day:
        return False
    if current is None:
        return True
    return claim.capacity != "unspecified" and (
        claim.capacity == previous.capacity() != current.capacity()
    )


def _rival_of(claim: ClaimVersion, tenure: Tenure, rivals: Mapping[str, str]) -> bool:
    """Whether a departure is a rival report of the end of ``tenure`` (disputes link them)."""
    group = rivals.get(claim.claim)
    ended_by = tenure.ended_by
    return group is not None and ended_by is not None and rivals.get(ended_by) == group


def _before_end(claim: ClaimVersion, tenure: Tenure) -> bool:
    """Whether ``claim`` may have taken effect by the day ``tenure`` ended, in its capacity.

    An incumbency without a date of its own, whose source was out only after a disputed
    departure ended the tenure, did not: it says the person holds the post on the day it
    was out ("she remains deputy director"), against that departure. Undisputed, the
    departure stands, and the incumbency may describe the holding it ended, reported late.
    """
    earliest = claim.earliest_effect_day()
    if earliest is None or tenure.end_day is None or earliest > tenure.end_day:
        return False
    if (
        claim.kind == "incumbency"
        and claim.dated_by_its_source()
        and claim.report_out_from() > tenure.end_day
        and any(
            ender.claim == tenure.ended_by and ender.status == "disputed"
            for ender in tenure.evidence
        )
    ):
        return False
    return not (claim.kind == "appointment" and _other_role(claim, tenure))


def _other_role(claim: ClaimVersion, tenure: Tenure) -> bool:
    """Whether ``claim`` names a capacity other than the tenure's; "unspecified" names none,
    so it neither starts another role nor is one ("absence is not negation")."""
    capacity = tenure.capacity()
    return "unspecified" not in (claim.capacity, capacity) and claim.capacity != capacity


def fold_tenures(versions: Iterable[ClaimVersion]) -> list[Tenure]:
    """Every tenure the claims of one post (or one person) show (in no particular order),
    with the days the rules count its start and end from (``start_day``, ``end_day``): a
    vaguely published date counts at the latest from the day the log recorded it, which the
    shown ``start`` and ``end`` do not say."""
    versions = list(versions)
    rivals = _rival_ends(versions)
    return _fold(_in_effect(versions, None, _superseded_departures(versions, rivals)), rivals)


def tenures(versions: Iterable[ClaimVersion]) -> list[dict[str, Any]]:
    """Every tenure the claims of one post (or one person) show, oldest first.

    Each: ``{person, post, capacity, start, end, cause, ended_by, status, evidence}`` where
    ``start``/``end`` are fuzzy dates with a ``basis`` (``effective``, ``confirmed``,
    ``published`` or ``recorded``), ``start`` None when only the end is known and ``end``
    None while the tenure is open.
    """
    return ordered_tenures([versions])[0]


# Where a tenure stands in a history: the day it counts from (its start, else its end, else
# last), then its post and person.
TenureOrder = tuple[dt.date, str, str]


def ordered_tenures(
    groups: Iterable[Iterable[ClaimVersion]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The tenures of several groups of claims (one post and person each), in the order they
    count from (see :func:`keyed_tenures`), and the changes still to come."""
    keyed, waiting = keyed_tenures(groups)
    return [answer for _, answer in keyed], waiting


def keyed_tenures(
    groups: Iterable[Iterable[ClaimVersion]],
) -> tuple[list[tuple[TenureOrder, dict[str, Any]]], list[dict[str, Any]]]:
    """The tenures of several groups of claims (one post and person each), each with its
    place in the order they count from: the day the rules read, so a vaguely published start
    is placed no later than the day the log recorded it (which its shown date does not say);
    sorted by that place. And the changes still to come (:func:`pending` of each group, with
    its ``post``), from the same folds.

    A tenure's evidence also lists the claims that report its start or end but have no
    effect of their own: a departure that gave way to a confirmed rival, and a change still
    to come that is the start or end already known (which :func:`pending` leaves out), so
    that no claim drops out of a history. They change neither its dates nor its status."""
    found: list[tuple[Tenure, list[ClaimVersion]]] = []
    waiting: list[dict[str, Any]] = []
    for group in groups:
        versions = list(group)
        rivals = _rival_ends(versions)
        superseded = _superseded_departures(versions, rivals)
        folded = _fold(_in_effect(versions, None, superseded), rivals)
        to_come, known = _split_pending(versions, None, folded, superseded)
        also = _also_reporting(versions, folded, superseded, rivals, known)
        found += [(tenure, also.get(id(tenure), [])) for tenure in folded]
        waiting += [{**_pending(claim), "post": claim.post} for claim in to_come]
    keyed: list[tuple[TenureOrder, dict[str, Any]]] = []
    for tenure, also_reporting in found:
        answer = tenure.as_json()
        answer["evidence"] += [_evidence(claim) for claim in also_reporting]
        order = (tenure.start_day or tenure.end_day or dt.date.max, tenure.post, tenure.person)
        keyed.append((order, answer))
    keyed.sort(key=itemgetter(0))
    return keyed, waiting


def _also_reporting(
    versions: Sequence[ClaimVersion],
    folded: Sequence[Tenure],
    superseded: set[str],
    rivals: Mapping[str, str],
    known: Sequence[tuple[ClaimVersion, Tenure]],
) -> dict[int, list[ClaimVersion]]:
    """The claims without an effect of their own that report a tenure's start or end, by
    the tenure's ``id``: departures that gave way to a confirmed rival, and ``known``, the
    changes still to come whose start or end is already known (see :func:`_split_pending`)."""
    found: dict[int, list[ClaimVersion]] = {}
    for claim in sorted(versions, key=_listing_order):
        if claim.claim not in superseded:
            continue
        group = rivals[claim.claim]
        for tenure in folded:
            if tenure.ended_by is not None and rivals.get(tenure.ended_by) == group:
                found.setdefault(id(tenure), []).append(claim)
                break
    for claim, tenure in known:
        found.setdefault(id(tenure), []).append(claim)
    return found


def _pending(claim: ClaimVersion) -> dict[str, Any]:
    return {
        "claim": claim.claim,
        "kind": claim.kind,
        "person": claim.person,
        "capacity": claim.capacity,
        "cause": claim.cause,
        "effective": claim.doc["confirmed_effective"] or claim.doc["effective"],
        "modality": claim.modality,
        "status": claim.status,
        "attribution": claim.attribution,
        "sources": list(claim.sources),
        "reported": shown_anchor(claim.doc["reported_anchor"]),
    }


def pending(
    versions: Iterable[ClaimVersion],
    as_of: dt.date | None,
    folded: Sequence[Tenure] | None = None,
    superseded: set[str] | None = None,
) -> list[dict[str, Any]]:
    """Live changes not in effect on ``as_of`` but reported by then (None: not in effect yet),
    but for a departure of someone whose tenure already ended on a day its date may mean.

    ``folded`` and ``superseded``: the tenures of the changes in effect on ``as_of`` and the
    departures that give way, when already known."""
    return [_pending(claim) for claim in _split_pending(versions, as_of, folded, superseded)[0]]


def _split_pending(
    versions: Iterable[ClaimVersion],
    as_of: dt.date | None,
    folded: Sequence[Tenure] | None,
    superseded: set[str] | None,
) -> tuple[list[ClaimVersion], list[tuple[ClaimVersion, Tenure]]]:
    """The changes :func:`pending` lists, and those it leaves out as a start or end already
    known, each with the tenure it reports."""
    versions = list(versions)
    claims = _pending_claims(versions, as_of)
    known: list[tuple[ClaimVersion, Tenure]] = []
    if any(claim.kind in ("departure", "appointment", "incumbency") for claim in claims):
        rivals = _rival_ends(versions) if superseded is None or folded is None else {}
        if superseded is None:
            superseded = _superseded_departures(versions, rivals)
        if folded is None:
            folded = _fold(_in_effect(versions, as_of, superseded), rivals)
        to_come = []
        for claim in claims:
            started = _start_already_known(claim, folded, as_of)
            if started is None:
                to_come.append(claim)
            else:
                known.append((claim, started))
        # A return still to come: a departure after it is a change to come too.
        returning = {claim.person for claim in to_come if claim.kind != "departure"}
        claims = []
        for claim in to_come:
            if claim.claim in superseded:
                continue
            ended = None if claim.person in returning else _end_already_known(claim, folded)
            if ended is None:
                claims.append(claim)
            else:
                known.append((claim, ended))
    return claims, known


def _pending_claims(versions: Iterable[ClaimVersion], as_of: dt.date | None) -> list[ClaimVersion]:
    found = []
    for claim in versions:
        if not claim.live:
            continue
        day = claim.effect_day()
        if as_of is None:
            if day is None:
                found.append(claim)
        elif (day is None or day > as_of) and claim.reported_day() <= as_of:
            found.append(claim)
    found.sort(key=_listing_order)
    return found


def _listing_order(claim: ClaimVersion) -> ChangeToComeOrder:
    """Where a change to come (or a claim without an effect of its own) is listed: by the
    date it was reported, leaving first, then by claim id, as a history lists its changes to
    come (:func:`changes_to_come_order`), so that the order the log recorded them in does
    not decide."""
    return changes_to_come_order(
        {
            "reported": shown_anchor(claim.doc["reported_anchor"]),
            "kind": claim.kind,
            "claim": claim.claim,
        }
    )


def changes_to_come_order(item: Mapping[str, Any]) -> ChangeToComeOrder:
    """The order changes to come are listed in, given as answers show them: by the date
    they were reported (from the first day it may mean, so that a source out "after 2025-05"
    comes after one out on 20 May, and a vaguer date before a day it takes in), leaving
    before taking up, then by claim id."""
    reported = item["reported"] or {}
    return (
        earliest_day(reported) or dt.date.min,
        reported.get("date") or "",
        item["kind"] != "departure",
        item["claim"],
    )


def _earliest_meant(claim: ClaimVersion) -> dt.date | None:
    """The first day a pending change's own date may mean; one without a date ("soon")
    may mean any day from its report on."""
    earliest = claim.earliest_stated_day()
    if earliest is None:
        earliest = earliest_day(claim.doc["reported_anchor"])
    return earliest


def _may_be_reported_again(claim: ClaimVersion) -> bool:
    """Whether a change to come may be a start or end already known reported again: a
    rumour is no announcement, so a rumored one stays pending until it is confirmed."""
    return claim.modality != "rumored"


def _start_already_known(
    claim: ClaimVersion, folded: Sequence[Tenure], as_of: dt.date | None
) -> Tenure | None:
    """The tenure whose start a pending appointment is, if it is one already in effect: a
    tenure of its person in its post and capacity began on a day its date may mean (an
    expected appointment that another report already shows happened). A tenure known only
    from its end began some day up to that end, as the fold reads it (see :func:`_before_end`).
    For an incumbency, see :func:`_holding_already_known`."""
    if claim.kind == "incumbency":
        return _holding_already_known(claim, folded, as_of)
    if claim.kind != "appointment" or not _may_be_reported_again(claim):
        return None
    earliest = _earliest_meant(claim)
    if earliest is None:
        return None
    return next(
        (
            tenure
            for tenure in folded
            if _of_its_holding(claim, tenure)
            and (latest_start := tenure.start_day or tenure.end_day) is not None
            and earliest <= latest_start
        ),
        None,
    )


def _of_its_holding(claim: ClaimVersion, tenure: Tenure) -> bool:
    """Whether ``tenure`` is of the claim's person in its post, in a capacity it may mean."""
    return (
        tenure.person == claim.person
        and tenure.post == claim.post
        and claim.capacity in ("unspecified", tenure.capacity())
    )


def _holding_already_known(
    claim: ClaimVersion, folded: Sequence[Tenure], as_of: dt.date | None
) -> Tenure | None:
    """The tenure a pending incumbency reports, if it took effect on a date that may mean a
    day up to ``as_of`` that a tenure of its person in its post and capacity covers: a
    holding "about May" next to the retirement on 30 May that ended it is that tenure on the
    30th, as the fold reads it from the 31st on, not a change to come. One dated certainly
    after ``as_of``, or only expected, still is."""
    if as_of is None or not claim.takes_effect or claim.earliest_stated_day() is None:
        return None
    earliest = claim.earliest_effect_day()
    if earliest is None or earliest > as_of:
        return None
    return next(
        (
            tenure
            for tenure in folded
            if _of_its_holding(claim, tenure)
            and (tenure.start_day is None or tenure.start_day <= earliest)
            and (tenure.open or (tenure.end_day is not None and earliest <= tenure.end_day))
        ),
        None,
    )


def _end_already_known(claim: ClaimVersion, folded: Sequence[Tenure]) -> Tenure | None:
    """The tenure whose end a pending departure is, if it is one already in effect: its
    person holds the post no more, and its own date may be the day a tenure of theirs ended
    (an announcement of the retirement that another report already shows happened); of
    several, the first to end on such a day."""
    if claim.kind != "departure" or not _may_be_reported_again(claim):
        return None
    earliest = _earliest_meant(claim)
    if earliest is None:
        return None
    theirs = [tenure for tenure in folded if tenure.person == claim.person]
    if any(tenure.open for tenure in theirs):
        return None
    ended = [
        tenure for tenure in theirs if tenure.end_day is not None and earliest <= tenure.end_day
    ]
    return min(ended, key=lambda tenure: tenure.end_day or dt.date.max, default=None)


def _moved_on(tenure: Tenure, folded: Sequence[Tenure]) -> bool:
    """Whether the post moved on after ``tenure``: it ended, and someone else took the post
    up since (from its last day on). What its claims say no longer bears on who holds it."""
    end = tenure.end_day
    return end is not None and any(
        other.person != tenure.person and other.start_day is not None and other.start_day >= end
        for other in folded
    )


@dataclass(frozen=True, slots=True)
class DisputeLinks:
    """Claims linked by disputes, whatever their post, built once for a state of many posts.

    ``claims``: every claim given, by id (a dispute's other side: its person, whether it was
    retracted). ``naming``: for a claim id, the disputed claims whose latest dispute names it.
    ``linked``: for a claim id, every disputed claim linked to it through disputes (each other,
    or a third through either), itself included when it is disputed.
    """

    claims: Mapping[str, ClaimVersion]
    naming: Mapping[str, Sequence[ClaimVersion]]
    linked: Mapping[str, Sequence[ClaimVersion]]


def _linked_groups(
    disputed: Sequence[ClaimVersion],
) -> tuple[dict[str, list[ClaimVersion]], Callable[[str], str]]:
    """The disputed claims grouped by the links of their latest disputes (a group's key to
    its claims, in the order given), and the key of any claim id's group."""
    leader: dict[str, str] = {}

    def root(name: str) -> str:
        while leader.setdefault(name, name) != name:
            leader[name] = leader[leader[name]]
            name = leader[name]
        return name

    for claim in disputed:
        for other in claim.disputes[-1]["conflicts_with"]:
            first, second = root(claim.claim), root(other)
            if first != second:
                leader[second] = first
    groups: dict[str, list[ClaimVersion]] = {}
    for claim in disputed:
        groups.setdefault(root(claim.claim), []).append(claim)
    return groups, root


def dispute_links(claims: Iterable[ClaimVersion]) -> DisputeLinks:
    by_claim = {claim.claim: claim for claim in claims}
    disputed = [claim for claim in by_claim.values() if claim.status == "disputed"]
    naming: dict[str, list[ClaimVersion]] = {}
    for claim in disputed:
        for other in dict.fromkeys(claim.disputes[-1]["conflicts_with"]):
            naming.setdefault(other, []).append(claim)
    groups, root = _linked_groups(disputed)
    linked = {name: groups[root(name)] for name in (*naming, *(claim.claim for claim in disputed))}
    return DisputeLinks(by_claim, naming, linked)


def _disputes(
    disputed: Sequence[ClaimVersion], by_claim: Mapping[str, ClaimVersion]
) -> list[dict[str, Any]]:
    """One conflict per set of claims linked by disputes (a disputing b, b or c disputing a
    or b...): every claim and person in it, and the newest dispute's reason. A retracted claim
    has no effect, so it is no longer a side of a conflict."""
    # Newest dispute first: it gives its conflict's reason and leads its list of claims.
    newest_first = sorted(disputed, key=lambda claim: -int(claim.disputes[-1]["position"]))
    groups, _ = _linked_groups(newest_first)
    conflicts = []
    for group in groups.values():
        names: dict[str, None] = {}
        for claim in group:
            names[claim.claim] = None
            for other in claim.disputes[-1]["conflicts_with"]:
                if other not in by_claim or by_claim[other].live:
                    names[other] = None
        claims = list(names)
        persons = [by_claim[claim].person for claim in claims if claim in by_claim]
        conflicts.append(
            {
                "kind": "disputed",
                "claims": claims,
                "persons": list(dict.fromkeys(persons)),
                "reason": group[0].disputes[-1]["reason"],
            }
        )
    return conflicts


def _linked_to(
    bearing: Sequence[ClaimVersion], links: DisputeLinks, superseded: Container[str]
) -> list[ClaimVersion]:
    """Every claim linked by disputes to one of ``bearing``, each group taken once: a claim
    disputed by thousands made each of them bring the whole group again (5,000 disputes
    took 13 s)."""
    disputed: dict[str, ClaimVersion] = {}
    taken: set[int] = set()
    for claim in bearing:
        group = links.linked.get(claim.claim)
        if group is not None:
            if id(group) in taken:
                continue
            taken.add(id(group))
        for linked in group if group is not None else (claim,):
            if linked.claim not in superseded:
                disputed[linked.claim] = linked
    return list(disputed.values())


def _may_have_left(
    versions: Iterable[ClaimVersion],
    as_of: dt.date,
    superseded: Container[str],
    folded: Sequence[Tenure],
) -> set[str]:
    """The holders a departure from the post, not in effect on ``as_of``, may have taken out
    of it by then: its date is vague enough to mean ``as_of`` or a day before, and it would
    end the holding on ``as_of`` (``folded``: the tenures in effect then).

    A departure from the role its holder left for another (acting, then permanent) is that
    end reported again, as :func:`_fold` reads it once in effect: it makes no room in the
    role they hold, before its day any more than after."""
    holding = {tenure.person: tenure for tenure in folded if tenure.open}
    # As the fold keeps it: each person's last tenure to end, in the order they started.
    ended = {tenure.person: tenure for tenure in folded if not tenure.open}
    leaving = set()
    for claim in versions:
        if claim.kind != "departure" or not claim.live or claim.claim in superseded:
            continue
        current = holding.get(claim.person)
        if current is None:
            continue
        day, earliest = claim.effect_day(), claim.earliest_effect_day()
        if day is None or earliest is None or not earliest <= as_of < day:
            continue
        previous = ended.get(claim.person)
        if previous is None or not _repeats_end(claim, previous, current):
            leaving.add(claim.person)
    return leaving


def post_state(
    versions: Sequence[ClaimVersion],
    as_of: dt.date,
    elsewhere: Mapping[str, ClaimVersion] | DisputeLinks | None = None,
) -> dict[str, Any]:
    """The state of one post on ``as_of`` from the versions of its claims known at some T.

    ``elsewhere``: claims of other posts known at the same T, by id or as their
    :func:`dispute_links` (built once for many posts), for the disputes linked to this post's
    claims: those that name them, those they name (their person and whether they were
    retracted), and so on through the links.

    Returns ``{holders, pending, vacancy, conflicts}``:

    - ``holders``: ``[{person, capacity, since, status, claims}]``, ``since`` a fuzzy date with
      its ``basis`` (None when only a departure shows the tenure), ``status`` one of
      ``reported``, ``confirmed``, ``disputed``, ``claims`` the supporting claim ids.
    - ``pending``: changes not in effect yet (see :func:`pending`).
    - ``vacancy``: ``filled`` (someone holds it not known to be acting), ``acting`` (only acting
      or interim holders), ``vacant`` (changes are known and nobody holds it), ``unknown``.
    - ``conflicts``: ``[{kind, claims, persons, reason}]`` with kind ``disputed`` (a live
      claim whose latest step is a dispute), ``overlapping_permanent`` or
      ``overlapping_acting`` (two holders at once, each permanent, or each acting or interim).
    """
    rivals = _rival_ends(versions)
    superseded = _superseded_departures(versions, rivals)
    changes = _in_effect(versions, as_of, superseded)
    folded = _fold(changes, rivals)
    holding = [tenure for tenure in folded if tenure.open]
    holding.sort(key=lambda tenure: (tenure.start_day or dt.date.min, tenure.person))
    holders = [
        {
            "person": tenure.person,
            "capacity": tenure.capacity(),
            "since": tenure.start,
            "status": tenure.status(),
            "claims": [claim.claim for claim in tenure.evidence],
        }
        for tenure in holding
    ]
    if holders:
        acting = all(holder["capacity"] in ACTING_CAPACITIES for holder in holders)
        vacancy = "acting" if acting else "filled"
    else:
        vacancy = "vacant" if changes else "unknown"

    waiting = pending(versions, as_of, folded, superseded)
    # A dispute bears on the post's state on D while it is about a claim of a tenure after
    # which the post has not moved on (a current holding, or one that ended with nobody
    # taking the post up since), or about a pending change.
    relevant = {
        claim.claim
        for tenure in folded
        if not _moved_on(tenure, folded)
        for claim in tenure.evidence
    }
    relevant |= {item["claim"] for item in waiting}
    own = {claim.claim: claim for claim in versions}
    if isinstance(elsewhere, DisputeLinks):
        links = elsewhere
    else:
        links = dispute_links({**(elsewhere or {}), **own}.values())
    by_claim = {**links.claims, **own}
    # The disputes that bear on the state: about or naming a relevant claim, this post's own
    # or made on another post; each brings every dispute linked to it. A claim's latest
    # dispute is the one that names (as its conflict lists them): an earlier one of the same
    # claim no longer brings it in.
    bearing = [
        claim
        for claim in versions
        if claim.status == "disputed"
        and claim.claim not in superseded
        and (
            claim.claim in relevant
            or any(other in relevant for other in claim.disputes[-1]["conflicts_with"])
        )
    ]
    bearing += [claim for name in relevant for claim in links.naming.get(name, ())]
    conflicts = _disputes(_linked_to(bearing, links, superseded), by_claim)
    # A post has one permanent holder, and one standing in for it: two of either at once are
    # reports at odds (an acting holder beside a permanent one on leave is not).
    # Holders at once are at odds only while both certainly hold the post: a departure whose
    # date may already mean D ("in March" on 20 March, or one dated by its source alone) may
    # have made room for the other.
    # Only holders beside another can be at odds: most posts have one, and need no look.
    leaving = _may_have_left(versions, as_of, superseded, folded) if len(holding) > 1 else set()
    for kind, capacities in _OVERLAPPING:
        overlapping = [
            tenure
            for tenure in holding
            if tenure.capacity() in capacities and tenure.person not in leaving
        ]
        if len(overlapping) > 1:
            conflicts.append(
                {
                    "kind": kind,
                    "claims": [claim.claim for tenure in overlapping for claim in tenure.evidence],
                    "persons": [tenure.person for tenure in overlapping],
                    "reason": OVERLAPPING_REASONS[kind],
                }
            )
    return {"holders": holders, "pending": waiting, "vacancy": vacancy, "conflicts": conflicts}
