"""Building real logs for projection tests: seeds, extra records, fixed recorded times."""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from leaderlog._json import loads
from leaderlog.events import Record, parse_record
from leaderlog.log import EventLog
from leaderlog.projections import Queries, UnknownEntity, runner_for
from tests.conftest import SEEDS

SEED_FILE = SEEDS / "ice-leadership-2025-05.jsonl"
SEED_COUNT = 29
FOX = "fox-ice-shakeup-2025-05"
HAMMER_CAPTION = f"{FOX}-hammer-hsi-caption"
HAMMER_BODY = f"{FOX}-hammer-hsi-body"
GENALO_RETIREMENT = f"{FOX}-genalo-retirement"
GORDON_ACTING = f"{FOX}-gordon-hsi-acting"
HAMMER_REASSIGNMENT = f"{FOX}-hammer-reassignment"


def failure_location(test_file: str, code: str) -> str:
    """How a projection's failure names the line of ``test_file`` that holds ``code``."""
    line = next(
        number
        for number, text in enumerate(Path(test_file).read_text().splitlines(), start=1)
        if code in text
    )
    return f"{Path(test_file).name}, line {line}); it stays at position 0"


def seed_records() -> list[dict[str, Any]]:
    lines = SEED_FILE.read_text(encoding="utf-8").splitlines()
    return [loads(line) for line in lines if line.strip()]


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


async def append(
    log: EventLog,
    raws: list[dict[str, Any]],
    *,
    recorded_at: dt.datetime | None = None,
    actor: str = "test",
) -> tuple[int, ...]:
    """Append raw records as one batch, optionally stamped with a fixed recorded time."""
    records = [parse_record(raw) for raw in raws]
    if recorded_at is not None:
        records = [
            Record(
                event=record.event,
                event_id=record.event_id,
                meta=record.meta,
                recorded_at=recorded_at,
                actor=actor,
            )
            for record in records
        ]
    outcome = await log.append_records(records, actor=actor)
    return outcome.positions


def record(event_type: str, **data: Any) -> dict[str, Any]:
    return {"type": event_type, "data": data}


def published_source(name: str, published: str) -> dict[str, Any]:
    """A source's record, published on (or in) ``published``."""
    return record(
        "source.registered",
        source=name,
        url=f"https://e.org/{name}",
        publisher="E",
        published={"date": published},
    )


async def current(log: EventLog) -> Queries:
    """Queries over projections caught up with the log."""
    runner = await runner_for(log.store)
    await runner.catch_up()
    return Queries(log.store)


def seen_projection_module(
    name: str,
    *,
    version: int = 1,
    more_schema: str = "",
    more_tables: str = "",
    imports: str = "",
) -> str:
    """The source of a user projection module that keeps the positions it has seen."""
    return (
        f"{imports}from leaderlog.projections import Projection\n\n\n"
        "class Seen(Projection):\n"
        f"    name = {name!r}\n"
        f"    version = {version}\n\n"
        "    def schema(self):\n"
        f"        return ('CREATE TABLE IF NOT EXISTS p_{name}_seen (position BIGINT)',"
        f" {more_schema})\n\n"
        "    def tables(self):\n"
        f"        return ('p_{name}_seen',{f' {more_tables}' if more_tables else ''})\n\n"
        "    async def apply(self, tx, events):\n"
        "        await tx.executemany(\n"
        f"            'INSERT INTO p_{name}_seen (position) VALUES (?)',\n"
        "            [(event.position,) for event in events],\n"
        "        )\n\n\n"
        "PROJECTION = Seen\n"
    )


# One more claim as an import line, for commands run after the seeds.
ANOTHER_CLAIM = (
    '{"type": "claim.reported", "data": {"claim": "another", '
    '"source": "fox-ice-shakeup-2025-05", "kind": "incumbency", "person": "derek-gordon", '
    '"post": "ice-hsi-dsac", "capacity": "unspecified", "modality": "occurred", '
    '"attribution": {"kind": "outlet", "parties": ["Fox News"]}}}\n'
)


def slow_projection_module() -> str:
    """The source of user projection ``slow``: it keeps the positions it has seen, and hangs
    for a minute on a page registering a person whose id starts with ``slow-`` (writing the
    page's size to the file named by ``SLOW_TRIES``, when set, first)."""
    return (
        "import asyncio\n"
        "import os\n\n"
        "from leaderlog.projections import Projection\n\n\n"
        "class Slow(Projection):\n"
        "    name = 'slow'\n"
        "    version = 1\n\n"
        "    def schema(self):\n"
        "        return ('CREATE TABLE IF NOT EXISTS p_slow_seen (position BIGINT)',)\n\n"
        "    def tables(self):\n"
        "        return ('p_slow_seen',)\n\n"
        "    async def apply(self, tx, events):\n"
        "        await tx.executemany(\n"
        "            'INSERT INTO p_slow_seen (position) VALUES (?)',\n"
        "            [(e.position,) for e in events],\n"
        "        )\n"
        "        if any(e.type == 'person.registered' and e.data['person'].startswith('slow-')\n"
        "               for e in events):\n"
        "            if 'SLOW_TRIES' in os.environ:\n"
        "                with open(os.environ['SLOW_TRIES'], 'a') as tries:\n"
        "                    tries.write(f'{len(events)}\\n')\n"
        "            await asyncio.sleep(60)\n\n\n"
        "PROJECTION = Slow\n"
    )


Statements = list[tuple[str, Sequence[Any]]]


def recording_statements(queries: Queries) -> Statements:
    """Every statement ``queries`` sends to its store from now on."""
    statements: Statements = []
    read = queries.store.query

    async def recorded(sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        statements.append((sql, parameters))
        return await read(sql, parameters)

    queries.store.query = recorded  # type: ignore[method-assign]
    return statements


async def query_plans(queries: Queries, statements: Statements) -> list[str]:
    """SQLite's plan of each statement, its steps joined by " | "."""
    plans = []
    for sql, parameters in list(statements):
        rows = await queries.store.query(f"EXPLAIN QUERY PLAN {sql}", parameters)
        plans.append(" | ".join(str(row[-1]) for row in rows))
    return plans


async def plans_of_a_refusal(
    queries: Queries, ask: Callable[[Queries], Awaitable[Any]], message: str
) -> list[str]:
    """The plans of the statements ``ask`` sends, which must be refused with ``message``."""
    statements = recording_statements(queries)
    try:
        await ask(queries)
    except UnknownEntity as refused:
        assert str(refused) == message
    else:
        raise AssertionError(f"not refused: expected {message!r}")
    return await query_plans(queries, statements)
