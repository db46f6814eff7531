"""Ctrl-C while a large import is still being read, its progress bar drawn on a terminal."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from leaderlog._json import dumps

LEADERLOG = Path(sys.executable).parent / "leaderlog"


def _read_until(screen: int, marker: bytes, process: subprocess.Popen[bytes]) -> bytes:
    """What the terminal was sent, up to ``marker`` or the end of the process."""
    seen = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and marker not in seen:
        ready, _, _ = select.select([screen], [], [], 0.1)
        if not ready:
            if process.poll() is not None:
                break
            continue
        try:
            chunk = os.read(screen, 65536)
        except OSError:  # the terminal's other end closed: the process is gone
            break
        if not chunk:
            break
        seen += chunk
    return seen


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_ctrl_c_while_a_large_import_is_read_on_a_terminal_exits_130_cleanly(
    tmp_path: Path,
) -> None:
    # given a file large enough for the reading bar (its lines padded, so that reading it
    # takes a second or two, while Ctrl-C is pressed as soon as the bar shows)
    url = f"sqlite:///{tmp_path / 'leaderlog.db'}"
    records = tmp_path / "people.jsonl"
    padding = "x" * 500
    with records.open("w", encoding="utf-8") as file:
        for number in range(12_000):
            data = {"person": f"person-{number}", "name": f"Person {number}", "aliases": [padding]}
            file.write(dumps({"type": "person.registered", "data": data}) + "\n")
    screen, terminal = os.openpty()
    environment = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100"}
    environment.pop("NO_COLOR", None)
    process = subprocess.Popen(
        [str(LEADERLOG), "--db", url, "import", str(records)],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        env=environment,
    )
    os.close(terminal)
    try:
        shown = _read_until(screen, b"reading", process)
        assert b"reading" in shown, shown  # the reading bar is drawn
        # when Ctrl-C is pressed while the records are read
        process.send_signal(signal.SIGINT)
        shown += _read_until(screen, b"\x00never", process)
        status = process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(screen)
    text = shown.decode("utf-8", "replace")
    # then it says so with the status a shell expects, and nothing after it
    assert status == 130, text[-600:]
    assert text.endswith(
        "interrupted: nothing was written: the records were still being read\r\n"
    ), text[-600:]
    assert "Exception ignored" not in text
    # and the bar was put away before the message, not drawn again after it; nothing written
    assert "reading" not in text.rpartition("interrupted:")[2]
    assert not (tmp_path / "leaderlog.db").exists()
