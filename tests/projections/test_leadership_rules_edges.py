"""Given/when/then tests of the leadership rules at their edges: changes on one day, rival
reports of one end, what counts as still to come, and the order holders and tenures are in."""

from __future__ import annotations

from tests.projections.story import Story


def test_given_a_reappointment_on_the_day_of_a_disputed_departure_then_it_is_no_return() -> None:
    # only a start certainly after the earlier departure splits rival departures
    # given Ann left on 1 March (disputed by a report of her leaving on 1 May), and an
    # appointment of hers dated 1 March, which the fold reads as the holding that ended
    story = (
        Story()
        .report("a0", effective="2025-01-10")
        .report("d1", kind="departure", effective="2025-03-01")
        .report("a1", effective="2025-03-01")
        .report("d2", kind="departure", effective="2025-05-01")
        .dispute("d1", "d2")
    )
    # then the two departures are rival reports of one end: one tenure, ended by the earlier
    (tenure,) = story.tenures()
    assert tenure["ended_by"] == "d1"
    assert [claim["claim"] for claim in tenure["evidence"]] == ["a0", "d1", "a1", "d2"]


def test_given_a_confirmed_departure_then_an_undated_rival_to_come_gives_way() -> None:
    # a departure without any date may still be a rival report of a known end
    # given Ann's departure on 1 March, confirmed, and an expected departure without a date
    # that disputes it
    story = (
        Story()
        .report("a", effective="2025-01-10")
        .report("d1", kind="departure", effective="2025-03-01")
        .confirm("d1")
        .report("d2", kind="departure", modality="expected")
        .dispute("d2", "d1")
    )
    # then the expected one is no change to come: it gave way to the confirmed end
    assert story.pending("2025-06-01") == []


def test_given_a_departure_and_a_new_role_on_one_day_then_the_departure_comes_first() -> None:
    # on one day, leaving before taking up, whatever the capacities
    story = (
        Story()
        .report("acting", capacity="acting", effective="2025-01-10")
        .report("left", kind="departure", capacity="unspecified", effective="2025-03-01")
        .report("permanent", capacity="permanent", effective="2025-03-01")
    )
    assert story.holders("2025-03-02") == [("ann", "permanent")]


def test_given_acting_and_permanent_appointments_on_one_day_then_acting_came_first() -> None:
    # on one day, acting before permanent, whatever the claim ids
    story = (
        Story()
        .report("z-acting", capacity="acting", effective="2025-03-01")
        .report("a-permanent", capacity="permanent", effective="2025-03-01")
    )
    assert story.holders("2025-03-02") == [("ann", "permanent")]
    assert [(t["capacity"], (t["end"] or {}).get("date")) for t in story.tenures()] == [
        ("acting", "2025-03-01"),
        ("permanent", None),
    ]


def test_given_two_changes_counting_from_one_day_then_the_vaguer_may_have_come_first() -> None:
    # on one day, the change that may have happened earliest is folded first
    # given a permanent appointment "in May" (counts from 31 May) and an acting one on 31 May
    story = (
        Story()
        .report("vague", capacity="permanent", effective="2025-05")
        .report("exact", capacity="acting", effective="2025-05-31")
    )
    # then the acting one came after the permanent one, so Ann is acting
    assert story.holders("2025-06-01") == [("ann", "acting")]


def test_given_a_rival_departure_after_the_person_holds_the_post_again_then_it_ends_that() -> None:
    # a rival report of an earlier end is its evidence only while the person is out
    # given Ann left on 1 March by a report that is disputed, an undated incumbency from a
    # source out on 1 April (so she held the post again), and a departure on 1 May linked to
    # the first by the dispute
    story = (
        Story(published={"paper": "2025-05-20", "memo": "2025-04-01"})
        .report("a", effective="2025-01-05")
        .report("d1", kind="departure", effective="2025-03-01")
        .report("i", kind="incumbency", capacity="unspecified", source="memo")
        .report("d2", kind="departure", effective="2025-05-01")
        .dispute("d1", "d2")
    )
    # then the later departure ends the holding the incumbency showed
    assert story.holders("2025-04-15") == [("ann", "unspecified")]
    assert story.holders("2025-06-01") == []


def test_given_a_tenure_known_from_its_end_then_a_vaguer_start_places_it_by_that_end() -> None:
    # a start folded after the end it belongs to counts from no later than that end
    # given Ann left on 1 March, an incumbency of hers "in March", and Bob appointed on 15 March
    story = (
        Story()
        .report("left", kind="departure", effective="2025-03-01")
        .report("held", kind="incumbency", effective="2025-03")
        .report("bob", person="bob", effective="2025-03-15")
    )
    # then Ann's tenure comes before Bob's in the history
    assert [tenure["person"] for tenure in story.tenures()] == ["ann", "bob"]


def test_given_a_start_that_may_mean_the_day_of_the_end_then_it_is_shown_as_the_start() -> None:
    # a start that may mean a day up to the end (its first day the end's day) is shown
    story = (
        Story()
        .report("left", kind="departure", effective="2025-03-01")
        .report("in", effective="2025-03")
    )
    (tenure,) = story.tenures()
    assert (tenure["start"]["date"], tenure["end"]["date"]) == ("2025-03", "2025-03-01")


def test_given_an_incumbency_in_another_capacity_then_it_does_not_start_a_new_tenure() -> None:
    # only an appointment in another specific capacity starts a new tenure
    story = (
        Story()
        .report("acting", capacity="acting", effective="2025-01-10")
        .report("now", kind="incumbency", capacity="permanent", effective="2025-03-01")
    )
    found = story.tenures()
    assert [(t["capacity"], t["start"]["date"], t["end"]) for t in found] == [
        ("permanent", "2025-01-10", None)
    ]


def test_given_an_unspecified_departure_while_holding_again_then_it_is_a_new_end() -> None:
    # "unspecified" names no capacity, so it never repeats an end while the person is back
    # given Ann left on 1 March, came back as permanent on 1 April, and left "before 1 May"
    story = (
        Story()
        .report("a1", capacity="unspecified", effective="2025-01-10")
        .report("d1", kind="departure", capacity="unspecified", effective="2025-03-01")
        .report("a2", capacity="permanent", effective="2025-04-01")
        .report(
            "d2",
            kind="departure",
            capacity="unspecified",
            effective="2025-05-01",
            qualifier="before",
        )
    )
    # then the last departure ends the second tenure
    assert story.holders("2025-06-01") == []
    assert [(t["ended_by"]) for t in story.tenures()] == ["d1", "d2"]


def test_given_an_undated_incumbency_out_on_the_day_of_a_disputed_departure_then_it_ended() -> None:
    # only a source out after the disputed departure's day says the person is back
    story = (
        Story(published={"paper": "2025-05-20", "memo": "2025-05-01"})
        .report("a", effective="2025-01-05")
        .report("d", kind="departure", effective="2025-05-01")
        .report("i", kind="incumbency", capacity="unspecified", source="memo")
        .dispute("d", "i")
    )
    assert story.holders("2025-06-01") == []
    (tenure,) = story.tenures()
    assert [claim["claim"] for claim in tenure["evidence"]] == ["a", "d", "i"]


def test_given_a_holding_from_the_first_day_a_vague_incumbency_may_mean_then_not_pending() -> None:
    # an incumbency that may have taken effect on D itself is a holding, not a change
    story = (
        Story()
        .report("a", effective="2025-01-10")
        .report("now", kind="incumbency", effective="2025-06")
    )
    assert story.pending("2025-06-01") == []


def test_given_a_tenure_starting_the_first_day_a_vague_incumbency_may_mean_then_not_pending() -> (
    None
):
    # a tenure that began on the incumbency's first possible day covers it
    story = (
        Story()
        .report("a", effective="2025-06-01")
        .report("now", kind="incumbency", effective="2025-06")
    )
    assert story.pending("2025-06-15") == []


def test_given_a_tenure_ending_the_first_day_a_vague_incumbency_may_mean_then_not_pending() -> None:
    # a tenure that ended on the incumbency's first possible day covers it
    story = (
        Story()
        .report("a", effective="2025-01-10")
        .report("d", kind="departure", effective="2025-06-01")
        .report("then", kind="incumbency", effective="2025-06")
    )
    assert story.pending("2025-06-15") == []


def test_given_the_person_holds_the_post_again_then_an_announced_departure_stays_pending() -> None:
    # a departure to come is the end already known only if its person is out
    story = (
        Story()
        .report("a1", effective="2025-01-10")
        .report("d1", kind="departure", effective="2025-03-01")
        .report("a2", effective="2025-04-01")
        .report("d2", kind="departure", modality="announced", effective="2025-03-01")
    )
    assert story.pending("2025-06-01") == ["d2"]


def test_given_several_ended_tenures_then_a_known_end_to_come_is_the_first_it_may_mean() -> None:
    # of several tenures that ended on a day a departure's date may mean, the first
    story = (
        Story()
        .report("a1", effective="2025-01-10")
        .report("d1", kind="departure", effective="2025-02-01")
        .report("a2", effective="2025-03-01")
        .report("d2", kind="departure", effective="2025-04-01")
        .report("x", kind="departure", modality="expected", effective="2025-01-20")
    )
    assert [[claim["claim"] for claim in t["evidence"]] for t in story.tenures()] == [
        ["a1", "d1", "x"],
        ["a2", "d2"],
    ]


def test_given_a_disputed_tenure_then_the_same_person_returning_keeps_the_conflict() -> None:
    # the post moves on only when someone else takes it up
    story = (
        Story()
        .report("caption", kind="incumbency", capacity="acting", effective="2025-01-10")
        .report("body", kind="incumbency", capacity="unspecified", effective="2025-01-10")
        .dispute("caption", "body", reason="The caption calls her acting")
        .report("left", kind="departure", effective="2025-03-01")
        .report("back", effective="2025-04-01")
    )
    conflicts = story.state("2025-06-01")["conflicts"]
    assert [(c["kind"], c["claims"]) for c in conflicts] == [("disputed", ["caption", "body"])]


def test_given_two_holders_then_they_are_listed_by_the_day_they_took_the_post() -> None:
    # holders in the order they started, not by name
    story = (
        Story()
        .report("b", person="bob", capacity="acting", effective="2025-01-10")
        .report("a", person="ann", effective="2025-03-01")
    )
    assert story.holders("2025-06-01") == [("bob", "acting"), ("ann", "permanent")]
