"""Given/when/then tests of every leadership state rule, on the pure functions (no I/O)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leaderlog.projections.claim_versions import counts_from
from tests.projections.story import Story, day

# --- capacity ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("capacity", "vacancy"),
    [
        ("permanent", "filled"),
        ("acting", "acting"),
        ("interim", "acting"),
        ("unspecified", "filled"),
    ],
)
def test_given_an_appointment_in_each_capacity_then_holder_and_vacancy_follow_it(
    capacity: str, vacancy: str
) -> None:
    # given
    story = Story().report("c1", capacity=capacity, effective="2025-06-01")
    # when
    state = story.state("2025-06-02")
    # then
    assert [(h["person"], h["capacity"]) for h in state["holders"]] == [("ann", capacity)]
    assert state["vacancy"] == vacancy


def test_given_no_claims_then_the_vacancy_is_unknown() -> None:
    state = Story().state("2025-06-02")
    assert state == {"holders": [], "pending": [], "vacancy": "unknown", "conflicts": []}


def test_given_acting_and_unspecified_holders_then_the_post_counts_as_filled() -> None:
    story = (
        Story()
        .report("c1", person="ann", capacity="acting", effective="2025-06-01")
        .report("c2", person="bob", capacity="unspecified", effective="2025-06-01")
    )
    assert story.state("2025-06-02")["vacancy"] == "filled"


def test_given_an_unspecified_claim_after_an_acting_one_then_acting_is_kept() -> None:
    # "unspecified" is not a negation of "acting"
    story = (
        Story()
        .report("c1", kind="incumbency", capacity="acting")
        .report("c2", kind="incumbency", capacity="unspecified")
    )
    assert story.holders("2025-06-30") == [("ann", "acting")]


def test_given_an_acting_then_a_permanent_appointment_then_two_tenures() -> None:
    story = (
        Story()
        .report("c1", capacity="acting", effective="2025-01-10")
        .report("c2", capacity="permanent", effective="2025-03-01")
    )
    assert story.holders("2025-02-01") == [("ann", "acting")]
    assert story.holders("2025-03-01") == [("ann", "permanent")]
    found = story.tenures()
    assert [(t["capacity"], t["start"]["date"], (t["end"] or {}).get("date")) for t in found] == [
        ("acting", "2025-01-10", "2025-03-01"),
        ("permanent", "2025-03-01", None),
    ]


# --- modality ----------------------------------------------------------------------------------


def test_given_an_occurred_appointment_then_the_person_holds_the_post() -> None:
    story = Story().report("c1", modality="occurred", effective="2025-06-01")
    assert story.holders("2025-06-01") == [("ann", "permanent")]
    assert story.pending("2025-06-01") == []


@pytest.mark.parametrize("modality", ["announced", "expected", "rumored"])
def test_given_a_change_not_yet_occurred_then_it_stays_pending_even_after_its_date(
    modality: str,
) -> None:
    # given
    story = Story().report("c1", modality=modality, effective="2025-06-01")
    # when
    state = story.state("2026-01-01")
    # then
    assert state["holders"] == []
    assert [item["claim"] for item in state["pending"]] == ["c1"]
    assert state["pending"][0]["modality"] == modality
    assert state["vacancy"] == "unknown"


def test_given_an_occurred_change_dated_after_d_then_it_is_pending_on_d() -> None:
    story = Story().report("c1", effective="2025-07-01")
    assert story.pending("2025-06-30") == ["c1"]
    assert story.holders("2025-06-30") == []
    assert story.holders("2025-07-01") == [("ann", "permanent")]


def test_given_a_pending_change_then_it_is_listed_only_once_its_report_is_published() -> None:
    # the source was published on 2025-05-20
    story = Story().report("c1", modality="expected")
    assert story.pending("2025-05-19") == []
    assert story.pending("2025-05-20") == ["c1"]


# --- claim transitions -------------------------------------------------------------------------


def test_given_an_expected_appointment_when_confirmed_with_its_date_then_that_date_counts() -> None:
    story = Story().report("c1", modality="expected").confirm("c1", effective="2025-07-15")
    assert story.holders("2025-07-14") == []
    assert story.pending("2025-07-14") == ["c1"]
    holders = story.state("2025-07-15")["holders"]
    assert holders[0]["person"] == "ann"
    assert holders[0]["status"] == "confirmed"
    assert holders[0]["since"]["basis"] == "confirmed"


def test_given_a_confirmation_without_a_date_then_the_confirming_source_date_counts() -> None:
    story = Story(published={"paper": "2025-05-20", "release": "2025-08-02"})
    story.report("c1", modality="announced").confirm("c1", source="release", recorded="2025-08-03")
    assert story.holders("2025-08-01") == []
    assert story.holders("2025-08-02") == [("ann", "permanent")]
    since = story.state("2025-08-02")["holders"][0]["since"]
    assert (since["date"], since["basis"]) == ("2025-08-02", "published")


def test_given_a_confirming_source_without_a_date_then_the_recorded_day_counts() -> None:
    story = Story(published={"paper": "2025-05-20", "memo": None})
    story.report("c1", modality="rumored").confirm("c1", source="memo", recorded="2025-09-03")
    assert story.holders("2025-09-02") == []
    assert story.holders("2025-09-03") == [("ann", "permanent")]
    assert story.state("2025-09-03")["holders"][0]["since"]["basis"] == "recorded"


def test_given_a_correction_to_occurred_then_the_change_takes_effect() -> None:
    story = Story().report("c1", modality="expected", effective="2025-06-01")
    assert story.holders("2025-06-05") == []
    story.correct("c1", modality="occurred")
    assert story.holders("2025-06-05") == [("ann", "permanent")]


def test_given_a_correction_back_to_expected_then_the_change_is_pending_again() -> None:
    story = Story().report("c1", effective="2025-06-01").correct("c1", modality="expected")
    assert story.holders("2025-06-05") == []
    assert story.pending("2025-06-05") == ["c1"]


def test_given_a_correction_of_person_and_capacity_then_the_state_follows_it() -> None:
    story = Story().report("c1", effective="2025-06-01")
    story.correct("c1", person="bob", capacity="acting")
    assert story.holders("2025-06-05") == [("bob", "acting")]
    assert story.state("2025-06-05")["vacancy"] == "acting"


def test_given_a_correction_of_the_date_then_the_change_moves() -> None:
    story = Story().report("c1", effective="2025-06-01")
    story.correct("c1", effective={"date": "2025-08-01", "qualifier": "on"})
    assert story.holders("2025-07-01") == []
    assert story.holders("2025-08-01") == [("ann", "permanent")]


def test_given_a_retracted_claim_then_it_has_no_effect_at_all() -> None:
    story = (
        Story()
        .report("c1", effective="2025-06-01")
        .report("c2", modality="expected", kind="departure", cause="retirement")
        .dispute("c2", "c1")
    )
    story.retract("c1").retract("c2")
    assert story.state("2025-07-01") == {
        "holders": [],
        "pending": [],
        "vacancy": "unknown",
        "conflicts": [],
    }
    assert story.tenures() == []


def test_given_a_disputed_claim_then_it_is_a_conflict_and_its_holder_is_disputed() -> None:
    story = (
        Story()
        .report("body", kind="incumbency", person="hammer", capacity="unspecified")
        .report("caption", kind="incumbency", person="hammer", capacity="acting")
        .dispute("caption", "body", reason="caption says acting")
    )
    state = story.state("2025-06-30")
    assert state["conflicts"] == [
        {
            "kind": "disputed",
            "claims": ["caption", "body"],
            "persons": ["hammer"],
            "reason": "caption says acting",
        }
    ]
    # the disputed claim does not decide the capacity while an undisputed one exists
    assert state["holders"][0]["capacity"] == "unspecified"
    assert state["holders"][0]["status"] == "disputed"


def test_given_a_disputed_claim_when_later_confirmed_then_the_conflict_is_resolved() -> None:
    story = Story().report("c1", kind="incumbency").dispute("c1").confirm("c1")
    state = story.state("2025-06-30")
    assert state["conflicts"] == []
    assert state["holders"][0]["status"] == "confirmed"


def test_given_two_permanent_holders_at_once_then_they_are_a_conflict() -> None:
    story = (
        Story()
        .report("c1", person="ann", effective="2024-01-01")
        .report("c2", person="bob", effective="2025-01-01")
    )
    state = story.state("2025-02-01")
    assert [conflict["kind"] for conflict in state["conflicts"]] == ["overlapping_permanent"]
    assert state["conflicts"][0]["persons"] == ["ann", "bob"]
    # before the second appointment there is no overlap
    assert story.state("2024-06-01")["conflicts"] == []


def test_given_a_permanent_holder_and_an_acting_one_then_there_is_no_conflict() -> None:
    story = (
        Story()
        .report("c1", person="ann", effective="2024-01-01")
        .report("c2", person="bob", capacity="acting", effective="2025-01-01")
    )
    assert story.state("2025-02-01")["conflicts"] == []


@pytest.mark.parametrize(("first", "second"), [("acting", "acting"), ("acting", "interim")])
def test_given_two_acting_or_interim_holders_at_once_then_they_are_a_conflict(
    first: str, second: str
) -> None:
    # two outlets naming different people acting head of one post: one is wrong
    story = (
        Story()
        .report("c1", person="ann", capacity=first, effective="2024-01-01")
        .report("c2", person="bob", capacity=second, effective="2025-01-01")
    )
    state = story.state("2025-02-01")
    assert [conflict["kind"] for conflict in state["conflicts"]] == ["overlapping_acting"]
    assert state["conflicts"][0]["persons"] == ["ann", "bob"]
    assert state["conflicts"][0]["reason"] == "more than one acting or interim holder at once"
    assert story.state("2024-06-01")["conflicts"] == []


@pytest.mark.parametrize("capacity", ["permanent", "acting"])
def test_given_a_departure_dated_by_month_when_a_successor_starts_that_month_then_no_conflict(
    capacity: str,
) -> None:
    # "Ann retires in March"; "Bob took over on 15 March": the reports may well agree.
    story = (
        Story({"paper": "2025-03-18"})
        .report("c1", person="ann", capacity=capacity, effective="2024-01-01")
        .report("c2", kind="departure", person="ann", capacity=capacity, effective="2025-03")
        .report("c3", person="bob", capacity=capacity, effective="2025-03-15")
    )
    state = story.state("2025-03-20")
    # Ann still counts as holding the post until the month's last day, her departure pending...
    assert [holder["person"] for holder in state["holders"]] == ["ann", "bob"]
    assert [item["claim"] for item in state["pending"]] == ["c2"]
    # ...but she may already have left, so the two are not at odds.
    assert state["conflicts"] == []
    assert story.holders("2025-03-31") == [("bob", capacity)]


def test_given_a_month_departure_when_a_successor_starts_before_that_month_then_a_conflict() -> (
    None
):
    # Bob took over in February, and Ann left only in March: in February both certainly held it.
    story = (
        Story()
        .report("c1", person="ann", effective="2024-01-01")
        .report("c2", kind="departure", person="ann", effective="2025-03")
        .report("c3", person="bob", effective="2025-02-15")
    )
    assert [c["kind"] for c in story.state("2025-02-20")["conflicts"]] == ["overlapping_permanent"]
    assert story.state("2025-03-02")["conflicts"] == []


def test_given_an_undated_departure_then_a_successor_before_its_source_is_no_conflict() -> None:
    # "Ann has retired" in a paper of 20 May may mean any day before it.
    story = (
        Story()
        .report("c1", person="ann", effective="2024-01-01")
        .report("c2", kind="departure", person="ann")
        .report("c3", person="bob", effective="2025-05-01")
    )
    assert [holder["person"] for holder in story.state("2025-05-10")["holders"]] == ["ann", "bob"]
    assert story.state("2025-05-10")["conflicts"] == []


def test_given_a_month_departure_from_a_role_left_for_another_then_the_overlap_is_a_conflict() -> (
    None
):
    # given Ann acting from January, appointed permanent on 10 March (ending the acting role),
    # a report that she left the acting role "in March", and Bob reported permanent since February
    story = (
        Story({"paper": "2025-03-18"})
        .report("c1", person="ann", capacity="acting", effective="2025-01-01")
        .report("c2", person="ann", capacity="permanent", effective="2025-03-10")
        .report("c3", kind="departure", person="ann", capacity="acting", effective="2025-03")
        .report("c4", person="bob", capacity="permanent", effective="2025-02-01")
    )
    # when asked during March and after it
    # then the departure is the end of her acting role, which leaves no room in the permanent
    # one: the two permanent holders are at odds throughout, not only from the 31st
    for on in ("2025-03-12", "2025-03-20", "2025-03-31"):
        assert story.holders(on) == [("bob", "permanent"), ("ann", "permanent")]
        kinds = [conflict["kind"] for conflict in story.state(on)["conflicts"]]
        assert kinds == ["overlapping_permanent"], on


def test_given_a_month_departure_from_a_role_left_then_an_acting_overlap_is_a_conflict() -> None:
    # given Ann permanent until 5 March, back as acting on the 6th, a vaguer report that she
    # left the permanent role "in March", and Cy acting since 1 March
    story = (
        Story({"paper": "2025-03-18"})
        .report("c1", person="ann", effective="2024-01-01")
        .report("c2", kind="departure", person="ann", effective="2025-03-05")
        .report("c3", person="ann", capacity="acting", effective="2025-03-06")
        .report("c4", kind="departure", person="ann", effective="2025-03")
        .report("c5", person="cy", capacity="acting", effective="2025-03-01")
    )
    # then the vaguer report is the end on the 5th again: Ann and Cy are both acting heads
    for on in ("2025-03-20", "2025-03-31"):
        kinds = [conflict["kind"] for conflict in story.state(on)["conflicts"]]
        assert kinds == ["overlapping_acting"], on


def test_given_a_departure_only_expected_then_two_permanent_holders_are_still_a_conflict() -> None:
    story = (
        Story()
        .report("c1", person="ann", effective="2024-01-01")
        .report("c2", kind="departure", person="ann", modality="expected", effective="2025-03")
        .report("c3", person="bob", effective="2025-03-15")
    )
    assert [c["kind"] for c in story.state("2025-03-20")["conflicts"]] == ["overlapping_permanent"]


def test_given_a_retracted_month_departure_then_two_permanent_holders_are_a_conflict() -> None:
    story = (
        Story()
        .report("c1", person="ann", effective="2024-01-01")
        .report("c2", kind="departure", person="ann", effective="2025-03")
        .report("c3", person="bob", effective="2025-03-15")
        .retract("c2")
    )
    assert [c["kind"] for c in story.state("2025-03-20")["conflicts"]] == ["overlapping_permanent"]


# --- departures and tenures --------------------------------------------------------------------


def test_given_a_departure_of_the_holder_then_the_post_is_vacant() -> None:
    story = (
        Story()
        .report("c1", effective="2024-01-01")
        .report("c2", kind="departure", cause="retirement", effective="2025-03-31")
    )
    assert story.holders("2025-03-30") == [("ann", "permanent")]
    state = story.state("2025-03-31")
    assert (state["holders"], state["vacancy"]) == ([], "vacant")
    (tenure,) = story.tenures()
    assert (
        tenure["start"]["date"],
        tenure["end"]["date"],
        tenure["cause"],
        tenure["ended_by"],
    ) == (
        "2024-01-01",
        "2025-03-31",
        "retirement",
        "c2",
    )


def test_given_only_a_departure_then_a_tenure_with_unknown_start_is_shown() -> None:
    story = Story().report("c1", kind="departure", cause="resignation", effective="2025-02-01")
    (tenure,) = story.tenures()
    assert tenure["start"] is None
    assert tenure["cause"] == "resignation"
    assert story.state("2025-03-01")["vacancy"] == "vacant"


def test_given_a_pending_departure_then_the_holder_stays_with_the_departure_pending() -> None:
    story = (
        Story()
        .report("c1", kind="incumbency", capacity="acting")
        .report("c2", kind="departure", capacity="acting", modality="expected", cause="retirement")
    )
    state = story.state("2025-06-30")
    assert [(h["person"], h["capacity"]) for h in state["holders"]] == [("ann", "acting")]
    assert [item["claim"] for item in state["pending"]] == ["c2"]


def test_given_a_departure_in_effect_then_an_announcement_of_it_is_not_pending() -> None:
    # given a retirement confirmed for 30 June, then another outlet's announcement of it
    story = (
        Story(published={"paper": "2025-05-20", "wire": "2025-06-24"})
        .report("c1", kind="incumbency", capacity="acting")
        .report("fox", kind="departure", modality="expected", cause="retirement")
        .confirm("fox", effective="2025-06-30")
        .report(
            "wire",
            kind="departure",
            modality="announced",
            effective="2025-06-30",
            cause="retirement",
            source="wire",
        )
    )
    # then once the end is in effect, the announcement is not a change still to come
    assert story.pending("2025-06-29") == ["fox", "wire"]
    assert story.state("2025-07-01")["pending"] == []
    assert story.state("2025-07-01")["vacancy"] == "vacant"
    # nor is one without a date ("... is to retire soon") reported before that end: "soon"
    # may well be the 30th
    undated = story.report("soon", kind="departure", modality="expected", source="wire")
    assert undated.pending("2025-06-29") == ["fox", "soon", "wire"]
    assert undated.pending("2025-07-01") == []


def test_given_a_departure_in_effect_then_one_without_a_date_reported_after_it_is_pending() -> None:
    # given a retirement in effect on 30 June, then in August a report with no date that
    # the retired holder is to leave: not the end already known, which it came after
    story = (
        Story(published={"paper": "2025-05-20", "wire": "2025-08-01"})
        .report("c1", kind="incumbency", capacity="acting")
        .report("fox", kind="departure", effective="2025-06-30", cause="retirement")
        .report("later", kind="departure", modality="expected", source="wire")
    )
    assert story.pending("2025-08-02") == ["later"]


def test_given_a_departure_that_happened_then_an_expected_one_without_a_date_is_not_pending() -> (
    None
):
    # The seeds' shape: an article published some day in May says the holder is expected to
    # be reassigned "soon"; a later report says he left on the 29th.
    story = (
        Story(published={"paper": "2025-05", "wire": "2025-06-02"})
        .report("body", kind="incumbency")
        .report("soon", kind="departure", modality="expected", cause="reassignment")
        .report("left", kind="departure", effective="2025-05-29", source="wire")
    )
    assert story.pending("2025-08-01") == []
    assert story.state("2025-08-01")["vacancy"] == "vacant"
    # and the history lists the expected reassignment as a report of that end: it is no
    # longer a change to come, but it does not drop out of the history either
    (tenure,) = story.tenures()
    assert (tenure["end"]["date"], tenure["ended_by"]) == ("2025-05-29", "left")
    assert [claim["claim"] for claim in tenure["evidence"]] == ["left", "body", "soon"]
    assert tenure["status"] == "reported"


def test_given_an_expected_appointment_then_a_report_that_it_happened_it_is_not_pending() -> None:
    # given "ann is expected to become acting director soon" in a paper of 20 May, and a
    # wire's report that she took over as acting director on 2 June
    story = (
        Story(published={"paper": "2025-05-20", "wire": "2025-06-03"})
        .report("soon", capacity="acting", modality="expected")
        .report("took", capacity="acting", effective="2025-06-02", source="wire")
    )
    # then before that day the appointment is to come, and from it, it is the one in effect
    # (the report that it happened is only listed once it was out)
    assert story.pending("2025-06-01") == ["soon"]
    assert story.pending("2025-06-02") == []
    assert story.holders("2025-06-02") == [("ann", "acting")]
    # and the history lists the expected appointment as a report of that start
    (tenure,) = story.tenures()
    assert [claim["claim"] for claim in tenure["evidence"]] == ["took", "soon"]


def test_given_a_tenure_then_an_appointment_it_does_not_already_show_is_pending() -> None:
    # given ann acting from 2 June: an expected permanent appointment is a change to come
    # (a new tenure), and so is an acting one dated after her start
    story = (
        Story(published={"paper": "2025-05-20", "wire": "2025-06-03"})
        .report("acting", capacity="acting", effective="2025-06-02", source="wire")
        .report("permanent", modality="expected")
        .report("later", capacity="acting", modality="expected", effective="2025-09")
    )
    assert story.pending("2025-06-10") == ["later", "permanent"]


def test_given_a_departure_in_effect_then_a_departure_announced_after_a_return_is_pending() -> None:
    story = (
        Story(published={"paper": "2025-05-20", "wire": "2025-08-01"})
        .report("a", effective="2025-01-05")
        .report("d", kind="departure", effective="2025-03-01", cause="retirement")
        .report("back", effective="2025-06-01", source="wire")
        .report("again", kind="departure", modality="announced", effective="2025-09", source="wire")
    )
    assert story.pending("2025-08-02") == ["again"]


def test_given_a_dated_departure_then_a_vaguer_incumbency_does_not_reopen_the_tenure() -> None:
    # The article (published some day in May) names the acting holder and his retirement; the
    # retirement is confirmed for the 29th, before the last day the article may be from.
    story = (
        Story(published={"paper": "2025-05"})
        .report("c1", kind="incumbency", capacity="acting")
        .report("c2", kind="departure", capacity="acting", modality="expected", cause="retirement")
        .confirm("c2", effective="2025-05-29")
    )
    for on in ("2025-05-30", "2025-05-31", "2025-06-15"):
        state = story.state(on)
        assert (state["holders"], state["vacancy"]) == ([], "vacant"), on
    (tenure,) = story.tenures()
    assert (tenure["start"]["date"], tenure["end"]["date"], tenure["ended_by"]) == (
        "2025-05",
        "2025-05-29",
        "c2",
    )
    assert [claim["claim"] for claim in tenure["evidence"]] == ["c2", "c1"]


def test_given_a_vaguer_incumbency_of_a_tenure_in_effect_then_it_is_not_pending() -> None:
    # given a holding "about May" and the retirement on 30 May that ended it
    story = (
        Story(published={"paper": "2025-05-01"})
        .report("c1", kind="incumbency", effective="2025-05", qualifier="about")
        .report("c2", kind="departure", effective="2025-05-30", cause="retirement")
    )
    # when the state on the day of the retirement is asked, then the holding is no change to
    # come: it is the holding the retirement ended, as it is from 31 May on
    for on in ("2025-05-30", "2025-05-31"):
        state = story.state(on)
        assert (state["vacancy"], state["pending"]) == ("vacant", []), on
    # and an incumbency "about June" of a holder appointed in January is none either, on a
    # day of June it may mean
    story = (
        Story(published={"paper": "2025-06-01"})
        .report("c1", effective="2025-01-10")
        .report("c2", kind="incumbency", effective="2025-06", qualifier="about")
    )
    assert story.pending("2025-06-10") == []
    assert story.holders("2025-06-10") == [("ann", "permanent")]


def test_given_an_incumbency_dated_after_the_day_then_it_is_still_pending() -> None:
    # given a holder appointed in January, and a report that she holds the post from 15 June
    story = (
        Story(published={"paper": "2025-06-01"})
        .report("c1", effective="2025-01-10")
        .report("c2", kind="incumbency", effective="2025-06-15")
    )
    # when the state on 10 June is asked, then it is a change dated after that day
    assert story.pending("2025-06-10") == ["c2"]


def test_given_an_undated_holding_out_after_the_departure_then_its_start_stays_unknown() -> None:
    # given a retirement on 1 March, and an appointment with no date from a source published
    # on 1 June (it may have happened any day before: it is the tenure the retirement ended)
    story = (
        Story(published={"wire": "2025-02-01", "paper": "2025-06-01"})
        .report("c1", kind="departure", effective="2025-03-01", source="wire", cause="retirement")
        .report("c2", source="paper")
    )
    # when the history is asked, then the tenure does not start after it ends ("by 1 June")
    (tenure,) = story.tenures()
    assert (tenure["start"], tenure["end"]["date"]) == (None, "2025-03-01")
    assert [claim["claim"] for claim in tenure["evidence"]] == ["c1", "c2"]


def test_given_a_departure_then_a_change_certainly_after_it_opens_a_new_tenure() -> None:
    story = (
        Story(published={"paper": "2025-05"})
        .report("c1", kind="incumbency")
        .report("c2", kind="departure", cause="resignation", effective="2025-05-10")
        .report("c3", effective="2025-06-01")
    )
    assert story.holders("2025-05-31") == []
    assert story.holders("2025-06-01") == [("ann", "permanent")]
    assert [(t["start"]["date"], (t["end"] or {}).get("date")) for t in story.tenures()] == [
        ("2025-05", "2025-05-10"),
        ("2025-06-01", None),
    ]


def test_given_a_departure_then_a_vague_appointment_in_another_capacity_opens_a_tenure() -> None:
    story = (
        Story(published={"paper": "2025-05"})
        .report("c1", kind="departure", capacity="permanent", effective="2025-05-10")
        .report("c2", capacity="acting")
    )
    assert story.holders("2025-05-31") == [("ann", "acting")]


@pytest.mark.parametrize("second", ["2025-05-10", "2025-05"], ids=["same-day", "vaguer"])
def test_given_a_departure_reported_twice_then_it_ends_one_tenure(second: str) -> None:
    story = (
        Story(published={"paper": "2025-05-20", "wire": "2025-05-21"})
        .report("c1", kind="incumbency", effective="2024-01-01")
        .report("c2", kind="departure", cause="retirement", effective="2025-05-10")
        .report("c3", kind="departure", cause="retirement", effective=second, source="wire")
    )
    (tenure,) = story.tenures()
    assert (tenure["start"]["date"], tenure["end"]["date"], tenure["ended_by"]) == (
        "2024-01-01",
        "2025-05-10",
        "c2",
    )
    assert [claim["claim"] for claim in tenure["evidence"]] == ["c1", "c2", "c3"]
    assert story.state("2025-06-01")["vacancy"] == "vacant"


def test_given_a_departure_certainly_after_the_last_one_then_it_shows_another_tenure() -> None:
    # Nothing says the person came back, but leaving again says they held the post again.
    story = (
        Story()
        .report("c1", kind="incumbency", effective="2024-01-01")
        .report("c2", kind="departure", cause="resignation", effective="2024-05-10")
        .report("c3", kind="departure", cause="retirement", effective="2025-03-01")
    )
    assert [(t["start"], t["end"]["date"]) for t in story.tenures()] == [
        (
            {"date": "2024-01-01", "qualifier": "on", "text": None, "basis": "effective"},
            "2024-05-10",
        ),
        (None, "2025-03-01"),
    ]


@pytest.mark.parametrize("order", [("c2", "c3"), ("c3", "c2")], ids=["left-first", "named-first"])
def test_given_an_acting_holder_promoted_the_same_day_then_the_order_of_reports_does_not_matter(
    order: tuple[str, str],
) -> None:
    reports = {
        "c2": {"kind": "departure", "capacity": "acting", "cause": "promotion"},
        "c3": {"kind": "appointment", "capacity": "permanent"},
    }
    story = Story().report("c1", kind="incumbency", capacity="acting", effective="2025-01-01")
    for claim in order:
        story.report(claim, effective="2025-06-01", **reports[claim])
    assert story.holders("2025-06-02") == [("ann", "permanent")]
    assert [
        (t["capacity"], t["start"]["date"], (t["end"] or {}).get("date"), t["cause"])
        for t in story.tenures()
    ] == [
        ("acting", "2025-01-01", "2025-06-01", "promotion"),
        ("permanent", "2025-06-01", None, None),
    ]


def test_given_a_permanent_appointment_then_a_vaguer_end_of_the_acting_role_leaves_it_held() -> (
    None
):
    story = (
        Story()
        .report("c1", kind="incumbency", capacity="acting", effective="2025-01-01")
        .report("c2", capacity="permanent", effective="2025-06-01")
        .report("c3", kind="departure", capacity="acting", cause="promotion", effective="2025-06")
    )
    assert story.holders("2025-07-01") == [("ann", "permanent")]
    first, second = story.tenures()
    assert (first["capacity"], first["cause"], second["capacity"], second["end"]) == (
        "acting",
        "promotion",
        "permanent",
        None,
    )


# --- fuzzy dates -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("effective", "day_before", "first_day"),
    [
        ("2025-05-29", "2025-05-28", "2025-05-29"),
        ("2025-05", "2025-05-30", "2025-05-31"),
        ("2024-02", "2024-02-28", "2024-02-29"),
        ("2025", "2025-12-30", "2025-12-31"),
    ],
    ids=["day", "month", "leap-month", "year"],
)
def test_given_a_fuzzy_date_then_the_change_counts_from_its_latest_possible_day(
    effective: str, day_before: str, first_day: str
) -> None:
    story = Story().report("c1", effective=effective)
    assert story.holders(day_before) == []
    assert story.holders(first_day) == [("ann", "permanent")]


@pytest.mark.parametrize(
    ("qualifier", "day_before", "first_day"),
    [
        ("about", "2025-05-30", "2025-05-31"),
        ("before", "2025-04-29", "2025-04-30"),
        ("after", "2025-05-31", "2025-06-01"),
    ],
)
def test_given_a_qualified_month_then_the_qualifier_moves_the_day(
    qualifier: str, day_before: str, first_day: str
) -> None:
    story = Story().report("c1", effective="2025-05", qualifier=qualifier)
    assert story.holders(day_before) == []
    assert story.holders(first_day) == [("ann", "permanent")]


def test_given_an_occurred_change_without_date_then_it_counts_from_the_published_date() -> None:
    story = Story(published={"paper": "2025-05"}).report("c1", kind="incumbency")
    assert story.holders("2025-05-30") == []
    assert story.holders("2025-05-31") == [("ann", "permanent")]
    assert story.state("2025-05-31")["holders"][0]["since"]["basis"] == "published"


def test_given_no_published_date_either_then_it_counts_from_the_recorded_day() -> None:
    story = Story(published={"blog": None})
    story.report("c1", kind="incumbency", source="blog", recorded="2025-09-03")
    assert story.holders("2025-09-02") == []
    assert story.holders("2025-09-03") == [("ann", "permanent")]


def test_given_a_vague_published_date_then_the_recorded_day_is_its_latest_possible_day() -> None:
    # The log recorded the claims on 10 April, so the source was out by then, whatever
    # "2025" leaves open.
    story = Story(published={"paper": "2025"})
    story.report("c1", kind="incumbency", recorded="2025-04-10")
    story.report("c2", kind="departure", modality="announced", recorded="2025-04-10")
    assert story.holders("2025-04-09") == []
    state = story.state("2025-04-10")
    assert [holder["person"] for holder in state["holders"]] == ["ann"]
    assert holder_since(state) == {
        "date": "2025",
        "qualifier": "on",
        "text": None,
        "basis": "published",
        "source": "paper",
    }
    assert story.pending("2025-04-10") == ["c2"]
    assert story.state("2025-04-10")["pending"][0]["reported"]["basis"] == "published"


@pytest.mark.parametrize("published", ["2099-01-01", "2030"])
def test_given_a_published_date_after_the_recorded_day_then_the_recorded_day_is_shown(
    published: str,
) -> None:
    # A source cannot have been out after the log recorded a report from it (a mistyped
    # year): the change counts from the recorded day, and the answer says that day.
    story = Story(published={"paper": published})
    story.report("c1", kind="incumbency", recorded="2026-12-04")
    story.report("c2", kind="departure", modality="expected", recorded="2026-12-04")
    assert story.holders("2026-12-03") == []
    state = story.state("2026-12-04")
    recorded = {
        "date": "2026-12-04",
        "qualifier": "on",
        "text": None,
        "basis": "recorded",
        "source": "paper",
    }
    assert holder_since(state) == recorded
    assert state["pending"][0]["reported"] == recorded
    assert story.claims["c1"].effect_date() == recorded
    assert [t["start"] for t in story.tenures()] == [recorded]


def holder_since(state: dict[str, Any]) -> Any:
    return state["holders"][0]["since"]


@pytest.mark.parametrize("effective", ["9999-12-31", "9999-12", "9999"])
def test_given_a_change_after_the_last_representable_day_then_it_never_takes_effect_before_it(
    effective: str,
) -> None:
    story = Story().report("c1", effective=effective, qualifier="after")
    assert story.holders("2025-06-10") == []
    assert story.holders("9999-12-30") == []
    assert counts_from({"date": effective, "qualifier": "after"}) == day("9999-12-31")


def test_counts_from_reads_every_precision() -> None:
    assert counts_from(None) is None
    assert counts_from({"date": None, "text": "soon"}) is None
    assert counts_from({"date": "2025-05-29"}) == day("2025-05-29")
    assert counts_from({"date": "2025-02", "qualifier": "about"}) == day("2025-02-28")
    assert counts_from({"date": "2025", "qualifier": "after"}) == day("2026-01-01")
    assert counts_from({"date": "2025", "qualifier": "before"}) == day("2024-12-31")


# --- the two time axes -------------------------------------------------------------------------


def test_given_claims_known_at_different_times_then_each_time_gives_its_own_answer() -> None:
    # given: an appointment, later known to be wrong about the person
    story = Story().report("c1", effective="2025-06-01")
    before = story.state("2025-06-05")
    story.correct("c1", person="bob")
    after = story.state("2025-06-05")
    # then: the state as known before the correction still names ann, afterwards bob
    assert [h["person"] for h in before["holders"]] == ["ann"]
    assert [h["person"] for h in after["holders"]] == ["bob"]


# --- later steps over earlier ones ---------------------------------------------------------------


def test_given_a_dated_confirmation_when_the_date_is_corrected_then_the_correction_counts() -> None:
    # given an expected appointment confirmed for 15 June
    story = (
        Story(published={"paper": "2025-05-20", "release": "2025-06-20"})
        .report("c1", modality="expected", effective="2025-06-01")
        .confirm("c1", source="release", effective="2025-06-15")
    )
    assert story.holders("2025-07-01") == [("ann", "permanent")]
    # when the date is corrected afterwards
    story.correct("c1", effective={"date": "2025-08-01", "qualifier": "on"})
    # then the correction, the newer word, decides: vacant in July, held from August
    assert story.holders("2025-07-01") == []
    state = story.state("2025-08-01")
    assert state["holders"][0]["since"]["date"] == "2025-08-01"
    assert state["holders"][0]["status"] == "confirmed"


def test_given_claims_disputing_each_other_then_one_conflict_names_both_persons() -> None:
    # given two incumbents, each claim disputing the other, the second dispute the newer
    story = (
        Story()
        .report("zz", kind="incumbency", person="xavier", capacity="acting")
        .report("aa", kind="incumbency", person="yolanda")
        .dispute("aa", "zz", reason="first reason")
        .dispute("zz", "aa", reason="second, newer reason")
    )
    # then they are one conflict, with both persons and the newest reason
    (conflict,) = story.state("2025-06-30")["conflicts"]
    assert sorted(conflict["claims"]) == ["aa", "zz"]
    assert sorted(conflict["persons"]) == ["xavier", "yolanda"]
    assert conflict["reason"] == "second, newer reason"


def test_given_a_disputed_claim_when_its_rival_is_retracted_then_only_it_is_named() -> None:
    story = (
        Story()
        .report("zz", kind="incumbency", person="xavier")
        .report("aa", kind="incumbency", person="yolanda")
        .dispute("aa", "zz", reason="names another holder")
        .retract("zz")
    )
    (conflict,) = story.state("2025-06-30")["conflicts"]
    assert (conflict["claims"], conflict["persons"]) == (["aa"], ["yolanda"])


def test_given_a_departure_in_another_capacity_then_the_tenure_keeps_its_appointment_s() -> None:
    # given a permanent appointment, then a departure reported as acting
    story = (
        Story()
        .report("c1", effective="2025-03-01")
        .report("c2", kind="departure", capacity="acting", effective="2025-06-01")
    )
    # then the tenure is the permanent one the appointment opened
    (tenure,) = story.tenures()
    assert (tenure["capacity"], tenure["ended_by"]) == ("permanent", "c2")


def test_given_only_a_departure_s_capacity_then_it_names_the_tenure() -> None:
    # given an incumbency of unknown capacity ended by a departure as acting
    story = (
        Story()
        .report("c1", kind="incumbency", capacity="unspecified", effective="2025-03-01")
        .report("c2", kind="departure", capacity="acting", effective="2025-06-01")
    )
    (tenure,) = story.tenures()
    assert tenure["capacity"] == "acting"


# --- report order never decides -----------------------------------------------------------------


def _every_order(*reports: tuple[str, dict[str, Any]]) -> list[Story]:
    stories = []
    for order in itertools.permutations(reports):
        story = Story(published={"paper": "2025-05-20", "wire": "2025-05-21"})
        for claim, fields in order:
            story.report(claim, **fields)
        stories.append(story)
    return stories


def _answers(story: Story, days: tuple[str, ...]) -> Any:
    tenures = [
        (t["person"], t["capacity"], t["start"], t["end"], t["cause"]) for t in story.tenures()
    ]
    states = [(story.holders(on), story.state(on)["vacancy"]) for on in days]
    return tenures, states


@pytest.mark.parametrize(
    "reports",
    [
        # acting "in March" and permanent "on 31 March": both count from the 31st
        (
            ("a", {"capacity": "acting", "effective": "2025-03"}),
            ("p", {"capacity": "permanent", "effective": "2025-03-31"}),
        ),
        # the same day exactly
        (
            ("a", {"capacity": "acting", "effective": "2025-03-31"}),
            ("p", {"capacity": "permanent", "effective": "2025-03-31"}),
        ),
        (
            ("a", {"kind": "incumbency", "capacity": "acting", "effective": "2025-03-31"}),
            ("p", {"kind": "incumbency", "capacity": "permanent", "effective": "2025-03"}),
        ),
        (
            ("x", {"kind": "departure", "effective": "2025-03-10", "cause": "unknown"}),
            ("y", {"kind": "departure", "effective": "2025-03", "cause": "retirement"}),
            ("z", {"kind": "departure", "effective": "2025-03-10", "source": "wire"}),
        ),
    ],
    ids=["vaguer-acting", "same-day", "incumbencies", "departures"],
)
def test_given_changes_counting_from_one_day_then_the_order_of_reports_does_not_matter(
    reports: tuple[tuple[str, dict[str, Any]], ...],
) -> None:
    days = ("2025-03-30", "2025-03-31", "2025-06-01")
    first, *others = [_answers(story, days) for story in _every_order(*reports)]
    for other in others:
        assert other == first


def test_given_an_acting_role_and_a_permanent_one_from_one_day_then_acting_came_first() -> None:
    (story, _) = _every_order(
        ("a", {"capacity": "acting", "effective": "2025-03"}),
        ("p", {"capacity": "permanent", "effective": "2025-03-31"}),
    )
    assert story.holders("2025-06-01") == [("ann", "permanent")]


def test_given_one_appointment_reported_unspecified_and_acting_then_one_acting_tenure() -> None:
    for story in _every_order(
        ("x", {"capacity": "unspecified", "effective": "2025-03-10"}),
        ("y", {"capacity": "acting", "effective": "2025-03", "source": "wire"}),
    ):
        (tenure,) = story.tenures()
        assert (tenure["capacity"], tenure["end"]) == ("acting", None)


def test_given_a_departure_reported_again_without_a_date_then_it_ends_one_tenure() -> None:
    story = (
        Story()
        .report("x", kind="departure", effective="2025-03-10", cause="retirement")
        .report("y", kind="departure", cause="retirement")
    )
    (tenure,) = story.tenures()
    assert (tenure["end"]["date"], tenure["ended_by"]) == ("2025-03-10", "x")


def test_given_a_departure_then_an_undated_incumbency_does_not_reopen_the_tenure() -> None:
    story = (
        Story()
        .report("a", effective="2025-01-05")
        .report("d", kind="departure", effective="2025-05-01", cause="retirement")
        .report("i", kind="incumbency", capacity="unspecified")
    )
    assert story.holders("2025-06-01") == []
    (tenure,) = story.tenures()
    assert [claim["claim"] for claim in tenure["evidence"]] == ["a", "d", "i"]


def test_given_a_departure_reported_again_then_the_exact_day_and_a_known_cause_are_shown() -> None:
    story = (
        Story(published={"paper": "2025-05-20", "wire": "2025-05-21"})
        .report("c1", kind="incumbency", effective="2024-01-01")
        .report("c2", kind="departure", effective="2025-03", cause="unknown")
        .report("c3", kind="departure", effective="2025-03-31", cause="retirement", source="wire")
    )
    (tenure,) = story.tenures()
    assert (tenure["end"]["date"], tenure["cause"]) == ("2025-03-31", "retirement")


def test_given_a_disputed_holding_then_the_conflict_lasts_while_it_bears_on_the_state() -> None:
    # given two reports disagreeing on whether Hammer's role is acting, then his departure
    story = (
        Story()
        .report("caption", kind="incumbency", person="hammer", capacity="acting")
        .report("body", kind="incumbency", person="hammer", capacity="unspecified")
        .dispute("caption", "body", reason="The caption calls him acting")
        .report("gordon", person="gordon", capacity="acting", effective="2025-06-15")
        .report("out", kind="departure", person="hammer", effective="2025-06-15")
    )
    # then it is a conflict while he holds the post, and not once his tenure is over
    assert [c["claims"] for c in story.state("2025-06-14")["conflicts"]] == [["caption", "body"]]
    assert story.state("2025-06-16")["conflicts"] == []
    assert story.holders("2025-06-16") == [("gordon", "acting")]
    # and a dispute of how it ended counts while it is about who holds the post now
    story.dispute("out", reason="He is still there, says ICE")
    assert story.state("2025-06-16")["conflicts"] == []
    story.dispute("out", "gordon", reason="Nobody replaced him, says ICE")
    assert [c["claims"] for c in story.state("2025-06-16")["conflicts"]] == [["out", "gordon"]]


def test_given_two_dates_disputed_for_one_end_then_the_confirmed_one_counts() -> None:
    # given a term reported ended on 31 May, disputed by a report that it ends on 30 June
    story = (
        Story(published={"paper": "2025-01-05", "wire": "2025-06-03"})
        .report("held", kind="incumbency", effective="2025-01-02")
        .report("ended", kind="departure", effective="2025-05-31", cause="term_end")
        .report(
            "ends",
            kind="departure",
            modality="announced",
            effective="2025-06-30",
            cause="term_end",
            source="wire",
        )
        .dispute("ended", "ends", reason="Her term runs until 30 June")
    )
    # while neither is confirmed, the report that it happened counts, and the rival waits
    assert story.holders("2025-06-15") == []
    assert story.pending("2025-06-15") == ["ends"]
    # once the later date is confirmed, the earlier gives way: one tenure, held until then
    story.confirm("ends", effective="2025-06-30")
    assert story.holders("2025-06-15") == [("ann", "permanent")]
    assert story.state("2025-06-15")["conflicts"] == []
    (tenure,) = story.tenures()
    assert (tenure["end"]["date"], tenure["ended_by"]) == ("2025-06-30", "ends")
    assert story.holders("2025-07-01") == []


def test_given_a_disputed_end_then_the_conflict_lasts_until_someone_takes_up_the_post() -> None:
    story = (
        Story()
        .report("held", kind="incumbency", effective="2025-01-10")
        .report("ended", kind="departure", effective="2025-05-31", cause="term_end")
        .dispute("ended", reason="She is still in office, says the agency")
        .report("next", person="bob", effective="2025-07-15")
    )
    assert [c["claims"] for c in story.state("2025-06-15")["conflicts"]] == [["ended"]]
    assert story.state("2025-08-01")["conflicts"] == []
    assert story.holders("2025-08-01") == [("bob", "permanent")]


def test_given_claims_disputing_each_other_in_a_chain_then_they_are_one_conflict() -> None:
    story = (
        Story()
        .report("a", kind="incumbency", person="ann")
        .report("b", kind="incumbency", person="bob")
        .report("c", kind="incumbency", person="cyd")
        .dispute("a", "b", reason="older")
        .dispute("b", "a", "c", reason="newest")
    )
    (conflict,) = _disputes(story)
    assert sorted(conflict["claims"]) == ["a", "b", "c"]
    assert sorted(conflict["persons"]) == ["ann", "bob", "cyd"]
    assert conflict["reason"] == "newest"
    cycle = (
        Story()
        .report("a", kind="incumbency", person="ann")
        .report("b", kind="incumbency", person="bob")
        .report("c", kind="incumbency", person="cyd")
        .dispute("a", "b")
        .dispute("b", "c")
        .dispute("c", "a")
    )
    (conflict,) = _disputes(cycle)
    assert sorted(conflict["claims"]) == ["a", "b", "c"]


def _disputes(story: Story) -> list[dict[str, Any]]:
    return [c for c in story.state("2025-06-30")["conflicts"] if c["kind"] == "disputed"]


_DATES = st.sampled_from(
    [None, "2025-03", "2025-03-10", "2025-03-31", "2025", "2025-04-02", "2025-02"]
)
_REPORTS = st.lists(
    st.fixed_dictionaries(
        {
            "kind": st.sampled_from(["appointment", "departure", "incumbency"]),
            "person": st.sampled_from(["ann", "bob"]),
            "capacity": st.sampled_from(["acting", "interim", "permanent", "unspecified"]),
            "effective": _DATES,
            "qualifier": st.sampled_from(["on", "about", "before", "after"]),
            "source": st.sampled_from(["paper", "wire"]),
        }
    ),
    min_size=2,
    max_size=4,
)


@settings(max_examples=150, deadline=None)
@given(reports=_REPORTS, shuffle=st.randoms(use_true_random=False))
def test_property_the_order_of_reports_never_decides(
    reports: list[dict[str, Any]], shuffle: Any
) -> None:
    claims = [(f"c{index}", fields) for index, fields in enumerate(reports)]
    for claim, fields in claims:
        if fields["kind"] == "departure":
            fields["cause"] = "retirement" if claim.endswith(("0", "2")) else "resignation"
    shuffled = list(claims)
    shuffle.shuffle(shuffled)
    answers = []
    for order in (claims, shuffled):
        story = Story(published={"paper": "2025-05-20", "wire": "2025"})
        for claim, fields in order:
            story.report(claim, **fields)
        states = [story.state(on) for on in ("2025-03-15", "2025-03-31", "2025-06-01")]
        for state in states:
            state["pending"].sort(key=lambda item: item["claim"])
        answers.append((story.tenures(), states))
    assert answers[0] == answers[1]


# --- rival departures, ends already known and disputes that bear on the state ---------------


def _conflicts(story: Story, on: str) -> list[list[str]]:
    return [conflict["claims"] for conflict in story.state(on)["conflicts"]]


def test_given_a_departure_after_a_return_then_it_is_no_rival_of_the_earlier_end() -> None:
    story = (
        Story(published={"paper": "2025-05-20", "wire": "2025-06-20"})
        .report("a", effective="2023-01-05")
        .report("d1", kind="departure", effective="2023-06-01")
        .confirm("d1", effective="2023-06-01")
        .report("back", effective="2024-01-10")
        .report("d2", kind="departure", effective="2025-05-01", source="wire")
        .dispute("d2", "d1", reason="conflicts with her 2023 departure")
    )
    assert story.holders("2025-06-25") == []
    assert _conflicts(story, "2025-06-25") == [["d2", "d1"]]


def test_given_rival_departures_then_a_later_dispute_or_a_chain_keeps_them_one_end() -> None:
    story = (
        Story(published={"paper": "2025-01-05", "wire": "2025-06-03", "gaz": "2025-06-04"})
        .report("held", kind="incumbency", effective="2025-01-02")
        .report("x-a", kind="departure", effective="2025-05-15")
        .report("x-b", kind="departure", effective="2025-05-31", source="wire")
        .report("x-c", kind="departure", modality="announced", effective="2025-06-30", source="gaz")
        .dispute("x-a", "x-b", reason="not 15 May")
        .dispute("x-b", "x-c", reason="not 31 May")
        .confirm("x-c", effective="2025-06-30")
        .dispute("x-a", reason="The agency also says she did not leave in May")
    )
    assert story.holders("2025-06-15") == [("ann", "permanent")]
    assert len(story.tenures()) == 1
    assert story.pending("2025-06-15") == ["x-c"]


def test_given_rival_departures_not_confirmed_then_they_end_one_tenure_disputed() -> None:
    # given two reports of when she left, one disputing the other, neither confirmed
    story = (
        Story(published={"paper": "2025-06-05", "wire": "2025-06-05"})
        .report("held", kind="incumbency", effective="2025-01-02")
        .report("x-a", kind="departure", effective="2025-05-15", cause="retirement")
        .report("x-b", kind="departure", effective="2025-05-31", source="wire", cause="resignation")
        .dispute("x-b", "x-a", reason="She left on 31 May, not 15 May")
    )
    # then her history is one tenure, ending on the earlier day, with both reports as its
    # evidence: not a second tenure of which only the end is known
    (tenure,) = story.tenures()
    assert tenure["start"]["date"] == "2025-01-02"
    assert (tenure["end"]["date"], tenure["ended_by"], tenure["cause"]) == (
        "2025-05-15",
        "x-a",
        "retirement",
    )
    assert tenure["status"] == "disputed"
    assert [claim["claim"] for claim in tenure["evidence"]] == ["held", "x-a", "x-b"]
    # and the state after both dates names nobody, with the disagreement as a conflict
    assert story.holders("2025-06-10") == []
    assert _conflicts(story, "2025-06-10") == [["x-b", "x-a"]]
    # once the later one is confirmed, it ends the tenure instead, and the one that gave way
    # is still listed as a report of that end (it no longer makes the tenure disputed)
    story.confirm("x-b", effective="2025-05-31")
    (tenure,) = story.tenures()
    assert (tenure["end"]["date"], tenure["ended_by"]) == ("2025-05-31", "x-b")
    assert [claim["claim"] for claim in tenure["evidence"]] == ["held", "x-b", "x-a"]
    assert tenure["status"] == "confirmed"


def test_given_a_holding_dated_vaguely_between_rival_departures_then_it_is_no_return() -> None:
    # given a holding "about May" (counting from 31 May, but it may mean any day of May) and two
    # reports of when she left, 30 May and 6 June, one disputing the other
    story = (
        Story(published={"paper": "2025-06-01", "wire": "2025-06-07"})
        .report("held", kind="incumbency", effective="2025-05", qualifier="about")
        .report("x-a", kind="departure", effective="2025-05-30", cause="retirement")
        .report("x-b", kind="departure", effective="2025-06-06", source="wire")
        .dispute("x-b", "x-a", reason="She left on 6 June, not 30 May")
    )
    # then the holding is not certainly after the first departure: one end reported twice,
    # one disputed tenure ending on the earlier day, not a second tenure whose start is unknown
    (tenure,) = story.tenures()
    assert (tenure["end"]["date"], tenure["ended_by"], tenure["status"]) == (
        "2025-05-30",
        "x-a",
        "disputed",
    )
    # and once the later one is confirmed, she held the post until then
    story.confirm("x-b", effective="2025-06-06")
    (tenure,) = story.tenures()
    assert (tenure["end"]["date"], tenure["ended_by"]) == ("2025-06-06", "x-b")
    assert story.holders("2025-06-03") == [("ann", "permanent")]
    assert story.holders("2025-06-07") == []


def test_given_a_return_certainly_between_rival_departures_then_they_are_two_ends() -> None:
    story = (
        Story(published={"paper": "2025-06-01", "wire": "2025-06-20"})
        .report("held", kind="incumbency", effective="2025-01-02")
        .report("x-a", kind="departure", effective="2025-03-01")
        .report("back", effective="2025-04", qualifier="about")
        .report("x-b", kind="departure", effective="2025-06-06", source="wire")
        .dispute("x-b", "x-a", reason="She left in June, not in March")
    )
    assert len(story.tenures()) == 2
    assert story.holders("2025-05-01") == [("ann", "permanent")]


def test_given_the_earlier_end_confirmed_then_the_rival_is_no_longer_pending() -> None:
    story = (
        Story(published={"paper": "2025-01-05", "wire": "2025-06-03"})
        .report("held", kind="incumbency", effective="2025-01-02")
        .report("ended", kind="departure", effective="2025-05-31")
        .report(
            "ends", kind="departure", modality="announced", effective="2025-06-30", source="wire"
        )
        .dispute("ends", "ended", reason="Her term already ended on 31 May")
        .confirm("ended")
    )
    assert story.pending("2025-08-01") == []


def test_given_a_return_still_to_come_then_a_departure_after_it_stays_pending() -> None:
    story = (
        Story(published={"paper": "2025-05-20", "wire": "2025-06-20"})
        .report("a", effective="2024-01-05")
        .report("d", kind="departure", effective="2025-03-01", cause="retirement")
        .report("back", effective="2025-07-01", source="wire")
        .confirm("back", effective="2025-07-01")
        .report("again", kind="departure", modality="announced", effective="2025", source="wire")
    )
    assert story.pending("2025-06-25") == ["again", "back"]


def test_given_a_dispute_of_an_end_then_it_lasts_until_the_post_moves_on() -> None:
    story = (
        Story(published={"paper": "2025-05-20", "wire": "2025-06-03"})
        .report("held", kind="incumbency", effective="2025-01-10")
        .report("ended", kind="departure", effective="2025-05-31")
        .report("also", kind="departure", effective="2025-05", source="wire")
        .dispute("also", reason="The agency denies she left")
    )
    # another report of the end, disputed while nobody holds the post: it still bears
    assert story.state("2025-06-15")["vacancy"] == "vacant"
    assert _conflicts(story, "2025-06-15") == [["also"]]
    # once someone takes the post up, even from the day it ended, and after they leave
    story.report("next", person="bob", effective="2025-05-31")
    story.report("bob-out", kind="departure", person="bob", effective="2025-09-01")
    assert _conflicts(story, "2025-08-01") == []
    assert _conflicts(story, "2025-09-02") == []
