"""Small SQL helpers shared by the built-in projections and their queries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

__all__ = ["CHUNK", "chunks", "marks"]

T = TypeVar("T")
# Keep IN lists far below every backend's limit on bound parameters.
CHUNK = 500


def chunks(items: Sequence[T]) -> list[Sequence[T]]:
    return [items[start : start + CHUNK] for start in range(0, len(items), CHUNK)]


def marks(count: int) -> str:
    """``?, ?, ?`` for an IN list of ``count`` values."""
    return ", ".join("?" * count)
