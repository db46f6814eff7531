"""Audit questions that find nothing are answered from small tables, not by reading the log's
events or sources: an unknown actor or publisher (with its suggestions), and an event type
combined with a claim status or attribution that no event of the type has. On a large log the
reads they replace went through every event (or source) on each such request, which anyone can
make over HTTP."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from leaderlog.log import EventLog
from leaderlog.projections import Queries, UnknownEntity, runner_for
from leaderlog.projections import queries as queries_module
from tests.projections.logs import (
    GENALO_RETIREMENT,
    append,
    current,
    plans_of_a_refusal,
    query_plans,
    record,
    recording_statements,
)


def _reading(plans: list[str], table: str) -> list[str]:
    """The plans that read ``table`` (or its indexes), by its name or the alias ``e``."""
    reads = re.compile(rf"\b(SCAN|SEARCH) ({table}|e)\b")
    return [plan for plan in plans if reads.search(plan)]


@pytest.mark.parametrize(
    ("ask", "table", "message"),
    [
        (
            lambda q: q.audit(actor="SEE"),
            "p_audit_events",
            "no event was appended by the actor 'SEE' (actors are matched exactly); "
            "did you mean seed (29 events)?",
        ),
        (
            lambda q: q.audit(publisher="fox"),
            "p_audit_sources",
            "no source has the publisher 'fox' (publishers are matched exactly); "
            "did you mean Fox News (1 source)?",
        ),
    ],
)
async def test_an_unknown_actor_or_publisher_reads_only_the_small_tables(
    seeded_log: EventLog,
    ask: Callable[[Queries], Any],
    table: str,
    message: str,
) -> None:
    plans = await plans_of_a_refusal(await current(seeded_log), ask, message)
    assert _reading(plans, table) == []


@pytest.mark.parametrize(
    "filters",
    [
        {"type": "claim.retracted", "status": "reported"},
        {"type": "claim.confirmed", "status": "retracted"},
        {"type": "claim.reported", "attribution": "named", "status": "retracted"},
        {"type": "org.registered", "status": "reported"},
        {"status": "retracted", "attribution": "outlet"},
    ],
)
async def test_a_combination_no_event_has_reads_no_events(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch, filters: dict[str, str]
) -> None:
    # Claims of the status are many on a large log: the events of the type are read in order.
    monkeypatch.setattr(queries_module, "_SCAN_FROM_CLAIMS", 1)
    queries = await current(seeded_log)
    statements = recording_statements(queries)
    answer = await queries.audit(**filters)  # type: ignore[arg-type]
    assert answer == {"filters": filters, "events": [], "next_after": None}
    assert _reading(await query_plans(queries, statements), "p_audit_events") == []


async def _counted_by_hand(queries: Queries) -> list[tuple[Any, ...]]:
    rows = await queries.store.query(
        "SELECT e.type, c.status, c.attribution, COUNT(*) FROM p_audit_events e "
        "JOIN p_audit_claims c ON c.claim = e.claim GROUP BY e.type, c.status, c.attribution"
    )
    return sorted(tuple(row) for row in rows)


async def _counted(queries: Queries) -> list[tuple[Any, ...]]:
    rows = await queries.store.query(
        "SELECT type, status, attribution, events FROM p_audit_combinations"
    )
    return sorted(tuple(row) for row in rows)


async def test_the_counts_follow_each_claim_as_it_changes_and_equal_a_rebuild(
    seeded_log: EventLog,
) -> None:
    queries = await current(seeded_log)
    assert await _counted(queries) == await _counted_by_hand(queries)
    corrected = record(
        "claim.corrected",
        claim=GENALO_RETIREMENT,
        changes={"attribution": {"kind": "named", "parties": ["ICE"]}},
        reason="named later",
    )
    await append(seeded_log, [corrected])
    await current(seeded_log)
    disputed = record("claim.disputed", claim=GENALO_RETIREMENT, reason="denied")
    retracted = record("claim.retracted", claim=GENALO_RETIREMENT, reason="withdrawn")
    await append(seeded_log, [disputed])
    await append(seeded_log, [retracted], actor="another")
    await current(seeded_log)
    incremental = await _counted(queries)
    assert incremental == await _counted_by_hand(queries)
    assert ("claim.reported", "retracted", "named", 1) in incremental
    assert (await queries.audit(type="claim.disputed", status="retracted"))["events"]
    actors = await queries.store.query("SELECT actor, events FROM p_audit_actors ORDER BY actor")
    await (await runner_for(seeded_log.store)).rebuild(["audit"])
    assert await _counted(queries) == incremental
    assert (
        await queries.store.query("SELECT actor, events FROM p_audit_actors ORDER BY actor")
        == actors
    )
    assert ("another", 1) in [tuple(row) for row in actors]


async def test_on_postgresql_the_same_tables_answer_the_same(
    seeded_postgres_log: EventLog,
) -> None:
    queries = await current(seeded_postgres_log)
    assert await _counted(queries) == await _counted_by_hand(queries)
    no_match = {"type": "claim.retracted", "status": "reported"}
    assert await queries.audit(**no_match) == {  # type: ignore[arg-type]
        "filters": no_match,
        "events": [],
        "next_after": None,
    }
    with pytest.raises(UnknownEntity, match=r"did you mean seed \(29 events\)\?$"):
        await queries.audit(actor="SEE")
    with pytest.raises(UnknownEntity, match=r"did you mean Fox News \(1 source\)\?$"):
        await queries.audit(publisher="fox")
