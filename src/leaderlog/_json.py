"""Canonical JSON: the one place that turns values into bytes for ids, hashes and storage."""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["Embedded", "canonical_bytes", "dumps", "embed", "loads", "loads_input"]

# JSON bytes placed verbatim inside a value given to canonical_bytes.
Embedded = orjson.Fragment


def canonical_bytes(value: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8: equal values always give equal bytes."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def embed(encoded: bytes) -> Embedded:
    """Reuse JSON that is already canonical (e.g. stored data) inside a larger value.

    The result is only canonical when ``encoded`` is, so pass canonical_bytes output only.
    """
    return orjson.Fragment(encoded)


def dumps(value: Any, *, indent: bool = False) -> str:
    option = orjson.OPT_SORT_KEYS | (orjson.OPT_INDENT_2 if indent else 0)
    return orjson.dumps(value, option=option).decode()


JSONDecodeError = orjson.JSONDecodeError

# orjson reads an integer beyond 64 bits as a float, silently losing digits. Such a number
# needs at least 19 digits in a row (strings count too, so a run only means a closer look).
# With every digit turned into 0, finding a run is a plain substring search: several times
# cheaper than a regular expression over the same text.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_DIGITS_AS_ZERO_TEXT = str.maketrans("123456789", "000000000")
_NINETEEN_ZEROS = "0" * 19
_NINETEEN_ZERO_BYTES = b"0" * 19
_SMALLEST, _LARGEST = -(2**63), 2**64 - 1


def loads(text: str | bytes) -> Any:
    """JSON the project wrote itself (stored rows and read models): read as it is."""
    return orjson.loads(text)


def loads_input(text: str | bytes) -> Any:
    """JSON from outside (an imported line, a request body): an integer beyond 64 bits is
    refused rather than read as a rounded float. The search costs about as much as the parse,
    so stored JSON, which came in through here once, is read with :func:`loads`."""
    value = orjson.loads(text)
    if isinstance(text, str):
        long_digits = _NINETEEN_ZEROS in text.translate(_DIGITS_AS_ZERO_TEXT)
    else:
        long_digits = _NINETEEN_ZERO_BYTES in text.translate(_DIGITS_AS_ZERO)
    if long_digits:
        _refuse_long_integers(text)
    return value


def _refuse_long_integers(encoded: str | bytes) -> None:
    def integer(digits: str) -> int:
        number = int(digits)
        if not _SMALLEST <= number <= _LARGEST:
            raise ValueError(digits)
        return number

    try:
        json.loads(encoded, parse_int=integer)
    except ValueError as error:
        if isinstance(error, json.JSONDecodeError):
            return  # orjson read it, so this is only a difference between parsers
        document = encoded if isinstance(encoded, str) else encoded.decode("utf-8", "replace")
        raise JSONDecodeError(
            f"integer {error} is out of range (JSON numbers here hold 64 bits)", document, 0
        ) from None
