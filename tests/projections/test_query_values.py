"""The values a question takes, as the library reads them: known-at and time bounds given as
days, dates or times, and filters at the edges of what they may hold."""

from __future__ import annotations

import datetime as dt

import pytest

from leaderlog.errors import UnknownEntity
from leaderlog.log import EventLog
from leaderlog.projections import InvalidQuery
from leaderlog.projections.query_input import MAX_TIME_LENGTH, parse_known_at, parse_time
from tests.projections.logs import current

END_OF_JUNE_1 = dt.datetime(2025, 6, 1, 23, 59, 59, 999_999, tzinfo=dt.UTC)


@pytest.mark.parametrize("day", ["2025-06-01", dt.date(2025, 6, 1)])
def test_a_known_at_day_stands_for_the_end_of_that_day(day: str | dt.date) -> None:
    # given known-at as a day, written or as a date
    # when it is read, then it is that day's last microsecond in UTC: what was recorded
    # during the day is known at it
    assert parse_known_at(day) == END_OF_JUNE_1


def test_a_date_bounds_a_range_by_its_first_or_last_microsecond() -> None:
    # given a range's bounds as dates (as the library takes them)
    day = dt.date(2025, 6, 1)
    # then a lower bound is the day's first microsecond and an upper bound its last
    assert parse_time(day, "from", end_of_day=False) == dt.datetime(2025, 6, 1, tzinfo=dt.UTC)
    assert parse_time(day, "to", end_of_day=True) == END_OF_JUNE_1


def test_a_time_without_an_offset_given_as_a_datetime_is_refused() -> None:
    # given a naive datetime, which says nothing of where its clock was
    # when it bounds a range, then it is refused as a time written without an offset is
    with pytest.raises(InvalidQuery, match="UTC offset"):
        parse_time(dt.datetime(2025, 6, 1, 12), "from", end_of_day=False)
    with pytest.raises(InvalidQuery, match="UTC offset"):
        parse_known_at(dt.datetime(2025, 6, 1, 12))


def test_a_time_of_the_longest_length_taken_is_read() -> None:
    # given a time of exactly MAX_TIME_LENGTH characters (a long fraction of a second)
    text = "2025-06-01T12:00:00." + "1" * (MAX_TIME_LENGTH - 21) + "Z"
    assert len(text) == MAX_TIME_LENGTH
    # when it is read, then it is taken, the digits beyond microseconds dropped
    assert parse_time(text, "to", end_of_day=True) == dt.datetime(
        2025, 6, 1, 12, 0, 0, 111_111, tzinfo=dt.UTC
    )
    # and one character more is refused for its length
    with pytest.raises(InvalidQuery, match="characters long"):
        parse_time(text.replace("Z", "1Z"), "to", end_of_day=True)


@pytest.mark.parametrize("value", [True, False])
def test_a_truth_value_is_no_known_at_position(value: bool) -> None:
    # given True or False, which Python would also count as 1 or 0
    # when it is given as known-at, then it is refused rather than taken as a position
    with pytest.raises(InvalidQuery, match="known-at must be a position"):
        parse_known_at(value)


@pytest.mark.parametrize("value", ["yesterday", "T14:00:00Z", "-"])
def test_a_known_at_that_starts_as_neither_form_names_both(value: str) -> None:
    # given known-at text that begins as neither a position nor a time can
    # when it is read, then the refusal offers both forms it may take
    with pytest.raises(InvalidQuery, match=r"a log position \(such as 42\) or an RFC 3339 time"):
        parse_known_at(value)


async def test_an_id_of_the_longest_length_is_looked_up(seeded_log: EventLog) -> None:
    # given ids have at most 64 characters
    queries = await current(seeded_log)
    # when a filter names one of exactly 64, then it is looked up (and is unknown here),
    # not refused for its length
    with pytest.raises(UnknownEntity):
        await queries.history(person="a" * 64)


async def test_a_name_filter_of_the_longest_length_is_taken(seeded_log: EventLog) -> None:
    # given names have at most 300 characters
    queries = await current(seeded_log)
    # when an audit is filtered on a publisher of exactly 300, then it is looked up (and no
    # source has it), not refused for its length
    with pytest.raises(UnknownEntity, match="no source has the publisher"):
        await queries.audit(publisher="p" * 300)


async def test_a_tab_is_refused_in_an_id_but_taken_in_a_name_filter(seeded_log: EventLog) -> None:
    # given a tab, which no id holds but a publisher's name may
    queries = await current(seeded_log)
    # when an id filter holds one, then it is refused as a control character
    with pytest.raises(InvalidQuery, match="contains a control character"):
        await queries.state(org="ice\t")
    # when a name filter holds one, then it is looked up (no source has it here)
    with pytest.raises(UnknownEntity, match="no source has the publisher"):
        await queries.audit(publisher="Fox\tNews")


@pytest.mark.parametrize(("given", "whole"), [(" 22.0 ", 22), ("22.5", 22), ("0.", 0)])
def test_a_known_at_position_written_as_a_decimal_is_refused_naming_a_whole_number(
    given: str, whole: int
) -> None:
    # given a position written with a decimal point (spaces around it, as a whole number
    # may have), when it is read as a known-at, then it is named a whole number, not a time
    with pytest.raises(InvalidQuery) as refused:
        parse_known_at(given)
    assert str(refused.value) == (
        f"known-at position is a whole number, such as {whole}; got {given!r}"
    )
