"""Importing a file again, as an interrupted import is told to be re-run, holds no more
memory per record than importing it the first time: records already stored as given are
answered from a compact note of what is stored, and the rules are not checked again for
them, so the streams they name are not read."""

from __future__ import annotations

import json
from pathlib import Path

from leaderlog.log import EventLog
from tests.test_import_memory import BYTES_PER_RECORD, SEEDS, claim_lines, import_traced

CLAIMS = 2500


def _reported_then_confirmed(count: int) -> list[str]:
    """Claims, and a confirmation of each: half the records name a claim's stream, whose
    state a rule check would read."""
    reported = claim_lines(count)
    source = json.loads(reported[0])["data"]["source"]
    confirmed = [
        json.dumps({"type": "claim.confirmed", "data": {"claim": f"memory-{n}", "source": source}})
        for n in range(count)
    ]
    return reported + confirmed


async def test_importing_a_file_again_holds_no_more_per_record_than_the_first_time(
    tmp_path: Path,
) -> None:
    # given a log that already holds every record of a file
    records = tmp_path / "records.jsonl"
    lines = _reported_then_confirmed(CLAIMS)
    records.write_text("\n".join(lines) + "\n")
    async with await EventLog.open(f"sqlite:///{tmp_path / 'log.db'}") as log:
        await log.import_file(SEEDS, actor="seed")
        first = await log.import_file(records, actor="cli")
    # when the file is imported again, by a new process (nothing cached)
    async with await EventLog.open(f"sqlite:///{tmp_path / 'log.db'}") as log:
        again, peak = await import_traced(log, records)
    # then nothing is appended, and the peak stays within the first import's bound
    assert first.appended == len(lines)
    assert (again.appended, again.already_present) == (0, len(lines))
    assert again.positions == first.positions
    assert peak / len(lines) < BYTES_PER_RECORD, f"{peak / len(lines):.0f} bytes a record"
