"""Reading RFC 3339 times: the one shape accepted wherever a time comes from outside."""

from __future__ import annotations

import datetime as dt
import re

__all__ = ["AFTER_THE_LAST_TIME", "NOT_A_DAY_TIME", "NOT_A_TIME", "NO_OFFSET", "read_rfc3339"]

# RFC 3339 section 5.6 (datetime.fromisoformat alone also takes week dates, basic format and
# times without seconds). A leap second is read as its second's last microsecond. "\Z", not
# "$", which would let a final newline through.
_RFC3339 = re.compile(
    r"^(?P<date>\d{4}-\d{2}-\d{2})[Tt ](?P<clock>\d{2}:\d{2}):(?P<second>\d{2})"
    r"(?:\.(?P<fraction>\d+))?(?P<offset>[Zz]|[+-]\d{2}:\d{2})\Z",
    re.ASCII,
)
# What a "+02:00" offset becomes in a URL query string that did not encode its "+".
_OFFSET_PLUS_AS_SPACE = re.compile(r" (\d{2}:\d{2})$", re.ASCII)

NO_OFFSET = "needs a UTC offset (e.g. Z or +02:00)"
NOT_A_TIME = "must be an RFC 3339 time such as 2025-05-29T14:00:00Z"
NOT_A_DAY_TIME = "is not a real time of a calendar day"
AFTER_THE_LAST_TIME = "is after the last time that can be recorded (9999-12-31T23:59:59.999999Z)"


def read_rfc3339(text: str, *, round_up: bool = False) -> dt.datetime:
    """The time ``text`` names, with its offset; ValueError says what is wrong with it.

    Digits beyond microseconds are dropped, or with ``round_up`` give the next microsecond
    (the first recorded time not before the one given).
    """
    found = _RFC3339.match(text)
    if found is None:
        if _RFC3339.match(f"{text}Z"):
            raise ValueError(NO_OFFSET)
        hint = ""
        if _RFC3339.match(_OFFSET_PLUS_AS_SPACE.sub(r"+\1", text)):
            hint = " (in a URL, a '+' must be written %2B: a bare '+' reads as a space)"
        raise ValueError(f"{NOT_A_TIME}{hint}")
    second = found["second"]
    leap = second == "60"
    digits = found["fraction"] or "0"
    fraction = "999999" if leap else digits[:6].ljust(6, "0")
    offset = found["offset"].upper().replace("Z", "+00:00")
    normal = f"{found['date']}T{found['clock']}:{'59' if leap else second}.{fraction}{offset}"
    try:
        # fromisoformat takes an offset's minutes up to 99 ("+00:99" as +01:39); RFC 3339's
        # time-minute ends at 59.
        if int(offset[-2:]) > 59:
            raise ValueError(NOT_A_DAY_TIME)
        moment = dt.datetime.fromisoformat(normal)
        # A leap second is only ever the last second of a UTC day (23:59:60Z, or the same
        # moment at another offset): one in any other minute names no time that was.
        if leap and moment.astimezone(dt.UTC).strftime("%H:%M") != "23:59":
            raise ValueError(NOT_A_DAY_TIME)
    except (ValueError, OverflowError):
        raise ValueError(NOT_A_DAY_TIME) from None
    # As a lower bound, a leap second comes after its day's last microsecond, and fractions
    # beyond microseconds after the microsecond they start in.
    if round_up and (leap or digits[6:].strip("0")):
        try:
            moment += dt.timedelta(microseconds=1)
        except OverflowError:
            raise ValueError(AFTER_THE_LAST_TIME) from None
    return moment
