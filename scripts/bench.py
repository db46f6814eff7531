"""Benchmarks, each reported as a ratio against raw ``sqlite3`` measured in the same run.

Run ``.venv/bin/python scripts/bench.py`` (the interpreter scripts/test sets up) for the
full-size figures, ``--quick`` for a smoke run, and
``--only NAME`` (repeatable) to pick benchmarks. The exit status is 1 when a bar is missed.

Appends: ``claim.reported`` events go through the public append API (domain rules included)
into a fresh SQLite file that holds the seeds; the baseline inserts rows of the same shape
(same columns, same data JSON) with plain ``sqlite3``, using the store's own ``PRAGMAS`` and
``SCHEMA`` (same unique indexes and triggers). For information, the appends benchmark also
runs a bare-bones appender (``_minimal_python_run``, which skips most of the semantics) against
the same raw baseline, as it is and with its commits overlapped: a reference for how close any
CPython implementation can come. For the one-writer figure, the raw one-row transactions are
also run each through one thread hop (``_raw_through_one_hop``): what keeping SQLite off the
event loop costs before any of leaderlog's own work.
The workload is built before timing and frozen out of the cyclic garbage collector's reach
(``gc.freeze``), so neither side pays for traversing the harness's own objects.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import hashlib
import pstats
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from leaderlog._json import canonical_bytes, embed
from leaderlog.events import (
    Attribution,
    ClaimReported,
    FuzzyDate,
    Record,
    content_event_id,
    format_time,
    new_event_id,
)
from leaderlog.log import EventLog, load_seeds, parse_lines
from leaderlog.store.base import utc_now
from leaderlog.store.sqlite import PRAGMAS, SCHEMA

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"

CONCURRENT_TASKS = 100
RAW_BATCH = 100
CONCURRENT_BAR = 0.5
SEQUENTIAL_BAR = 0.25
WARM_UP_EVENTS = 500


@dataclass(frozen=True)
class Sizes:
    concurrent_events: int
    sequential_events: int
    repeats: int


FULL = Sizes(concurrent_events=20_000, sequential_events=3_000, repeats=3)
QUICK = Sizes(concurrent_events=2_000, sequential_events=300, repeats=1)


@dataclass(frozen=True)
class Settings:
    sizes: Sizes
    workdir: Path
    profile: bool


# --- workload --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SeedReferences:
    source: str
    people: tuple[str, ...]
    posts: tuple[str, ...]


def seed_references() -> SeedReferences:
    paths = sorted(SEEDS.glob("*.jsonl"))
    lines = [line for path in paths for line in path.read_bytes().splitlines()]
    records, _ = parse_lines(lines)
    by_type: dict[str, list[str]] = {}
    for record in records:
        by_type.setdefault(record.event.type, []).append(record.stream.partition("-")[2])
    return SeedReferences(
        source=by_type["source.registered"][0],
        people=tuple(by_type["person.registered"]),
        posts=tuple(by_type["post.defined"]),
    )


def make_claims(references: SeedReferences, count: int) -> list[ClaimReported]:
    """Distinct, seed-referencing claims (``bench-<n>``) shaped like the real ones."""
    claims = []
    for n in range(count):
        kind = ("appointment", "departure", "incumbency")[n % 3]
        claims.append(
            ClaimReported(
                claim=f"bench-{n}",
                source=references.source,
                kind=kind,
                person=references.people[n % len(references.people)],
                post=references.posts[n % len(references.posts)],
                capacity=("acting", "permanent", "unspecified")[n % 3],
                cause="retirement" if kind == "departure" else None,
                effective=FuzzyDate(date="2025-06", qualifier="about", text="next month"),
                modality=("occurred", "expected", "announced")[n % 3],
                attribution=Attribution(kind="anonymous", parties=("White House", "ICE")),
                quote=f"Benchmark claim number {n}, reported by sources familiar with the matter",
                locator="body",
            )
        )
    return claims


def content_records(claims: Sequence[ClaimReported]) -> list[Record]:
    """Records as an import gives them: no event id, so the id is derived from the content."""
    return [Record(event=claim, event_id=content_event_id(claim)) for claim in claims]


def raw_rows(claims: Sequence[ClaimReported]) -> list[tuple[Any, ...]]:
    """Precomputed rows of the same shape the store writes (the hash is a placeholder)."""
    recorded_at = format_time(utc_now())
    placeholder_hash = hashlib.sha256(b"bench").hexdigest()
    return [
        (
            position,
            new_event_id().bytes,
            claim.stream(),
            1,
            claim.type,
            claim.schema_version,
            canonical_bytes(claim.data()).decode(),
            recorded_at,
            "bench",
            "{}",
            placeholder_hash,
        )
        for position, claim in enumerate(claims, start=1)
    ]


# --- the two sides ---------------------------------------------------------------------------


def raw_insert(path: Path, rows: Sequence[tuple[Any, ...]], per_transaction: int) -> float:
    """Events per second for plain sqlite3 inserts, ``per_transaction`` rows per commit."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        for pragma in PRAGMAS:
            connection.execute(pragma)
        connection.executescript(SCHEMA)
        columns = ",".join("?" * len(rows[0]))
        insert = f"INSERT INTO events VALUES ({columns})"
        started = time.perf_counter()
        for start in range(0, len(rows), per_transaction):
            connection.execute("BEGIN IMMEDIATE")
            connection.executemany(insert, rows[start : start + per_transaction])
            connection.execute("COMMIT")
        elapsed = time.perf_counter() - started
    finally:
        connection.close()
    return len(rows) / elapsed


async def _raw_through_one_hop(path: Path, rows: Sequence[tuple[Any, ...]]) -> float:
    """Events per second for the raw one-row transactions, each handed to a writer thread
    with one ``run_in_executor`` hop and awaited, as any appender that keeps SQLite off the
    event loop must: a reference for the one-writer figure, not a rival.

    The same SQL as :func:`raw_insert` with one row per transaction; what the hop costs
    (waking the thread, the result's way back to the loop, the interpreter lock changing
    hands) shows as the gap to the raw figure, before any of leaderlog's own work.
    """
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer_thread = ThreadPoolExecutor(max_workers=1)
    loop = asyncio.get_running_loop()
    insert = f"INSERT INTO events VALUES ({','.join('?' * len(rows[0]))})"

    def commit_one(row: tuple[Any, ...]) -> None:
        connection.execute("BEGIN IMMEDIATE")
        connection.execute(insert, row)
        connection.execute("COMMIT")

    try:
        for pragma in PRAGMAS:
            connection.execute(pragma)
        connection.executescript(SCHEMA)
        started = time.perf_counter()
        for row in rows:
            await loop.run_in_executor(writer_thread, commit_one, row)
        elapsed = time.perf_counter() - started
    finally:
        writer_thread.shutdown()
        connection.close()
    return len(rows) / elapsed


async def _minimal_python_run(
    path: Path,
    claims: Sequence[ClaimReported],
    references: SeedReferences,
    tasks: int,
    *,
    overlapped: bool = False,
) -> float:
    """The least Python an append needs, without leaderlog: a reference point, not a rival.

    ``overlapped``: groups of at most half the callers, the next one prepared while the one
    before commits (at most one commit in flight), so that SQLite's work on the writer
    thread and Python's on the loop's could overlap.

    Callers queue single events; one writer turns each group into rows (existence checks as
    set lookups, the payload dumped once, canonical JSON, the chained sha256) and inserts it
    with one thread hop and one transaction. No expected versions, idempotency, per-request
    atomicity or error reporting: what that costs shows as the gap to leaderlog.
    """
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    for pragma in PRAGMAS:
        connection.execute(pragma)
    connection.executescript(SCHEMA)
    writer_thread = ThreadPoolExecutor(max_workers=1)
    loop = asyncio.get_running_loop()
    existing = {f"source-{references.source}"}
    existing |= {f"person-{person}" for person in references.people}
    existing |= {f"post-{post}" for post in references.posts}
    queue: list[tuple[ClaimReported, uuid.UUID, asyncio.Future[int]]] = []
    head: tuple[int, str] = (0, "0" * 64)
    drainer: asyncio.Task[None] | None = None

    def insert(rows: list[tuple[Any, ...]]) -> None:
        connection.execute("BEGIN IMMEDIATE")
        connection.executemany(f"INSERT INTO events VALUES ({','.join('?' * 11)})", rows)
        connection.execute("COMMIT")

    def prepare(group: list[tuple[ClaimReported, uuid.UUID, asyncio.Future[int]]]) -> list[Any]:
        nonlocal head
        position, previous = head
        now = format_time(utc_now())
        rows = []
        for claim, event_id, _ in group:
            stream = claim.stream()
            assert (
                stream not in existing
                and {
                    f"source-{claim.source}",
                    f"person-{claim.person}",
                    f"post-{claim.post}",
                }
                <= existing
            )
            data = canonical_bytes(claim.data())
            position += 1
            envelope = canonical_bytes(
                {
                    "position": position,
                    "stream": stream,
                    "version": 1,
                    "event_id": event_id,
                    "type": claim.type,
                    "schema_version": claim.schema_version,
                    "data": embed(data),
                    "recorded_at": now,
                    "actor": "bench",
                    "meta": embed(b"{}"),
                }
            )
            previous = hashlib.sha256(previous.encode() + envelope).hexdigest()
            rows.append(
                (
                    position,
                    event_id.bytes,
                    stream,
                    1,
                    claim.type,
                    1,
                    data.decode(),
                    now,
                    "bench",
                    "{}",
                    previous,
                )
            )
            existing.add(stream)
        head = (position, previous)
        return rows

    largest = max(1, tasks // 2) if overlapped else len(claims)

    async def drain() -> None:
        committing: tuple[asyncio.Future[None], list[Any]] | None = None
        while queue or committing:
            group = queue[:largest]
            del queue[:largest]
            rows = prepare(group) if group else []
            if committing is not None:
                done, answered = committing
                await done
                for _, _, future in answered:
                    future.set_result(1)
                committing = None
            if not group:
                continue
            commit = loop.run_in_executor(writer_thread, insert, rows)
            if overlapped:
                committing = (commit, group)
                await asyncio.sleep(0)  # let callers answered meanwhile queue again
            else:
                await commit
                for _, _, future in group:
                    future.set_result(1)

    async def append(claim: ClaimReported) -> int:
        nonlocal drainer
        future: asyncio.Future[int] = loop.create_future()
        queue.append((claim, new_event_id(), future))
        if drainer is None or drainer.done():
            drainer = asyncio.create_task(drain())
        return await future

    async def caller(first: int) -> None:
        for index in range(first, len(claims), tasks):
            await append(claims[index])

    try:
        started = time.perf_counter()
        await asyncio.gather(*(caller(first) for first in range(tasks)))
        elapsed = time.perf_counter() - started
    finally:
        writer_thread.shutdown()
        connection.close()
    return len(claims) / elapsed


Appender = Callable[[EventLog, int], Awaitable[object]]


async def _timed_log_run(path: Path, count: int, tasks: int, append_one: Appender) -> float:
    """Events per second for ``tasks`` concurrent callers sharing ``count`` single appends."""
    log = await EventLog.open(f"sqlite:///{path}")
    try:
        await load_seeds(log, SEEDS)

        async def caller(first: int) -> None:
            for index in range(first, count, tasks):
                await append_one(log, index)

        started = time.perf_counter()
        await asyncio.gather(*(caller(first) for first in range(tasks)))
        elapsed = time.perf_counter() - started
        stored = await log.store.count()
    finally:
        await log.close()
    if stored < count:
        raise RuntimeError(f"only {stored} events are stored, expected at least {count}")
    return count / elapsed


def log_append(
    path: Path, count: int, tasks: int, append_one: Appender, profile: bool = False
) -> float:
    if not profile:
        return asyncio.run(_timed_log_run(path, count, tasks, append_one))
    profiler = cProfile.Profile()
    rate = profiler.runcall(asyncio.run, _timed_log_run(path, count, tasks, append_one))
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
    return rate


def events_appender(claims: Sequence[ClaimReported]) -> Appender:
    async def append_one(log: EventLog, index: int) -> object:
        return await log.append_events([claims[index]], actor="bench")

    return append_one


def records_appender(records: Sequence[Record]) -> Appender:
    async def append_one(log: EventLog, index: int) -> object:
        return await log.append_records([records[index]], actor="bench")

    return append_one


# --- reporting -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """Events per second of every try on each side; the best try of each is compared."""

    name: str
    ours_tries: tuple[float, ...]
    raw_tries: tuple[float, ...]
    baseline: str
    bar: float | None
    subject: str = "leaderlog"

    @property
    def ours(self) -> float:
        return max(self.ours_tries)

    @property
    def raw(self) -> float:
        return max(self.raw_tries)

    @property
    def ratio(self) -> float:
        return self.ours / self.raw

    @property
    def passed(self) -> bool:
        return self.bar is None or self.ratio >= self.bar

    def report(self) -> str:
        verdict = "info" if self.bar is None else ("PASS" if self.passed else "FAIL")
        bar = "" if self.bar is None else f" (bar >= {self.bar}x)"

        def tries(rates: tuple[float, ...]) -> str:
            return " ".join(f"{rate:,.0f}" for rate in rates)

        return (
            f"  {self.name}\n"
            f"    {self.subject:<11} {self.ours:>8,.0f} events/s  "
            f"(tries: {tries(self.ours_tries)})\n"
            f"    raw sqlite3 {self.raw:>8,.0f} events/s  (tries: {tries(self.raw_tries)}; "
            f"{self.baseline})\n"
            f"    ratio {self.ratio:.2f}x{bar}  {verdict}"
        )


def compare(
    name: str,
    ours: Callable[[], float],
    raw: Callable[[], float],
    *,
    repeats: int,
    baseline: str,
    bar: float | None,
    subject: str = "leaderlog",
) -> Comparison:
    """Alternate the two sides, so both see the same machine conditions, the same number of
    times."""
    ours_tries, raw_tries = [], []
    for _ in range(repeats):
        raw_tries.append(raw())
        ours_tries.append(ours())
    return Comparison(name, tuple(ours_tries), tuple(raw_tries), baseline, bar, subject)


# --- benchmarks ------------------------------------------------------------------------------


def bench_appends(settings: Settings) -> bool:
    sizes, workdir = settings.sizes, settings.workdir
    references = seed_references()
    claims = make_claims(references, max(sizes.concurrent_events, sizes.sequential_events))
    records = content_records(claims)
    counter = iter(range(1_000_000))
    profiled = [False]

    def fresh(label: str) -> Path:
        return workdir / f"{label}-{next(counter)}.db"

    def ours(count: int, tasks: int, append_one: Appender) -> Callable[[], float]:
        def run() -> float:
            profile = settings.profile and not profiled[0]
            profiled[0] = True
            return log_append(fresh("log"), count, tasks, append_one, profile)

        return run

    def raw(count: int, per_transaction: int) -> Callable[[], float]:
        rows = raw_rows(claims[:count])
        return lambda: raw_insert(fresh("raw"), rows, per_transaction)

    concurrent, sequential = sizes.concurrent_events, sizes.sequential_events

    def minimal(*, overlapped: bool = False) -> Callable[[], float]:
        def run() -> float:
            return asyncio.run(
                _minimal_python_run(
                    fresh("minimal"),
                    claims[:concurrent],
                    references,
                    CONCURRENT_TASKS,
                    overlapped=overlapped,
                )
            )

        return run

    bare_bones, bare_bones_overlapped = minimal(), minimal(overlapped=True)

    def raw_one_hop(count: int) -> Callable[[], float]:
        rows = raw_rows(claims[:count])
        return lambda: asyncio.run(_raw_through_one_hop(fresh("hop"), rows))

    one_hop = raw_one_hop(sequential)
    batched = f"{RAW_BATCH} rows per transaction"
    single = "1 row per transaction"
    print(f"appends (synchronous=FULL, WAL; best of {sizes.repeats} alternating tries)", flush=True)
    plan: list[tuple[str, Callable[[], float], Callable[[], float], str, float | None]] = [
        (
            f"{CONCURRENT_TASKS} tasks, single-event append_events, {concurrent:,} events",
            ours(concurrent, CONCURRENT_TASKS, events_appender(claims)),
            raw(concurrent, RAW_BATCH),
            batched,
            CONCURRENT_BAR,
        ),
        (
            f"{CONCURRENT_TASKS} tasks, single events, the least Python an append needs "
            f"(no leaderlog: see _minimal_python_run), {concurrent:,} events",
            bare_bones,
            raw(concurrent, RAW_BATCH),
            batched,
            None,
        ),
        (
            f"{CONCURRENT_TASKS} tasks, the same with commits overlapped (each group prepared "
            f"while the one before commits), {concurrent:,} events",
            bare_bones_overlapped,
            raw(concurrent, RAW_BATCH),
            batched,
            None,
        ),
        (
            f"one writer, single-event append_events, {sequential:,} events",
            ours(sequential, 1, events_appender(claims)),
            raw(sequential, 1),
            single,
            SEQUENTIAL_BAR,
        ),
        (
            f"one writer, the raw transactions each through one run_in_executor hop (no "
            f"leaderlog: see _raw_through_one_hop), {sequential:,} events",
            one_hop,
            raw(sequential, 1),
            single,
            None,
        ),
        (
            f"{CONCURRENT_TASKS} tasks, single-record append_records (content ids), "
            f"{concurrent:,} events",
            ours(concurrent, CONCURRENT_TASKS, records_appender(records)),
            raw(concurrent, RAW_BATCH),
            batched,
            None,
        ),
        (
            f"one writer, single-record append_records (content ids), {sequential:,} events",
            ours(sequential, 1, records_appender(records)),
            raw(sequential, 1),
            single,
            None,
        ),
    ]
    # The workload (every event and raw row, built up front) would otherwise stay young
    # enough for the cyclic collector to traverse again and again during the timed appends: a
    # cost of this harness, not of appending, where each event is garbage once it is stored.
    gc.collect()
    gc.freeze()
    # Warm up (imports, caches, the file system) so the first measured try is not the odd one.
    raw(WARM_UP_EVENTS, RAW_BATCH)()
    log_append(fresh("warm-up"), WARM_UP_EVENTS, CONCURRENT_TASKS, events_appender(claims))
    comparisons = []
    for name, ours_run, raw_run, baseline, bar in plan:
        subject = "leaderlog"
        if ours_run in (bare_bones, bare_bones_overlapped):
            subject = "minimal"
        elif ours_run is one_hop:
            subject = "one hop"
        comparison = compare(
            name,
            ours_run,
            raw_run,
            repeats=sizes.repeats,
            baseline=baseline,
            bar=bar,
            subject=subject,
        )
        print(comparison.report(), flush=True)
        comparisons.append(comparison)
    return all(comparison.passed for comparison in comparisons)


def bench_http(settings: Settings) -> bool:
    """Warm feed GETs and 304s vs a trivial endpoint of the same app (scripts/bench_http.py)."""
    import bench_http as http_benchmark  # a sibling script: sys.path[0] is scripts/

    print("http (seed log plus generated claims, one uvicorn process)")
    sizes = http_benchmark.QUICK if settings.sizes is QUICK else http_benchmark.FULL
    workdir = settings.workdir / "http"
    workdir.mkdir()
    return http_benchmark.run(sizes, workdir)


def bench_rebuild(settings: Settings) -> bool:
    """Rebuild rate, peak memory and state p50 at 1M vs 10k (scripts/bench_projections.py)."""
    import bench_projections as projection_benchmark  # a sibling script

    quick = settings.sizes is QUICK
    events, small, queries = (20_000, 2_000, 30) if quick else (1_000_000, 10_000, 200)
    print(f"projections ({events:,}-event log against a {small:,}-event one)")
    workdir = settings.workdir / "projections"
    workdir.mkdir()
    figures = projection_benchmark.bench_projections(workdir, events, small, queries)
    print(figures.report(small))
    return bool(figures.passed())


BENCHMARKS: dict[str, Callable[[Settings], bool]] = {
    "appends": bench_appends,
    "http": bench_http,
    "projections": bench_rebuild,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--only", action="append", choices=sorted(BENCHMARKS), help="run only this benchmark"
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, one try each")
    parser.add_argument(
        "--dir", type=Path, help="folder for the temporary databases (default: system temp)"
    )
    parser.add_argument(
        "--profile", action="store_true", help="print a cProfile of leaderlog's first try"
    )
    options = parser.parse_args(argv)
    passed = True
    with tempfile.TemporaryDirectory(prefix="leaderlog-bench-", dir=options.dir) as folder:
        settings = Settings(QUICK if options.quick else FULL, Path(folder), options.profile)
        for name in options.only or list(BENCHMARKS):
            passed = BENCHMARKS[name](settings) and passed
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
