"""Reading query parameters: dates, times, positions (their errors live in leaderlog.errors)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from leaderlog._rfc3339 import NO_OFFSET, NOT_A_DAY_TIME, NOT_A_TIME, read_rfc3339
from leaderlog.errors import InvalidQuery

__all__ = [
    "CONTROL_CHARACTERS",
    "NOT_UTF8_TEXT",
    "WHOLE_NUMBER",
    "Refusals",
    "check_name_filters",
    "check_names",
    "check_utf8",
    "echoed",
    "parse_day",
    "parse_known_at",
    "parse_time",
]

# ASCII digits only: \d would also take other scripts' digits (fullwidth U+FF15, say).
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}\Z", re.ASCII)
# A whole number as the CLI and the HTTP API take one: digits 0-9 alone (a minus sign is left
# to the bounds, which say what is wrong with -1).
WHOLE_NUMBER = re.compile(r"^-?\d+\Z", re.ASCII)
# No position is written with a plus sign, and "+22" may be a time's offset typed alone:
# taking it as position 22 would answer a question the user may not have asked.
_PLUS_NUMBER = re.compile(r"^\+\d+\Z", re.ASCII)
# "22.0" is a position written as a decimal, not a time typed wrong: said as such, rather
# than with the RFC 3339 forms, which do not name positions.
_DECIMAL_NUMBER = re.compile(r"^\d+\.\d*\Z", re.ASCII)
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Names (a publisher's, say) may hold tab, line feed and carriage return: a filter on such a
# name takes them too.
_CONTROL_CHARACTERS_NOT_IN_NAMES = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# What Python makes of command-line bytes that are not UTF-8 (a name typed in Latin-1): no
# stored id or name holds one, and neither database can be sent one.
NOT_UTF8_TEXT = re.compile(r"[\ud800-\udfff]")


# Longer than any log position or RFC 3339 time needs (fractions of a second included): the
# CLI and the HTTP API refuse it alike, before reading it.
MAX_TIME_LENGTH = 64

# Ids (slugs) have at most 64 characters and names at most 300 (leaderlog.events): a longer
# value can match nothing, and would make the suggestions' LIKE patterns needlessly heavy.
MAX_ID_LENGTH = 64
MAX_NAME_LENGTH = 300

_Arguments = ParamSpec("_Arguments")
_Read = TypeVar("_Read")


class Refusals:
    """The refusals of a question's values, each checked on its own, so that one with
    several wrong values is told of them all at once (``?status=bogus&from=x``), not one at
    a time: :meth:`raise_any` raises the first, the others in its ``others``."""

    def __init__(self) -> None:
        self._found: list[InvalidQuery] = []

    def check(
        self,
        check: Callable[_Arguments, _Read],
        *arguments: _Arguments.args,
        **keywords: _Arguments.kwargs,
    ) -> _Read | None:
        """What ``check`` reads, or None once it refused (its refusal kept)."""
        try:
            return check(*arguments, **keywords)
        except InvalidQuery as refusal:
            self._found.append(refusal)
            return None

    def refuse(
        self, message: str, parameter: str | None = None, *, against: str | None = None
    ) -> None:
        """Keep a refusal of a rule over the values (one that no single check raises)."""
        self._found.append(InvalidQuery(message, parameter=parameter, against=against))

    def raise_any(self) -> None:
        if self._found:
            first, *others = self._found
            first.others = tuple(others)
            raise first


def check_names(**given: str | None) -> None:
    """Ids and filter values: not empty, and without control characters (which no stored
    id has, and which PostgreSQL refuses outright in the case of NUL)."""
    for name, value in given.items():
        _check_filter(name, value, CONTROL_CHARACTERS, "id", MAX_ID_LENGTH)


def check_name_filters(**given: str | None) -> None:
    """Filters matched against a name as stored (a publisher's): as :func:`check_names`,
    except that tab, line feed and carriage return, which a name may hold, are taken."""
    for name, value in given.items():
        _check_filter(name, value, _CONTROL_CHARACTERS_NOT_IN_NAMES, "name", MAX_NAME_LENGTH)


def _check_filter(
    name: str, value: str | None, refused: re.Pattern[str], kind: str, longest: int
) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        raise InvalidQuery(f"{name} must be text, got {value!r:.80}", parameter=name)
    if not value.strip():
        raise InvalidQuery(f"{name} must not be empty", parameter=name)
    if refused.search(value):
        raise InvalidQuery(f"{name} {value!r} contains a control character", parameter=name)
    check_utf8(name, value)
    if len(value) > longest:
        raise InvalidQuery(
            f"{name} is {len(value)} characters long; no {kind} is longer than {longest}",
            parameter=name,
        )


def check_utf8(what: str, value: str) -> None:
    """Refuse text that holds bytes that are not UTF-8 (as Python reads them from a command
    line, or the HTTP API from a query string's percent-escapes): saying so rather than that
    a day, a time or an id of that spelling is unknown or malformed."""
    if NOT_UTF8_TEXT.search(value):
        raise InvalidQuery(
            f"{what} {value!r} holds bytes that are not UTF-8 text (typed in another encoding?)",
            parameter=_parameter(what),
        )


def echoed(value: object, longest: int = 60) -> str:
    """``value`` as an error message repeats it: its repr, cut to ``longest`` characters of
    text with an ellipsis, so that a value of thousands of characters is named, not copied."""
    if isinstance(value, str) and len(value) > longest:
        return f"{value[: longest - 3]!r}..."
    return repr(value)


def _parameter(what: str) -> str:
    """The HTTP API's name of a parameter the CLI spells ``as-of``, ``known-at``..."""
    return what.replace("-", "_")


def parse_day(value: dt.date | str, what: str) -> dt.date:
    """A calendar day, given as a date or ``YYYY-MM-DD``; a time with an offset stands for
    its day in UTC, as days are counted everywhere else (a naive one for its own day)."""
    if isinstance(value, dt.datetime):
        if value.utcoffset() is not None:
            return value.astimezone(dt.UTC).date()
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        check_utf8(what, value)
        text = value.strip()
        if _DAY.match(text):
            try:
                return dt.date.fromisoformat(text)
            except ValueError as error:
                # The shape is right: say what is wrong with the day itself.
                raise InvalidQuery(
                    f"{what} {text!r} is not a real day: {error}", parameter=_parameter(what)
                ) from None
    raise InvalidQuery(
        f"{what} must be a calendar day YYYY-MM-DD, got {echoed(value)}",
        parameter=_parameter(what),
    )


def parse_time(value: str | dt.date, what: str, *, end_of_day: bool) -> dt.datetime:
    """An RFC 3339 time with an offset, or a day (its first or last microsecond, UTC).

    ``end_of_day`` says the time bounds a range from above: a day stands for its last
    microsecond, and digits beyond microseconds are dropped; a lower bound rounds them up,
    so that neither bound takes in a recorded time outside the range given.
    """
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, dt.date):
        clock = dt.time.max if end_of_day else dt.time.min
        return dt.datetime.combine(value, clock, tzinfo=dt.UTC)
    elif isinstance(value, str):
        _check_time_length(value, what)
        check_utf8(what, value)
        text = value.strip()
        if _DAY.match(text):
            day = parse_day(text, what)
            clock = dt.time.max if end_of_day else dt.time.min
            return dt.datetime.combine(day, clock, tzinfo=dt.UTC)
        moment = _rfc3339(text, what, round_up=not end_of_day)
    else:
        raise InvalidQuery(
            f"{what} must be an RFC 3339 time or a day YYYY-MM-DD, got {value!r}",
            parameter=_parameter(what),
        )
    if moment.tzinfo is None:
        raise InvalidQuery(f"{what} {NO_OFFSET}, got {value!r}", parameter=_parameter(what))
    try:
        return moment.astimezone(dt.UTC)
    except OverflowError:
        raise InvalidQuery(
            f"{what} {value!r} is out of range once converted to UTC", parameter=_parameter(what)
        ) from None


def _check_time_length(value: str, what: str) -> None:
    length = len(value.strip())
    if length > MAX_TIME_LENGTH:
        raise InvalidQuery(
            f"{what} is {length} characters long; no log position or time needs more than "
            f"{MAX_TIME_LENGTH}",
            parameter=_parameter(what),
        )


def _rfc3339(text: str, what: str, *, round_up: bool) -> dt.datetime:
    try:
        return read_rfc3339(text, round_up=round_up)
    except ValueError as problem:
        if str(problem) == NOT_A_DAY_TIME:
            raise InvalidQuery(f"{what} {text!r} {problem}", parameter=_parameter(what)) from None
        # A day is taken here too: the message offers both forms.
        message = str(problem).replace(NOT_A_TIME, f"{NOT_A_TIME} or a day (2025-05-29)", 1)
        raise InvalidQuery(f"{what} {message}, got {text!r}", parameter=_parameter(what)) from None


def parse_known_at(value: int | str | dt.date | None) -> int | dt.datetime | None:
    """A log position (an integer) or a recorded time (RFC 3339, or a day: its end, UTC)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str | dt.date):
        raise InvalidQuery(
            f"known-at must be a position or an RFC 3339 time, got {value!r}", parameter="known_at"
        )
    if isinstance(value, str):
        _check_time_length(value, "known-at")
        check_utf8("known-at", value)
        if _PLUS_NUMBER.match(value.strip()):
            raise InvalidQuery(
                f"known-at position is written as a plain number, such as "
                f"{int(value.strip())}, without a plus sign; got {value!r}",
                parameter="known_at",
            )
        if _DECIMAL_NUMBER.match(value.strip()):
            raise InvalidQuery(
                f"known-at position is a whole number, such as "
                f"{int(value.strip().partition('.')[0])}; got {value!r}",
                parameter="known_at",
            )
    if isinstance(value, str) and WHOLE_NUMBER.match(value.strip()):
        value = int(value.strip())
    if isinstance(value, int):
        if value < 0:
            raise InvalidQuery(
                f"known-at position must be 0 or more, got {value}", parameter="known_at"
            )
        return value
    if isinstance(value, str) and not value.strip()[:1].isdigit():
        # Neither a number nor a time starts otherwise: name both forms it may take.
        raise InvalidQuery(
            f"known-at must be a log position (such as 42) or an RFC 3339 time (such as "
            f"2025-05-29T14:00:00Z, or a day), got {value!r}",
            parameter="known_at",
        )
    return parse_time(value, "known-at", end_of_day=True)
