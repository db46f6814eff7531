"""Canonical JSON: the one place that turns values into bytes for ids, hashes and storage."""

from __future__ import annotations

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


def loads(text: str | bytes) -> Any:
    return orjson.loads(text)


JSONDecodeError = orjson.JSONDecodeError
