"""What an unknown claim id or source may have meant is looked up by the start of a word in
small indexed tables, not by reading every claim id or every source: on a large log those
reads went through hundreds of thousands of rows on each such request, which anyone can
make over HTTP with made-up ids. The answers stay those of the whole search for words that
start a part of an id (or a word of a publisher or title)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from leaderlog.log import EventLog
from leaderlog.projections import Queries, UnknownEntity, runner_for
from leaderlog.projections import queries as queries_module
from leaderlog.projections._words import search_form
from tests.projections.logs import (
    FOX,
    GENALO_RETIREMENT,
    HAMMER_BODY,
    append,
    current,
    plans_of_a_refusal,
    record,
)

# Claim ids asked for, and what was meant; each word starts a part of the ids it finds.
CLAIMS_ASKED = (
    "hammer-hsi",
    "genalo RETIREMENT",
    "gordon",
    "fox",
    "ice shakeup",
    "2025-05-gordon",
    "HSI",
    "caption hammer",
    "body",
    "05",
    "genalo ero caption",
    "miller  wh",
    "made-up-id",
    "2025_05%",
    "-gordon",
    HAMMER_BODY.upper(),
)
SOURCES_ASKED = (
    "fox",
    "FOX NEWS",
    "news",
    "ice",
    "shakeup-2025",
    "nowhere",
    "ünïcode",
    "ÜBER",
    "alles",
    "über alles",
    "(ap)",
    "editions-unicode",
    "s99999",
)


def _scanned(plans: list[str]) -> list[str]:
    """The tables the plans read from end to end."""
    return [found for plan in plans for found in re.findall(r"\bSCAN (p_\w+)", plan)]


async def _with_more_sources(log: EventLog) -> Queries:
    await append(
        log,
        [
            record(
                "source.registered",
                source="editions-unicode-1",
                url="https://example.org/1",
                publisher="Éditions Ünïcode",
                title="Über alles",
            ),
            record(
                "source.registered",
                source="wire-2025",
                url="https://example.org/2",
                publisher="The Associated Press (AP)",
                title="Fox-trot at ICE: a shakeup",
            ),
        ],
    )
    return await current(log)


async def _claim_meant(queries: Queries, given: str, known_at: int | None = None) -> UnknownEntity:
    with pytest.raises(UnknownEntity) as raised:
        await queries.claim(given, known_at=known_at)
    return raised.value


async def _source_meant(queries: Queries, given: str) -> UnknownEntity:
    with pytest.raises(UnknownEntity) as raised:
        await queries.audit(source=given)
    return raised.value


async def _claims_containing(queries: Queries, given: str, known: int) -> tuple[str, ...]:
    """What the search through every claim id suggested: the ids containing every word."""
    words = given.lower().split()
    if not words:
        return ()
    rows = await queries.store.query(
        "SELECT DISTINCT claim FROM p_leadership_claim_versions WHERE known_from <= ?", (known,)
    )
    found = [claim for (claim,) in rows if all(word in claim.lower() for word in words)]
    exact = given.strip().lower()
    return tuple(sorted(found, key=lambda claim: (claim != exact, claim))[:5])


async def _sources_containing(queries: Queries, given: str) -> tuple[str, ...]:
    """What the search through every source suggested: those one of whose id, publisher or
    title contains what was given."""
    wanted = search_form(given.strip())
    rows = await queries.store.query("SELECT source, publisher, title FROM p_audit_sources")
    found = [
        (row[0], row[1]) for row in rows if any(wanted in search_form(text) for text in row if text)
    ]
    return tuple(source for source, _ in sorted(found)[:5])


@pytest.mark.parametrize(
    ("ask", "message"),
    [
        (
            lambda q: q.claim("hammer-hsi"),
            "unknown claim 'hammer-hsi'; did you mean fox-ice-shakeup-2025-05-hammer-hsi-body "
            "(incumbency of robert-hammer at ice-hsi-ead) or "
            "fox-ice-shakeup-2025-05-hammer-hsi-caption (incumbency of robert-hammer at "
            "ice-hsi-ead)?",
        ),
        (lambda q: q.claim("made-up-id"), "unknown claim 'made-up-id'"),
        # a letter left out: the claim meant first, where none was suggested
        (
            lambda q: q.claim(f"{FOX}-genalo-retirment"),
            f"unknown claim '{FOX}-genalo-retirment'; did you mean {FOX}-genalo-retirement "
            f"(departure of kenneth-genalo at ice-ero-ead), {FOX}-genalo-ero-caption "
            f"(incumbency of kenneth-genalo at ice-ero-ead) or {FOX}-genalo-ero-body "
            "(incumbency of kenneth-genalo at ice-ero-ead)?",
        ),
        (
            lambda q: q.claim("genalo RETIREMENT"),
            "unknown claim 'genalo RETIREMENT'; did you mean "
            "fox-ice-shakeup-2025-05-genalo-retirement (departure of kenneth-genalo at "
            "ice-ero-ead)?",
        ),
        (
            lambda q: q.audit(source="fox"),
            "unknown source 'fox'; did you mean fox-ice-shakeup-2025-05 (Fox News)?",
        ),
        (lambda q: q.audit(source="nowhere"), "unknown source 'nowhere'"),
    ],
)
async def test_an_unknown_claim_or_source_reads_no_table_from_end_to_end(
    seeded_log: EventLog, ask: Callable[[Queries], Any], message: str
) -> None:
    plans = await plans_of_a_refusal(await current(seeded_log), ask, message)
    assert _scanned(plans) == []


async def _assert_the_same_as_the_whole_search(log: EventLog) -> None:
    queries = await _with_more_sources(log)
    head, _ = await log.store.head()
    for given in CLAIMS_ASKED:
        meant = await _claim_meant(queries, given)
        assert meant.suggestions == await _claims_containing(queries, given, head), given
    for given in SOURCES_ASKED:
        meant = await _source_meant(queries, given)
        assert meant.suggestions == await _sources_containing(queries, given), given
    # as known at a position: only the claims reported by then
    reported = (await queries.claim(GENALO_RETIREMENT))["lifecycle"][0]["position"]
    for given in ("fox", "genalo", "hammer hsi", "ice-shakeup"):
        for known in (reported - 1, reported, reported + 3):
            meant = await _claim_meant(queries, given, known_at=known)
            assert meant.suggestions == await _claims_containing(queries, given, known), given


async def test_the_suggestions_are_those_of_the_whole_search(seeded_log: EventLog) -> None:
    await _assert_the_same_as_the_whole_search(seeded_log)


async def test_on_postgresql_the_suggestions_are_those_of_the_whole_search(
    seeded_postgres_log: EventLog,
) -> None:
    await _assert_the_same_as_the_whole_search(seeded_postgres_log)


async def test_a_word_from_the_middle_of_a_part_suggests_nothing(seeded_log: EventLog) -> None:
    queries = await current(seeded_log)
    assert str(await _claim_meant(queries, "enalo")) == "unknown claim 'enalo'"
    assert str(await _source_meant(queries, "ews")) == "unknown source 'ews'"
    # though a word that is another with a letter dropped is read as that one, mistyped
    assert str(await _source_meant(queries, "ox news")) == (
        "unknown source 'ox news'; did you mean fox-ice-shakeup-2025-05 (Fox News)?"
    )
    # nor does punctuation alone, which no word starts with
    assert str(await _claim_meant(queries, "-")) == "unknown claim '-'"


async def test_a_common_word_is_narrowed_by_a_rarer_one(
    seeded_log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Fewer candidates read per word than the claims "fox" or "hsi" start a part of.
    monkeypatch.setattr(queries_module, "_CANDIDATES", 2)
    queries = await current(seeded_log)
    meant = await _claim_meant(queries, "fox hsi caption")
    assert meant.suggestions == (f"{FOX}-hammer-hsi-caption",)
    # the id asked for in capitals: that id first
    upper = await _claim_meant(queries, HAMMER_BODY.upper())
    assert upper.suggestions == (HAMMER_BODY,)


async def _tails(queries: Queries) -> list[list[tuple[Any, ...]]]:
    return [
        sorted(tuple(row) for row in await queries.store.query(f"SELECT * FROM {table}"))
        for table in ("p_audit_claim_tails", "p_audit_source_tails")
    ]


async def test_the_words_kept_as_the_log_grows_equal_a_rebuild(seeded_log: EventLog) -> None:
    queries = await _with_more_sources(seeded_log)
    await append(
        seeded_log,
        [
            record(
                "claim.reported",
                claim="wire-2025-noem-stays",
                source="wire-2025",
                kind="incumbency",
                person="kristi-noem",
                post="dhs-secretary",
                capacity="permanent",
                modality="occurred",
                attribution={"kind": "outlet", "parties": []},
                quote="Noem stays",
                locator="body",
            )
        ],
    )
    queries = await current(seeded_log)
    grown = await _tails(queries)
    assert all(grown)
    await (await runner_for(seeded_log.store)).rebuild(["audit"])
    assert await _tails(queries) == grown
    meant = await _claim_meant(queries, "noem STAYS")
    assert meant.suggestions == ("wire-2025-noem-stays",)
