"""leaderlog: who leads what, as reported — an event-sourced change feed of leadership changes.

The public library API::

    import leaderlog

    async with await leaderlog.EventLog.open("sqlite:///leaderlog.db") as log:
        await leaderlog.load_seeds(log)  # the seed article's records, shipped with leaderlog
        report = await log.store.verify()
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from leaderlog.errors import (
        AppendRefused,
        BatchError,
        BuiltByAnotherVersion,
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
        ProjectionFailure,
        ProjectionTimedOut,
        RecordedAtRefused,
        RecordError,
        StoreBusy,
        StoreDamaged,
        StoreError,
        StoreReadOnly,
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
    "BuiltByAnotherVersion",
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
    "ProjectionFailure",
    "ProjectionTimedOut",
    "Record",
    "RecordError",
    "RecordedAtRefused",
    "RecordedEvent",
    "StoreBusy",
    "StoreDamaged",
    "StoreError",
    "StoreReadOnly",
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

# Where each public name lives. They are imported on first use, so that importing the package
# (as the ``leaderlog`` program does before it can handle Ctrl-C) loads none of its modules.
_HOMES = {
    "AppendOutcome": "leaderlog.log",
    "AppendProgress": "leaderlog.log",
    "EventLog": "leaderlog.log",
    "load_seeds": "leaderlog.log",
    "Event": "leaderlog.events",
    "FuzzyDate": "leaderlog.events",
    "Record": "leaderlog.events",
    "RecordedEvent": "leaderlog.events",
    "parse_record": "leaderlog.events",
    "EventStore": "leaderlog.store",
    "open_store": "leaderlog.store",
    "Tokens": "leaderlog.tokens",
}


if not TYPE_CHECKING:  # type checkers see the imports above, and no attribute made up

    def __getattr__(name: str) -> Any:
        if name in __all__:
            home = importlib.import_module(_HOMES.get(name, "leaderlog.errors"))
            value = getattr(home, name)
            globals()[name] = value  # found once: later lookups do not come back here
            return value
        raise AttributeError(f"module 'leaderlog' has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
