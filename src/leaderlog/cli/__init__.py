"""The ``leaderlog`` command: a thin shell over the library API.

Each command group lives in its own module and registers itself on :data:`main`.
"""

from __future__ import annotations

from leaderlog.cli import log_commands as _log_commands
from leaderlog.cli import projection_commands as _projection_commands
from leaderlog.cli import serve_commands as _serve_commands
from leaderlog.cli import token_commands as _token_commands
from leaderlog.cli._app import console_main, main

__all__ = ["console_main", "main"]

# Importing a command module registers its commands on ``main``.
del _log_commands, _projection_commands, _serve_commands, _token_commands
