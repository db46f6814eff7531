"""The ``leaderlog`` command: a thin shell over the library API.

Each command group lives in its own module and registers itself on :data:`main`.
"""

from __future__ import annotations

from leaderlog.cli._app import main
from leaderlog.cli import log_commands as _log_commands  # noqa: F401  (registers commands)

__all__ = ["main"]
