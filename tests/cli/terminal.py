"""A terminal for the commands' progress bars, drawn into text a test can read."""

from __future__ import annotations

import io
from types import ModuleType

import pytest
from rich.console import Console


def drawn_on_a_terminal(monkeypatch: pytest.MonkeyPatch, module: ModuleType) -> io.StringIO:
    """What ``module``'s stderr console draws from now on, as a 100-column terminal would
    be sent it (escape sequences included)."""
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=100, highlight=False)
    monkeypatch.setattr(module, "err_console", terminal)
    return screen
