"""leaderlog: who leads what, as reported — an event-sourced change feed of leadership changes.

The public library API::

    import leaderlog

    async with await leaderlog.EventLog.open("sqlite:///leaderlog.db") as log:
        await log.import_file(Path("seeds/ice-leadership-2025-05.jsonl"), actor="cli")
        report = await log.store.verify()
"""

from __future__ import annotations

from leaderlog.errors import (
    BatchError,
    ConcurrencyError,
    DomainError,
    DuplicateEventError,
    InvalidQuery,
    LeaderlogError,
    ProjectionError,
    ProjectionFailed,
    RecordedAtRefused,
    RecordError,
    StoreError,
    StoreUnavailable,
    TokenError,
    UnknownEntity,
    UnreadableEvent,
)
from leaderlog.events import Event, FuzzyDate, Record, RecordedEvent, parse_record
from leaderlog.log import AppendOutcome, EventLog, load_seeds
from leaderlog.store import EventStore, open_store
from leaderlog.tokens import Tokens

__all__ = [
    "AppendOutcome",
    "BatchError",
    "ConcurrencyError",
    "DomainError",
    "DuplicateEventError",
    "Event",
    "EventLog",
    "EventStore",
    "FuzzyDate",
    "InvalidQuery",
    "LeaderlogError",
    "ProjectionError",
    "ProjectionFailed",
    "Record",
    "RecordError",
    "RecordedAtRefused",
    "RecordedEvent",
    "StoreError",
    "StoreUnavailable",
    "TokenError",
    "Tokens",
    "UnknownEntity",
    "UnreadableEvent",
    "load_seeds",
    "open_store",
    "parse_record",
]
