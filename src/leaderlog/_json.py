"""Canonical JSON: the one place that turns values into bytes for ids, hashes and storage."""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

__all__ = ["Embedded", "canonical_bytes", "dumps", "embed", "loads"]

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
# needs at least 19 digits in a row, which this finds cheaply (strings included, so a match
# only means a closer look).
_LONG_DIGITS = re.compile(r"[0-9]{19}")
_LONG_DIGIT_BYTES = re.compile(rb"[0-9]{19}")
_SMALLEST, _LARGEST = -(2**63), 2**64 - 1


def loads(text: str | bytes) -> Any:
    value = orjson.loads(text)
    # Stored rows arrive as str, lines and bodies as bytes: each is searched as it comes.
    long_digits = _LONG_DIGITS if isinstance(text, str) else _LONG_DIGIT_BYTES
    if long_digits.search(text):  # type: ignore[arg-type]
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
