"""Canonical JSON: the one place that turns values into bytes for ids, hashes and storage."""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["canonical_bytes", "dumps", "loads"]


def canonical_bytes(value: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8: equal values always give equal bytes."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def dumps(value: Any, *, indent: bool = False) -> str:
    option = orjson.OPT_SORT_KEYS | (orjson.OPT_INDENT_2 if indent else 0)
    return orjson.dumps(value, option=option).decode()


def loads(text: str | bytes) -> Any:
    return orjson.loads(text)


JSONDecodeError = orjson.JSONDecodeError
