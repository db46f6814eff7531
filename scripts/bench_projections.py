"""Projection benchmarks: rebuild speed and memory at 1M events, state query latency vs size.

Figures, each measured in the same run:

- ``rebuild`` of every built-in projection over a generated log, in events per second, as a
  ratio against a raw ``sqlite3`` scan of the same rows (same PRAGMAs) that decodes each row
  with pydantic into what a projection is handed: the envelope and its payload
  (bar: >= 0.33x). The ratio against decoding only the payload column is printed too. The
  rebuild runs in a child process whose peak RSS is the memory figure (bar: <= 200 MB).
- ``state --org ORG --as-of D --known-at P`` through the library API: p50 latency on the large
  log against the p50 on a 10k-event log built by the same generator (bar: <= 3x).

The generated log is shaped like real reporting: organisations in departments, each with
posts, people and sources, and claims reported, confirmed, corrected, disputed and retracted
over time, with fuzzy dates of every precision. Organisations' timelines are interleaved the
way a newsroom's would be. It is appended straight through the store (``append_batches``) in
big batches; the domain rules hold by construction.

Usage: ``python scripts/bench_projections.py [--events 1000000] [--small 10000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import random
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from leaderlog._json import loads
from leaderlog.events import (
    RecordedEvent,
    current_schema_version,
    event_from_stored,
    new_event_id,
    parse_event,
)
from leaderlog.projections import BUILTIN, ProjectionRunner, Queries
from leaderlog.store import open_store
from leaderlog.store.base import NewEvent, PendingBatch
from leaderlog.store.sqlite import PRAGMAS

REBUILD_BAR = 0.33
MEMORY_BAR_MB = 200
LATENCY_BAR = 3.0
EVENTS_PER_ORG = 1000
ORGS_PER_DEPARTMENT = 10
APPEND_BATCH = 10_000

PUBLISHERS = [f"Publisher {n}" for n in range(30)]
PARTIES = ["White House", "the agency", "Congress", "the department", "union officials"]
CAUSES = ["retirement", "reassignment", "resignation", "removal", "promotion", "term_end"]
OPERATIONS = (
    ["report"] * 400
    + ["confirm"] * 250
    + ["correct"] * 80
    + ["dispute"] * 50
    + ["retract"] * 40
    + ["comment"] * 60
    + ["rename"] * 14
)

# --- the generated log ----------------------------------------------------------------------------


def _fuzzy(rng: random.Random, *, unknown_share: float = 0.15) -> dict[str, Any] | None:
    roll = rng.random()
    if roll < unknown_share:
        # No "date" at all, as the model stores an unknown date: the log then exports and
        # imports again with the same hashes.
        return {"qualifier": "on", "text": rng.choice(["soon", "next month"])}
    day = dt.date(2015, 1, 1) + dt.timedelta(days=rng.randrange(0, 3650))
    if roll < 0.6:
        date = day.isoformat()
    elif roll < 0.85:
        date = day.isoformat()[:7]
    else:
        date = day.isoformat()[:4]
    return {"date": date, "qualifier": rng.choice(["on", "on", "about", "before", "after"])}


def _org_block(
    index: int, parent: str | None, rng: random.Random
) -> list[tuple[str, dict[str, Any]]]:
    """About EVENTS_PER_ORG events of one organisation, in the order they happen."""
    org = f"org-{index}"
    events: list[tuple[str, dict[str, Any]]] = []
    registered: dict[str, Any] = {
        "org": org,
        "name": f"Office of Programme {index}",
        "short_name": f"OP{index}",
        "labels": {"en": f"Office of Programme {index}", "es": f"Oficina del Programa {index}"},
    }
    if parent:
        registered["parent"] = parent
    events.append(("org.registered", registered))
    posts = [f"{org}-p{n}" for n in range(5)]
    for n, post in enumerate(posts):
        events.append(
            (
                "post.defined",
                {
                    "post": post,
                    "org": org,
                    "title": f"Executive Director {n} of Programme {index}",
                    "aliases": [f"director {n}", f"OP{index} head {n}"],
                    "labels": {"en": f"Director {n} (OP{index})"},
                },
            )
        )
    people = [f"{org}-m{n}" for n in range(40)]
    for n, person in enumerate(people):
        events.append(
            (
                "person.registered",
                {"person": person, "name": f"Person {n} of {index}", "aliases": []},
            )
        )
    sources = [f"{org}-s{n}" for n in range(60)]
    for n, source in enumerate(sources):
        data: dict[str, Any] = {
            "source": source,
            "url": f"https://news.example.com/{index}/{n}",
            "publisher": rng.choice(PUBLISHERS),
            "title": f"Leadership changes at Programme {index}, part {n}",
            "language": "en",
        }
        published = _fuzzy(rng, unknown_share=0.1)
        if published and published.get("date"):
            data["published"] = published
        events.append(("source.registered", data))

    live: list[str] = []
    claims: list[str] = []
    kinds: dict[str, str] = {}
    while len(events) < EVENTS_PER_ORG:
        operation = rng.choice(OPERATIONS)
        if operation != "report" and operation not in ("comment", "rename") and not live:
            operation = "report"
        if operation == "report":
            claim = f"{org}-c{len(claims)}"
            kind = rng.choices(["incumbency", "appointment", "departure"], [40, 35, 25])[0]
            data = {
                "claim": claim,
                "source": rng.choice(sources),
                "kind": kind,
                "person": rng.choice(people),
                "post": rng.choice(posts),
                "capacity": rng.choice(["permanent", "acting", "interim", "unspecified"]),
                "modality": rng.choices(
                    ["occurred", "expected", "announced", "rumored"], [50, 25, 15, 10]
                )[0],
                "attribution": rng.choice(
                    [
                        {"kind": "anonymous", "parties": rng.sample(PARTIES, 2)},
                        {"kind": "official", "parties": [rng.choice(PARTIES)]},
                        {"kind": "named", "parties": ["a spokesperson"]},
                        {"kind": "outlet", "parties": []},
                    ]
                ),
                "quote": f"Person {len(claims)} is expected to lead programme {index}, sources "
                "familiar with the matter said on condition of anonymity.",
                "locator": rng.choice(["headline", "body", "caption"]),
            }
            effective = _fuzzy(rng)
            if effective is not None:
                data["effective"] = effective
            if kind == "departure":
                data["cause"] = rng.choice(CAUSES)
            events.append(("claim.reported", data))
            claims.append(claim)
            live.append(claim)
            kinds[claim] = kind
        elif operation == "confirm":
            data = {"claim": rng.choice(live), "source": rng.choice(sources)}
            if rng.random() < 0.5:
                data["effective"] = {
                    "date": (
                        dt.date(2016, 1, 1) + dt.timedelta(days=rng.randrange(3000))
                    ).isoformat(),
                    "qualifier": "on",
                }
            events.append(("claim.confirmed", data))
        elif operation == "correct":
            claim = rng.choice(live)
            field = rng.choice(["capacity", "effective", "modality", "person"])
            value: Any = {
                "capacity": rng.choice(["permanent", "acting"]),
                "effective": _fuzzy(rng, unknown_share=0.0),
                "modality": "occurred",
                "person": rng.choice(people),
            }[field]
            data = {
                "claim": claim,
                "changes": {field: value},
                "reason": "The first report was wrong.",
            }
            if rng.random() < 0.5:
                data["source"] = rng.choice(sources)
            events.append(("claim.corrected", data))
        elif operation == "dispute":
            claim = rng.choice(live)
            others = [other for other in rng.sample(claims, min(2, len(claims))) if other != claim]
            events.append(
                (
                    "claim.disputed",
                    {
                        "claim": claim,
                        "reason": "Another outlet reports otherwise.",
                        "conflicts_with": others,
                    },
                )
            )
        elif operation == "retract":
            claim = live.pop(rng.randrange(len(live)))
            events.append(
                ("claim.retracted", {"claim": claim, "reason": "The outlet withdrew it."})
            )
        elif operation == "comment":
            outcome = rng.choice(["no_response", "declined", "denied", "confirmed"])
            events.append(
                (
                    "comment.requested",
                    {"source": rng.choice(sources), "org": org, "outcome": outcome},
                )
            )
        else:
            person = rng.choice(people)
            events.append(("person.updated", {"person": person, "aliases": [f"P. {person}"]}))
    return events


def _window(first: int, count: int, seed: int) -> list[tuple[str, dict[str, Any]]]:
    """A department and its offices, their timelines interleaved (registrations first)."""
    department = f"org-{first}"
    blocks = [
        _org_block(
            index, None if index == first else department, random.Random(seed * 7919 + index)
        )
        for index in range(first, first + count)
    ]
    merged = [block[0] for block in blocks]
    rng = random.Random(seed * 104729 + first)
    cursors = [1] * len(blocks)
    remaining = [len(block) - 1 for block in blocks]
    while any(remaining):
        choice = rng.choices(range(len(blocks)), remaining)[0]
        merged.append(blocks[choice][cursors[choice]])
        cursors[choice] += 1
        remaining[choice] -= 1
    return merged


_STREAM_FIELD = {
    "org": "org",
    "post": "post",
    "person": "person",
    "source": "source",
    "comment": "source",
    "claim": "claim",
}


def generate(events: int, seed: int = 1) -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """The log, a department window (about 10k events) at a time, ``events`` in total."""
    produced = 0
    first = 0
    while produced < events:
        window = _window(first, ORGS_PER_DEPARTMENT, seed)[: events - produced]
        produced += len(window)
        first += ORGS_PER_DEPARTMENT
        yield window


def _new_event(event_type: str, data: dict[str, Any]) -> NewEvent:
    prefix = event_type.partition(".")[0]
    stream = f"{'source' if prefix == 'comment' else prefix}-{data[_STREAM_FIELD[prefix]]}"
    return NewEvent(
        event_id=new_event_id(),
        stream=stream,
        type=event_type,
        schema_version=current_schema_version(event_type),
        data=data,
    )


async def write_log(url: str, events: int, *, validate: int = 20_000) -> dict[str, tuple[int, int]]:
    """Append the generated log; returns each organisation's first and last position."""
    store = await open_store(url)
    spans: dict[str, tuple[int, int]] = {}
    position = 0
    checked = 0
    try:
        for window in generate(events):
            if checked < validate:
                for event_type, data in window:
                    parse_event(event_type, data)
                checked += len(window)
            for start in range(0, len(window), APPEND_BATCH):
                chunk = [_new_event(t, d) for t, d in window[start : start + APPEND_BATCH]]
                (outcome,) = await store.append_batches([PendingBatch(chunk, {}, "bench")])
                if isinstance(outcome, Exception):
                    raise outcome
            for event_type, data in window:
                position += 1
                org = data.get("org") if event_type in ("org.registered", "post.defined") else None
                org = org or _org_of(data)
                first, _ = spans.get(org, (position, position))
                spans[org] = (first, position)
    finally:
        await store.close()
    return spans


def _org_of(data: dict[str, Any]) -> str:
    for field in ("claim", "post", "person", "source", "org"):
        if field in data:
            return "-".join(str(data[field]).split("-")[:2])
    raise ValueError(f"no organisation in {data}")


# --- the measurements ---------------------------------------------------------------------------


_ROWS = (
    "SELECT position, event_id, stream, version, type, schema_version, data, recorded_at, "
    "actor, meta, hash FROM events ORDER BY position"
)


def _decode_row(row: tuple[Any, ...]) -> None:
    """A whole row into the pydantic models a projection is given: envelope and payload."""
    RecordedEvent.model_validate(
        {
            "position": row[0],
            "event_id": uuid.UUID(bytes=row[1]),
            "stream": row[2],
            "version": row[3],
            "type": row[4],
            "schema_version": row[5],
            "data": loads(row[6]),
            "recorded_at": row[7],
            "actor": row[8],
            "meta": loads(row[9]),
            "hash": row[10],
        }
    ).event()


def _decode_payload(row: tuple[Any, ...]) -> None:
    """Only the payload column into its pydantic event model."""
    event_from_stored(row[4], row[5], loads(row[6]))


def raw_scan(path: Path, decode: Callable[[tuple[Any, ...]], None]) -> tuple[int, float]:
    """Read every row with plain sqlite3 (the store's PRAGMAs) and decode it with pydantic."""
    connection = sqlite3.connect(path)
    try:
        for pragma in PRAGMAS:
            connection.execute(pragma)
        started = time.perf_counter()
        count = 0
        for row in connection.execute(_ROWS):
            decode(row)
            count += 1
        elapsed = time.perf_counter() - started
    finally:
        connection.close()
    return count, elapsed


COPY_CHUNK = 20_000


def raw_row_copy(rebuilt: Path, copy: Path) -> tuple[int, float]:
    """Insert the rows the rebuilt projections hold into empty tables with plain sqlite3.

    A floor for any rebuild, not a rival: the final rows only (a rebuild also reads what it
    updates and rewrites rows as claims change), handed over from Python in big
    transactions, into the projections' own schemas with the store's PRAGMAs, and the
    query indexes built at the end as a rebuild does. Returns (rows, seconds).
    """
    source = sqlite3.connect(rebuilt)
    target = sqlite3.connect(copy, isolation_level=None)
    rows_copied, elapsed = 0, 0.0
    try:
        for pragma in PRAGMAS:
            target.execute(pragma)
        projections = [cls() for cls in BUILTIN.values()]
        for projection in projections:
            for statement in projection.schema():
                target.execute(statement)
        for projection in projections:
            for table in projection.tables():
                columns = [row[1] for row in source.execute(f"PRAGMA table_info({table})")]
                insert = (
                    f"INSERT INTO {table} ({', '.join(columns)}) "
                    f"VALUES ({', '.join('?' * len(columns))})"
                )
                cursor = source.execute(f"SELECT {', '.join(columns)} FROM {table}")
                while chunk := cursor.fetchmany(COPY_CHUNK):
                    started = time.perf_counter()
                    target.execute("BEGIN IMMEDIATE")
                    target.executemany(insert, chunk)
                    target.execute("COMMIT")
                    elapsed += time.perf_counter() - started
                    rows_copied += len(chunk)
        started = time.perf_counter()
        for projection in projections:
            for statement in projection.query_indexes():
                target.execute(statement)
        elapsed += time.perf_counter() - started
    finally:
        source.close()
        target.close()
    return rows_copied, elapsed


async def _rebuild(url: str, names: Sequence[str]) -> dict[str, Any]:
    store = await open_store(url)
    try:
        runner = ProjectionRunner(store, [BUILTIN[name]() for name in names])
        started, busy_from = time.perf_counter(), time.thread_time()
        head = await runner.rebuild()
        elapsed, busy = time.perf_counter() - started, time.thread_time() - busy_from
    finally:
        await store.close()
    return {
        "events": head,
        "elapsed": elapsed,
        # CPU time of the event loop's thread (decoding and folding); the rest of the
        # elapsed time is spent waiting for SQLite's threads to read and write.
        "loop_busy": busy,
        "projections": list(names),
        "peak_mb": _peak_mb(),
    }


def _peak_mb() -> float:
    """This process's peak resident memory.

    ``ru_maxrss`` of a child also counts its parent's memory at the fork before ``exec``, so
    Linux's per-process high-water mark is preferred where it exists.
    """
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rebuild_in_child(url: str, names: Sequence[str] = ()) -> dict[str, Any]:
    """Rebuild (every built-in, or ``names``) in a fresh process; returns its figures."""
    result = subprocess.run(
        [sys.executable, __file__, "--rebuild-child", url, *(f"--only={name}" for name in names)],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    figures: dict[str, Any] = json.loads(result.stdout)
    return figures


async def state_latencies(
    logs: Sequence[tuple[str, dict[str, tuple[int, int]]]], queries: int, seed: int = 7
) -> list[list[float]]:
    """Seconds per ``state(org, as_of, known_at)`` for random orgs, days and positions.

    The logs take turns query by query, so a change in the machine's load hits them alike.
    """
    rng = random.Random(seed)
    stores = [await open_store(url) for url, _ in logs]
    try:
        timings: list[list[float]] = [[] for _ in logs]
        for number in range(queries + 10):
            for (_, spans), store, found in zip(logs, stores, timings, strict=True):
                org = rng.choice(sorted(spans))
                first, last = spans[org]
                as_of = dt.date(2015, 1, 1) + dt.timedelta(days=rng.randrange(0, 3800))
                known_at = rng.randint(first, last)
                started = time.perf_counter()
                await Queries(store).state(org=org, as_of=as_of, known_at=known_at)
                if number >= 10:  # the first few only warm the caches
                    found.append(time.perf_counter() - started)
    finally:
        for store in stores:
            await store.close()
    return timings


async def _build_small(url: str) -> None:
    store = await open_store(url)
    try:
        await ProjectionRunner(store, [cls() for cls in BUILTIN.values()]).rebuild()
    finally:
        await store.close()


@dataclass(frozen=True)
class Figures:
    events: int
    raw_rate: float
    payload_rate: float
    rebuild_rate: float
    rows: int
    row_copy_rate: float
    log_bytes: int
    rows_bytes: int
    peak_mb: float
    small_p50: float
    large_p50: float

    @property
    def rebuild_ratio(self) -> float:
        return self.rebuild_rate / self.raw_rate

    @property
    def latency_ratio(self) -> float:
        return self.large_p50 / self.small_p50

    def passed(self) -> bool:
        return (
            self.rebuild_ratio >= REBUILD_BAR
            and self.peak_mb <= MEMORY_BAR_MB
            and self.latency_ratio <= LATENCY_BAR
        )

    def report(self, small: int) -> str:
        def verdict(ok: bool) -> str:
            return "PASS" if ok else "FAIL"

        return "\n".join(
            [
                f"projections ({', '.join(BUILTIN)}) over {self.events:,} generated events",
                f"  rebuild {self.rebuild_rate:>10,.0f} events/s",
                f"  raw sqlite3 scan, rows decoded with pydantic (envelope and payload) "
                f"{self.raw_rate:>10,.0f} events/s",
                f"    ratio {self.rebuild_ratio:.2f}x (bar >= {REBUILD_BAR}x)  "
                f"{verdict(self.rebuild_ratio >= REBUILD_BAR)}",
                f"  raw sqlite3 scan, payload column only decoded with pydantic "
                f"{self.payload_rate:>10,.0f} events/s",
                f"    ratio {self.rebuild_rate / self.payload_rate:.2f}x (for information)",
                f"  raw sqlite3 inserting the rows the projections end with "
                f"({self.rows:,} rows, {self.rows / self.events:.1f} per event) "
                f"{self.row_copy_rate:>10,.0f} events/s",
                f"    its ratio to the scan {self.row_copy_rate / self.raw_rate:.2f}x: a floor for "
                "any rebuild, which also reads, folds and rewrites (for information)",
                f"    on disk the rows take {self.rows_bytes / self.events / 1024:.1f} KiB an "
                f"event, the log itself {self.log_bytes / self.events / 1024:.1f} KiB "
                "(for information)",
                f"  peak memory of the rebuild process {self.peak_mb:.0f} MB "
                f"(bar <= {MEMORY_BAR_MB} MB)  {verdict(self.peak_mb <= MEMORY_BAR_MB)}",
                f"  state --org --as-of --known-at p50: {self.large_p50 * 1000:.2f} ms at "
                f"{self.events:,} events, {self.small_p50 * 1000:.2f} ms at {small:,}",
                f"    ratio {self.latency_ratio:.2f}x (bar <= {LATENCY_BAR}x)  "
                f"{verdict(self.latency_ratio <= LATENCY_BAR)}",
            ]
        )


def bench_projections(
    workdir: Path, events: int, small: int, queries: int, *, breakdown: bool = False
) -> Figures:
    large_path, small_path = workdir / "large.db", workdir / "small.db"
    large_url, small_url = f"sqlite:///{large_path}", f"sqlite:///{small_path}"
    started = time.perf_counter()
    spans = asyncio.run(write_log(large_url, events))
    print(f"  generated {events:,} events in {time.perf_counter() - started:.0f} s", flush=True)
    # Measured before the rebuild adds the projections' rows to the same file; the store
    # checkpoints its write-ahead log into the file when it closes.
    log_bytes = large_path.stat().st_size
    count, raw_elapsed = raw_scan(large_path, _decode_row)
    _, payload_elapsed = raw_scan(large_path, _decode_payload)
    print(f"  raw scans done ({raw_elapsed:.0f} s, {payload_elapsed:.0f} s)", flush=True)
    rebuilt = rebuild_in_child(large_url)
    print(
        f"  rebuilt in {rebuilt['elapsed']:.0f} s, the event loop busy "
        f"{rebuilt['loop_busy'] / rebuilt['elapsed']:.0%} of the time",
        flush=True,
    )
    rows, copy_elapsed = raw_row_copy(large_path, workdir / "rows.db")
    rows_bytes = (workdir / "rows.db").stat().st_size
    (workdir / "rows.db").unlink()
    print(f"  raw row copy done ({copy_elapsed:.0f} s)", flush=True)
    if breakdown:
        for name in BUILTIN:
            alone = rebuild_in_child(large_url, [name])
            rate = alone["events"] / alone["elapsed"]
            print(
                f"  {name} alone: {rate:,.0f} events/s, the event loop busy "
                f"{alone['loop_busy'] / alone['elapsed']:.0%} of the time, "
                f"peak {alone['peak_mb']:.0f} MB"
            )
    small_spans = asyncio.run(write_log(small_url, small))
    asyncio.run(_build_small(small_url))
    small_times, large_times = asyncio.run(
        state_latencies([(small_url, small_spans), (large_url, spans)], queries)
    )
    small_p50, large_p50 = statistics.median(small_times), statistics.median(large_times)
    return Figures(
        events=count,
        raw_rate=count / raw_elapsed,
        payload_rate=count / payload_elapsed,
        rebuild_rate=rebuilt["events"] / rebuilt["elapsed"],
        rows=rows,
        row_copy_rate=count / copy_elapsed,
        log_bytes=log_bytes,
        rows_bytes=rows_bytes,
        peak_mb=rebuilt["peak_mb"],
        small_p50=small_p50,
        large_p50=large_p50,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=1_000_000, help="size of the large log")
    parser.add_argument("--small", type=int, default=10_000, help="size of the small log")
    parser.add_argument("--queries", type=int, default=200, help="state queries per log")
    parser.add_argument("--dir", type=Path, help="folder for the databases (default: temp)")
    parser.add_argument(
        "--breakdown", action="store_true", help="also rebuild each projection on its own"
    )
    parser.add_argument("--rebuild-child", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--only", action="append", default=[], help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.rebuild_child:
        names = options.only or list(BUILTIN)
        print(json.dumps(asyncio.run(_rebuild(options.rebuild_child, names))))
        return 0
    with tempfile.TemporaryDirectory(prefix="leaderlog-bench-", dir=options.dir) as folder:
        figures = bench_projections(
            Path(folder),
            options.events,
            options.small,
            options.queries,
            breakdown=options.breakdown,
        )
    print(figures.report(options.small))
    return 0 if figures.passed() else 1


if __name__ == "__main__":
    sys.exit(main())
