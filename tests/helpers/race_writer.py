"""Race another process for the next version of one stream, round after round.

Usage: ``race_writer.py DATABASE_URL GATE_DIR NAME ROUNDS``. Before round N it creates
``GATE_DIR/NAME-ready-N`` and waits for ``GATE_DIR/go-N``; then it appends a
``person.updated`` to ``person-contested`` expecting version N, and prints one JSON line:
``{"round": N, "result": "won", "position": P}`` or ``{"round": N, "result": "conflict",
"message": ...}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from leaderlog.errors import ConcurrencyError
from leaderlog.events import parse_event
from leaderlog.log import EventLog


async def race(url: str, gate: Path, name: str, rounds: int) -> None:
    async with await EventLog.open(url) as log:
        for number in range(1, rounds + 1):
            (gate / f"{name}-ready-{number}").touch()
            while not (gate / f"go-{number}").exists():
                await asyncio.sleep(0.001)
            update = parse_event(
                "person.updated", {"person": "contested", "aliases": [f"{name} {number}"]}
            )
            try:
                outcome = await log.append_events([update], actor=name, expected_version=number)
            except ConcurrencyError as error:
                result = {"round": number, "result": "conflict", "message": str(error)}
            else:
                result = {"round": number, "result": "won", "position": outcome.positions[0]}
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    asyncio.run(race(sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])))
