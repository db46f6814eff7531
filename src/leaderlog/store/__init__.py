"""Event stores: the contract (:mod:`.base`) and its backends, chosen by database URL."""

from __future__ import annotations

import os

from leaderlog.errors import StoreUnavailable
from leaderlog.store.base import (
    AppendResult,
    EventStore,
    ExpectedVersion,
    NewEvent,
    PendingBatch,
    VerifyReport,
)

__all__ = [
    "DEFAULT_DATABASE_URL",
    "AppendResult",
    "EventStore",
    "ExpectedVersion",
    "NewEvent",
    "PendingBatch",
    "VerifyReport",
    "database_url",
    "open_store",
]

DEFAULT_DATABASE_URL = "sqlite:///leaderlog.db"


def database_url(explicit: str | None = None) -> str:
    """The URL to use: the explicit one, else ``LEADERLOG_DB``, else ``./leaderlog.db``."""
    return explicit or os.environ.get("LEADERLOG_DB") or DEFAULT_DATABASE_URL


async def open_store(url: str | None = None) -> EventStore:
    """Open the store a URL names: ``sqlite:///path`` or ``postgresql://...``."""
    url = database_url(url)
    if url.startswith(("postgresql://", "postgres://")):
        from leaderlog.store.postgres import PostgresStore

        return await PostgresStore.open(url)
    if url.startswith("sqlite:") or "://" not in url:
        from leaderlog.store.sqlite import SQLiteStore

        return await SQLiteStore.open(url)
    raise StoreUnavailable(
        f"unsupported database URL {url!r}: use sqlite:///path or postgresql://..."
    )
