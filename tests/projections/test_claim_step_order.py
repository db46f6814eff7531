"""Property: a claim's steps that the README lets come in either order give the same answers.

A newsroom fills a log in as reports reach it, not in the order things happened, so the same
reports recorded in another order must answer the same, except where the README makes the
order count: a claim's status is its latest step, the later word on a date wins, and the
later correction of a field wins. Each example folds three claims, then folds them again with
their steps reordered in a way those rules allow, and compares every post's holders, pending
changes, vacancy and conflicts on many days, the tenures, and each claim's dates and fields.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from leaderlog.errors import RecordError
from leaderlog.events import parse_event
from leaderlog.projections.claim_versions import ClaimVersion, evolve_claim
from leaderlog.projections.leadership_rules import dispute_links, post_state, tenures

SOURCES = ["paper", "wire", "blog"]
POSTS = ["ero-ead", "hsi-ead"]
PEOPLE = ["ann", "bob"]

Step = tuple[str, str, dict[str, Any]]  # claim, what (confirm, correct, dispute, retract), data

published_dates = st.builds(
    lambda date, qualifier, text: (
        None
        if date is None and text is None
        else {"date": date, "qualifier": qualifier, "text": text}
    ),
    st.sampled_from(
        [None, "2025-01-10", "2025-03-20", "2025-05", "2025", "2099-01-01", "2025-06-20", "2024-12"]
    ),
    st.sampled_from(["on", "about", "before", "after"]),
    st.sampled_from([None, "spring"]),
)
effective_dates = st.one_of(
    st.none(),
    st.builds(
        lambda date, qualifier: {"date": date, "qualifier": qualifier},
        st.sampled_from(["2025-02-01", "2025-04", "2025-06-15", "2025", "2025-05-20"]),
        st.sampled_from(["on", "about", "before", "after"]),
    ),
    st.just({"date": None, "qualifier": "on", "text": "soon"}),
)
modalities = st.sampled_from(["occurred", "expected", "announced", "rumored"])
reports = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(["appointment", "departure", "incumbency"]),
        "person": st.sampled_from(PEOPLE),
        "post": st.sampled_from(POSTS),
        "capacity": st.sampled_from(["acting", "permanent", "unspecified"]),
        "modality": modalities,
        "effective": effective_dates,
        "source": st.sampled_from(SOURCES),
    }
)
confirmations = st.builds(
    lambda source, effective: ("confirm", {"source": source, "effective": effective}),
    st.sampled_from(SOURCES),
    effective_dates,
)
CHANGED_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "modality": modalities,
    "effective": st.one_of(st.none(), effective_dates.filter(lambda date: date is not None)),
    "person": st.sampled_from(PEOPLE),
    "capacity": st.sampled_from(["acting", "permanent", "interim", "unspecified"]),
    "kind": st.sampled_from(["appointment", "departure", "incumbency"]),
    "attribution": st.sampled_from([{"kind": "anonymous", "parties": ["ICE"]}, {"kind": "outlet"}]),
    "source": st.sampled_from(SOURCES),
    "post": st.sampled_from(POSTS),
}
corrections = st.builds(
    lambda changes, source: ("correct", {"changes": changes, "source": source}),
    st.sets(st.sampled_from(sorted(CHANGED_VALUES)), min_size=1, max_size=2).flatmap(
        lambda fields: st.fixed_dictionaries({name: CHANGED_VALUES[name] for name in fields})
    ),
    st.sampled_from([None, *SOURCES]),
)
disputes = st.builds(
    lambda named, source: ("dispute", {"conflicts_with": named, "source": source}),
    st.sampled_from([[], ["c2"], ["c3"]]),
    st.sampled_from([None, *SOURCES]),
)
steps = st.lists(
    st.builds(
        lambda claim, step: (claim, *step),
        st.sampled_from(["c1", "c1", "c1", "c2"]),
        st.one_of(confirmations, corrections, disputes),
    ),
    min_size=2,
    max_size=5,
)


def _sets_the_date(step: Step) -> bool:
    _, what, data = step
    if what == "confirm":
        return data["effective"] is not None
    return what == "correct" and "effective" in data["changes"]


def _either_order(first: Step, then: Step) -> bool:
    """Whether the README lets the two steps come in either order."""
    if first[0] != then[0]:
        # Of different claims: only disputes keep their order (a conflict shows the newest).
        return not first[1] == then[1] == "dispute"
    if {first[1], then[1]} & {"dispute", "retract"}:
        return False  # a claim's status is its latest step
    if _sets_the_date(first) and _sets_the_date(then):
        return False  # the later word on the date wins
    if first[1] == then[1] == "correct":
        return not set(first[2]["changes"]) & set(then[2]["changes"])
    return True


def _reordered(given: list[Step], picks: list[int]) -> list[Step]:
    """The steps in another order that keeps each pair that may not swap as it was."""
    left = list(range(len(given)))
    chosen: list[Step] = []
    for pick in picks * len(given):
        if not left:
            break
        ready = [i for i in left if all(_either_order(given[j], given[i]) for j in left if j < i)]
        index = ready[pick % len(ready)]
        chosen.append(given[index])
        left.remove(index)
    return chosen + [given[i] for i in left]


def _fold(
    reported: list[tuple[str, dict[str, Any]]],
    given: list[Step],
    published: Mapping[str, Any],
    recorded: tuple[str, str],
) -> dict[str, ClaimVersion]:
    claims: dict[str, ClaimVersion] = {}
    positions = iter(range(1, 100))

    def apply(event_type: str, data: dict[str, Any], day: str) -> None:
        stored = parse_event(event_type, {k: v for k, v in data.items() if v is not None}).data()
        claim = data["claim"]
        claims[claim] = evolve_claim(
            claims.get(claim),
            event_type,
            stored,
            position=next(positions),
            recorded_at=f"{day}T12:00:00.000000Z",
            actor="newsroom",
            published=published.get,
        )

    for claim, report in reported:
        apply(
            "claim.reported",
            {"claim": claim, "attribution": {"kind": "outlet"}, **report},
            recorded[0],
        )
    for claim, what, data in given:
        if what == "confirm":
            apply("claim.confirmed", {"claim": claim, **data}, recorded[1])
        elif what == "correct":
            apply("claim.corrected", {"claim": claim, **data, "reason": "misread"}, recorded[1])
        elif what == "dispute":
            others = [other for other in data["conflicts_with"] if other != claim]
            dispute = {"claim": claim, "reason": "denied", **data, "conflicts_with": others}
            apply("claim.disputed", dispute, recorded[1])
        else:
            apply("claim.retracted", {"claim": claim, "reason": "withdrawn"}, recorded[1])
    return claims


DAYS = [dt.date(2024, 12, 1) + dt.timedelta(days=n) for n in range(0, 260, 4)] + [
    dt.date.fromisoformat(day)
    for day in (
        "2025-01-09", "2025-01-10", "2025-01-11", "2025-03-19", "2025-03-20", "2025-03-21",
        "2025-05-31", "2025-06-01", "2025-06-15", "2025-06-20", "2025-06-21", "2025-12-31",
        "2026-01-01",
    )
]  # fmt: skip


def _without_status(item: Mapping[str, Any]) -> dict[str, Any]:
    # A claim's status is its latest step, which the reordering may change.
    return {
        key: sorted(value) if key == "sources" else value
        for key, value in item.items()
        if key != "status"
    }


def _answers(claims: dict[str, ClaimVersion]) -> dict[str, Any]:
    versions = list(claims.values())
    links = dispute_links(versions)
    answers: dict[str, Any] = {}
    for post in POSTS:
        held = [version for version in versions if version.post == post]
        for day in DAYS:
            state = post_state(held, day, links)
            answers[f"{post} on {day}"] = {
                "holders": [dict(h, claims=sorted(h["claims"])) for h in state["holders"]],
                "pending": [_without_status(p) for p in state["pending"]],
                "vacancy": state["vacancy"],
                # Which dispute's reason a conflict gives is the newest one's: left out.
                "conflicts": [
                    dict(c, claims=sorted(c["claims"]), persons=sorted(c["persons"]), reason=None)
                    for c in state["conflicts"]
                ],
            }
    found = []
    for tenure in tenures(versions):
        evidence = sorted(
            (_without_status(e) for e in tenure["evidence"]), key=lambda e: str(e["claim"])
        )
        found.append({**tenure, "evidence": evidence})
    answers["tenures"] = sorted(found, key=lambda t: json.dumps(t, sort_keys=True, default=str))
    for name, version in sorted(claims.items()):
        fields = ("source", "kind", "person", "post", "capacity", "modality", "effective")
        answers[f"claim {name}"] = {
            "counts_from": version.effect_date(),
            "day": version.effect_day(),
            "earliest": version.earliest_effect_day(),
            "fields": {field: version.doc[field] for field in fields},
            "confirmed": (version.doc["confirmed"], version.doc["confirmed_effective"]),
            "sources": sorted(version.doc["sources"]),
            "live": version.live,
        }
    return answers


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    published=st.fixed_dictionaries({source: published_dates for source in SOURCES}),
    reported=st.lists(reports, min_size=3, max_size=3),
    given_steps=steps,
    picks=st.lists(st.integers(0, 10), min_size=1, max_size=12),
    recorded=st.sampled_from(
        [
            ("2025-06-10", "2025-06-10"),
            ("2025-06-10", "2025-06-12"),
            ("2024-12-01", "2024-12-01"),
            ("2025-01-05", "2025-07-01"),
        ]
    ),
    retracted=st.booleans(),
)
def test_steps_recorded_in_another_order_the_readme_allows_give_the_same_answers(
    published: dict[str, Any],
    reported: list[dict[str, Any]],
    given_steps: list[Step],
    picks: list[int],
    recorded: tuple[str, str],
    retracted: bool,
) -> None:
    # given three claims and their steps, and the same steps in another order the rules allow
    if retracted:
        given_steps = [*given_steps, ("c1", "retract", {})]
    other_order = _reordered(given_steps, picks)
    assume(other_order != given_steps)
    claims = list(zip(["c1", "c2", "c3"], reported, strict=True))
    try:
        as_given = _fold(claims, given_steps, published, recorded)
    except RecordError:
        assume(False)  # a record the rules refuse (a correction changing nothing, say)
        raise
    # when both are folded
    in_other_order = _fold(claims, other_order, published, recorded)
    # then every answer is the same
    first, second = _answers(as_given), _answers(in_other_order)
    assert {key: value for key, value in first.items() if value != second[key]} == {}
