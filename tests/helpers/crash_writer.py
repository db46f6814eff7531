"""Append batches of three events in a loop and print each acknowledged batch as JSON.

Usage: ``crash_writer.py DATABASE_URL RUN [BATCHES]``. Prints ``{"ready": true}`` once the log
is open and starts writing when a line arrives on stdin (so a restart can be made ready while
the previous writer still runs). Then it prints one line per acknowledged batch: its tag,
positions and event ids. Every event carries its batch tag in ``meta`` so a reader can tell
whether a batch is whole. Without BATCHES it runs until killed.
"""

from __future__ import annotations

import asyncio
import json
import sys

from leaderlog.events import Record, new_event_id, parse_event
from leaderlog.log import EventLog


def batch_records(run: str, number: int) -> list[Record]:
    tag = f"{run}-{number}"
    person, org = f"writer-{tag}", f"org-{tag}"
    events = [
        parse_event("person.registered", {"person": person, "name": f"Writer {tag}"}),
        parse_event("org.registered", {"org": org, "name": f"Organisation {tag}"}),
        parse_event("person.updated", {"person": person, "aliases": [f"W. {tag}"]}),
    ]
    return [Record(event=event, event_id=new_event_id(), meta={"batch": tag}) for event in events]


async def write(url: str, run: str, batches: int | None) -> None:
    async with await EventLog.open(url) as log:
        print(json.dumps({"ready": True}), flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        number = 0
        while batches is None or number < batches:
            records = batch_records(run, number)
            outcome = await log.append_records(records, actor=f"writer-{run}")
            acknowledged = {
                "batch": f"{run}-{number}",
                "positions": list(outcome.positions),
                "ids": [str(record.event_id) for record in records],
            }
            # One write per line, flushed, so a kill never leaves half an acknowledgement.
            sys.stdout.write(json.dumps(acknowledged) + "\n")
            sys.stdout.flush()
            number += 1


if __name__ == "__main__":
    limit = int(sys.argv[3]) if len(sys.argv) > 3 else None
    asyncio.run(write(sys.argv[1], sys.argv[2], limit))
