"""Canonical JSON: the one place that turns values into bytes for ids, hashes and storage."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import orjson

__all__ = [
    "MAX_INPUT_DEPTH",
    "Embedded",
    "InputTooDeep",
    "JSONDecodeError",
    "canonical_bytes",
    "copied",
    "described",
    "dumps",
    "embed",
    "loads",
    "loads_input",
]

# JSON bytes placed verbatim inside a value given to canonical_bytes.
Embedded = orjson.Fragment


def canonical_bytes(value: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8: equal values always give equal bytes."""
    # orjson hands back its whole output buffer (4 KiB at least) as the bytes object; these
    # are kept per record until a batch commits, so an import of a large log would hold ten
    # times its size. A copy is right-sized.
    return memoryview(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).tobytes()


def embed(encoded: bytes) -> Embedded:
    """Reuse JSON that is already canonical (e.g. stored data) inside a larger value.

    The result is only canonical when ``encoded`` is, so pass canonical_bytes output only.
    """
    return orjson.Fragment(encoded)


def copied(value: Any) -> Any:
    """A deep copy of JSON data, many times quicker than ``copy.deepcopy``."""
    return orjson.loads(orjson.dumps(value))


def dumps(value: Any, *, indent: bool = False, sort_keys: bool = True) -> str:
    """JSON text; with ``sort_keys=False`` members stay in their dicts' order, for a format
    whose spec orders them (JSON Feed's ``version`` first)."""
    option = (orjson.OPT_SORT_KEYS if sort_keys else 0) | (orjson.OPT_INDENT_2 if indent else 0)
    return orjson.dumps(value, option=option).decode()


JSONDecodeError = orjson.JSONDecodeError

# Deeper than any record needs; the standard parser used for the second reading below
# recurses once per level, so the limit also keeps it far from Python's recursion limit.
MAX_INPUT_DEPTH = 64
_SMALLEST, _LARGEST = -(2**63), 2**64 - 1


class _Refused(JSONDecodeError):
    """JSON that parses but is refused: the message says why (no position is meant)."""

    def __str__(self) -> str:
        return str(self.msg)


class InputTooDeep(_Refused):
    """JSON from outside that nests arrays and objects deeper than ``MAX_INPUT_DEPTH``."""


def described(error: JSONDecodeError, *, one_line: bool = False) -> str:
    """Why JSON could not be read, in words for whoever wrote it; ``one_line``: a line of
    JSON Lines, where only the column tells where."""
    if isinstance(error, _Refused):
        return str(error)
    message = str(error.msg)
    if message == "unexpected end of data":
        # Its position is past the end, where nothing can be pointed at.
        ending = "; each record must be on one line" if one_line else ""
        return f"it ends before its JSON value does{ending}"
    if message.startswith("Input is a zero-length") or message == "input data is empty":
        # The second for a body or line of spaces and line ends alone.
        return "it is empty"
    if message.startswith("invalid literal"):
        # orjson names the literal it guessed from the first letter ("expected 'null'").
        message = "unexpected text where a JSON value should be"
    where = f"column {error.colno}" if one_line else f"line {error.lineno}, column {error.colno}"
    return f"{message} at {where}"


def loads(text: str | bytes) -> Any:
    """JSON the project wrote itself (stored rows and read models): read as it is."""
    return orjson.loads(text)


def loads_input(text: str | bytes) -> Any:
    """JSON from outside (an imported line, a request body), refused where parsers disagree.

    orjson reads it strictly (UTF-8, no NaN, no lone surrogates). What orjson reads silently
    but other readers of the same bytes would read differently is refused: a name repeated
    in one object (some keep the first, orjson the last, so a proxy could check one record
    while another is stored), an integer beyond 64 bits (orjson rounds it to a float) and
    a number with more digits than a float holds (it would read back as another number).
    Both need a second reading, so stored JSON, which came in through here once, is read
    with :func:`loads`. :class:`InputTooDeep` when nested deeper than ``MAX_INPUT_DEPTH``.
    """
    try:
        value = orjson.loads(text)
    except JSONDecodeError as error:
        if error.msg == "depth limit exceeded":  # orjson's own limit, far beyond ours
            raise InputTooDeep(
                f"nested deeper than {MAX_INPUT_DEPTH} levels", _document(text), 0
            ) from None
        raise _encoding_named(text) or error from None
    if _brackets(text) > MAX_INPUT_DEPTH and _depth(value) > MAX_INPUT_DEPTH:
        raise InputTooDeep(f"nested deeper than {MAX_INPUT_DEPTH} levels", _document(text), 0)
    try:
        json.loads(
            text,
            object_pairs_hook=_unique_names,
            parse_int=_integer_in_range,
            parse_float=_float_as_given,
        )
    except (_Ambiguous, json.JSONDecodeError) as error:
        # orjson read it, so a complaint of the standard parser's own is named as it is.
        raise _Refused(str(error), _document(text), 0) from None
    return value


def _depth(value: Any) -> int:
    """How deeply arrays and objects nest in a parsed JSON value (without recursion)."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level + 1)
        pending.extend((child, level + 1) for child in children)
    return deepest


class _Ambiguous(ValueError):
    pass


def _unique_names(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise _Ambiguous(f"the name {_start_of(name)!r} appears twice in one object")
            seen.add(name)
    return found


def _integer_in_range(digits: str) -> int:
    number = int(digits)
    if not _SMALLEST <= number <= _LARGEST:
        raise _Ambiguous(
            f"integer {_start_of(digits)} is out of range (JSON numbers here hold 64 bits)"
        )
    return number


def _float_as_given(digits: str) -> float:
    # Compared as decimals: 1.1 is kept as the float whose shortest form is 1.1 again, where
    # 12345678901234567890.5 would come back as 1.2345678901234567e+19.
    number = float(digits)
    if Decimal(repr(number)) != Decimal(digits):
        raise _Ambiguous(
            f"number {_start_of(digits)} has more digits than a 64-bit float holds: it would "
            f"be kept as {number!r}"
        )
    return number


# An error repeats at most this much of the document: a name or a number is as long as the
# writer makes it, and the error would otherwise be as large as the body.
_LONGEST_ECHO = 60


def _start_of(text: str) -> str:
    return text if len(text) <= _LONGEST_ECHO else f"{text[: _LONGEST_ECHO - 3]}..."


def _brackets(text: str | bytes) -> int:
    """An upper bound of the nesting depth, far cheaper than walking the value."""
    if isinstance(text, str):
        return text.count("[") + text.count("{")
    return text.count(b"[") + text.count(b"{")


def _document(text: str | bytes) -> str:
    return text if isinstance(text, str) else text.decode("utf-8", "replace")


def _encoding_named(text: str | bytes) -> JSONDecodeError | None:
    """The error for bytes that are not UTF-8 (orjson's own message misnames the fault)."""
    if isinstance(text, str):
        return None
    try:
        text.decode("utf-8")
    except UnicodeDecodeError as not_utf8:
        byte = text[not_utf8.start]
        return JSONDecodeError(
            f"not UTF-8 text (byte 0x{byte:02X})",
            _document(text),
            not_utf8.start,
        )
    return None
