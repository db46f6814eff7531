"""SIGTERM while a first import writes a new SQLite file: what it built is removed."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from leaderlog._json import dumps

LEADERLOG = Path(sys.executable).parent / "leaderlog"


def test_sigterm_while_a_first_import_writes_leaves_no_file_behind(tmp_path: Path) -> None:
    # given a first import into a new file, large enough to be caught while it writes
    folder = tmp_path / "data"
    folder.mkdir()
    records = tmp_path / "people.jsonl"
    with records.open("w", encoding="utf-8") as file:
        for number in range(20_000):
            data = {"person": f"person-{number}", "name": f"Person {number}"}
            file.write(dumps({"type": "person.registered", "data": data}) + "\n")
    process = subprocess.Popen(
        [str(LEADERLOG), "--db", f"sqlite:///{folder / 'leaderlog.db'}", "import", str(records)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        # when it is sent SIGTERM once the new log is being written, under its hidden name
        deadline = time.monotonic() + 60
        while not any(folder.glob(".*.leaderlog-new")):
            assert process.poll() is None, "the import ended before it was seen writing"
            assert time.monotonic() < deadline, "the import never began writing"
            time.sleep(0.005)
        process.send_signal(signal.SIGTERM)
        status = process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    # then it ends as killed by the signal, and nothing it built is left: neither the new
    # file nor SQLite's companions of it
    assert status == -signal.SIGTERM
    assert sorted(path.name for path in folder.iterdir()) == []
