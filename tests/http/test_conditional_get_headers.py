"""Conditional GET from the request's headers alone: which If-Modified-Since values are one
HTTP-date (RFC 9110 13.1.3), what a 304 repeats, and when Last-Modified may be sent."""

from __future__ import annotations

import datetime as dt

import pytest
from starlette.requests import Request

from leaderlog.feeds import FULL_ARCHIVE_CACHE, SUBSCRIPTION_CACHE
from leaderlog.feeds._service import Validators
from leaderlog.http._conditional import caching_headers, is_not_modified, not_modified

# A Sunday, a quarter of a second into 12:00:00 UTC.
CHANGED = dt.datetime(2025, 6, 1, 12, 0, 0, 250_000, tzinfo=dt.UTC)
MODIFIED = "Sun, 01 Jun 2025 12:00:00 GMT"
VALIDATORS = Validators(7, 'W/"7-atom"', CHANGED, SUBSCRIPTION_CACHE)


def _request(*headers: tuple[str, str]) -> Request:
    raw = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]
    return Request({"type": "http", "method": "GET", "headers": raw})


@pytest.mark.parametrize(
    "value",
    [
        MODIFIED,  # IMF-fixdate
        "Sunday, 01-Jun-25 12:00:00 GMT",  # RFC 850
        "Sun Jun  1 12:00:00 2025",  # asctime
    ],
)
def test_each_http_date_form_of_the_copy_s_date_is_current(value: str) -> None:
    # given a document last changed within the second the date names
    # when a reader sends that date in any of the three HTTP-date forms
    # then its copy is current (so the refusals below are of the form, not of the date)
    assert is_not_modified(_request(("If-Modified-Since", value)), VALIDATORS)


@pytest.mark.parametrize(
    "value",
    [
        "Sun, 01 Jun 2025, 12:00:00 GMT",  # a second comma
        "Sun, 01 Jun 2025 12:00:00 GMT, GMT",
        "Su, 01 Jun 2025 12:00:00 GMT",  # a day name cut below three letters
        "S, 01 Jun 2025 12:00:00 GMT",
    ],
)
def test_an_if_modified_since_that_is_not_one_http_date_is_ignored(value: str) -> None:
    # given a document last changed within the second the value's date names
    # when a reader sends a value Python's parser would read as that date, but which is no
    # HTTP-date
    # then it is ignored (RFC 9110 13.1.3): the document is sent, not a 304
    assert not is_not_modified(_request(("If-Modified-Since", value)), VALIDATORS)


@pytest.mark.parametrize(
    "value",
    [
        "Sun, 01 Jun 99999999999999999999 12:00:00 GMT",
        "Sun Jun  1 12:00:00 99999999999999999999",
        "Sun, 01 Jun 2025 12:00:99999999999999999999 GMT",
    ],
)
def test_an_if_modified_since_of_more_digits_than_a_date_holds_is_ignored(value: str) -> None:
    # given a date whose year or second has more digits than Python's C long holds
    # when a reader sends it, then it is ignored like any other value that is no HTTP-date
    # (the email parser raises OverflowError on it: the feed was answered 500)
    assert not is_not_modified(_request(("If-Modified-Since", value)), VALIDATORS)


def test_if_modified_since_sent_twice_is_ignored_though_each_line_is_current() -> None:
    # given two If-Modified-Since lines, each the document's own date
    twice = _request(("If-Modified-Since", MODIFIED), ("If-Modified-Since", MODIFIED))
    # when the copy is judged, then two dates are not one HTTP-date: the document is sent
    assert not is_not_modified(twice, VALIDATORS)


def test_a_304_repeats_the_content_language() -> None:
    # given a document in French
    # when it is answered with a 304
    answer = not_modified(VALIDATORS, "fr")
    # then the 304 says its language, as the 200 did, so that a cache refreshes it whole
    headers = {name.decode(): value.decode() for name, value in answer.raw_headers}
    assert answer.status_code == 304 and answer.body == b""
    assert headers["content-language"] == "fr"
    assert headers["etag"] == 'W/"7-atom"'


def test_last_modified_waits_for_the_second_of_a_change_made_on_the_second_itself() -> None:
    # given a change made exactly as a second began (no fraction of a second)
    changed = dt.datetime(2025, 6, 1, 12, 0, 0, tzinfo=dt.UTC)
    validators = Validators(7, 'W/"7-atom"', changed, SUBSCRIPTION_CACHE)
    # when the document is sent later within that second, then it has no Last-Modified:
    # another change in the same second would share its date
    during = caching_headers(validators, "en", now=changed + dt.timedelta(milliseconds=500))
    assert "Last-Modified" not in during
    # and once the second is over it has one
    after = caching_headers(validators, "en", now=changed + dt.timedelta(seconds=1))
    assert after["Last-Modified"] == MODIFIED


def test_a_full_archive_page_dated_ahead_of_the_clock_waits_for_its_date() -> None:
    # given a full archive page (it never changes again) whose last change was stamped ahead
    # of the clock, as after a burst of more than a thousand changes a second
    validators = Validators(7, 'W/"7-atom"', CHANGED, FULL_ARCHIVE_CACHE)
    # when it is sent before that date, then it has no Last-Modified (never a date to come)
    before = caching_headers(validators, "en", now=CHANGED - dt.timedelta(seconds=5))
    assert "Last-Modified" not in before
    # and from that moment on it has one, at once, as no other change can share its second
    after = caching_headers(validators, "en", now=CHANGED)
    assert after["Last-Modified"] == MODIFIED


# A log moved with times in the first century (an export dated with Go's zero time, say):
# five seconds into 1 January of the year 1, a Monday, as 1 January 2001 is.
FIRST_CENTURY = Validators(
    8, 'W/"8-atom"', dt.datetime(1, 1, 1, 0, 0, 5, tzinfo=dt.UTC), SUBSCRIPTION_CACHE
)


@pytest.mark.parametrize(
    "value",
    [
        "Mon, 01 Jan 0001 00:00:00 GMT",  # IMF-fixdate, as this server sent it
        "Mon Jan  1 00:00:00 0001",  # asctime
    ],
)
def test_a_four_digit_year_below_100_is_that_year_not_a_two_digit_one(value: str) -> None:
    # given a document changed five seconds after the date of the reader's copy, in the year 1
    # when the reader sends its copy's date, written with four digits
    # then the copy is not current (the year is not read as 2001)
    assert not is_not_modified(_request(("If-Modified-Since", value)), FIRST_CENTURY)


def test_the_year_0_is_no_http_date() -> None:
    # given a document last changed in the year 1
    # when a reader sends a date in the year 0, which no calendar day has
    # then it is ignored rather than read as the year 2000
    year_zero = _request(("If-Modified-Since", "Sat, 01 Jan 0000 00:00:00 GMT"))
    assert not is_not_modified(year_zero, FIRST_CENTURY)


def test_a_four_digit_year_below_100_still_tells_a_current_copy() -> None:
    # given a document last changed in the year 1
    # when the reader sends the date of that very second
    # then its copy is current
    current = _request(("If-Modified-Since", "Mon, 01 Jan 0001 00:00:05 GMT"))
    assert is_not_modified(current, FIRST_CENTURY)
