"""How much memory an import holds per record: the whole file is checked before anything is
written, so every record is in memory at once, and a large file needs it all."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from leaderlog.log import AppendOutcome, EventLog

SEEDS = Path(__file__).resolve().parent.parent / "seeds" / "ice-leadership-2025-05.jsonl"
RECORDS = 5000
# About 1.6 KB a claim is measured (3.3 KB while every record kept its event model, 7.3 KB
# before records were held compactly); the bound leaves room for other Python versions and
# libraries without letting the old cost back in.
BYTES_PER_RECORD = 2200


async def import_traced(log: EventLog, path: Path) -> tuple[AppendOutcome, int]:
    """What importing ``path`` into ``log`` gave, and the peak of memory it traced."""
    tracemalloc.start()
    try:
        outcome = await log.import_file(path, actor="cli")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return outcome, peak


def claim_lines(count: int) -> list[str]:
    """Claims shaped like real ones, referring to the seeds' source, people and posts."""
    seeds = [json.loads(line) for line in SEEDS.read_text().splitlines() if line.strip()]

    def slugs(kind: str, key: str) -> list[str]:
        return [record["data"][key] for record in seeds if record["type"] == kind]

    source = slugs("source.registered", "source")[0]
    people, posts = slugs("person.registered", "person"), slugs("post.defined", "post")
    lines = []
    for n in range(count):
        kind = ("appointment", "departure", "incumbency")[n % 3]
        data = {
            "claim": f"memory-{n}",
            "source": source,
            "kind": kind,
            "person": people[n % len(people)],
            "post": posts[n % len(posts)],
            "capacity": ("acting", "permanent", "unspecified")[n % 3],
            "effective": {"date": "2025-06", "qualifier": "about", "text": "next month"},
            "modality": ("occurred", "expected", "announced")[n % 3],
            "attribution": {"kind": "anonymous", "parties": ["White House", "ICE"]},
            "quote": f"Claim number {n}, reported by sources familiar with the matter",
            "locator": "body",
        }
        if kind == "departure":
            data["cause"] = "retirement"
        lines.append(json.dumps({"type": "claim.reported", "data": data}))
    return lines


async def test_an_import_holds_a_few_kilobytes_per_record(tmp_path: Path) -> None:
    claims = tmp_path / "claims.jsonl"
    claims.write_text("\n".join(claim_lines(RECORDS)) + "\n")
    async with await EventLog.open(f"sqlite:///{tmp_path / 'log.db'}") as log:
        await log.import_file(SEEDS, actor="seed")
        outcome, peak = await import_traced(log, claims)
    assert outcome.appended == RECORDS
    assert peak / RECORDS < BYTES_PER_RECORD, f"{peak / RECORDS:.0f} bytes a record"
