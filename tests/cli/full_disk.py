"""Commands run with their standard output on a full disk (``/dev/full``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

LEADERLOG = Path(sys.executable).parent / "leaderlog"


def to_a_full_disk(*args: str) -> subprocess.CompletedProcess[str]:
    """``leaderlog ARGS > /dev/full``."""
    full = Path("/dev/full")
    if not full.exists():
        pytest.skip("needs /dev/full")
    with full.open("w") as output:
        return writing_to(output.fileno(), *args)


def writing_to(stdout: int, *args: str) -> subprocess.CompletedProcess[str]:
    """``leaderlog ARGS`` with its standard output the file descriptor ``stdout``."""
    return subprocess.run(
        [str(LEADERLOG), *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        check=False,
    )
