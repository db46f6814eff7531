"""leaderlog: who leads what, as reported — an event-sourced change feed of leadership changes.

The public library API::

    import leaderlog

    async with await leaderlog.EventLog.open("sqlite:///leaderlog.db") as log:
        await log.import_file(Path("seeds/ice-leadership-2025-05.jsonl"), actor="cli")
        report = await log.store.verify()
"""

from __future__ import annotations

from leaderlog.errors import (
    AppendRefused,
    BatchError,
    ConcurrencyError,
    DomainError,
    DuplicateEventError,
    FeedError,
    FeedNotFound,
    Interrupted,
    InvalidQuery,
    LeaderlogError,
    LogRemoved,
    ProjectionError,
    ProjectionFailed,
    RecordedAtRefused,
    RecordError,
    StoreBusy,
    StoreError,
    StoreUnavailable,
    StoreUnreachable,
    TokenError,
    TokenNameRefused,
    UnknownEntity,
    UnknownLanguage,
    UnreadableEvent,
)
from leaderlog.events import Event, FuzzyDate, Record, RecordedEvent, parse_record
from leaderlog.log import AppendOutcome, AppendProgress, EventLog, load_seeds
from leaderlog.store import EventStore, open_store
from leaderlog.tokens import Tokens

__all__ = [
    "AppendOutcome",
    "AppendProgress",
    "AppendRefused",
    "BatchError",
    "ConcurrencyError",
    "DomainError",
    "DuplicateEventError",
    "Event",
    "EventLog",
    "EventStore",
    "FeedError",
    "FeedNotFound",
    "FuzzyDate",
    "Interrupted",
    "InvalidQuery",
    "LeaderlogError",
    "LogRemoved",
    "ProjectionError",
    "ProjectionFailed",
    "Record",
    "RecordError",
    "RecordedAtRefused",
    "RecordedEvent",
    "StoreBusy",
    "StoreError",
    "StoreUnavailable",
    "StoreUnreachable",
    "TokenError",
    "TokenNameRefused",
    "Tokens",
    "UnknownEntity",
    "UnknownLanguage",
    "UnreadableEvent",
    "load_seeds",
    "open_store",
    "parse_record",
]
