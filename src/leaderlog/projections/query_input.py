"""Reading query parameters: dates, times, positions; and the errors queries raise."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence

from leaderlog.errors import ProjectionError

__all__ = ["InvalidQuery", "UnknownEntity", "parse_day", "parse_known_at", "parse_time"]

_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_WHOLE_NUMBER = re.compile(r"^[+-]?\d+$")


class UnknownEntity(ProjectionError):
    """The org, post, person or claim asked about does not exist (as known at that time).

    ``suggestions`` holds the ids of entities the asker may have meant, best first.
    """

    def __init__(self, message: str, suggestions: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.suggestions = tuple(suggestions)


class InvalidQuery(ProjectionError):
    """A date, time, position or filter cannot be understood."""


def parse_day(value: dt.date | str, what: str) -> dt.date:
    """A calendar day, given as a date or ``YYYY-MM-DD``."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    text = value.strip()
    if _DAY.match(text):
        try:
            return dt.date.fromisoformat(text)
        except ValueError:
            pass
    raise InvalidQuery(f"{what} must be a calendar day YYYY-MM-DD, got {value!r}")


def parse_time(value: str | dt.datetime, what: str, *, end_of_day: bool) -> dt.datetime:
    """An RFC 3339 time with an offset, or a day (its first or last microsecond, UTC)."""
    if isinstance(value, dt.datetime):
        moment = value
    else:
        text = value.strip()
        if _DAY.match(text):
            day = parse_day(text, what)
            clock = dt.time.max if end_of_day else dt.time.min
            return dt.datetime.combine(day, clock, tzinfo=dt.UTC)
        try:
            moment = dt.datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00"))
        except ValueError:
            raise InvalidQuery(
                f"{what} must be an RFC 3339 time such as 2025-05-29T14:00:00Z, got {value!r}"
            ) from None
    if moment.tzinfo is None:
        raise InvalidQuery(f"{what} needs a UTC offset (e.g. Z or +02:00), got {value!r}")
    return moment.astimezone(dt.UTC)


def parse_known_at(value: int | str | dt.datetime | None) -> int | dt.datetime | None:
    """A log position (an integer) or a recorded time (RFC 3339, or a day: its end, UTC)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidQuery(f"known-at must be a position or an RFC 3339 time, got {value!r}")
    if isinstance(value, str) and _WHOLE_NUMBER.match(value.strip()):
        value = int(value.strip())
    if isinstance(value, int):
        if value < 0:
            raise InvalidQuery(f"known-at position must be 0 or more, got {value}")
        return value
    return parse_time(value, "known-at", end_of_day=True)
