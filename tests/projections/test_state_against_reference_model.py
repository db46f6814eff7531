"""Differential test: leadership state against a reference model written from the contract.

The model below reads the rules of the design's "Projections" section and the README's
"Leadership, history and audit" section independently of the project's own rules module, for
a deliberately small world: one organisation, two posts, three people and three sources. For
random claim histories appended to a real SQLite log, ``Queries.state`` must agree with it on
every post's holders (person, capacity), pending claims, vacancy and kinds of conflict, for
several pairs of an effective day and a log position.

Configurations whose reading the contract leaves open are reported by the model as
``Ambiguous`` and those probes are left out (each such case is named where it is raised).
"""

from __future__ import annotations

import asyncio
import calendar
import datetime as dt
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leaderlog.log import EventLog
from leaderlog.projections import Queries
from tests.answer_schemas import assert_documented
from tests.projections.logs import append, current, record

ORG = "a"
POSTS = ["p", "q"]
PEOPLE = ["x", "y", "z"]
# A source published on a day, one published in a month, and one with no published date.
SOURCES: dict[str, str | None] = {"s1": "2025-03-10", "s2": None, "s3": "2025-04"}
FIRST_RECORDED = dt.datetime(2025, 1, 5, 12, tzinfo=dt.UTC)
RECORDED_STEP = dt.timedelta(days=9)
EFFECTIVE_DAYS = ["2025-02-01", "2025-03-10", "2025-04-15", "2025-05-20"]
VAGUE_DATES = ["2025-03", "2025-04", "2025"]
AS_OF_DAYS = [
    "2025-01-20",
    "2025-02-01",
    "2025-03-09",
    "2025-03-10",
    "2025-03-31",
    "2025-04-15",
    "2025-04-30",
    "2025-05-20",
    "2025-12-31",
    "2026-01-01",
]
NEVER = dt.date.max
ALWAYS = dt.date.min


class Ambiguous(Exception):
    """A configuration whose answer the contract leaves open: the probe is left out."""


def _base_records() -> list[dict[str, Any]]:
    found = [record("org.registered", org=ORG, name="A")]
    found += [record("post.defined", post=post, org=ORG, title=post.upper()) for post in POSTS]
    found += [record("person.registered", person=p, name=p.upper()) for p in PEOPLE]
    for source, published in SOURCES.items():
        data: dict[str, Any] = {"source": source, "url": f"https://e.org/{source}"}
        data["publisher"] = source.upper()
        if published is not None:
            data["published"] = {"date": published}
        found.append(record("source.registered", **data))
    return found


BASE = len(_base_records())


# ---------------------------------------------------------------------------------------------
# Fuzzy dates: a day, a month or a year gives a range of possible days.


def day_range(text: str) -> tuple[dt.date, dt.date]:
    parts = [int(part) for part in text.split("-")]
    if len(parts) == 3:
        day = dt.date(*parts)
        return day, day
    if len(parts) == 2:
        last = calendar.monthrange(parts[0], parts[1])[1]
        return dt.date(parts[0], parts[1], 1), dt.date(parts[0], parts[1], last)
    return dt.date(parts[0], 1, 1), dt.date(parts[0], 12, 31)


def recorded_day(index: int) -> dt.date:
    return (FIRST_RECORDED + index * RECORDED_STEP).date()


def report_day(source: str, index: int) -> dt.date:
    """When a source's report was out: its published date's last day, but no later than the
    day the log recorded the event (the source was out by then); unknown: that recorded day."""
    published = SOURCES[source]
    recorded = recorded_day(index)
    if published is None:
        return recorded
    return min(day_range(published)[1], recorded)


# ---------------------------------------------------------------------------------------------
# The claims as known at a position.


@dataclass
class Claim:
    claim: str
    kind: str
    person: str
    post: str
    capacity: str
    modality: str
    source: str
    reported_index: int
    date: str | None
    status: str = "reported"
    confirmations: list[tuple[str, int]] = field(default_factory=list)
    links: set[str] = field(default_factory=set)  # every dispute, for rival departures
    latest_dispute_names: list[str] = field(default_factory=list)

    @property
    def confirmed(self) -> bool:
        return bool(self.confirmations)

    @property
    def takes_effect(self) -> bool:
        # A confirmation still counts once a correction says the change was only expected:
        # from when the confirming source was out, as it would after that correction.
        return self.modality == "occurred" or self.confirmed

    @property
    def report_day(self) -> dt.date:
        return report_day(self.source, self.reported_index)

    def counts_from(self) -> dt.date:
        """The day an effective change counts from."""
        if self.date is not None:
            return day_range(self.date)[1]
        if self.modality == "occurred":
            return self.report_day
        # An undated change that was only expected takes effect with its confirmation, so it
        # happened by the time the confirming source was out (the soonest, of several).
        return min(report_day(source, index) for source, index in self.confirmations)

    def earliest(self) -> dt.date:
        """The earliest day an effective change may have happened: one without a date of its
        own may have happened at any time before its source was out; one reported as still to
        come (expected, announced, rumored) not before its source was published."""
        first = day_range(self.date)[0] if self.date is not None else ALWAYS
        if self.modality != "occurred":
            published = SOURCES[self.source]
            if published is not None and day_range(published)[0] <= recorded_day(
                self.reported_index
            ):
                first = max(first, day_range(published)[0])
        return min(first, self.counts_from())

    def possible_days(self) -> tuple[dt.date, dt.date]:
        """The days a change still to come may mean: "soon" is any day from its report on."""
        if self.date is not None:
            return day_range(self.date)
        return self.report_day, NEVER


def known_claims(events: list[dict[str, Any]], known: int) -> dict[str, Claim]:
    """Fold the claim events among the first ``known`` into the claims as they stand."""
    claims: dict[str, Claim] = {}
    retracted: set[str] = set()
    for index, event in enumerate(events[:known]):
        data = event["data"]
        name = data["claim"]
        if event["type"] == "claim.reported":
            effective = data.get("effective")
            claims[name] = Claim(
                claim=name,
                kind=data["kind"],
                person=data["person"],
                post=data["post"],
                capacity=data["capacity"],
                modality=data["modality"],
                source=data["source"],
                reported_index=index,
                date=effective["date"] if effective else None,
            )
            continue
        claim = claims[name]
        if event["type"] == "claim.confirmed":
            claim.status = "confirmed"
            claim.confirmations.append((data["source"], index))
            if data.get("effective"):
                claim.date = data["effective"]["date"]
        elif event["type"] == "claim.corrected":
            claim.status = "corrected"
            changes = data["changes"]
            if "effective" in changes:
                claim.date = changes["effective"]["date"] if changes["effective"] else None
            if "modality" in changes:
                claim.modality = changes["modality"]
        elif event["type"] == "claim.disputed":
            claim.status = "disputed"
            claim.latest_dispute_names = list(data.get("conflicts_with", []))
            for other in data.get("conflicts_with", []):
                claim.links.add(other)
                if other in claims:
                    claims[other].links.add(name)
        elif event["type"] == "claim.retracted":
            retracted.add(name)
    # A retracted claim has no effect, and is no longer named by disputes.
    for name in retracted:
        del claims[name]
    for claim in claims.values():
        claim.links &= set(claims)
    return claims


def disputed_together(claims: dict[str, Claim], start: str) -> set[str]:
    """The claims of one conflict with ``start``: linked by the latest disputes of claims
    whose latest step is a dispute (a later confirmation or correction settles a dispute)."""
    edges: dict[str, set[str]] = {name: set() for name in claims}
    for claim in claims.values():
        if claim.status != "disputed":
            continue
        for other in claim.latest_dispute_names:
            if other in claims:
                edges[claim.claim].add(other)
                edges[other].add(claim.claim)
    found = {start}
    todo = [start]
    while todo:
        for other in edges[todo.pop()]:
            if other not in found:
                found.add(other)
                todo.append(other)
    return found


# ---------------------------------------------------------------------------------------------
# Tenures and the state of a post on a day.

CAPACITY_ORDER = {"acting": 0, "interim": 0, "permanent": 1}


@dataclass
class Tenure:
    person: str
    start: dt.date | None  # None: known only from its end
    starts: list[Claim] = field(default_factory=list)
    end: dt.date | None = None
    ends: list[Claim] = field(default_factory=list)
    evidence: list[Claim] = field(default_factory=list)
    opened_undated: bool = False
    ended_undated: bool = False

    def capacity(self) -> str:
        """The latest specific capacity its appointments and incumbencies give, from the
        undisputed claims alone while any is left; a departure's only when they give none."""
        everything = [*self.starts, *self.ends, *self.evidence]
        everything.sort(key=_order)
        opening = [claim for claim in everything if claim.kind != "departure"]
        leaving = [claim for claim in everything if claim.kind == "departure"]
        for pool in (opening, leaving):
            # Disputed claims only when no undisputed one is left: whether Hammer is acting
            # is disputed, and his tenure's capacity is then "unspecified".
            undisputed = [claim for claim in pool if claim.status != "disputed"]
            specific = [
                claim.capacity for claim in (undisputed or pool) if claim.capacity != "unspecified"
            ]
            if specific:
                return specific[-1]
        return "unspecified"

    def start_days(self) -> tuple[dt.date, dt.date]:
        if self.start is None:
            assert self.end is not None
            return ALWAYS, self.end
        return (ALWAYS if self.opened_undated else self.start), self.start

    def end_days(self) -> tuple[dt.date, dt.date]:
        assert self.end is not None
        return (ALWAYS if self.ended_undated else self.end), self.end

    def claims(self) -> set[str]:
        return {claim.claim for claim in [*self.starts, *self.ends, *self.evidence]}


def _order(claim: Claim) -> tuple[Any, ...]:
    """Report order never decides: by day, leaving first, the vaguer date first, acting
    before permanent, then by claim id."""
    if claim.capacity == "unspecified" and claim.kind != "departure":
        # Where an unspecified change goes among acting and permanent ones of the same day
        # is not said; the caller checks that it cannot matter.
        rank = 0.5
    else:
        rank = CAPACITY_ORDER.get(claim.capacity, 0.5)
    return (
        claim.counts_from(),
        0 if claim.kind == "departure" else 1,
        claim.earliest(),
        rank,
        claim.claim,
    )


def rival_departures(claims: dict[str, Claim], start: str) -> set[str]:
    """The departures linked to departure ``start`` by disputes between departures of its
    person from its post, directly or through others of them (not through a third claim
    naming two of them: that says each conflicts with it, not that they report one end)."""
    first = claims[start]

    def rival(other: Claim) -> bool:
        return (
            other.kind == "departure" and other.person == first.person and other.post == first.post
        )

    found = {start}
    todo = [start]
    while todo:
        for other in claims[todo.pop()].links:
            if other not in found and rival(claims[other]):
                found.add(other)
                todo.append(other)
    return found


def _given_way(claims: dict[str, Claim], post: str) -> set[str]:
    """Departures of one person linked by disputes to a confirmed rival give way to it."""
    gone: set[str] = set()
    for claim in claims.values():
        if claim.post != post or claim.kind != "departure":
            continue
        rivals = [claims[other] for other in rival_departures(claims, claim.claim)]
        if len(rivals) < 2:
            continue
        confirmed = [rival for rival in rivals if rival.confirmed]
        if len(confirmed) > 1:
            raise Ambiguous("rival departures, more than one confirmed")
        if confirmed and claim is not confirmed[0]:
            gone.add(claim.claim)
    if gone:
        people = {claims[name].person for name in gone}
        for claim in claims.values():
            if claim.post == post and claim.person in people and claim.kind != "departure":
                # "unless the person took the post up again between them"
                raise Ambiguous("rival departures of a person who also took the post up")
    return gone


@dataclass
class PostState:
    holders: set[tuple[str, str]]
    pending: set[str]
    vacancy: str
    conflicts: set[str]


def post_state(claims: dict[str, Claim], post: str, as_of: dt.date) -> PostState:
    gone = _given_way(claims, post)
    mine = [c for c in claims.values() if c.post == post and c.claim not in gone]
    in_effect = sorted((c for c in mine if c.takes_effect and c.counts_from() <= as_of), key=_order)
    _check_same_day_order(in_effect)

    tenures: list[Tenure] = []
    open_tenure: dict[str, Tenure] = {}
    last_tenure: dict[str, Tenure] = {}
    for change in in_effect:
        person = change.person
        holding = open_tenure.get(person)
        if change.kind == "departure":
            if holding is not None:
                if any(
                    t.person == person and t.end is not None and change.earliest() <= t.end
                    for t in tenures
                ):
                    # The end of the role the holder left for another, reported again, or the
                    # end of the role they hold: which is not said.
                    raise Ambiguous("a departure that may end either of a person's two roles")
                holding.end = change.counts_from()
                holding.ends.append(change)
                holding.ended_undated = change.date is None
                del open_tenure[person]
                continue
            ended = last_tenure.get(person)
            if ended is not None and ended.end is not None and change.earliest() <= ended.end:
                ended.evidence.append(change)  # the same end reported again
                continue
            # An end certainly later than the last one: a tenure known only from its end.
            tenure = Tenure(person, None, end=change.counts_from(), ends=[change])
            tenure.ended_undated = change.date is None
            tenures.append(tenure)
            last_tenure[person] = tenure
            continue
        if holding is not None:
            current = holding.capacity()
            differs = (
                change.capacity != "unspecified"
                and current != "unspecified"
                and change.capacity != current
            )
            if differs and change.kind == "incumbency":
                raise Ambiguous("an incumbency in another capacity than the holding's")
            if differs:
                # An appointment in another specific capacity: a new tenure from its day.
                holding.end = change.counts_from()
                tenure = Tenure(person, change.counts_from(), starts=[change])
                tenure.opened_undated = change.date is None
                tenures.append(tenure)
                open_tenure[person] = last_tenure[person] = tenure
            else:
                holding.starts.append(change)
            continue
        ended = last_tenure.get(person)
        if ended is not None and ended.end is not None and not _opens_again(change, ended):
            ended.evidence.append(change)  # the holding that the departure ended
            continue
        tenure = Tenure(person, change.counts_from(), starts=[change])
        tenure.opened_undated = change.date is None
        tenures.append(tenure)
        open_tenure[person] = last_tenure[person] = tenure

    holders = {(t.person, t.capacity()) for t in open_tenure.values()}
    pending = _pending(mine, in_effect, tenures, as_of)

    if holders:
        acting_only = all(capacity in ("acting", "interim") for _, capacity in holders)
        vacancy = "acting" if acting_only else "filled"
    else:
        vacancy = "vacant" if in_effect else "unknown"

    conflicts: set[str] = set()
    # A holder whose departure, not in effect yet, may already have happened is at odds with
    # nobody.
    leaving = [
        c
        for c in mine
        if c.kind == "departure" and c.takes_effect and c.earliest() <= as_of < c.counts_from()
    ]
    for c in leaving:
        if c.person in open_tenure and any(
            t.person == c.person and t.end is not None and c.earliest() <= t.end for t in tenures
        ):
            # As once it takes effect: which of the person's two roles it ends is not said.
            raise Ambiguous("a departure that may end either of a person's two roles")
    may_have_left = {c.person for c in leaving}
    certain = [(person, capacity) for person, capacity in holders if person not in may_have_left]
    if sum(1 for _, capacity in certain if capacity == "permanent") > 1:
        conflicts.add("overlapping_permanent")
    if sum(1 for _, capacity in certain if capacity in ("acting", "interim")) > 1:
        conflicts.add("overlapping_acting")
    bearing = set(pending)
    for tenure in open_tenure.values():
        bearing |= tenure.claims()
    for tenure in tenures:
        if tenure.end is None or tenure in open_tenure.values():
            continue
        since = [
            other
            for other in tenures
            if other is not tenure and other.start is not None and other.start >= tenure.end
        ]
        same_person_since = since and all(other.person == tenure.person for other in since)
        disputes = any(c.status == "disputed" for c in claims.values())
        if disputes and any(
            other.start is None and other.end is not None and other.end > tenure.end
            for other in tenures
            if other is not tenure
        ):
            # A tenure known only from its end, which came later, may have begun before this
            # one ended or after it: whether somebody took the post up since is not said.
            raise Ambiguous("a tenure known only from a later end, next to a disputed one")
        if same_person_since and disputes:
            # Whether the same person's next role (acting, then permanent) is somebody
            # taking the post up since is not said.
            raise Ambiguous("a dispute about a role its holder left for another")
        if not since:
            bearing |= tenure.claims()
    for claim in claims.values():
        # A departure that gave way to its confirmed rival has no effect, and its dispute
        # of that rival was settled by the confirmation.
        if (
            claim.status == "disputed"
            and claim.claim not in gone
            and disputed_together(claims, claim.claim) & bearing
        ):
            conflicts.add("disputed")
    return PostState(holders, pending, vacancy, conflicts)


def _opens_again(change: Claim, ended: Tenure) -> bool:
    """Only a change certainly after a departure opens a new tenure; one with no date of its
    own never is. On the very day of the departure, only an appointment in another specific
    capacity is (the acting holder appointed permanently that day)."""
    assert ended.end is not None
    if change.earliest() > ended.end:
        return True
    capacity = ended.capacity()
    another = change.kind == "appointment" and change.capacity not in ("unspecified", capacity)
    if not another:
        return False
    if capacity == "unspecified":
        raise Ambiguous("an appointment on a departure's day, after a tenure of no capacity")
    if change.date is not None and change.earliest() == ended.end == change.counts_from():
        return True
    # Never certainly after the departure, yet no part of the role it ended: the README
    # says both that only a change certainly after a departure opens a new tenure and that
    # an appointment in another capacity is a new tenure.
    raise Ambiguous("an appointment in another capacity, not certainly after a departure")


def _check_same_day_order(in_effect: list[Claim]) -> None:
    """Leave out the same-day combinations of one person whose order the contract does not
    settle: an unspecified change next to a specific one."""
    seen: dict[tuple[str, dt.date], set[str]] = {}
    for claim in in_effect:
        if claim.kind == "departure":
            continue
        seen.setdefault((claim.person, claim.counts_from()), set()).add(claim.capacity)
    for capacities in seen.values():
        if "unspecified" in capacities and len(capacities) > 1:
            raise Ambiguous("an unspecified and a specific change of one person on one day")


def _pending(
    mine: list[Claim], in_effect: list[Claim], tenures: list[Tenure], as_of: dt.date
) -> set[str]:
    """Live changes not in effect on D whose report was out by D, but for an announced or
    expected change that reports again a start or an end already in effect (unless a return
    of that person is still to come)."""
    effective = {claim.claim for claim in in_effect}
    waiting = [c for c in mine if c.claim not in effective and c.report_day <= as_of]
    to_come = [
        c
        for c in waiting
        if not _start_reported_again(c, tenures) and not _holding_reported(c, tenures, as_of)
    ]
    returning = {c.person for c in to_come if c.kind != "departure"}
    return {
        c.claim for c in to_come if c.person in returning or not _end_reported_again(c, tenures)
    }


def _holding_reported(claim: Claim, tenures: list[Tenure], as_of: dt.date) -> bool:
    """An incumbency reported as having happened, on a day its vague date may already mean
    and a tenure of that person (in a capacity it may mean) covers: it reports that tenure."""
    if claim.kind != "incumbency" or not claim.takes_effect or claim.date is None:
        return False
    first = claim.earliest()
    if first > as_of:
        return False
    return any(
        tenure.person == claim.person
        and claim.capacity in ("unspecified", tenure.capacity())
        and (tenure.start is None or tenure.start <= first)
        and (tenure.end is None or first <= tenure.end)
        for tenure in tenures
    )


def _start_reported_again(claim: Claim, tenures: list[Tenure]) -> bool:
    return _settled(claim, tenures, _start_reported_again_from)


def _end_reported_again(claim: Claim, tenures: list[Tenure]) -> bool:
    return _settled(claim, tenures, _end_reported_again_from)


def _settled(claim: Claim, tenures: list[Tenure], rule: Any) -> bool:
    """A rule's answer for the first day a change may mean. An undated one may mean any day
    from its report on; when its source gives a published date after the day the log
    recorded the report, the project reads that published date there (its own tests rely
    on it), while it lists the change from the recorded day: that case is left out."""
    answers = {rule(claim, tenures, claim.possible_days()[0])}
    published = SOURCES[claim.source]
    if claim.date is None and published is not None:
        answers.add(rule(claim, tenures, day_range(published)[0]))
    if len(answers) > 1:
        raise Ambiguous("an undated change from a source published after it was recorded")
    return answers.pop()


def _reports_again(claim: Claim) -> bool:
    """Whether a change not in effect that may be a start or end already known is that
    start or end: the README says so of announced and expected ones."""
    if claim.takes_effect:
        # Dated after D: only a vague date can reach back to a known start or end, or no
        # date of its own (counting from a confirmation, it may mean any day from its report).
        if claim.date is None or len(claim.date) < len("2025-01-01"):
            raise Ambiguous("a vaguely dated change after D next to a known start or end")
        return False
    return claim.modality in ("announced", "expected")


def _start_reported_again_from(claim: Claim, tenures: list[Tenure], low: dt.date) -> bool:
    """An appointment whose date may be the day (or, come late, before the day) a tenure of
    that person in that capacity began: "unspecified" names no capacity, so it is any."""
    if claim.kind != "appointment":
        return False
    for tenure in tenures:
        if tenure.person != claim.person or low > tenure.start_days()[1]:
            continue
        if not _reports_again(claim):
            continue
        capacity = tenure.capacity()
        if claim.capacity in ("unspecified", capacity):
            return True
        if capacity == "unspecified":
            raise Ambiguous("an expected start in a capacity, next to a tenure of none")
    return False


def _end_reported_again_from(claim: Claim, tenures: list[Tenure], low: dt.date) -> bool:
    """A departure whose date may be the day (or, come late, before the day) a tenure of that
    person already ended, while they hold the post no more."""
    if claim.kind != "departure":
        return False
    theirs = [t for t in tenures if t.person == claim.person]
    if any(t.end is None for t in theirs):
        return False
    if not any(low <= t.end_days()[1] for t in theirs):
        return False
    return _reports_again(claim)


# ---------------------------------------------------------------------------------------------
# Random claim histories.

dates_day = st.one_of(st.none(), st.sampled_from(EFFECTIVE_DAYS))
dates_vague = st.one_of(st.none(), st.sampled_from(EFFECTIVE_DAYS + VAGUE_DATES))


def _fuzzy(date: str | None) -> dict[str, Any] | None:
    return None if date is None else {"date": date, "qualifier": "on"}


@st.composite
def histories(draw: st.DrawFn, *, vague: bool, lifecycle: bool) -> list[dict[str, Any]]:
    dates = dates_vague if vague else dates_day
    events: list[dict[str, Any]] = []
    live: list[str] = []
    everything: list[str] = []
    posts = draw(st.sampled_from([POSTS[:1], POSTS]))
    people = draw(st.sampled_from([PEOPLE[:2], PEOPLE]))
    for number in range(draw(st.integers(min_value=1, max_value=12))):
        steps = ["report"] * 4
        if live:
            steps += ["confirm", "confirm", "retract"]
            if lifecycle:
                steps += ["correct", "dispute"]
        step = draw(st.sampled_from(steps))
        if step == "report":
            name = f"c{number}"
            kind = draw(st.sampled_from(["appointment", "departure", "incumbency"]))
            data: dict[str, Any] = {
                "claim": name,
                "source": draw(st.sampled_from(sorted(SOURCES))),
                "kind": kind,
                "person": draw(st.sampled_from(people)),
                "post": draw(st.sampled_from(posts)),
                "capacity": draw(st.sampled_from(["acting", "permanent", "unspecified"])),
                "modality": draw(st.sampled_from(["occurred", "expected", "announced", "rumored"])),
                "attribution": {"kind": "outlet"},
            }
            effective = _fuzzy(draw(dates))
            if effective is not None:
                data["effective"] = effective
            events.append(record("claim.reported", **data))
            live.append(name)
            everything.append(name)
        elif step == "confirm":
            data = {
                "claim": draw(st.sampled_from(live)),
                "source": draw(st.sampled_from(sorted(SOURCES))),
                "quote": f"step {number}",
            }
            effective = _fuzzy(draw(dates))
            if effective is not None:
                data["effective"] = effective
            events.append(record("claim.confirmed", **data))
        elif step == "retract":
            name = draw(st.sampled_from(live))
            events.append(record("claim.retracted", claim=name, reason=f"wrong {number}"))
            live.remove(name)
        elif step == "correct":
            name = draw(st.sampled_from(live))
            if draw(st.booleans()):
                changes: dict[str, Any] = {"effective": _fuzzy(draw(dates))}
            else:
                changes = {"modality": draw(st.sampled_from(["occurred", "expected"]))}
            events.append(
                record("claim.corrected", claim=name, changes=changes, reason=f"fix {number}")
            )
        else:
            name = draw(st.sampled_from(live))
            others = [other for other in everything if other != name]
            named = (
                draw(st.lists(st.sampled_from(others), max_size=2, unique=True)) if others else []
            )
            events.append(
                record("claim.disputed", claim=name, reason=f"no {number}", conflicts_with=named)
            )
    return events


probes = st.lists(
    st.tuples(st.sampled_from(AS_OF_DAYS), st.integers(min_value=0, max_value=12)),
    min_size=3,
    max_size=6,
)


def _answered(post: dict[str, Any]) -> PostState:
    return PostState(
        holders={(h["person"], h["capacity"]) for h in post["holders"]},
        pending={p["claim"] for p in post["pending"]},
        vacancy=post["vacancy"],
        conflicts={c["kind"] for c in post["conflicts"]},
    )


async def _compare(
    folder: Path, events: list[dict[str, Any]], asked: list[tuple[str, int]]
) -> None:
    expected: list[tuple[str, int, dict[str, PostState]]] = []
    for as_of, known in asked:
        known = min(known, len(events))
        claims = known_claims(events, known)
        try:
            states = {
                post: post_state(claims, post, dt.date.fromisoformat(as_of)) for post in POSTS
            }
        except Ambiguous:
            continue
        expected.append((as_of, known, states))
    if not expected:
        return
    async with await EventLog.open(f"sqlite:///{folder / 'log.db'}") as log:
        await append(log, _base_records(), recorded_at=FIRST_RECORDED - dt.timedelta(days=1))
        for index, event in enumerate(events):
            await append(log, [event], recorded_at=FIRST_RECORDED + index * RECORDED_STEP)
        queries: Queries = await current(log)
        for as_of, known, states in expected:
            state = await queries.state(org=ORG, as_of=as_of, known_at=BASE + known)
            assert_documented("StateAnswer", state)
            answered = {post["post"]["post"]: _answered(post) for post in state["posts"]}
            story = "\n".join(_brief(event) for event in events[:known])
            assert answered == states, f"as of {as_of}, known at {known}:\n{story}"


def _brief(event: dict[str, Any]) -> str:
    data = event["data"]
    return f"{event['type']} " + " ".join(
        f"{key}={value}" for key, value in data.items() if key not in ("attribution", "quote")
    )


def _run(events: list[dict[str, Any]], asked: list[tuple[str, int]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(_compare(Path(folder), events, asked))


# Derandomized: the suite runs the same histories every time, so that a case the contract
# leaves open, should generation ever reach one not yet excluded, cannot fail a run at random.
# Run with a random seed (--hypothesis-seed) when changing the rules.
SETTINGS = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@SETTINGS
@given(events=histories(vague=False, lifecycle=False), asked=probes)
def test_state_matches_the_reference_model_on_days(
    events: list[dict[str, Any]], asked: list[tuple[str, int]]
) -> None:
    _run(events, asked)


@SETTINGS
@given(events=histories(vague=True, lifecycle=True), asked=probes)
def test_state_matches_the_reference_model_with_vague_dates_corrections_and_disputes(
    events: list[dict[str, Any]], asked: list[tuple[str, int]]
) -> None:
    _run(events, asked)


def _reported(claim: str, kind: str, person: str, post: str, day: str) -> dict[str, Any]:
    return record(
        "claim.reported",
        claim=claim,
        source="s1",
        kind=kind,
        person=person,
        post=post,
        effective=_fuzzy(day),
        capacity="permanent",
        modality="occurred",
        attribution={"kind": "outlet"},
    )


def _two_departures_and_an_appointment(dispute: dict[str, Any]) -> list[dict[str, Any]]:
    """x leaves p on two days; y is appointed to q; then ``dispute``, and the later
    departure is confirmed."""
    return [
        _reported("d1", "departure", "x", "p", "2025-04-15"),
        _reported("d2", "departure", "x", "p", "2025-05-20"),
        _reported("c", "appointment", "y", "q", "2025-02-01"),
        record("claim.disputed", reason="no", **dispute),
        record("claim.confirmed", claim="d2", source="s1", effective=_fuzzy("2025-05-20")),
    ]


def test_rival_departures_give_way_to_the_confirmed_one_and_leave_no_conflict() -> None:
    # d1 gives way to the confirmed d2, and its dispute of d2 was settled by that confirmation
    events = _two_departures_and_an_appointment({"claim": "d1", "conflicts_with": ["d2"]})
    _run(events, [("2025-04-30", len(events)), ("2025-05-25", len(events))])


def test_departures_named_together_by_a_third_claim_s_dispute_are_two_ends() -> None:
    # c says it conflicts with each departure, not that they report one end: d1 stays in
    # effect, and the dispute is a conflict while d2 is pending
    events = _two_departures_and_an_appointment({"claim": "c", "conflicts_with": ["d1", "d2"]})
    _run(events, [("2025-04-30", len(events)), ("2025-05-25", len(events)), ("2025-06-01", 4)])


def test_a_departure_dated_by_month_leaves_room_for_a_successor_that_month() -> None:
    # x leaves p "in March" and y is appointed on 10 March: both count as holding p until the
    # 31st, but x may already have left, so the two are no conflict; on 1 February, before
    # y's appointment, x alone holds p
    events = [
        _reported("a", "appointment", "x", "p", "2025-02-01"),
        _reported("d", "departure", "x", "p", "2025-03"),
        _reported("b", "appointment", "y", "p", "2025-03-10"),
    ]
    model = post_state(known_claims(events, len(events)), "p", dt.date(2025, 3, 10))
    assert model.holders == {("x", "permanent"), ("y", "permanent")}
    assert model.conflicts == set()
    _run(events, [("2025-03-10", len(events)), ("2025-03-31", len(events))])


def test_a_holding_dated_by_month_is_the_tenure_that_covers_it_not_a_change_to_come() -> None:
    # x holds p "in April" and was appointed with no date of its own (counting from s1's
    # 10 March): on 15 April the holding may already mean that day, within x's tenure
    events = [
        _reported("h", "incumbency", "x", "p", "2025-04"),
        record(
            "claim.reported",
            claim="a",
            source="s1",
            kind="appointment",
            person="x",
            post="p",
            capacity="permanent",
            modality="occurred",
            attribution={"kind": "outlet"},
        ),
    ]
    model = post_state(known_claims(events, len(events)), "p", dt.date(2025, 4, 15))
    assert model.pending == set()
    _run(events, [("2025-04-15", len(events))])
