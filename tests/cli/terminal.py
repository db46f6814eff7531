"""A terminal for the commands' progress bars, drawn into text a test can read."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from leaderlog.cli import _terminal


def drawn_on_a_terminal(monkeypatch: pytest.MonkeyPatch, width: int = 100) -> io.StringIO:
    """What the commands draw on stderr from now on, as a terminal of ``width`` columns would
    be sent it (escape sequences included)."""
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=width, highlight=False)
    monkeypatch.setattr(_terminal, "err_console", terminal)
    return screen
