"""scripts/find-python: which Python a fresh checkout's .venv is made with."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FIND_PYTHON = Path(__file__).resolve().parents[1] / "scripts" / "find-python"


def _find(python: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(FIND_PYTHON)],
        env={**os.environ, "PYTHON": python},
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_python_given_is_the_one_used() -> None:
    found = _find(sys.executable)
    assert (found.returncode, found.stdout) == (0, f"{sys.executable}\n")


def test_a_python_given_that_does_not_exist_is_named_as_missing() -> None:
    found = _find("/nonexistent/python3")
    assert found.returncode == 1
    assert found.stderr == (
        "PYTHON=/nonexistent/python3: no such program; leaderlog needs Python 3.11 or newer\n"
    )


def test_a_program_given_that_is_not_python_is_refused() -> None:
    # `true` exits 0 whatever it is asked, as a new enough Python would
    found = _find("true")
    assert found.returncode == 1
    assert found.stderr == "PYTHON=true is not Python 3.11 or newer, which leaderlog needs\n"
