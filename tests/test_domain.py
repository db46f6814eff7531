"""Domain rules as given/when/then: past events, one new event, the decision.

Every rule named in :mod:`leaderlog.domain` is exercised both ways: accepted and refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from leaderlog.domain import (
    ClaimState,
    EntityState,
    MappingKnowledge,
    MissingKnowledge,
    OrgState,
    decide,
    evolve,
    referenced_streams,
    referenced_streams_in,
)
from leaderlog.errors import DomainError
from leaderlog.events import Event, parse_event

# --- given / when / then ----------------------------------------------------------------------


def event(event_type: str, **data: Any) -> Event:
    return parse_event(event_type, data)


def given(*history: Event) -> dict[str, EntityState]:
    """Fold past events into the state of each stream, as the log does."""
    states: dict[str, EntityState] = {}
    for past in history:
        states[past.stream()] = evolve(states.get(past.stream()), past)
    return states


def then_accepted(history: Sequence[Event], when: Event) -> dict[str, EntityState]:
    """``when`` is accepted as is; returns the states after it."""
    states = given(*history)
    assert decide(when, MappingKnowledge(states)) == [when]
    return given(*history, when)


def then_refused(history: Sequence[Event], when: Event, rule: str) -> DomainError:
    with pytest.raises(DomainError) as caught:
        decide(when, MappingKnowledge(given(*history)))
    assert caught.value.rule == rule
    return caught.value


# --- the world the examples happen in ---------------------------------------------------------

DHS = event("org.registered", org="dhs", name="Department of Homeland Security")
ICE = event("org.registered", org="ice", name="ICE", parent="dhs")
HSI = event("org.registered", org="ice-hsi", name="HSI", parent="ice")
WHITE_HOUSE = event("org.registered", org="white-house", name="White House")
EAD = event("post.defined", post="ice-hsi-ead", org="ice-hsi", title="Executive Associate Director")
HAMMER = event("person.registered", person="robert-hammer", name="Robert Hammer")
GORDON = event("person.registered", person="derek-gordon", name="Derek Gordon")
FOX = event("source.registered", source="fox", url="https://example.org/a", publisher="Fox News")
CNN = event("source.registered", source="cnn", url="https://example.org/b", publisher="CNN")

WORLD = (DHS, ICE, HSI, WHITE_HOUSE, EAD, HAMMER, GORDON, FOX, CNN)


def reported(claim: str = "hammer-out", **changes: Any) -> Event:
    data: dict[str, Any] = {
        "claim": claim,
        "source": "fox",
        "kind": "departure",
        "person": "robert-hammer",
        "post": "ice-hsi-ead",
        "capacity": "unspecified",
        "cause": "reassignment",
        "modality": "expected",
        "attribution": {"kind": "anonymous", "parties": ["White House"]},
    }
    data.update(changes)
    return parse_event("claim.reported", {k: v for k, v in data.items() if v is not ...})


HAMMER_OUT = reported()
GORDON_IN = reported(
    "gordon-in", kind="appointment", person="derek-gordon", capacity="acting", cause=...
)
CLAIMS = (*WORLD, HAMMER_OUT, GORDON_IN)


def confirmed(claim: str = "hammer-out", source: str = "cnn") -> Event:
    return event("claim.confirmed", claim=claim, source=source)


def retracted(claim: str = "hammer-out", **extra: Any) -> Event:
    return event("claim.retracted", claim=claim, reason="The outlet withdrew the report.", **extra)


def disputed(claim: str = "hammer-out", **extra: Any) -> Event:
    return event("claim.disputed", claim=claim, reason="Another outlet disagrees.", **extra)


def corrected(claim: str = "hammer-out", **changes: Any) -> Event:
    return event("claim.corrected", claim=claim, changes=changes, reason="Corrected by the outlet.")


# --- reference ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("history", "when", "missing"),
    [
        ((), ICE, "org 'dhs'"),
        ((DHS,), event("post.defined", post="p", org="ice", title="T"), "org 'ice'"),
        ((DHS,), event("org.updated", org="ice", name="ICE"), "org 'ice'"),
        ((DHS,), event("org.updated", org="dhs", parent="ice"), "org 'ice'"),
        ((), event("post.updated", post="p", title="T"), "post 'p'"),
        ((), event("person.updated", person="x", name="X"), "person 'x'"),
        ((*WORLD[:7], CNN), HAMMER_OUT, "source 'fox'"),
        ((*WORLD[:5], GORDON, FOX), HAMMER_OUT, "person 'robert-hammer'"),
        ((DHS, ICE, HSI, HAMMER, FOX), HAMMER_OUT, "post 'ice-hsi-ead'"),
        (WORLD, confirmed(), "claim 'hammer-out'"),
        (CLAIMS, confirmed(source="reuters"), "source 'reuters'"),
        (WORLD, retracted(), "claim 'hammer-out'"),
        (CLAIMS, retracted(source="reuters"), "source 'reuters'"),
        (WORLD, disputed(), "claim 'hammer-out'"),
        (CLAIMS, disputed(source="reuters"), "source 'reuters'"),
        (CLAIMS, disputed(conflicts_with=["gordon-in", "nobody"]), "claim 'nobody'"),
        (WORLD, corrected(capacity="acting"), "claim 'hammer-out'"),
        (CLAIMS, corrected(person="someone-else"), "person 'someone-else'"),
        (CLAIMS, corrected(post="ice-director"), "post 'ice-director'"),
        (CLAIMS, corrected(source="reuters"), "source 'reuters'"),
        (
            CLAIMS,
            event(
                "claim.corrected",
                claim="hammer-out",
                changes={"capacity": "acting"},
                reason="r",
                source="reuters",
            ),
            "source 'reuters'",
        ),
        (
            WORLD,
            event("comment.requested", source="reuters", org="ice", outcome="declined"),
            "source",
        ),
        (
            WORLD,
            event("comment.requested", source="fox", org="cbp", outcome="declined"),
            "org 'cbp'",
        ),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_references_must_exist(history: tuple[Event, ...], when: Event, missing: str) -> None:
    error = then_refused(history, when, "reference")
    assert missing in error.message
    assert when.type in error.message


@pytest.mark.parametrize(
    ("history", "when"),
    [
        ((DHS,), ICE),
        ((DHS, ICE, HSI), EAD),
        ((DHS, ICE), event("org.updated", org="ice", name="ICE")),
        ((DHS, WHITE_HOUSE, ICE), event("org.updated", org="ice", parent="white-house")),
        ((*WORLD,), HAMMER_OUT),
        (CLAIMS, confirmed()),
        (CLAIMS, disputed(source="cnn", conflicts_with=["gordon-in"])),
        (CLAIMS, corrected(person="derek-gordon", post="ice-hsi-ead")),
        (CLAIMS, corrected(source="cnn")),
        (CLAIMS, retracted(source="fox")),
        (WORLD, event("comment.requested", source="fox", org="ice", outcome="no_response")),
        ((EAD,), event("post.updated", post="ice-hsi-ead", aliases=["HSI director"])),
        ((HAMMER,), event("person.updated", person="robert-hammer", aliases=["Robert J. Hammer"])),
    ],
)
def test_existing_references_are_accepted(history: tuple[Event, ...], when: Event) -> None:
    then_accepted(history, when)


def test_a_record_that_breaks_several_rules_names_each_of_them() -> None:
    error = then_refused(
        (*CLAIMS,), reported(source="nowhere", person="nobody", post="no-post"), "unique"
    )
    assert [(problem.rule, problem.message.split(",")[0]) for problem in error.every()] == [
        (
            "unique",
            "claim.reported: claim 'hammer-out' already exists (a claim is reported only once)",
        ),
        ("reference", "claim.reported refers to source 'nowhere'"),
        ("reference", "claim.reported refers to person 'nobody'"),
        ("reference", "claim.reported refers to post 'no-post'"),
    ]


def test_a_correction_of_a_retracted_claim_also_names_its_own_problems() -> None:
    when = corrected(kind="appointment", person="nobody")
    error = then_refused((*CLAIMS, retracted()), when, "claim_live")
    assert [problem.rule for problem in error.every()] == ["claim_live", "reference"]


def test_a_claim_named_twice_among_the_conflicts_is_one_problem() -> None:
    error = then_refused(CLAIMS, disputed(conflicts_with=["nope", "nope", "other"]), "reference")
    assert [problem.message.split(",")[0] for problem in error.every()] == [
        "claim.disputed refers to claim 'nope'",
        "claim.disputed refers to claim 'other'",
    ]


def test_a_record_that_breaks_one_rule_has_no_others() -> None:
    assert len(then_refused(WORLD, confirmed("nothing"), "reference").every()) == 1


# --- unique ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("history", "again", "noun"),
    [
        ((DHS,), event("org.registered", org="dhs", name="DHS, again"), "organisation 'dhs'"),
        ((DHS, ICE, HSI, EAD), EAD, "post 'ice-hsi-ead'"),
        ((HAMMER,), event("person.registered", person="robert-hammer", name="R. H."), "person"),
        (
            (FOX,),
            event("source.registered", source="fox", url="https://x.org", publisher="F"),
            "source",
        ),
        (CLAIMS, HAMMER_OUT, "claim 'hammer-out'"),
        (CLAIMS, reported(modality="occurred"), "claim 'hammer-out'"),
    ],
)
def test_ids_are_registered_once(history: tuple[Event, ...], again: Event, noun: str) -> None:
    error = then_refused(history, again, "unique")
    assert noun in error.message


def test_a_retracted_claim_id_cannot_be_reported_again() -> None:
    error = then_refused((*CLAIMS, retracted()), HAMMER_OUT, "unique")
    assert "reported only once" in error.message


# --- claim_live -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "when",
    [confirmed(), corrected(capacity="acting"), disputed(), retracted()],
    ids=lambda value: value.type,
)
def test_a_retracted_claim_is_final(when: Event) -> None:
    error = then_refused((*CLAIMS, retracted()), when, "claim_live")
    assert "retraction is final" in error.message


def test_retracting_twice_is_refused() -> None:
    then_refused((*CLAIMS, retracted()), retracted(source="cnn"), "claim_live")


def test_confirming_a_retracted_claim_is_refused_even_after_other_changes() -> None:
    history = (*CLAIMS, disputed(), confirmed(), retracted())
    then_refused(history, confirmed(), "claim_live")


def test_other_claims_stay_live_when_one_is_retracted() -> None:
    then_accepted((*CLAIMS, retracted()), confirmed("gordon-in"))


def test_a_live_claim_goes_through_its_lifecycle() -> None:
    history: list[Event] = list(CLAIMS)
    for when, status in [
        (confirmed(), "confirmed"),
        (disputed(conflicts_with=["gordon-in"]), "disputed"),
        (corrected(capacity="acting"), "corrected"),
        (confirmed(source="fox"), "confirmed"),
        (retracted(), "retracted"),
    ]:
        states = then_accepted(history, when)
        claim = states["claim-hammer-out"]
        assert isinstance(claim, ClaimState) and claim.status == status
        assert claim.live is (status != "retracted")
        history.append(when)


def test_a_claim_can_dispute_a_retracted_claim() -> None:
    # Only the disputed claim itself must be live; the one it conflicts with just has to exist.
    then_accepted((*CLAIMS, retracted("gordon-in")), disputed(conflicts_with=["gordon-in"]))


# --- org_cycle ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("org", "parent"),
    [("dhs", "ice"), ("dhs", "ice-hsi"), ("ice", "ice-hsi")],
)
def test_an_org_cannot_become_its_own_ancestor(org: str, parent: str) -> None:
    error = then_refused((DHS, ICE, HSI), event("org.updated", org=org, parent=parent), "org_cycle")
    assert "cycle" in error.message


def test_moving_an_org_elsewhere_in_the_tree_is_accepted() -> None:
    states = then_accepted(
        (DHS, ICE, HSI, WHITE_HOUSE), event("org.updated", org="ice-hsi", parent="dhs")
    )
    assert states["org-ice-hsi"] == OrgState("ice-hsi", "dhs")


def test_a_cycle_is_checked_against_the_updated_tree() -> None:
    # After ice-hsi moves under white-house, white-house may not move under ice-hsi.
    move = event("org.updated", org="ice-hsi", parent="white-house")
    history = (DHS, ICE, HSI, WHITE_HOUSE, move)
    then_refused(history, event("org.updated", org="white-house", parent="ice-hsi"), "org_cycle")
    then_accepted(history, event("org.updated", org="white-house", parent="ice"))


def test_an_update_without_parent_keeps_the_parent() -> None:
    states = given(DHS, ICE, event("org.updated", org="ice", name="Immigration and Customs"))
    assert states["org-ice"] == OrgState("ice", "dhs")


# --- cause_kind ---------------------------------------------------------------------------


def test_correcting_a_departure_into_an_appointment_must_drop_the_cause() -> None:
    error = then_refused(CLAIMS, corrected(kind="appointment"), "cause_kind")
    assert "not a departure" in error.message
    states = then_accepted(CLAIMS, corrected(kind="appointment", cause=None))
    assert states["claim-hammer-out"] == ClaimState("hammer-out", "appointment", None, "corrected")


def test_a_cause_cannot_be_added_to_a_claim_that_is_no_departure() -> None:
    then_refused(CLAIMS, corrected("gordon-in", cause="promotion"), "cause_kind")
    then_refused(CLAIMS, corrected("gordon-in", kind="incumbency", cause="unknown"), "cause_kind")


def test_turning_a_claim_into_a_departure_may_add_a_cause() -> None:
    states = then_accepted(CLAIMS, corrected("gordon-in", kind="departure", cause="resignation"))
    assert states["claim-gordon-in"] == ClaimState(
        "gordon-in", "departure", "resignation", "corrected"
    )


def test_a_departure_may_change_its_cause() -> None:
    states = then_accepted(CLAIMS, corrected(cause="retirement"))
    assert states["claim-hammer-out"] == ClaimState(
        "hammer-out", "departure", "retirement", "corrected"
    )


def test_cause_kind_follows_earlier_corrections() -> None:
    history = (*CLAIMS, corrected(kind="appointment", cause=None))
    then_refused(history, corrected(cause="removal"), "cause_kind")
    then_accepted(history, corrected(kind="departure", cause="removal"))


# --- missing knowledge -----------------------------------------------------------------------


class PartialKnowledge:
    """Knows only the streams it was given; like the log's cache before it loads more."""

    def __init__(self, states: Mapping[str, EntityState | None]) -> None:
        self.states = states

    def state(self, stream: str) -> EntityState | None:
        if stream not in self.states:
            raise MissingKnowledge({stream})
        return self.states[stream]


def test_every_unloaded_stream_is_asked_for_at_once() -> None:
    with pytest.raises(MissingKnowledge) as caught:
        decide(HAMMER_OUT, PartialKnowledge({}))
    assert caught.value.streams == {
        "claim-hammer-out",
        "source-fox",
        "person-robert-hammer",
        "post-ice-hsi-ead",
    }
    assert caught.value.streams == referenced_streams(HAMMER_OUT)


def test_only_unloaded_streams_are_asked_for() -> None:
    loaded: dict[str, EntityState | None] = {**given(*CLAIMS), "claim-third": None}
    with pytest.raises(MissingKnowledge) as caught:
        decide(disputed(conflicts_with=["gordon-in", "third", "fourth"]), PartialKnowledge(loaded))
    assert caught.value.streams == {"claim-fourth"}


def test_known_absence_is_a_rule_break_not_missing_knowledge() -> None:
    knowledge = PartialKnowledge({stream: None for stream in referenced_streams(HAMMER_OUT)})
    with pytest.raises(DomainError) as caught:
        decide(HAMMER_OUT, knowledge)
    assert caught.value.rule == "reference"


@pytest.mark.parametrize(
    ("when", "streams"),
    [
        (DHS, {"org-dhs"}),
        (ICE, {"org-ice", "org-dhs"}),
        (EAD, {"post-ice-hsi-ead", "org-ice-hsi"}),
        (event("org.updated", org="ice", parent="white-house"), {"org-ice", "org-white-house"}),
        (event("org.updated", org="ice", name="ICE"), {"org-ice"}),
        (HAMMER, {"person-robert-hammer"}),
        (FOX, {"source-fox"}),
        (confirmed(), {"claim-hammer-out", "source-cnn"}),
        (retracted(), {"claim-hammer-out"}),
        (corrected(person="derek-gordon"), {"claim-hammer-out", "person-derek-gordon"}),
        (corrected(source="cnn"), {"claim-hammer-out", "source-cnn"}),
        (corrected(cause=None, quote=None), {"claim-hammer-out"}),
        (
            event(
                "claim.corrected",
                claim="hammer-out",
                changes={"source": "fox", "post": "ice-hsi-ead"},
                reason="Misattributed.",
                source="cnn",
            ),
            {"claim-hammer-out", "source-cnn", "source-fox", "post-ice-hsi-ead"},
        ),
        (
            reported(),
            {"claim-hammer-out", "source-fox", "person-robert-hammer", "post-ice-hsi-ead"},
        ),
        (disputed(), {"claim-hammer-out"}),
        (
            disputed(source="cnn", conflicts_with=["gordon-in", "other"]),
            {"claim-hammer-out", "source-cnn", "claim-gordon-in", "claim-other"},
        ),
        (retracted(source="cnn"), {"claim-hammer-out", "source-cnn"}),
        (
            event("comment.requested", source="fox", org="ice", outcome="denied"),
            {"source-fox", "org-ice"},
        ),
    ],
    ids=lambda value: value.type if hasattr(value, "type") else None,
)
def test_decisions_read_exactly_the_streams_they_need(when: Event, streams: set[str]) -> None:
    assert referenced_streams(when) == streams
    # As an import finds them, from the data stored, without the event's model.
    assert referenced_streams_in(when.type, when.data()) == streams
    with pytest.raises(MissingKnowledge) as caught:
        decide(when, PartialKnowledge({}))
    assert caught.value.streams == streams


# --- evolve ---------------------------------------------------------------------------------


def test_evolve_is_pure() -> None:
    before = given(*CLAIMS)
    snapshot = dict(before)
    after = evolve(before["claim-hammer-out"], retracted())
    assert before == snapshot
    assert isinstance(after, ClaimState) and after.status == "retracted"
    assert before["claim-hammer-out"] != after


def test_evolve_builds_claim_state_from_the_report() -> None:
    states = given(*CLAIMS)
    assert states["claim-hammer-out"] == ClaimState(
        "hammer-out", "departure", "reassignment", "reported"
    )
    assert states["claim-gordon-in"] == ClaimState("gordon-in", "appointment", None, "reported")
    assert states["org-ice"] == OrgState("ice", "dhs")
    assert states["org-dhs"] == OrgState("dhs", None)


def test_comment_requests_leave_the_source_existing() -> None:
    request = event("comment.requested", source="fox", org="ice", outcome="no_response")
    states = then_accepted(WORLD, request)
    assert states["source-fox"] == given(FOX)["source-fox"]


def test_a_correction_attributing_a_claim_to_an_unregistered_source_names_the_rule() -> None:
    # given a claim reported by fox; when a correction attributes it to an unknown outlet
    error = then_refused(CLAIMS, corrected(source="reuters"), "reference")
    # then the error names the record, the source and why it must exist
    assert error.message == (
        "claim.corrected refers to source 'reuters', which does not exist "
        "(the source the claim is attributed to must be registered)"
    )
    assert error.missing == "source-reuters"


def test_a_correction_may_attribute_a_claim_to_another_registered_source() -> None:
    states = then_accepted(CLAIMS, corrected(source="cnn"))
    assert states["claim-hammer-out"] == ClaimState(
        "hammer-out", "departure", "reassignment", "corrected"
    )


# --- correction ---------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["kind", "person", "post", "capacity", "modality", "attribution"])
def test_a_correction_cannot_clear_a_field_every_claim_has(field: str) -> None:
    # given a reported claim; when a correction sets a field every claim has to null
    error = then_refused(CLAIMS, corrected(**{field: None}), "correction")
    # then it is refused, naming the field
    assert f"{field} cannot be cleared" in error.message
