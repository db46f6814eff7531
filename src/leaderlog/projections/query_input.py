"""Reading query parameters: dates, times, positions (their errors live in leaderlog.errors)."""

from __future__ import annotations

import datetime as dt
import re

from leaderlog.errors import InvalidQuery, UnknownEntity

__all__ = [
    "CONTROL_CHARACTERS",
    "InvalidQuery",
    "UnknownEntity",
    "check_names",
    "parse_day",
    "parse_known_at",
    "parse_time",
]

# ASCII digits only: \d would also take other scripts' digits (fullwidth U+FF15, say).
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$", re.ASCII)
_WHOLE_NUMBER = re.compile(r"^[+-]?\d+$", re.ASCII)
# RFC 3339 section 5.6, the only time shape accepted (datetime.fromisoformat alone also takes
# week dates, basic format and times without seconds). A leap second is read as its
# second's last microsecond; digits beyond microseconds are dropped.
_RFC3339 = re.compile(
    r"^(?P<date>\d{4}-\d{2}-\d{2})[Tt ](?P<clock>\d{2}:\d{2}):(?P<second>\d{2})"
    r"(?:\.(?P<fraction>\d+))?(?P<offset>[Zz]|[+-]\d{2}:\d{2})$",
    re.ASCII,
)

CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


# Slugs have at most 64 characters and names at most 300 (leaderlog.events): a longer value
# can match nothing, and would make the suggestions' LIKE patterns needlessly heavy.
MAX_NAME_LENGTH = 300


def check_names(**given: str | None) -> None:
    """Ids and filter values: not empty, and without control characters (which no stored
    id has, and which PostgreSQL refuses outright in the case of NUL)."""
    for name, value in given.items():
        if value is None:
            continue
        if not value.strip():
            raise InvalidQuery(f"{name} must not be empty")
        if CONTROL_CHARACTERS.search(value):
            raise InvalidQuery(f"{name} {value!r} contains a control character")
        if len(value) > MAX_NAME_LENGTH:
            raise InvalidQuery(
                f"{name} is {len(value)} characters long; no id or name is longer than "
                f"{MAX_NAME_LENGTH}"
            )


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
        moment = _rfc3339(text, what)
    if moment.tzinfo is None:
        raise InvalidQuery(f"{what} needs a UTC offset (e.g. Z or +02:00), got {value!r}")
    try:
        return moment.astimezone(dt.UTC)
    except OverflowError:
        raise InvalidQuery(f"{what} {value!r} is out of range once converted to UTC") from None


def _rfc3339(text: str, what: str) -> dt.datetime:
    found = _RFC3339.match(text)
    if found is None:
        if _RFC3339.match(f"{text}Z"):
            raise InvalidQuery(f"{what} needs a UTC offset (e.g. Z or +02:00), got {text!r}")
        raise InvalidQuery(
            f"{what} must be an RFC 3339 time such as 2025-05-29T14:00:00Z, got {text!r}"
        )
    second = found["second"]
    leap = second == "60"
    fraction = "999999" if leap else (found["fraction"] or "0")[:6].ljust(6, "0")
    offset = found["offset"].upper().replace("Z", "+00:00")
    normal = f"{found['date']}T{found['clock']}:{'59' if leap else second}.{fraction}{offset}"
    try:
        return dt.datetime.fromisoformat(normal)
    except ValueError:
        raise InvalidQuery(f"{what} {text!r} is not a real time of a calendar day") from None


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
