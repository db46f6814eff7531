"""Given/when/then tests of the day a claim version counts from (:mod:`.claim_versions`):
which date wins among the report's, a confirmation's, a correction's and the sources'."""

from __future__ import annotations

from tests.projections.story import Story


def test_given_an_announced_date_when_confirmed_for_another_day_then_the_confirmed_day_counts() -> (
    None
):
    # given a change announced for 1 July
    story = Story().report("c1", modality="announced", effective="2025-07-01")
    # when it is confirmed as taking effect on 15 June
    story.confirm("c1", effective="2025-06-15")
    # then it counts from the confirmation's own date, not the announced one
    assert story.holders("2025-06-14") == []
    assert story.holders("2025-06-15") == [("ann", "permanent")]
    assert story.claims["c1"].effect_date() == {
        "date": "2025-06-15",
        "qualifier": "on",
        "text": None,
        "basis": "confirmed",
    }


def test_given_a_source_published_on_the_day_its_claim_is_recorded_then_it_shows_as_published() -> (
    None
):
    # given a source published on 10 June, whose undated change the log records that same day
    story = Story(published={"paper": "2025-06-10"}).report("c1", recorded="2025-06-10")
    # then the change counts from the published date, shown as such (only a published date
    # beginning after the recorded day is shown as the recorded day)
    assert story.claims["c1"].effect_date() == {
        "date": "2025-06-10",
        "qualifier": "on",
        "text": None,
        "basis": "published",
        "source": "paper",
    }


def test_given_a_source_published_only_in_words_then_an_undated_change_counts_from_recording() -> (
    None
):
    # given a source published "spring 2025" (no date a calendar has)
    story = Story(published={})
    story.published["paper"] = {"date": None, "qualifier": "on", "text": "spring 2025"}
    # when it reports an undated change, recorded on 10 June
    story.report("c1", recorded="2025-06-10")
    # then the change counts from the day it was recorded, as for a source without a date
    assert story.holders("2025-06-09") == []
    assert story.holders("2025-06-10") == [("ann", "permanent")]
    assert story.claims["c1"].effect_date() == {
        "date": "2025-06-10",
        "qualifier": "on",
        "text": None,
        "basis": "recorded",
        "source": "paper",
    }


def test_given_an_undated_change_when_another_source_confirms_it_then_the_report_counts() -> None:
    # given an undated change from a paper out on 20 May
    story = Story(published={"paper": "2025-05-20", "wire": "2025-06-05"}).report("c1")
    # when a wire out on 5 June confirms it
    story.confirm("c1", source="wire")
    # then it still counts from the paper's date: it had happened by then
    assert story.holders("2025-05-20") == [("ann", "permanent")]
    assert story.claims["c1"].effect_date() == {
        "date": "2025-05-20",
        "qualifier": "on",
        "text": None,
        "basis": "published",
        "source": "paper",
    }


def test_given_an_announced_change_corrected_to_occurred_by_a_source_then_that_source_counts() -> (
    None
):
    # given an undated change announced by a paper out on 20 May
    published: dict[str, str | None] = {"paper": "2025-05-20", "wire": "2025-06-05"}
    story = Story(published=published).report("c1", modality="announced")
    # when a wire out on 5 June corrects it: it has happened
    story.correct("c1", source="wire", modality="occurred")
    # then it counts from the wire's date, as a confirmation by the wire would
    assert story.holders("2025-06-04") == []
    assert story.holders("2025-06-05") == [("ann", "permanent")]
    assert story.claims["c1"].effect_date() == {
        "date": "2025-06-05",
        "qualifier": "on",
        "text": None,
        "basis": "published",
        "source": "wire",
    }
    # while a correction that names no source keeps the report's date
    unsourced = Story(published=published).report("c1", modality="announced")
    unsourced.correct("c1", modality="occurred")
    assert unsourced.holders("2025-05-20") == [("ann", "permanent")]


def test_given_a_claim_confirmed_by_its_own_source_then_that_source_is_named_once() -> None:
    # given a claim reported by a paper
    story = Story(published={"paper": "2025-05-20", "wire": "2025-06-05"}).report("c1")
    # when the paper confirms it, then a wire confirms it twice
    story.confirm("c1").confirm("c1", source="wire").confirm("c1", source="wire")
    # then each source is named once, in the order it first spoke of the claim
    assert story.claims["c1"].sources == ["paper", "wire"]


def test_given_an_expected_change_confirmed_undated_by_another_source_then_it_names_that() -> None:
    # given an appointment a paper out on 20 May expected
    story = Story(published={"paper": "2025-05-20", "wire": "2025-06-05"})
    story.report("c1", modality="expected")
    # when a wire out on 5 June confirms it, giving no date
    story.confirm("c1", source="wire")
    # then it counts from the wire's date, and says it is the wire's, not the paper's
    assert story.holders("2025-06-04") == []
    assert story.holders("2025-06-05") == [("ann", "permanent")]
    assert story.state("2025-06-05")["holders"][0]["since"] == {
        "date": "2025-06-05",
        "qualifier": "on",
        "text": None,
        "basis": "published",
        "source": "wire",
    }
    assert story.claims["c1"].sources == ["paper", "wire"]


def test_a_confirmed_expected_change_corrected_to_occurred_counts_as_if_corrected_first() -> None:
    # given an undated change expected by a source out on 10 January, and a source out on
    # 20 March
    published = {"paper": "2025-01-10", "wire": "2025-03-20"}
    # when it is confirmed by the later source without a date, then corrected to occurred
    confirmed_first = Story(published=published).report("c1", modality="expected")
    confirmed_first.confirm("c1", source="wire").correct("c1", modality="occurred")
    # and, the other way round, corrected to occurred, then confirmed
    corrected_first = Story(published=published).report("c1", modality="expected")
    corrected_first.correct("c1", modality="occurred").confirm("c1", source="wire")
    # then both count from when the report's source was out, as an occurred change without
    # a date does, whichever came first
    for story in (confirmed_first, corrected_first):
        assert story.holders("2025-02-01") == [("ann", "permanent")]
        assert story.pending("2025-02-01") == []
        assert story.claims["c1"].effect_date() == {
            "date": "2025-01-10",
            "qualifier": "on",
            "text": None,
            "basis": "published",
            "source": "paper",
        }


def test_a_confirmed_change_corrected_to_expected_counts_as_if_corrected_first() -> None:
    # given an undated change reported as having happened by a source out on 10 January,
    # and a source out on 20 March
    published = {"paper": "2025-01-10", "wire": "2025-03-20"}
    # when the later source confirms it without a date, then a correction says the report
    # was of a change only expected
    confirmed_first = Story(published=published).report("c1")
    confirmed_first.confirm("c1", source="wire").correct("c1", modality="expected")
    # and, the other way round, corrected to expected, then confirmed
    corrected_first = Story(published=published).report("c1")
    corrected_first.correct("c1", modality="expected").confirm("c1", source="wire")
    # then both count from when the confirming source was out, as a change only expected
    # that a confirmation without a date makes take effect does: the report, of a change
    # still to come on 10 January, is no sign it had happened by then
    for story in (confirmed_first, corrected_first):
        assert story.holders("2025-02-01") == []
        assert story.pending("2025-02-01") == ["c1"]
        assert story.holders("2025-03-20") == [("ann", "permanent")]
        assert story.claims["c1"].effect_date() == {
            "date": "2025-03-20",
            "qualifier": "on",
            "text": None,
            "basis": "published",
            "source": "wire",
        }


def test_an_expected_change_confirmed_by_two_sources_counts_from_the_sooner_either_way() -> None:
    # given an undated change expected by a source out on 10 January, and two sources
    # out on 15 February and 20 March
    published = {"paper": "2025-01-10", "blog": "2025-02-15", "wire": "2025-03-20"}
    # when both later sources confirm it without a date, the later one recorded first
    later_first = Story(published=published).report("c1", modality="expected")
    later_first.confirm("c1", source="wire").confirm("c1", source="blog")
    # and, the other way round, the sooner one recorded first
    sooner_first = Story(published=published).report("c1", modality="expected")
    sooner_first.confirm("c1", source="blog").confirm("c1", source="wire")
    # then both count from when the sooner confirming source was out: it had happened by then
    for story in (later_first, sooner_first):
        assert story.holders("2025-02-14") == []
        assert story.holders("2025-02-15") == [("ann", "permanent")]
        assert story.pending("2025-02-15") == []
        assert story.claims["c1"].effect_date() == {
            "date": "2025-02-15",
            "qualifier": "on",
            "text": None,
            "basis": "published",
            "source": "blog",
        }


def test_of_confirmations_out_the_same_day_one_with_a_mistyped_future_date_is_not_preferred() -> (
    None
):
    # given an undated change expected, and two sources recorded on 10 June: "archive", whose
    # published date is a mistyped year (2099-06-10), and "blog", published on 10 June
    published = {"paper": "2025-01-10", "archive": "2099-06-10", "blog": "2025-06-10"}
    # when both confirm it without a date, in either order
    stories = []
    for order in (("archive", "blog"), ("blog", "archive")):
        story = Story(published=published).report("c1", modality="expected")
        for source in order:
            story.confirm("c1", source=source, recorded="2025-06-10")
        stories.append(story)
    # then it counts from the one with a published date (the mistyped one shows only the
    # day it was recorded), though "archive" comes first by id
    for story in stories:
        assert story.claims["c1"].effect_date() == {
            "date": "2025-06-10",
            "qualifier": "on",
            "text": None,
            "basis": "published",
            "source": "blog",
        }
